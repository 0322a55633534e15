"""How the `"fix"` and `"drop"` rules correct one value (`policies.correct`): the items each
drop rule removes, each item's fixes applied to that item alone, then the whole-value fixes;
which items a fix's data or the schema refuses; and a corrected value's paths read as the
answer's (a drop shifts the indices after it)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from healjson._core.diagnostic import (
    ROOT,
    Diagnostic,
    Source,
    describe_exception,
    jsonable,
    short_repr,
)
from healjson._core.target.target import Target

from .contracts import Contract, ContractContext
from .fit import Unfit, as_answer_kind, as_item_kind, holds
from .item_rules import Loc, item_place, lists_at, place, read_at, replaced_at

__all__ = [
    "Dropped",
    "FixFailed",
    "Made",
    "Plan",
    "answered",
    "as_answered",
    "located",
    "plan_of",
    "refusal",
    "remedy",
    "under",
    "without_unfit",
]

_INDEX: Final = re.compile(r"\[(\d{1,9})\]")


@dataclass(frozen=True, slots=True)
class Dropped:
    """An item a rule over items with `on_fail="drop"` removed from a list: its index in that
    list as answered, the item (as JSON data), why (the violations it had), and where the list
    is (`list_path`: "" when the answer is the list, else its path in the answer, `lines`)."""

    index: int
    item: Any
    diagnostics: tuple[Diagnostic, ...] = ()
    list_path: str = ""

    @property
    def where(self) -> str:
        """The item's place: `[3]` in the answer, `lines[3]` in a list inside it."""
        return f"{self.list_path}[{self.index}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (the item rendered safely, as a diagnostic's value is)."""
        data = {
            "index": self.index,
            "item": jsonable(self.item),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }
        if self.list_path:
            data["list_path"] = self.list_path
        return data


def under(path: str, where: str) -> bool:
    """Whether a diagnostic's `path` lies at or inside the item at `where` (`lines[3]`)."""
    return path == where or (path.startswith(where) and path[len(where)] in ".[")


def without_unfit(
    target: Target[Any],
    instance: Any,
    plan: Plan,
    ctx: ContractContext,
    made: Made,
    *,
    unfit: str,
    calls: dict[tuple[int, str], tuple[Any, Any]],
) -> tuple[Made, str | None]:
    """A corrected value that fails the schema, without the item fixes that make it fail
    (each tried alone): those items are left as answered and re-asked (`Made.unfit`). The
    value as it was, with `unfit`, when the drops alone fail it, when no one fix fails it
    alone, or when the value without those fixes still fails."""
    mended = frozenset(made.mended)
    if not holds(
        target, remedy(target, instance, plan, ctx, skip=mended, calls=calls).value, ctx, instance
    ):
        return made, unfit
    culprits = tuple(
        where
        for where in made.mended
        if not holds(
            target,
            remedy(target, instance, plan, ctx, skip=mended - {where}, calls=calls).value,
            ctx,
            instance,
        )
    )
    if not culprits:
        return made, unfit
    again = remedy(target, instance, plan, ctx, skip=frozenset(culprits), calls=calls)
    if not holds(target, again.value, ctx, instance):
        return made, unfit
    return dataclasses.replace(again, unfit=(*again.unfit, *culprits)), None


def refusal(
    diagnostic: Diagnostic, path: str, kept: Mapping[str, Sequence[int]], plan: Plan, where: str
) -> Diagnostic:
    """A violation of an item's fixed form, at its place as answered (`as_answered`), saying
    it is the fixed form's (the value shown is the fix's, not the answer's)."""
    at, _, index = where[:-1].rpartition("[")
    names = ", ".join(f"`{rule.name}`" for rule in plan.item_fixes[at][int(index)])
    constraint = f"{diagnostic.constraint} (as the fix of {names} corrected it)"
    return dataclasses.replace(as_answered(diagnostic, path, kept), constraint=constraint)


