"""A string streamed is the string read whole: an item handed out early is the final item.

The stream reader reads a string's text by L1's rule (`healjson._core.parse.strings`):
escapes, surrogate pairs, raw control characters, a layout line break before the closing
quote. So an item whose string mixes escapes and raw control characters is handed out decoded,
and is never retracted.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Delta, Healed, Healer
from healjson._core.stream.reader import JsonStream
from pinned import pinned


class Item(BaseModel):
    sku: str
    qty: int


_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f", "/": "\\/"}


def written(char: str, how: int) -> str:
    """`char` as a model may write it inside a JSON string: raw (0), as a `\\u` escape (1, a
    surrogate pair beyond the Basic Multilingual Plane), or as JSON's short escape (2)."""
    if char in '"\\' and how == 0:
        how = 2
    if how == 1:
        return (
            json.dumps(char, ensure_ascii=True)[1:-1]
            if ord(char) > 0xFFFF
            else f"\\u{ord(char):04x}"
        )
    if how == 2:
        return {'"': '\\"', "\\": "\\\\"}.get(char) or _SHORT.get(char) or char
    return char


STRINGS = st.lists(
    st.tuples(st.characters(exclude_categories=("Cs",)), st.integers(0, 2)), max_size=12
)


def streamed(args: str, cuts: list[int], tool: bool) -> Any:
    """A `list[Item]` run over `args` in pieces cut at `cuts`: its stream, consumed."""
    bounds = sorted({0, len(args), *(cut % (len(args) + 1) for cut in cuts)})
    pieces = [args[a:b] for a, b in itertools.pairwise(bounds)]
    deltas = [Delta(tool_arguments=p) if tool else Delta(text=p) for p in pieces]

    def call(messages: Any, **params: Any) -> Any:
        return iter([*deltas, Delta(finish_reason="stop")])

    stream = Healer(list[Item]).stream(call, "items?")
    return stream, list(stream.items())


def test_an_item_with_an_escape_and_a_raw_line_break_is_handed_out_decoded() -> None:
    """`caf\\u00e9` beside a raw line break is handed out as `café`, the final item."""
    args = '[{"sku": "caf\\u00e9\nX", "qty": 1}, {"sku": "B", "qty": 2}]'
    stream, given_items = streamed(args, list(range(0, len(args), 4)), tool=True)
    assert [Item(sku="café\nX", qty=1), Item(sku="B", qty=2)] == given_items
    assert given_items == list(stream.outcome.value)
    assert {"streamed"} == set(stream.item_status.values())


@pinned()
@given(
    skus=st.lists(STRINGS, min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 400), max_size=10),
    tool=st.booleans(),
)
@example(skus=[[("\U0001f600", 1), ("\n", 0)]], cuts=[9, 10, 11], tool=True)
@example(skus=[[("x", 0), ("\n", 0)], [("\n", 0)]], cuts=[], tool=False)
def test_every_item_handed_out_is_the_final_item(
    skus: list[list[tuple[str, int]]], cuts: list[int], tool: bool
) -> None:
    """Any strings (any character, raw control characters, escapes, surrogate pairs) in a list
    of items, streamed in any pieces: each item handed out is the final item, none retracted,
    and the final value is L1's reading of the whole text."""
    literals = ['"' + "".join(written(c, how) for c, how in sku) + '"' for sku in skus]
    args = "[" + ", ".join(f'{{"sku": {lit}, "qty": {i}}}' for i, lit in enumerate(literals)) + "]"
    stream, given_items = streamed(args, cuts, tool)
    outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert healjson.parse(args, list[Item]).value == [item.model_dump() for item in outcome.value]
    assert given_items == list(outcome.value)
    assert {"streamed"} == set(stream.item_status.values())


@pinned()
@given(sku=STRINGS, cut=st.integers(0, 200))
def test_a_string_still_arriving_previews_a_prefix_of_its_text(
    sku: list[tuple[str, int]], cut: int
) -> None:
    """While a string arrives, the snapshot shows it decoded as far as it can be (an escape cut
    short left out): the final text, short of its end and of a layout line break."""
    literal = "".join(written(c, how) for c, how in sku)
    text = '["' + literal + '"]'
    final = healjson.parse(text).value[0]
    reader = JsonStream()
    reader.feed(text[: 2 + cut % (len(literal) + 1)])
    preview = reader.open_string
    assert preview is not None
    assert final.startswith(preview.rstrip(" \t\r\n")) or final == preview
