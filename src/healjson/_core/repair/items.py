"""Per-item repair of a list answer: ask for the failed items only, splice them back.

When some items of a list answer fail their checks and the rest pass, re-asking for the whole
list wastes the tokens of every good item and risks breaking one of them. So when every
diagnostic of a failed list answer lies inside an item (its path starts with `[i]`: the item's
schema or an item contract), and at least one item passed, the repair names the good items as
accepted and asks for a JSON array of the failed ones only (`Strategy.ITEMS`).

The answer to that request is read as any answer to the request would be: by L1 against the
list target (`merge_items`), so the text around it, a code fence, reasoning, a tool call's
arguments, the envelope the request forced (a list target is sent as `{"value": [...]}` under a
strict schema; `{"items": [...]}` is what a JSON-object mode allows), a lone object for a
request of one item (the alignment's `unwrapped` and `listed`) are read as they are for a whole
answer, and flagged so. When the items inside still fail their schema, no reading validates, so
the request's own shape is read from the data: an object around an array is that array
(`unwrapped`) when the array is its only key, or its only list and under the request's envelope
key (`value`, `items`) whatever keys stand beside it; for one item asked, any other value is
that item (`listed`), and so is an object whose keys are all the item's fields when its array
is as long as the whole list (otherwise taken for the whole list again). Then:

- an array of exactly the items asked for is spliced into the list in their places, and the
  whole list is checked again (list-level contracts included), flagged `items_merged`;
- an array as long as the whole list is the model sending the whole list again: judged as it
  came (as that array, when it came in an envelope);
- anything else (no JSON in it, another number of items) never replaces the accepted items:
  the list as it stood is judged again, with a diagnostic on the first item asked for that says
  what the answer was, so the same items are asked for again.

A failure outside the items (a list-level contract, a length limit, an answer that is no list)
keeps the ordinary whole-value repair.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Final

from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.flags import Flag
from healjson._core.judge.check import Evaluation, answer_text
from healjson._core.parse import ParseResult, read
from healjson._core.parse.read import Ambiguity
from healjson._core.target.target import Target, list_item_type
from healjson._core.wire.reply import Reply

__all__ = ["NOT_SPLICED", "ItemRepair", "Merged", "failed_items", "merge_items"]

NOT_SPLICED: Final = "items_not_spliced"
"""The `extra` key of the note an item repair's answer is judged with when it was not spliced
(the list as it stood judged again): what a stream's `item_status` reads."""

_ITEM_PATH: Final = re.compile(r"\[(\d{1,9})\]")


@dataclasses.dataclass(frozen=True, slots=True)
class ItemRepair:
    """A list answer whose items `failed` (indices, ascending) are being repaired; `target` is
    the list's (what the answer to the repair is read against)."""

    data: tuple[Any, ...]
    failed: tuple[int, ...]
    target: Target[Any]
    removed: tuple[int, ...] = ()
    """The indices of the items a `"drop"` rule removes (`Evaluation.removing`): not asked
    for, and not accepted either."""


@dataclasses.dataclass(frozen=True, slots=True)
class Merged:
    """The answer to a per-item repair, made the reply judged in its place: `reply` holds the
    whole list (the answer's items spliced in, or the list as it stood when they could not be);
    `flags` are how the answer was read (L1's, then `items_merged` when spliced); `note` says
    why nothing was spliced."""

    reply: Reply
    flags: tuple[Flag, ...] = ()
    note: Diagnostic | None = None

    def judged(self, evaluation: Evaluation) -> Evaluation:
        """The evaluation of `reply` with the answer's flags first and, when it failed, the
        note first among its diagnostics."""
        parse = evaluation.parse.replace(flags=(*self.flags, *evaluation.parse.flags))
        if self.note is None or evaluation.ok:
            return dataclasses.replace(evaluation, parse=parse)
        diagnostics = (self.note, *evaluation.diagnostics)
        return dataclasses.replace(evaluation, parse=parse, diagnostics=diagnostics)


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
    removed = (_ITEM_PATH.fullmatch(place) for place in evaluation.removing)
    dropped = tuple(int(match[1]) for match in removed if match is not None)
    return ItemRepair(tuple(data), tuple(sorted(failed)), target, dropped)


