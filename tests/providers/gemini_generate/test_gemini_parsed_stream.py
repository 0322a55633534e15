"""google-genai's own streamed structured call on a wrapped client: `models.generate_content_stream(
config={"response_schema": M})` yields the SDK's own chunks, the last one's `.parsed` the healed
value of the whole answer (the bare SDK tries each chunk alone, and swallows what fails); a
user's script against the scripted server, with the real SDK over real HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import given, settings

import healjson
from drop_in import EXPECTED, GOOD, INVOICES, MODES, Invoice, Mode, gemini_call, total_positive
from healjson import Degraded, Healed
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS, close_gemini


def stream(server: ScriptedServer, mode: Mode, wrap: bool = True, **kwargs: Any) -> list[Any]:
    """A user's `for chunk in client.models.generate_content_stream(model=..., contents=...,
    config={"response_schema": Invoice})` (through `client.aio` for `async`), every chunk kept,
    the client closed after."""
    request, options = gemini_call(server, **kwargs)
    if mode == "async":

        async def go() -> list[Any]:
            async with aiohttp.ClientSession() as session:
                http = genai_types.HttpOptions(**options, aiohttp_client=session)
                client = genai.Client(api_key="test-key", http_options=http)
                try:
                    models = (healjson.wrap(client) if wrap else client).aio.models
                    return [
                        chunk async for chunk in await models.generate_content_stream(**request)
                    ]
                finally:
                    await client.aio.aclose()
                    client.close()

        return asyncio.run(go())
    client = genai.Client(api_key="test-key", http_options=genai_types.HttpOptions(**options))
    try:
        models = (healjson.wrap(client) if wrap else client).models
        return list(models.generate_content_stream(**request))
    finally:
        close_gemini(client)


def final_parsed(chunks: list[Any]) -> Any:
    """What a user reading `.parsed` off every chunk ends with: the last one that is not None."""
    parsed = [chunk.parsed for chunk in chunks if chunk.parsed is not None]
    return parsed[-1] if parsed else None


def shape(chunks: list[Any]) -> list[tuple[type, str | None]]:
    """The chunks as a caller sees them go by: each one's class and text."""
    return [(type(chunk), chunk.text) for chunk in chunks]


@pytest.mark.parametrize("mode", MODES)
def test_the_chunks_are_the_sdks_and_the_last_carries_the_whole_answers_value(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A valid answer in several chunks: the wrapped stream yields the bare SDK's chunks (class,
    count, text), and its last chunk's `.parsed` is the answer's value, where the bare SDK's
    every `.parsed` is None; one request, the caller's."""
    reply = ScriptedReply(content=GOOD, chunk_chars=8)
    scripted_server.extend([reply, reply])
    bare = stream(scripted_server, mode, wrap=False)
    assert final_parsed(bare) is None

    chunks = stream(scripted_server, mode)

    assert shape(bare) == shape(chunks)
    assert len(chunks) > 2
    assert EXPECTED == chunks[-1].parsed
    assert isinstance(healjson.outcome_of(chunks[-1]), Healed)
    assert 2 == len(scripted_server.requests)
    assert scripted_server.requests[0].body == scripted_server.requests[1].body


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "answer", [f"Sure! Here it is: {GOOD}", f"```json\n{GOOD}\n```"], ids=["prose", "fenced"]
)
def test_a_slipped_answer_is_healed_without_a_repair_call(
    scripted_server: ScriptedServer, mode: Mode, answer: str
) -> None:
    """A prose-wrapped or fenced streamed answer is healed locally: no request after the
    stream, the last chunk's `.parsed` the model."""
    scripted_server.push(ScriptedReply(content=answer, chunk_chars=8))

    chunks = stream(scripted_server, mode)

    assert answer == "".join(chunk.text or "" for chunk in chunks)
    assert EXPECTED == chunks[-1].parsed
    outcome = healjson.outcome_of(chunks[-1])
    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert 1 == len(scripted_server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_an_invalid_answer_is_repaired_by_a_plain_call(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A streamed value that breaks a contract is re-asked with a plain `generateContent`
    call; the last chunk's `.parsed` is the repaired value."""
    scripted_server.extend([ScriptedReply(content='{"number": "INV-1", "total": 0}'), GOOD])

    chunks = stream(scripted_server, mode, contracts=[total_positive])

    assert EXPECTED == chunks[-1].parsed
    outcome = healjson.outcome_of(chunks[-1])
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    paths = [request.path for request in scripted_server.requests]
    assert ":streamGenerateContent" in paths[0]
    assert paths[1].endswith(":generateContent")


@pytest.mark.parametrize("mode", MODES)
def test_a_hopeless_answer_gives_parsed_none_and_a_degraded_outcome(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """An answer no repair fixes raises nothing: the last chunk's `.parsed` is None, the
    outcome degraded."""
    scripted_server.push("I cannot help with invoices.")
    scripted_server.repeat = True

    chunks = stream(scripted_server, mode)

    assert "I cannot help with invoices." == "".join(chunk.text or "" for chunk in chunks)
    assert chunks[-1].parsed is None
    assert isinstance(healjson.outcome_of(chunks[-1]), Degraded)


def test_a_stream_left_early_is_closed_and_passes_through(scripted_server: ScriptedServer) -> None:
    """A stream left early by the caller is closed, and what it yielded is the bare SDK's."""
    reply = ScriptedReply(content=GOOD, chunk_chars=4)
    scripted_server.extend([reply, reply])
    options = genai_types.HttpOptions(
        base_url=scripted_server.gemini_base_url, client_args={"verify": TLS}
    )
    client = genai.Client(api_key="test-key", http_options=options)
    config = {"response_mime_type": "application/json", "response_schema": Invoice}
    try:
        texts = []
        for models in (client.models, healjson.wrap(client).models):
            chunks = models.generate_content_stream(
                model="gemini-test", contents="Extract the invoice.", config=config
            )
            texts.append([next(chunks).text, next(chunks).text])
            chunks.close()
    finally:
        close_gemini(client)

    assert texts[0] == texts[1] == ['{"nu', "mber"]


@settings(max_examples=10, derandomize=True, deadline=None)
@given(invoice=INVOICES)
def test_a_valid_answer_parses_exactly_as_the_bare_sdk(
    shared_server: ScriptedServer, invoice: Invoice
) -> None:
    """For any valid answer streamed in one text chunk (which the bare SDK parses), the wrapped
    stream's parsed value is the bare SDK's, and its chunks' texts are the same."""
    reply = ScriptedReply(content=invoice.model_dump_json(), chunk_chars=10_000)
    shared_server.extend([reply, reply])

    bare = stream(shared_server, "sync", wrap=False)
    chunks = stream(shared_server, "sync")

    assert invoice == final_parsed(bare)
    assert final_parsed(bare) == chunks[-1].parsed
    assert shape(bare) == shape(chunks)
