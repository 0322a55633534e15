"""What the OpenAI Agents SDK tests share: one run of an agent against `ScriptedServer`, with
healjson's events captured, and the module fixture that closes the SDK's trace exporter. Import
it after `pytest.importorskip("agents")`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, RunResult
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from healjson.testing import ScriptedServer, capture_events
from sdk_calls import TLS

__all__ = ["Ran", "run", "sdk_trace_exporter_closed"]


@pytest.fixture(scope="module", autouse=True)
def sdk_trace_exporter_closed() -> Iterator[None]:
    """The SDK's trace exporter (made on first use) is closed once the module's tests are
    done (a module that imports this fixture gets it)."""
    yield
    from agents.tracing.processors import default_exporter

    default_exporter().close()


@dataclass
class Ran:
    """One agent run: its result or its exception, healjson's events, and the requests the
    server received."""

    result: RunResult | None
    error: BaseException | None
    events: list[dict[str, Any]]
    requests: list[Any]


def run(
    build: Callable[[Any], Agent[Any]],
    script: list[Any],
    key: str = "test",
    prompt: str = "Go.",
    **kwargs: Any,
) -> Ran:
    """Run the agent `build` makes once on `prompt` against a server serving `script` (the
    client's API key `key`), with healjson's events captured; the run's exception is returned,
    not raised."""
    with ScriptedServer(script) as server:
        http = DefaultAsyncHttpxClient(verify=TLS)
        client = AsyncOpenAI(base_url=server.base_url, api_key=key, max_retries=0, http_client=http)
        agent = build(OpenAIChatCompletionsModel(model="scripted", openai_client=client))

        async def go() -> RunResult:
            try:
                return await Runner.run(agent, prompt, **kwargs)
            finally:
                await client.close()

        with capture_events(include_content=True) as events:
            try:
                result, error = asyncio.run(go()), None
            except Exception as exc:
                result, error = None, exc
        return Ran(result, error, list(events), list(server.requests))
