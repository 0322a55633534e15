"""The `fast` extra: `jsonschema-rs` says "valid" on the hot path of a JSON Schema target, and it
means what `jsonschema` means (same draft, `format` an annotation, local references, Python's
regex and float arithmetic for `pattern` / `multipleOf`, big integers); without it (simulated:
the import fails) every outcome is the same."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import healjson
from healjson import Degraded, Healed
from healjson._core.target.json_schema import SchemaAdapter, json_schema_of
from healjson._core.target.target import clear_targets

pytest.importorskip("jsonschema_rs")

NAMES = ("a", "b", "c")
PATTERNS = ("^a$", "^[a-z]+$", r"\d", "^.{2}$", "b|c")
DRAFTS = (
    None,
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-06/schema#",
)
INTS = st.sampled_from([-1, 0, 1, 2, 3, 5, 10, 2**63, 10**30, -(10**30)])
FLOATS = st.sampled_from([0.1, 0.3, 0.5, 1.0, 1.5, 2.5, 1e300, -0.0])
STRINGS = st.sampled_from(["", "a", "a\n", "ab", "abc", "5", "\u0665", "B", "bc", "ä"])


@contextlib.contextmanager
def without_fast_path() -> Iterator[None]:
    """`jsonschema-rs` not installed: its import fails (and no target built with it is reused)."""
    clear_targets()
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, "jsonschema_rs", None)
        try:
            yield
        finally:
            clear_targets()


def some_of(
    base: dict[str, Any], keywords: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    """`base` with at most two of `keywords` (more would mostly contradict each other)."""
    chosen = st.lists(st.sampled_from(sorted(keywords)), max_size=2, unique=True)
    return chosen.flatmap(
        lambda keys: st.fixed_dictionaries(
            {**{k: st.just(v) for k, v in base.items()}, **{key: keywords[key] for key in keys}}
        )
    )


BOUND = st.one_of(INTS, FLOATS)
NUMBER_SCHEMAS = st.sampled_from(["integer", "number"]).flatmap(
    lambda kind: some_of(
        {"type": kind},
        {
            "minimum": BOUND,
            "maximum": BOUND,
            "exclusiveMinimum": BOUND,
            "exclusiveMaximum": BOUND,
            "multipleOf": st.sampled_from([2, 3, 0.1, 0.5, 1.5]),
        },
    )
)
STRING_SCHEMAS = some_of(
    {"type": "string"},
    {
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "pattern": st.sampled_from(PATTERNS),
        "format": st.sampled_from(["email", "date", "uuid"]),
    },
)


LEAVES = st.one_of(
    NUMBER_SCHEMAS,
    STRING_SCHEMAS,
    st.sampled_from([{"type": "boolean"}, {"type": "null"}, {"$ref": "#/$defs/D"}, {}]),
    st.fixed_dictionaries(
        {"enum": st.lists(st.one_of(INTS, FLOATS, STRINGS, st.booleans()), min_size=1, max_size=3)}
    ),
    st.fixed_dictionaries({"const": st.one_of(INTS, STRINGS, st.booleans(), st.none())}),
)


def composite(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(NAMES)
    objects = st.fixed_dictionaries(
        {
            "type": st.just("object"),
            "properties": st.dictionaries(names, children, max_size=3),
        },
        optional={
            "required": st.lists(names, max_size=2, unique=True),
            "additionalProperties": st.one_of(st.booleans(), children),
            "minProperties": st.integers(0, 2),
        },
    )
    arrays = st.fixed_dictionaries(
        {"type": st.just("array"), "items": children},
        optional={
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 3),
            "uniqueItems": st.booleans(),
            "prefixItems": st.lists(children, min_size=1, max_size=2),
        },
    )
    branches = st.lists(children, min_size=1, max_size=3)
    return st.one_of(
        objects,
        arrays,
        st.builds(lambda b: {"anyOf": b}, branches),
        st.builds(lambda b: {"oneOf": b}, branches),
        st.builds(lambda b: {"allOf": b}, branches),
    )


SCHEMAS = st.recursive(LEAVES, composite, max_leaves=6)
# built once: a strategy built inside `root_schemas` would be built and validated on every draw
DEFINITIONS = st.recursive(LEAVES.filter(lambda s: "$ref" not in s), composite, max_leaves=3)


@st.composite
def root_schemas(draw: st.DrawFn) -> dict[str, Any]:
    definition = draw(DEFINITIONS)
    schema: dict[str, Any] = {**draw(SCHEMAS), "$defs": {"D": definition}}
    draft = draw(st.sampled_from(DRAFTS))
    if draft is not None:
        schema["$schema"] = draft
    return schema


SCALARS = st.one_of(INTS, FLOATS, STRINGS, st.booleans(), st.none())
INSTANCES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from([*NAMES, "z"]), inner, max_size=3),
    ),
    max_leaves=8,
)


def near(root: dict[str, Any], schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values near `schema`'s: its own keys, types, enum members, numbers about its bounds,
    strings about its patterns and lengths (valid about as often as not), now and then any."""
    if depth > 4 or not isinstance(schema, dict):
        return INSTANCES
    if "$ref" in schema:
        return near(root, root["$defs"]["D"], depth + 1)
    options: list[st.SearchStrategy[Any]] = [SCALARS]
    for key in ("anyOf", "oneOf", "allOf"):
        options.extend(near(root, branch, depth + 1) for branch in schema.get(key, ()))
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    if "const" in schema:
        options.append(st.just(schema["const"]))
    kind = schema.get("type")
    if kind in ("integer", "number"):
        options += [INTS, FLOATS]
        for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if key in schema:
                options.append(st.sampled_from([0, 1, -1, 0.5]).map(lambda d, b=schema[key]: b + d))
        if "multipleOf" in schema:  # multiples, as computed and as written
            step = schema["multipleOf"]
            options += [st.integers(-3, 12).map(lambda k: k * step)] * 2
            options += [st.integers(-3, 12).map(lambda k: round(k * step, 6))] * 2
    elif kind == "string":
        options += [STRINGS, STRINGS]
        if "pattern" in schema:  # matches, and matches with a final newline
            matching = st.from_regex(schema["pattern"])
            options += [matching, matching.map(lambda text: text + "\n")] * 2
    elif kind == "object":
        props = schema["properties"]
        fields = {name: near(root, sub, depth + 1) for name, sub in props.items()}
        extra = near(root, schema.get("additionalProperties"), depth + 1)
        options += [
            st.fixed_dictionaries(
                {},
                optional={**fields, "z": extra, **{n: INSTANCES for n in NAMES if n not in props}},
            )
        ] * 3
    elif kind == "array":
        item = near(root, schema["items"], depth + 1)
        options += [st.lists(item, max_size=4)] * 3
    return st.one_of(options)


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """A schema and values near it."""
    schema = draw(root_schemas())
    return schema, draw(st.lists(near(schema, schema), min_size=1, max_size=4))


