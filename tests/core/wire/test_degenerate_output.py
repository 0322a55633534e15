"""The degenerate-output guard: a streamed answer that turns into a run of whitespace or one
passage repeated is cut off at once (the rest of the stream is not read) and ends as
`degenerate_output`, repairable like a cut answer; a reply read whole is judged by the same rule
before it is parsed, whatever the chunking."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, Reason, Source, Strategy
from healjson._core.wire import degenerate as guard_module
from healjson._core.wire.degenerate import CHECK_EVERY, MIN_LOOP_CHARS, Guard, degenerate
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from sdk_calls import TLS


class Item(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    number: str
    items: list[Item]


GOOD = '{"number": "A-1", "items": [{"sku": "x", "qty": 1}]}'
WHITESPACE = '{"number": "A-1", "items": [' + " \n" * 100_000  # 200 KB of whitespace
LOOP = '{"number": "A-1", "items": [' + '{"sku": "x", "qty": 1}, ' * 8_000  # ~200 KB, one item
USER = [{"role": "user", "content": "the order"}]


class Counted:
    """An SDK stream whose chunks are counted as the client reads them."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.read = 0

    def __iter__(self) -> Iterator[Any]:
        for chunk in self.stream:
            self.read += 1
            yield chunk

    def close(self) -> None:
        self.stream.close()


def _streamed(server: ScriptedServer, policy: HealPolicy) -> tuple[Any, list[Counted]]:
    """`Healer.stream` over the real SDK stream, each call's chunks counted."""
    sdk = openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=TLS),
    )
    streams: list[Counted] = []

    def call(messages: Any, **params: Any) -> Counted:
        streams.append(Counted(sdk.chat.completions.create(messages=messages, **params)))
        return streams[-1]

    stream = healjson.Healer(Order, policy=policy).stream(call, USER, model="m", stream=True)
    for _ in stream:
        pass
    return stream.outcome, streams


def _events_sent(server: ScriptedServer) -> list[int]:
    server.wait_idle()
    return [request.events_sent for request in server.requests]


@pytest.mark.parametrize(("content", "kind"), [(WHITESPACE, "whitespace"), (LOOP, "repeats")])
def test_a_200kb_degenerate_stream_is_cut_after_a_bounded_prefix(content: str, kind: str) -> None:
    """A 200 KB stream of whitespace, or of one item repeated, sent in 100-character chunks:
    the client reads a bounded prefix, closes the stream, and the run ends `degenerate_output`
    (one attempt allowed); the server had sent only a little more than was read."""
    reply = ScriptedReply(content=content, chunk_chars=100, chunk_delay_s=0.002)
    total = len(content) // 100
    with ScriptedServer([reply]) as server:
        outcome, streams = _streamed(server, HealPolicy(max_attempts=1))
        sent = _events_sent(server)

    assert isinstance(outcome, Degraded)
    assert Reason.DEGENERATE_OUTPUT == outcome.reason
    (diagnostic,) = outcome.errors
    assert Source.DEGENERATE == diagnostic.source
    assert kind == diagnostic.extra["kind"]
    read = streams[0].read
    bound = (2_048 if kind == "whitespace" else MIN_LOOP_CHARS + 2 * CHECK_EVERY) // 100 + 5
    assert read <= bound
    assert sent[0] <= read + 40
    assert total > 10 * sent[0]
    assert len(outcome.raw_text or "") < 12_000


def test_a_degenerate_stream_is_repaired_with_a_compact_rewrite() -> None:
    """The default policy repairs it: the repair asks for the value compactly, and the second
    answer heals the run."""
    reply = ScriptedReply(content=WHITESPACE, chunk_chars=100, chunk_delay_s=0.002)
    with ScriptedServer([reply, ScriptedReply(content=GOOD, chunk_chars=20)]) as server:
        outcome, streams = _streamed(server, HealPolicy())
        repair = server.requests[1].messages

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert Strategy.DEGENERATE == outcome.attempts[1].strategy
    assert "compactly" in repair[-1]["content"]
    assert "whitespace characters" in repair[-1]["content"]
    assert len(repair[-2]["content"]) < 3_000  # the run quoted back as one summary line
    assert streams[0].read < 30


def test_a_reply_read_whole_is_judged_degenerate_before_parsing() -> None:
    """Not streamed, the same answers end the same way: `degenerate_output`."""
    for content in (WHITESPACE, LOOP):
        outcome = healjson.Healer(Order, policy=HealPolicy(max_attempts=1)).run(
            ScriptedModel([content]), USER
        )

        assert isinstance(outcome, Degraded)
        assert Reason.DEGENERATE_OUTPUT == outcome.reason


