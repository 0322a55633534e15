"""`wrap(OpenAI()).chat.completions.parse(response_format=M)` and `.stream(response_format=M)`:
a user's script against the scripted server, with the real SDK over real HTTP. The wrapped
calls return the SDK's own types (`ParsedChatCompletion`, the SDK's stream manager and events)
with the healed value as `choices[0].message.parsed`; the bare client on the same script raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from openai.lib.streaming.chat import (
    AsyncChatCompletionStreamManager,
    ChatCompletionStreamManager,
)

import healjson
from drop_in import EXPECTED, GOOD, MODES, ORDERS, Invoice, Mode, Order, total_positive
from drop_in import run_openai as run
from healjson import Degraded, Healed
from healjson.testing import ScriptedReply, ScriptedServer

MESSAGES = [{"role": "user", "content": "Extract the invoice."}]


def parse(**kwargs: Any) -> Callable[[Any], Any]:
    """A user's `client.chat.completions.parse(model=..., messages=..., response_format=...)`."""
    kwargs.setdefault("response_format", Invoice)
    return lambda client: client.chat.completions.parse(
        model="gpt-test", messages=MESSAGES, **kwargs
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("answer", "flag"),
    [
        (f"Sure! Here it is: {GOOD} Anything else?", "prose_around"),
        (f"```json\n{GOOD}\n```", "code_fence"),
        ('{"number": "INV-1", "total": 3,}', "syntax_repaired"),
    ],
    ids=["prose", "fenced", "trailing-comma"],
)
def test_parse_returns_the_sdks_completion_with_the_healed_value(
    scripted_server: ScriptedServer, mode: Mode, answer: str, flag: str
) -> None:
    """A slipped answer comes back as the SDK's `ParsedChatCompletion` whose `.parsed` is the
    healed model, and `outcome_of` says how it was healed."""
    scripted_server.push(answer)

    completion = run(scripted_server, mode, parse())

    assert isinstance(completion, openai.types.chat.ParsedChatCompletion)
    assert EXPECTED == completion.choices[0].message.parsed
    assert answer == completion.choices[0].message.content  # the model's text, as it came
    outcome = healjson.outcome_of(completion)
    assert isinstance(outcome, Healed)
    assert flag in outcome.flags
    assert 1 == len(scripted_server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_the_bare_client_raises_on_the_same_answer(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """What was fixed: the unwrapped SDK's `parse` raises on a prose-wrapped answer."""
    scripted_server.push(f"Sure! Here it is: {GOOD}")

    with pytest.raises(ValueError, match="Invalid JSON"):
        run(scripted_server, mode, parse(), wrap=False)


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_breach_is_healed_by_a_reask(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A value that breaks a contract is re-asked, and the completion is the repaired call's."""
    scripted_server.extend(['{"number": "INV-1", "total": 0}', GOOD])

    completion = run(scripted_server, mode, parse(contracts=[total_positive]))

    assert EXPECTED == completion.choices[0].message.parsed
    assert GOOD == completion.choices[0].message.content
    assert "chatcmpl-scripted-2" == completion.id  # the repaired call's completion
    outcome = healjson.outcome_of(completion)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls


@pytest.mark.parametrize("mode", MODES)
def test_a_hopeless_answer_gives_parsed_none_and_a_degraded_outcome(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """An answer no repair fixes raises nothing: `.parsed` is None and the outcome degraded."""
    scripted_server.push("I cannot help with invoices.")
    scripted_server.repeat = True

    completion = run(scripted_server, mode, parse())

    assert isinstance(completion, openai.types.chat.ParsedChatCompletion)
    assert completion.choices[0].message.parsed is None
    assert "I cannot help with invoices." == completion.choices[0].message.content
    assert isinstance(healjson.outcome_of(completion), Degraded)


@pytest.mark.parametrize("mode", MODES)
def test_a_refusal_stays_the_messages_refusal(scripted_server: ScriptedServer, mode: Mode) -> None:
    """A refusal is the SDK's `message.refusal`, `.parsed` None, nothing raised."""
    scripted_server.push(ScriptedReply(content=None, refusal="I can't do that."))
    scripted_server.repeat = True

    completion = run(scripted_server, mode, parse())

    assert "I can't do that." == completion.choices[0].message.refusal
    assert completion.choices[0].message.parsed is None
    assert isinstance(healjson.outcome_of(completion), Degraded)


def test_a_length_cut_answer_does_not_raise(scripted_server: ScriptedServer) -> None:
    """Where the bare SDK raises `LengthFinishReasonError`, the wrapped call returns the
    completion (its `.parsed` None when no repair made the answer whole)."""
    scripted_server.push(ScriptedReply(content='{"number": "INV-1", "to', finish_reason="length"))
    scripted_server.repeat = True
    with pytest.raises(openai.LengthFinishReasonError):
        run(scripted_server, "sync", parse(), wrap=False)

    completion = run(scripted_server, "sync", parse())

    assert "length" == completion.choices[0].finish_reason
    assert completion.choices[0].message.parsed is None
    assert isinstance(healjson.outcome_of(completion), Degraded)


def test_a_provider_error_is_the_sdks_own(scripted_server: ScriptedServer) -> None:
    """When no answer ever comes (HTTP 401), the SDK's own error is raised, as the bare SDK's."""
    scripted_server.push(ScriptedReply.error(401, "bad key"))

    with pytest.raises(openai.AuthenticationError):
        run(scripted_server, "sync", parse())


def test_without_a_type_parse_is_the_sdks_own(scripted_server: ScriptedServer) -> None:
    """A dict `response_format` passes through: the request is the SDK's, unchanged."""
    scripted_server.push(GOOD)
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}

    completion = run(scripted_server, "sync", parse(response_format=schema))

    assert completion.choices[0].message.parsed is None
    assert healjson.outcome_of(completion) is None
    assert schema == scripted_server.requests[0].body["response_format"]


# -- streams ------------------------------------------------------------------------------------


def stream_events(mode: Mode, **kwargs: Any) -> Callable[[Any], Any]:
    """A user's `with client.chat.completions.stream(...) as stream:` reading every event, then
    `get_final_completion()`: (event class names, final completion, the manager)."""
    kwargs.setdefault("response_format", Invoice)

    def sync(client: Any) -> Any:
        manager = client.chat.completions.stream(model="gpt-test", messages=MESSAGES, **kwargs)
        with manager as stream:
            kinds = [type(event).__name__ for event in stream]
            return kinds, stream.get_final_completion(), manager

    async def asynchronous(client: Any) -> Any:
        manager = client.chat.completions.stream(model="gpt-test", messages=MESSAGES, **kwargs)
        async with manager as stream:
            kinds = [type(event).__name__ async for event in stream]
            return kinds, await stream.get_final_completion(), manager

    return sync if mode == "sync" else asynchronous


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_yields_the_sdks_events_and_heals_the_final_completion(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """The wrapped stream yields the event classes the bare SDK's does on a clean answer, and a
    prose-wrapped answer's final completion carries the healed value."""
    scripted_server.extend(
        [ScriptedReply(content=GOOD, chunk_chars=6), ScriptedReply(content=GOOD, chunk_chars=6)]
    )
    bare, _, _ = run(scripted_server, mode, stream_events(mode), wrap=False)
    healed, _, manager = run(scripted_server, mode, stream_events(mode))
    assert bare == healed
    managers = {"sync": ChatCompletionStreamManager, "async": AsyncChatCompletionStreamManager}
    assert isinstance(manager, managers[mode])

    scripted_server.push(ScriptedReply(content=f"Here you go:\n{GOOD}", chunk_chars=6))
    _, final, _ = run(scripted_server, mode, stream_events(mode))

    assert isinstance(final, openai.types.chat.ParsedChatCompletion)
    assert EXPECTED == final.choices[0].message.parsed
    assert isinstance(healjson.outcome_of(final), Healed)
    assert 3 == len(scripted_server.requests)  # no repair was needed
    assert scripted_server.requests[-1].body["stream"] is True


def test_the_bare_stream_raises_on_a_prose_wrapped_answer(scripted_server: ScriptedServer) -> None:
    """What was fixed: the unwrapped SDK's stream raises on a prose-wrapped answer."""
    scripted_server.push(ScriptedReply(content=f"Here you go:\n{GOOD}", chunk_chars=6))

    with pytest.raises(ValueError, match=r"Invalid JSON|EOF|expected"):
        run(scripted_server, "sync", stream_events("sync"), wrap=False)


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_repaired_ends_with_the_repaired_calls_completion(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A streamed answer that breaks a contract is repaired by a plain call, whose completion
    is the final one."""
    scripted_server.extend(
        [ScriptedReply(content='{"number": "INV-1", "total": 0}', chunk_chars=6), GOOD]
    )

    _, final, _ = run(scripted_server, mode, stream_events(mode, contracts=[total_positive]))

    assert EXPECTED == final.choices[0].message.parsed
    assert "chatcmpl-scripted-2" == final.id
    outcome = healjson.outcome_of(final)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert "stream" not in scripted_server.requests[1].body


# -- the property: a valid answer is the bare SDK's own result -----------------------------------


@settings(max_examples=12, derandomize=True, deadline=None)
@given(order=ORDERS)
def test_a_valid_answer_parses_exactly_as_the_bare_sdk(
    shared_server: ScriptedServer, order: Order
) -> None:
    """For any valid answer, the wrapped `.parse` returns what the bare SDK returns: the same
    class and the same `.parsed` (the completions equal but for their id and time)."""
    text = order.model_dump_json()
    shared_server.extend([text, text])
    call = parse(response_format=Order)

    bare = run(shared_server, "sync", call, wrap=False)
    healed = run(shared_server, "sync", call)

    assert type(bare) is type(healed)
    assert order == bare.choices[0].message.parsed
    assert bare.choices[0].message.parsed == healed.choices[0].message.parsed
    assert bare.choices == healed.choices
    same = {"id", "created", "_request_id"}
    assert {k: v for k, v in vars(bare).items() if k not in same} == {
        k: v for k, v in vars(healed).items() if k not in same
    }


def test_parse_on_a_client_with_a_cache_asks_the_model_each_time(
    scripted_server: ScriptedServer,
) -> None:
    """The SDK's own `parse` returns the SDK's object of a model call's answer: on a client
    with a response cache, each call is sent (and `create(response_model=...)` still hits)."""
    scripted_server.extend([GOOD, GOOD, GOOD])

    def calls(client: Any) -> list[Any]:
        cached = healjson.wrap(client, cache=healjson.ResponseCache.memory())
        completions = cached.chat.completions
        parse_kwargs = {"model": "m", "messages": MESSAGES, "response_format": Invoice}
        create_kwargs = {"model": "m", "messages": MESSAGES, "response_model": Invoice}
        parsed = [completions.parse(**parse_kwargs) for _ in range(2)]
        return parsed + [completions.create(**create_kwargs) for _ in range(2)]

    first, second, _, hit = run(scripted_server, "sync", calls, wrap=False)

    assert EXPECTED == first.choices[0].message.parsed == second.choices[0].message.parsed
    assert "chatcmpl-scripted-2" == second.id
    assert 0 == hit.calls
    assert 3 == len(scripted_server.requests)


def test_a_length_cut_stream_does_not_raise(scripted_server: ScriptedServer) -> None:
    """Where the bare SDK's stream raises `LengthFinishReasonError`, the wrapped stream ends and
    its final completion has `.parsed` None and a degraded outcome."""
    cut = ScriptedReply(content='{"number": "INV-1", "to', finish_reason="length", chunk_chars=6)
    scripted_server.push(cut)
    scripted_server.repeat = True
    with pytest.raises(openai.LengthFinishReasonError):
        run(scripted_server, "sync", stream_events("sync"), wrap=False)

    _, final, _ = run(scripted_server, "sync", stream_events("sync"))

    assert "length" == final.choices[0].finish_reason
    assert final.choices[0].message.parsed is None
    assert isinstance(healjson.outcome_of(final), Degraded)
