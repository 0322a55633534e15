"""The schema dialects: for generated pydantic models (unions, recursion, maps, tuples,
constraints), Anthropic's and Gemini's transforms produce schemas their documented rules accept,
and every constraint a transform drops is still checked locally (a value that breaks only a
dropped constraint is never `Healed`).

The rules, as the providers document them:

* Anthropic structured outputs (`output_config.format`, strict tools): the types, `enum` of
  primitives, `const`, `anyOf`, `allOf` (not of a `$ref`), local `$ref` / `$defs`, `properties`,
  `required`, `additionalProperties` that must be `false` on every object, `items`, `minItems`
  of 0 or 1 only, the string formats date-time, time, date, duration, email, hostname, uri,
  ipv4, ipv6, uuid, `pattern`, `description`, `title`, `default`; no numeric bounds, string
  lengths, `maxItems`, other `minItems`, and no recursive schema.
* Gemini `response_json_schema`: only `$id`, `$defs`, `$ref`, `$anchor`, `type`, `format`,
  `title`, `description`, `enum` (strings and numbers), `items`, `prefixItems`, `minItems`,
  `maxItems`, `minimum`, `maximum`, `anyOf`, `oneOf`, `properties`, `additionalProperties`,
  `required` and `propertyOrdering`; a node with a `$ref` carries only `$` keywords; a cyclic
  reference only under a property that is not required.
"""

from __future__ import annotations

import datetime
import enum
import json
import uuid
from collections.abc import Iterator, Mapping
from decimal import Decimal
from ipaddress import IPv4Address
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import validators
from pydantic import AnyUrl, BaseModel, Field, create_model

import healjson
from healjson._providers.anthropic_messages.schema import (
    AnthropicSchemaUnsupported,
    anthropic_schema,
)
from healjson._providers.gemini_generate.schema import GeminiSchemaUnsupported, gemini_schema
from healjson.testing._schema_data import from_schema

# --- the documented rules, one checker per dialect ----------------------------------------------

_ANTHROPIC_KEYS = frozenset(
    {"type", "enum", "const", "anyOf", "allOf", "$ref", "$defs", "properties", "required",
     "additionalProperties", "items", "minItems", "format", "pattern", "description", "title",
     "default"}
)  # fmt: skip
_ANTHROPIC_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_GEMINI_KEYS = frozenset(
    {"$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum",
     "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf",
     "properties", "additionalProperties", "required", "propertyOrdering"}
)  # fmt: skip
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMAS = ("items", "additionalProperties")


def _nodes(node: Any, path: str = "#") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema node below `node` (itself included), with its path."""
    if not isinstance(node, Mapping):
        return
    yield path, node
    for name, sub in (node.get("properties") or {}).items():
        yield from _nodes(sub, f"{path}/properties/{name}")
    for key in _SUBSCHEMA_LISTS:
        for index, sub in enumerate(node.get(key) or ()):
            yield from _nodes(sub, f"{path}/{key}/{index}")
    for key in _SUBSCHEMAS:
        if isinstance(node.get(key), Mapping):
            yield from _nodes(node[key], f"{path}/{key}")
    for name, sub in (node.get("$defs") or {}).items():
        yield from _nodes(sub, f"#/$defs/{name}")


def _ref_edges(node: Any, *, required_only: bool) -> set[str]:
    """The definitions `node` refers to (only through required properties, if asked), up to
    the next definition."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if not isinstance(item, Mapping):
            continue
        ref = item.get("$ref")
        if isinstance(ref, str):
            found.add(ref.removeprefix("#/$defs/"))
        required = set(item.get("required") or ())
        for name, sub in (item.get("properties") or {}).items():
            if not required_only or name in required:
                stack.append(sub)
        for key in _SUBSCHEMA_LISTS:
            stack.extend(item.get(key) or ())
        stack.extend(item.get(key) for key in _SUBSCHEMAS)
    return found


def _cycle(defs: Mapping[str, Any], *, required_only: bool) -> bool:
    edges = {name: _ref_edges(sub, required_only=required_only) for name, sub in defs.items()}
    for start, first in edges.items():
        seen: set[str] = set()
        stack = list(first)
        while stack:
            name = stack.pop()
            if name == start:
                return True
            if name in seen or name not in edges:
                continue
            seen.add(name)
            stack.extend(edges[name])
    return False


def _common(schema: Mapping[str, Any], path: str, node: Mapping[str, Any]) -> list[str]:
    problems = []
    ref = node.get("$ref")
    if ref is not None:
        name = str(ref).removeprefix("#/$defs/")
        if not str(ref).startswith("#/$defs/") or name not in (schema.get("$defs") or {}):
            problems.append(f"{path}: $ref {ref!r} is not a local definition")
    if not set(node.get("required") or ()) <= set(node.get("properties") or {}):
        problems.append(f"{path}: requires a property it does not declare")
    return problems


