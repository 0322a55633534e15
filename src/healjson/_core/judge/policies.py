"""What a broken rule does (`@contract(on_fail=...)`), for one schema-valid value.

Given each contract's violations of a value (`judge_value`), `settle` decides:

- a `"stop"` violation ends the run (`Settled.stopped`): no re-ask, `contract_error`;
- `"fix"` and `"drop"` violations are settled locally: the items that broke a drop rule are
  removed from their list (the answer, or the list inside it that the rule judges the items
  of: `@contract(items="lines")`; a fix does not save them), item fixes correct the items
  kept, then whole-value fixes run in declaration order (`correct`). The result is checked
  against the schema (a length bound still holds after a drop) and judged again as a run's
  first judging judges a value (`judge_value`: every contract, a list-level rule judging the
  list without its dropped items, and a contract that changes the value it checks is a
  `contract_error`). It is accepted when only warnings remain; anything else (a fix that
  breaks another rule, or still breaks its own, a list too short after a drop, a fix whose
  value is not of the schema's types) is re-asked with the first value's violations but those
  of the items a drop rule removes (its own and any other rule's inside them): they are never
  re-asked (nor, in a per-item repair, asked for), the next answer's judging drops them again
  (only when nothing but drops was broken, and the list without them fails the schema, are
  they asked for, with their violations);
- `"reask"` violations (and the cases above) ask the model again, with every violation of the
  answer that is not a warning;
- `"warn"` violations never change the verdict: the accepted value's are kept as `warnings`.

A `fix` that raises is a bug in the caller's code, as a contract that raises: `contract_error`.

What the rules changed (`changed_fields`) is judged between the value as validated and the
accepted one, both as the same JSON dump (`answer_data`): the first is taken before any fix
runs (a fix may change the value it is given in place), and only when a fix or a drop rule
was broken (`Settled.before_rules`); never the JSON the model wrote, which a validator may
have turned into another value (dollars into cents) or a dump shows otherwise (`SecretStr`).

A value healjson validated is never validated a second time: pydantic's validators need not be
idempotent (a `BeforeValidator` that turns dollars into cents would run twice), and a dump is
no faithful copy of a value (a `SecretStr` dumps as `**********`, a `Field(exclude=True)` field
not at all). So the accepted value is the corrected value itself: the fix's own object (what
`model_copy(update=...)` gives, fields set as the fix set them), the list without its dropped
items holding the very item objects kept, the models around a list copied with it replaced
(`model_copy`, a dataclass copied without running its `__init__`). A fix may also return data
of another kind than the value it was given (a `dict` for a model, a `list` for a tuple):
that data is validated once, as an answer would be (the target's schema for the whole value,
the item's class for an item), and the validation is the value. The corrected value is then
checked, never changed: every model in it is of a class its place declares (a model of
another class with the same fields is not: as a whole-value fix's result it is data, validated
once by its attributes), dumped by field name (a serialization alias may differ from the
validation alias) with pydantic's type check on (`5.0` for an `int` or a `dict` for a model
fails: lax validation would coerce it on a round trip that the accepted value never makes) and
that dump validated strictly (pydantic's strict rules: `True` is no `int`, `"5"` no integer;
bounds, validators), the result thrown away. An answer whose validated value fails that strict
check itself (a validator of the caller's that returns another type) has its fixes checked as
before strict mode: the JSON dump validated laxly (strictly for a JSON Schema target).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, Union

from pydantic import BaseModel, TypeAdapter

from healjson._core.diagnostic import (
    ROOT,
    Diagnostic,
    Source,
    describe_exception,
    jsonable,
    short_repr,
)
from healjson._core.flags import Flag
from healjson._core.sentinels import NOTHING
from healjson._core.target.json_schema import JsonSchema
from healjson._core.target.target import Target
from healjson._core.wire.effects import AwaitAll

from .contracts import Contract, ContractContext
from .dumps import answer_data
from .item_rules import Loc, item_place, lists_at, place, read_at, replaced_at

__all__ = [
    "Correction",
    "Dropped",
    "Settled",
    "answer_data",
    "as_answer_kind",
    "correct",
    "holds",
    "settle",
    "unheld",
]


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


@dataclass(frozen=True, slots=True)
class Settled:
    """What the policies made of a value's violations."""

    instance: Any = NOTHING
    """The accepted value (NOTHING: not accepted)."""
    blocking: tuple[Diagnostic, ...] = ()
    """Violations to re-ask for (or to stop on, with `stopped`)."""
    stopped: bool = False
    error: tuple[Diagnostic, ...] = ()
    """A `contract_error` found while settling (a fix that raised, a rule that raised on the
    corrected value or changed it)."""
    warnings: tuple[Diagnostic, ...] = ()
    dropped: tuple[Dropped, ...] = ()
    fixed: tuple[str, ...] = ()
    flags: tuple[Flag, ...] = ()
    before_rules: Any = NOTHING
    """The accepted value as validated, before any fix or drop ran, as JSON data
    (`answer_data`): what `changed_fields` compares the accepted value's dump with (NOTHING:
    no fix or drop ran, or a serializer raised)."""
    removing: tuple[str, ...] = ()
    """With `blocking` (re-asked, not stopped): the places (`lines[3]`, `[0]`) of the items a
    drop rule removes, which the re-ask does not name: the next judging drops them again."""


