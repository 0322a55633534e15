"""`wrap(Anthropic())` steps a JSON tier down only on a 400 that rejects that tier's own
parameter (`output_config` for native structured output, the forced tool's `tools.0` /
`tool_choice` / strict tools); any other 400 that happens to mention a schema or a tool is the
provider's answer to the request: `api_error`, one call, the tier kept."""

from __future__ import annotations

import anthropic
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Reason
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

GOOD = '{"name": "Ann", "age": 31}'
USER = [{"role": "user", "content": "Ann is 31."}]


class Person(BaseModel):
    name: str
    age: int


def ask(server: ScriptedServer, json_mode: str) -> tuple[object, anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    ) as sdk:
        client = healjson.wrap(sdk, json_mode=json_mode)
        outcome = client.messages.create(
            model="claude-test", messages=USER, max_tokens=64, response_model=Person
        )
        return outcome, client


@pytest.mark.parametrize(
    ("json_mode", "message"),
    [
        ("json_schema", "messages.0.content: the schema of a tool_result block is invalid"),
        ("json_schema", "system: prompts describing a JSON schema must be shorter"),
        ("json_object", "messages.1.content.0: unexpected tool_use_id in tool_result blocks"),
        ("json_object", "max_tokens: too large for a request with tools"),
    ],
    ids=["native-schema-word", "native-schema-in-prompt", "tool-result", "tool-word"],
)
def test_a_400_that_only_mentions_a_schema_or_a_tool_keeps_the_tier(
    scripted_server: ScriptedServer, json_mode: str, message: str
) -> None:
    """A 400 about the caller's messages or limits that mentions "schema" or "tool" is an
    `api_error` after one call; the client's tier stays where it was."""
    scripted_server.push(ScriptedReply.error(400, message))
    outcome, client = ask(scripted_server, json_mode)
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == len(scripted_server.requests)
    assert json_mode == client.format.mode  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("json_mode", "message", "lower"),
    [
        ("json_schema", "output_config.format: not supported for this model", "json_object"),
        ("json_schema", "Structured outputs are not available on this model", "json_object"),
        ("json_object", "tools.0.strict: Extra inputs are not permitted", "prompt"),
        ("json_object", "tool_choice: forcing a tool is not supported here", "prompt"),
    ],
    ids=["output-config", "structured-outputs", "strict-tool", "tool-choice"],
)
def test_a_400_rejecting_the_tiers_own_parameter_steps_down(
    scripted_server: ScriptedServer, json_mode: str, message: str, lower: str
) -> None:
    """A 400 that names the tier's own parameter steps down within the same model call."""
    scripted_server.extend([ScriptedReply.error(400, message), ScriptedReply(content=GOOD)])
    outcome, client = ask(scripted_server, json_mode)
    assert isinstance(outcome, Healed)
    assert 2 == len(scripted_server.requests)
    assert lower == client.format.mode  # type: ignore[attr-defined]
