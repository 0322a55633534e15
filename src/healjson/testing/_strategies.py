"""Hypothesis strategies for contract packs: valid instances, rule breakers, broken renderings.

- `valid(pack)`: instances that pass the schema and every contract.
- `violating(pack, contract)`: instances that pass the schema and break exactly that contract.
- `from_schema(model)`: instances built from the model's JSON schema alone (contracts ignored).
- `corrupted(value)`: the value rendered the way language models break JSON (`Corruption`).

Hypothesis is imported when a strategy is built, never when this module is imported; without it,
each function raises `ImportError` telling you to `pip install 'healjson[testing]'`.
"""

from __future__ import annotations

import functools
import importlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_json, to_jsonable_python

from healjson._core.contracts import Contract, ContractContext, run_contracts
from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.drive import drive_sync
from healjson._core.messages import make_context
from healjson._core.sentinels import NOTHING
from healjson._core.target import Target, target_for
from healjson._packs import ContractPack

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

__all__ = [
    "KINDS",
    "Corruption",
    "corrupted",
    "from_schema",
    "valid",
    "violating",
]

KINDS: tuple[str, ...] = (
    "fence",
    "prose_before",
    "prose_after",
    "trailing_comma",
    "line_comment",
    "block_comment",
    "single_quotes",
    "python_literals",
    "unquoted_keys",
    "pretty",
    "truncated",
)
"""Every corruption kind `corrupted` can apply, in the order they are listed on a `Corruption`."""

_INSTALL_HINT = (
    "healjson.testing's property-based kit needs hypothesis: pip install 'healjson[testing]'"
)
_MAX_DEPTH = 5  # past this depth, generation prefers leaves: null branches, empty lists
_EXTRA_ITEMS = 5  # lists without maxItems get at most minItems + this many items
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset({"true", "false", "null", "True", "False", "None", "undefined", "NaN"})
_PROSE_BEFORE = (
    "Here is the JSON:",
    "Sure! Here's the result:",
    "Answer:",
    "Of course. The extracted data follows.",
)
_PROSE_AFTER = (
    "Let me know if you need anything else.",
    "Hope this helps!",
    "All fields are filled in.",
)
_COMMENT_TEXT = (
    "note",
    "computed from the input",
    "see above",
    "see [1]",  # brackets and quotes in comments are text, not structure
    "kept {as given}",
    'the customer\'s "id"',
)


def require_hypothesis() -> None:
    """Raise `ImportError` with the install hint when hypothesis is not installed."""
    try:
        importlib.import_module("hypothesis")
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc


# --- contracts -----------------------------------------------------------------------------------


def pack_context(pack: ContractPack, rule: str | None = None) -> ContractContext:
    """The context contracts see: `pack.extra["contexts"][rule]` when judging instances that
    break `rule` and the pack gives one (a rule that reads the request is broken only under its
    own request), else `pack.extra["context"]`, else an empty `ContractContext`. Each may be a
    `ContractContext`, a prompt string, a list of messages or a mapping of extra data."""
    per_rule = pack.extra.get("contexts")
    if rule is not None and isinstance(per_rule, Mapping) and rule in per_rule:
        return make_context(per_rule[rule])
    return make_context(pack.extra.get("context"))


def judge(
    pack: ContractPack, instance: Any, ctx: ContractContext | None = None
) -> list[Diagnostic]:
    """Every diagnostic the pack's contracts give `instance` (async contracts are awaited)."""
    context = pack_context(pack) if ctx is None else ctx
    return drive_sync(run_contracts(pack.contracts, instance, context))


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


def _resolve_rule(pack: ContractPack, contract: str | Contract[Any]) -> Contract[Any]:
    name = contract if isinstance(contract, str) else contract.name
    return pack.contract(name)


# --- public strategies ---------------------------------------------------------------------------


