"""The OpenAI strict-schema transform: concrete shapes, a keyword table, generated models."""

from __future__ import annotations

import copy
import enum
import itertools
import re
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal, NamedTuple, Optional, Union

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import AnyUrl, BaseModel, ConfigDict, Field, TypeAdapter, create_model

from healjson._core.target.target import target_for
from healjson._providers.openai_strict_schema import (
    StrictSchema,
    StrictSchemaUnsupported,
    _Converter,
)
from healjson.adapters import strict_json_schema

# What OpenAI strict mode accepts ("Supported schemas" in the structured-outputs guide), written
# out here independently of the module under test.
ALLOWED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "description",
    "title",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
}
FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


# --- helpers: walk and check a strict schema -----------------------------------------------------


def _nodes(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every schema node (root, $defs, properties, items, anyOf branches) with its path."""
    out: list[tuple[str, dict[str, Any]]] = []
    stack: list[tuple[str, Any]] = [("#", schema)]
    stack.extend((f"#/$defs/{k}", v) for k, v in schema.get("$defs", {}).items())
    while stack:
        path, node = stack.pop()
        assert isinstance(node, dict), path
        out.append((path, node))
        stack.extend((f"{path}/properties/{k}", v) for k, v in node.get("properties", {}).items())
        if "items" in node:
            stack.append((f"{path}/items", node["items"]))
        stack.extend((f"{path}/anyOf/{i}", v) for i, v in enumerate(node.get("anyOf", [])))
    return out


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/$defs/"), ref
    return root["$defs"][ref.removeprefix("#/$defs/")]  # type: ignore[no-any-return]


def assert_strict(schema: dict[str, Any]) -> None:
    """Fail unless `schema` stays inside OpenAI's strict subset."""
    assert "object" == schema["type"]
    assert "anyOf" not in schema
    for path, node in _nodes(schema):
        keys = set(node) - ({"$defs"} if path == "#" else set())
        assert set() == keys - ALLOWED, path
        if "$ref" in node:
            assert {"$ref"} == set(node), path  # a $ref may not carry siblings
            _resolve(schema, node["$ref"])
        if "format" in node:
            assert node["format"] in FORMATS, path
        if node.get("type") == "object" or "properties" in node:
            assert False is node["additionalProperties"], path
            assert list(node["properties"]) == node["required"], path
        assert any(k in node for k in ("type", "anyOf", "$ref", "enum", "const")), path


def _is(kind: str, value: Any) -> bool:
    checks: dict[str, bool] = {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "null": value is None,
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
    }
    return checks[kind]


def conforms(node: dict[str, Any], value: Any, root: dict[str, Any]) -> bool:
    """A small validator for the strict subset (enough for the shapes produced here)."""
    if "$ref" in node:
        return conforms(_resolve(root, node["$ref"]), value, root)
    kinds = node.get("type")
    checks = [
        "anyOf" not in node or any(conforms(b, value, root) for b in node["anyOf"]),
        "enum" not in node or value in node["enum"],
        "const" not in node or value == node["const"],
        kinds is None or any(_is(k, value) for k in ([kinds] if isinstance(kinds, str) else kinds)),
    ]
    if isinstance(value, dict) and "properties" in node:
        props = node["properties"]
        checks.append(set(props) == set(value))
        checks.extend(conforms(props[k], v, root) for k, v in value.items() if k in props)
    if isinstance(value, list) and "items" in node:
        checks.extend(conforms(node["items"], v, root) for v in value)
        checks.append(len(value) >= node.get("minItems", 0))
        checks.append(len(value) <= node.get("maxItems", len(value)))
    if _is("number", value):
        checks.append(value >= node.get("minimum", value))
        checks.append(value <= node.get("maximum", value))
    if isinstance(value, str) and "pattern" in node:
        checks.append(re.search(node["pattern"], value) is not None)
    return all(checks)


def prop(schema: dict[str, Any], *names: str) -> dict[str, Any]:
    """The property schema at a path of names (resolving $refs on the way)."""
    node = schema
    for name in names:
        if "$ref" in node:
            node = _resolve(schema, node["$ref"])
        node = node["properties"][name]
    return node


# --- concrete shapes ------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    home: Address
    work: Address | None = None
    nickname: Optional[str] = None  # noqa: UP045 - spelled the old way on purpose
    retries: int = 3
    color: Color = Color.RED
    mood: Literal["happy", "sad"]
    friends: list[Address] = []


class Tree(BaseModel):
    value: int
    children: list[Tree] = []
    parent: Tree | None = Field(default=None, description="The parent node.")


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pets(BaseModel):
    tagged: Cat | Dog = Field(discriminator="kind")
    plain: Union[Cat, Dog]  # noqa: UP007


class Constrained(BaseModel):
    code: str = Field(min_length=5, max_length=8, description="A code")
    short: str = Field(max_length=4)
    pin: str = Field(min_length=4, max_length=4)
    tags: set[int]
    size: int = Field(default=3, ge=1, le=10)
    pair: tuple[int, str]
    ident: uuid.UUID
    at: datetime
    link: AnyUrl
    hint: str = Field(examples=["abc"])


class WithMap(BaseModel):
    scores: dict[str, int]


class WithAny(BaseModel):
    blob: Any


class Extra(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


def test_nested_models_are_closed_objects_with_every_property_required() -> None:
    """Every object node, nested ones included, is closed and requires all its properties."""
    strict = strict_json_schema(Person)
    assert_strict(strict.schema)
    assert {"$ref": "#/$defs/Address"} == prop(strict.schema, "home")
    assert {"street", "city"} == set(_resolve(strict.schema, "#/$defs/Address")["required"])
    assert list(Person.model_fields) == strict.schema["required"]
    assert None is strict.envelope


def test_optional_fields_stay_nullable_and_become_required() -> None:
    """`X | None = None` fields are required in strict mode and keep their null branch."""
    schema = strict_json_schema(Person).schema
    assert "nickname" in schema["required"]
    assert [{"type": "string"}, {"type": "null"}] == prop(schema, "nickname")["anyOf"]
    assert {"$ref": "#/$defs/Address"} in prop(schema, "work")["anyOf"]
    assert {"type": "null"} in prop(schema, "work")["anyOf"]
    assert "Default: null." in prop(schema, "nickname")["description"]


def test_non_nullable_defaults_are_required_without_null_and_described() -> None:
    """A defaulted non-nullable field is not widened to null; its default moves to the text."""
    node = prop(strict_json_schema(Person).schema, "retries")
    assert "integer" == node["type"]
    assert "Default: 3." == node["description"]


def test_enum_with_default_is_inlined_with_its_values() -> None:
    """An enum field carrying a default is inlined (a $ref cannot have siblings)."""
    node = prop(strict_json_schema(Person).schema, "color")
    assert ["red", "blue"] == node["enum"]
    assert "string" == node["type"]
    assert 'Default: "red".' == node["description"]


def test_literal_field_keeps_its_enum() -> None:
    """A Literal field keeps its allowed values."""
    assert ["happy", "sad"] == prop(strict_json_schema(Person).schema, "mood")["enum"]


def test_list_of_models_points_at_a_strict_definition() -> None:
    """`list[Model]` items reference a closed definition."""
    schema = strict_json_schema(Person).schema
    node = prop(schema, "friends")
    assert "array" == node["type"]
    assert {"$ref": "#/$defs/Address"} == node["items"]
    assert "Default: []." == node["description"]


def test_unions_of_models_use_any_of_and_describe_the_discriminator() -> None:
    """`oneOf` (discriminated unions) becomes `anyOf`; the discriminator is named in words."""
    schema = strict_json_schema(Pets).schema
    assert_strict(schema)
    tagged = prop(schema, "tagged")
    assert [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}] == tagged["anyOf"]
    assert "The `kind` field selects the variant." == tagged["description"]
    assert [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}] == prop(schema, "plain")["anyOf"]
    assert False is _resolve(schema, "#/$defs/Cat")["additionalProperties"]