def fast_validator(schema: dict[str, Any]) -> Any:
    adapter = SchemaAdapter(json_schema_of(schema))
    assert adapter._fast is not None, schema  # the schemas above are all in its reach
    return adapter


@settings(max_examples=125, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_jsonschema_rs_and_jsonschema_agree_on_is_valid(
    case: tuple[dict[str, Any], list[Any]],
) -> None:
    """For generated schemas and instances, jsonschema-rs's fast check and jsonschema agree on
    whether each instance is valid."""
    schema, instances = case
    adapter = fast_validator(schema)
    for instance in instances:
        assert adapter._fast(instance) == adapter._validator.is_valid(instance), (schema, instance)


def summary(outcome: Any) -> Any:
    if isinstance(outcome, Healed):
        return ("healed", outcome.value, outcome.flags, outcome.changed_fields)
    assert isinstance(outcome, Degraded)
    return ("degraded", outcome.reason, outcome.errors, outcome.partial)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_validate_has_the_same_outcome_without_the_fast_path(
    case: tuple[dict[str, Any], list[Any]],
) -> None:
    """`validate` reaches the same outcome on a generated schema whether the fast path is there
    or not."""
    schema, instances = case
    text = json.dumps(instances[0])
    clear_targets()
    fast = summary(healjson.validate(text, schema))
    with without_fast_path():
        assert SchemaAdapter(json_schema_of(schema))._fast is None
        slow = summary(healjson.validate(text, schema))
    assert fast == slow


@pytest.mark.parametrize(
    ("schema", "text", "valid"),
    [
        # Python's `re.search`: `$` matches before a final newline (Rust's regex does not)
        ({"type": "string", "pattern": "^a$"}, '"a\\n"', True),
        # jsonschema's float arithmetic: 0.3 / 0.1 is not a whole number
        ({"type": "number", "multipleOf": 0.1}, "0.3", False),
        # `format` is an annotation (jsonschema-rs asserts it by default on some drafts)
        ({"type": "string", "format": "email"}, '"not an email"', True),
        # big integers compare exactly
        ({"type": "integer", "maximum": 10**20}, str(10**20 + 1), False),
        ({"type": "integer", "minimum": 10**20}, str(10**30), True),
    ],
)
def test_the_fast_path_means_what_jsonschema_means(
    schema: dict[str, Any], text: str, valid: bool
) -> None:
    """Where jsonschema-rs and jsonschema could differ (a final newline before `$`, float
    `multipleOf`, `format`, big integers) the fast path answers as jsonschema does."""
    adapter = fast_validator(schema)
    assert adapter._fast(json.loads(text)) is valid
    assert adapter._validator.is_valid(json.loads(text)) is valid
    assert isinstance(healjson.validate(text, schema), Healed) is valid


@pytest.mark.parametrize(
    "schema",
    [
        # draft 4: `integer` refuses 1.0 in jsonschema, accepts it in jsonschema-rs
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
        # regex-keyed properties: Rust's regex would pick the subschemas
        {"type": "object", "patternProperties": {"^a$": {"type": "integer"}}},
        {"$id": "https://example.com/s", "type": "object"},
        # references that come back without going into the value: jsonschema cannot check
        # them (the value "could not be checked"), jsonschema-rs calls every value valid
        {"$ref": "#"},
        {"anyOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {"allOf": [{"$ref": "#"}]}}},
        {
            "properties": {"p": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"not": {"$ref": "#/$defs/a"}}},
        },
    ],
)
def test_schemas_out_of_its_reach_keep_jsonschema_alone(schema: dict[str, Any]) -> None:
    """Schemas whose meaning jsonschema-rs would change (draft 4 integers, `patternProperties`,
    `$id`, references that never enter the value) get no fast path."""
    assert SchemaAdapter(json_schema_of(schema))._fast is None


def test_draft_4_integer_still_refuses_a_float() -> None:
    """Under draft 4, an `integer` schema refuses `1.0` with "must be an integer"."""
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    outcome = healjson.validate("1.0", schema)
    assert isinstance(outcome, Degraded)
    assert outcome.errors[0].constraint == "must be an integer"


def test_a_schema_jsonschema_rs_cannot_compile_falls_back_to_jsonschema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A schema jsonschema-rs refuses to compile is validated by jsonschema alone, with the same
    verdicts."""
    import jsonschema_rs

    def refuse(*_: Any, **__: Any) -> Any:
        raise jsonschema_rs.ValidationError("x", "x", [], [], [], None, None)  # type: ignore[arg-type]

    monkeypatch.setattr(jsonschema_rs, "Draft202012Validator", refuse)
    schema = {"type": "string", "maxLength": 2}
    assert SchemaAdapter(json_schema_of(schema))._fast is None
    clear_targets()  # the target built now, with the refusing class
    assert isinstance(healjson.validate('"ab"', schema), Healed)
    assert isinstance(healjson.validate('"abc"', schema), Degraded)
    clear_targets()


def test_an_exception_in_the_fast_path_asks_jsonschema() -> None:
    """When the fast check raises, jsonschema decides, and an invalid value is still refused."""
    adapter = fast_validator({"type": "string", "maxLength": 3})
    assert adapter.validate_python("ab") == "ab"
    adapter._fast = lambda _value: 1 / 0
    assert adapter.validate_python("ab") == "ab"
    with pytest.raises(ValueError, match="at most 3"):
        adapter.validate_python("abcd")


def test_a_schema_dict_changed_in_place_is_a_new_target() -> None:
    """A schema dict changed in place between calls is validated as it now reads, each time."""
    schema: dict[str, Any] = {"type": "integer", "maximum": 5}
    assert isinstance(healjson.validate("7", schema), Degraded)
    schema["maximum"] = 10
    assert healed_value(healjson.validate("7", schema)) == 7
    schema["maximum"] = 5
    assert isinstance(healjson.validate("7", schema), Degraded)


def test_schemas_that_render_alike_to_python_stay_apart() -> None:
    # 1 == 1.0 == True in Python; not in JSON Schema's `const` (a boolean is not a number)
    """Schemas equal in Python but not in JSON Schema (`const` 1, 1.0 and `true`) stay separate
    targets, and a NaN `const` is refused."""
    assert healed_value(healjson.validate("1", {"const": 1})) == 1
    assert isinstance(healjson.validate("1", {"const": True}), Degraded)
    assert healed_value(healjson.validate("1", {"const": 1.0})) == 1
    # NaN is no JSON: refused however often its neighbours were used
    healjson.validate("null", {"const": None})
    with pytest.raises(TypeError, match="must be JSON data"):
        healjson.validate("null", {"const": float("nan")})


def healed_value(outcome: Any) -> Any:
    assert isinstance(outcome, Healed), outcome
    return outcome.value


@pytest.mark.parametrize(
    "schema",
    [
        # keyword names as property names, in `enum` data, in `$defs` names: not keywords
        {"type": "object", "properties": {"id": {"type": "string"}, "$id": {}, "dependencies": {}}},
        {"enum": [{"patternProperties": 1}, "$dynamicRef"]},
        {"$ref": "#/$defs/unevaluatedItems", "$defs": {"unevaluatedItems": {"type": "string"}}},
        # a recursive schema that goes into the value each time round
        {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}},
        {
            "$ref": "#/$defs/t",
            "$defs": {"t": {"anyOf": [{"type": "null"}, {"items": {"$ref": "#"}}]}},
        },
    ],
)
def test_keyword_names_that_are_not_keywords_keep_the_fast_path(schema: dict[str, Any]) -> None:
    """Keyword names used as property names, enum data or `$defs` names, and recursion through
    the value, keep the fast path."""
    assert SchemaAdapter(json_schema_of(schema))._fast is not None


def test_the_same_schema_dict_is_canonicalised_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validating against the same schema dict three times canonicalises it once."""
    from healjson._core.target import target

    clear_targets()
    made: list[object] = []
    real = target.json_schema_of
    monkeypatch.setattr(target, "json_schema_of", lambda s: made.append(s) or real(s))
    schema = {"type": "array", "items": {"type": "integer"}, "title": "Once"}
    for _ in range(3):
        assert healed_value(healjson.validate("[1, 2]", schema)) == [1, 2]
    assert made == [schema]