def valid(pack: ContractPack) -> SearchStrategy[Any]:
    """Instances of `pack.model` that pass the schema and every contract of the pack.

    Uses `pack.strategies["valid"]()` when the pack supplies it (values that are not instances yet,
    such as dicts, are validated into instances). Otherwise it falls back to `from_schema(model)`
    filtered by the contracts: that works for loose rules but can be slow, or give up with
    hypothesis' `filter_too_much` health check, for tight ones (`total == sum(lines)`); packs
    with such rules should supply a `"valid"` strategy. Contracts see an empty `ContractContext`
    unless `pack.extra["context"]` provides one (messages, a prompt or a mapping).
    """
    require_hypothesis()
    target = target_for(pack.model)
    factory = pack.strategies.get("valid")
    if factory is not None:
        return _from_pack(factory, target)
    ctx = pack_context(pack)
    return from_schema(target).filter(lambda instance: not judge(pack, instance, ctx))


def violating(pack: ContractPack, contract: str | Contract[Any]) -> SearchStrategy[Any]:
    """Instances that pass the schema and break exactly `contract` (a name or a `Contract`).

    Uses the pack's strategy for that contract when present. Otherwise the values are built
    constructively from the pack's golden examples: a field the contract declares is replaced
    with a schema-generated value, and a result is kept when that contract, and no other,
    reports a violation — so an arithmetic rule (`total == sum(...)`) is broken by changing
    `total`, not found by luck. Without examples (or declared fields) it falls back to
    `from_schema(model)` filtered the same way. A rule no such value breaks makes hypothesis
    give up (`FailedHealthCheck`); `check_pack` reports that as the rule to supply a strategy
    for (`pack.strategies[name]`). "Breaks" is judged under
    `pack.extra["contexts"][name]` when the pack gives that rule its own request, else under the
    pack-wide context (see `pack_context`). Raises `KeyError` for a contract the pack lacks.
    """
    require_hypothesis()
    rule = _resolve_rule(pack, contract)
    target = target_for(pack.model)
    factory = pack.strategies.get(rule.name)
    if factory is not None:
        return _from_pack(factory, target)
    ctx = pack_context(pack, rule.name)

    def breaks_only_this(instance: Any) -> bool:
        found = judge(pack, instance, ctx)
        return bool(found) and all(
            d.rule == rule.name and d.source is Source.CONTRACT for d in found
        )

    mutations = _mutations(pack, rule, target, breaks_only_this)
    if mutations is not None:
        return mutations
    return from_schema(target).filter(breaks_only_this)


def _mutations(
    pack: ContractPack,
    rule: Contract[Any],
    target: Target[Any],
    breaks_only_this: Callable[[Any], bool],
) -> SearchStrategy[Any] | None:
    """Violating values built constructively: a golden example of the pack (valid by the
    pack's own checks) with some of the fields the rule declares replaced by schema-generated
    values, mixed with schema-generated values, kept when that breaks this rule and no other.
    None when the pack has no usable example or the rule names no top-level field of the
    schema (the plain filtering fallback is used then)."""
    from hypothesis import strategies as st

    bases: list[dict[str, Any]] = []
    for example in pack.examples:
        try:
            instance = as_instance(target, example)
            data = target.adapter.dump_python(instance, mode="json", by_alias=True)
        except Exception:  # an example that does not validate: check_pack reports it
            continue
        if isinstance(data, dict):
            bases.append(data)
    schema = target.json_schema
    builder = _SchemaStrategies(schema)
    properties = builder.resolve(schema).get("properties")
    heads = dict.fromkeys(_head(field) for field in rule.fields)
    fields = [head for head in heads if isinstance(properties, dict) and head in properties]
    if not bases or not fields:
        return None
    assert isinstance(properties, dict)
    replacement = st.one_of(
        [st.fixed_dictionaries({name: builder.build(properties[name], 1)}) for name in fields]
        + [st.fixed_dictionaries({n: builder.build(properties[n], 1) for n in fields})]
    )  # one field at a time first (the others' rules then stay kept), or all of them

    def rebuilt(base: dict[str, Any], changes: dict[str, Any]) -> Any:
        try:
            return target.adapter.validate_json(to_json({**base, **changes}))
        except Exception:  # the replacement broke the schema
            return NOTHING

    mutated = st.builds(rebuilt, st.sampled_from(bases), replacement)
    candidates = st.one_of(mutated, mutated, mutated, from_schema(target))
    return candidates.filter(lambda i: i is not NOTHING and breaks_only_this(i))