def test_recursive_model_keeps_its_definition_and_an_object_root() -> None:
    """A recursive model is inlined at the root and still refers to itself through $defs."""
    strict = strict_json_schema(Tree)
    schema = strict.schema
    assert_strict(schema)
    assert None is strict.envelope
    assert ["value", "children", "parent"] == schema["required"]
    assert {"$ref": "#/$defs/Tree"} == prop(schema, "children")["items"]
    assert ["Tree"] == list(schema["$defs"])
    value = {"value": 1, "children": [{"value": 2, "children": [], "parent": None}], "parent": None}
    assert conforms(schema, value, schema)


def test_described_reference_to_a_recursive_model_wraps_it_in_any_of() -> None:
    """A described $ref to a recursive definition becomes a one-branch anyOf with the text."""

    class Node(BaseModel):
        next: Node = Field(description="The next node.")
        label: str

    node = prop(strict_json_schema(Node).schema, "next")
    assert {"anyOf": [{"$ref": "#/$defs/Node"}], "description": "The next node."} == node


def test_described_recursive_root_is_still_an_object() -> None:
    """An annotated recursive root is inlined rather than wrapped in the envelope."""
    strict = strict_json_schema(Annotated[Tree, Field(description="A tree.")])
    assert_strict(strict.schema)
    assert None is strict.envelope
    assert "A tree." == strict.schema["description"]
    assert ["Tree"] == list(strict.schema["$defs"])


