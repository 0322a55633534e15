"""The search behind `violating` and `valid`: values changed where the rules read them.

A rule breaks when the values it reads stop agreeing, so candidates are looked for where that
happens: in a value that passes every rule — a golden example, or one `valid(pack)` draws —
with one or two of the values the rule reads changed (the sites and their changes: `_sites`).

Each draw takes a base: a golden example with the fields that no contract reads drawn afresh
(so the values found are many and varied while every rule stays as the example kept it), or a
valid value drawn whole. It draws two fresh changes at sites it picks, and then tries single
changes (the drawn ones first), then pairs of changes, until `keep` accepts the result. Trying
a change is a validation and a run of the contracts, far cheaper than drawing one, so a draw
tries up to `_TRIED` of them before it gives up. `valid`'s side (`variations`) changes a golden
example the same way where any rule reads it, keeping a change every rule passes (or the
example itself), and `repairs` mends a schema value some rules reject with the fixed changes.

Hypothesis is imported when a strategy is built, never when this module is imported.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_json

from ._internals import MISSING, NOTHING, Contract, ContractPack, Target
from ._schema_data import SchemaStrategies, as_instance, schema_strategies
from ._sites import Edit, Path, Site, field_sites, fresh_edit

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

__all__ = ["mutations", "repairs", "variations"]

_DRAWN = 2  # fresh changes drawn per draw, each at a site the draw picks
_TRIED = 32  # changes (a validation and a run of the contracts each) tried per draw
_EXAMPLE_SHARE = 4  # with drawn bases too, this many draws in five start from a golden example


@dataclass(frozen=True, slots=True)
class _Plan:
    """One base and the changes that can be made to it."""

    base: dict[str, Any]
    fixed: tuple[Edit, ...]
    fresh: tuple[Site, ...]


@dataclass(frozen=True, slots=True)
class _Space:
    """What the search needs to know about the target's top-level object."""

    builder: SchemaStrategies
    properties: dict[str, Any]
    required: frozenset[str]
    keys: Mapping[str, str]  # field name or alias -> the property the schema names it by

    def names(self, fields: Iterable[str]) -> list[str]:
        """The top-level properties that these declared fields (`lines[0].qty`) are in."""
        return [key for key in dict.fromkeys(self.keys.get(_head(f)) for f in fields) if key]

    def plan(self, base: dict[str, Any], names: Sequence[str], *, drawn: bool = True) -> _Plan:
        sites = field_sites(
            self.builder, self.properties, set(self.required), names, base, drawn=drawn
        )
        fixed = tuple((site.path, value) for site in sites for value in site.fixed)
        fresh = tuple(site for site in sites if site.fresh is not None)
        return _Plan(base, fixed, fresh)


def _space(target: Target[Any]) -> _Space | None:
    builder = schema_strategies(target)
    root = builder.resolve(builder.root)
    properties = root.get("properties")
    if not isinstance(properties, dict):
        return None
    keys = _schema_keys(target, properties)
    return _Space(builder, properties, frozenset(root.get("required", ())), keys)


