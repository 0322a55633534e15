"""A healed call asks for one answer: `n=` (chat) or `candidate_count=` (Gemini) above 1 is
refused with a `TypeError` before any request, as the answers past the first would be dropped
unread; 1 (or leaving it out) heals as usual.

The real openai and google-genai SDKs run over HTTP against the scripted server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson.testing import ScriptedServer
from pinned import pinned
from sdk_calls import TLS, close_gemini

GOOD = '{"name": "Ann", "age": 31}'
SAID = [{"role": "user", "content": "Ann is 31"}]
TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


class Person(BaseModel):
    name: str
    age: int


def _chat(server: ScriptedServer, **kwargs: Any) -> Any:
    with openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0) as client:
        return healjson.wrap(client).chat.completions.create(model="m", messages=SAID, **kwargs)


def _gemini(server: ScriptedServer, config: Any) -> Any:
    options = genai_types.HttpOptions(
        base_url=server.gemini_base_url, timeout=10_000, client_args={"verify": TLS}
    )
    client = genai.Client(api_key="test-key", http_options=options)
    try:
        return healjson.wrap(client).models.generate_content(
            model="gemini-test", contents="Ann is 31", config=config, response_model=Person
        )
    finally:
        close_gemini(client)


@pinned(max_examples=10)
@given(n=st.integers(min_value=2, max_value=128) | st.integers(max_value=0))
def test_chat_refuses_several_answers_before_any_request(
    shared_server: ScriptedServer, n: int
) -> None:
    """`n` other than 1 with `response_model=` raises TypeError naming `n`, and sends nothing."""
    before = len(shared_server.requests)

    with pytest.raises(TypeError, match=rf"n={n}\b.*one answer per call"):
        _chat(shared_server, response_model=Person, n=n)

    assert len(shared_server.requests) == before


@pytest.mark.parametrize("extra", [{"stream": True}, {"heal_tools": True, "tools": [TOOL]}])
def test_streams_and_tool_calls_refuse_several_answers_too(
    shared_server: ScriptedServer, extra: dict[str, Any]
) -> None:
    """A streamed healed call and a `heal_tools=True` call refuse `n=3` alike."""
    if "heal_tools" not in extra:
        extra = {**extra, "response_model": Person}

    with pytest.raises(TypeError, match="n=3"):
        _chat(shared_server, n=3, **extra)


@pytest.mark.parametrize("method", ["parse", "stream"])
@pytest.mark.parametrize(
    "asked", [{"n": 3}, {"extra_body": {"n": 2}}, {"n": True}], ids=["n", "extra_body", "bool"]
)
def test_every_healed_chat_method_refuses_several_answers_however_asked(
    shared_server: ScriptedServer, method: str, asked: dict[str, Any]
) -> None:
    """The SDK's own `parse` and `stream` with a type, and `n` given in `extra_body` or as
    `True`, are refused as `create(n=3)` is, before any request."""
    before = len(shared_server.requests)

    with openai.OpenAI(base_url=shared_server.base_url, api_key="k", max_retries=0) as client:
        call = getattr(healjson.wrap(client).chat.completions, method)
        with pytest.raises(TypeError, match="one answer per call"):
            call(model="m", messages=SAID, response_format=Person, **asked)

    assert len(shared_server.requests) == before


def test_create_refuses_n_in_extra_body(shared_server: ScriptedServer) -> None:
    """`extra_body={"n": 2}` on `create(response_model=...)` is refused too."""
    with pytest.raises(TypeError, match="n=2"):
        _chat(shared_server, response_model=Person, extra_body={"n": 2})


def test_an_async_client_refuses_several_answers(shared_server: ScriptedServer) -> None:
    """`AsyncOpenAI` refuses `n=2` at the call, as the sync client does."""

    async def go() -> None:
        client = openai.AsyncOpenAI(base_url=shared_server.base_url, api_key="k", max_retries=0)
        async with client:
            healjson.wrap(client).chat.completions.create(
                model="m", messages=SAID, response_model=Person, n=2
            )

    with pytest.raises(TypeError, match="n=2"):
        asyncio.run(go())


def test_a_wrapped_function_refuses_several_answers() -> None:
    """`wrap_callable(fn)` refuses `n=2` without calling `fn`."""
    called: list[dict[str, Any]] = []

    def completion(**request: Any) -> str:
        called.append(request)
        return GOOD

    with pytest.raises(TypeError, match="n=2"):
        healjson.wrap_callable(completion)(model="m", messages=SAID, response_model=Person, n=2)

    assert called == []


@pytest.mark.parametrize("n", [None, 1])
def test_one_answer_asked_heals_as_usual(shared_server: ScriptedServer, n: int | None) -> None:
    """`n=1`, or no `n`, heals and is sent to the provider as the caller wrote it."""
    shared_server.extend([GOOD])
    extra = {} if n is None else {"n": n}

    outcome = _chat(shared_server, response_model=Person, **extra)

    assert isinstance(outcome, Healed)
    assert outcome.value == Person(name="Ann", age=31)
    assert shared_server.requests[-1].body.get("n") == n


@pytest.mark.parametrize(
    "config",
    [
        {"candidate_count": 2},
        {"candidateCount": 3},
        genai_types.GenerateContentConfig(candidate_count=4),
    ],
    ids=["dict", "camel", "config"],
)
def test_gemini_refuses_several_candidates_before_any_request(
    shared_server: ScriptedServer, config: Any
) -> None:
    """`candidate_count` above 1, in a dict or a `GenerateContentConfig`, raises TypeError and
    sends nothing."""
    before = len(shared_server.requests)

    with pytest.raises(TypeError, match=r"candidate_?[cC]ount=.*one answer per call"):
        _gemini(shared_server, config)

    assert len(shared_server.requests) == before


def test_gemini_one_candidate_heals(shared_server: ScriptedServer) -> None:
    """`candidate_count=1` heals as a call without it does."""
    shared_server.extend([GOOD])

    outcome = _gemini(shared_server, {"candidate_count": 1})

    assert isinstance(outcome, Healed)
    assert outcome.value.age == 31
