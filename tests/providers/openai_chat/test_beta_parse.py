"""`wrap(OpenAI()).beta.chat.completions.parse` and `.stream` (the SDK's `beta.chat` is its
`chat`): on a wrapped client they heal as `chat.completions.parse` / `.stream` do; a user's
script against the scripted server, with the real SDK over real HTTP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

import healjson
from drop_in import EXPECTED, GOOD, MODES, Invoice, Mode
from drop_in import run_openai as run
from healjson import Healed
from healjson.testing import ScriptedReply, ScriptedServer

MESSAGES = [{"role": "user", "content": "Extract the invoice."}]
PROSE = f"Sure! Here it is: {GOOD}"


def beta_parse(client: Any) -> Any:
    """A user's `client.beta.chat.completions.parse(..., response_format=Invoice)`."""
    return client.beta.chat.completions.parse(
        model="gpt-test", messages=MESSAGES, response_format=Invoice
    )


def beta_stream(mode: Mode) -> Callable[[Any], Any]:
    """A user's `with client.beta.chat.completions.stream(...) as stream:` read to its end,
    then `get_final_completion()`."""

    def sync(client: Any) -> Any:
        manager = client.beta.chat.completions.stream(
            model="gpt-test", messages=MESSAGES, response_format=Invoice
        )
        with manager as stream:
            for _ in stream:
                pass
            return stream.get_final_completion()

    async def asynchronous(client: Any) -> Any:
        manager = client.beta.chat.completions.stream(
            model="gpt-test", messages=MESSAGES, response_format=Invoice
        )
        async with manager as stream:
            async for _ in stream:
                pass
            return await stream.get_final_completion()

    return sync if mode == "sync" else asynchronous


@pytest.mark.parametrize("mode", MODES)
def test_beta_parse_heals_as_parse_does(scripted_server: ScriptedServer, mode: Mode) -> None:
    """`beta.chat.completions.parse` on a wrapped client returns the SDK's
    `ParsedChatCompletion` with the healed value, where the bare SDK's raises."""
    scripted_server.extend([PROSE, PROSE])
    with pytest.raises(ValueError, match="Invalid JSON"):
        run(scripted_server, mode, beta_parse, wrap=False)

    completion = run(scripted_server, mode, beta_parse)

    assert isinstance(completion, openai.types.chat.ParsedChatCompletion)
    assert EXPECTED == completion.choices[0].message.parsed
    assert isinstance(healjson.outcome_of(completion), Healed)


@pytest.mark.parametrize("mode", MODES)
def test_beta_stream_heals_as_stream_does(scripted_server: ScriptedServer, mode: Mode) -> None:
    """`beta.chat.completions.stream` on a wrapped client ends with a final completion whose
    `.parsed` is healed, where the bare SDK's stream raises."""
    reply = ScriptedReply(content=PROSE, chunk_chars=6)
    scripted_server.extend([reply, reply])
    with pytest.raises(ValueError, match=r"Invalid JSON|EOF|expected"):
        run(scripted_server, mode, beta_stream(mode), wrap=False)

    final = run(scripted_server, mode, beta_stream(mode))

    assert EXPECTED == final.choices[0].message.parsed
    assert isinstance(healjson.outcome_of(final), Healed)


def test_the_rest_of_beta_is_the_sdks() -> None:
    """Every other attribute of a wrapped client's `beta` is the SDK's own, and a client
    without `beta` has none on its wrapper either."""
    with openai.OpenAI(api_key="test") as sdk:
        client = healjson.wrap(sdk)
        assert client.beta.chat is client.chat
        assert type(sdk.beta.responses) is type(client.beta.responses)
        assert sdk.beta.assistants.create == client.beta.assistants.create

    class Plain:
        """An OpenAI-shaped client with no `beta`."""

        def __init__(self) -> None:
            self.chat = sdk.chat

    assert not hasattr(healjson.wrap(Plain()), "beta")
