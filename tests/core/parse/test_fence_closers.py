"""A code fence closes only where its marker ends a line (`}```` glued to the value too): a
marker inside a string value (`"```"`, `x```y`) is text the fence holds, so a fenced reply,
whole or cut, reads as the same reply unfenced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import healjson
from pinned import pinned


def reading(text: str) -> tuple[str, Any]:
    """How a reply reads: `ok` and its value, or `degraded` and its partial data."""
    outcome = healjson.validate(text, Any)
    return ("ok", outcome.value) if outcome.ok else ("degraded", outcome.partial)


@pytest.mark.parametrize(
    "text",
    ['```json\n{"a": 1}```', '```json\n{"a": 1}```  \nthanks', '```\n{"a": 1}\n```   \n'],
)
def test_a_closer_at_a_lines_end_closes_the_fence(text: str) -> None:
    """Glued to the value or on its own line, followed by spaces only: the fence's end."""
    assert ("ok", {"a": 1}) == reading(text)


_STRINGS = st.text(st.sampled_from('ab `~"\\{},:'), max_size=10)


@pinned(max_examples=15)
@given(
    values=st.lists(_STRINGS, min_size=1, max_size=4),
    cut=st.integers(0, 200),
    marker=st.sampled_from(["```", "~~~"]),
)
@example(values=["```", "x"], cut=22, marker="```")
def test_a_fenced_reply_whole_or_cut_reads_as_it_does_unfenced(
    values: list[str], cut: int, marker: str
) -> None:
    """Any object of strings holding fence markers mid-line: fenced (no closer, so cut or not
    it is what the model wrote), it reads as the same text unfenced."""
    body = json.dumps({f"k{i}": value for i, value in enumerate(values)})
    body = body[: min(cut, len(body))] if cut < len(body) else body
    assert reading(f"{marker}json\n{body}") == reading(body)
