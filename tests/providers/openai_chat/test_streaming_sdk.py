"""Healed streams end to end: the real openai SDK (sync and async) and instructor, over real HTTP
against the scripted server on 127.0.0.1, streaming SSE delta by delta."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from pydantic import BaseModel, Field

import healjson
from healjson import AsyncHealStream, Degraded, Flag, Healed, HealStream, Reason
from healjson.testing import ScriptedReply, ScriptedServer
from lanes import INSTRUCTOR_ONLY

USER = [{"role": "user", "content": "Extract it."}]
KEY = "sk-stream-0123456789abcdef"


class Item(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Order(BaseModel):
    customer: str
    total: float = Field(ge=0)
    items: list[Item]


GOOD = {"customer": "Ada", "total": 3.5, "items": [{"sku": "A", "qty": 2}, {"sku": "B", "qty": 1}]}


@contextmanager
def client(server: ScriptedServer) -> Iterator[Any]:
    sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=10)
    try:
        yield healjson.wrap(sdk)
    finally:
        sdk.close()


def create(wrapped: Any, model: Any = Order, **extra: Any) -> Any:
    return wrapped.chat.completions.create(
        model="gpt-test", messages=USER, response_model=model, stream=True, **extra
    )


async def acreate(server: ScriptedServer, model: Any = Order) -> tuple[list[Any], Any]:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=10)
    try:
        stream = await healjson.wrap(sdk).chat.completions.create(
            model="gpt-test", messages=USER, response_model=model, stream=True
        )
        assert isinstance(stream, AsyncHealStream)
        snapshots = [snapshot async for snapshot in stream]
        return snapshots, await stream.finish()
    finally:
        await sdk.close()


def reply(content: str, **fields: Any) -> ScriptedReply:
    return ScriptedReply(content=content, chunk_chars=fields.pop("chunk_chars", 5), **fields)


@pytest.mark.parametrize("runner", ["sync", "async"])
def test_clean_stream_snapshots_then_healed_with_the_streams_usage(runner: str) -> None:
    """A clean stream through the openai SDK yields snapshots, then `Healed` with the usage the
    stream reported, sync and async."""
    text = json.dumps(GOOD)
    with ScriptedServer([reply(text)]) as server:
        if runner == "sync":
            with client(server) as wrapped:
                stream = create(wrapped)
                assert isinstance(stream, HealStream)
                snapshots, outcome = list(stream), stream.outcome
        else:
            snapshots, outcome = asyncio.run(acreate(server))
        body = server.requests[0].body

    assert len(snapshots) > 5
    assert GOOD == snapshots[-1].data
    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert outcome.usage.completion_tokens > 0
    assert not outcome.usage.estimated  # the usage chunk was asked for and read
    assert {"include_usage": True} == body["stream_options"]
    assert body["response_format"]["type"] == "json_schema"


def test_fenced_prose_wrapped_broken_stream_heals_with_no_extra_call() -> None:
    """A fenced, prose-wrapped stream with a trailing comma heals through the SDK in one call."""
    text = "Sure:\n```json\n" + json.dumps(GOOD)[:-1] + ",}\n```\nDone."
    with ScriptedServer([reply(text, chunk_chars=4)]) as server, client(server) as wrapped:
        outcome = create(wrapped).finish()
        calls = len(server.requests)

    assert isinstance(outcome, Healed)
    assert Flag.CODE_FENCE in outcome.flags
    assert 1 == calls


def test_cut_stream_is_repaired_in_two_calls() -> None:
    """A stream cut by the token limit is repaired by a second, streamed call."""
    cut = ScriptedReply(content=json.dumps(GOOD)[:25], finish_reason="length", chunk_chars=5)
    with ScriptedServer([cut, reply(json.dumps(GOOD))]) as server, client(server) as wrapped:
        outcome = create(wrapped).finish()
        second = server.requests[1].body

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert second["stream"] is True  # the repair streams too


def test_list_items_flow_and_one_repair_call_fixes_the_bad_one() -> None:
    """A list's items flow through the SDK as they complete (from the strict format's
    `{"value": [...]}` envelope, as an endpoint that enforces it answers); one repair call fixes
    the bad item, and the ones behind it wait for it."""
    items = [{"sku": s, "qty": 0 if s == "C" else 1} for s in "ABCDE"]
    fixed = [{"sku": s, "qty": 1} for s in "ABCDE"]
    enveloped = [reply(json.dumps({"value": items})), reply(json.dumps({"value": fixed}))]
    with (
        ScriptedServer(enveloped) as server,
        client(server) as wrapped,
    ):
        stream = create(wrapped, list[Item])
        seen = [(item.sku, len(server.requests)) for item in stream.items()]
        outcome = stream.outcome

    assert [("A", 1), ("B", 1), ("C", 2), ("D", 2), ("E", 2)] == seen  # in order: D, E wait
    assert isinstance(outcome, Healed)
    assert "repaired" == stream.item_status[2]
    assert 2 == outcome.calls


def test_early_abort_closes_the_connection_and_the_repair_succeeds() -> None:
    """An early abort closes the HTTP connection long before the answer's end, and the repair
    heals."""
    bad = {
        "customer": "Ada",
        "total": -1,
        "items": [{"sku": f"S{i}", "qty": 1} for i in range(200)],
    }
    text = json.dumps(bad)
    first = ScriptedReply(content=text, chunk_chars=5, chunk_delay_s=0.002)
    with ScriptedServer([first, reply(json.dumps(GOOD))]) as server, client(server) as wrapped:
        outcome = create(wrapped).finish()
        server.wait_idle(5)
        aborted = server.requests[0]

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    attempt = outcome.attempts[0]
    assert Flag.STREAM_ABORTED in attempt.flags
    assert "total" == attempt.diagnostics[0].path
    assert not aborted.stream_completed  # healjson closed the stream before its end
    received = len(attempt.raw_text or "")
    assert received < len(text) // 10  # >90% of the answer was never generated or sent


def test_mid_stream_http_error_degrades_with_api_error_and_partial_data() -> None:
    """An error event mid-stream degrades with `api_error`, keeping the partial data and raw text
    that arrived."""
    broken = ScriptedReply(content=json.dumps(GOOD), chunk_chars=5, stream_error_after_chars=30)
    with ScriptedServer([broken]) as server, client(server) as wrapped:
        stream = create(wrapped)
        snapshots = list(stream)
        outcome = stream.outcome

    assert snapshots
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert {"customer": "Ada"} == outcome.partial  # `"total": 3` had not closed
    assert json.dumps(GOOD).startswith(outcome.attempts[0].raw_text or "-")


def test_dropped_connection_mid_stream_degrades_and_keeps_what_arrived() -> None:
    """A connection dropped mid-stream degrades, keeping the partial data that arrived."""
    cut = ScriptedReply(content=json.dumps(GOOD), chunk_chars=5, cut_after_chars=20)
    with ScriptedServer([cut]) as server, client(server) as wrapped:
        outcome = create(wrapped).finish()

    assert isinstance(outcome, Degraded)
    assert outcome.reason in (Reason.API_ERROR, Reason.TIMEOUT)
    assert {"customer": "Ada"} == outcome.partial


def test_an_echoed_key_in_a_stream_error_is_redacted() -> None:
    """An API key echoed in a stream's error event is redacted from the record and trace."""
    broken = ScriptedReply(
        content=json.dumps(GOOD),
        chunk_chars=5,
        stream_error_after_chars=10,
        stream_error=f"invalid key {KEY}",
    )
    with ScriptedServer([broken]) as server, client(server) as wrapped:
        outcome = create(wrapped).finish()

    assert isinstance(outcome, Degraded)
    assert KEY not in json.dumps(outcome.to_dict())
    assert KEY not in outcome.trace()


