"""A tool call's arguments normalised against the tool's `inputSchema` (client side before they
are sent, server side before the tool's handler reads them): `normalise_arguments`.

One `healjson.validate` run on the arguments' JSON text. Valid arguments go on as they are.
Arguments L1 can fit to the schema go on fitted: an object or array sent as a JSON string where
the schema says object or array (the `-32602 expected object, received string` servers answer),
keys in another case or spelling (`Query` for `query`), `"5"` for an integer, a single value
where a list is expected. Arguments that still do not fit go on exactly as given: the server
judges them and says what it says (healjson never blocks a call, and never invents an argument).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import to_json

from .internals import Degraded, Healed, validate
from .results import conforms
from .tools import ToolSchemas

__all__ = ["Normalised", "normalise_arguments"]


@dataclass(frozen=True, slots=True)
class Normalised:
    """`arguments`: what to send; `changed`: whether they differ from what was given;
    `outcome`: the arguments' run (None when none ran)."""

    arguments: Any
    changed: bool = False
    outcome: Healed[Any] | Degraded[Any] | None = None


def normalise_arguments(
    schemas: ToolSchemas | None, arguments: Any, *, on_ambiguity: Any = "reask"
) -> Normalised:
    """`arguments` fitted to the tool's `inputSchema` where L1 can (see the module's
    documentation); unchanged otherwise."""
    target: Any = None if schemas is None else schemas.input
    if target is None or arguments is None:
        return Normalised(arguments)
    if not isinstance(arguments, str) and conforms(target, arguments):
        return Normalised(arguments)  # valid as given: sent as given, no run
    if isinstance(arguments, str):  # the whole arguments object, sent as its JSON text
        text = arguments
    else:
        try:
            text = to_json(arguments).decode()
        except Exception:  # not JSON data: the SDK will say so
            return Normalised(arguments)
    outcome = validate(text, target, on_ambiguity=on_ambiguity)
    if outcome.ok and (outcome.flags or isinstance(arguments, str)):
        return Normalised(outcome.value, True, outcome)
    return Normalised(arguments, False, outcome)
