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
  value is not of the schema's types) is re-asked: item fixes are judged per item (an item
  whose fixed form holds keeps its fix and is not named, one whose fixed form breaks a rule
  is named with those violations too, and what the corrected value still breaks elsewhere is
  named, `_reasked`; after a whole-value fix, the first value's violations), never with those
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
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from healjson._core.diagnostic import Diagnostic, Source, describe_exception
from healjson._core.flags import Flag
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target
from healjson._core.wire.effects import AwaitAll

from .contracts import Contract, ContractContext
from .dumps import answer_data
from .fit import Unfit, as_answer_kind, holds, unheld
from .item_rules import Loc
from .remedy import (
    Dropped,
    FixFailed,
    answered,
    as_answered,
    located,
    plan_of,
    refusal,
    remedy,
    under,
    without_unfit,
)

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
        if made.per_item:  # what the corrected value still breaks, the fixes that held kept
            left = _reasked(left, made)
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
        for _, (at, index) in located(instance, rule, group, places)
    }
    left = tuple(
        d
        for rule, group in zip(contracts, groups, strict=True)
        if rule.on_fail not in ("warn", "drop")
        for d in group
        if not any(under(d.path, where) for where in gone)
    )
    return left, tuple(sorted(gone, key=_place_order))


def _place_order(place: str) -> tuple[str, int]:
    """`lines[3]` as `("lines", 3)`: places of one list in index order."""
    at, _, index = place[:-1].rpartition("[")
    return at, int(index)


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
    refused: tuple[tuple[str, tuple[Diagnostic, ...]], ...] = ()
    """The items whose fixed form is refused (their places, `lines[2]`, as answered), each
    with the blocking violations of its fixed form (none: the fix gave the schema's types
    another value): re-asked, as answered; the other items keep their fixes."""
    mended: tuple[str, ...] = ()
    """The places (as answered) of the items an item fix corrected, the refused ones too."""
    kept: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Each list a drop shortened (its place) with its kept items' indices as answered."""
    whole: bool = False
    """A whole-value fix ran."""

    @property
    def per_item(self) -> bool:
        """The corrected value holds, the rules judged it (`groups`), and no whole-value fix
        ran: what it still breaks is the answer's, item by item (a whole-value fix's result
        that breaks a rule is re-asked with the answer's own violations)."""
        return (
            self.value is not NOTHING and self.unfit is None and not self.error and not self.whole
        )

    @property
    def accepted(self) -> bool:
        """The corrected value holds, and breaks no rule but `"warn"` ones."""
        return (
            self.value is not NOTHING
            and self.unfit is None
            and not self.error
            and not self.refused
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
    plan = plan_of(instance, _by_policy(rules, groups))
    calls: dict[tuple[int, str], tuple[Any, Any]] = {}
    try:
        made = remedy(target, instance, plan, ctx, calls=calls)
        unfit = unheld(target, made.value, ctx, instance)
        if unfit is not None and made.mended and not plan.whole:
            made, unfit = without_unfit(target, instance, plan, ctx, made, unfit=unfit, calls=calls)
    except FixFailed as failed:
        return Correction(error=(failed.diagnostic,), contracts=rules)
    except Unfit as bad:  # a fix's data fails the schema
        return Correction(unfit=bad.reason, contracts=rules)
    except TypeError as exc:  # a list inside a value healjson cannot copy
        return Correction(unfit=describe_exception(exc), contracts=rules)
    value = made.value
    result = Correction(
        value, dropped=made.dropped, fixed=made.fixed, contracts=rules, whole=bool(plan.whole)
    )
    if unfit is not None:
        return dataclasses.replace(result, unfit=unfit)
    regroups = yield from judge_value(target, rules, value, ctx, timeout_s=timeout_s)
    errors = tuple(d for group in regroups for d in group if d.source is Source.CONTRACT_ERROR)
    if errors:
        return dataclasses.replace(result, groups=tuple(map(tuple, regroups)), error=errors)
    kept = tuple(made.kept.items())
    refused: dict[str, list[Diagnostic]] = {where: [] for where in made.unfit}
    for rule, group in zip(rules, regroups, strict=True):
        for d in group if rule.on_fail != "warn" else ():
            path = answered(d.path, made.kept)
            where = next((w for w in made.mended if under(path, w)), None)
            if where is not None:  # an item whose fixed form breaks a rule: it is re-asked
                refused.setdefault(where, []).append(refusal(d, path, made.kept, plan, where))
    return dataclasses.replace(
        result,
        groups=tuple(map(tuple, regroups)),
        refused=tuple((where, tuple(why)) for where, why in refused.items()),
        mended=made.mended,
        kept=kept,
    )


def _reasked(left: tuple[Diagnostic, ...], made: Correction) -> tuple[Diagnostic, ...]:
    """What a re-ask names when the corrected value was judged and not accepted: the answer's
    blocking violations (`left`) but those of the items whose fix held (they keep it: the next
    judging fixes them again), then each refused item's fixed form's, then what the corrected
    value still breaks elsewhere (a list-level rule judging the list without its dropped
    items, an item no fix is for), at their places as answered."""
    refused = [where for where, _ in made.refused]
    held = [where for where in made.mended if where not in refused]
    kept = dict(made.kept)
    still: list[Diagnostic] = []
    for rule, group in zip(made.contracts, made.groups, strict=True):
        for d in group if rule.on_fail != "warn" else ():
            path = answered(d.path, kept)
            if not any(under(path, where) for where in refused):
                still.append(as_answered(d, path, kept))
    judged = {(d.path, d.rule) for d in still}  # the corrected value's, not the answer's
    found = [
        d
        for d in left
        if (d.path, d.rule) not in judged and not any(under(d.path, w) for w in held)
    ]
    found += [d for _, why in made.refused for d in why] + still
    seen: set[tuple[str, str | None, str]] = set()
    out: list[Diagnostic] = []
    for d in found:
        if (d.path, d.rule, d.constraint) not in seen:
            seen.add((d.path, d.rule, d.constraint))
            out.append(d)
    return tuple(out)


def _by_policy(
    contracts: Sequence[Contract[Any]], groups: Sequence[Sequence[Diagnostic]]
) -> dict[str, list[tuple[Contract[Any], Sequence[Diagnostic]]]]:
    """The rules with violations, with them, by their `on_fail`."""
    by_policy: dict[str, list[tuple[Contract[Any], Sequence[Diagnostic]]]] = {}
    for rule, group in zip(contracts, groups, strict=True):
        if group:
            by_policy.setdefault(rule.on_fail, []).append((rule, group))
    return by_policy


def _flat(groups: list[tuple[Contract[Any], Sequence[Diagnostic]]]) -> tuple[Diagnostic, ...]:
    return tuple(d for _, group in groups for d in group)
