"""The forms a target can take: any mapping as a JSON Schema, an unhashable type expression,
and a clear TypeError for what is no target at all."""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Flag, Healed
from healjson._core.target.target import target_for
from healjson._providers.openai_strict_schema import strict_format


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
    """A `dict` subclass is taken as a JSON Schema target, required fields included."""

    class Schema(dict[str, Any]):
        pass

    schema = Schema(type="object", properties={"a": {"type": "integer"}}, required=["a"])
    assert healjson.validate('{"a": 2}', schema).unwrap() == {"a": 2}
    missing = healjson.validate("{}", schema)
    assert isinstance(missing, Degraded)
    assert [(e.path, e.constraint) for e in missing.errors] == [("a", "is required")]


def test_a_type_with_unhashable_metadata_is_still_a_target() -> None:
    """An `Annotated` type carrying unhashable metadata is still a target, and its `Field` bounds
    are checked."""
    note: dict[str, int] = {"note": 1}
    target = Annotated[int, Field(ge=0), note]
    assert healjson.validate("3", target).unwrap() == 3
    negative = healjson.validate("-3", target)
    assert isinstance(negative, Degraded)
    assert [e.constraint for e in negative.errors] == ["must be at least 0"]


@pytest.mark.parametrize("bad", [42, [1]])
def test_what_is_no_type_is_refused_with_a_type_error_saying_what_to_pass(bad: Any) -> None:
    """A target that is neither a type nor a schema (a number, a list) is refused with a
    `TypeError` saying to pass a model class."""
    with pytest.raises(TypeError, match="pass a pydantic model class") as caught:
        healjson.validate("3", bad)
    assert "A string is read" not in str(caught.value)


def test_a_string_naming_nothing_gets_the_hint_to_pass_the_class() -> None:
    """A string target that names no type is refused with the hint to pass the class itself."""
    with pytest.raises(TypeError, match="pass the class itself"):
        healjson.validate("3", "NoSuchName")


def test_a_schema_that_is_no_json_schema_is_a_value_error_naming_the_keyword() -> None:
    """A schema with an invalid `type` keyword is refused with a `ValueError` naming where it is
    invalid."""
    with pytest.raises(ValueError, match="not a valid JSON Schema at type"):
        healjson.validate("3", {"type": 5})


def test_mappings_inside_a_list_of_the_schema_are_read_as_dicts() -> None:
    """Read-only mappings inside a schema's `anyOf` list are read as the dicts they stand for."""
    branches = [types.MappingProxyType({"type": "integer"}), {"type": "null"}]
    schema = {"type": "object", "properties": {"n": {"anyOf": branches}}, "required": ["n"]}
    assert healjson.validate('{"n": null}', schema).unwrap() == {"n": None}
    wrong = healjson.validate('{"n": "many"}', schema)
    assert isinstance(wrong, Degraded)
    assert [(e.path, e.constraint) for e in wrong.errors] == [("n", "must be an integer")]


# -- two spellings Python calls equal ---------------------------------------------------------
# `Literal["a", "b"] == Literal["b", "a"]` and `A | B == B | A`, with equal hashes: each spelling
# still gets its own schema, name and validation, whichever was used first in the process.

_LITERAL_VALUES = st.lists(
    st.text("abcxyz", min_size=1, max_size=3) | st.integers(-5, 5), min_size=2, max_size=5,
    unique_by=lambda value: (type(value), value),
)  # fmt: skip


@settings(max_examples=15, deadline=None)
@given(values=_LITERAL_VALUES, data=st.data())
def test_each_order_of_a_literal_keeps_its_own_schema(
    values: list[Any], data: st.DataObject
) -> None:
    """Each order of the same `Literal` values keeps its own enum order, in the target's schema
    and in the strict schema sent."""
    orders = [values, data.draw(st.permutations(values)), list(reversed(values))]
    for order in orders:
        literal = Literal[tuple(order)]  # type: ignore[valid-type]
        for spelled in (literal, list[literal]):  # and nested: the list's item schema
            schema = target_for(spelled).json_schema
            assert (schema.get("items") or schema)["enum"] == order
            sent = strict_format(spelled)["json_schema"]["schema"]["properties"]["value"]
            assert (sent.get("items") or sent)["enum"] == order  # strict mode wraps a non-object
        assert strict_format(literal)["json_schema"]["name"] == "Literal_" + "_".join(
            str(value) for value in order
        )


class _Left(BaseModel):
    x: int


class _Right(BaseModel):
    x: int


def test_each_order_of_a_union_validates_as_written() -> None:
    """pydantic's smart union picks the leftmost member when several fit equally well, so
    `_Left | _Right` and `_Right | _Left` give different values from the same reply."""
    for first, second in [(_Left, _Right), (_Right, _Left), (_Left, _Right)]:
        union = first | second
        assert type(healjson.validate('{"x": 1}', union).unwrap()) is first
        assert type(healjson.validate('[{"x": 1}]', list[union]).unwrap()[0]) is first
        refs = [member["$ref"] for member in target_for(union).json_schema["anyOf"]]
        assert refs == [f"#/$defs/{first.__name__}", f"#/$defs/{second.__name__}"]
