"""Schema errors as diagnostics: pydantic's errors phrased as constraints a model can act on."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, model_validator

import healjson
from contract_cases import schema_errors
from healjson import (
    MISSING,
    Degraded,
    Source,
)

# ---------------------------------------------------------------------------------------------
# Schema-error diagnostics
# ---------------------------------------------------------------------------------------------


def test_upper_bound_reads_must_be_at_most() -> None:
    """A `le=5` violation reads `must be at most 5` and prescribes the bound with the value."""
    error = schema_errors(rating=7)["rating"]

    assert "must be at most 5" == error.constraint
    assert 7 == error.value
    assert "Set `rating` to a value at most 5 (got 7)." == error.prescription
    assert Source.SCHEMA == error.source


def test_lower_bound_reads_must_be_at_least() -> None:
    """A `ge=1` violation reads `must be at least 1`."""
    assert "must be at least 1" == schema_errors(count=0)["count"].constraint


def test_missing_field_has_the_missing_value() -> None:
    """An absent field is reported with value MISSING and `is required`."""
    error = schema_errors(rating=None)["rating"]

    assert MISSING is error.value
    assert error.is_missing
    assert "is required" == error.constraint
    assert "Add the required field `rating` with a valid value." == error.prescription
    assert "rating = <missing>: is required" == error.describe()
    assert "<missing>" == error.to_dict()["value"]


def test_nested_list_item_paths_use_brackets_and_dots() -> None:
    """Errors inside list items have paths like `items[2].price`."""
    items = [{"sku": "a", "price": 1}, {"price": 2}, {"sku": "c", "price": -1}]
    errors = schema_errors(items=items)

    assert {"items[1].sku", "items[2].price"} == set(errors)
    assert MISSING is errors["items[1].sku"].value
    assert -1 == errors["items[2].price"].value
    assert errors["items[2].price"].constraint.startswith("must be greater than 0")


def test_string_length_and_list_size_diagnostics() -> None:
    """Too-long strings and too-short lists state the limit and the actual size."""
    errors = schema_errors(note="x" * 12, tags=[])

    assert "must have at most 10 characters" == errors["note"].constraint
    assert "(it has 12 characters)" in errors["note"].prescription
    assert errors["tags"].constraint.startswith("must have at least 1")
    assert "(it has 0 items)" in errors["tags"].prescription


def test_pattern_and_literal_diagnostics() -> None:
    """Pattern and literal errors name the pattern and the allowed values."""
    errors = schema_errors(code="nope", kind="c")

    assert r"must match the pattern ^ORD-\d{6}$" == errors["code"].constraint
    assert "must be one of 'a' or 'b'" == errors["kind"].constraint
    assert "nope" == errors["code"].value


def test_extra_field_and_validator_diagnostics() -> None:
    """A forbidden extra field and a custom validator error read as rules, not pydantic jargon."""
    errors = schema_errors(extra=1, even=3)

    assert "is not a field of the schema" == errors["extra"].constraint
    assert "must be even" == errors["even"].constraint
    assert "Value error" not in errors["even"].constraint


def test_type_error_reads_must_not_input_should() -> None:
    """pydantic's `Input should be ...` becomes `must be ...`."""
    error = schema_errors(rating="lots")["rating"]

    assert error.constraint.startswith("must be a valid integer")
    assert "Input should" not in error.constraint


def test_union_errors_for_one_location_are_merged() -> None:
    """Several union branch errors at one path become one diagnostic."""

    class Either(BaseModel):
        value: int | list[int]

    out = healjson.validate('{"value": "abc"}', Either)

    assert isinstance(out, Degraded)
    assert ["value"] == [e.path for e in out.errors]
    assert ", or " in out.errors[0].constraint
    assert "union" == out.errors[0].rule


class Span(BaseModel):
    start: int
    end: int
    label: str

    @model_validator(mode="after")
    def ordered(self) -> Span:
        if self.end < self.start:
            raise ValueError("end must not be before start")
        return self


class Spans(BaseModel):
    spans: list[Span]


def test_a_model_level_validator_names_the_fields_its_message_speaks_of() -> None:
    """Not "Change `<root>`": the prescription names the fields, wherever the object sits."""
    root = healjson.validate('{"start": 5, "end": 1, "label": "a"}', Span)
    nested = healjson.validate('{"spans": [{"start": 5, "end": 1, "label": "a"}]}', Spans)
    assert isinstance(root, Degraded)
    assert isinstance(nested, Degraded)
    assert ("start", "end") == root.errors[0].fields
    assert "`<root>`" not in root.errors[0].prescription
    assert root.errors[0].prescription.startswith("Change `start`, `end` so that: end must")
    assert ("spans[0].start", "spans[0].end") == nested.errors[0].fields


@model_validator(mode="after")
def _vague(self: Any) -> Any:
    raise ValueError("these do not add up")


def test_a_validator_naming_no_field_involves_every_field() -> None:
    """A model validator whose error names no field involves every field of the model."""

    class Vague(BaseModel):
        a: int
        b: int
        check = _vague

    outcome = healjson.validate('{"a": 1, "b": 2}', Vague)
    assert isinstance(outcome, Degraded)
    assert ("a", "b") == outcome.errors[0].fields