def test_a_valid_answer_holding_a_long_run_is_degenerate_read_whole_or_streamed() -> None:
    """A complete, valid answer with a whitespace run past the bound: the stream is cut at the
    run, and the same reply read whole is judged the same (not healed by the fast path)."""
    content = '{"number": "A-1",' + " " * 5_000 + '"items": []}'
    whole = healjson.Healer(Order, policy=HealPolicy(max_attempts=1)).run(
        ScriptedModel([content]), USER
    )
    with ScriptedServer([ScriptedReply(content=content, chunk_chars=50)]) as server:
        streamed, _ = _streamed(server, HealPolicy(max_attempts=1))

    assert isinstance(whole, Degraded)
    assert isinstance(streamed, Degraded)
    assert whole.reason == streamed.reason == Reason.DEGENERATE_OUTPUT


def test_validate_judges_a_reply_in_hand_without_the_guard() -> None:
    """`healjson.validate` makes no call, so there is nothing to save: a long repetitive answer
    that validates is a value there."""
    items = ",".join(['{"sku": "x", "qty": 1}'] * 1_000)
    content = '{"number": "A-1", "items": [' + items + "]}"

    assert isinstance(healjson.validate(content, Order), Healed)


def test_the_guard_off_reads_the_whole_stream() -> None:
    """`max_whitespace_run=None, max_repeats=None`: nothing is cut (the answer is then cut by
    nothing but its end)."""
    content = '{"number": "A-1", "items": []' + " " * 5_000 + "}"
    policy = HealPolicy(max_attempts=1, max_whitespace_run=None, max_repeats=None)
    with ScriptedServer([ScriptedReply(content=content, chunk_chars=100)]) as server:
        outcome, streams = _streamed(server, policy)

    assert isinstance(outcome, Healed)
    assert streams[0].read > len(content) // 100


def test_a_long_list_of_distinct_items_is_not_degenerate() -> None:
    """A large ordinary answer (pretty-printed, thousands of items) passes the guard."""
    import json

    items = [{"sku": f"sku-{i}", "qty": i} for i in range(4_000)]
    text = json.dumps({"number": "A-1", "items": items}, indent=2)

    assert degenerate(text, 2_048, 64) is None
    outcome = healjson.Healer(Order).run(ScriptedModel([text]), USER)
    assert isinstance(outcome, Healed)


def test_policy_bounds_are_checked() -> None:
    """A bound must be a count >= 1 or None."""
    with pytest.raises(ValueError, match="max_repeats"):
        HealPolicy(max_repeats=0)
    with pytest.raises(ValueError, match="max_whitespace_run"):
        HealPolicy(max_whitespace_run=-1)


# --- the rule itself: one verdict however the text is cut ---------------------------------------

segment = st.one_of(
    st.text(alphabet='abc{}[]",:0123456789', min_size=1, max_size=40),
    st.integers(1, 3_000).map(lambda n: " " * n),
    st.integers(1, 3_000).map(lambda n: "\n\t " * n),
    st.tuples(st.text(alphabet="ab,{}", min_size=1, max_size=30), st.integers(1, 600)).map(
        lambda pair: pair[0] * pair[1]
    ),
)


@settings(max_examples=75, derandomize=True, deadline=None)
@given(
    parts=st.lists(segment, max_size=8),
    cuts=st.lists(st.integers(1, 5_000), max_size=30),
    run=st.sampled_from([None, 16, 2_048]),
    repeats=st.sampled_from([None, 2, 64]),
)
@example(parts=[" " * 2_049], cuts=[1], run=2_048, repeats=64)
@example(parts=["x", " " * 2_049, "y"], cuts=[], run=2_048, repeats=None)
def test_the_guard_trips_alike_however_the_text_is_cut(
    parts: list[str], cuts: list[int], run: int | None, repeats: int | None
) -> None:
    """Fed whole or in any pieces, the guard finds the same thing (the same diagnostic)."""
    text = "".join(parts)
    whole = degenerate(text, run, repeats)
    guard = Guard(run, repeats)
    found = None
    at = 0
    for size in [*cuts, len(text) + 1]:
        found = guard.feed(text[at : at + size])
        at += size
        if found is not None or at >= len(text):
            break

    assert (whole is None) == (found is None)
    if whole is not None and found is not None:
        assert whole.constraint == found.constraint


@settings(max_examples=30, derandomize=True, deadline=None)
@given(length=st.integers(0, 6_000), bound=st.integers(1, 3_000), before=st.text(max_size=5))
def test_a_whitespace_run_trips_exactly_past_the_bound(
    length: int, bound: int, before: str
) -> None:
    """A run of `length` spaces after a non-space trips exactly when `length > bound`."""
    text = "x" + before.strip() + " " * length + "y"

    assert (degenerate(text, bound, None) is not None) == (length > bound)


def test_the_loop_check_looks_at_each_checkpoint_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear: fed 1 MB in 7-character pieces, the guard runs the loop finder once per
    checkpoint (never over the prefix again per piece)."""
    calls = []
    real = guard_module.tail_loop

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["floor"])
        return real(*args, **kwargs)

    monkeypatch.setattr(guard_module, "tail_loop", counted)
    text = "".join(f"item {i}, " for i in range(100_000))[:1_000_000]
    guard = Guard(2_048, 64)
    for at in range(0, len(text), 7):
        assert guard.feed(text[at : at + 7]) is None

    assert len(text) // CHECK_EVERY == len(calls)
