"""Repair requests are bounded: a constant plus the original messages, however large or hostile
the answer, its diagnostics or the configuration; and golden examples are never built large."""

from __future__ import annotations

import base64
import os
import tracemalloc
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from healjson import Healer, HealPolicy, Reply, Source
from healjson._core.diagnostic import Diagnostic
from healjson._core.repair.example import golden_example, synthesise
from healjson._core.repair.prompt import (
    MAX_EXAMPLE_CHARS,
    MAX_REPAIR_EXTRA_CHARS,
    RepairPrompt,
    Strategy,
)
from healjson._core.repair.quote import MAX_ANSWER_CHARS, _tail_loop, quote_answer
from healjson._core.target.target import target_for
from healjson._core.wire.degenerate import _periodic_tail
from healjson.testing import ScriptedModel


class Ticket(BaseModel):
    id: int
    summary: str


GOOD = '{"id": 1, "summary": "printer jammed"}'
PROMPT = "Open a ticket for the jammed printer."
ORIGINAL = (
    {"role": "system", "content": "You write tickets."},
    {"role": "user", "content": PROMPT},
)


def chars(messages: Sequence[Mapping[str, Any]]) -> int:
    """Characters of message content (what the bound counts)."""
    return sum(len(str(message.get("content") or "")) for message in messages)


