"""Closing a stream while another thread or task reads it (a cancel button) raises nothing: the
reader stops at its next event and the stream is closed there, its connection with it; the
outcome is then not known (`finish()` says the stream was closed)."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson.testing import ScriptedReply, ScriptedServer

USER = [{"role": "user", "content": "Extract them."}]
TEXT = json.dumps([{"sku": f"S{i}"} for i in range(60)])


class Item(BaseModel):
    sku: str


def slow() -> ScriptedReply:
    """A reply of many chunks, each after a pause: read for about 2 s."""
    return ScriptedReply(content=TEXT, chunk_chars=5, chunk_delay_s=0.01)


def test_a_close_from_another_thread_stops_the_reader() -> None:
    """`close()` while another thread iterates: no error; the reader stops before the end; the
    server saw the stream abandoned."""
    with (
        ScriptedServer([slow()]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=list[Item], stream=True
        )
        read: list[int] = []
        reader = threading.Thread(target=lambda: read.append(len(list(stream))))
        reader.start()
        time.sleep(0.2)
        stream.close()
        reader.join(5)
        server.wait_idle(3)
        assert not reader.is_alive()
        assert not server.requests[0].stream_completed
        with pytest.raises(RuntimeError, match="closed"):
            stream.finish()


def test_an_aclose_from_another_task_stops_the_reader() -> None:
    """`aclose()` while another task iterates: no error; the reader stops before the end."""

    async def run() -> bool:
        with ScriptedServer([slow()]) as server:
            sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            try:
                stream = await healjson.wrap(sdk).chat.completions.create(
                    model="m", messages=USER, response_model=list[Item], stream=True
                )

                async def consume() -> int:
                    return len([snapshot async for snapshot in stream])

                task = asyncio.create_task(consume())
                await asyncio.sleep(0.2)
                await stream.aclose()
                await asyncio.wait_for(task, 5)
                await asyncio.to_thread(server.wait_idle, 3)
                return bool(server.requests[0].stream_completed)
            finally:
                await sdk.close()

    assert not asyncio.run(run())