def settle(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    groups: Sequence[Sequence[Diagnostic]],
    instance: Any,
    ctx: ContractContext,
    *,
    timeout_s: float | None = None,
) -> Generator[AwaitAll, list[Any], Settled]:
    """Apply each rule's `on_fail` to its violations of `instance` (see the module docstring)."""
    by_policy = _by_policy(contracts, groups)
    if "stop" in by_policy:
        return Settled(blocking=_flat(by_policy["stop"]), stopped=True)
    blocking = tuple(
        d
        for rule, group in zip(contracts, groups, strict=True)
        if rule.on_fail != "warn"
        for d in group
    )
    if not blocking:
        return Settled(instance, warnings=_flat(by_policy.get("warn", [])))
    if "fix" not in by_policy and "drop" not in by_policy:
        return Settled(blocking=blocking)
    before = answer_data(target, instance)  # before any fix: one may change it in place
    made = yield from correct(target, contracts, groups, instance, ctx, timeout_s=timeout_s)
    if made.error:
        return Settled(error=made.error)
    if not made.accepted:  # it fails the schema, or a rule: the model is asked instead
        left, gone = _left(instance, contracts, groups, by_policy)
        if not left:
            return Settled(blocking=blocking)
        return Settled(blocking=left, removing=gone)
    warnings = tuple(
        d
        for rule, group in zip(contracts, made.groups, strict=True)
        if rule.on_fail == "warn"
        for d in group
    )
    fixed, dropped = made.fixed, made.dropped
    flags = ((Flag.CONTRACT_FIXED,) if fixed else ()) + ((Flag.ITEMS_DROPPED,) if dropped else ())
    return Settled(
        made.value,
        warnings=warnings,
        dropped=dropped,
        fixed=fixed,
        flags=flags,
        before_rules=before,
    )


def _left(
    instance: Any,
    contracts: Sequence[Contract[Any]],
    groups: Sequence[Sequence[Diagnostic]],
    by_policy: dict[str, list[tuple[Contract[Any], Sequence[Diagnostic]]]],
) -> tuple[tuple[Diagnostic, ...], tuple[str, ...]]:
    """The violations a re-ask names when the corrected value is not accepted: every blocking
    one but those of the items a drop rule removes (a drop rule's own, and any other rule's
    inside a dropped item), which the next judging drops again (empty: only drops were broken,
    and the value without them fails the schema, a `min_length`: the model is then asked for
    the dropped items, with their violations); and the places of those items, in order."""
    places: dict[str, Loc] = {}
    gone = {
        f"{at}[{index}]"
        for rule, group in by_policy.get("drop", [])
        for _, (at, index) in _located(instance, rule, group, places)
    }
    left = tuple(
        d
        for rule, group in zip(contracts, groups, strict=True)
        if rule.on_fail not in ("warn", "drop")
        for d in group
        if not any(_under(d.path, where) for where in gone)
    )
    return left, tuple(sorted(gone, key=_place_order))


def _place_order(place: str) -> tuple[str, int]:
    """`lines[3]` as `("lines", 3)`: places of one list in index order."""
    at, _, index = place[:-1].rpartition("[")
    return at, int(index)


def _under(path: str, where: str) -> bool:
    """Whether a diagnostic's `path` lies at or inside the item at `where` (`lines[3]`)."""
    return path == where or (path.startswith(where) and path[len(where)] in ".[")