def test_described_reference_to_a_plain_model_is_inlined() -> None:
    """A described $ref to a non-recursive model is replaced by the model's (strict) body."""

    class Order(BaseModel):
        ship_to: Address = Field(description="Where to ship.")

    schema = strict_json_schema(Order).schema
    assert_strict(schema)
    node = prop(schema, "ship_to")
    assert "Where to ship." == node["description"]
    assert ["street", "city"] == node["required"]
    assert "$defs" not in schema  # the only use was inlined, so the definition is pruned


def test_removed_constraints_are_moved_into_descriptions() -> None:
    """min/max length, unique items, defaults, examples and formats survive as text."""
    schema = strict_json_schema(Constrained).schema
    assert_strict(schema)
    code = prop(schema, "code")
    assert "A code. Must have 5 to 8 characters." == code["description"]
    assert "minLength" not in code
    assert "Must have at most 4 characters." == prop(schema, "short")["description"]
    assert "Must have exactly 4 characters." == prop(schema, "pin")["description"]
    assert "Items must be unique." == prop(schema, "tags")["description"]
    size = prop(schema, "size")
    assert (1, 10) == (size["minimum"], size["maximum"])
    assert "Default: 3." == size["description"]
    assert "uuid" == prop(schema, "ident")["format"]
    assert "date-time" == prop(schema, "at")["format"]
    link = prop(schema, "link")
    assert "format" not in link
    assert "Format: uri. Must have at least 1 character." == link["description"]
    assert 'Example: "abc".' == prop(schema, "hint")["description"]


def test_tuples_become_arrays_of_any_of_with_positions_described() -> None:
    """`tuple[int, str]` becomes an array of `anyOf` with a fixed length and the order in words."""
    pair = prop(strict_json_schema(Constrained).schema, "pair")
    assert {"anyOf": [{"type": "integer"}, {"type": "string"}]} == pair["items"]
    assert (2, 2) == (pair["minItems"], pair["maxItems"])
    assert "A tuple of 2 items, in this order: 1. integer; 2. string." == pair["description"]


@pytest.mark.parametrize(
    ("target", "value"),
    [
        (list[Address], [{"street": "Main", "city": "X"}]),
        (Literal["a", "b"], "a"),
        (Color, "blue"),
        (int, 4),
        (Cat | Dog, {"kind": "dog", "good": True}),
    ],
)
def test_non_object_roots_get_the_value_envelope(target: Any, value: Any) -> None:
    """A target that is not an object is wrapped as `{"value": ...}` and unwraps again."""
    strict = strict_json_schema(target)
    assert_strict(strict.schema)
    assert "value" == strict.envelope
    assert ["value"] == strict.schema["required"]
    assert conforms(strict.schema, {"value": value}, strict.schema)
    assert value == strict.unwrap({"value": value})


