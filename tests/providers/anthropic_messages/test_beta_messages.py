"""`wrap(Anthropic()).beta.messages`: the beta API healed as `messages` is, a user's script
against the scripted server with the real SDK over real HTTP. `create(response_model=M,
betas=[...])` returns `Outcome[M]`; the SDK's own `parse` / `stream(output_format=M)` return the
SDK's beta types (`ParsedBetaMessage`, the beta stream manager) with the healed value; every
request goes through the SDK's beta API with the caller's `betas`; everything else passes
through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic
import pytest
from anthropic.lib.streaming import BetaAsyncMessageStreamManager, BetaMessageStreamManager
from anthropic.types.beta import BetaMessage
from anthropic.types.beta.parsed_beta_message import ParsedBetaMessage
from hypothesis import given, settings

import healjson
from drop_in import EXPECTED, GOOD, INVOICES, MODES, Invoice, Mode, total_positive
from drop_in import run_anthropic as run
from healjson import Degraded, Healed
from healjson.testing import ScriptedServer

MESSAGES = [{"role": "user", "content": "Extract the invoice."}]
BETAS = ["structured-outputs-2025-11-13"]
MANAGERS = {"sync": BetaMessageStreamManager, "async": BetaAsyncMessageStreamManager}
PROSE = f"Sure! Here it is: {GOOD}"


def beta(method: str, **kwargs: Any) -> Callable[[Any], Any]:
    """A user's `client.beta.messages.<method>(model=..., messages=..., betas=[...], ...)`."""
    request = {"model": "claude-test", "max_tokens": 256, "messages": MESSAGES, "betas": BETAS}
    return lambda client: getattr(client.beta.messages, method)(**request, **kwargs)


def sent_to_the_beta_api(server: ScriptedServer) -> None:
    """Every request went through the SDK's beta API, naming the caller's betas (the header
    only its beta methods send)."""
    assert server.requests
    for request in server.requests:
        assert ",".join(BETAS) == request.headers.get("anthropic-beta")