def as_answered(diagnostic: Diagnostic, path: str, kept: Mapping[str, Sequence[int]]) -> Diagnostic:
    """A diagnostic of the corrected value at its place as answered (`path`: `answered` of its
    own), the paths of the values it names (`extra["values"]`, "also involved") read alike."""
    if path == diagnostic.path:
        return diagnostic
    extra = dict(diagnostic.extra)
    values = extra.get("values")
    if isinstance(values, Mapping):
        extra["values"] = {
            answered(key, kept) if isinstance(key, str) else key: value
            for key, value in values.items()
        }
    return dataclasses.replace(diagnostic, path=path, extra=extra)


def answered(path: str, kept: Mapping[str, Sequence[int]]) -> str:
    """A path in the corrected value as the answer's path: each index in a list a drop
    shortened read as the kept item's index as answered."""
    if not kept:
        return path
    out: list[str] = []
    start = 0
    for match in _INDEX.finditer(path):
        out.append(path[start : match.start()])
        index, rows = int(match[1]), kept.get("".join(out))
        out.append(f"[{rows[index] if rows is not None and index < len(rows) else index}]")
        start = match.end()
    out.append(path[start:])
    return "".join(out)


class FixFailed(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.constraint)
        self.diagnostic = diagnostic


@dataclass(frozen=True, slots=True)
class Plan:
    """What the `"fix"` and `"drop"` rules do to a value: the lists rules over items judged
    (their places, in answer order), the items each drop rule removes, each list's items each
    item fix corrects (by index, its rules in declaration order), and the whole-value fixes."""

    places: dict[str, Loc]
    drops: dict[str, dict[int, list[Diagnostic]]]
    item_fixes: dict[str, dict[int, list[Contract[Any]]]]
    items: tuple[Contract[Any], ...]
    whole: tuple[Contract[Any], ...]


@dataclass(frozen=True, slots=True)
class Made:
    """A value the plan made: the value, the items dropped, the fixes that ran, the places of
    the items fixed (`lines[1]`, in answer coordinates), the items an item fix gave data the
    item's class refuses (kept as answered), and each list's kept items' indices as answered
    (its place -> them), to read the corrected value's paths as the answer's."""

    value: Any
    dropped: tuple[Dropped, ...]
    fixed: tuple[str, ...]
    mended: tuple[str, ...]
    unfit: tuple[str, ...]
    kept: dict[str, tuple[int, ...]]


def plan_of(
    instance: Any, by_policy: dict[str, list[tuple[Contract[Any], Sequence[Diagnostic]]]]
) -> Plan:
    places: dict[str, Loc] = {}
    drops: dict[str, dict[int, list[Diagnostic]]] = {}
    item_fixes: dict[str, dict[int, list[Contract[Any]]]] = {}
    for rule, group in by_policy.get("drop", []):
        for diagnostic, (at, index) in located(instance, rule, group, places):
            drops.setdefault(at, {}).setdefault(index, []).append(diagnostic)
    fixes = by_policy.get("fix", [])
    for rule, group in fixes:
        if rule.item:
            for _, (at, index) in located(instance, rule, group, places):
                rules = item_fixes.setdefault(at, {}).setdefault(index, [])
                if not rules or rules[-1] is not rule:
                    rules.append(rule)
    items = tuple(rule for rule, _ in fixes if rule.item)
    whole = tuple(rule for rule, _ in fixes if not rule.item)
    return Plan(places, drops, item_fixes, items, whole)


