"""A large invalid value is walked once: the readings of one reply judge its text several times
(whole, read, aligned; as text and as data), and `jsonschema` spends seconds per megabyte finding
an invalid value's errors, so a JSON Schema target gives a large text's errors again without a
second walk. The errors are the same as a fresh judgement's, whichever way the text comes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from healjson._core.target.json_schema import SchemaAdapter, json_schema_of
from pinned import pinned

ITEM = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
    "required": ["id", "name"],
}
SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": ITEM}},
    "required": ["items"],
}
SIZE = 2_700  # items: about 68 KB written compactly, over the size (64 KiB) whose failures are kept


class Counting:
    """A `jsonschema` validator whose error walks are counted."""

    def __init__(self, validator: Any) -> None:
        self.validator, self.walks = validator, 0

    def iter_errors(self, value: Any) -> Any:
        self.walks += 1
        return self.validator.iter_errors(value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.validator, name)


def data(broken: int, how: int) -> dict[str, Any]:
    """`SIZE` items, the one at `broken` broken in one of three ways no lax conversion mends."""
    items: list[Any] = [{"id": i, "name": f"n{i}"} for i in range(SIZE)]
    items[broken] = [{"name": "x"}, {"id": "seven", "name": "x"}, {"id": 1, "name": 2}][how]
    return {"items": items}


def errors(adapter: SchemaAdapter, given: Any, strict: bool | None) -> list[Any]:
    """The errors `adapter` finds in `given` (a text, or data)."""
    judge = adapter.validate_json if isinstance(given, str | bytes) else adapter.validate_python
    with pytest.raises(ValidationError) as caught:
        judge(given, strict=strict)
    return caught.value.errors(include_url=False)


@pinned(max_examples=8)
@given(
    broken=st.integers(0, SIZE - 1),
    how=st.integers(0, 2),
    order=st.permutations(["text", "bytes", "data", "lax"]),
)
def test_a_large_texts_errors_are_a_fresh_judgements_however_it_comes_again(
    broken: int, how: int, order: list[str]
) -> None:
    """Judged as text, as bytes, as data and laxly, in any order, one adapter gives each time
    the errors a fresh adapter gives."""
    value = data(broken, how)
    text = json.dumps(value)
    assert len(json.dumps(value, separators=(",", ":"))) > 1 << 16  # large enough to be kept
    ways = {
        "text": (text, True),
        "bytes": (text.encode(), True),
        "data": (value, True),
        "lax": (text, None),
    }
    shared = SchemaAdapter(json_schema_of(SCHEMA))
    for way in order:
        given_, strict = ways[way]
        fresh = SchemaAdapter(json_schema_of(SCHEMA))
        assert errors(fresh, given_, strict) == errors(shared, given_, strict), way


def test_a_large_invalid_text_is_walked_once_across_its_readings() -> None:
    """The same large invalid text judged as text, bytes and data costs one walk (the one that
    found its first error goes on for the rest)."""
    adapter = SchemaAdapter(json_schema_of(SCHEMA))
    counting = Counting(adapter._validator)
    adapter._validator = counting
    value = data(SIZE - 1, 0)
    text = json.dumps(value)
    for given_ in (text, text.encode(), value, text):
        errors(adapter, given_, True)
    assert 1 == counting.walks
