"""`violating`'s constructive half: golden examples with the fields a rule reads changed.

A rule breaks when the fields it declares stop agreeing, so candidates are looked for where that
happens: in a golden example (valid by the pack's own checks) with one or more of the rule's
fields changed. Each draw takes an example, draws afresh the fields no contract reads (so that
the values found are many and varied, while every rule stays as the example kept it), draws a
few changes for each of the rule's fields — another value of the field's schema, or, for a list
or an object, the example's own value with one part changed: an item changed, added or dropped,
a property changed — and then tries them, with the changes every draw tries (another value of
a small enum, the other boolean, an empty or shorter list, null, the field left out), one field
at a time before two and more, until the rule breaks and no other rule does. Trying a change is
a validation and a run of the contracts; drawing one is far dearer, so each drawn value is tried
in several combinations before the draw is given up. Every change differs from the example's
value: a change that gives the example back cannot break anything.

Hypothesis is imported when a strategy is built, never when this module is imported.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_json

from healjson._core.contracts import Contract
from healjson._core.sentinels import MISSING, NOTHING
from healjson._core.target import Target
from healjson._packs import ContractPack

from ._schema_data import _SchemaStrategies, as_instance, schema_strategies

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

__all__ = ["mutations"]

_TRIED = 24  # candidates (a validation and a run of the contracts each) tried per draw
_NESTING = 3  # changes reach this many levels below a top-level field (`lines[1].price`)
_ITEMS = 8  # a list's first this many items are changed one at a time; the rest only as a whole
_CHOICES = 8  # an enum of at most this many values has each other value tried on every draw


@dataclass(frozen=True, slots=True)
class _Field:
    """How one of the rule's fields of one example changes."""

    name: str
    fixed: tuple[Any, ...]  # tried on every draw (MISSING: the field left out)
    drawn: tuple[SearchStrategy[Any], ...]  # each drawn once per draw: another value of the
    # field's schema, and the example's list or object with one part changed (when it has one)


@dataclass(frozen=True, slots=True)
class _Plan:
    base: dict[str, Any]
    fields: tuple[_Field, ...]
    order: SearchStrategy[list[_Field]]  # the order the fields are tried in


def mutations(
    pack: ContractPack,
    rule: Contract[Any],
    target: Target[Any],
    keep: Callable[[Any], bool],
) -> SearchStrategy[Any] | None:
    """Instances built from the pack's golden examples with some of the fields `rule` declares
    changed, each one `keep` accepts; NOTHING when a draw found none. None when the pack has
    no example that validates, or the rule names no top-level field of the schema (or none
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
        fields = tuple(
            field
            for name in names
            if (field := _field(builder, name, properties[name], base, name in required))
        )
        if fields:
            plans.append(_Plan(base, fields, st.permutations(fields)))
    if not plans:
        return None
    free = _free_fields(pack, keys, properties)
    rest = st.fixed_dictionaries(
        {}, optional={name: builder.build(properties[name], 1) for name in free}
    )
    which = st.integers(0, len(plans) - 1)

    def validated(data: dict[str, Any]) -> Any:
        try:
            return target.adapter.validate_json(to_json(data))
        except Exception:  # the change broke the schema (or a validator of the model)
            return NOTHING

    def draw_candidate(draw: DrawFn) -> Any:
        plan = plans[draw(which)]
        data = {**plan.base, **draw(rest)}
        options = [
            (field.name, [*(draw(option) for option in field.drawn), *field.fixed])
            for field in draw(plan.order)
        ]
        for changes in itertools.islice(_combinations(options), _TRIED):
            instance = validated(_changed(data, changes))
            if instance is not NOTHING and keep(instance):
                return instance
        return NOTHING

    return st.composite(draw_candidate)()


def _combinations(options: Sequence[tuple[str, list[Any]]]) -> Iterator[dict[str, Any]]:
    """Changes to try: one field at a time, then two, and so on (each field's options in
    order)."""
    for size in range(1, len(options) + 1):
        for group in itertools.combinations(options, size):
            names = [name for name, _ in group]
            for values in itertools.product(*(values for _, values in group)):
                yield dict(zip(names, values, strict=True))


def _changed(data: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(data)
    for name, value in changes.items():
        _put(out, name, value)
    return out


def _field(
    builder: _SchemaStrategies, name: str, raw: Any, base: dict[str, Any], required: bool
) -> _Field | None:
    current = base.get(name, MISSING)
    fixed = _fixed_changes(builder, builder.resolve(raw), current)
    if not required and current is not MISSING:
        fixed.append(MISSING)
    schema = builder.resolve(raw)
    small_enum = isinstance(schema.get("enum"), list) and len(schema["enum"]) <= _CHOICES + 1
    drawn: tuple[SearchStrategy[Any], ...] = ()
    if not small_enum and schema.get("type") != "boolean":  # those are all in `fixed`
        fresh = _fresh(builder, raw, current, 1)
        parts = _parts(builder, raw, current, 1)
        drawn = tuple(
            option for option in (fresh, fresh if parts is None else parts) if option is not None
        )
    if not fixed and not drawn:
        return None
    return _Field(name, tuple(fixed), drawn)


def _fixed_changes(builder: _SchemaStrategies, schema: dict[str, Any], current: Any) -> list[Any]:
    """The changes tried on every draw: the other values of a small enum, the other boolean,
    null, an empty and a shorter list."""
    out: list[Any] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) <= _CHOICES + 1:
        out.extend(value for value in enum if value != current)
    if schema.get("type") == "boolean" and isinstance(current, bool):
        out.append(not current)
    if current is not None and _allows_null(builder, schema):
        out.append(None)
    if isinstance(current, list) and current:
        array = _branch(builder, schema, "array")
        low = array.get("minItems")
        low = low if isinstance(low, int) else 0
        if low == 0:
            out.append([])
        if len(current) > max(low, 1):
            out.append(current[:-1])
    return out


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


def _put(data: dict[str, Any], name: str, value: Any) -> None:
    if value is MISSING:
        data.pop(name, None)
    else:
        data[name] = value


# --- changes to one value ------------------------------------------------------------------------


def _changes(
    builder: _SchemaStrategies, raw: Any, current: Any, depth: int
) -> SearchStrategy[Any] | None:
    """Values of the schema node `raw` that differ from `current`, its value in a golden example
    (MISSING when the example leaves it out); None when there is no such value to build."""
    from hypothesis import strategies as st

    options = [
        option
        for option in (_fresh(builder, raw, current, depth), _parts(builder, raw, current, depth))
        if option is not None
    ]
    return st.one_of(options) if options else None


def _fresh(
    builder: _SchemaStrategies, raw: Any, current: Any, depth: int
) -> SearchStrategy[Any] | None:
    """Another value of the node's schema."""
    from hypothesis import strategies as st

    schema = builder.resolve(raw)
    enum = schema.get("enum")
    if isinstance(enum, list):
        others = [value for value in enum if value != current]
        return st.sampled_from(others) if others else None
    if "const" in schema and schema["const"] == current:
        return None
    return builder.build(raw, depth).filter(functools.partial(_differs, current))


