"""`violating`'s constructive half: golden examples changed where a rule reads them.

A rule breaks when the values it reads stop agreeing, so candidates are looked for where that
happens: in a golden example (valid by the pack's own checks) with one or two of those values
changed. The places a change can go — *sites* — are the rule's top-level fields and, inside a
list or an object, each item and each property (`lines`, `lines[0]`, `lines[0].qty`). Each
site has changes tried on every draw, which cost nothing to make: the other values of a small
enum, the other boolean, null, the bounds of a number, an empty or shorter list, a field left
out. And each can draw a fresh value of its schema (for a list, also the list with a fresh item
added), which costs a hypothesis draw.

Each draw takes an example, draws afresh the fields that no contract reads (so that the values
found are many and varied while every rule stays as the example kept it), draws two fresh
changes at sites it picks, and then tries single changes (the drawn ones first), then pairs of
changes, until the rule breaks and no other rule does. Trying a change is a validation and a
run of the contracts, far cheaper than drawing one, so a draw tries up to `_TRIED` of them
before it gives up. Every change differs from the example's value: a change that gives the
example back cannot break anything.

Hypothesis is imported when a strategy is built, never when this module is imported.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_json

from healjson._core.judge.contracts import Contract
from healjson._core.sentinels import MISSING, NOTHING
from healjson._core.target.target import Target
from healjson._packs import ContractPack

from ._schema_data import _SchemaStrategies, as_instance, schema_strategies

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

__all__ = ["mutations"]

_DRAWN = 2  # fresh changes drawn per draw, each at a site the draw picks
_TRIED = 32  # changes (a validation and a run of the contracts each) tried per draw
_NESTING = 3  # sites reach this many levels below a top-level field (`lines[1].price`)
_ITEMS = 8  # a list's first this many items are sites of their own
_CHOICES = 8  # an enum of at most this many values has each other value tried on every draw

Path = tuple[str | int, ...]
Edit = tuple[Path, Any]  # the value at that path in the example's data (MISSING: left out)


@dataclass(frozen=True, slots=True)
class _Site:
    """One place a change can go in one example."""

    path: Path
    fixed: tuple[Any, ...]  # tried on every draw
    fresh: SearchStrategy[Any] | None  # drawn: another value of the schema there


@dataclass(frozen=True, slots=True)
class _Plan:
    """One example and the changes that can be made to it."""

    base: dict[str, Any]
    fixed: tuple[Edit, ...]
    fresh: tuple[_Site, ...]
    pick: SearchStrategy[int] | None  # which site of `fresh` a drawn change goes to
    turn: SearchStrategy[int]  # where in `fixed` a draw starts trying


def mutations(
    pack: ContractPack,
    rule: Contract[Any],
    target: Target[Any],
    keep: Callable[[Any], bool],
) -> SearchStrategy[Any] | None:
    """Instances built from the pack's golden examples with one or two of the values `rule`
    reads changed, each one `keep` accepts; NOTHING when a draw found none. None when the pack
    has no example that validates, or the rule names no top-level field of the schema (or none
    that can change)."""
    from hypothesis import strategies as st

    builder = schema_strategies(target)
    root = builder.resolve(target.json_schema)
    properties = root.get("properties")
    bases = _bases(pack, target)
    if not bases or not isinstance(properties, dict):
        return None
    keys = _schema_keys(target, properties)
    names = [key for key in dict.fromkeys(keys.get(_head(f)) for f in rule.fields) if key]
    required = set(root.get("required", ()))
    plans: list[_Plan] = []
    for base in bases:
        sites = _field_sites(builder, properties, required, names, base)
        fixed = tuple((site.path, value) for site in sites for value in site.fixed)
        fresh = tuple(site for site in sites if site.fresh is not None)
        if fixed or fresh:
            pick = st.integers(0, len(fresh) - 1) if fresh else None
            turn = st.integers(0, max(len(fixed) - 1, 0))
            plans.append(_Plan(base, fixed, fresh, pick, turn))
    if not plans:
        return None
    free = _free_fields(pack, keys, properties)
    rest = st.fixed_dictionaries(
        {}, optional={name: builder.build(properties[name], 1) for name in free}
    )
    which = st.integers(0, len(plans) - 1)

    def draw_candidate(draw: DrawFn) -> Any:
        plan = plans[draw(which)]
        data = {**plan.base, **draw(rest)}
        drawn: list[Edit] = []
        if plan.pick is not None:
            for _ in range(_DRAWN):
                site = plan.fresh[draw(plan.pick)]
                assert site.fresh is not None
                drawn.append((site.path, draw(site.fresh)))
        start = draw(plan.turn)
        fixed = [*plan.fixed[start:], *plan.fixed[:start]]
        return _first_kept(target, data, _attempts(drawn, fixed), keep)

    return st.composite(draw_candidate)()


def repairs(
    pack: ContractPack, target: Target[Any], passes: Callable[[Any], bool]
) -> Callable[[Any, Sequence[str]], Any]:
    """For `valid`: a function that takes an instance some contracts reject (and their names)
    and gives it back with one or two fixed changes inside the fields those contracts declare
    — the cheapest changes there are: another value of a small enum, a bound, null, an emptied
    or shorter list, a field left out — with which it `passes`; NOTHING when none of the first
    `_TRIED` does. Far cheaper than drawing another instance."""
    builder = schema_strategies(target)
    root = builder.resolve(target.json_schema)
    properties = root.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    keys = _schema_keys(target, properties)
    required = set(root.get("required", ()))
    fields = {rule.name: rule.fields for rule in pack.contracts}

    def repaired(instance: Any, rules: Sequence[str]) -> Any:
        heads = (keys.get(_head(f)) for rule in rules for f in fields.get(rule, ()))
        names = [name for name in dict.fromkeys(heads) if name]
        if not names:
            return NOTHING
        data = target.adapter.dump_python(instance, mode="json", by_alias=True)
        if not isinstance(data, dict):
            return NOTHING
        sites = _field_sites(builder, properties, required, names, data, drawn=False)
        fixed = [(site.path, value) for site in sites for value in site.fixed]
        return _first_kept(target, data, _attempts((), fixed), passes)

    return repaired


def _field_sites(
    builder: _SchemaStrategies,
    properties: dict[str, Any],
    required: set[str],
    names: Sequence[str],
    data: dict[str, Any],
    *,
    drawn: bool = True,
) -> list[_Site]:
    """The sites of the top-level fields `names` of `data` (see `_sites`)."""
    return [
        site
        for name in names
        for site in _sites(
            builder,
            (name,),
            properties[name],
            data.get(name, MISSING),
            depth=1,
            required=name in required,
            drawn=drawn,
        )
    ]


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


# --- sites ---------------------------------------------------------------------------------------


def _sites(
    builder: _SchemaStrategies,
    path: Path,
    raw: Any,
    current: Any,
    *,
    depth: int,
    required: bool,
    drawn: bool = True,
) -> list[_Site]:
    """The site at `path` (where the example holds `current`) and, inside a list or an object,
    the sites of its items and properties; with `drawn=False`, their fixed changes only."""
    schema = builder.resolve(raw)
    fixed = _fixed(builder, schema, current)
    if not required and current is not MISSING:
        fixed.append(MISSING)
    fresh = None
    if drawn and not _all_fixed(schema):
        fresh = _fresh(builder, raw, schema, current, depth)
    out = [_Site(path, tuple(fixed), fresh)] if fixed or fresh is not None else []
    if depth > _NESTING:
        return out
    inner: list[tuple[str | int, Any, Any, bool]] = []  # key, schema, value, required
    if isinstance(current, list):
        items = _branch(builder, schema, "array").get("items")
        if isinstance(items, dict):
            inner = [(index, items, item, True) for index, item in enumerate(current[:_ITEMS])]
    elif isinstance(current, dict):
        obj = _branch(builder, schema, "object")
        props = obj.get("properties")
        if isinstance(props, dict):
            wanted = set(obj.get("required", ()))
            inner = [
                (name, sub, current.get(name, MISSING), name in wanted)
                for name, sub in props.items()
            ]
    for key, sub, value, needed in inner:
        out.extend(
            _sites(
                builder,
                (*path, key),
                sub,
                value,
                depth=depth + 1,
                required=needed,
                drawn=drawn,
            )
        )
    return out


def _all_fixed(schema: dict[str, Any]) -> bool:
    """Every other value is among the fixed changes (a small enum, a boolean, a constant)."""
    enum = schema.get("enum")
    small = isinstance(enum, list) and len(enum) <= _CHOICES + 1
    return small or "const" in schema or schema.get("type") == "boolean"


def _fixed(builder: _SchemaStrategies, schema: dict[str, Any], current: Any) -> list[Any]:
    """The changes tried on every draw: the other values of a small enum, the other boolean,
    null, the bounds of a number, an empty string, an empty or shorter list."""
    out: list[Any] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) <= _CHOICES + 1:
        out.extend(value for value in enum if value != current)
    kind = schema.get("type")
    if kind == "boolean" and isinstance(current, bool):
        out.append(not current)
    if current is not None and _allows_null(builder, schema):
        out.append(None)
    if kind in ("integer", "number") and isinstance(current, int | float):
        out.extend(bound for bound in _bounds(schema, kind == "integer") if bound != current)
    plain = not ({"pattern", "format", "enum", "minLength"} & set(schema))
    if kind == "string" and current and plain:
        out.append("")
    if isinstance(current, list) and current:
        array = _branch(builder, schema, "array")
        low = array.get("minItems")
        low = low if isinstance(low, int) else 0
        if low == 0:
            out.append([])
        if len(current) > max(low, 1):
            out.extend((current[:-1], current[1:]))
    return out


def _bounds(schema: dict[str, Any], integer: bool) -> list[int | float]:
    """The smallest and the largest value the schema allows, where it sets them."""
    low, high = schema.get("minimum"), schema.get("maximum")
    step = schema.get("multipleOf")
    if not integer:
        bounds = [b for b in (low, high) if isinstance(b, int | float) and not isinstance(b, bool)]
        return [] if step is not None else bounds
    first = _edge(low, schema.get("exclusiveMinimum"), 1)
    last = _edge(high, schema.get("exclusiveMaximum"), -1)
    if isinstance(step, int) and step > 0:
        first = None if first is None else -(-first // step) * step
        last = None if last is None else last // step * step
    elif step is not None:
        return []
    return [bound for bound in (first, last) if bound is not None]


def _edge(inclusive: Any, exclusive: Any, inward: int) -> int | None:
    """An integer bound: the inclusive one rounded inwards, else next to the exclusive one."""
    if _number(inclusive):
        return int(math.ceil(inclusive) if inward > 0 else math.floor(inclusive))
    if _number(exclusive):
        return int(math.floor(exclusive) + 1 if inward > 0 else math.ceil(exclusive) - 1)
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fresh(
    builder: _SchemaStrategies, raw: Any, schema: dict[str, Any], current: Any, depth: int
) -> SearchStrategy[Any] | None:
    """Another value of the schema at a site (for a list, also the list with a fresh item)."""
    from hypothesis import strategies as st

    enum = schema.get("enum")
    if isinstance(enum, list):
        others = [value for value in enum if value != current]
        return st.sampled_from(others) if others else None
    fresh = builder.build(raw, depth).filter(functools.partial(_differs, current))
    if not isinstance(current, list):
        return fresh
    array = _branch(builder, schema, "array")
    items, high = array.get("items"), array.get("maxItems")
    if not isinstance(items, dict) or (isinstance(high, int) and len(current) >= high):
        return fresh
    added = st.tuples(st.integers(0, len(current)), builder.build(items, depth + 1))
    return fresh | added.map(functools.partial(_with_item, current))


def _differs(current: Any, value: Any) -> bool:
    return bool(value != current)


def _with_item(items: list[Any], added: tuple[int, Any]) -> list[Any]:
    index, item = added
    return [*items[:index], item, *items[index:]]


def _branch(builder: _SchemaStrategies, schema: dict[str, Any], kind: str) -> dict[str, Any]:
    """The schema itself, or its `anyOf`/`oneOf` branch of that JSON type (`list[X] | None`)."""
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                resolved = builder.resolve(branch)
                if resolved.get("type") == kind:
                    return resolved
    return schema


def _allows_null(builder: _SchemaStrategies, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if schema.get("nullable") is True:
        return True
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and any(
            builder.resolve(branch).get("type") == "null" for branch in branches
        ):
            return True
    return False


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


def _schema_keys(target: Target[Any], properties: Mapping[str, Any]) -> dict[str, str]:
    """Field name or alias -> the property the schema names it by."""
    keys = {name: name for name in properties}
    model = target.type_
    if isinstance(model, type) and issubclass(model, BaseModel):
        for name, info in model.model_fields.items():
            if isinstance(info.alias, str) and info.alias in properties:
                keys.setdefault(name, info.alias)
    return keys


def _free_fields(
    pack: ContractPack, keys: Mapping[str, str], properties: Mapping[str, Any]
) -> list[str]:
    """The top-level fields no contract of the pack declares (none when a contract declares no
    fields at all: it may read any of them)."""
    if any(not rule.fields for rule in pack.contracts):
        return []
    read = {keys.get(_head(name)) for rule in pack.contracts for name in rule.fields}
    return [name for name in properties if name not in read]


def _head(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]