def remedy(
    target: Target[Any],
    instance: Any,
    plan: Plan,
    ctx: ContractContext,
    *,
    skip: frozenset[str] = frozenset(),
    calls: dict[tuple[int, str], tuple[Any, Any]] | None = None,
) -> Made:
    """Per list that rules over items judged (the answer, or each list inside it a path
    reaches: `invoices[0].lines`): drops (of the items as answered), then item fixes on the
    items kept, each item alone, the deepest lists first (so the places of the lists around
    them still hold); then whole-value fixes in declaration order. Each fix's result is taken
    as the value of its kind (`as_answer_kind`, `as_item_kind`): the next fix gets it so. The
    items at `skip` (their places) are left as answered, and so is an item a fix gave data its
    class refuses; `calls` remembers each item fix's call (an item given again is not fixed
    again)."""
    calls = {} if calls is None else calls
    value, places = instance, plan.places
    dropped: list[Dropped] = []
    mended: list[str] = []
    unfit: list[str] = []
    kept_at: dict[str, list[int]] = {}
    ran: set[str] = set()
    for at in sorted(
        plan.drops.keys() | plan.item_fixes.keys(), key=lambda at: (-len(places[at]), at)
    ):
        loc = places[at]
        found = read_at(value, loc)
        if not isinstance(found, list | tuple):
            continue  # the list is not there (the schema would have said so): nothing to do
        items = list(found)
        gone = {i: why for i, why in plan.drops.get(at, {}).items() if i < len(items)}
        answered = read_at(instance, loc)  # the list as answered: its places still hold
        dropped += [Dropped(i, jsonable(answered[i]), tuple(gone[i]), at) for i in sorted(gone)]
        for index, rules in sorted(plan.item_fixes.get(at, {}).items()):
            where = f"{at}[{index}]"
            if index in gone or index >= len(items) or where in skip:
                continue
            try:
                items[index] = _item_fixed(rules, items[index], where, ctx, calls)
            except Unfit:  # the fix's data fails the item's class: the item is re-asked
                unfit.append(where)
                continue
            mended.append(where)
            ran.update(rule.name for rule in rules)
        kept_at[at] = [index for index in range(len(items)) if index not in gone]
        kept = [items[index] for index in kept_at[at]]
        value = replaced_at(value, loc, tuple(kept) if isinstance(found, tuple) else kept)
    fixed = [rule.name for rule in plan.items if rule.name in ran]
    for rule in plan.whole:
        value = as_answer_kind(target, instance, _fixed(rule, value), ctx)
        fixed.append(rule.name)
    order = {at: number for number, at in enumerate(places)}  # the lists in answer order
    dropped.sort(key=lambda item: (order[item.list_path], item.index))
    shortened = {at: tuple(rows) for at, rows in kept_at.items() if plan.drops.get(at)}
    return Made(
        value, tuple(dropped), tuple(dict.fromkeys(fixed)), tuple(mended), tuple(unfit), shortened
    )


def _item_fixed(
    rules: Sequence[Contract[Any]],
    item: Any,
    where: str,
    ctx: ContractContext,
    calls: dict[tuple[int, str], tuple[Any, Any]],
) -> Any:
    """The item at `where` after its fix rules, in declaration order (a call made before on
    the very same item reused)."""
    for rule in rules:
        key = (id(rule), where)
        done = calls.get(key)
        if done is not None and done[0] is item:
            item = done[1]
            continue
        fixed = as_item_kind(item, _fixed(rule, item), ctx)
        calls[key] = (item, fixed)
        item = fixed
    return item


def located(
    instance: Any, rule: Contract[Any], group: Sequence[Diagnostic], places: dict[str, Loc]
) -> list[tuple[Diagnostic, tuple[str, int]]]:
    """Each of a rule over items' diagnostics with the list (its place) and the index of the
    item it lies under; the lists the rule's path reaches are added to `places`."""
    parts = tuple(rule.items.split(".")) if rule.items else ()
    reached = {place(loc): loc for loc, _ in lists_at(instance, parts)}
    places.update(reached)
    out: list[tuple[Diagnostic, tuple[str, int]]] = []
    for diagnostic in group:
        found = item_place(diagnostic.path, reached)
        if found is not None:
            out.append((diagnostic, found))
    return out


def _fixed(rule: Contract[Any], value: Any) -> Any:
    assert rule.fix is not None  # `@contract(on_fail="fix")` requires it
    try:
        fixed = rule.fix(value)
        if inspect.isawaitable(fixed):  # `@contract` refuses an async fix; a Contract built
            close = getattr(fixed, "close", None)  # by hand may still hold one
            if callable(close):
                close()  # never awaited: closed, so no "never awaited" warning
            raise TypeError("a fix must return the corrected value, not an awaitable")
        return fixed
    except Exception as exc:
        raise FixFailed(
            Diagnostic(
                ROOT,
                short_repr(describe_exception(exc), 300),
                f"the fix of contract `{rule.name}` raised {describe_exception(exc)}",
                "This is a bug in the contract's fix, not in the model's answer: fix the fix.",
                Source.CONTRACT_ERROR,
                fields=rule.fields,
                rule=rule.name,
            )
        ) from exc
