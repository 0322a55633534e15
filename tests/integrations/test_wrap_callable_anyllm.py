"""`healjson.wrap_callable` over any-llm's `completion` / `acompletion`, a real third-party
chat-completion function.

any-llm (`any-llm-sdk`, a dev-only dependency pinned exactly in pyproject.toml) is called with
its openai provider and `api_base` pointing at the scripted loopback server: every call is a real
HTTP request through any-llm and the openai SDK, and what comes back is any-llm's own
`ChatCompletion` (a subclass of the openai type) or its chunk iterator, sync and async.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Reason
from healjson.testing import ScriptedServer

any_llm = pytest.importorskip("any_llm")
from any_llm.utils.aio import run_async_in_sync  # noqa: E402

USER = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
GOOD = '{"name": "Ann", "age": 31}'


class Person(BaseModel):
    name: str
    age: int


def call_kwargs(server: ScriptedServer, http_client: Any) -> dict[str, Any]:
    """any-llm's own arguments: the openai provider at the scripted server, no retries, over an
    HTTP client the test closes (any-llm makes a provider client per call and never closes it)."""
    return {
        "model": "gpt-test",
        "provider": "openai",
        "api_base": server.base_url,
        "api_key": "sk-test",
        "client_args": {"max_retries": 0, "http_client": http_client},
        "messages": USER,
    }


def run(server: ScriptedServer, runner: str, *, streamed: bool = False, **extra: Any) -> Any:
    """One healed call through `wrap_callable(any_llm.completion)` (or `acompletion`): the
    outcome, or for a stream `(stream, outcome, partials)`."""
    if runner == "async":
        healed = healjson.wrap_callable(any_llm.acompletion)
        assert healed.is_async

        async def go() -> Any:
            async with openai.DefaultAsyncHttpxClient() as http_client:
                kwargs = call_kwargs(server, http_client) | extra
                if streamed:
                    async with healed(stream=True, **kwargs) as stream:
                        partials = [partial async for partial in stream]
                    return stream, stream.outcome, partials
                return await healed(**kwargs)

        return asyncio.run(go())
    healed = healjson.wrap_callable(any_llm.completion)
    assert not healed.is_async
    # any-llm's sync functions run its async client on a loop of its own: closed there
    http_client = openai.DefaultAsyncHttpxClient()
    kwargs = call_kwargs(server, http_client) | extra
    try:
        if streamed:
            with healed(stream=True, **kwargs) as stream:
                partials = list(stream)
            return stream, stream.outcome, partials
        return healed(**kwargs)
    finally:
        run_async_in_sync(http_client.aclose())


RUNNERS = pytest.mark.parametrize("runner", ["sync", "async"])


@RUNNERS
def test_happy_path_heals_in_one_call(scripted_server: ScriptedServer, runner: str) -> None:
    """`wrap_callable(any_llm.completion)` heals a clean answer in one call to the chat route,
    with usage."""
    scripted_server.push(GOOD)

    outcome = run(scripted_server, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 1 == outcome.calls
    assert outcome.usage.total_tokens > 0
    [request] = scripted_server.requests
    assert "/v1/chat/completions" == request.path
    assert "json_schema" == (request.response_format or {}).get("type")
    assert USER == request.messages


@RUNNERS
@pytest.mark.parametrize(
    "text", [f"```json\n{GOOD}\n```", f"Sure! Here is the person: {GOOD} Hope that helps."]
)
def test_fenced_or_prose_json_heals_locally_in_one_call(
    scripted_server: ScriptedServer, runner: str, text: str
) -> None:
    """Over any-llm, a fenced or prose-wrapped answer heals locally in one call."""
    scripted_server.push(text)

    outcome = run(scripted_server, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 1 == outcome.calls
    assert 1 == len(scripted_server.requests)


@RUNNERS
def test_schema_violation_is_repaired_in_a_second_call_carrying_the_diagnostic(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """Over any-llm, a schema violation is repaired by a second call carrying the diagnostic."""
    scripted_server.extend(['{"name": "Ann"}', GOOD])

    outcome = run(scripted_server, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 2 == outcome.calls
    first, repair = scripted_server.requests
    assert len(repair.messages) > len(first.messages)
    assert USER == repair.messages[: len(USER)]
    said = repair.messages[-1]
    assert "user" == said["role"]
    assert "age" in str(said["content"])
    assert '{"name": "Ann"}' == repair.messages[-2]["content"]  # the bad answer, as said


@RUNNERS
def test_nothing_repairable_degrades_after_the_repair_budget(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """Over any-llm, prose with no answer degrades after the repair budget, never as `api_error`."""
    scripted_server.extend(["I cannot help with that."] * 5)

    outcome = run(scripted_server, runner, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR != outcome.reason
    assert outcome.calls == len(scripted_server.requests) >= 2


@RUNNERS
@pytest.mark.parametrize(
    ("replies", "calls"),
    [([f"Here: {GOOD}"], 1), (['{"name": "Ann"}', GOOD], 2)],
    ids=["local", "repair"],
)
def test_streamed_gives_the_healed_stream_with_its_outcome(
    scripted_server: ScriptedServer, runner: str, replies: list[str], calls: int
) -> None:
    """Over any-llm, `stream=True` gives a healed stream with snapshots and its outcome, healed
    locally or by a repair."""
    scripted_server.extend(replies)

    stream, outcome, partials = run(scripted_server, runner, streamed=True, response_model=Person)

    expected = healjson.AsyncHealStream if runner == "async" else healjson.HealStream
    assert isinstance(stream, expected)
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert calls == outcome.calls == len(scripted_server.requests)
    assert partials
    assert all(request.streamed for request in scripted_server.requests)
    assert all((request.body or {}).get("stream") is True for request in scripted_server.requests)


@RUNNERS
def test_without_response_model_any_llm_answers_unchanged(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """Without `response_model`, any-llm's own `ChatCompletion` comes back and no response format
    is sent."""
    scripted_server.push("just text")

    result = run(scripted_server, runner, temperature=0)

    assert isinstance(result, any_llm.types.completion.ChatCompletion)
    assert "just text" == result.choices[0].message.content
    [request] = scripted_server.requests
    assert request.response_format is None
    assert 0 == (request.body or {}).get("temperature")


def test_passthrough_stream_is_any_llms_own_iterator(scripted_server: ScriptedServer) -> None:
    """Without `response_model`, a streamed call returns any-llm's own chunk iterator."""
    scripted_server.push("just text")
    healed: Callable[..., Any] = healjson.wrap_callable(any_llm.completion)
    http_client = openai.DefaultAsyncHttpxClient()
    try:
        chunks = list(healed(stream=True, **call_kwargs(scripted_server, http_client)))
    finally:
        run_async_in_sync(http_client.aclose())

    assert "just text" == "".join(
        chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices
    )