def random_text(size: int) -> str:
    """`size` characters of text with no repetition in it (base64 of random bytes)."""
    return base64.b64encode(os.urandom(size * 3 // 4 + 3)).decode()[:size]


def assistant_turn(messages: Sequence[Mapping[str, Any]]) -> str:
    """The content of the (one) assistant turn of a repair request."""
    (turn,) = [m for m in messages if m.get("role") == "assistant"]
    return str(turn["content"])


# --- the answer quoted back ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "wrap",
    [lambda raw: raw, lambda raw: '{"id": "' + raw + '", "summary": "s"}'],
    ids=["no JSON", "schema error"],
)
def test_a_20_mb_answer_gives_repair_requests_below_original_plus_the_cap(wrap: Any) -> None:
    """Two failed 20 MB answers lead to repair requests of at most original + the constant."""
    raw = wrap(random_text(20_000_000))
    model = ScriptedModel([raw, raw, GOOD])

    outcome = Healer(Ticket, policy=HealPolicy(max_attempts=3)).run(model, list(ORIGINAL))

    assert outcome.ok
    assert 3 == len(model.calls)
    for call in model.calls[1:]:
        assert chars(call.messages) <= chars(ORIGINAL) + MAX_REPAIR_EXTRA_CHARS
        quoted = assistant_turn(call.messages)
        assert quoted.startswith(raw[: MAX_ANSWER_CHARS // 2])
        assert quoted.endswith(raw[-MAX_ANSWER_CHARS // 2 :])
        assert f"[… {len(raw) - MAX_ANSWER_CHARS} characters left out …]" in quoted


def test_an_ordinary_answer_is_quoted_back_untouched() -> None:
    """A 4 KB answer that failed is the assistant turn exactly as it arrived."""
    raw = '{"id": "' + random_text(4_000) + '", "summary": "s"}'
    model = ScriptedModel([raw, GOOD])

    Healer(Ticket).run(model, PROMPT)

    assert raw == assistant_turn(model.calls[1].messages)


def test_a_repetition_loop_is_summarised_not_re_sent() -> None:
    """An answer stuck repeating one passage until the token limit is quoted up to the first
    copy, then one line: the same N-character passage repeated K times."""
    passage = "I am stuck in a loop. "
    raw = '{"id": 1, "summary": "' + passage * 200_000
    model = ScriptedModel([Reply(raw, "length"), GOOD])

    Healer(Ticket).run(model, PROMPT)

    quoted = assistant_turn(model.calls[1].messages)
    assert quoted.startswith('{"id": 1, "summary": "')
    assert f"the same {len(passage)}-character passage repeated 200000 times" in quoted
    assert len(quoted) < 1_000


def test_quote_answer_keeps_the_text_before_the_loop_and_one_copy() -> None:
    """The prefix and one copy of the passage are kept; the count covers every repeat."""
    prefix = "Here is the list: ["
    passage = '{"name": "widget", "qty": 1}, '
    text = prefix + passage * 500

    quoted = quote_answer(text)

    assert quoted.startswith(prefix + passage)
    assert f"the same {len(passage)}-character passage repeated 500 times" in quoted


def test_a_short_legit_repeat_is_not_a_loop() -> None:
    """A few repeats (here 5 x 20 characters) are ordinary text, sent as they are."""
    text = "[" + "0, 1, 2, 3, 4, 5, 6, " * 5

    assert text == quote_answer(text)


@given(
    prefix=st.text(max_size=50),
    passage=st.text(min_size=1, max_size=40),
    repeats=st.integers(0, 400),
    suffix=st.text(max_size=30),
)
def test_quote_answer_is_bounded_and_a_found_loop_is_real(
    prefix: str, passage: str, repeats: int, suffix: str
) -> None:
    """For any text: the quote is within the cap plus a marker; a loop it reports is one."""
    text = prefix + passage * repeats + suffix

    quoted = quote_answer(text)
    loop = _tail_loop(text)

    assert len(quoted) <= MAX_ANSWER_CHARS + 200
    if loop is None and len(text) <= MAX_ANSWER_CHARS:
        assert text == quoted
    if loop is not None:
        start, period = loop
        tail = text[start:]
        assert tail == (tail[:period] * (len(tail) // period + 1))[: len(tail)]


@given(text=st.text(alphabet="ab", max_size=60), period=st.integers(1, 8))
def test_periodic_tail_agrees_with_the_definition(text: str, period: int) -> None:
    """_periodic_tail is the longest suffix in which every character equals the one `period`
    characters later."""
    n = len(text)
    expected = next(
        length
        for length in range(n, -1, -1)
        if all(text[i] == text[i + period] for i in range(n - length, n - period))
    )

    assert expected == _periodic_tail(text, n, period, 0)


# --- every other part of the request -------------------------------------------------------------

sizes = st.sampled_from([0, 5, 300, 5_000, 50_000])
big_text = st.builds(lambda n, c: c * n, sizes, st.sampled_from(["x", "é", "{"]))
diagnostics = st.builds(
    Diagnostic,
    path=big_text,
    value=st.one_of(big_text, st.lists(big_text, max_size=3)),
    constraint=big_text,
    prescription=big_text,
    source=st.sampled_from([Source.SCHEMA, Source.CONTRACT, Source.SYNTAX, Source.TRUNCATION]),
    fields=st.lists(big_text, max_size=8).map(tuple),
    rule=st.none() | big_text,
    extra=st.builds(
        lambda names, value: {"values": dict.fromkeys(names, value)},
        st.lists(big_text, max_size=8),
        big_text,
    ),
)


@given(
    strategy=st.sampled_from([Strategy.REPAIR, Strategy.SYNTAX, Strategy.TRUNCATION]),
    raw=st.none() | big_text | st.builds(random_text, sizes),
    found=st.lists(diagnostics, max_size=25),
    history=st.lists(big_text, max_size=6),
    example=st.none() | big_text,
    schema=st.none() | big_text,
)
def test_any_repair_request_is_within_the_original_plus_the_constant(
    strategy: Strategy,
    raw: str | None,
    found: list[Diagnostic],
    history: list[str],
    example: str | None,
    schema: str | None,
) -> None:
    """Huge raw answers, paths, values, constraints, prescriptions, field lists, histories,
    examples and schemas together stay within MAX_REPAIR_EXTRA_CHARS of the original."""
    prompt = RepairPrompt(strategy, 1, raw, tuple(found), tuple(history), example, schema)

    messages = prompt.messages(ORIGINAL)

    assert chars(messages) <= chars(ORIGINAL) + MAX_REPAIR_EXTRA_CHARS


def test_many_diagnostics_are_shown_up_to_the_cap_then_counted() -> None:
    """A thousand problems: the first ones are listed, the rest are counted in one line."""
    found = tuple(
        Diagnostic(
            f"items[{i}].price", "x" * 300, "must be a number", "Use a number.", Source.SCHEMA
        )
        for i in range(1_000)
    )

    text = RepairPrompt(Strategy.REPAIR, 1, "{}", found).render()

    assert "1. `items[0].price`" in text
    assert "more problems of the same kinds." in text
    assert "items[999]" not in text


def test_an_example_or_schema_over_its_cap_is_left_out_of_the_request() -> None:
    """A cut example or schema would mislead: a too-large one is not sent at all."""
    prompt = RepairPrompt(Strategy.REPAIR, 1, "{}", (), example="x" * 10_000, schema="y" * 40_000)

    text = prompt.render()

    assert "Example of a valid answer" not in text
    assert "JSON schema of the answer" not in text


# --- golden examples are never built large -------------------------------------------------------


class HugeText(BaseModel):
    text: str = Field(min_length=50_000_000)


class HugeList(BaseModel):
    items: list[int] = Field(min_length=1_000_000_000)


class HugePattern(BaseModel):
    code: str = Field(pattern=r"^(ab){5000}$")


class Leaf(BaseModel):
    a: str
    b: str
    c: str
    d: str
    e: str
    f: str


class Branch(BaseModel):
    a: Leaf
    b: Leaf
    c: Leaf
    d: Leaf
    e: Leaf
    f: Leaf


class Trunk(BaseModel):
    a: Branch
    b: Branch
    c: Branch
    d: Branch
    e: Branch
    f: Branch


class Tree(BaseModel):
    """6 x 6 x 6 x 6 = 1,296 strings: an example far over the cap."""

    a: Trunk
    b: Trunk
    c: Trunk
    d: Trunk
    e: Trunk
    f: Trunk


@pytest.mark.parametrize("model", [HugeText, HugeList, HugePattern, Tree])
def test_a_huge_minimum_builds_no_example(model: type[BaseModel]) -> None:
    """Synthesis stops as soon as the example outgrows the cap: no example."""
    assert None is synthesise(target_for(model))


@pytest.mark.parametrize("model", [HugeText, HugeList, HugePattern])
def test_healer_with_a_huge_minimum_never_allocates_the_example(model: type[BaseModel]) -> None:
    """Healer(...) builds without ever allocating the 50 MB string (or 1e9-item list)."""
    tracemalloc.start()
    try:
        Healer(model)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 5_000_000


def test_an_ordinary_model_still_gets_its_example() -> None:
    """The budget leaves ordinary targets their synthesised example."""
    assert '{"id":1,"summary":"example text"}' == synthesise(target_for(Ticket))


def test_a_caller_example_over_the_cap_is_not_used() -> None:
    """A caller's example longer than MAX_EXAMPLE_CHARS gives way to a synthesised one."""
    big = Ticket(id=2, summary="s" * (MAX_EXAMPLE_CHARS + 1))

    example = golden_example(target_for(Ticket), [big], ())

    assert '{"id":1,"summary":"example text"}' == example