def test_free_form_maps_are_unsupported() -> None:
    """A `dict[str, X]` field or root raises `StrictSchemaUnsupported`, a `ValueError`."""
    with pytest.raises(StrictSchemaUnsupported, match=r"properties/scores: a free-form map"):
        strict_json_schema(WithMap)
    with pytest.raises(ValueError, match="free-form map"):
        strict_json_schema(dict[str, int])


def test_untyped_values_are_unsupported() -> None:
    """An `Any` field cannot be constrained, so the transform refuses it."""
    with pytest.raises(StrictSchemaUnsupported, match="untyped"):
        strict_json_schema(WithAny)


def test_unsupported_targets_raise_a_fresh_error_each_time() -> None:
    """The cached failure is re-raised as a new exception on every call."""
    with pytest.raises(StrictSchemaUnsupported) as first_info:
        strict_json_schema(WithMap)
    first = first_info.value
    with pytest.raises(StrictSchemaUnsupported) as second_info:
        strict_json_schema(WithMap)
    second = second_info.value
    assert first is not second
    assert first.path == second.path


def test_extra_allow_is_closed() -> None:
    """A model that allows extra keys is still closed in strict mode (extras are optional)."""
    schema = strict_json_schema(Extra).schema
    assert False is schema["additionalProperties"]


def test_response_format_and_name() -> None:
    """`response_format` is the documented json_schema shape with a valid name."""
    strict = strict_json_schema(Person)
    fmt = strict.response_format()
    assert {"type": "json_schema", "json_schema": {"name": "Person", "schema": strict.schema,
            "strict": True}} == fmt  # fmt: skip
    assert "list_Address" == strict_json_schema(list[Address]).name
    assert "Literal_a_b" == strict_json_schema(Literal["a", "b"]).name
    assert "tuple_int" == strict_json_schema(tuple[int, ...]).name
    assert "Address_or_None" == strict_json_schema(Address | None).name
    assert NAME.match(strict_json_schema(Annotated[list[int], Field(min_length=1)]).name)


def test_results_are_cached_per_type_and_accept_a_target() -> None:
    """The same type (or its `Target`) yields the same cached object."""
    first = strict_json_schema(Person)
    assert first is strict_json_schema(Person)
    assert first is strict_json_schema(target_for(Person))
    assert isinstance(first, StrictSchema)
    assert {"a": 1} == first.unwrap({"a": 1})  # no envelope: the reply is the value


def test_unhashable_targets_are_built_without_the_cache() -> None:
    """A type with unhashable metadata still converts (just uncached)."""
    target = Annotated[int, {"unhashable": []}]
    first, second = strict_json_schema(target), strict_json_schema(target)
    assert first == second
    assert first is not second
    assert {"type": "integer"} == first.schema["properties"]["value"]


def test_pydantic_schema_is_not_mutated() -> None:
    """The transform leaves the cached pydantic schema untouched."""

    class Fresh(BaseModel):
        name: str = Field(min_length=2)
        home: Address = Field(description="Home.")
        pair: tuple[int, str]

    before = copy.deepcopy(target_for(Fresh).json_schema)
    strict_json_schema(Fresh)
    assert before == target_for(Fresh).json_schema


def test_valid_instances_conform_to_the_strict_schema() -> None:
    """A dumped valid instance of a concrete model satisfies its strict schema."""
    person = Person(name="Ana", home=Address(street="Main", city="X"), mood="sad")
    schema = strict_json_schema(Person).schema
    assert conforms(schema, person.model_dump(mode="json"), schema)


# --- keyword table (hand-written schemas through the converter) ---------------------------------

INT = {"type": "integer"}


def convert(schema: dict[str, Any]) -> dict[str, Any]:
    """Convert a hand-written root schema (no envelope, no $defs pruning)."""
    return _Converter(copy.deepcopy(schema)).root()


