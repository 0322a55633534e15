"""The chat format's JSON tiers, as the adapters' drivers negotiate them (`sync_call`,
`async_call`): the request of a call in a tier (`build_request`: the first in the client's tier,
or in `forced`), and the tier to try after the endpoint refused one (`retry_mode`: one weaker,
remembered in the client's `FormatState` unless the tier was forced)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from healjson._providers.openai_chat import (
    is_format_rejection,
    names_format,
    shape_request,
    with_extra,
)
from healjson._providers.openai_strict_schema import StrictSchemaUnsupported, strict_format
from healjson._providers.tiers import WEAKER, JsonMode, Shapeable

from ._format import FormatState

__all__ = ["build_request", "retry_mode"]

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
        mode = None if tiers is None or names_format(params) else forced or tiers.mode
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
