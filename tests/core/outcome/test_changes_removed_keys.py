"""`changed_fields` lists a key a repair removed where keys are data (a map, a JSON Schema
target's object), and never a model's extra key, which pydantic ignores."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Healer, Violation, contract
from healjson.testing import ScriptedModel
from pinned import pinned


class Doc(BaseModel):
    meta: dict[str, int] = {}
    note: str


@contract(fields=("note",))
def shouting(doc: Any) -> Violation | None:
    """The note must be upper case (the first answers here are not: a repair follows)."""
    note = doc["note"] if isinstance(doc, dict) else doc.note
    return None if note.isupper() else Violation("note must be upper case")


def _healed(target: Any, first: dict[str, Any], second: dict[str, Any]) -> Any:
    model = ScriptedModel([json.dumps(first), json.dumps(second)])
    outcome = Healer(target, contracts=[shouting]).run(model, "p")
    assert outcome.ok
    return outcome


KEYS = st.sets(st.sampled_from(["a", "b", "c", "d"]), max_size=4)


@given(first=KEYS, second=KEYS)
@pinned(max_examples=15)
def test_a_maps_removed_keys_are_listed_exactly(first: set[str], second: set[str]) -> None:
    """Whatever keys the first answer's map had and the repair's kept: each removed key is
    listed under the map, each added one too, none other."""
    outcome = _healed(
        Doc,
        {"meta": dict.fromkeys(sorted(first), 1), "note": "n"},
        {"meta": dict.fromkeys(sorted(second), 1), "note": "N"},
    )
    expected = {f"meta.{key}" for key in first ^ second} | {"note"}
    assert expected == set(outcome.changed_fields)


def test_a_models_extra_key_in_the_first_answer_is_not_listed() -> None:
    """A key the model has no field for (pydantic ignores it) is no change when it goes."""
    outcome = _healed(Doc, {"note": "n", "junk": 1}, {"note": "N"})
    assert ("note",) == outcome.changed_fields


SCHEMA = {
    "type": "object",
    "properties": {"note": {"type": "string"}, "tag": {"type": "string"}},
    "required": ["note"],
}


def test_a_json_schema_objects_removed_property_is_listed() -> None:
    """A JSON Schema target's value keeps the keys it is given: a property the repair left out
    was removed, and is listed."""
    outcome = _healed(SCHEMA, {"note": "n", "tag": "x"}, {"note": "N"})
    assert {"note", "tag"} == set(outcome.changed_fields)


class Maybe(BaseModel):
    meta: dict[str, int] | None = None
    note: str


def test_a_map_behind_optional_lists_its_removed_key() -> None:
    """A map field declared `X | None` lists a removed key as a plain map field does."""
    outcome = _healed(
        Maybe, {"meta": {"a": 1, "b": 2}, "note": "n"}, {"meta": {"a": 1}, "note": "N"}
    )
    assert {"meta.b", "note"} == set(outcome.changed_fields)
