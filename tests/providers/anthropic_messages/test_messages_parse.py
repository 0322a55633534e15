"""`wrap(Anthropic()).messages.parse(output_format=M)`: a user's script against the scripted
server, with the real SDK over real HTTP. The wrapped call returns the SDK's own
`ParsedMessage` with the healed value as `parsed_output`; the bare client on the same script
raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import pydantic
import pytest
from anthropic.types import ParsedMessage
from hypothesis import given, settings

import healjson
from drop_in import EXPECTED, GOOD, INVOICES, MODES, Invoice, Mode, total_positive
from drop_in import run_anthropic as run
from healjson import Degraded, Healed
from healjson.testing import ScriptedServer

MESSAGES = [{"role": "user", "content": "Extract the invoice."}]


def parse(**kwargs: Any) -> Callable[[Any], Any]:
    """A user's `client.messages.parse(model=..., messages=..., output_format=M)`."""
    kwargs.setdefault("output_format", Invoice)
    return lambda client: client.messages.parse(
        model="claude-test", max_tokens=256, messages=MESSAGES, **kwargs
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "answer",
    [f"Sure! Here it is: {GOOD}", f"```json\n{GOOD}\n```", '{"number": "INV-1", "total": 3,}'],
    ids=["prose", "fenced", "trailing-comma"],
)
def test_parse_returns_the_sdks_message_with_the_healed_value(
    scripted_server: ScriptedServer, mode: Mode, answer: str
) -> None:
    """A slipped answer comes back as the SDK's `ParsedMessage` whose `parsed_output` is the
    healed model; the bare client raises on it."""
    scripted_server.extend([answer, answer])
    with pytest.raises(pydantic.ValidationError):
        run(scripted_server, mode, parse(), wrap=False)

    message = run(scripted_server, mode, parse())

    assert isinstance(message, ParsedMessage)
    assert EXPECTED == message.parsed_output
    assert isinstance(healjson.outcome_of(message), Healed)


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_breach_is_healed_by_a_reask(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A value that breaks a contract is re-asked; the message is the repaired call's."""
    scripted_server.extend(['{"number": "INV-1", "total": 0}', GOOD])

    message = run(scripted_server, mode, parse(contracts=[total_positive]))

    assert EXPECTED == message.parsed_output
    outcome = healjson.outcome_of(message)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls


@pytest.mark.parametrize("mode", MODES)
def test_a_hopeless_answer_gives_parsed_none_and_a_degraded_outcome(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """An answer no repair fixes raises nothing: `parsed_output` is None, the outcome degraded."""
    scripted_server.push("I cannot help with invoices.")
    scripted_server.repeat = True

    message = run(scripted_server, mode, parse())

    assert isinstance(message, ParsedMessage)
    assert message.parsed_output is None
    assert "I cannot help with invoices." == message.content[-1].text
    assert isinstance(healjson.outcome_of(message), Degraded)


@settings(max_examples=10, derandomize=True, deadline=None)
@given(invoice=INVOICES)
def test_a_valid_answer_parses_exactly_as_the_bare_sdk(
    shared_server: ScriptedServer, invoice: Invoice
) -> None:
    """For any valid answer, the wrapped `messages.parse` returns what the bare SDK returns: the
    same class, the same `parsed_output`, the same content."""
    text = invoice.model_dump_json()
    shared_server.extend([text, text])

    bare = run(shared_server, "sync", parse(), wrap=False)
    healed = run(shared_server, "sync", parse())

    assert type(bare) is type(healed)
    assert invoice == bare.parsed_output
    assert bare.parsed_output == healed.parsed_output
    assert bare.content == healed.content


def test_parse_asks_for_text_where_the_client_would_force_a_tool(
    scripted_server: ScriptedServer,
) -> None:
    """On a client whose tier is the forced tool (`json_mode="json_object"`), `parse` asks for
    the answer as text, the schema in the system prompt: its `ParsedMessage` carries the
    parsed value on a text block, which a tool's answer has none of."""
    scripted_server.push(GOOD)
    options = {"base_url": scripted_server.anthropic_base_url, "api_key": "test"}
    with anthropic.Anthropic(**options, max_retries=0) as sdk:
        client = healjson.wrap(sdk, json_mode="json_object")
        message = parse()(client)

    assert EXPECTED == message.parsed_output
    body = scripted_server.requests[0].body
    assert "tools" not in body
    assert "output_config" not in body
    assert "number" in str(body["system"])