@dataclass(frozen=True, slots=True)
class Correction:
    """What the `"fix"` and `"drop"` rules made of a value (`correct`), and its verdict."""

    value: Any = NOTHING
    """The corrected value (NOTHING: none: a fix raised, or gave data the schema refuses, or
    the value holds a list healjson cannot copy)."""
    unfit: str | None = None
    """Why the corrected value (or a fix's data) fails the schema (None: it holds)."""
    groups: tuple[tuple[Diagnostic, ...], ...] = ()
    """Each contract's diagnostics on the corrected value (`judge_value`), when it holds."""
    error: tuple[Diagnostic, ...] = ()
    """A `contract_error`: a fix that raised, a rule that raised on (or changed) the value."""
    dropped: tuple[Dropped, ...] = ()
    fixed: tuple[str, ...] = ()
    contracts: tuple[Contract[Any], ...] = ()

    @property
    def accepted(self) -> bool:
        """The corrected value holds, and breaks no rule but `"warn"` ones."""
        return (
            self.value is not NOTHING
            and self.unfit is None
            and not self.error
            and not any(
                group and rule.on_fail != "warn"
                for rule, group in zip(self.contracts, self.groups, strict=True)
            )
        )


def correct(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    groups: Sequence[Sequence[Diagnostic]],
    instance: Any,
    ctx: ContractContext,
    *,
    timeout_s: float | None = None,
) -> Generator[AwaitAll, list[Any], Correction]:
    """The `"fix"` and `"drop"` rules applied to `instance` (each contract's violations of it
    in `groups`), the result checked against the schema (`holds`) and judged again
    (`judge_value`): what `settle` accepts or re-asks for, and what the testing kit's
    `check_fix` judges a fix by (the two cannot differ)."""
    # imported here: `import healjson` loads this module (for `Dropped`), not the parser
    # `judging` reads values with
    from .judging import judge_value

    rules = tuple(contracts)
    try:
        value, dropped, fixed = _remedy(target, instance, _by_policy(rules, groups), ctx)
    except _FixFailed as failed:
        return Correction(error=(failed.diagnostic,), contracts=rules)
    except _Unfit as refused:  # a fix's data fails the schema
        return Correction(unfit=refused.reason, contracts=rules)
    except TypeError as exc:  # a list inside a value healjson cannot copy
        return Correction(unfit=describe_exception(exc), contracts=rules)
    made = Correction(value, dropped=dropped, fixed=fixed, contracts=rules)
    unfit = unheld(target, value, ctx, instance)
    if unfit is not None:
        return dataclasses.replace(made, unfit=unfit)
    regroups = yield from judge_value(target, rules, value, ctx, timeout_s=timeout_s)
    errors = tuple(d for group in regroups for d in group if d.source is Source.CONTRACT_ERROR)
    return dataclasses.replace(made, groups=tuple(map(tuple, regroups)), error=errors)


def _by_policy(
    contracts: Sequence[Contract[Any]], groups: Sequence[Sequence[Diagnostic]]
) -> dict[str, list[tuple[Contract[Any], Sequence[Diagnostic]]]]:
    """The rules with violations, with them, by their `on_fail`."""
    by_policy: dict[str, list[tuple[Contract[Any], Sequence[Diagnostic]]]] = {}
    for rule, group in zip(contracts, groups, strict=True):
        if group:
            by_policy.setdefault(rule.on_fail, []).append((rule, group))
    return by_policy


def holds(target: Target[Any], value: Any, ctx: ContractContext, answer: Any = NOTHING) -> bool:
    """Whether `value`, a value of the target's kind that healjson did not validate as it
    stands (a fix's, a list after a drop), is valid as it stands (`unheld` is None)."""
    return unheld(target, value, ctx, answer) is None


def unheld(
    target: Target[Any], value: Any, ctx: ContractContext, answer: Any = NOTHING
) -> str | None:
    """Why `value` (see `holds`) is not valid as it stands, None when it is: every model in it
    of a class its place declares (`_misplaced`: a model of another class with the same fields
    is not of the schema's types), dumped (the fields it set, a default left one, under the
    names validation reads) with pydantic's type check on, and that dump valid under pydantic's
    strict rules (`True` is no `int`, `5.0` no `int`, `"5"` no integer), unless the `answer`
    it came from, as validated, fails that check too (a validator of the caller's that returns
    another type, `use_enum_values`: then the JSON dump is validated as an answer is, strictly
    for a JSON Schema target). The validation is a check only: its result is thrown away."""
    misplaced = _misplaced(value, target.type_, "the value")
    if misplaced is not None:
        return misplaced
    strict = answer is NOTHING or _checked(target, answer, ctx, strict=True) is None
    return _checked(target, value, ctx, strict=strict)