def anthropic_violations(schema: Mapping[str, Any]) -> list[str]:
    """What breaks Anthropic's documented structured-output rules in `schema`."""
    problems: list[str] = []
    for path, node in _nodes(schema):
        problems += _common(schema, path, node)
        problems += [f"{path}: `{key}`" for key in set(node) - _ANTHROPIC_KEYS]
        if node.get("minItems", 0) not in (0, 1):
            problems.append(f"{path}: minItems {node['minItems']}")
        if "format" in node and node["format"] not in _ANTHROPIC_FORMATS:
            problems.append(f"{path}: format {node['format']!r}")
        if any(isinstance(v, dict | list) for v in node.get("enum") or ()):
            problems.append(f"{path}: an enum of complex values")
        is_object = node.get("type") == "object" or "properties" in node
        if is_object and node.get("additionalProperties") is not False:
            problems.append(f"{path}: an object not closed by additionalProperties: false")
        if any("$ref" in sub for sub in node.get("allOf") or ()):
            problems.append(f"{path}: allOf of a $ref")
    if _cycle(schema.get("$defs") or {}, required_only=False):
        problems.append("a recursive schema")
    return problems


def gemini_violations(schema: Mapping[str, Any]) -> list[str]:
    """What breaks Gemini's documented `response_json_schema` rules in `schema`."""
    problems: list[str] = []
    for path, node in _nodes(schema):
        problems += _common(schema, path, node)
        problems += [f"{path}: `{key}`" for key in set(node) - _GEMINI_KEYS]
        enum_values = node.get("enum") or ()
        if any(isinstance(v, bool) or not isinstance(v, str | int | float) for v in enum_values):
            problems.append(f"{path}: an enum of values other than strings and numbers")
        if "$ref" in node and any(not key.startswith("$") for key in node):
            problems.append(f"{path}: a $ref beside other keywords")
    if _cycle(schema.get("$defs") or {}, required_only=True):
        problems.append("a cyclic reference through required properties")
    return problems


# --- generated models ----------------------------------------------------------------------------


class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


_names = st.sampled_from(["alpha", "beta", "gamma", "delta", "kappa", "omega"])

_strings = st.sampled_from(
    [
        (str, {}),
        (str, {"max_length": 5}),
        (str, {"min_length": 2}),
        (str, {"pattern": "^[a-z]+$"}),
        (str, {"description": "a word"}),
    ]
)
_numbers = st.sampled_from(
    [
        (int, {}),
        (int, {"ge": 0}),
        (int, {"gt": 0, "le": 100}),
        (int, {"multiple_of": 5}),
        (float, {"ge": 0.5, "lt": 9.5}),
    ]
)
_scalars = st.one_of(
    _strings,
    _numbers,
    st.just((bool, {})),
    st.just((Literal["yes", "no"], {})),
    st.just((Literal[1, 2, 3], {})),
    st.just((Literal[True], {})),
    st.just((Shade, {})),
    st.sampled_from(
        [
            (datetime.date, {}),
            (datetime.datetime, {}),
            (datetime.timedelta, {}),
            (uuid.UUID, {}),
            (AnyUrl, {}),
            (Decimal, {}),
            (IPv4Address, {}),
        ]
    ),
)


def _wrap(inner: st.SearchStrategy[tuple[Any, dict[str, Any]]]) -> st.SearchStrategy[Any]:
    def annotate(spec: tuple[Any, dict[str, Any]]) -> Any:
        kind, field = spec
        return Annotated[kind, Field(**field)] if field else kind

    plain = inner.map(annotate)
    return st.one_of(
        plain,
        plain.map(lambda t: t | None),
        plain.map(lambda t: list[t]),  # type: ignore[valid-type]
        plain.map(lambda t: Annotated[list[t], Field(min_length=2, max_length=4)]),  # type: ignore[valid-type]
        plain.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        st.tuples(plain, plain).map(lambda ts: ts[0] | ts[1]),
        st.tuples(plain, plain).map(lambda ts: tuple[ts[0], ts[1]]),  # type: ignore[valid-type]
    )


_counter = iter(range(10**9))
# built once: `_wrap(...)` inside `models` was a new strategy, validated anew, on every draw
_field_kinds = _wrap(_scalars)


