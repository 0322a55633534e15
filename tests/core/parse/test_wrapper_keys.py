"""A one-key object stands for the value it wraps only when its key says nothing more of that
value: the whole answer under any key (a JSON object mode makes a model wrap a plain answer),
unless the target is a map; inside the answer (and for a map), under an envelope word
(`value`, `result`, `items`, ...), a name of its field (property key, title, a list field's
name or singular for its items), any plural word for a list, the type's name for an object.
Any other key there qualifies the value (a unit, a bound, a negation, a former value), so the
object is not read as the value: the model is asked again instead."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

import healjson
from healjson import Degraded, Flag, Healed
from healjson._core.parse.shape import key_form
from pinned import pinned

ENVELOPES = ["value", "Value", "result", "answer", "data", "output", "response", "content"]


class Search(BaseModel):
    query: str
    max_results: int


def test_a_qualifying_key_is_never_dropped_from_a_field() -> None:
    """`{"not": "cats"}` is not the query "cats", nor `{"min": 5}` the count 5."""
    answer = json.dumps({"query": {"not": "cats"}, "max_results": {"min": 5}})
    outcome = healjson.validate(answer, Search)
    assert isinstance(outcome, Degraded)


def test_an_envelope_word_or_the_fields_own_name_is_unwrapped() -> None:
    """`{"value": "cats"}` and `{"maxResults": 5}` under `max_results` are those values."""
    answer = json.dumps({"query": {"value": "cats"}, "max_results": {"maxResults": 5}})
    outcome = healjson.validate(answer, Search)
    assert isinstance(outcome, Healed)
    assert Search(query="cats", max_results=5) == outcome.value
    assert Flag.UNWRAPPED in outcome.flags


def test_the_whole_answer_is_unwrapped_under_any_key() -> None:
    """A plain answer a JSON object mode wrapped (`{"count": 5}` for an `int`) is its value."""
    outcome = healjson.validate('{"count": 5}', int)
    assert isinstance(outcome, Healed)
    assert 5 == outcome.value
    assert Flag.UNWRAPPED in outcome.flags


def test_a_list_item_is_unwrapped_only_under_an_envelope_word() -> None:
    """`[{"value": 1}, {"value": 2}]` is `[1, 2]`; `[{"celsius": 1}]` is not `[1]`."""
    healed = healjson.validate('[{"value": 1}, {"value": 2}]', list[int])
    assert isinstance(healed, Healed)
    assert [1, 2] == healed.value
    assert isinstance(healjson.validate('[{"celsius": 1}, {"celsius": 2}]', list[int]), Degraded)


_NAMES = st.from_regex(r"\A[a-z][a-z_]{0,10}\Z")


@pinned(max_examples=75)
@given(
    field=_NAMES,
    key=st.one_of(_NAMES, st.sampled_from(ENVELOPES)),
    value=st.one_of(st.integers(-1000, 1000), st.text(max_size=8)),
    spelled=st.sampled_from(["same", "upper", "camel"]),
)
@example(field="temperature", key="fahrenheit", value=70, spelled="same")
@example(field="max_results", key="max_results", value=5, spelled="camel")
def test_a_field_value_is_unwrapped_exactly_when_its_key_names_the_value(
    field: str, key: str, value: Any, spelled: str
) -> None:
    """For any field and any wrapper key, the wrapped plain value is read as the field's value
    exactly when the key is an envelope word or the field's own name (in any case or
    separators); otherwise the answer is not healed."""
    if key == field and spelled != "same":
        parts = key.split("_")
        key = (
            key.upper() if spelled == "upper" else parts[0] + "".join(p.title() for p in parts[1:])
        )
    kind: Any = int if isinstance(value, int) else str
    model: type[BaseModel] = create_model("Row", **{field: (kind, ...)})  # type: ignore[call-overload]
    outcome = healjson.validate(json.dumps({field: {key: value}}), model)
    names_it = key_form(key) in {key_form(word) for word in ENVELOPES} or key_form(key) == key_form(
        field
    )
    if names_it:
        assert isinstance(outcome, Healed), outcome
        assert value == getattr(outcome.value, field)
    else:
        assert isinstance(outcome, Degraded), outcome


class Readings(BaseModel):
    readings: dict[str, int]


class Loc(BaseModel):
    city: str


class Trip(BaseModel):
    destination: Loc
    exclude_ids: list[int]


class Tagged(BaseModel):
    tags: list[str]


def test_a_map_entry_is_never_replaced_by_its_qualifier() -> None:
    """`{"temperature": {"fahrenheit": 70}}` in a `dict[str, int]` (nested, at the root, or an
    object schema of `additionalProperties`) is not the entry `fahrenheit: 70`."""
    nested = json.dumps({"readings": {"temperature": {"fahrenheit": 70}}})
    assert isinstance(healjson.validate(nested, Readings), Degraded)
    root = json.dumps({"temperature": {"fahrenheit": 70}})
    assert isinstance(healjson.validate(root, dict[str, int]), Degraded)
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert isinstance(healjson.validate(json.dumps({"max_results": {"min": 5}}), schema), Degraded)


def test_a_qualifier_over_a_list_or_an_object_is_never_dropped() -> None:
    """`{"not": [1, 2]}` is not the list `[1, 2]`, nor `{"not": {...}}` the object."""
    answer = {"destination": {"not": {"city": "Paris"}}, "exclude_ids": [3]}
    assert isinstance(healjson.validate(json.dumps(answer), Trip), Degraded)
    answer = {"destination": {"city": "Oslo"}, "exclude_ids": {"not": [1, 2]}}
    assert isinstance(healjson.validate(json.dumps(answer), Trip), Degraded)


def test_a_plural_over_a_list_and_the_type_over_an_object_are_unwrapped() -> None:
    """`{"numbers": [1, 2]}` is the list and `{"Loc": {...}}` the object they wrap."""
    answer = {"destination": {"Loc": {"city": "Oslo"}}, "exclude_ids": {"numbers": [1, 2]}}
    outcome = healjson.validate(json.dumps(answer), Trip)
    assert isinstance(outcome, Healed), outcome
    assert Trip(destination=Loc(city="Oslo"), exclude_ids=[1, 2]) == outcome.value


def test_a_list_item_answers_to_the_list_fields_name_and_its_singular() -> None:
    """Items of `tags` wrapped as `{"tags": ...}` or `{"tag": ...}` are those items."""
    for key in ("tags", "tag"):
        outcome = healjson.validate(json.dumps({"tags": [{key: "a"}, {key: "b"}]}), Tagged)
        assert isinstance(outcome, Healed), (key, outcome)
        assert ["a", "b"] == outcome.value.tags
