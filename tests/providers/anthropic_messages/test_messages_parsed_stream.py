"""`wrap(Anthropic()).messages.stream(output_format=M)`: a user's script against the scripted
server, with the real SDK over real HTTP. The wrapped call returns the SDK's own stream manager,
whose stream yields the SDK's own events and whose final message is the SDK's `ParsedMessage`
with the healed value as `parsed_output`; the bare client's stream raises on what the model
slipped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import pydantic
import pytest
from anthropic.lib.streaming import (
    AsyncMessageStream,
    AsyncMessageStreamManager,
    MessageStream,
    MessageStreamManager,
)
from anthropic.types import ParsedMessage
from hypothesis import given, settings

import healjson
from drop_in import EXPECTED, GOOD, INVOICES, MODES, Invoice, Mode, total_positive
from drop_in import run_anthropic as run
from healjson import Degraded, Healed
from healjson.testing import ScriptedReply, ScriptedServer

MESSAGES = [{"role": "user", "content": "Extract the invoice."}]
MANAGERS = {"sync": MessageStreamManager, "async": AsyncMessageStreamManager}
STREAMS = {"sync": MessageStream, "async": AsyncMessageStream}


class Read:
    """What a user's `with client.messages.stream(...) as stream:` saw: the manager, the
    stream, the classes of the events it yielded, the final message, the final text, and the
    stream's `current_message_snapshot` after it."""

    def __init__(self, manager: Any, stream: Any, kinds: list[str], final: Any) -> None:
        self.manager, self.stream, self.kinds, self.final = manager, stream, kinds, final
        self.text: str = ""
        self.snapshot: Any = None


def read(mode: Mode, **kwargs: Any) -> Callable[[Any], Any]:
    """A user's stream of `client.messages.stream(model=..., messages=..., output_format=M)`
    read event by event, then its final message (`async with` for `async`)."""
    kwargs.setdefault("output_format", Invoice)
    request = {"model": "claude-test", "max_tokens": 256, "messages": MESSAGES, **kwargs}

    def sync(client: Any) -> Read:
        manager = client.messages.stream(**request)
        with manager as stream:
            kinds = [type(event).__name__ for event in stream]
            seen = Read(manager, stream, kinds, stream.get_final_message())
            seen.text, seen.snapshot = stream.get_final_text(), stream.current_message_snapshot
        return seen

    async def asynchronous(client: Any) -> Read:
        manager = client.messages.stream(**request)
        async with manager as stream:
            kinds = [type(event).__name__ async for event in stream]
            seen = Read(manager, stream, kinds, await stream.get_final_message())
            seen.text, seen.snapshot = (
                await stream.get_final_text(),
                stream.current_message_snapshot,
            )
        return seen

    return asynchronous if mode == "async" else sync