def _checked(target: Target[Any], value: Any, ctx: ContractContext, *, strict: bool) -> str | None:
    """Why `value`'s dump fails the check (`unheld`), None when it passes; `strict`: the Python
    dump, typed, validated strictly (a bool stays a bool there: the JSON dump makes it `1`),
    else the JSON dump, untyped, validated laxly (strictly for a JSON Schema target)."""
    try:
        data = _dumped(target, value, typed=strict)
    except Exception as exc:  # a part of another type than declared, or a serializer that raises
        return describe_exception(exc)
    exact = True if strict or isinstance(target.type_, JsonSchema) else None
    try:
        target.adapter.validate_python(
            data, strict=exact, context=ctx.validation_context, by_alias=False, by_name=True
        )
    except Exception as exc:  # a validator that raises: not a valid value either
        return describe_exception(exc)
    return None


def _dumped(target: Target[Any], value: Any, *, typed: bool) -> Any:
    """`value` as data, fields under their names (validated by name: a field's serialization
    alias may differ from its validation alias); `typed`: as Python data, a part of another
    type than its place declares raising (the serializer's warnings as errors), else as JSON."""
    return target.adapter.dump_python(
        value,
        mode="python" if typed else "json",
        by_alias=False,
        exclude_unset=True,
        round_trip=True,  # a `Json[...]` field dumps as the JSON text it validates from
        warnings="error" if typed else False,
    )


def _misplaced(value: Any, declared: Any, where: str) -> str | None:
    """Where `value` holds a model (pydantic model or dataclass) of a class its place does not
    declare (None: nowhere): the serializer dumps a model of another class with the same
    fields without a warning, so the dump's check alone would take it for the declared one."""
    declared = _bare(declared)
    origin, args = typing.get_origin(declared), typing.get_args(declared)
    if origin in (Union, types.UnionType):
        found = [_misplaced(value, member, where) for member in args]
        return None if any(f is None for f in found) else found[0]
    if isinstance(declared, type) and _is_model(value):
        if not isinstance(value, declared):
            return f"{where} is a {type(value).__name__}, not the {declared.__name__} declared"
        for name, field in getattr(type(value), "__pydantic_fields__", {}).items():
            inner = _misplaced(getattr(value, name, None), field.annotation, f"{where}.{name}")
            if inner is not None:
                return inner
        return None
    if origin is tuple and isinstance(value, tuple) and args:
        kinds = [args[0]] * len(value) if len(args) == 2 and args[1] is ... else list(args)
    elif origin in (list, set, frozenset, Sequence) and len(args) == 1:
        if not isinstance(value, list | tuple | set | frozenset):
            return None
        kinds = [args[0]] * len(value)
    elif origin is dict and isinstance(value, dict) and len(args) == 2:
        return next(
            (m for k, v in value.items() if (m := _misplaced(v, args[1], f"{where}.{k}"))), None
        )
    else:
        return None
    for index, (item, kind) in enumerate(zip(value, kinds, strict=False)):
        inner = _misplaced(item, kind, f"{where}[{index}]")
        if inner is not None:
            return inner
    return None


def _bare(declared: Any) -> Any:
    """A declared type without its `Annotated` metadata."""
    while typing.get_origin(declared) is typing.Annotated:
        declared = typing.get_args(declared)[0]
    return declared


def _is_model(value: Any) -> bool:
    """Whether `value` is a model instance: a pydantic model's or a dataclass's."""
    return isinstance(value, BaseModel) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    )


def as_answer_kind(target: Target[Any], answer: Any, fixed: Any, ctx: ContractContext) -> Any:
    """A whole-value fix's result as the accepted value: itself when it is of the answer's
    kind (its type, or an instance of a model or dataclass class the target declares: what
    validation gives, never validated again), else data (a dict for a model, a model of
    another class with the same fields) validated once by the target (`_Unfit` when that
    fails)."""
    if not _is_data(answer, fixed, (target.type_,)):
        return fixed
    return _validated(target.adapter, fixed, ctx)


def _as_item_kind(item: Any, fixed: Any, ctx: ContractContext) -> Any:
    """An item fix's result: itself when it is of the item's kind (its class or a subclass),
    else data validated once by the item's class (a dict, or a model of another class, for a
    model item; `_Unfit` when that fails); the list's own declarations (a bound on the item)
    are the check's (`holds`)."""
    kind: Any = type(item)
    if not _is_data(item, fixed, (kind,)):
        return fixed
    adapter = _adapter(kind)
    if adapter is None:
        return fixed  # a class pydantic cannot validate: the check decides
    return _validated(adapter, fixed, ctx)


def _validated(adapter: TypeAdapter[Any], fixed: Any, ctx: ContractContext) -> Any:
    """A fix's data validated once (a model of another class read by its attributes)."""
    try:
        return adapter.validate_python(
            fixed, context=ctx.validation_context, from_attributes=_is_model(fixed) or None
        )
    except Exception as exc:
        raise _Unfit(exc) from exc


