"""What the Ollama tests share: one healed `chat` through a fresh official `ollama` client
(sync or async, streamed or not) against the scripted server, its outcome."""

from __future__ import annotations

import asyncio
from typing import Any

import ollama

import healjson
from healjson.testing import ScriptedServer
from sdk_calls import TLS

__all__ = ["chat"]


def chat(
    server: ScriptedServer,
    runner: str = "sync",
    streamed: bool = False,
    *,
    json_mode: str = "json_schema",
    **kwargs: Any,
) -> Any:
    """One healed `chat(**kwargs)` through a fresh client (closed after): its outcome (a
    stream read to its end first)."""
    if runner == "async":

        async def go() -> Any:
            raw = ollama.AsyncClient(host=server.ollama_host, verify=TLS)
            try:
                client = healjson.wrap(raw, json_mode=json_mode)  # type: ignore[arg-type]
                if streamed:
                    stream = client.chat(stream=True, **kwargs)
                    async for _ in stream:
                        pass
                    return stream.outcome
                return await client.chat(**kwargs)
            finally:
                await raw.close()

        return asyncio.run(go())
    raw = ollama.Client(host=server.ollama_host, verify=TLS)
    try:
        client = healjson.wrap(raw, json_mode=json_mode)  # type: ignore[arg-type]
        if streamed:
            stream = client.chat(stream=True, **kwargs)
            for _ in stream:
                pass
            return stream.outcome
        return client.chat(**kwargs)
    finally:
        raw.close()
