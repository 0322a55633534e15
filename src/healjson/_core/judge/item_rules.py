"""Where the list of a rule over items is: the value itself (`Healer(list[Item],
item_contracts=[rule])`), or a field inside it (`@contract(fields=("qty",), items="lines")` on
`def rule(line: Line)`: the list at `lines` of an `Invoice`; a dotted path reaches deeper,
`order.lines`). Such a rule's violations sit under their item (`lines[3].qty`: `item_index`),
so the failure policies know which item broke it; `read_at` / `replaced_at` find and replace
the list in a model instance or plain data (`"drop"` removes the item, an item `"fix"` corrects
it there: `policies`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["item_index", "list_path", "read_at", "replaced_at"]

_NAME: Final = re.compile(r"[^.\[\]\s]+")


def list_path(items: Any) -> tuple[str, ...]:
    """The parts of an `items=` path (`"lines"`, `"order.lines"`); TypeError for anything else."""
    if not isinstance(items, str):
        raise TypeError(
            f'items= names the list the rule judges the items of, e.g. items="lines"; got '
            f"{type(items).__name__}"
        )
    parts = tuple(items.split("."))
    if not all(_NAME.fullmatch(part) for part in parts):
        raise TypeError(
            f'items= must be a field name or a dotted path of names ("lines", "order.lines"), '
            f"got {items!r}"
        )
    return parts


def item_index(path: str, at: str) -> int | None:
    """The index of the item of the list at `at` that a diagnostic's `path` lies under
    (`lines[3].qty` -> 3 for `lines`), None for a path elsewhere."""
    if not path.startswith(f"{at}["):
        return None
    digits = path[len(at) + 1 : path.find("]", len(at))]
    return int(digits) if digits.isdigit() and len(digits) <= 9 else None


def read_at(value: Any, parts: tuple[str, ...]) -> Any:
    """What `value` holds at the path `parts` (a model's attribute, a mapping's key); None when
    nothing is there."""
    node = value
    for part in parts:
        node = node.get(part) if isinstance(node, Mapping) else getattr(node, part, None)
        if node is None:
            return None
    return node


def replaced_at(value: Any, parts: tuple[str, ...], new: Any) -> Any:
    """A copy of `value` whose path `parts` holds `new` (models copied with the change, not
    validated: the caller validates the result again); TypeError for a container it cannot
    copy."""
    if not parts:
        return new
    head, rest = parts[0], parts[1:]
    child = replaced_at(read_at(value, (head,)), rest, new)
    if isinstance(value, Mapping):
        return {**value, head: child}
    copy = getattr(value, "model_copy", None)
    if callable(copy):
        return copy(update={head: child})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{head: child})
    raise TypeError(f"cannot replace {head!r} in a {type(value).__name__}")
