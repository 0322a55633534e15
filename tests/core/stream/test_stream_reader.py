"""The incremental JSON reader behind streaming: any chunking, snapshots that only grow."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from healjson._core.stream.reader import JsonStream

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)
CONTAINERS = st.one_of(
    st.lists(JSON, max_size=5), st.dictionaries(st.text(max_size=6), JSON, max_size=5)
)


def pieces(text: str, cuts: list[int]) -> list[str]:
    """`text` cut at the given offsets (any chunking a model's stream could have)."""
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def grows_into(before: Any, after: Any) -> bool:
    """`before` is a prefix of `after`: objects gain keys, lists gain items, the last string
    grows; nothing already read changes."""
    if isinstance(before, dict):
        return isinstance(after, dict) and all(
            key in after and grows_into(value, after[key]) for key, value in before.items()
        )
    if isinstance(before, list):
        if not isinstance(after, list) or len(before) > len(after):
            return False
        return all(grows_into(b, a) for b, a in zip(before, after, strict=False))
    if isinstance(before, str) and isinstance(after, str):
        return after.startswith(before)
    return before == after and type(before) is type(after)


def read(chunks: list[str]) -> tuple[JsonStream, list[Any]]:
    reader = JsonStream()
    snapshots = []
    for chunk in chunks:
        reader.feed(chunk)
        snapshots.append(reader.snapshot())
    return reader, snapshots


@given(value=CONTAINERS, cuts=st.lists(st.integers(min_value=0), max_size=30), indent=st.booleans())
def test_any_chunking_ends_with_the_value_and_snapshots_only_grow(
    value: Any, cuts: list[int], indent: bool
) -> None:
    """Any chunking of a JSON text ends with its value, and each snapshot only grows into the
    next."""
    text = json.dumps(value, indent=2 if indent else None, ensure_ascii=bool(cuts and cuts[0] % 2))
    reader, snapshots = read(pieces(text, cuts))

    assert reader.done
    assert value == snapshots[-1]
    started = [s for s in snapshots if s is not None]
    for before, after in itertools.pairwise(started):
        assert grows_into(before, after), (before, after)


@given(value=CONTAINERS, cuts=st.lists(st.integers(min_value=0), max_size=10))
def test_prose_fences_and_reasoning_before_the_value_are_skipped(
    value: Any, cuts: list[int]
) -> None:
    """Reasoning, prose and a fence before the value, and prose after it, are skipped by the
    incremental reader."""
    text = (
        '<think>maybe {"draft": 1} or [2]</think>Sure, here it is:\n```json\n'
        f"{json.dumps(value)}\n```\nAnything [else]?"
    )
    reader, snapshots = read(pieces(text, cuts))

    assert reader.done
    assert value == snapshots[-1]


def test_a_bracket_in_prose_is_dropped_when_json_does_not_follow() -> None:
    """A bracket in prose that no JSON follows is dropped, and the reader starts again at the
    real value."""
    reader, snapshots = read(list('As [noted], the answer is {"a": [1, 2]}.'))

    assert {"a": [1, 2]} == snapshots[-1]
    assert 2 == reader.starts


def test_members_of_the_root_are_reported_as_they_complete() -> None:
    """The reader reports each member of the root object as it completes."""
    reader = JsonStream()
    reader.feed('{"a": 1, "b": {"c"')
    assert ["a"] == reader.completed
    reader.feed(': 2}, "d": [')
    assert ["a", "b"] == reader.completed
    reader.completed.clear()
    reader.feed("3]}")
    assert ["d"] == reader.completed
    assert reader.done


def test_an_open_string_is_shown_as_far_as_it_decodes() -> None:
    """An open string is shown as far as its escapes decode, never with half an escape."""
    reader = JsonStream()
    reader.feed('{"a": "caf\\u00')
    assert {"a": "caf"} == reader.snapshot()
    reader.feed("e9 \\")
    assert {"a": "café "} == reader.snapshot()
    reader.feed('"x"}')
    assert {"a": 'café "x'} == reader.snapshot()
    assert reader.open_string is None


def test_numbers_appear_only_once_complete() -> None:
    """A number or literal appears in a snapshot only once it is complete."""
    reader = JsonStream()
    reader.feed("[12")
    assert [] == reader.snapshot()
    reader.feed("5, tr")
    assert [125] == reader.snapshot()
    reader.feed("ue]")
    assert [125, True] == reader.snapshot()


def test_complete_members_are_shared_not_copied() -> None:
    """Successive snapshots share each complete member and copy only the open containers."""
    reader = JsonStream()
    reader.feed('{"done": {"x": [1, 2]}, "open": [')
    first, second = reader.snapshot(), reader.snapshot()
    assert first is not second  # the open containers are copies
    assert first["done"] is second["done"]  # a complete member is the same object
