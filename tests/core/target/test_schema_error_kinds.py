"""Each JSON-Schema keyword a value can break becomes a diagnostic that names the rule.

A dict schema's errors come from `jsonschema`; every keyword gets pydantic's error type where one
means the same, else a `json_schema_<keyword>` rule phrased "must ...", with a prescription the
model can act on.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import healjson
from healjson import Degraded

DRAFT4 = "http://json-schema.org/draft-04/schema#"
STRING = {"type": "string"}


def diagnostics(value: Any, schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    outcome = healjson.validate(json.dumps(value), schema)
    assert isinstance(outcome, Degraded), outcome
    return [(error.path, error.constraint, error.prescription) for error in outcome.errors]


@pytest.mark.parametrize(
    ("schema", "value", "constraint", "prescription"),
    [
        (
            {"type": "array", "minItems": 2},
            [1],
            "must have at least 2 items",
            "Write `<root>` with at least 2 items (it has 1 items).",
        ),
        (
            {"type": "array", "maxItems": 1},
            [1, 2],
            "must have at most 1 items",
            "Shorten `<root>` to at most 1 items (it has 2 items).",
        ),
        ({"type": "array", "uniqueItems": True}, [1, 1], "must have unique items", None),
        ({"const": "x"}, "y", 'must be one of "x"', 'Use exactly one of "x" for `<root>`.'),
        ({"type": "number", "multipleOf": 3}, 4, "must be a multiple of 3", None),
        (
            {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            3,
            "must match exactly one of the allowed forms (it matches several)",
            None,
        ),
        ({"not": STRING}, "x", 'must not match {"type": "string"}', None),
        ({"type": "object", "minProperties": 2}, {"a": 1}, "must have at least 2 properties", None),
        (
            {"type": "object", "maxProperties": 1},
            {"a": 1, "b": 2},
            "must have at most 1 properties",
            None,
        ),
        (
            {"type": "array", "contains": STRING},
            [1],
            'must contain an item matching {"type": "string"}',
            None,
        ),
        (
            {"type": "array", "contains": STRING, "minContains": 2},
            ["a", 1],
            'must contain at least 2 items matching {"type": "string"}',
            None,
        ),
        (
            {"type": "array", "contains": STRING, "maxContains": 1},
            ["a", "b"],
            'must contain at most 1 items matching {"type": "string"}',
            None,
        ),
        (
            {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
            {"a": 1, "b": 2},
            "must not hold properties the schema does not define",
            None,
        ),
        (
            {"type": "array", "prefixItems": [{}], "unevaluatedItems": False},
            [1, 2],
            "must not hold items the schema does not define",
            None,
        ),
        (
            {"$schema": DRAFT4, "type": "number", "minimum": 3, "exclusiveMinimum": True},
            3,
            "must be greater than 3",
            "Set `<root>` to a value greater than 3 (got 3).",
        ),
        (
            {"$schema": DRAFT4, "type": "number", "maximum": 3, "exclusiveMaximum": True},
            3,
            "must be less than 3",
            "Set `<root>` to a value less than 3 (got 3).",
        ),
        (
            {"type": "string", "maxLength": 2},
            "abc",
            "must have at most 2 characters",
            "Shorten `<root>` to at most 2 characters (it has 3 characters).",
        ),
        ({"type": ["string", "integer"]}, 1.5, "must be a string or an integer", None),
    ],
)
def test_a_broken_keyword_becomes_its_own_diagnostic(
    schema: dict[str, Any], value: Any, constraint: str, prescription: str | None
) -> None:
    """Each broken JSON Schema keyword becomes one diagnostic with its own constraint and, where
    one helps, a prescription."""
    [(path, got_constraint, got_prescription)] = diagnostics(value, schema)
    assert path == "<root>"
    assert got_constraint == constraint
    expected = prescription or f"Change `<root>`: it {constraint}."
    assert got_prescription == expected


def test_a_draft4_inclusive_minimum_is_not_read_as_exclusive() -> None:
    """A draft 4 `minimum` without `exclusiveMinimum` is inclusive: the bound itself is valid and
    a value below it says "at least"."""
    schema = {"$schema": DRAFT4, "type": "number", "minimum": 3}
    [(_, constraint, _)] = diagnostics(2, schema)
    assert constraint == "must be at least 3"
    assert healjson.validate("3", schema).ok


def test_dependent_required_names_each_absent_dependency() -> None:
    """A broken `dependentRequired` names each absent dependency as a required field, and nothing
    is required when the trigger is absent."""
    schema = {
        "type": "object",
        "properties": {"card": {"type": "string"}},
        "dependentRequired": {"card": ["billing", "zip"], "other": ["x"]},
    }
    found = diagnostics({"card": "4111", "zip": "1"}, schema)
    assert found == [
        ("billing", "is required", "Add the required field `billing` with a valid value.")
    ]
    assert healjson.validate('{"zip": "1"}', schema).ok  # no `card`: nothing depends


def test_a_property_the_schema_forbids_with_false_must_not_be_there() -> None:
    """A property whose schema is `false` is reported as a value that must not be there."""
    schema = {"type": "object", "properties": {"secret": False, "a": {"type": "integer"}}}
    [(path, constraint, _)] = diagnostics({"secret": 1, "a": 1}, schema)
    assert constraint == "must not be here (the schema allows no value at this place)"
    assert path in ("secret", "<root>")


def test_a_key_matching_pattern_properties_is_not_extra() -> None:
    """With `additionalProperties: false`, only keys matching no `patternProperties` are reported
    as extra fields."""
    schema = {
        "type": "object",
        "patternProperties": {"^x_": {}},
        "additionalProperties": False,
    }
    found = diagnostics({"x_a": 1, "b": 2}, schema)
    assert found == [
        ("b", "is not a field of the schema", "Remove `b`; the schema does not define it.")
    ]


def test_property_names_break_the_pattern_the_names_must_match() -> None:
    """A key breaking `propertyNames`' pattern is reported with the pattern it must match."""
    schema = {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}
    [(_, constraint, _)] = diagnostics({"A1": 1}, schema)
    assert constraint == "must match the pattern ^[a-z]+$"
    assert healjson.validate('{"ab": 1}', schema).ok


def test_a_keyword_without_a_phrase_is_named_with_its_value() -> None:
    """A keyword nested in `dependentSchemas` is reported as the error it leads to (a required
    field)."""
    schema = {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}}
    [(path, constraint, _)] = diagnostics({"a": 1}, schema)
    assert (path, constraint) == ("b", "is required")


def test_a_union_branch_error_deep_inside_is_reported_for_the_closest_branch() -> None:
    """An error deep inside a union branch of an array item is reported at its full path for the
    closest branch."""
    item = {
        "anyOf": [
            {"type": "object", "properties": {"k": {"type": "integer"}}, "required": ["k"]},
            STRING,
        ]
    }
    found = diagnostics([{"k": "x"}], {"type": "array", "items": item})
    assert found == [("[0].k", "must be an integer", "Change `[0].k`: it must be an integer.")]
