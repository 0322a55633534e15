"""What a type checker sees of `wrap` for each client family (the generated typed face), and of
the packs `load_contracts` returns (checked by mypy in CI, never run).

`assert_type` fails the mypy run when an inferred type drifts; each `# type: ignore[...]` line is
an error mypy must still report (`warn_unused_ignores` turns a missing error into a failure).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, assert_type

import anthropic
import ollama
import openai
from google import genai
from google.genai.types import GenerateContentResponse
from pydantic import BaseModel

import healjson
from healjson import AsyncHealStream, ContractPack, Healer, HealStream, Outcome, ToolCalls
from healjson._core.run.streams import AsyncToolCallStream, ToolCallStream


class Order(BaseModel):
    total: float


def check_gemini() -> None:
    client = healjson.wrap(genai.Client(api_key="x"))
    assert_type(client.models.generate_content(model="m", contents="x"), GenerateContentResponse)
    assert_type(
        client.models.generate_content(model="m", contents="x", response_model=Order),
        Outcome[Order],
    )
    assert_type(
        client.models.generate_content_stream(model="m", contents="x", response_model=Order),
        HealStream[Order],
    )
    assert_type(
        client.models.generate_content_stream(model="m", contents="x"),
        Iterator[GenerateContentResponse],
    )
    pending = client.aio.models.generate_content(model="m", contents="x", response_model=Order)
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[Order]])
    pending.close()
    assert_type(
        client.aio.models.generate_content_stream(model="m", contents="x", response_model=Order),
        AsyncHealStream[Order],
    )
    raw = client.aio.models.generate_content_stream(model="m", contents="x")
    _ = assert_type(raw, Coroutine[Any, Any, AsyncIterator[GenerateContentResponse]])
    raw.close()


def check_ollama() -> None:
    client = healjson.wrap(ollama.Client())
    assert_type(client.chat(model="m", messages=[], response_model=Order), Outcome[Order])
    assert_type(
        client.chat(model="m", messages=[], response_model=Order, stream=True), HealStream[Order]
    )
    assert_type(
        client.chat(model="m", messages=[], response_model={"type": "object"}), Outcome[Any]
    )
    assert_type(client.chat(model="m", messages=[]), ollama.ChatResponse)
    assert_type(client.chat(model="m", messages=[], stream=True), Iterator[ollama.ChatResponse])
    assert_type(
        client.chat(model="m", messages=[], tools=[Order], heal_tools=True), Outcome[ToolCalls]
    )
    assert_type(
        client.chat(model="m", messages=[], tools=[Order], heal_tools=True, stream=True),
        ToolCallStream,
    )
    aclient = healjson.wrap(ollama.AsyncClient())
    pending = aclient.chat(model="m", messages=[], response_model=Order)
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[Order]])
    pending.close()
    assert_type(
        aclient.chat(model="m", messages=[], response_model=Order, stream=True),
        AsyncHealStream[Order],
    )
    assert_type(
        aclient.chat(model="m", messages=[], tools=[Order], heal_tools=True, stream=True),
        AsyncToolCallStream,
    )
    raw = aclient.chat(model="m", messages=[], stream=True)
    _ = assert_type(raw, Coroutine[Any, Any, AsyncIterator[ollama.ChatResponse]])
    raw.close()


def check_json_mode_is_a_tier() -> None:
    healjson.wrap(openai.OpenAI(api_key="x"), json_mode="constrained")
    healjson.wrap(openai.OpenAI(api_key="x"), json_mode="json_shema")  # type: ignore[call-overload]
    healjson.wrap(anthropic.Anthropic(api_key="x"), json_mode="json_object")
    healjson.wrap(ollama.Client(), json_mode="prompt")
    healjson.wrap(genai.Client(api_key="x"), json_mode="JSON")  # type: ignore[call-overload]
    client = healjson.wrap(openai.OpenAI(api_key="x"))
    client.chat.completions.create(
        model="m",
        messages=[],
        response_model=Order,
        json_mode="prompt",
    )
    client.chat.completions.create(  # type: ignore[call-overload]
        model="m",
        messages=[],
        response_model=Order,
        json_mode="promt",
    )


def check_packs_are_generic() -> None:
    pack = ContractPack(Order)
    assert_type(pack, ContractPack[Order])
    assert_type(pack.model, type[Order])
    assert_type(pack.healer(), Healer[Order])
    loaded = healjson.load_contracts("invoice")
    assert_type(loaded, ContractPack[Any])
    assert_type(ContractPack({"type": "object"}), ContractPack[Any])


def check_context_managers() -> None:
    with healjson.wrap(openai.OpenAI(api_key="x")) as chat:
        assert_type(
            chat.chat.completions.create(model="m", messages=[], response_model=Order),
            Outcome[Order],
        )
    with healjson.wrap(anthropic.Anthropic(api_key="x")) as claude:
        assert_type(
            claude.messages.create(model="m", max_tokens=1, messages=[], response_model=Order),
            Outcome[Order],
        )
    with healjson.wrap(openai.AsyncOpenAI(api_key="x")):  # type: ignore[attr-defined]
        pass


async def check_async_context_managers() -> None:
    async with healjson.wrap(openai.AsyncOpenAI(api_key="x")) as chat:
        pending = chat.chat.completions.create(model="m", messages=[], response_model=Order)
        _ = assert_type(pending, Coroutine[Any, Any, Outcome[Order]])
    async with healjson.wrap(ollama.AsyncClient()) as local:
        answer = local.chat(model="m", messages=[], response_model=Order)
        _ = assert_type(answer, Coroutine[Any, Any, Outcome[Order]])
