"""The forms a target can take: any mapping as a JSON Schema, an unhashable type expression,
and a clear TypeError for what is no target at all."""

from __future__ import annotations

import types
from typing import Annotated, Any

import pytest
from pydantic import Field

import healjson
from healjson import Degraded, Flag, Healed


def _frozen_schema() -> Any:
    minimum = types.MappingProxyType({"type": "integer", "minimum": 1})
    props = types.MappingProxyType({"a": minimum})
    return types.MappingProxyType({"type": "object", "properties": props, "required": ["a"]})


def test_a_read_only_mapping_is_a_json_schema_at_every_depth() -> None:
    """Regression: a `MappingProxyType` schema (the `Mapping` the signature accepts) raised
    TypeError ("must be JSON data") instead of validating."""
    schema = _frozen_schema()
    assert healjson.validate('{"a": 1}', schema).unwrap() == {"a": 1}
    low = healjson.validate('{"a": 0}', schema)
    assert isinstance(low, Degraded)
    assert [(e.path, e.constraint) for e in low.errors] == [("a", "must be at least 1")]
    coerced = healjson.validate('{"a": "2"}', schema)
    assert isinstance(coerced, Healed)
    assert coerced.value == {"a": 2}
    assert Flag.COERCED in coerced.flags


def test_a_dict_subclass_is_a_json_schema() -> None:
    class Schema(dict[str, Any]):
        pass

    schema = Schema(type="object", properties={"a": {"type": "integer"}}, required=["a"])
    assert healjson.validate('{"a": 2}', schema).unwrap() == {"a": 2}
    missing = healjson.validate("{}", schema)
    assert isinstance(missing, Degraded)
    assert [(e.path, e.constraint) for e in missing.errors] == [("a", "is required")]


def test_a_type_with_unhashable_metadata_is_still_a_target() -> None:
    note: dict[str, int] = {"note": 1}
    target = Annotated[int, Field(ge=0), note]
    assert healjson.validate("3", target).unwrap() == 3
    negative = healjson.validate("-3", target)
    assert isinstance(negative, Degraded)
    assert [e.constraint for e in negative.errors] == ["must be at least 0"]


@pytest.mark.parametrize("bad", [42, [1]])
def test_what_is_no_type_is_refused_with_a_type_error_saying_what_to_pass(bad: Any) -> None:
    with pytest.raises(TypeError, match="pass a pydantic model class") as caught:
        healjson.validate("3", bad)
    assert "A string is read" not in str(caught.value)


def test_a_string_naming_nothing_gets_the_hint_to_pass_the_class() -> None:
    with pytest.raises(TypeError, match="pass the class itself"):
        healjson.validate("3", "NoSuchName")


def test_a_schema_that_is_no_json_schema_is_a_value_error_naming_the_keyword() -> None:
    with pytest.raises(ValueError, match="not a valid JSON Schema at type"):
        healjson.validate("3", {"type": 5})


def test_mappings_inside_a_list_of_the_schema_are_read_as_dicts() -> None:
    branches = [types.MappingProxyType({"type": "integer"}), {"type": "null"}]
    schema = {"type": "object", "properties": {"n": {"anyOf": branches}}, "required": ["n"]}
    assert healjson.validate('{"n": null}', schema).unwrap() == {"n": None}
    wrong = healjson.validate('{"n": "many"}', schema)
    assert isinstance(wrong, Degraded)
    assert [(e.path, e.constraint) for e in wrong.errors] == [("n", "must be an integer")]