def mutations(
    pack: ContractPack,
    rule: Contract[Any],
    target: Target[Any],
    keep: Callable[[Any], bool],
    *,
    drawn_bases: SearchStrategy[Any] | None = None,
) -> SearchStrategy[Any] | None:
    """Instances with one or two of the values `rule` reads changed, each one `keep` accepts;
    NOTHING when a draw found none. The bases are the pack's golden examples and, with
    `drawn_bases` (a strategy of JSON objects, NOTHING for none), values drawn from it: one draw
    in five when there are examples, every draw when there are none. None when the target is
    not an object, the rule names none of its fields, or there is no base to start from."""
    from hypothesis import strategies as st

    space = _space(target)
    if space is None:
        return None
    names = space.names(rule.fields)
    if not names:
        return None
    plans = [space.plan(base, names) for base in _bases(pack, target)]
    plans = [plan for plan in plans if plan.fixed or plan.fresh]
    if not plans and drawn_bases is None:
        return None
    rest = _rest(pack, space)
    which = _below(len(plans)) if plans else None
    share = _below(_EXAMPLE_SHARE + 1)

    def draw_candidate(draw: DrawFn) -> Any:
        if which is not None and (drawn_bases is None or draw(share) < _EXAMPLE_SHARE):
            plan = plans[draw(which)]  # (first: hypothesis starts from, and shrinks towards, 0)
            data = {**plan.base, **draw(rest)}
            drawn = _drawn_edits(draw, plan, _DRAWN)
        else:  # a drawn base is fresh already: one fresh change is enough
            assert drawn_bases is not None
            base = draw(drawn_bases)
            if not isinstance(base, dict):
                return NOTHING
            plan = space.plan(base, names)
            data, drawn = base, _drawn_edits(draw, plan, 1)
        fixed = _rotated(draw, plan.fixed)
        return _first_kept(target, data, _attempts(drawn, fixed), keep)

    return st.composite(draw_candidate)()


def variations(
    pack: ContractPack, target: Target[Any], passes: Callable[[Any], bool]
) -> SearchStrategy[Any] | None:
    """For `valid`: the golden examples with the fields no contract reads drawn afresh, and one
    of the values the rules read changed where every rule still `passes` (else the example as
    it is); NOTHING when even that fails (a rule reading a field it does not declare). None
    when the pack has no golden example that validates as an object."""
    from hypothesis import strategies as st

    space = _space(target)
    bases = _bases(pack, target)
    if space is None or not bases:
        return None
    declared = all(rule.fields for rule in pack.contracts)
    names = space.names(f for rule in pack.contracts for f in rule.fields) if declared else []
    plans = [space.plan(base, names) for base in bases]
    rest = _rest(pack, space)
    which = _below(len(plans))

    def draw_valid(draw: DrawFn) -> Any:
        plan = plans[draw(which)]
        data = {**plan.base, **draw(rest)}
        tries: list[tuple[Edit, ...]] = [(edit,) for edit in _drawn_edits(draw, plan, _DRAWN)]
        if plan.fixed:
            tries.append((plan.fixed[draw(_below(len(plan.fixed)))],))
        tries.append(())  # the example as it is
        return _first_kept(target, data, iter(tries), passes)

    return st.composite(draw_valid)()


def repairs(
    pack: ContractPack, target: Target[Any], passes: Callable[[Any], bool]
) -> Callable[[Any, Sequence[str]], Any]:
    """For `valid`: a function that takes an instance some contracts reject (and their names)
    and gives it back with one or two fixed changes inside the fields those contracts declare
    — the cheapest changes there are: another value of a small enum, a bound, null, an emptied
    or shorter list, a field left out — with which it `passes`; NOTHING when none of the first
    `_TRIED` does. Far cheaper than drawing another instance."""
    space = _space(target)
    fields = {rule.name: rule.fields for rule in pack.contracts}

    def repaired(instance: Any, rules: Sequence[str]) -> Any:
        if space is None:
            return NOTHING
        names = space.names(f for rule in rules for f in fields.get(rule, ()))
        if not names:
            return NOTHING
        data = target.adapter.dump_python(instance, mode="json", by_alias=True)
        if not isinstance(data, dict):
            return NOTHING
        plan = space.plan(data, names, drawn=False)
        return _first_kept(target, data, _attempts((), plan.fixed), passes)

    return repaired


# --- one draw ------------------------------------------------------------------------------------


def _drawn_edits(draw: DrawFn, plan: _Plan, count: int) -> list[Edit]:
    """`count` fresh changes, each at a site the draw picks (fewer when one changes nothing)."""
    out: list[Edit] = []
    if not plan.fresh:
        return out
    pick = _below(len(plan.fresh))
    for _ in range(count):
        site = plan.fresh[draw(pick)]
        assert site.fresh is not None
        edit = fresh_edit(site, draw(site.fresh))
        if edit is not None:
            out.append(edit)
    return out


