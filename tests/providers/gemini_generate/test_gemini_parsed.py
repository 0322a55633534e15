"""google-genai's own structured call on a wrapped client: `models.generate_content(config=
{"response_schema": M})` returns the SDK's `GenerateContentResponse` with `.parsed` healed; a
user's script against the scripted server, with the real SDK over real HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import types as genai_types

import healjson
from drop_in import EXPECTED, GOOD, MODES, Mode, gemini_call, total_positive
from healjson import Degraded, Healed
from healjson.testing import ScriptedServer
from sdk_calls import close_gemini


def generate(server: ScriptedServer, mode: Mode, wrap: bool = True, **kwargs: Any) -> Any:
    """A user's `client.models.generate_content(model=..., contents=..., config={
    "response_schema": Invoice})` (through `client.aio` for `async`), the client closed after."""
    request, options = gemini_call(server, **kwargs)
    if mode == "async":

        async def go() -> Any:
            async with aiohttp.ClientSession() as session:
                http = genai_types.HttpOptions(**options, aiohttp_client=session)
                client = genai.Client(api_key="test-key", http_options=http)
                try:
                    models = (healjson.wrap(client) if wrap else client).aio.models
                    return await models.generate_content(**request)
                finally:
                    await client.aio.aclose()
                    client.close()

        return asyncio.run(go())
    client = genai.Client(api_key="test-key", http_options=genai_types.HttpOptions(**options))
    try:
        return (healjson.wrap(client) if wrap else client).models.generate_content(**request)
    finally:
        close_gemini(client)


@pytest.mark.parametrize("mode", MODES)
def test_parsed_is_healed_where_the_bare_sdk_has_none(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A prose-wrapped answer: the bare SDK's `.parsed` is None, the wrapped client's the
    healed model, on the SDK's own response type."""
    answer = f"Sure! Here it is: {GOOD}"
    scripted_server.extend([answer, answer])
    bare = generate(scripted_server, mode, wrap=False)
    assert bare.parsed is None

    response = generate(scripted_server, mode)

    assert type(bare) is type(response)
    assert EXPECTED == response.parsed
    assert answer == response.text
    assert isinstance(healjson.outcome_of(response), Healed)
    assert scripted_server.requests[0].body == scripted_server.requests[1].body  # as sent


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_breach_is_healed_by_a_reask(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A value that breaks a contract is re-asked; the response is the repaired call's."""
    scripted_server.extend(['{"number": "INV-1", "total": 0}', GOOD])

    response = generate(scripted_server, mode, contracts=[total_positive])

    assert EXPECTED == response.parsed
    outcome = healjson.outcome_of(response)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls


def test_a_hopeless_answer_gives_parsed_none_and_a_degraded_outcome(
    scripted_server: ScriptedServer,
) -> None:
    """An answer no repair fixes: `.parsed` is None, the outcome degraded, nothing raised."""
    scripted_server.push("I cannot help with invoices.")
    scripted_server.repeat = True

    response = generate(scripted_server, "sync")

    assert response.parsed is None
    assert isinstance(healjson.outcome_of(response), Degraded)


def test_a_valid_answer_is_what_the_bare_sdk_parses(scripted_server: ScriptedServer) -> None:
    """A valid answer: the same `.parsed` as the bare SDK's, and one request."""
    scripted_server.extend([GOOD, GOOD])

    bare = generate(scripted_server, "sync", wrap=False)
    response = generate(scripted_server, "sync")

    assert bare.parsed == response.parsed == EXPECTED
    assert 2 == len(scripted_server.requests)