def _is_data(given: Any, fixed: Any, declared: tuple[Any, ...]) -> bool:
    """Whether a fix's result is data of another kind than the value it was `given`: not of
    its type, nor a model instance of a class `declared` (a union's member included)."""
    if type(fixed) is type(given):
        return False
    return not (_is_model(fixed) and any(_declares(kind, fixed) for kind in declared))


def _declares(declared: Any, value: Any) -> bool:
    """Whether `declared` (a type, a union) has a class `value` is an instance of."""
    declared = _bare(declared)
    if typing.get_origin(declared) in (Union, types.UnionType):
        return any(_declares(member, value) for member in typing.get_args(declared))
    return isinstance(declared, type) and isinstance(value, declared)


@functools.lru_cache(maxsize=128)
def _adapter(kind: Any) -> TypeAdapter[Any] | None:
    """pydantic's adapter for an item's class (None: a class it cannot validate)."""
    try:
        return TypeAdapter(kind)
    except Exception:  # not a type pydantic validates
        return None


class _FixFailed(Exception):
    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.constraint)
        self.diagnostic = diagnostic


class _Unfit(Exception):
    """A fix returned data of another kind that fails the schema."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(describe_exception(exc))
        self.reason = describe_exception(exc)


def _remedy(
    target: Target[Any],
    instance: Any,
    by_policy: dict[str, list[tuple[Contract[Any], Sequence[Diagnostic]]]],
    ctx: ContractContext,
) -> tuple[Any, tuple[Dropped, ...], tuple[str, ...]]:
    """Per list that rules over items judged (the answer, or each list inside it a path
    reaches: `invoices[0].lines`): drops (of the items as answered), then item fixes on the
    items kept, the deepest lists first (so the places of the lists around them still hold);
    then whole-value fixes in declaration order. Each fix's result is taken as the value of
    its kind (`as_answer_kind`, `_as_item_kind`): the next fix gets it so."""
    value = instance
    fixes = by_policy.get("fix", [])
    fixed: list[str] = []
    places: dict[str, Loc] = {}
    drops: dict[str, dict[int, list[Diagnostic]]] = {}
    item_fixes: dict[str, list[tuple[Contract[Any], set[int]]]] = {}
    for rule, group in by_policy.get("drop", []):
        for diagnostic, (at, index) in _located(instance, rule, group, places):
            drops.setdefault(at, {}).setdefault(index, []).append(diagnostic)
    for rule, group in fixes:
        if rule.item:
            for _, (at, index) in _located(instance, rule, group, places):
                rules = item_fixes.setdefault(at, [])
                if not rules or rules[-1][0] is not rule:
                    rules.append((rule, set()))
                rules[-1][1].add(index)
    dropped: list[Dropped] = []
    mended: set[str] = set()
    for at in sorted(drops.keys() | item_fixes.keys(), key=lambda at: (-len(places[at]), at)):
        loc = places[at]
        found = read_at(value, loc)
        if not isinstance(found, list | tuple):
            continue  # the list is not there (the schema would have said so): nothing to do
        items = list(found)
        gone = {i: why for i, why in drops.get(at, {}).items() if i < len(items)}
        answered = read_at(instance, loc)  # the list as answered: its places still hold
        dropped += [Dropped(i, jsonable(answered[i]), tuple(gone[i]), at) for i in sorted(gone)]
        for rule, indices in item_fixes.get(at, []):
            for index in sorted(indices - gone.keys()):
                if index < len(items):
                    items[index] = _as_item_kind(items[index], _fixed(rule, items[index]), ctx)
                    mended.add(rule.name)
        kept = [item for index, item in enumerate(items) if index not in gone]
        value = replaced_at(value, loc, tuple(kept) if isinstance(found, tuple) else kept)
    fixed += [rule.name for rule, _ in fixes if rule.item and rule.name in mended]
    for rule, _ in fixes:
        if not rule.item:
            value = as_answer_kind(target, instance, _fixed(rule, value), ctx)
            fixed.append(rule.name)
    order = {at: number for number, at in enumerate(places)}  # the lists in answer order
    dropped.sort(key=lambda item: (order[item.list_path], item.index))
    return value, tuple(dropped), tuple(dict.fromkeys(fixed))


def _located(
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
        raise _FixFailed(
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


def _flat(groups: list[tuple[Contract[Any], Sequence[Diagnostic]]]) -> tuple[Diagnostic, ...]:
    return tuple(d for _, group in groups for d in group)