@pytest.mark.parametrize(
    ("expected", "schema"),
    [
        ({"type": "integer", "description": "d"}, {"allOf": [INT], "description": "d"}),
        ({"enum": [1, "a"], "type": ["integer", "string"]}, {"enum": [1, "a"]}),
        ({"enum": [1, 2.5], "type": "number"}, {"enum": [1, 2.5]}),
        ({"const": None, "type": "null"}, {"const": None}),
        ({"type": "string", "format": "email"}, {"type": "string", "format": "email"}),
        (INT, {"type": "integer", "$comment": "for humans", "$schema": "x"}),
        ({**INT, "description": "Examples: 1, 2."}, {**INT, "examples": [1, 2]}),
        ({**INT, "description": "Deprecated."}, {**INT, "deprecated": True}),
        ({**INT, "description": "readOnly: true."}, {**INT, "readOnly": True}),
        ({**INT, "description": 'Must not match {"const": 0}.'}, {**INT, "not": {"const": 0}}),
        (
            {**INT, "description": 'If it matches {"minimum": 0}, it must match {"maximum": 9}; '
             'otherwise it must match {"minimum": -9}.'},
            {**INT, "if": {"minimum": 0}, "then": {"maximum": 9}, "else": {"minimum": -9}},
        ),
        (
            {"type": "array", "items": INT,
             "description": 'Must contain at least 2 and at most 3 item(s) matching {"const": 1}.'},
            {"type": "array", "items": INT, "contains": {"const": 1}, "minContains": 2,
             "maxContains": 3},
        ),
        (
            {"type": "object", "properties": {"a": INT}, "required": ["a"],
             "additionalProperties": False, "description": "Must have at least 1 property. "
             'Must have at most 2 properties. Keys must match {"pattern": "^a"}.'},
            {"type": "object", "properties": {"a": INT}, "minProperties": 1,
             "maxProperties": 2, "propertyNames": {"pattern": "^a"}},
        ),
        (
            {"type": "array", "items": {"anyOf": [INT, {"type": "string"}]}, "description":
             "A tuple of 1 item, in this order: 1. integer. Any further items: string."},
            {"type": "array", "prefixItems": [INT], "items": {"type": "string"}},
        ),
        (
            {"type": "array", "items": INT, "minItems": 2, "maxItems": 2,
             "description": "A tuple of 2 items, in this order: 1. integer; 2. integer."},
            {"type": "array", "prefixItems": [INT, INT], "minItems": 2, "maxItems": 2},
        ),
        (
            {"type": "array", "items": INT, "description": "A tuple of 3 items, in this order: "
             '1. X; 2. array of one of "a"; 3. "c" or integer or null.'},
            {"type": "array", "prefixItems": [
                {"$ref": "#/$defs/X"}, {"type": "array", "items": {"enum": ["a"]}},
                {"anyOf": [{"const": "c"}, {"type": ["integer", "null"]}]}],
             "$defs": {"X": INT}},
        ),
    ],
)  # fmt: skip
def test_keywords_are_kept_or_described(expected: dict[str, Any], schema: dict[str, Any]) -> None:
    """Each keyword is kept when strict mode supports it, otherwise rewritten into the text."""
    if "$defs" in schema:  # only the tuple labels matter here
        assert expected["description"] == convert(schema)["description"]
    else:
        assert expected == convert(schema)


@pytest.mark.parametrize(
    ("message", "schema"),
    [
        ("unsupported \\$ref", {"$ref": "http://example.com/x"}),
        ("does not resolve", {"$ref": "#/$defs/Nope"}),
        ("boolean or non-object schema", {"type": "object", "properties": {"a": True}}),
        ("both oneOf and anyOf", {"oneOf": [INT], "anyOf": [INT]}),
        ("several types", {"type": ["object", "null"], "properties": {}}),
        ("non-empty list", {"anyOf": []}),
        ("properties must be an object", {"type": "object", "properties": [1]}),
        ("needs an item schema", {"type": "array"}),
        ("more than one branch", {"allOf": [INT, {"minimum": 1}]}),
        ("both set \\['type'\\]", {"allOf": [INT], "type": "string"}),
        ("not a JSON scalar", {"enum": [{"a": 1}]}),
        ("constraining siblings", {"$ref": "#/$defs/X", "type": "object", "$defs": {"X": INT}}),
        (
            "free-form map",
            {"type": "object", "patternProperties": {"^a": INT}, "additionalProperties": False},
        ),
    ],
)
def test_inexpressible_schemas_raise(message: str, schema: dict[str, Any]) -> None:
    """Shapes strict mode cannot express raise `StrictSchemaUnsupported` naming the problem."""
    with pytest.raises(StrictSchemaUnsupported, match=message):
        convert(schema)


