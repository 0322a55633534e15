"""A Responses API tool-call stream (`heal_tools=True, stream=True`) that fails part-way keeps
what had arrived on its degraded attempt, as chat completions' does: the text the caller was
shown, each call as far as it came (its id, name and the arguments' pieces), and what the call
spent (the completion counted from what arrived, estimated). The real openai SDK, over the
loopback scripted server."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest

import healjson
from healjson import Degraded
from healjson.testing import ScriptedReply, ScriptedServer
from openai_tools_kit import Search

TEXT = "Let me look the catalogue up for you"
ARGUMENTS = '{"query": "desk lamp", "limit": 5}'
CALL = {"id": "call_1", "type": "function", "function": {"name": "Search", "arguments": ARGUMENTS}}
USER = [{"role": "user", "content": "Find me a lamp."}]
APIS = ["chat", "responses"]
MODES = ["sync", "async"]


def failing(how: str, after: int) -> ScriptedReply:
    """A text-and-call answer whose stream fails (`how`: "cut", the connection dropped;
    "error", the route's in-stream error event) once `after` characters were sent."""
    fail = {"cut_after_chars": after} if how == "cut" else {"stream_error_after_chars": after}
    return ScriptedReply(
        content=TEXT, tool_calls=[CALL], finish_reason="tool_calls", chunk_chars=4, **fail
    )


def stream(server: ScriptedServer, api: str, mode: str) -> tuple[str, Any]:
    """One healed tool-call stream on `api` (the text it showed, its outcome)."""

    def create(client: Any) -> Any:
        tools = {"tools": [Search], "heal_tools": True, "stream": True}
        if api == "chat":
            return client.chat.completions.create(model="m", messages=USER, **tools)
        return client.responses.create(model="m", input=USER, **tools)

    if mode == "sync":
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            made = create(healjson.wrap(sdk))
            shown = "".join(made)
            return shown, made.outcome

    async def main() -> tuple[str, Any]:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            made = await create(healjson.wrap(sdk))
            shown = "".join([piece async for piece in made])
            return shown, made.outcome

    return asyncio.run(main())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("how", ["cut", "error"])
@pytest.mark.parametrize("api", APIS)
def test_a_stream_failing_in_a_call_keeps_the_text_the_call_and_the_usage(
    api: str, how: str, mode: str
) -> None:
    """A stream that fails in its call's arguments keeps on its degraded attempt the text the
    caller was shown, the call's name, id and arguments as far as they came, and a completion
    counted from them."""
    after = len(TEXT) + 12
    with ScriptedServer([failing(how, after)]) as server:
        shown, outcome = stream(server, api, mode)

    assert isinstance(outcome, Degraded)
    assert "api_error" == outcome.reason
    (attempt,) = outcome.attempts
    assert (TEXT, TEXT) == (shown, attempt.raw_text)
    (call,) = attempt.tool_calls
    assert ("Search", "call_1") == (call.name, call.id)
    assert ARGUMENTS.startswith(call.arguments)
    assert 0 < len(call.arguments) < len(ARGUMENTS)
    assert attempt.usage is not None
    assert attempt.usage.estimated
    assert attempt.usage.completion_tokens > 0


@pytest.mark.parametrize("api", APIS)
def test_a_stream_failing_in_its_text_keeps_the_text_shown(api: str) -> None:
    """A stream that fails before any call keeps the text the caller was shown, and no call."""
    with ScriptedServer([failing("cut", 10)]) as server:
        shown, outcome = stream(server, api, "sync")

    (attempt,) = outcome.attempts
    assert shown == attempt.raw_text
    assert shown
    assert TEXT.startswith(shown)
    assert () == tuple(attempt.tool_calls)


def test_the_salvage_is_the_same_on_both_apis() -> None:
    """The degraded attempt of the same failed stream holds the same text, calls and
    completion count on the Responses API as on chat completions."""
    kept = []
    for api in APIS:
        with ScriptedServer([failing("cut", len(TEXT) + 9)]) as server:
            _, outcome = stream(server, api, "sync")
        (attempt,) = outcome.attempts
        calls = [(c.name, c.arguments, c.id) for c in attempt.tool_calls]
        kept.append((attempt.raw_text, calls, attempt.usage.completion_tokens))

    assert kept[0] == kept[1]
    ((name, arguments, _),) = kept[0][1]
    assert "Search" == name
    assert ARGUMENTS.startswith(arguments)
