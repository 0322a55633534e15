"""What the OpenAI tool-call tests share: one `heal_tools=True` request through a fresh wrapped
`openai` client (chat completions or the Responses API, sync or async, streamed or not) against
the scripted server, its outcome; the healed calls of a `Healed` outcome; the ways to run; a
catalogue tool; a custom input no JSON reader would leave alone."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel, Field

import healjson
from healjson import Healed, ToolCalls
from healjson.testing import ScriptedServer

__all__ = ["TRICKY", "WAYS", "Api", "Mode", "Search", "healed", "value"]

Mode = Literal["sync", "async"]
Api = Literal["chat", "responses"]

TRICKY = 'echo "{\\"a\\": [1, 2}" \'quoted\' }{ ] \\n\ttab — ünïcödé 🦀 {{x}}'
"""A custom tool's input that is almost JSON, quoted, escaped and multilingual."""

WAYS = [
    pytest.param(mode, stream, id=f"{mode}-{'streamed' if stream else 'whole'}")
    for mode in ("sync", "async")
    for stream in (False, True)
]
"""`(mode, stream)`: sync and async, whole and streamed."""


class Search(BaseModel):
    """Search the catalogue."""

    query: str
    limit: int = Field(ge=1, le=50)


def healed(
    server: ScriptedServer, api: Api, mode: Mode = "sync", *, stream: bool = False, **kwargs: Any
) -> Any:
    """One `heal_tools=True` request (`kwargs`: `create`'s, the model set) on `api` through a
    fresh wrapped client, closed after; its outcome (a stream iterated to its end first)."""
    kwargs.setdefault("model", "gpt-test")
    kwargs["heal_tools"] = True
    if stream:
        kwargs["stream"] = True

    def create(client: Any) -> Any:
        api_of = client.chat.completions if api == "chat" else client.responses
        return api_of.create(**kwargs)

    if mode == "sync":
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            made = create(healjson.wrap(sdk))
            if not stream:
                return made
            list(made)
            return made.outcome

    async def main() -> Any:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            made = await create(healjson.wrap(sdk))
            if not stream:
                return made
            _ = [piece async for piece in made]
            return made.outcome

    return asyncio.run(main())


def value(outcome: Any) -> ToolCalls:
    """The healed calls (the outcome must be `Healed`)."""
    assert isinstance(outcome, Healed), outcome
    assert isinstance(outcome.value, ToolCalls)
    return outcome.value
