"""`healjson.wrap_callable(fn)`: a chat-completion function (LiteLLM's `completion` shape) heals.

Two kinds of function stand in for LiteLLM (which is not installed): plain functions returning
OpenAI-shaped dicts (and dict chunks), and functions calling the real `openai` SDK over HTTP to
the scripted server and returning what it returns — sync and async, streamed and not.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson.testing import ScriptedServer
from sdk_calls import TLS

USER = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
GOOD = '{"name": "Ann", "age": 31}'


class Person(BaseModel):
    name: str
    age: int


def completion_dict(text: str, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class Recorder:
    """A function returning scripted dict completions, recording its keyword arguments."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_plain_function_returning_dicts_heals_locally() -> None:
    """A plain function returning completion dicts heals a fenced answer in one call, asked for
    strict JSON with the caller's messages."""
    fn = Recorder(completion_dict(f"```json\n{GOOD}\n```"))

    outcome = healjson.wrap_callable(fn)(model="m", messages=USER, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 15 == outcome.usage.total_tokens
    [call] = fn.calls
    assert "json_schema" == call["response_format"]["type"]
    assert USER == call["messages"]


def test_plain_function_repair_round_and_create_alias() -> None:
    """`wrap_callable(fn).create` repairs a missing field with a second call that carries more
    messages."""
    fn = Recorder(completion_dict('{"name": "Ann"}'), completion_dict(GOOD))

    outcome = healjson.wrap_callable(fn).create(model="m", messages=USER, response_model=Person)

    assert isinstance(outcome, Healed)
    assert 2 == len(fn.calls)
    assert len(fn.calls[1]["messages"]) > len(USER)


class FormatRejected(Exception):
    """A gateway's HTTP 400 (it names the parameter it refuses)."""

    status_code = 400


def test_rejected_response_format_steps_down_and_is_remembered() -> None:
    """A function that rejects the strict format is asked again in JSON mode, and the next call
    starts there."""
    rejected = FormatRejected("response_format json_schema is not supported by this model")
    fn = Recorder(rejected, completion_dict(GOOD), completion_dict(GOOD))
    healed = healjson.wrap_callable(fn)

    first = healed(model="m", messages=USER, response_model=Person)
    second = healed(model="m", messages=USER, response_model=Person)

    assert isinstance(first, Healed)
    assert isinstance(second, Healed)
    assert {"type": "json_object"} == fn.calls[1]["response_format"]
    assert {"type": "json_object"} == fn.calls[2]["response_format"]


def test_without_response_model_the_function_is_called_as_is() -> None:
    """Without `response_model`, the function is called with the caller's arguments and its
    result returned as is."""
    fn = Recorder("anything")

    assert "anything" == healjson.wrap_callable(fn)(model="m", messages=USER, temperature=0)
    assert [{"model": "m", "messages": USER, "temperature": 0}] == fn.calls


def test_a_function_returning_no_completion_is_the_callers_bug() -> None:
    """A function that returns text instead of a completion is the caller's code gone wrong:
    a `TypeError` saying what it must return, not the endpoint's `api_error`."""
    fn = Recorder("<html>bad gateway</html>")

    with pytest.raises(TypeError, match="must return an OpenAI-shaped chat completion"):
        healjson.wrap_callable(fn)(model="m", messages=USER, response_model=Person)


def dict_chunks(text: str) -> Iterator[dict[str, Any]]:
    for piece in (text[:7], text[7:]):
        delta = {"content": piece}
        yield {"object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}  # fmt: skip
    yield {"object": "chat.completion.chunk", "model": "m",
           "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}  # fmt: skip


def test_plain_function_streaming_dict_chunks() -> None:
    """A plain function streaming chunk dicts gives a healed stream whose snapshots and outcome
    heal prose around the answer."""
    calls: list[dict[str, Any]] = []

    def fn(**kwargs: Any) -> Iterator[dict[str, Any]]:
        calls.append(kwargs)
        return dict_chunks(f"Here: {GOOD}")

    stream = healjson.wrap_callable(fn)(
        model="m", messages=USER, response_model=Person, stream=True
    )
    with stream:
        partials = list(stream)

    assert partials
    assert isinstance(stream.outcome, Healed)
    assert Person(name="Ann", age=31) == stream.outcome.value
    assert calls[0]["stream"] is True


def test_async_flag_for_a_function_whose_decorator_hides_async() -> None:
    """`async_=True` marks a function that returns a coroutine without being a coroutine function
    as async, and its call is awaited."""

    async def inner(**kwargs: Any) -> dict[str, Any]:
        return completion_dict(GOOD)

    def hidden(**kwargs: Any) -> Any:  # returns a coroutine, but is not a coroutine function
        return inner(**kwargs)

    healed = healjson.wrap_callable(hidden, async_=True)
    outcome = asyncio.run(healed(model="m", messages=USER, response_model=Person))

    assert isinstance(outcome, Healed)
    assert healed.is_async


# -- a LiteLLM-like function over the real openai SDK and HTTP ---------------------------------


def sdk_completion(server: ScriptedServer, **kwargs: Any) -> Any:
    """`litellm.completion`'s shape: keyword arguments in, an OpenAI-shaped completion out."""
    with openai.OpenAI(
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=TLS),
    ) as client:
        result = client.chat.completions.create(**kwargs)
        if kwargs.get("stream"):
            return list(result)  # read before the client closes
        return result


async def sdk_acompletion(server: ScriptedServer, **kwargs: Any) -> Any:
    """`litellm.acompletion`'s shape."""
    async with openai.AsyncOpenAI(
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=TLS),
    ) as client:
        result = await client.chat.completions.create(**kwargs)
        if kwargs.get("stream"):
            return [chunk async for chunk in result]
        return result


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("runner", ["sync", "async"])
def test_function_over_the_openai_sdk(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A bad first answer is repaired in a second call, each a real HTTP request."""
    scripted_server.extend(['{"name": "Ann"}', GOOD])
    kwargs: dict[str, Any] = {"model": "gpt-test", "messages": USER, "response_model": Person}
    if runner == "async":
        healed = healjson.wrap_callable(functools.partial(sdk_acompletion, scripted_server))

        async def go() -> Any:
            if streamed:
                async with healed(stream=True, **kwargs) as stream:
                    async for _ in stream:
                        pass
                return stream.outcome
            return await healed(**kwargs)

        assert healed.is_async
        outcome = asyncio.run(go())
    else:
        healed = healjson.wrap_callable(functools.partial(sdk_completion, scripted_server))
        if streamed:
            with healed(stream=True, **kwargs) as stream:
                for _ in stream:
                    pass
            outcome = stream.outcome
        else:
            outcome = healed(**kwargs)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 2 == len(scripted_server.requests)
    assert "json_schema" == (scripted_server.requests[0].response_format or {}).get("type")
