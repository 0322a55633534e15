"""When two tool calls' arguments are the same data: the same JSON value, however written.

A repair's answer may send an accepted call again; it *is* that call when its tool is the same
and its arguments are equal as JSON values (see `run.tools`): numbers by numeric value (`5` and
`5.0` and `5e0` are one number, as read), objects whatever their key order, arrays in order,
strings exactly, and `true`/`false` never a number (Python's `True == 1` is not JSON's). Two
arguments are the same data exactly when their keys here are equal.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["arguments_key", "value_key"]


def arguments_key(arguments: str) -> str:
    """The arguments text as data (see the module), or as sent when it is not JSON."""
    text = arguments.strip() or "{}"  # no arguments: the no-argument object
    try:
        return value_key(json.loads(text))
    except (ValueError, RecursionError):
        return text


def value_key(value: Any) -> str:
    """A JSON value's key: equal for equal values (see the module); a value that is not JSON
    data gets a key equal to no other."""
    try:
        plain = _plain(value)
        return json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not JSON data: never the same as any
        return f"\x00{id(value)}"


def _plain(value: Any) -> Any:
    """`value` with every integral number an int (bools kept as they are: not numbers)."""
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
