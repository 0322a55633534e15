"""Per-item repair of a list answer: ask for the failed items only, splice them back.

When some items of a list answer fail their checks and the rest pass, re-asking for the whole
list wastes the tokens of every good item and risks breaking one of them. So when every
diagnostic of a failed list answer lies inside an item (its path starts with `[i]`: the item's
schema or an item contract), and at least one item passed, the repair names the good items as
accepted and asks for a JSON array of the failed ones only (`Strategy.ITEMS`). The next reply,
if it is an array of exactly that many items, is spliced into the list in their places and the
whole list is checked again (list-level contracts included), flagged `items_merged`; any other
reply is judged as it is (a model that sends the whole list again is fine too).

A failure outside the items (a list-level contract, a length limit, an answer that is no list)
keeps the ordinary whole-value repair.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Final

from healjson._core.judge.check import Evaluation
from healjson._core.parse import parse
from healjson._core.target.target import Target, list_item_type
from healjson._core.wire.reply import Reply

__all__ = ["ItemRepair", "failed_items", "merge_items"]

_ITEM_PATH: Final = re.compile(r"\[(\d{1,9})\]")


@dataclasses.dataclass(frozen=True, slots=True)
class ItemRepair:
    """A list answer whose items `failed` (indices, ascending) are being repaired."""

    data: tuple[Any, ...]
    failed: tuple[int, ...]


def failed_items(target: Target[Any], evaluation: Evaluation) -> ItemRepair | None:
    """The per-item repair a failed evaluation allows, or None (repair the whole value)."""
    data = evaluation.data
    if not isinstance(data, list) or len(data) < 2 or list_item_type(target.type_) is None:
        return None
    failed: set[int] = set()
    for diagnostic in evaluation.diagnostics:
        match = _ITEM_PATH.match(diagnostic.path)
        if match is None or int(match[1]) >= len(data):
            return None
        failed.add(int(match[1]))
    if not failed or len(failed) == len(data):
        return None
    return ItemRepair(tuple(data), tuple(sorted(failed)))


def merge_items(reply: Reply, repair: ItemRepair) -> Reply | None:
    """`reply` with the repaired items spliced into the list (as its content), or None when
    the reply is not an array of exactly the items asked for."""
    if not reply.content or reply.tool_calls:
        return None
    found = parse(reply.content, finish_reason=reply.finish_reason)
    items = found.value
    if not found.ok or not isinstance(items, list) or len(items) != len(repair.failed):
        return None
    merged = list(repair.data)
    for index, item in zip(repair.failed, items, strict=True):
        merged[index] = item
    return dataclasses.replace(reply, content=json.dumps(merged, ensure_ascii=False))
