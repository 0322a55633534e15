"""`wrap(OpenAI()).responses.parse(text_format=M)` and `.stream(text_format=M)`: a user's script
against the scripted server, with the real SDK over real HTTP. The wrapped calls return the
SDK's own `ParsedResponse` and stream manager (its events passed through) with the healed value
as `output_parsed`; the bare client on the same script raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from openai.lib.streaming.responses import AsyncResponseStreamManager, ResponseStreamManager
from openai.types.responses import ParsedResponse

import healjson
from drop_in import EXPECTED, GOOD, MODES, ORDERS, Invoice, Mode, Order, total_positive
from drop_in import run_openai as run
from healjson import Degraded, Healed
from healjson.testing import ScriptedReply, ScriptedServer


def parse(**kwargs: Any) -> Callable[[Any], Any]:
    """A user's `client.responses.parse(model=..., input=..., text_format=...)`."""
    kwargs.setdefault("text_format", Invoice)
    return lambda client: client.responses.parse(
        model="gpt-test", input="Extract the invoice.", **kwargs
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
def test_parse_returns_the_sdks_response_with_the_healed_value(
    scripted_server: ScriptedServer, mode: Mode, answer: str, flag: str
) -> None:
    """A slipped answer comes back as the SDK's `ParsedResponse` whose `output_parsed` is the
    healed model, and `outcome_of` says how it was healed."""
    scripted_server.push(answer)

    response = run(scripted_server, mode, parse())

    assert isinstance(response, ParsedResponse)
    assert EXPECTED == response.output_parsed
    assert answer == response.output_text
    outcome = healjson.outcome_of(response)
    assert isinstance(outcome, Healed)
    assert flag in outcome.flags


@pytest.mark.parametrize("mode", MODES)
def test_the_bare_client_raises_on_the_same_answer(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """What was fixed: the unwrapped SDK's `responses.parse` raises on a prose-wrapped answer."""
    scripted_server.push(f"Sure! Here it is: {GOOD}")

    with pytest.raises(ValueError, match="Invalid JSON"):
        run(scripted_server, mode, parse(), wrap=False)


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_breach_is_healed_by_a_reask(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A value that breaks a contract is re-asked; the response is the repaired call's."""
    scripted_server.extend(['{"number": "INV-1", "total": 0}', GOOD])

    response = run(scripted_server, mode, parse(contracts=[total_positive]))

    assert EXPECTED == response.output_parsed
    assert GOOD == response.output_text
    outcome = healjson.outcome_of(response)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert 2 == len(scripted_server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_a_hopeless_answer_gives_parsed_none_and_a_degraded_outcome(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """An answer no repair fixes raises nothing: `output_parsed` is None, the outcome degraded."""
    scripted_server.push("I cannot help with invoices.")
    scripted_server.repeat = True

    response = run(scripted_server, mode, parse())

    assert isinstance(response, ParsedResponse)
    assert response.output_parsed is None
    assert "I cannot help with invoices." == response.output_text
    assert isinstance(healjson.outcome_of(response), Degraded)


def stream_events(mode: Mode, **kwargs: Any) -> Callable[[Any], Any]:
    """A user's `with client.responses.stream(...) as stream:` reading every event, then
    `get_final_response()`: (event class names, final response, the manager)."""
    kwargs.setdefault("text_format", Invoice)
    request = {"model": "gpt-test", "input": "Extract the invoice.", **kwargs}

    def sync(client: Any) -> Any:
        manager = client.responses.stream(**request)
        with manager as stream:
            kinds = [type(event).__name__ for event in stream]
            return kinds, stream.get_final_response(), manager

    async def asynchronous(client: Any) -> Any:
        manager = client.responses.stream(**request)
        async with manager as stream:
            kinds = [type(event).__name__ async for event in stream]
            return kinds, await stream.get_final_response(), manager

    return sync if mode == "sync" else asynchronous


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_yields_the_sdks_events_and_heals_the_final_response(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """The wrapped stream yields the event classes the bare SDK's does on a clean answer, and a
    fenced answer's final response carries the healed value."""
    scripted_server.extend(
        [ScriptedReply(content=GOOD, chunk_chars=6), ScriptedReply(content=GOOD, chunk_chars=6)]
    )
    bare, _, _ = run(scripted_server, mode, stream_events(mode), wrap=False)
    healed, _, manager = run(scripted_server, mode, stream_events(mode))
    assert bare == healed
    managers = {"sync": ResponseStreamManager, "async": AsyncResponseStreamManager}
    assert isinstance(manager, managers[mode])

    scripted_server.push(ScriptedReply(content=f"Here:\n```json\n{GOOD}\n```", chunk_chars=6))
    _, final, _ = run(scripted_server, mode, stream_events(mode))

    assert isinstance(final, ParsedResponse)
    assert EXPECTED == final.output_parsed
    assert isinstance(healjson.outcome_of(final), Healed)
    assert 3 == len(scripted_server.requests)  # no repair was needed
    assert scripted_server.requests[-1].body["stream"] is True


def test_the_bare_stream_raises_on_a_fenced_answer(scripted_server: ScriptedServer) -> None:
    """What was fixed: the unwrapped SDK's Responses stream raises on a fenced answer."""
    scripted_server.push(ScriptedReply(content=f"```json\n{GOOD}\n```", chunk_chars=6))

    with pytest.raises(ValueError, match="Invalid JSON"):
        run(scripted_server, "sync", stream_events("sync"), wrap=False)


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_repaired_ends_with_the_repaired_calls_response(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A streamed answer that breaks a contract is repaired by a plain call, whose response is
    the final one."""
    scripted_server.extend(
        [ScriptedReply(content='{"number": "INV-1", "total": 0}', chunk_chars=6), GOOD]
    )

    _, final, _ = run(scripted_server, mode, stream_events(mode, contracts=[total_positive]))

    assert EXPECTED == final.output_parsed
    assert GOOD == final.output_text
    outcome = healjson.outcome_of(final)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert "stream" not in scripted_server.requests[1].body


@settings(max_examples=12, derandomize=True, deadline=None)
@given(order=ORDERS)
def test_a_valid_answer_parses_exactly_as_the_bare_sdk(
    shared_server: ScriptedServer, order: Order
) -> None:
    """For any valid answer, the wrapped `responses.parse` returns what the bare SDK returns:
    the same class and the same `output_parsed`, the same output."""
    text = order.model_dump_json()
    shared_server.extend([text, text])
    call = parse(text_format=Order)

    bare = run(shared_server, "sync", call, wrap=False)
    healed = run(shared_server, "sync", call)

    assert type(bare) is type(healed)
    assert order == bare.output_parsed
    assert bare.output_parsed == healed.output_parsed
    assert [type(item) for item in bare.output] == [type(item) for item in healed.output]
    assert bare.output[-1].content == healed.output[-1].content
