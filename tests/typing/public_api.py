"""What a type checker sees at each public entry point (checked by mypy in CI, never run).

`assert_type` fails the mypy run when an inferred type drifts; each `# type: ignore[...]` line is
an error mypy must still report (`warn_unused_ignores` turns a missing error into a failure).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, Literal, assert_type

import openai
from pydantic import BaseModel

import healjson
from healjson import (
    AsyncHealStream,
    Contract,
    ContractContext,
    Degraded,
    Healed,
    Healer,
    HealStream,
    Outcome,
    Partial,
    Violation,
)


class Order(BaseModel):
    total: float


class Ticket(BaseModel):
    urgency: str


@healjson.contract(fields=("total",))
def positive(order: Order) -> Violation | None:
    return None if order.total > 0 else Violation("total must be positive")


@healjson.contract(fields=("urgency",))
def known_urgency(ticket: Ticket, ctx: ContractContext) -> Violation | None:
    return None


def model_call(messages: Any, **params: Any) -> str:
    return '{"total": 1}'


async def amodel_call(messages: Any, **params: Any) -> str:
    return '{"total": 1}'


def check_contracts() -> None:
    assert_type(positive, Contract[Order])
    assert_type(known_urgency, Contract[Ticket])
    Healer(Order, contracts=[positive])
    Healer(Order, contracts=[known_urgency])  # type: ignore[list-item]
    healjson.validate("{}", Order, contracts=[known_urgency])  # type: ignore[list-item]


def check_validate_and_healer() -> None:
    outcome = healjson.validate('{"total": 1}', Order)
    assert_type(outcome, Healed[Order] | Degraded[Order])
    if isinstance(outcome, Healed):
        assert_type(outcome.value, Order)
    assert_type(healjson.validate("[]", Literal["a", "b"]), Outcome[Any])
    schema: dict[str, Any] = {"type": "object", "properties": {"total": {"type": "number"}}}
    assert_type(healjson.validate('{"total": 1}', schema), Outcome[Any])
    assert_type(healjson.validate("{}", {"type": "object"}), Outcome[Any])
    assert_type(Healer(schema), Healer[Any])
    assert_type(Healer(schema).run(model_call, "total?"), Outcome[Any])
    healer = Healer(Order)
    assert_type(healer, Healer[Order])
    assert_type(healer.run(model_call, "total?"), Outcome[Order])
    pending = healer.arun(amodel_call, "total?")
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[Order]])
    pending.close()


def check_decorator() -> None:
    @healjson.heal(Order)
    def extract(messages: list[dict[str, str]], **params: object) -> str:
        return '{"total": 1}'

    # (a parameter typed `Any` makes both decorator overloads match, and mypy then says Any)
    @healjson.heal(Order)
    async def aextract(messages: list[dict[str, str]], **params: object) -> str:
        return '{"total": 1}'

    @healjson.heal(Order, call=model_call)
    def prompt(topic: str, *, lang: str = "en") -> str:
        return f"the order for {topic}"

    assert_type(extract("total?"), Outcome[Order])

    @healjson.heal({"type": "object"})
    def extract_any(messages: list[dict[str, str]], **params: object) -> str:
        return "{}"

    assert_type(extract_any("total?"), Outcome[Any])
    assert_type(asyncio.run(aextract("total?")), Outcome[Order])
    assert_type(prompt("a pen", lang="de"), Outcome[Order])
    prompt(3)  # type: ignore[arg-type]


def check_wrap() -> None:
    client = healjson.wrap(openai.OpenAI(api_key="x"))
    outcome = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "total?"}], response_model=Order
    )
    assert_type(outcome, Outcome[Order])
    aclient = healjson.wrap(openai.AsyncOpenAI(api_key="x"))
    pending = aclient.chat.completions.create(
        model="m", messages=[], response_model=Order, contracts=[positive]
    )
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[Order]])
    pending.close()
    client.chat.completions.create(
        model="m",
        messages=[],
        response_model=Order,
        contracts=[known_urgency],  # type: ignore[list-item]
    )
    client.models.list()  # everything else is the wrapped client's
    schema: dict[str, Any] = {"type": "object", "properties": {"total": {"type": "number"}}}
    assert_type(
        client.chat.completions.create(model="m", messages=[], response_model=schema),
        Outcome[Any],
    )
    assert_type(
        client.chat.completions.create(
            model="m", messages=[], response_model={"type": "array"}, stream=True
        ),
        HealStream[Any],
    )
    from_schema = aclient.chat.completions.create(model="m", messages=[], response_model=schema)
    _ = assert_type(from_schema, Coroutine[Any, Any, Outcome[Any]])
    from_schema.close()


def stream_call(messages: Any, **params: Any) -> Iterator[str]:
    return iter(['{"total": 1}'])


async def astream_call(messages: Any, **params: Any) -> AsyncIterator[str]:
    return stream_call(messages)  # type: ignore[return-value]


def takes_order(order: Order) -> None:
    pass


def check_streams() -> None:
    healer = Healer(Order)
    stream = healer.stream(stream_call, "total?")
    assert_type(stream, HealStream[Order])
    for snapshot in stream:
        assert_type(snapshot, Partial[Order])
        assert_type(snapshot.total, Any)  # any field reads as Any (it may be missing)
        assert_type(Partial.data_of(snapshot), Any)  # the snapshot's own, whatever the fields
        assert_type(Partial.is_complete(snapshot), bool)
        takes_order(snapshot)  # type: ignore[arg-type]  # a snapshot is never an Order
    assert_type(stream.outcome, Outcome[Order])
    assert_type(healer.astream(astream_call, "total?"), AsyncHealStream[Order])

    @healjson.heal(Order, stream=True)
    def extract(messages: list[dict[str, str]], **params: object) -> Iterator[str]:
        return iter(['{"total": 1}'])

    assert_type(extract("total?"), HealStream[Order])
    client = healjson.wrap(openai.OpenAI(api_key="x"))
    streamed = client.chat.completions.create(
        model="m", messages=[], response_model=Order, stream=True
    )
    assert_type(streamed, HealStream[Order])
    aclient = healjson.wrap(openai.AsyncOpenAI(api_key="x"))
    astreamed = aclient.chat.completions.create(
        model="m", messages=[], response_model=Order, stream=True
    )
    assert_type(astreamed, AsyncHealStream[Order])


def check_responses() -> None:
    client = healjson.wrap(openai.OpenAI(api_key="x"))
    assert_type(
        client.responses.create(model="m", input="total?", response_model=Order), Outcome[Order]
    )
    assert_type(
        client.responses.parse(model="m", input="x", text_format=Order),
        openai.types.responses.ParsedResponse[Order],
    )
    assert_type(
        client.responses.create(model="m", input="x", response_model=Order, stream=True),
        HealStream[Order],
    )
    assert_type(
        client.responses.stream(model="m", input="x", text_format=Order),
        openai.lib.streaming.responses.ResponseStreamManager[Order],
    )
    assert_type(
        client.chat.completions.parse(model="m", messages=[], response_format=Order),
        openai.types.chat.ParsedChatCompletion[Order],
    )
    assert_type(
        client.chat.completions.stream(model="m", messages=[], response_format=Order),
        openai.lib.streaming.chat.ChatCompletionStreamManager[Order],
    )
    aclient = healjson.wrap(openai.AsyncOpenAI(api_key="x"))
    pending = aclient.responses.create(model="m", input="x", response_model=Order)
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[Order]])
    pending.close()
    assert_type(
        aclient.responses.stream(model="m", input="x", text_format=Order),
        openai.lib.streaming.responses.AsyncResponseStreamManager[Order],
    )


def check_wrap_anthropic_and_functions() -> None:
    import anthropic

    client = healjson.wrap(anthropic.Anthropic(api_key="x"))
    outcome = client.messages.create(
        model="m", max_tokens=64, messages=[], response_model=Order, contracts=[positive]
    )
    assert_type(outcome, Outcome[Order])
    assert_type(
        client.messages.stream(model="m", max_tokens=64, messages=[], response_model=Order),
        HealStream[Order],
    )
    assert_type(
        client.messages.parse(model="m", max_tokens=64, messages=[], output_format=Order),
        anthropic.types.ParsedMessage[Order],
    )
    assert_type(
        client.messages.stream(model="m", max_tokens=64, messages=[], output_format=Order),
        anthropic.lib.streaming.MessageStreamManager[Order],
    )
    aclient = healjson.wrap(anthropic.AsyncAnthropic(api_key="x"))
    pending = aclient.messages.create(model="m", max_tokens=64, messages=[], response_model=Order)
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[Order]])
    pending.close()
    assert_type(
        aclient.messages.stream(model="m", max_tokens=64, messages=[], output_format=Order),
        anthropic.lib.streaming.AsyncMessageStreamManager[Order],
    )
    beta = client.beta.messages
    assert_type(
        beta.create(model="m", max_tokens=64, messages=[], response_model=Order, betas=["b"]),
        Outcome[Order],
    )
    assert_type(
        beta.parse(model="m", max_tokens=64, messages=[], output_format=Order),
        anthropic.types.beta.parsed_beta_message.ParsedBetaMessage[Order],
    )
    assert_type(
        beta.stream(model="m", max_tokens=64, messages=[], output_format=Order),
        anthropic.lib.streaming.BetaMessageStreamManager[Order],
    )
    assert_type(
        aclient.beta.messages.stream(model="m", max_tokens=64, messages=[], output_format=Order),
        anthropic.lib.streaming.BetaAsyncMessageStreamManager[Order],
    )

    def completion(**kwargs: Any) -> dict[str, Any]:
        return {}

    async def acompletion(**kwargs: object) -> dict[str, object]:  # (with Any in it: Any)
        return {}

    healed = healjson.wrap_callable(completion)
    assert_type(healed(model="m", messages=[], response_model=Order), Outcome[Order])
    ahealed = healjson.wrap_callable(acompletion)
    apending = ahealed(model="m", messages=[], response_model=Order)
    _ = assert_type(apending, Coroutine[Any, Any, Outcome[Order]])
    apending.close()


def check_degraded_fields() -> None:
    from pydantic import JsonValue

    outcome = healjson.validate("{}", Order)
    if isinstance(outcome, Degraded):
        # JSON data (or a tool-call run's calls as sent), to narrow before use
        assert_type(outcome.partial, JsonValue | healjson.ToolCalls)
        assert_type(outcome.fallback, object)  # the caller's own value, of any type
        outcome.partial.get("total")  # type: ignore[union-attr]  # narrow to a dict first
        if isinstance(outcome.partial, dict):
            assert_type(outcome.partial.get("total"), JsonValue | None)


def check_passthrough_is_the_sdks_own() -> None:
    import anthropic
    from anthropic.lib.streaming import MessageStreamManager
    from anthropic.types import Message, RawMessageStreamEvent
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    client = healjson.wrap(openai.OpenAI(api_key="x"))
    assert_type(client.chat.completions.create(model="m", messages=[]), ChatCompletion)
    assert_type(
        client.chat.completions.create(model="m", messages=[], stream=True),
        openai.Stream[ChatCompletionChunk],
    )
    assert_type(client.responses.create(model="m", input="x"), Response)
    assert_type(
        client.responses.create(model="m", input="x", stream=True),
        openai.Stream[ResponseStreamEvent],
    )
    aclient = healjson.wrap(openai.AsyncOpenAI(api_key="x"))
    pending = aclient.chat.completions.create(model="m", messages=[])
    _ = assert_type(pending, Coroutine[Any, Any, ChatCompletion])
    pending.close()
    claude = healjson.wrap(anthropic.Anthropic(api_key="x"))
    assert_type(claude.messages.create(model="m", max_tokens=8, messages=[]), Message)
    assert_type(
        claude.messages.create(model="m", max_tokens=8, messages=[], stream=True),
        anthropic.Stream[RawMessageStreamEvent],
    )
    assert_type(
        claude.messages.stream(model="m", max_tokens=8, messages=[]), MessageStreamManager[Any]
    )

    def completion(**kwargs: object) -> dict[str, object]:
        return {}

    assert_type(healjson.wrap_callable(completion)(model="m", messages=[]), dict[str, object])


def check_instructor() -> None:
    import instructor
    from anthropic.types import Message
    from google.genai.types import GenerateContentResponse
    from openai.types.chat import ChatCompletion

    from healjson._core.run.streams import AsyncItemStream, ItemStream

    client = healjson.wrap(instructor.from_openai(openai.OpenAI(api_key="x")))
    assert_type(client.create(response_model=Order, messages=[]), Outcome[Order])
    outcome, _completion = client.create_with_completion(response_model=Order, messages=[])
    assert_type(outcome, Outcome[Order])
    assert_type(client.create_partial(response_model=Order, messages=[]), HealStream[Order])
    assert_type(client.create_iterable(response_model=Order, messages=[]), ItemStream[Order])
    for order in client.create_iterable(response_model=Order, messages=[]):
        assert_type(order, Order)
    assert_type(
        client.chat.completions.create_partial(response_model=Order, messages=[]),
        HealStream[Order],
    )
    assert_type(client.chat.completions.create(response_model=Order, messages=[]), Outcome[Order])
    aclient = healjson.wrap(instructor.from_openai(openai.AsyncOpenAI(api_key="x")))
    pending = aclient.create_with_completion(response_model=Order, messages=[])
    completion = ChatCompletion | Message | GenerateContentResponse | None  # the SDKs' own
    _ = assert_type(pending, Coroutine[Any, Any, tuple[Outcome[Order], completion]])
    pending.close()
    assert_type(aclient.create_partial(response_model=Order, messages=[]), AsyncHealStream[Order])
    assert_type(aclient.create_iterable(response_model=Order, messages=[]), AsyncItemStream[Order])


def check_pydantic_ai() -> None:
    from pydantic_ai import Agent

    from healjson.pydantic_ai import HealCapability, HealRecord

    heal = HealCapability[None](tool_contracts={"search": [positive]}, contracts=[positive])
    agent = Agent("test", output_type=Order, capabilities=[heal])
    assert_type(agent.run_sync("x").output, Order)
    assert_type(heal.records(), list[HealRecord])
    assert_type(HealCapability().heals, list[HealRecord])
    HealCapability(policy="strict")  # type: ignore[arg-type]


def check_tool_calls() -> None:
    client = healjson.wrap(openai.OpenAI(api_key="x"))
    outcome = client.chat.completions.create(
        model="m", messages=[], tools=[Order], heal_tools=True, tool_contracts={"Order": [positive]}
    )
    assert_type(outcome, Outcome[healjson.ToolCalls])
    if isinstance(outcome, Healed):
        assert_type(outcome.value.text, str | None)
        assert_type(outcome.value.calls, tuple[healjson.HealedCall, ...])
    assert_type(
        client.responses.create(model="m", input="x", tools=[Order], heal_tools=True),
        Outcome[healjson.ToolCalls],
    )
    aclient = healjson.wrap(openai.AsyncOpenAI(api_key="x"))
    pending = aclient.chat.completions.create(
        model="m", messages=[], tools=[Order], heal_tools=True
    )
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[healjson.ToolCalls]])
    pending.close()
    apending = aclient.responses.create(model="m", input="x", tools=[Order], heal_tools=True)
    _ = assert_type(apending, Coroutine[Any, Any, Outcome[healjson.ToolCalls]])
    apending.close()
    streamed = client.chat.completions.create(
        model="m", messages=[], tools=[Order], heal_tools=True, stream=True
    )
    for piece in streamed:
        assert_type(piece, str)
    assert_type(streamed.outcome, Outcome[healjson.ToolCalls])


def check_anthropic_tool_calls() -> None:
    import anthropic

    client = healjson.wrap(anthropic.Anthropic(api_key="x"))
    outcome = client.messages.create(
        model="m", max_tokens=9, messages=[], tools=[Order], heal_tools=True
    )
    assert_type(outcome, Outcome[healjson.ToolCalls])
    aclient = healjson.wrap(anthropic.AsyncAnthropic(api_key="x"))
    pending = aclient.messages.create(
        model="m", max_tokens=9, messages=[], tools=[Order], heal_tools=True
    )
    _ = assert_type(pending, Coroutine[Any, Any, Outcome[healjson.ToolCalls]])
    pending.close()
    streamed = client.messages.create(
        model="m", max_tokens=9, messages=[], tools=[Order], heal_tools=True, stream=True
    )
    assert_type(streamed.outcome, Outcome[healjson.ToolCalls])
