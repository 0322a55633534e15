"""`healjson.langchain`: a repair request offers what the run that asks can judge, alone: a
tool-call run's repair the agent's tools (not the structured response's tool, whose answer that
run could not take), a structured answer's repair the response format (not the agent's tools,
whose call that run could not run). A real LangChain v1 agent (`create_agent`) with `ChatOpenAI`
over real HTTP to `ScriptedServer`."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.tools import tool

from healjson.langchain import HealMiddleware
from healjson.testing import ScriptedReply, ScriptedServer
from langchain_kit import scripted_model


class Report(BaseModel):
    topic: str
    hits: int


@tool
def search(query: str) -> str:
    """Search the index for `query`."""
    return f"3 hits for {query}"


def turn(name: str, arguments: dict[str, Any]) -> ScriptedReply:
    """One model turn calling `name` with `arguments`."""
    call = {"id": "c1", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}  # fmt: skip
    return ScriptedReply(tool_calls=[call], finish_reason="tool_calls")


def run(script: list[ScriptedReply]) -> tuple[dict[str, Any], list[Any]]:
    """The healed agent (the `search` tool, `ToolStrategy(Report)`) on `script`."""
    message = {"messages": [{"role": "user", "content": "How many hits for cats?"}]}
    with ScriptedServer(script) as server, httpx.Client() as http:
        model = scripted_model(server, http)
        agent = create_agent(
            model,
            tools=[search],
            response_format=ToolStrategy(Report),
            middleware=[HealMiddleware()],
        )
        return agent.invoke(message), list(server.requests)


def offered(request: Any) -> set[str]:
    """The tool names a model request offered."""
    return {entry["function"]["name"] for entry in request.body.get("tools", ())}


def test_a_tool_calls_repair_offers_the_agents_tools_alone() -> None:
    """A call to `Search` (no such tool) is asked again offering `search` only; the healed
    call runs, and the next step's structured answer is the response."""
    script = [
        turn("Search", {"query": "cats"}),
        turn("search", {"query": "cats"}),
        turn("Report", {"topic": "cats", "hits": 3}),
    ]
    result, requests = run(script)

    assert {"search", "Report"} == offered(requests[0])
    assert {"search"} == offered(requests[1])
    assert Report(topic="cats", hits=3) == result["structured_response"]


def test_a_structured_answers_repair_offers_the_response_format_alone() -> None:
    """A `Report` missing `hits` is asked again offering `Report` only."""
    script = [turn("Report", {"topic": "cats"}), turn("Report", {"topic": "cats", "hits": 3})]
    result, requests = run(script)

    assert {"search", "Report"} == offered(requests[0])
    assert {"Report"} == offered(requests[1])
    assert Report(topic="cats", hits=3) == result["structured_response"]