@pytest.mark.parametrize("mode", MODES)
def test_a_valid_stream_is_the_bare_sdks_events_and_final_message(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A valid streamed answer: the wrapped stream yields the bare SDK's event classes, in the
    same number, and ends with the same message class, `parsed_output` and content, from one
    streamed request asking for the schema."""
    reply = ScriptedReply(content=GOOD, chunk_chars=8)
    scripted_server.extend([reply, reply])

    bare = run(scripted_server, mode, read(mode), wrap=False)
    healed = run(scripted_server, mode, read(mode))

    assert bare.kinds == healed.kinds
    assert isinstance(healed.manager, MANAGERS[mode])
    assert isinstance(healed.stream, STREAMS[mode])
    assert type(bare.final) is type(healed.final)
    assert EXPECTED == bare.final.parsed_output == healed.final.parsed_output
    assert bare.final.content == healed.final.content
    assert isinstance(healjson.outcome_of(healed.final), Healed)
    assert 2 == len(scripted_server.requests)
    body = scripted_server.requests[1].body
    assert body["stream"] is True
    assert "json_schema" == body["output_config"]["format"]["type"]


@pytest.mark.parametrize("mode", MODES)
def test_the_final_text_and_snapshot_are_the_healed_message(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """Once the final message is healed, `current_message_snapshot` is it and
    `get_final_text()` its text, as on the bare SDK's ended stream."""
    scripted_server.push(ScriptedReply(content=GOOD, chunk_chars=8))

    healed = run(scripted_server, mode, read(mode))

    assert healed.snapshot is healed.final
    assert GOOD == healed.text


def test_the_bare_stream_raises_on_a_prose_wrapped_answer(scripted_server: ScriptedServer) -> None:
    """What is fixed: the unwrapped SDK's stream raises, mid-iteration, on a prose-wrapped
    answer."""
    scripted_server.push(ScriptedReply(content=f"Sure! Here it is: {GOOD}", chunk_chars=8))

    with pytest.raises(pydantic.ValidationError):
        run(scripted_server, "sync", read("sync"), wrap=False)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "answer", [f"Sure! Here it is: {GOOD}", f"```json\n{GOOD}\n```"], ids=["prose", "fenced"]
)
def test_a_slipped_stream_is_healed_without_a_repair_call(
    scripted_server: ScriptedServer, mode: Mode, answer: str
) -> None:
    """A prose-wrapped or fenced streamed answer is healed locally: no request after the
    stream, the final message the streamed one with `parsed_output` the model."""
    scripted_server.push(ScriptedReply(content=answer, chunk_chars=8))

    healed = run(scripted_server, mode, read(mode))

    assert isinstance(healed.final, ParsedMessage)
    assert EXPECTED == healed.final.parsed_output
    assert answer == healed.final.content[-1].text
    outcome = healjson.outcome_of(healed.final)
    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert 1 == len(scripted_server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_an_invalid_stream_is_repaired_by_a_plain_call(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A streamed answer missing a field is re-asked with a plain call, whose message is the
    final one, `parsed_output` healed."""
    scripted_server.extend([ScriptedReply(content='{"number": "INV-1"}', chunk_chars=8), GOOD])

    healed = run(scripted_server, mode, read(mode))

    assert EXPECTED == healed.final.parsed_output
    assert GOOD == healed.final.content[-1].text
    outcome = healjson.outcome_of(healed.final)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert scripted_server.requests[0].body["stream"] is True
    assert "stream" not in scripted_server.requests[1].body


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_breach_in_a_stream_is_healed_by_a_reask(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """`contracts=` on the stream: a streamed value that breaks one is re-asked."""
    scripted_server.extend([ScriptedReply(content='{"number": "INV-1", "total": 0}'), GOOD])

    healed = run(scripted_server, mode, read(mode, contracts=[total_positive]))

    assert EXPECTED == healed.final.parsed_output
    assert 2 == len(scripted_server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_a_hopeless_stream_gives_parsed_none_and_a_degraded_outcome(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """An answer no repair fixes raises nothing: `parsed_output` is None, the outcome degraded,
    the events the SDK's."""
    scripted_server.push(ScriptedReply(content="I cannot help with invoices.", chunk_chars=8))
    scripted_server.push("I cannot help with invoices.")
    scripted_server.repeat = True

    healed = run(scripted_server, mode, read(mode))

    assert isinstance(healed.final, ParsedMessage)
    assert healed.final.parsed_output is None
    assert "I cannot help with invoices." == healed.text
    assert isinstance(healjson.outcome_of(healed.final), Degraded)
    assert "TextEvent" in healed.kinds


def test_response_model_and_output_format_together_are_refused() -> None:
    """`response_model=` (healjson's stream) and `output_format=` (the SDK's) exclude each
    other."""
    with anthropic.Anthropic(api_key="test") as sdk:
        client = healjson.wrap(sdk)
        with pytest.raises(TypeError, match="not both"):
            client.messages.stream(
                model="m", max_tokens=8, messages=MESSAGES, response_model=Invoice,
                output_format=Invoice,
            )  # fmt: skip


def test_a_refused_tier_is_stepped_down_as_the_stream_opens(
    scripted_server: ScriptedServer,
) -> None:
    """An endpoint that answers HTTP 400 to `output_config` gets the stream asked again in a
    weaker tier, remembered for the client's next call."""
    refusal = ScriptedReply.error(400, "output_config.format: not supported for this model")
    scripted_server.extend([refusal, ScriptedReply(content=GOOD, chunk_chars=8)])
    options = {"base_url": scripted_server.anthropic_base_url, "api_key": "test"}
    with anthropic.Anthropic(**options, max_retries=0) as sdk:
        client = healjson.wrap(sdk)
        healed = read("sync")(client)
        mode = client.format.mode

    assert 2 == len(scripted_server.requests)
    assert "output_config" in scripted_server.requests[0].body
    assert "output_config" not in scripted_server.requests[1].body
    assert "json_schema" != mode
    assert isinstance(healjson.outcome_of(healed.final), Healed)


@settings(max_examples=10, derandomize=True, deadline=None)
@given(invoice=INVOICES)
def test_a_valid_stream_parses_exactly_as_the_bare_sdk(
    shared_server: ScriptedServer, invoice: Invoice
) -> None:
    """For any valid streamed answer, the wrapped stream's final message is the bare SDK's: the
    same class, the same `parsed_output`, the same content, after the same events."""
    reply = ScriptedReply(content=invoice.model_dump_json(), chunk_chars=7)
    shared_server.extend([reply, reply])

    bare = run(shared_server, "sync", read("sync"), wrap=False)
    healed = run(shared_server, "sync", read("sync"))

    assert type(bare.final) is type(healed.final)
    assert invoice == bare.final.parsed_output
    assert bare.final.parsed_output == healed.final.parsed_output
    assert bare.final.content == healed.final.content
    assert bare.kinds == healed.kinds


@pytest.mark.parametrize("mode", MODES)
def test_a_stream_asks_for_text_where_the_client_would_force_a_tool(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """On a client whose tier is the forced tool (`json_mode="json_object"`), the stream asks
    for the answer as text, the schema in the system prompt, so its final message carries the
    parsed value."""
    scripted_server.push(ScriptedReply(content=GOOD, chunk_chars=8))
    options = {"base_url": scripted_server.anthropic_base_url, "api_key": "test", "max_retries": 0}

    if mode == "sync":
        with anthropic.Anthropic(**options) as sdk:
            healed = read(mode)(healjson.wrap(sdk, json_mode="json_object"))
    else:

        async def main() -> Any:
            async with anthropic.AsyncAnthropic(**options) as sdk:
                return await read(mode)(healjson.wrap(sdk, json_mode="json_object"))

        healed = asyncio.run(main())

    assert EXPECTED == healed.final.parsed_output
    body = scripted_server.requests[0].body
    assert "tools" not in body
    assert "number" in str(body["system"])
