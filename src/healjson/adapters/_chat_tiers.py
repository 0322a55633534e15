"""The chat format's JSON tiers, as the adapters' drivers negotiate them (`sync_call`,
`async_call`): the request of a call in a tier (`build_request`: the first in the client's tier,
or in `forced`), and the tier to try after the endpoint refused one (`retry_mode`: one weaker,
remembered in the client's `FormatState` unless the tier was forced). A caller's own format is
sent as given; when it names no schema (`json_object`, `text`) the answer's schema is stated in
the prompt as the `json_object` tier states it (`own_format_messages`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from healjson._providers.caller_choices import names_schema
from healjson._providers.openai_chat import (
    is_format_rejection,
    names_format,
    shape_request,
    with_extra,
)
from healjson._providers.openai_strict_schema import StrictSchemaUnsupported, strict_format
from healjson._providers.tiers import WEAKER, JsonMode, Shapeable, prompted

from ._format import FormatState

__all__ = ["build_request", "own_format_messages", "retry_mode"]

_FIRST: Any = object()
"""`build_request`'s `mode` for a call's first request: the tier the client (or `forced`) says."""


def build_request(
    tiers: FormatState | None,
    forced: JsonMode | None,
    target: Shapeable,
    messages: list[dict[str, Any]],
    params: Mapping[str, Any],
    *,
    mode: JsonMode | None = _FIRST,
) -> tuple[JsonMode | None, dict[str, Any]]:
    """The request for `mode`, and the tier it really uses (a target strict mode cannot express
    goes one tier weaker). Without `mode` it is the first request: at `forced` or the client's
    tier, or as given (None) when the client shapes it or the caller chose its own
    `response_format`. `messages` are the driver's fresh copies."""
    if mode is _FIRST:
        if tiers is None:
            return None, {"messages": messages, **params}
        if names_format(params):  # the caller's own: the schema stated when it names none
            return None, {"messages": own_format_messages(target, messages, params), **params}
        mode = forced or tiers.mode
    if mode is None:
        return None, {"messages": messages, **params}
    if mode == "json_schema":  # the common request: the cached strict format, nothing copied
        try:
            response_format = strict_format(target.type_)
        except (TypeError, StrictSchemaUnsupported):
            pass  # an unhashable type, or one strict mode cannot express: `shape_request` says
        else:
            return mode, {"messages": messages, **params, "response_format": response_format}
    used, shaped, extra = shape_request(mode, target, messages)
    return used, {"messages": shaped, **with_extra(params, extra)}


def own_format_messages(
    target: Shapeable, messages: list[dict[str, Any]], params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The messages of a request in the caller's own format (`names_format`): as given when
    the format names a schema (`response_format` json_schema, a server's own field), else
    with the schema stated first, as the `json_object` tier states it (`tiers.prompted`)."""
    return messages if names_schema(params) else prompted(target, messages)


def retry_mode(
    tiers: FormatState | None, forced: JsonMode | None, used: JsonMode | None, error: Exception
) -> JsonMode:
    """The tier to try after `error` (an HTTP 400 rejecting tier `used`: one weaker, remembered
    in `tiers` unless forced); raises `error` when there is none."""
    if used is None or tiers is None or not is_format_rejection(error):
        raise error
    if forced:
        tiers.refused.add(used)  # what the run's enforcement check reads
        weaker = _weaker(used)
    else:
        weaker = tiers.step_down(used)
    if weaker is None:
        raise error
    return weaker


def _weaker(mode: JsonMode) -> JsonMode | None:
    return WEAKER[mode]
