"""What `validate` is given: the reply's text, or an answer already parsed.

A caller that has the model's answer as JSON data already (a dict or a list, parsed by an SDK
or read from a store) may hand it to `validate` as it is: it is judged as data, the way the
text it came from would be when it needs no repair (the JSON written back strictly: no L1 text
repair applies; the schema's alignments still may), and the outcome's flags say so
(`Flag.PARSED_DATA`). Any other type that is not text is the caller's mistake: `TypeError`,
saying what `validate` takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic_core import PydanticSerializationError, to_json

from healjson._core.flags import Flag
from healjson._core.outcome.outcome import Degraded, Healed

__all__ = ["given_text", "marked_as_data"]

_OutcomeT = TypeVar("_OutcomeT", bound="Healed[Any] | Degraded[Any]")


def given_text(given: Any) -> tuple[str, bool]:
    """`(the text to judge, whether it was given as parsed data)`; TypeError for a type that is
    neither text nor parsed JSON data."""
    if isinstance(given, str):
        return given, False
    if isinstance(given, bytes | bytearray | memoryview):
        # the outcome keeps the reply as text (`raw_text`), as for a model call's bytes
        return bytes(given).decode("utf-8", "replace"), False
    if isinstance(given, Mapping | list | tuple):
        try:
            return to_json(given, inf_nan_mode="constants").decode(), True
        except (PydanticSerializationError, ValueError, RecursionError) as exc:
            raise TypeError(
                f"validate got {type(given).__name__} data that is not JSON data ({exc}): "
                "give the reply's text, or its parsed JSON (dicts, lists, strings, numbers)"
            ) from None
    raise TypeError(
        "validate takes the reply's text (a str), or the answer already parsed as JSON data "
        f"(a dict or a list); got {type(given).__name__}"
    )


def marked_as_data(outcome: _OutcomeT) -> _OutcomeT:
    """`outcome` with `Flag.PARSED_DATA` on it and on its attempt (what it judged was data)."""
    attempts = tuple(
        dataclasses.replace(attempt, flags=(Flag.PARSED_DATA, *attempt.flags))
        for attempt in outcome.attempts
    )
    changes: dict[str, Any] = {"attempts": attempts}
    if isinstance(outcome, Healed):
        changes["flags"] = (Flag.PARSED_DATA, *outcome.flags)
    return dataclasses.replace(outcome, **changes)
