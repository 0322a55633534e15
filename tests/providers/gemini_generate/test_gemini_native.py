"""`healjson.wrap(genai.Client())`: `models.generate_content(response_model=M)`, and through `aio`.

Each test drives the real `google-genai` SDK over HTTP to the scripted server on 127.0.0.1 (its
`generateContent` routes), sync and async, streamed and not. google-genai does not retry
without `retry_options`, so the server's request count is exactly healjson's model calls.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, Reason
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS, close_gemini

GOOD = '{"name": "Ann", "age": 31}'
PROMPT = "Ann is 31. Extract the person as JSON."


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[False, True], ids=["whole", "streamed"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return request.param  # type: ignore[no-any-return]


def _options(
    server: ScriptedServer, session: aiohttp.ClientSession | None = None
) -> genai_types.HttpOptions:
    return genai_types.HttpOptions(
        base_url=server.gemini_base_url,
        timeout=10_000,
        client_args={"verify": TLS},
        async_client_args={"ssl": TLS},
        aiohttp_client=session,
    )


def ask(
    server: ScriptedServer,
    runner: str = "sync",
    streamed: bool = False,
    *,
    json_mode: str = "json_schema",
    **kwargs: Any,
) -> Any:
    kwargs.setdefault("model", "gemini-test")
    kwargs.setdefault("contents", PROMPT)
    kwargs.setdefault("response_model", Person)
    if runner == "async":

        async def go() -> Any:
            async with aiohttp.ClientSession() as session:
                client = genai.Client(api_key="test-key", http_options=_options(server, session))
                try:
                    models = healjson.wrap(client, json_mode=json_mode).aio.models
                    if streamed:
                        async with models.generate_content_stream(**kwargs) as stream:
                            async for _ in stream:
                                pass
                        return stream.outcome
                    return await models.generate_content(**kwargs)
                finally:
                    await client.aio.aclose()
                    client.close()

        return asyncio.run(go())
    client = genai.Client(api_key="test-key", http_options=_options(server))
    try:
        models = healjson.wrap(client, json_mode=json_mode).models
        if streamed:
            with models.generate_content_stream(**kwargs) as stream:
                for _ in stream:
                    pass
            return stream.outcome
        return models.generate_content(**kwargs)
    finally:
        close_gemini(client)


def config_of(server: ScriptedServer, index: int = 0) -> dict[str, Any]:
    return (server.requests[index].body or {}).get("generationConfig") or {}


def test_native_json_schema_tier(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A wrapped Gemini client first asks with the JSON mime type and the model's schema as
    `responseJsonSchema`."""
    scripted_server.push(GOOD)

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    config = config_of(scripted_server)
    assert "application/json" == config["responseMimeType"]
    assert Person.model_json_schema() == config["responseJsonSchema"]


def test_json_mime_and_prompt_tiers(scripted_server: ScriptedServer) -> None:
    """Gemini's `json_object` tier sends the mime type with the schema in the system instruction,
    and the prompt tier only the system instruction."""
    scripted_server.extend([GOOD, GOOD])

    assert isinstance(ask(scripted_server, json_mode="json_object"), Healed)
    assert isinstance(ask(scripted_server, json_mode="prompt"), Healed)

    first, second = scripted_server.requests
    assert "application/json" == config_of(scripted_server, 0)["responseMimeType"]
    assert "responseJsonSchema" not in config_of(scripted_server, 0)
    assert '"age"' in first.system
    assert "responseMimeType" not in config_of(scripted_server, 1)
    assert '"age"' in second.system


REFUSE_SCHEMA = ScriptedReply.error(400, "response_json_schema is not supported for this model")