def _parts(
    builder: _SchemaStrategies, raw: Any, current: Any, depth: int
) -> SearchStrategy[Any] | None:
    """The example's list or object with one part changed: an item changed, added or dropped,
    a property changed or left out."""
    from hypothesis import strategies as st

    if depth > _NESTING or not current:
        return None
    schema = builder.resolve(raw)
    if isinstance(current, list):
        options = _list_changes(builder, _branch(builder, schema, "array"), current, depth)
    elif isinstance(current, dict):
        options = _object_changes(builder, _branch(builder, schema, "object"), current, depth)
    else:
        return None
    return st.one_of(options) if options else None


def _differs(current: Any, value: Any) -> bool:
    return bool(value != current)


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


def _list_changes(
    builder: _SchemaStrategies, schema: dict[str, Any], current: list[Any], depth: int
) -> list[SearchStrategy[Any]]:
    """The list with items dropped, one added, or one item changed."""
    from hypothesis import strategies as st

    if schema.get("type") != "array" or "prefixItems" in schema:
        return []
    size = len(current)
    low = schema.get("minItems")
    low = low if isinstance(low, int) else 0
    high = schema.get("maxItems")
    options: list[SearchStrategy[Any]] = []
    if size > low:
        dropped = st.sets(st.integers(0, size - 1), min_size=1, max_size=size - low)
        options.append(dropped.map(functools.partial(_without, current)))
    items = schema.get("items")
    if not isinstance(items, dict):
        return options
    if not isinstance(high, int) or size < high:
        added = st.tuples(st.integers(0, size), builder.build(items, depth + 1))
        options.append(added.map(functools.partial(_with_item, current)))
    changed = [
        change.map(functools.partial(_item_replaced, current, index))
        for index in range(min(size, _ITEMS))
        if (change := _changes(builder, items, current[index], depth + 1)) is not None
    ]
    if changed:
        options.append(st.one_of(changed))
    return options


def _object_changes(
    builder: _SchemaStrategies, schema: dict[str, Any], current: dict[str, Any], depth: int
) -> list[SearchStrategy[Any]]:
    """The object with one property changed (or left out, when it is optional)."""
    from hypothesis import strategies as st

    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    required = set(schema.get("required", ()))
    changed = []
    for name, raw in properties.items():
        value = current.get(name, MISSING)
        change = _changes(builder, raw, value, depth + 1)
        if name not in required and value is not MISSING:
            change = st.just(MISSING) if change is None else change | st.just(MISSING)
        if change is not None:
            changed.append(change.map(functools.partial(_property_replaced, current, name)))
    return [st.one_of(changed)] if changed else []


def _without(items: list[Any], dropped: set[int]) -> list[Any]:
    return [item for index, item in enumerate(items) if index not in dropped]


def _with_item(items: list[Any], added: tuple[int, Any]) -> list[Any]:
    index, item = added
    return [*items[:index], item, *items[index:]]


def _item_replaced(items: list[Any], index: int, item: Any) -> list[Any]:
    return [*items[:index], item, *items[index + 1 :]]


def _property_replaced(data: dict[str, Any], name: str, value: Any) -> dict[str, Any]:
    out = dict(data)
    _put(out, name, value)
    return out
