"""Healed streams over `instructor.from_anthropic` and `instructor.from_genai`: `create_partial`,
`create_iterable` and `create(stream=True)` read the provider's own stream events through the
real `anthropic` and `google-genai` SDKs, against the scripted server's Messages and
`streamGenerateContent` routes on 127.0.0.1 (streamed as SSE events)."""

from __future__ import annotations

import pytest

from lanes import INSTRUCTOR_ONLY

pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import instructor
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel, Field

import healjson
from healjson import Healed
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import close_gemini

USER = [{"role": "system", "content": "You extract orders."}, {"role": "user", "content": "go"}]


class Item(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Order(BaseModel):
    customer: str
    items: list[Item]


ORDER = {"customer": "Ada", "items": [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]}


@contextlib.contextmanager
def client(server: ScriptedServer) -> Iterator[Any]:
    """`wrap(instructor.from_anthropic(Anthropic(...)))` on `server`, its client closed after."""
    with anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0) as raw:
        yield healjson.wrap(instructor.from_anthropic(raw))


def test_create_partial_streams_snapshots_then_heals_a_fenced_answer() -> None:
    """`create_partial` over `instructor.from_anthropic` streams snapshots and heals a fenced
    answer in one call."""
    fenced = ScriptedReply(content=f"```json\n{json.dumps(ORDER)}\n```", chunk_chars=7)
    with ScriptedServer([fenced]) as server, client(server) as wrapped:
        stream = wrapped.create_partial(
            model="claude-x", messages=USER, response_model=Order, max_tokens=500
        )
        snapshots = list(stream)
        [request] = server.requests
    assert len(snapshots) > 2
    assert isinstance(stream.outcome, Healed)
    assert stream.outcome.value == Order.model_validate(ORDER)
    assert stream.outcome.calls == 1
    assert stream.outcome.usage.completion_tokens > 0  # read from the stream's events
    body = request.body
    assert body is not None
    assert body["stream"] is True
    assert body["max_tokens"] == 500
    assert body["system"].startswith("Reply with only a JSON value")
    assert "You extract orders." in body["system"]
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_create_iterable_hands_out_items_and_repairs_the_bad_one_alone() -> None:
    """`create_iterable` over `instructor.from_anthropic` hands out items in order and repairs
    the bad one alone."""
    items = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}, {"sku": "C", "qty": 2}]
    first = ScriptedReply(content=json.dumps(items), chunk_chars=5)
    fixed = ScriptedReply(content=json.dumps([{"sku": "B", "qty": 3}]), chunk_chars=5)
    with ScriptedServer([first, fixed]) as server, client(server) as wrapped:
        stream = wrapped.create_iterable(model="claude-x", messages=USER, response_model=Item)
        got = [item.sku for item in stream]
        bodies = [r.body for r in server.requests]
    assert got == ["A", "B", "C"]  # in index order: C waits for the repaired B
    assert stream.item_status == {0: "streamed", 1: "repaired", 2: "streamed"}
    assert isinstance(stream.outcome, Healed)
    assert bodies[1] is not None
    assert bodies[1]["max_tokens"] == 4096  # Anthropic requires one: healjson's default
    assert "in this order: [1]" in bodies[1]["messages"][-1]["content"]


def test_async_anthropic_streams_heal_a_cut_answer() -> None:
    """An async Anthropic `create_partial` through instructor repairs an answer cut by the token
    limit."""
    cut = ScriptedReply(content=json.dumps(ORDER)[:30], finish_reason="length", chunk_chars=6)

    async def main(server: ScriptedServer) -> Any:
        raw = anthropic.AsyncAnthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        )
        wrapped = healjson.wrap(instructor.from_anthropic(raw))
        stream = wrapped.create_partial(model="claude-x", messages=USER, response_model=Order)
        seen = [snapshot async for snapshot in stream]
        await raw.close()
        return seen, stream.outcome

    with ScriptedServer([cut, ScriptedReply(content=json.dumps(ORDER))]) as server:
        seen, outcome = asyncio.run(main(server))
    assert seen
    assert isinstance(outcome, Healed)
    assert outcome.calls == 2
    assert outcome.attempts[0].finish_reason == "length"


def gemini(server: ScriptedServer, session: Any = None) -> Any:
    options = genai_types.HttpOptions(
        base_url=server.gemini_base_url, timeout=10_000, aiohttp_client=session
    )
    return genai.Client(api_key="k", http_options=options)


def test_gemini_create_iterable_streams_and_repairs_the_bad_item_alone() -> None:
    """`create_iterable` over `instructor.from_genai` streams items and repairs the bad one
    alone."""
    items = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}, {"sku": "C", "qty": 2}]
    first = ScriptedReply(content=json.dumps(items), chunk_chars=5)
    fixed = ScriptedReply(content=json.dumps([{"sku": "B", "qty": 3}]), chunk_chars=5)
    with ScriptedServer([first, fixed]) as server:
        raw = gemini(server)
        wrapped = healjson.wrap(instructor.from_genai(raw))
        stream = wrapped.create_iterable(
            model="gemini-x", messages=USER, response_model=Item, max_tokens=300
        )
        got = [item.sku for item in stream]
        requests = server.requests
        close_gemini(raw)
    assert got == ["A", "B", "C"]  # in index order: C waits for the repaired B
    assert isinstance(stream.outcome, Healed)
    assert stream.outcome.calls == 2
    assert all(":streamGenerateContent" in r.path for r in requests)
    body = requests[0].body
    assert body is not None
    assert body["generationConfig"]["maxOutputTokens"] == 300
    assert "You extract orders." in json.dumps(body["systemInstruction"])
    assert [c["role"] for c in body["contents"]] == ["user"]
    repair = requests[1].body
    assert repair is not None
    assert [c["role"] for c in repair["contents"]] == ["user", "model", "user"]


def test_async_gemini_create_partial_heals_a_fenced_stream() -> None:
    """An async Gemini `create_partial` through instructor heals a fenced, prose-wrapped stream."""
    import aiohttp

    fenced = ScriptedReply(content=f"Sure:\n```json\n{json.dumps(ORDER)}\n```", chunk_chars=9)

    async def main(server: ScriptedServer) -> Any:
        async with aiohttp.ClientSession() as session:
            raw = gemini(server, session)
            wrapped = healjson.wrap(instructor.from_genai(raw, use_async=True))
            stream = wrapped.create_partial(model="gemini-x", messages=USER, response_model=Order)
            seen = [snapshot async for snapshot in stream]
            await raw.aio.aclose()
            raw.close()
            return seen, stream.outcome

    with ScriptedServer([fenced]) as server:
        seen, outcome = asyncio.run(main(server))
    assert seen
    assert isinstance(outcome, Healed)
    assert outcome.calls == 1
    assert outcome.value == Order.model_validate(ORDER)