def test_refused_tier_steps_down_in_one_call(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A Gemini endpoint that refuses `responseJsonSchema` is asked again with the mime type
    alone, in the same attempt."""
    scripted_server.extend([REFUSE_SCHEMA, GOOD])

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert "responseJsonSchema" in config_of(scripted_server, 0)
    assert "responseJsonSchema" not in config_of(scripted_server, 1)
    assert "application/json" == config_of(scripted_server, 1)["responseMimeType"]


def test_callers_config_and_system_instruction_are_kept(scripted_server: ScriptedServer) -> None:
    """The caller's Gemini config (system instruction, temperature, output tokens) is kept in the
    request."""
    scripted_server.push(f"```json\n{GOOD}\n```")
    config = genai_types.GenerateContentConfig(
        system_instruction="You are terse.", temperature=0.0, max_output_tokens=64
    )

    outcome = ask(scripted_server, config=config)

    assert isinstance(outcome, Healed)
    request = scripted_server.requests[0]
    assert "You are terse." in request.system
    assert 64 == request.max_tokens
    assert 0.0 == config_of(scripted_server)["temperature"]


def test_repair_round_keeps_the_original_contents(scripted_server: ScriptedServer) -> None:
    """A Gemini repair round keeps the original contents, then the model's answer, then the
    repair message."""
    scripted_server.extend(['{"name": "Ann"}', GOOD])
    contents = [genai_types.Content(role="user", parts=[genai_types.Part(text=PROMPT)])]

    outcome = ask(scripted_server, contents=contents)

    assert isinstance(outcome, Healed)
    sent = (scripted_server.requests[1].body or {})["contents"]
    assert [{"text": PROMPT}] == sent[0]["parts"]
    assert "model" == sent[1]["role"]
    assert len(sent) == 3


def test_truncation_raises_max_output_tokens(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A cut Gemini answer is repaired with `max_output_tokens` doubled."""
    scripted_server.extend([ScriptedReply('{"name": "An', finish_reason="length"), GOOD])

    outcome = ask(
        scripted_server,
        runner,
        streamed,
        config={"max_output_tokens": 64},
        policy=HealPolicy(on_truncation="raise_max_tokens"),
    )

    assert isinstance(outcome, Healed)
    assert 64 == scripted_server.requests[0].max_tokens
    assert 128 == scripted_server.requests[1].max_tokens


def test_safety_stop_degrades(scripted_server: ScriptedServer, runner: str) -> None:
    """A Gemini safety stop degrades with `content_filter` after one request."""
    scripted_server.push(ScriptedReply('{"name": "An', finish_reason="content_filter"))

    outcome = ask(scripted_server, runner)

    assert isinstance(outcome, Degraded)
    assert Reason.CONTENT_FILTER == outcome.reason
    assert 1 == len(scripted_server.requests)


def test_without_response_model_everything_passes_through(
    scripted_server: ScriptedServer,
) -> None:
    """Without `response_model`, a wrapped Gemini client returns the SDK's own response."""
    scripted_server.push("hello")
    client = genai.Client(api_key="test-key", http_options=_options(scripted_server))
    try:
        response = healjson.wrap(client).models.generate_content(model="gemini-test", contents="hi")
    finally:
        close_gemini(client)
    assert isinstance(response, genai_types.GenerateContentResponse)
    assert "hello" == response.text


def test_text_contents_reach_the_sdk_as_given(scripted_server: ScriptedServer) -> None:
    """Text `contents` reach the SDK as the caller gave them on every call, repairs aside."""
    scripted_server.extend([GOOD, '{"name": "Ann"}', GOOD])
    client = genai.Client(api_key="test-key", http_options=_options(scripted_server))
    seen: list[Any] = []
    original = client.models.generate_content

    def spy(**kwargs: Any) -> Any:
        seen.append(kwargs["contents"])
        return original(**kwargs)

    try:
        client.models.generate_content = spy  # type: ignore[method-assign]
        healed = healjson.wrap(client).models
        first = healed.generate_content(model="gemini-test", contents=PROMPT, response_model=Person)
        again = healed.generate_content(model="gemini-test", contents=PROMPT, response_model=Person)
    finally:
        close_gemini(client)

    assert isinstance(first, Healed)
    assert isinstance(again, Healed)
    assert PROMPT == seen[0]  # the caller's text, as google-genai reads it
    sent = [(request.body or {})["contents"] for request in scripted_server.requests]
    assert [{"role": "user", "parts": [{"text": PROMPT}]}] == sent[0]
    assert [{"text": PROMPT}] == sent[2][0]["parts"]  # a repair round: the text comes first
    assert "model" == sent[2][1]["role"]
    assert 3 == len(sent[2])
