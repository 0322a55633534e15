"""JSON schema to hypothesis strategy: `from_schema(model)` and the builder behind it.

Hypothesis is imported when a strategy is built, never when this module is imported; without it,
`require_hypothesis` raises `ImportError` telling you to `pip install 'healjson[testing]'`.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic_core import to_json

from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target, target_for
from healjson._extras import missing_extra

from ._numbers import kit_json_schema, numbers
from ._strings import strings

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = [
    "SchemaStrategies",
    "as_instance",
    "from_schema",
    "kit_schema",
    "memo",
    "require_hypothesis",
    "schema_strategies",
]

_INSTALL_HINT = missing_extra("hypothesis", "testing")
_MAX_DEPTH = 5  # past this depth, generation prefers leaves: null branches, empty lists
_EXTRA_ITEMS = 5  # lists without maxItems get at most minItems + this many items
_SMALL_EXTRA = 2  # `small_instances`: any list or map at most minItems + this many
_MEMO_SIZE = 256  # strategies remembered per kind (kept alive with what they were built from)

S = TypeVar("S")


def require_hypothesis() -> None:
    """Raise `ImportError` with the install hint when hypothesis is not installed."""
    try:
        importlib.import_module("hypothesis")
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc


def from_schema(model: Any) -> SearchStrategy[Any]:
    """Instances of `model` generated from its pydantic JSON schema (contracts are ignored).

    Understands objects (required and optional properties, `additionalProperties`), strings
    (`minLength`, `maxLength`, `pattern`, the `date`, `date-time`, `time`, `duration`, `uuid`,
    `email`, `uri` and `ipv4`/`ipv6` formats), integers and numbers with bounds and `multipleOf`
    (a number with a step is drawn as a multiple of it, `k·m` within the bounds), `Decimal`s
    with `decimal_places` and `max_digits` (which pydantic leaves out of the JSON schema: the
    kit reads them from the model), `enum` and `const`, arrays with `minItems`/`maxItems`/
    `uniqueItems` and `prefixItems`, `anyOf`/`oneOf`/`allOf`, `$ref`/`$defs` (recursive models
    too) and nullable fields. Each
    generated JSON value is validated with the model's `TypeAdapter`; values pydantic rejects
    (validators, constraints the schema cannot express) are filtered out — though `date-time`
    values already carry an offset when the model requires one (`AwareDatetime`) and none when
    it forbids one (`NaiveDatetime`), which the schema does not say. The strategy is built once
    per model and shared.
    """
    require_hypothesis()
    target = target_for(model)
    return memo("from_schema", (target,), lambda: _instances(target))


def small_instances(model: Any) -> SearchStrategy[Any]:
    """`from_schema(model)` with every list and map holding at most `_SMALL_EXTRA` items more
    than its minimum: the values `violating` starts from and changes, which need to be valid
    more than big (each item costs draws, and adds places to try changes at)."""
    target = target_for(model)
    return memo("small_instances", (target,), lambda: _instances(target, small=True))


def _instances(target: Target[Any], *, small: bool = False) -> SearchStrategy[Any]:
    builder = schema_strategies(target, small=small)
    data = builder.build(builder.root, 0)

    def validated(value: Any) -> Any:
        try:
            return target.adapter.validate_json(to_json(value))
        except Exception:  # ValidationError, or a validator that raises something else
            return NOTHING

    return data.map(validated).filter(lambda instance: instance is not NOTHING)


# --- strategies built once -----------------------------------------------------------------------

_MEMO: dict[str, dict[tuple[int, ...], tuple[tuple[Any, ...], Any]]] = {}


def memo(kind: str, inputs: tuple[Any, ...], build: Callable[[], S]) -> S:
    """The strategy of this `kind` built from these `inputs`, built on first use and then shared.

    Hypothesis validates a strategy, computes its labels and describes its filters once per
    strategy object: a strategy rebuilt for every draw (`data.draw(valid(pack))` inside a test)
    pays for all of that again each time. `inputs` are compared by identity (packs, targets,
    functions and contexts are not hashable, or not by value) and kept alive with the strategy,
    so an identity is never reused while its entry stands; the oldest entries make way when a
    kind holds `_MEMO_SIZE` of them."""
    entries = _MEMO.setdefault(kind, {})
    key = tuple(id(item) for item in inputs)
    found = entries.get(key)
    if found is not None:
        return cast(S, found[1])
    built = build()
    if len(entries) >= _MEMO_SIZE:
        del entries[next(iter(entries))]
    entries[key] = (inputs, built)
    return built


def kit_schema(target: Target[Any]) -> dict[str, Any]:
    """The (shared) JSON schema the kit draws the target's values from: pydantic's, with the
    constraints of each `Decimal` it leaves out noted (`_numbers.kit_json_schema`)."""
    return memo("kit_schema", (target,), lambda: kit_json_schema(target))


def schema_strategies(target: Target[Any], *, small: bool = False) -> SchemaStrategies:
    """The (shared) strategy builder for the target's JSON schema (`small`: see
    `small_instances`); its `root` is `kit_schema(target)`."""
    return memo(
        "small_builder" if small else "builder",
        (target,),
        lambda: SchemaStrategies(
            kit_schema(target), zone_constraint(target), _SMALL_EXTRA if small else None
        ),
    )


# --- JSON schema to strategy ---------------------------------------------------------------------


class SchemaStrategies:
    """Builds a strategy of JSON data for a (pydantic-flavoured) JSON schema."""

    def __init__(
        self, root: dict[str, Any], zones: str | None = None, most: int | None = None
    ) -> None:
        self.root = root
        self.zones = zones  # "aware" / "naive": the offset every date-time has / lacks
        self.most = most  # at most this many items over a list's (or map's) minimum
        # (id(node), depth) -> (node, strategy): each node of the schema is built once per depth
        self._built: dict[tuple[int, int], tuple[Any, SearchStrategy[Any]]] = {}

    def resolve(self, raw: Any) -> dict[str, Any]:
        if not isinstance(raw, dict):
            return {}  # `true` (anything) or a malformed node
        schema: dict[str, Any] = raw
        for _ in range(32):
            ref = schema.get("$ref")
            if not (isinstance(ref, str) and ref.startswith("#/")):
                break
            node: Any = self.root
            for part in ref[2:].split("/"):
                node = node.get(part, {}) if isinstance(node, dict) else {}
            rest = {key: value for key, value in schema.items() if key != "$ref"}
            schema = {**(node if isinstance(node, dict) else {}), **rest}
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in all_of:
                merged = {**self.resolve(part), **merged}
            return merged
        return schema

    def build(self, raw: Any, depth: int) -> SearchStrategy[Any]:
        """The strategy for a schema node at this depth, built once (the node is kept alive
        with it, so its id stays its own)."""
        key = (id(raw), depth)
        found = self._built.get(key)
        if found is None:
            found = (raw, self._make(raw, depth))
            self._built[key] = found
        return found[1]

    def _make(self, raw: Any, depth: int) -> SearchStrategy[Any]:
        from hypothesis import strategies as st

        if raw is False:
            return st.nothing()
        if isinstance(raw, dict) and "$ref" in raw and depth > 0:
            # references are built when first drawn: recursive models stay finite to construct
            return st.deferred(lambda: self._build(self.resolve(raw), depth))
        return self._build(self.resolve(raw), depth)

    def _build(self, schema: dict[str, Any], depth: int) -> SearchStrategy[Any]:
        from hypothesis import strategies as st

        if "const" in schema:
            return st.just(schema["const"])
        if isinstance(schema.get("enum"), list):
            return st.sampled_from(schema["enum"]) if schema["enum"] else st.nothing()
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                return self._union(schema, key, branches, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            return st.one_of([self._build({**schema, "type": k}, depth) for k in kind])
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return st.none() | self._build(rest, depth)
        if kind == "object" or (kind is None and "properties" in schema):
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        if kind == "string":
            return strings(schema, self.zones)
        if kind == "integer":
            return _integer(schema)
        if kind == "number":
            return _number(schema)
        if kind == "boolean":
            return st.booleans()
        if kind == "null":
            return st.none()
        return _any_json()

    def _union(
        self, schema: dict[str, Any], key: str, branches: list[Any], depth: int
    ) -> SearchStrategy[Any]:
        from hypothesis import strategies as st

        rest = {k: v for k, v in schema.items() if k not in (key, "discriminator")}
        options = [{**rest, **self.resolve(branch)} for branch in branches]
        if depth >= _MAX_DEPTH:
            leaves = [o for o in options if o.get("type") not in ("object", "array", None)]
            options = leaves or options
        return st.one_of([self.build(option, depth + 1) for option in options])

    def _object(self, schema: dict[str, Any], depth: int) -> SearchStrategy[Any]:
        from hypothesis import strategies as st

        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = {name for name in schema.get("required", ()) if name in props}
        fixed = {name: self.build(props[name], depth + 1) for name in props if name in required}
        optional = (
            {}
            if depth >= _MAX_DEPTH
            else {
                name: self.build(sub, depth + 1)
                for name, sub in props.items()
                if name not in required
            }
        )
        objects = st.fixed_dictionaries(fixed, optional=optional)
        extra = schema.get("additionalProperties")
        if props or not isinstance(extra, dict):
            return objects
        names = schema.get("propertyNames")
        keys = self.build(names, depth + 1) if isinstance(names, dict) else st.text(max_size=12)
        low = int(schema.get("minProperties", 0) or 0)
        high = schema.get("maxProperties")
        if not isinstance(high, int):
            high = low if depth >= _MAX_DEPTH else low + _EXTRA_ITEMS
        if self.most is not None:
            high = min(high, low + self.most)
        return st.dictionaries(keys, self.build(extra, depth + 1), min_size=low, max_size=high)

    def _array(self, schema: dict[str, Any], depth: int) -> SearchStrategy[Any]:
        from hypothesis import strategies as st

        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            fixed = st.tuples(*(self.build(sub, depth + 1) for sub in prefix)).map(list)
            items = schema.get("items")
            if not isinstance(items, dict):
                return fixed
            more = st.lists(self.build(items, depth + 1), max_size=0 if depth else 3)
            return st.tuples(fixed, more).map(lambda pair: pair[0] + pair[1])
        low = int(schema.get("minItems", 0) or 0)
        high = schema.get("maxItems")
        if not isinstance(high, int):
            high = low if depth >= _MAX_DEPTH else low + _EXTRA_ITEMS
        if self.most is not None:
            high = min(high, low + self.most)
        element = self.build(schema.get("items", {}), depth + 1)
        if schema.get("uniqueItems"):
            return st.lists(element, min_size=low, max_size=high, unique_by=_canonical)
        return st.lists(element, min_size=low, max_size=high)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def zone_constraint(target: Target[Any]) -> str | None:
    """ "aware" when every datetime the target constrains must carry an offset (pydantic's
    `AwareDatetime`), "naive" when every one must not (`NaiveDatetime`), else None. The JSON
    schema says `date-time` for all three; drawing naive and aware datetimes alike, an
    itinerary of six aware legs came out valid once in five hundred draws."""
    found: set[str] = set()
    stack: list[Any] = [getattr(target.adapter, "core_schema", None)]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            if node.get("type") == "datetime" and "tz_constraint" in node:
                constraint = node["tz_constraint"]
                found.add(constraint if constraint in ("aware", "naive") else "aware")
            stack.extend(value for key, value in node.items() if key not in ("metadata", "cls"))
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return found.pop() if len(found) == 1 else None


def _integer(schema: dict[str, Any]) -> SearchStrategy[Any]:
    from hypothesis import strategies as st

    low, high = _bounds(schema)
    lo = None if low is None else (math.floor(low[0]) + 1 if low[1] else math.ceil(low[0]))
    hi = None if high is None else (math.ceil(high[0]) - 1 if high[1] else math.floor(high[0]))
    step = schema.get("multipleOf")
    if isinstance(step, int) and step > 0:
        first = None if lo is None else -(-lo // step)
        last = None if hi is None else hi // step
        return st.integers(first, last).map(lambda n: n * step)
    return st.integers(lo, hi)


def _number(schema: dict[str, Any]) -> SearchStrategy[Any]:
    """Numbers within the bounds; on the grid of a `multipleOf` (or of a `Decimal`'s
    `decimal_places`) when there is one (`_numbers`)."""
    from hypothesis import strategies as st

    on_grid = numbers(schema)
    if on_grid is not None:
        return on_grid
    low, high = _bounds(schema)
    return st.floats(
        min_value=None if low is None else low[0],
        max_value=None if high is None else high[0],
        exclude_min=bool(low and low[1]),
        exclude_max=bool(high and high[1]),
        allow_nan=False,
        allow_infinity=False,
    )


def _bounds(
    schema: dict[str, Any],
) -> tuple[tuple[float, bool] | None, tuple[float, bool] | None]:
    """(value, exclusive) for the lower and the upper bound."""

    def bound(inclusive: str, exclusive: str) -> tuple[float, bool] | None:
        if isinstance(schema.get(exclusive), int | float):
            return (schema[exclusive], True)
        if isinstance(schema.get(inclusive), int | float):
            return (schema[inclusive], False)
        return None

    return bound("minimum", "exclusiveMinimum"), bound("maximum", "exclusiveMaximum")


def _any_json() -> SearchStrategy[Any]:
    from hypothesis import strategies as st

    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text()
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=8,
    )


def as_instance(target: Target[Any], value: Any) -> Any:
    """`value` as an instance of the target: kept when it already is one, else validated."""
    if _is_instance(value, target.type_):
        return value
    if isinstance(value, str | bytes) and target.expects_object:
        return target.adapter.validate_json(value)
    return target.adapter.validate_json(to_json(value))


def _is_instance(value: Any, type_: Any) -> bool:
    try:
        return isinstance(type_, type) and isinstance(value, type_)
    except TypeError:  # TypedDict and friends refuse isinstance
        return False