@pytest.mark.parametrize("mode", MODES)
def test_create_with_a_response_model_heals_on_the_beta_api(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A prose-wrapped answer heals with no extra call; an invalid one with one repair call;
    both calls on the beta endpoint with the caller's betas."""
    scripted_server.extend([PROSE, '{"number": "INV-1", "total": "many"}', GOOD])

    first = run(scripted_server, mode, beta("create", response_model=Invoice))
    second = run(scripted_server, mode, beta("create", response_model=Invoice))

    assert isinstance(first, Healed)
    assert (EXPECTED, 1) == (first.value, first.calls)
    assert isinstance(second, Healed)
    assert (EXPECTED, 2) == (second.value, second.calls)
    assert 3 == len(scripted_server.requests)
    sent_to_the_beta_api(scripted_server)


@pytest.mark.parametrize("mode", MODES)
def test_a_streamed_create_heals_on_the_beta_api(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """`create(..., stream=True, response_model=M)` on the beta API is a healed stream whose
    outcome is the value."""
    scripted_server.push(PROSE)

    def streamed(client: Any) -> Any:
        stream = beta("create", response_model=Invoice, stream=True)(client)
        if mode == "sync":
            for _ in stream:
                pass
            return stream.outcome

        async def drain() -> Any:
            async for _ in stream:
                pass
            return stream.outcome

        return drain()

    outcome = run(scripted_server, mode, streamed)

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    sent_to_the_beta_api(scripted_server)


@pytest.mark.parametrize("mode", MODES)
def test_parse_returns_the_sdks_beta_message_with_the_healed_value(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """`beta.messages.parse(output_format=M)`: the bare SDK raises on a prose-wrapped answer;
    the wrapped one returns the SDK's `ParsedBetaMessage` with the healed `parsed_output`."""
    scripted_server.extend([PROSE, PROSE])
    with pytest.raises(pydantic.ValidationError):
        run(scripted_server, mode, beta("parse", output_format=Invoice), wrap=False)

    message = run(scripted_server, mode, beta("parse", output_format=Invoice))

    assert isinstance(message, ParsedBetaMessage)
    assert EXPECTED == message.parsed_output
    assert isinstance(healjson.outcome_of(message), Healed)
    sent_to_the_beta_api(scripted_server)


@pytest.mark.parametrize("mode", MODES)
def test_parse_re_asks_a_contract_breach(scripted_server: ScriptedServer, mode: Mode) -> None:
    """A value that breaks a contract is asked again; the message is the repaired call's."""
    scripted_server.extend(['{"number": "INV-1", "total": 0}', GOOD])

    message = run(
        scripted_server, mode, beta("parse", output_format=Invoice, contracts=[total_positive])
    )

    assert EXPECTED == message.parsed_output
    assert 2 == healjson.outcome_of(message).calls
    sent_to_the_beta_api(scripted_server)


@pytest.mark.parametrize("mode", MODES)
def test_parse_of_a_hopeless_answer_gives_parsed_none(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """An answer nothing fixes raises nothing: `parsed_output` is None, the outcome degraded."""
    scripted_server.push("I cannot help with invoices.")
    scripted_server.repeat = True

    message = run(scripted_server, mode, beta("parse", output_format=Invoice))

    assert isinstance(message, ParsedBetaMessage)
    assert message.parsed_output is None
    assert isinstance(healjson.outcome_of(message), Degraded)


@pytest.mark.parametrize("mode", MODES)
def test_stream_returns_the_sdks_beta_manager_with_a_healed_final_message(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """`beta.messages.stream(output_format=M)`: the SDK's beta stream manager, its events as
    the SDK streams them, its final message a `ParsedBetaMessage` with the healed value."""
    scripted_server.push(PROSE)
    request = {
        "model": "claude-test",
        "max_tokens": 256,
        "messages": MESSAGES,
        "betas": BETAS,
        "output_format": Invoice,
    }

    def sync(client: Any) -> tuple[Any, list[str], Any]:
        manager = client.beta.messages.stream(**request)
        with manager as stream:
            kinds = [type(event).__name__ for event in stream]
            return manager, kinds, stream.get_final_message()

    async def asynchronous(client: Any) -> tuple[Any, list[str], Any]:
        manager = client.beta.messages.stream(**request)
        async with manager as stream:
            kinds = [type(event).__name__ async for event in stream]
            return manager, kinds, await stream.get_final_message()

    manager, kinds, final = run(scripted_server, mode, sync if mode == "sync" else asynchronous)

    assert isinstance(manager, MANAGERS[mode])
    assert kinds
    assert all(kind.startswith(("Beta", "Parsed")) for kind in kinds)
    assert isinstance(final, ParsedBetaMessage)
    assert EXPECTED == final.parsed_output
    assert isinstance(healjson.outcome_of(final), Healed)
    sent_to_the_beta_api(scripted_server)


def test_without_a_model_the_beta_api_passes_through(scripted_server: ScriptedServer) -> None:
    """Without `response_model` / `output_format` a call is the SDK's own (its `BetaMessage`),
    and every other attribute of `beta` is the wrapped client's."""
    scripted_server.push(GOOD)

    def plain(client: Any) -> tuple[Any, Any]:
        return beta("create")(client), client

    message, client = run(scripted_server, "sync", plain)

    assert type(message) is BetaMessage
    assert GOOD == message.content[0].text
    assert client.beta.models is client.wrapped.beta.models
    assert client.beta.messages.batches is client.wrapped.beta.messages.batches


@settings(max_examples=10, derandomize=True, deadline=None)
@given(invoice=INVOICES)
def test_a_valid_answer_parses_on_the_beta_api_exactly_as_the_bare_sdk(
    shared_server: ScriptedServer, invoice: Invoice
) -> None:
    """For any valid answer, the wrapped `beta.messages.parse` returns what the bare SDK
    returns: the same class, the same `parsed_output`, the same content."""
    text = invoice.model_dump_json()
    shared_server.extend([text, text])

    bare = run(shared_server, "sync", beta("parse", output_format=Invoice), wrap=False)
    healed = run(shared_server, "sync", beta("parse", output_format=Invoice))

    assert type(bare) is type(healed)
    assert invoice == bare.parsed_output == healed.parsed_output
    assert bare.content == healed.content