def test_instructor_create_partial_and_create_iterable_are_healed() -> None:
    """instructor's `create_partial` and `create_iterable` through `wrap` are healed, the bad
    item repaired."""
    instructor = pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)
    items = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}]
    fixed = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]
    script = [reply(json.dumps(GOOD)), reply(json.dumps(items)), reply(json.dumps(fixed))]
    with ScriptedServer(script) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=10)
        wrapped = healjson.wrap(instructor.from_openai(sdk))
        partial = wrapped.create_partial(model="gpt-test", messages=USER, response_model=Order)
        snapshots = list(partial)
        iterable = wrapped.create_iterable(model="gpt-test", messages=USER, response_model=Item)
        got = list(iterable)
        sdk.close()

    assert GOOD == snapshots[-1].data
    assert isinstance(partial.outcome, Healed)
    assert [Item(sku="A", qty=1), Item(sku="B", qty=2)] == got
    assert isinstance(iterable.outcome, Healed)
    assert {0: "streamed", 1: "repaired"} == iterable.item_status


def test_instructor_chat_completions_spelling_is_healed_too() -> None:
    """`client.chat.completions.create_iterable(...)`, the spelling instructor's docs use."""
    instructor = pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)
    items = [{"sku": "A", "qty": 1}]
    with ScriptedServer([reply(json.dumps(items)), reply(json.dumps(GOOD))]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=10)
        wrapped = healjson.wrap(instructor.from_openai(sdk))
        iterable = wrapped.chat.completions.create_iterable(
            model="gpt-test", messages=USER, response_model=Item
        )
        got = list(iterable)
        partial = wrapped.chat.completions.create_partial(
            model="gpt-test", messages=USER, response_model=Order
        )
        last = list(partial)[-1]
        sdk.close()

    assert [Item(sku="A", qty=1)] == got
    assert isinstance(iterable.outcome, Healed)
    assert GOOD == last.data
    assert isinstance(partial.outcome, Healed)
