"""Reading `stream.outcome` before the stream is read raises a clear error, sync and async alike.

`.outcome` never reads the stream behind the caller's back (it used to drain it silently): before
the end it raises `RuntimeError` saying how to get the outcome, and the stream is still whole
afterwards: iterating it yields every snapshot (or text piece) and then `.outcome` is there.
Driven through the real openai SDK over HTTP against `ScriptedServer`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Healed, Healer
from healjson._core.run.streams import AsyncItemStream, ItemStream
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS


class Order(BaseModel):
    sku: str
    qty: int


class Ping(BaseModel):
    host: str


GOOD = json.dumps({"sku": "A-1", "qty": 2})
MESSAGES = [{"role": "user", "content": "Order two A-1."}]


def test_a_sync_stream_raises_before_it_is_read_and_stays_whole() -> None:
    """Sync: `.outcome` before iterating raises, naming `finish()`; iterating then yields the
    snapshots and the healed outcome."""
    with ScriptedServer([ScriptedReply(content=GOOD, chunk_chars=4)]) as server:
        http = openai.DefaultHttpxClient(verify=TLS)
        with openai.OpenAI(base_url=server.base_url, api_key="k", http_client=http) as sdk:
            client = healjson.wrap(sdk)
            stream = client.chat.completions.create(
                model="m", messages=MESSAGES, response_model=Order, stream=True
            )
            with pytest.raises(RuntimeError, match=r"not finished.*stream\.finish\(\)"):
                _ = stream.outcome
            snapshots = list(stream)

    assert len(snapshots) > 1
    assert isinstance(stream.outcome, Healed)
    assert Order(sku="A-1", qty=2) == stream.outcome.value


def test_an_async_stream_raises_before_it_is_read_and_stays_whole() -> None:
    """Async, as sync: `.outcome` before `async for` raises, naming `async for` and `await
    stream.finish()`; the stream is not drained by it: iterating yields the snapshots, then
    the healed outcome."""

    async def main() -> tuple[str, int, Any]:
        with ScriptedServer([ScriptedReply(content=GOOD, chunk_chars=4)]) as server:
            http = openai.DefaultAsyncHttpxClient(verify=TLS)
            async with openai.AsyncOpenAI(
                base_url=server.base_url, api_key="k", http_client=http
            ) as sdk:
                client = healjson.wrap(sdk)
                stream = await client.chat.completions.create(
                    model="m", messages=MESSAGES, response_model=Order, stream=True
                )
                with pytest.raises(RuntimeError) as raised:
                    _ = stream.outcome
                snapshots = [snapshot async for snapshot in stream]
                return str(raised.value), len(snapshots), stream.outcome

    said, snapshots, outcome = asyncio.run(main())

    assert "not finished" in said
    assert "`async for`" in said
    assert "`await stream.finish()`" in said
    assert snapshots > 1
    assert isinstance(outcome, Healed)
    assert Order(sku="A-1", qty=2) == outcome.value


def test_an_async_tool_call_stream_raises_before_it_is_read() -> None:
    """An async `heal_tools=True, stream=True` run: `.outcome` before reading raises the same
    way; `await stream.finish()` then gives the healed calls."""
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "Ping", "arguments": '{"host": "a"}'},
    }

    async def main() -> tuple[str, Any]:
        reply = ScriptedReply(tool_calls=[call], finish_reason="tool_calls")
        with ScriptedServer([reply]) as server:
            http = openai.DefaultAsyncHttpxClient(verify=TLS)
            async with openai.AsyncOpenAI(
                base_url=server.base_url, api_key="k", http_client=http
            ) as sdk:
                stream = await healjson.wrap(sdk).chat.completions.create(
                    model="m", messages=MESSAGES, tools=[Ping], heal_tools=True, stream=True
                )
                with pytest.raises(RuntimeError) as raised:
                    _ = stream.outcome
                return str(raised.value), await stream.finish()

    said, outcome = asyncio.run(main())

    assert "`await stream.finish()`" in said
    assert isinstance(outcome, Healed)
    assert ["Ping"] == [made.name for made in outcome.value.calls]


def test_an_async_item_stream_raises_before_it_is_read() -> None:
    """An async item stream: `.outcome` before reading raises; `async for` then hands out every
    item and the outcome is there."""

    async def chunks() -> AsyncIterator[str]:
        text = json.dumps([{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}])
        for start in range(0, len(text), 5):
            await asyncio.sleep(0)
            yield text[start : start + 5]

    async def main() -> tuple[str, list[Order], Any]:
        stream: AsyncItemStream[Order] = AsyncItemStream(
            Healer(list[Order]).astream(lambda messages, **params: chunks(), "go")
        )
        with pytest.raises(RuntimeError) as raised:
            _ = stream.outcome
        items = [item async for item in stream]
        return str(raised.value), items, stream.outcome

    said, items, outcome = asyncio.run(main())

    assert "`async for`" in said
    assert ["A-1", "B-2"] == [item.sku for item in items]
    assert isinstance(outcome, Healed)


def test_item_streams_close_like_the_streams_they_read() -> None:
    """`ItemStream` and `AsyncItemStream` close (`close()` / `aclose()`, or leaving a `with` /
    `async with` block) the stream they read: its chunks are read no further and `finish()`
    says it was closed."""
    text = json.dumps([{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1}])
    read: list[str] = []

    def sync_chunks() -> Any:
        for start in range(0, len(text), 5):
            read.append("sync")
            yield text[start : start + 5]

    async def async_chunks() -> AsyncIterator[str]:
        for start in range(0, len(text), 5):
            read.append("async")
            yield text[start : start + 5]

    healer = Healer(list[Order])
    with ItemStream(healer.stream(lambda messages, **params: sync_chunks(), "go")) as sync_items:
        pass
    with pytest.raises(RuntimeError, match="closed"):
        sync_items.finish()

    async def main() -> None:
        stream = healer.astream(lambda messages, **params: async_chunks(), "go")
        async with AsyncItemStream(stream) as items:
            pass
        with pytest.raises(RuntimeError, match="closed"):
            await items.finish()

    asyncio.run(main())
    assert len(read) < 2 * len(range(0, len(text), 5))