def _rotated(draw: DrawFn, fixed: tuple[Edit, ...]) -> list[Edit]:
    """The fixed changes, starting at a drawn place (each draw tries them in another order)."""
    if len(fixed) < 2:
        return list(fixed)
    start = draw(_below(len(fixed)))
    return [*fixed[start:], *fixed[:start]]


@functools.cache
def _below(count: int) -> SearchStrategy[int]:
    from hypothesis import strategies as st

    return st.integers(0, max(count - 1, 0))


def _first_kept(
    target: Target[Any],
    data: Any,
    attempts: Iterator[tuple[Edit, ...]],
    keep: Callable[[Any], bool],
) -> Any:
    """The first of the first `_TRIED` edited copies of `data` that validates as `target` and
    that `keep` accepts; NOTHING when none does."""
    for edits in itertools.islice(attempts, _TRIED):
        try:
            instance = target.adapter.validate_json(to_json(_edited(data, edits)))
        except Exception:  # the change broke the schema (or a validator of the model)
            continue
        if keep(instance):
            return instance
    return NOTHING


def _attempts(drawn: Sequence[Edit], fixed: Sequence[Edit]) -> Iterator[tuple[Edit, ...]]:
    """Single changes, the drawn ones first; then pairs of changes at unrelated sites: two of
    the fixed ones (two numbers at their bounds, a list emptied and a flag flipped), then a
    drawn one with another."""
    for edit in (*drawn, *fixed):
        yield (edit,)
    pairs = itertools.chain(
        itertools.combinations(fixed, 2),
        itertools.product(drawn, fixed),
        itertools.combinations(drawn, 2),
    )
    for first, second in pairs:
        if not (_within(first[0], second[0]) or _within(second[0], first[0])):
            yield (first, second)


def _within(path: Path, other: Path) -> bool:
    return other[: len(path)] == path


def _edited(data: dict[str, Any], edits: Sequence[Edit]) -> Any:
    out: Any = data
    for path, value in edits:
        out = _set(out, path, value)
    return out


def _set(node: Any, path: Path, value: Any) -> Any:
    """A copy of `node` with `value` at `path` (copied along the path only)."""
    key, rest = path[0], path[1:]
    copy: Any = list(node) if isinstance(node, list) else dict(node)
    if rest:
        copy[key] = _set(node[key], rest, value)
    elif value is MISSING:
        copy.pop(key, None)
    else:
        copy[key] = value
    return copy


# --- examples and fields -------------------------------------------------------------------------


def _bases(pack: ContractPack, target: Target[Any]) -> list[dict[str, Any]]:
    """The golden examples as JSON data (those that do not validate are check_pack's to report)."""
    bases = []
    for example in pack.examples:
        try:
            instance = as_instance(target, example)
            data = target.adapter.dump_python(instance, mode="json", by_alias=True)
        except Exception:
            continue
        if isinstance(data, dict):
            bases.append(data)
    return bases


def _rest(pack: ContractPack, space: _Space) -> SearchStrategy[dict[str, Any]]:
    """The top-level fields no contract of the pack declares, drawn afresh (each may be left
    out: the example's value stays); none when a contract declares no fields at all (it may
    read any of them)."""
    from hypothesis import strategies as st

    if any(not rule.fields for rule in pack.contracts):
        free: list[str] = []
    else:
        read = {space.keys.get(_head(name)) for rule in pack.contracts for name in rule.fields}
        free = [name for name in space.properties if name not in read]
    optional = {name: space.builder.build(space.properties[name], 1) for name in free}
    return st.fixed_dictionaries({}, optional=optional)


def _schema_keys(target: Target[Any], properties: Mapping[str, Any]) -> dict[str, str]:
    """Field name or alias -> the property the schema names it by."""
    keys = {name: name for name in properties}
    model = target.type_
    if isinstance(model, type) and issubclass(model, BaseModel):
        for name, info in model.model_fields.items():
            if isinstance(info.alias, str) and info.alias in properties:
                keys.setdefault(name, info.alias)
    return keys


def _head(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]