def test_targets_pydantic_rejects_are_not_reported_as_unsupported() -> None:
    """A non-type's error from `target_for` propagates instead of becoming a fallback signal."""
    with pytest.raises((TypeError, RuntimeError)) as info:
        strict_json_schema(object())
    assert not isinstance(info.value, StrictSchemaUnsupported)


# --- property test over generated models ----------------------------------------------------------

_NO_DEFAULT = object()
_MODEL_IDS = itertools.count()


class Spec(NamedTuple):
    """A generated type with an input value valid for it and a default (or `_NO_DEFAULT`)."""

    annotation: Any
    sample: Any
    default: Any = _NO_DEFAULT


def _bounds(lo: int, hi: int) -> st.SearchStrategy[tuple[int, int]]:
    return st.tuples(st.integers(lo, hi), st.integers(lo, hi)).map(lambda b: (min(b), max(b)))


_LEAVES: st.SearchStrategy[Spec] = st.one_of(
    st.just(Spec(int, 3, 7)),
    st.just(Spec(str, "s", "d")),
    st.just(Spec(float, 0.5, 1.5)),
    st.just(Spec(bool, True, False)),
    st.just(Spec(Color, "red", Color.BLUE)),
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True).map(
        lambda vs: Spec(Literal[tuple(vs)], vs[0], vs[-1])
    ),
    _bounds(0, 6).map(
        lambda b: Spec(Annotated[str, Field(min_length=b[0], max_length=b[1])], "x" * b[0])
    ),
    _bounds(-50, 50).map(lambda b: Spec(Annotated[int, Field(ge=b[0], le=b[1])], b[0], b[1])),
)


def _specs(depth: int) -> st.SearchStrategy[Spec]:
    options = [_LEAVES]
    if depth < 2:
        options.append(_models(depth + 1))
    base = st.one_of(options)
    return st.one_of(
        base,
        base.map(lambda s: Spec(Optional[s.annotation], s.sample, None)),  # noqa: UP045
        base.map(lambda s: Spec(list[s.annotation], [s.sample, s.sample])),
    )


def _make_model(fields: list[tuple[Spec, bool, bool]]) -> Spec:
    definitions: dict[str, Any] = {}
    sample: dict[str, Any] = {}
    for i, (spec, use_default, described) in enumerate(fields):
        info: dict[str, Any] = {"description": f"Field {i}."} if described else {}
        if use_default and spec.default is not _NO_DEFAULT:
            info["default"] = spec.default
        definitions[f"f{i}"] = (spec.annotation, Field(**info))
        sample[f"f{i}"] = spec.sample
    model = create_model(f"Gen{next(_MODEL_IDS)}", **definitions)
    return Spec(model, sample)


def _models(depth: int) -> st.SearchStrategy[Spec]:
    field = st.tuples(_specs(depth), st.booleans(), st.booleans())
    return st.lists(field, max_size=4).map(_make_model)


def _check(spec: Spec) -> None:
    strict = strict_json_schema(spec.annotation)
    assert_strict(strict.schema)
    assert NAME.match(strict.name)
    adapter = TypeAdapter(spec.annotation)
    dumped = adapter.dump_python(adapter.validate_python(spec.sample), mode="json")
    value = dumped if strict.envelope is None else {strict.envelope: dumped}
    assert conforms(strict.schema, value, strict.schema)


@given(_models(0))
def test_generated_models_convert_to_strict_schemas_their_instances_satisfy(spec: Spec) -> None:
    """For generated models: strict subset only, and a valid dumped instance conforms."""
    _check(spec)


@given(_specs(1))
def test_generated_non_model_targets_convert_inside_the_envelope(spec: Spec) -> None:
    """For generated non-model types (lists, optionals, leaves): the same, inside the envelope."""
    _check(spec)