def merge_items(
    reply: Reply,
    repair: ItemRepair,
    context: Any = None,
    *,
    on_ambiguity: Ambiguity = "reask",
    caller_tools: bool = False,
) -> Merged | None:
    """The reply judged for `reply`, the answer to the per-item `repair` (the module docstring
    says how it is read); None when it is the whole list again (judged as it came). `context`,
    `on_ambiguity` and `caller_tools` are the run's, as for any answer."""
    target, asked = repair.target, len(repair.failed)
    text, from_tool, others = answer_text(reply, target, caller_tools)
    found: ParseResult | None = None
    if not others or (text or "").strip():
        found = read(
            text,
            target,
            finish_reason=reply.finish_reason,
            on_ambiguity=on_ambiguity,
            reasoning=reply.reasoning,
            from_tool=from_tool,
            context=context,
        )
    items, flags = _items(found, asked, len(repair.data), _item_keys(target))
    merged = list(repair.data)
    if items is not None and len(items) == asked:
        for index, item in zip(repair.failed, items, strict=True):
            merged[index] = item
        return Merged(_listed(reply, merged), (*flags, Flag.ITEMS_MERGED))
    if found is not None and items is not None and len(items) == len(merged):
        if items is found.value:
            return None  # the whole list again: judged as it came
        return Merged(_listed(reply, items), flags)  # in the envelope, an item still failing
    note = _not_spliced(repair, found, items, text)
    return Merged(_listed(reply, merged), note=note)


_ENVELOPES: Final = ("value", "items")
"""The keys a request's envelope has: `{"value": [...]}` (what a strict format forces for a
list target) and `{"items": [...]}` (what a JSON-object mode allows)."""


def _items(
    found: ParseResult | None, asked: int, total: int, item_keys: frozenset[str]
) -> tuple[list[Any] | None, tuple[Flag, ...]]:
    """The items an answer holds, read as L1 read it (`found`), and its flags; None: none.
    When no reading validated (an item still fails its schema), the request's shape is read
    from the data: an object is an envelope around its one list member when that member is
    its only key, or stands under an envelope key (`value`, `items`) whatever keys stand beside
    it; and for one item asked, any other value is that item (`listed`). One exception, for one
    item asked: an envelope whose list is as long as the whole list (which `merge_items` would
    take for the whole list again) is that item when every key of it is a field of the item."""
    if found is None or not found.ok:
        return None, ()
    value = found.value
    if isinstance(value, list):
        return value, found.flags
    if isinstance(value, dict):
        inner = _enveloped(value)
        whole = inner is not None and len(inner) == total and total != asked
        if inner is not None and not (asked == 1 and whole and set(value) <= item_keys):
            return inner, (*found.flags, Flag.UNWRAPPED)
    if asked == 1:
        return [value], (*found.flags, Flag.LISTED)
    return None, ()


def _enveloped(value: dict[str, Any]) -> list[Any] | None:
    """The list an object is an envelope around (see `_items`), None: it is none."""
    lists = [(key, inner) for key, inner in value.items() if isinstance(inner, list)]
    if len(lists) != 1:
        return None
    key, inner = lists[0]
    return inner if len(value) == 1 or key in _ENVELOPES else None


def _item_keys(target: Target[Any]) -> frozenset[str]:
    """The keys an item of the list target has (fields, under their names and aliases), for a
    model, a dataclass or a TypedDict item; empty for any other."""
    kind = list_item_type(target.type_)
    fields = getattr(kind, "__pydantic_fields__", None)
    if isinstance(fields, dict):
        names = {*fields, *(f.alias for f in fields.values() if isinstance(f.alias, str))}
        return frozenset(
            names
            | {f.validation_alias for f in fields.values() if isinstance(f.validation_alias, str)}
        )
    if dataclasses.is_dataclass(kind):
        return frozenset(field.name for field in dataclasses.fields(kind))
    return frozenset(
        getattr(kind, "__annotations__", {})
        if (isinstance(kind, type) and issubclass(kind, dict) and hasattr(kind, "__total__"))
        else ()
    )


def _listed(reply: Reply, items: list[Any]) -> Reply:
    """`reply` holding the list `items` as its content (tool calls read already)."""
    content = json.dumps(items, ensure_ascii=False)
    return dataclasses.replace(reply, content=content, tool_calls=())


def _not_spliced(
    repair: ItemRepair, found: ParseResult | None, items: list[Any] | None, text: str | None
) -> Diagnostic:
    """Why an answer to a per-item repair was not spliced, on the first item asked for."""
    asked = len(repair.failed)
    places = ", ".join(f"[{index}]" for index in repair.failed[:10])
    if len(repair.failed) > 10:
        places += ", …"
    if items is not None:
        what = f"held {len(items)} item{'s' if len(items) != 1 else ''}"
    elif found is not None and found.error is not None:
        what = f"could not be read: it {found.error.constraint}"
    else:
        what = "held no JSON array"
    shown = found.value if found is not None and found.ok else text
    return Diagnostic(
        f"[{repair.failed[0]}]",
        shown,
        f"must be answered with a JSON array of the {asked} corrected "
        f"item{'s' if asked != 1 else ''} asked for ({places}); the answer {what}, so nothing "
        "in the list was replaced",
        f"Reply with only a JSON array of exactly {asked} item{'s' if asked != 1 else ''}: "
        f"the corrected {places}, in that order.",
        Source.SCHEMA,
        extra={NOT_SPLICED: True},
    )