@st.composite
def models(draw: st.DrawFn, depth: int = 0) -> type[BaseModel]:
    """A pydantic model of a few fields: scalars with constraints, optionals, lists, maps,
    unions, tuples, nested models and (sometimes) a recursive one."""
    names = draw(st.lists(_names, min_size=1, max_size=4, unique=True))
    fields: dict[str, Any] = {}
    for name in names:
        if depth < 1 and draw(st.integers(0, 4)) == 0:
            kind: Any = draw(models(depth + 1))
        elif depth < 1 and draw(st.integers(0, 6)) == 0:
            kind = _recursive(draw(st.booleans()))
        else:
            kind = draw(_field_kinds)
        optional = draw(st.booleans())
        fields[name] = (kind, None) if optional and _nullable(kind) else (kind, ...)
    return create_model(f"M{next(_counter)}", **fields)


def _nullable(kind: Any) -> bool:
    try:
        return type(None) in getattr(kind, "__args__", ())
    except TypeError:
        return False


def _recursive(required_link: bool) -> type[BaseModel]:
    """A self-referencing model; its link to itself required or not."""
    name = f"Node{next(_counter)}"
    link: Any = (f"{name} | None", ...) if required_link else (f"{name} | None", None)
    node = create_model(name, label=(str, ...), children=(list[name], []), next=link)  # type: ignore[valid-type]
    node.model_rebuild()
    return node


def _has_outside_anthropic(schema: Mapping[str, Any]) -> bool:
    """A structure Anthropic's dialect has no closed form for: a map, a tuple, recursion."""
    for _, node in _nodes(schema):
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping) or extra is True or "prefixItems" in node:
            return True
        if node.get("type") == "object" and not node.get("properties"):
            return True
    return _cycle(schema.get("$defs") or {}, required_only=False)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(models())
def test_anthropic_transform_meets_the_documented_rules(model: type[BaseModel]) -> None:
    """For generated models, Anthropic's transform gives a schema its documented rules accept, or
    refuses one only for a documented cause."""
    schema = model.model_json_schema()
    try:
        sent = anthropic_schema(schema)
    except AnthropicSchemaUnsupported:
        assert _has_outside_anthropic(schema), json.dumps(schema)  # refused only for cause
        return
    assert anthropic_violations(sent) == [], json.dumps(sent)


@SETTINGS
@given(models())
def test_gemini_transform_meets_the_documented_rules(model: type[BaseModel]) -> None:
    """For generated models, Gemini's transform gives a schema its documented rules accept, never
    refusing pydantic's schema."""
    schema = model.model_json_schema()
    try:
        sent = gemini_schema(schema)
    except GeminiSchemaUnsupported:
        pytest.fail(f"pydantic's schema refused: {json.dumps(schema)}")
    assert gemini_violations(sent) == [], json.dumps(sent)


# --- a dropped constraint is still checked locally ---------------------------------------------

# (field type, constraint, a value breaking only that constraint)
_BREACHES: list[tuple[Any, dict[str, Any], Any]] = [
    (str, {"max_length": 3}, "abcd"),
    (str, {"min_length": 3}, "ab"),
    (str, {"pattern": "^[a-z]+$"}, "ABC"),
    (int, {"ge": 10}, 9),
    (int, {"gt": 10}, 10),
    (int, {"le": 10}, 11),
    (int, {"lt": 10}, 10),
    (int, {"multiple_of": 5}, 7),
    (float, {"ge": 0.5}, 0.25),
    (list[int], {"min_length": 3}, [1, 2]),
    (list[int], {"max_length": 2}, [1, 2, 3]),
    (Literal[True], {}, False),
]


def _conforms(value: Any, schema: Mapping[str, Any]) -> bool:
    return bool(validators.validator_for(schema)(schema).is_valid(value))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_BREACHES), models(depth=1), st.data())
def test_a_value_breaking_only_a_dropped_constraint_is_never_healed(
    breach: tuple[Any, dict[str, Any], Any], rest: type[BaseModel], data: st.DataObject
) -> None:
    """A value breaking only a constraint a dialect dropped is never `Healed`: the constraint is
    still checked locally."""
    kind, constraint, bad = breach
    probe = Annotated[kind, Field(**constraint)] if constraint else kind
    model = create_model(f"P{next(_counter)}", probe=(probe, ...), rest=(rest, ...))
    instance = data.draw(from_schema(rest))
    value = {"probe": bad, "rest": instance.model_dump(mode="json")}
    schema = model.model_json_schema()
    dropped = 0
    for transform in (anthropic_schema, gemini_schema):
        try:
            sent = transform(schema)
        except (AnthropicSchemaUnsupported, GeminiSchemaUnsupported):
            continue
        dropped += _conforms(value, sent)  # the provider would let it through
    outcome = healjson.validate(json.dumps(value), model)
    assert not outcome.ok, (constraint, value)
    if constraint.get("max_length") == 3 or "pattern" in constraint:
        assert dropped  # both dialects drop string lengths and Anthropic patterns