def _head(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


def from_schema(model: Any) -> SearchStrategy[Any]:
    """Instances of `model` generated from its pydantic JSON schema (contracts are ignored).

    Understands objects (required and optional properties, `additionalProperties`), strings
    (`minLength`, `maxLength`, `pattern`, the `date`, `date-time`, `time`, `duration`, `uuid`,
    `email`, `uri` and `ipv4`/`ipv6` formats), integers and numbers with bounds and `multipleOf`,
    `enum` and `const`, arrays with `minItems`/`maxItems`/`uniqueItems` and `prefixItems`,
    `anyOf`/`oneOf`/`allOf`, `$ref`/`$defs` (recursive models too) and nullable fields. Each
    generated JSON value is validated with the model's `TypeAdapter`; values pydantic rejects
    (validators, constraints the schema cannot express) are filtered out.
    """
    require_hypothesis()
    target = target_for(model)
    schema = target.json_schema
    data = _SchemaStrategies(schema).build(schema, 0)

    def validated(value: Any) -> Any:
        try:
            return target.adapter.validate_json(to_json(value))
        except Exception:  # ValidationError, or a validator that raises something else
            return NOTHING

    return data.map(validated).filter(lambda instance: instance is not NOTHING)


def _from_pack(factory: Callable[[], Any], target: Target[Any]) -> SearchStrategy[Any]:
    strategy: SearchStrategy[Any] = factory()
    return strategy.map(lambda value: as_instance(target, value))


# --- JSON schema to strategy ---------------------------------------------------------------------


class _SchemaStrategies:
    """Builds a strategy of JSON data for a (pydantic-flavoured) JSON schema."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

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
            return _string(schema)
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
        element = self.build(schema.get("items", {}), depth + 1)
        if schema.get("uniqueItems"):
            return st.lists(element, min_size=low, max_size=high, unique_by=_canonical)
        return st.lists(element, min_size=low, max_size=high)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _string(schema: dict[str, Any]) -> SearchStrategy[Any]:
    from hypothesis import strategies as st

    low = int(schema.get("minLength", 0) or 0)
    high = schema.get("maxLength")
    high = high if isinstance(high, int) else None
    formatted = _formatted(schema.get("format"))
    pattern = schema.get("pattern")
    if formatted is not None:
        base = formatted
    elif isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error:  # an ECMA-only pattern: plain text, filtered by validation later
            base = st.text(min_size=low, max_size=high)
        else:
            base = st.from_regex(pattern, fullmatch=True)
    else:
        return st.text(min_size=low, max_size=high)
    return base.filter(lambda s: low <= len(s) and (high is None or len(s) <= high))


def _formatted(fmt: Any) -> SearchStrategy[str] | None:
    import datetime as dt
    import uuid

    from hypothesis import strategies as st
    from pydantic import TypeAdapter

    def dumped(type_: Any, values: SearchStrategy[Any]) -> SearchStrategy[str]:
        adapter: TypeAdapter[Any] = TypeAdapter(type_)
        return values.map(lambda v: str(adapter.dump_python(v, mode="json")))

    offsets = st.integers(-23 * 60, 23 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
    zones = st.none() | st.just(dt.UTC) | offsets
    formats: dict[str, Callable[[], SearchStrategy[str]]] = {
        "date": lambda: dumped(dt.date, st.dates()),
        "date-time": lambda: dumped(dt.datetime, st.datetimes(timezones=zones)),
        "time": lambda: dumped(dt.time, st.times()),
        "duration": lambda: dumped(dt.timedelta, st.timedeltas()),
        "uuid": lambda: dumped(uuid.UUID, st.uuids()),
        "email": st.emails,
        "uri": lambda: st.from_regex(
            r"https://[a-z]{1,12}\.example/[a-z0-9/]{0,20}", fullmatch=True
        ),
        "ipv4": lambda: st.ip_addresses(v=4).map(str),
        "ipv6": lambda: st.ip_addresses(v=6).map(str),
    }
    make = formats.get(fmt) if isinstance(fmt, str) else None
    return make() if make is not None else None


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
    from hypothesis import strategies as st

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


# --- corruptions ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Corruption:
    """A value rendered the way a language model breaks JSON.

    `text` is the reply, `kinds` the corruptions applied (names from `KINDS`), `finish_reason`
    what the provider would report (`"length"` for a truncated reply), `recoverable` whether L1
    must recover it (False for truncation: L1 must refuse a cut-off reply) and `expected` the JSON
    data it must recover (for a truncated reply: the data before the cut).
    """

    text: str
    kinds: tuple[str, ...]
    finish_reason: str | None
    recoverable: bool
    expected: Any


def corrupted(value: Any, *, model: Any = None) -> SearchStrategy[Corruption]:
    """Renderings of `value` (a model instance or JSON data) the way language models break JSON.

    Kinds (see `KINDS`), drawn in combinations: a markdown code fence (```` ```json ```` or a bare
    ```` ``` ````), prose before and after, trailing commas, `//` and `/* */` comments, single
    quotes (only for strings with no quotes, backslashes or control characters), Python literals
    `True`/`False`/`None`, unquoted keys (plain identifiers only), pretty-printing — and
    truncation: the reply cut strictly inside the JSON value, with `finish_reason="length"` and
    `recoverable=False`. A top-level scalar is only ever fenced. `model` (a pydantic model or any
    type pydantic validates) serialises `value` the way L1 will read it: with field aliases.
    Raises at once if `value` cannot be turned into JSON data.
    """
    require_hypothesis()

    data = _json_data(value, model)
    return _renderings()(data, _applicable(data))


@functools.cache
def _renderings() -> Callable[[Any, tuple[str, ...]], SearchStrategy[Corruption]]:
    """The composite strategy, built once (hypothesis inspects a composite's source when built)."""
    from hypothesis import strategies as st

    return st.composite(_draw_corruption)


def _draw_corruption(draw: DrawFn, data: Any, applicable: tuple[str, ...]) -> Corruption:
    from hypothesis import strategies as st

    kinds = set(draw(st.lists(st.sampled_from(applicable), min_size=1, unique=True)))
    indent = draw(st.sampled_from((2, 4))) if "pretty" in kinds else 0
    spaced = draw(st.booleans()) if not indent else False
    renderer = _Renderer(kinds, indent, spaced, draw)
    body = renderer.render(data)
    before = after = ""
    if "fence" in kinds:
        lang = draw(st.sampled_from(("json", "")))
        before, after = f"```{lang}\n", "\n```"
    if "prose_before" in kinds:
        gap = draw(st.sampled_from(("\n", "\n\n", " ")))
        before = draw(st.sampled_from(_PROSE_BEFORE)) + gap + before
    if "prose_after" in kinds:
        gap = draw(st.sampled_from(("\n", "\n\n", " ")))
        after = after + gap + draw(st.sampled_from(_PROSE_AFTER))
    applied = renderer.applied | (kinds & {"fence", "prose_before", "prose_after", "pretty"})
    if "truncated" in kinds:
        cut = draw(st.integers(1, len(body) - 1))  # strictly inside the value
        ordered = tuple(k for k in KINDS if k in applied or k == "truncated")
        return Corruption(before + body[:cut], ordered, "length", False, data)
    ordered = tuple(k for k in KINDS if k in applied)
    finish = draw(st.sampled_from((None, "stop")))
    return Corruption(before + body + after, ordered, finish, True, data)


def _json_data(value: Any, model: Any) -> Any:
    if model is None and isinstance(value, BaseModel):
        model = type(value)
    if model is None:
        data = to_jsonable_python(value)
    else:
        target = target_for(model)
        instance = as_instance(target, value)
        data = target.adapter.dump_python(instance, mode="json", by_alias=True)
    json.dumps(data, allow_nan=True)  # fail now, not inside a strategy, on data JSON cannot hold
    return data


def _applicable(data: Any) -> tuple[str, ...]:
    if not isinstance(data, dict | list):
        return ("fence",)  # prose, comments or quotes around a bare scalar are not recoverable
    kinds = ["fence", "prose_before", "prose_after", "line_comment", "block_comment", "pretty"]
    strings, keys, literals, filled = _inventory(data)
    if filled:
        kinds.append("trailing_comma")
    if any(_quotable(s) for s in (*strings, *keys)):
        kinds.append("single_quotes")
    if literals:
        kinds.append("python_literals")
    if any(_bare_key(k) for k in keys):
        kinds.append("unquoted_keys")
    if len(json.dumps(data)) > 2:
        kinds.append("truncated")  # needs a character strictly inside the value
    return tuple(k for k in KINDS if k in kinds)


def _inventory(data: Any) -> tuple[list[str], list[str], bool, bool]:
    """Strings, keys, whether there is a bool or null, and whether a container is non-empty."""
    strings: list[str] = []
    keys: list[str] = []
    literals = False
    filled = False
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            filled = filled or bool(node)
            keys.extend(str(k) for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            filled = filled or bool(node)
            stack.extend(node)
        elif isinstance(node, str):
            strings.append(node)
        elif node is None or isinstance(node, bool):
            literals = True
    return strings, keys, literals, filled


def _quotable(text: str) -> bool:
    """Safe to single-quote: nothing that would need escaping or could end the string early."""
    return not any(c in "'\"\\" or ord(c) < 0x20 or c in "\u2018\u2019" for c in text)


def _bare_key(key: str) -> bool:
    return bool(_IDENTIFIER.match(key)) and key not in _RESERVED


class _Renderer:
    """Writes JSON data with the chosen corruptions, drawing where optional ones go."""

    def __init__(self, kinds: set[str], indent: int, spaced: bool, draw: DrawFn) -> None:
        from hypothesis import strategies as st

        self.kinds = kinds
        self.indent = indent
        self.spaced = spaced
        self.draw = draw
        self.booleans = st.booleans()
        self.comments = [k for k in ("block_comment", "line_comment") if k in kinds]
        self.comment_choice = st.sampled_from(self.comments) if self.comments else None
        self.comment_text = st.sampled_from(_COMMENT_TEXT)
        self.applied: set[str] = set()

    def render(self, data: Any) -> str:
        return self._value(data, 0)

    def _value(self, node: Any, depth: int) -> str:
        if isinstance(node, dict):
            colon = ": " if self.indent or self.spaced else ":"
            items = [self._key(str(k)) + colon + self._value(v, depth + 1) for k, v in node.items()]
            return self._container("{", "}", items, depth)
        if isinstance(node, list):
            return self._container("[", "]", [self._value(v, depth + 1) for v in node], depth)
        if node is None or isinstance(node, bool):
            if "python_literals" in self.kinds:
                self.applied.add("python_literals")
                return repr(node)
            return json.dumps(node)
        if isinstance(node, str):
            return self._string(node)
        return json.dumps(node, allow_nan=True)

    def _string(self, text: str) -> str:
        if "single_quotes" in self.kinds and _quotable(text):
            self.applied.add("single_quotes")
            return f"'{text}'"
        return json.dumps(text, ensure_ascii=False)

    def _key(self, key: str) -> str:
        if "unquoted_keys" in self.kinds and _bare_key(key):
            self.applied.add("unquoted_keys")
            return key
        return self._string(key)

    def _container(self, opener: str, closer: str, items: list[str], depth: int) -> str:
        top = depth == 0
        inner = "\n" + " " * (self.indent * (depth + 1)) if self.indent else ""
        outer = "\n" + " " * (self.indent * depth) if self.indent else ""
        comma = ", " if self.spaced else ","
        out = [opener, self._comment(forced="block_comment" if top else None)]
        for index, item in enumerate(items):
            if index:
                out.append(comma + self._comment())
            out.append(inner + item)
        # the first non-empty container always gets a trailing comma; later ones maybe
        first = "trailing_comma" not in self.applied
        if items and "trailing_comma" in self.kinds and (first or self.draw(self.booleans)):
            self.applied.add("trailing_comma")
            out.append(",")
        out.append(self._comment(forced="line_comment" if top else None))
        out.append(outer + closer)
        return "".join(out)

    def _comment(self, forced: str | None = None) -> str:
        """A comment at this slot: always the `forced` kind when it is enabled, else drawn."""
        if forced in self.comments:
            kind: str | None = forced
        elif self.comment_choice is not None and self.draw(self.booleans):
            kind = self.draw(self.comment_choice)
        else:
            kind = None
        if kind is None:
            return ""
        self.applied.add(kind)
        text = self.draw(self.comment_text)
        if kind == "block_comment":
            return f" /* {text} */ " if self.spaced or self.indent else f"/* {text} */"
        return f" // {text}" if self.indent else f"// {text}\n"
