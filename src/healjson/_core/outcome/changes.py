"""`changed_fields`: the paths of a healed value where the model's first answer said otherwise.

A path is changed when the first answer gave it a different value, or gave it none at all:

- a value compared as the target reads it: `"5"` where the healed value has `5`, `"true"` for
  `true`, `5` for `5.0` or for `"5"` is the same value (L1's or pydantic's coercion is no
  change), while `"6"` for `5` is;
- a field the first answer left out and the healed value holds is changed (a repair supplied
  it: the model's first answer did not say it);
- a key only the first answer holds is not listed: the healed value is dumped with the fields
  it set, so such a key is one the target does not keep (an extra key, or an unset optional
  field), and there is no path in the healed value to name;
- lists are compared item by item when both have the same length, else the list's own path is
  changed.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter, ValidationError

from healjson._core.diagnostic import format_path

__all__ = ["changed_paths", "same_value"]

_LEAF_KINDS = (bool, int, float, str)
# built at first use: a TypeAdapter costs milliseconds, and the first one in a process makes
# pydantic look up its plugins (`importlib.metadata`), which `import healjson` should not pay
_LEAF_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def changed_paths(before: Any, after: Any, loc: tuple[str | int, ...] = ()) -> list[str]:
    """The paths of `after` (the healed value as JSON data) where `before` (the first answer's
    JSON data) says something else (see the module's rules)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in after:
            if key not in before:
                out.append(format_path((*loc, key)))
            else:
                out.extend(changed_paths(before[key], after[key], (*loc, key)))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out.extend(changed_paths(old, new, (*loc, index)))
        return out
    return [] if same_value(before, after) else [format_path(loc)]


def same_value(before: Any, after: Any) -> bool:
    """True when the JSON leaf `before` reads as `after`: equal with the same type, or
    coerced to it as pydantic's lax mode reads it (`"5"` → `5`, `"true"` → `true`, `5` →
    `5.0`), or a number written as the string `after` holds (`5` → `"5"`)."""
    if before == after and type(before) is type(after):
        return True
    kind = type(after)
    if isinstance(before, dict | list) or isinstance(after, dict | list) or after is None:
        return False
    if kind is str and isinstance(before, int | float) and not isinstance(before, bool):
        return bool(json.dumps(before) == after)
    if kind not in _LEAF_KINDS or before is None:
        return False
    adapter = _LEAF_ADAPTERS.get(kind)
    if adapter is None:  # two threads may both build it: the same adapter either way
        adapter = _LEAF_ADAPTERS[kind] = TypeAdapter(kind)
    try:
        read = adapter.validate_python(before)
    except ValidationError:
        return False
    return bool(read == after and type(read) is kind)
