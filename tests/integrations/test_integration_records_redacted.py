"""What an integration keeps about a run passes the same redactor an outcome's records pass:
pydantic-ai's `HealRecord`s and the Agents SDK's `HealLog` entries hold no credential shape
(`Bearer ...`) or value under a credential field's name (`api_key`) from the model's text or
value, as the events of the same runs hold none, while the tool (and the run's final output)
gets the model's value unaltered. The real SDKs over real HTTP against `ScriptedServer`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from healjson.testing import ScriptedReply, ScriptedServer, capture_events

TOKEN = "sk-live-abcdef0123456789XYZ"
BEARER = f"Bearer {TOKEN}"
KEY = "key-0123456789abcdefQRS"
# (tool argument name, the value the model writes, what no record may show)
CASES = [("auth_header", BEARER, TOKEN), ("api_key", KEY, KEY)]
IDS = ["bearer-shape", "credential-field"]


class Out(BaseModel):
    ok: bool


def _tool_call(name: str, arguments: str, call_id: str = "call_1") -> ScriptedReply:
    function = {"name": name, "arguments": arguments}
    return ScriptedReply(tool_calls=[{"id": call_id, "type": "function", "function": function}])


def _sloppy(field: str, value: str) -> str:
    """Arguments L1 heals locally: single quotes and a trailing comma."""
    return "{'url': 'https://x.example/a', '" + field + "': '" + value + "',}"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


# -- pydantic-ai ---------------------------------------------------------------------------------


def _pydantic_ai_run(server: ScriptedServer, field: str, value: str) -> tuple[Any, list[Any], Any]:
    """A pydantic-ai run whose tool call is healed locally: the capability, the values the
    tool got, the events."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from healjson.pydantic_ai import HealCapability

    final = _tool_call("final_result", '{"ok": true}', "call_2")
    server.extend([_tool_call("fetch", _sloppy(field, value)), final])
    provider = OpenAIProvider(base_url=server.base_url, api_key="test")
    heal: HealCapability[Any] = HealCapability()
    agent = Agent(OpenAIChatModel("m", provider=provider), output_type=Out, capabilities=[heal])
    got: list[Any] = []

    def fetch(url: str, **secret: str) -> str:
        got.append(secret)
        return "done"

    if field == "api_key":

        @agent.tool_plain(name="fetch")
        def fetch_key(url: str, api_key: str) -> str:
            """Fetch."""
            return fetch(url, api_key=api_key)
    else:

        @agent.tool_plain(name="fetch")
        def fetch_auth(url: str, auth_header: str) -> str:
            """Fetch."""
            return fetch(url, auth_header=auth_header)

    async def main() -> Any:
        async with agent:
            return await agent.run("go")

    with capture_events(include_content=True) as logs:
        result = asyncio.run(main())
    return heal, got, (result, list(logs))


@pytest.mark.parametrize(("field", "value", "hidden"), CASES, ids=IDS)
def test_pydantic_ai_heal_records_hold_no_credential(
    server: ScriptedServer, field: str, value: str, hidden: str
) -> None:
    """A `HealRecord` of a healed tool call shows no credential in its raw text, value or
    repr, as the run's events show none, while the tool got the model's value unaltered."""
    heal, got, (result, logs) = _pydantic_ai_run(server, field, value)

    assert [{field: value}] == got  # the tool: the real value
    (record,) = [r for r in heal.records(result.run_id) if r.name == "fetch"]
    assert "healed" == record.action
    assert hidden not in record.raw
    assert hidden not in json.dumps(record.value)
    assert hidden not in repr(record)
    assert "https://x.example/a" == record.value["url"]  # only the credential is masked
    assert hidden not in json.dumps(logs, default=str)


# -- the OpenAI Agents SDK -----------------------------------------------------------------------


def _agents_run(server: ScriptedServer, field: str, value: str, final: str) -> tuple[Any, ...]:
    """An Agents SDK run whose tool call (and final output, `final`) is healed locally: the
    log, the values the tool got, the run's result."""
    agents = pytest.importorskip("agents")
    from agents import Agent, FunctionTool, OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI

    from healjson.agents import HealLog, heal_final_output, heal_tools

    agents.set_tracing_disabled(True)
    got: list[Any] = []

    async def invoke(ctx: Any, arguments: str) -> str:
        got.append(json.loads(arguments)[field])
        return "done"

    schema = {
        "type": "object",
        "properties": {"url": {"type": "string"}, field: {"type": "string"}},
        "required": ["url", field],
        "additionalProperties": False,
    }
    tool = FunctionTool("fetch", "Fetch.", schema, invoke, strict_json_schema=True)
    server.extend([_tool_call("fetch", _sloppy(field, value)), final])
    log = HealLog()

    async def main() -> Any:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as oc:
            model = OpenAIChatCompletionsModel(model="m", openai_client=oc)
            agent = Agent(name="a", tools=[tool], model=model, output_type=Secretive)
            handlers = {"invalid_final_output": heal_final_output(log=log)}
            return await Runner.run(heal_tools(agent, log=log), "go", error_handlers=handlers)

    return log, got, asyncio.run(main())


class Secretive(BaseModel):
    note: str


@pytest.mark.parametrize(("field", "value", "hidden"), CASES, ids=IDS)
def test_agents_heal_log_entries_hold_no_credential(
    server: ScriptedServer, field: str, value: str, hidden: str
) -> None:
    """A `HealLog` entry of a healed tool call and of a healed final output shows no
    credential in its raw text, value, `str` or `repr`, while the tool and the run's final
    output got the model's values unaltered."""
    final = "Here: {'note': 'use " + BEARER + "',}"  # a final output healed locally

    log, got, result = _agents_run(server, field, value, final)

    assert [value] == got  # the tool: the real value
    assert f"use {BEARER}" == result.final_output.note  # the run's value: unaltered
    entries = list(log)
    assert {"tool_arguments", "final_output"} == {e.where for e in entries}
    assert all(e.healed for e in entries)
    for e in entries:
        assert hidden not in e.raw_text
        assert TOKEN not in e.raw_text
        assert TOKEN not in (e.value_json or "")
        assert hidden not in (e.value_json or "")
        assert hidden not in repr(e)
    assert hidden not in str(log)
    assert TOKEN not in str(log)
