"""`changed_fields`: the paths of a healed value where the model's first answer said otherwise.

A path is changed when the first answer gave it a different value, or gave it none at all:

- a value compared as the target reads it: `"5"` where the healed value has `5`, `"true"` for
  `true`, `5` for `5.0` or for `"5"` is the same value (L1's or pydantic's coercion is no
  change), while `"6"` for `5` is;
- a field the first answer left out and the healed value set is changed (a repair supplied
  it: the model's first answer did not say it);
- a field the healed value left at its default (the healed value is dumped with every field,
  those it did not set marked `Default`: `judge.dumps.answer_data`) is changed where the first
  answer said something else (a repair that left out `discount_pct: 30` reset it to its
  default `0`), and is no change where the first answer left it out too, or said its default;
- a key that only the first answer holds and the healed value has no field for (an extra key
  of a model, which pydantic ignores) is not listed; in an object whose keys are data (a map,
  or any object of a JSON Schema target's value: `judge.dumps.Keys`) such a key was removed,
  and its path is listed;
- lists are compared item by item when both have the same length, else the list's own path is
  changed; this holds at any depth, inside a defaulted field too.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter, ValidationError

from healjson._core.diagnostic import format_path
from healjson._core.judge.dumps import Default, Keys

__all__ = ["changed_paths", "same_value"]

_LEAF_KINDS = (bool, int, float, str)
# built at first use: a TypeAdapter costs milliseconds, and the first one in a process makes
# pydantic look up its plugins (`importlib.metadata`), which `import healjson` should not pay
_LEAF_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def changed_paths(
    before: Any, after: Any, loc: tuple[str | int, ...] = (), *, defaulted: bool = False
) -> list[str]:
    """The paths of `after` (the healed value as JSON data, its unset fields `Default`) where
    `before` (the first answer's JSON data, or a dump alike) says something else (see the
    module's rules). `defaulted`: `after` is a default, which says nothing where `before`
    holds nothing."""
    if isinstance(before, Default):  # a dump's field at its default: its value
        before = before.value
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key, new in after.items():
            if isinstance(new, Default):
                if key in before:
                    out.extend(changed_paths(before[key], new.value, (*loc, key), defaulted=True))
            elif key not in before:
                if not defaulted:
                    out.append(format_path((*loc, key)))
            else:
                out.extend(changed_paths(before[key], new, (*loc, key), defaulted=defaulted))
        if isinstance(after, Keys):  # its keys are data: one it no longer holds was removed
            out.extend(format_path((*loc, key)) for key in before if key not in after)
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out.extend(changed_paths(old, new, (*loc, index), defaulted=defaulted))
        return out
    if isinstance(after, Default):  # a root or an item marked so: its value
        return changed_paths(before, after.value, loc, defaulted=True)
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
