"""The run's deadline passing while a server stays silent after the answer's finish reason
(before it closes the stream) loses nothing: the answer was whole, and is judged as a stream
that ended there. Silence before the finish reason is still the deadline's timeout. The real
openai and anthropic SDKs over real HTTP against the scripted server, sync and async."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy
from healjson.testing import ScriptedReply, ScriptedServer


class Ticket(BaseModel):
    title: str
    n: int


GOOD = '{"title": "x", "n": 1}'
SAID = [{"role": "user", "content": "a ticket"}]
POLICY = HealPolicy(deadline_s=0.5)


def streamed(server: ScriptedServer, provider: str, mode: str) -> Any:
    """One healed stream of a `Ticket` with a half-second deadline, read to its end; its
    outcome."""
    if provider == "openai":
        kwargs: dict[str, Any] = {"model": "m", "messages": SAID}
        sync_sdk: Any = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        async_sdk: Any = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    else:
        kwargs = {"model": "c", "max_tokens": 100, "messages": SAID}
        base = server.anthropic_base_url
        sync_sdk = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
        async_sdk = anthropic.AsyncAnthropic(base_url=base, api_key="k", max_retries=0)
    kwargs.update(response_model=Ticket, stream=True, policy=POLICY)

    def create(client: Any) -> Any:
        api = client.chat.completions if provider == "openai" else client.messages
        return api.create(**kwargs)

    if mode == "sync":
        with sync_sdk:
            stream = create(healjson.wrap(sync_sdk))
            for _ in stream:
                pass
            return stream.outcome

    async def main() -> Any:
        async with async_sdk:
            stream = await create(healjson.wrap(async_sdk))
            async for _ in stream:
                pass
            return stream.outcome

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_silence_after_the_finish_reason_keeps_the_whole_answer(provider: str, mode: str) -> None:
    """The answer and its finish reason, then 3 s of silence: healed at the deadline."""
    started = time.monotonic()
    with ScriptedServer([ScriptedReply(content=GOOD, chunk_chars=50, hold_open_s=3.0)]) as server:
        outcome = streamed(server, provider, mode)
    assert time.monotonic() - started < 2.5
    assert isinstance(outcome, Healed)
    assert Ticket(title="x", n=1) == outcome.value
    assert 1 == outcome.calls


def test_silence_before_the_finish_reason_is_still_a_timeout() -> None:
    """An answer still being written when the deadline passes: degraded `timeout`, what had
    arrived kept."""
    reply = ScriptedReply(content=GOOD, chunk_chars=8, chunk_delay_s=0.3)
    with ScriptedServer([reply]) as server:
        outcome = streamed(server, "openai", "sync")
    assert isinstance(outcome, Degraded)
    assert "timeout" == outcome.reason
    assert outcome.attempts[-1].raw_text
