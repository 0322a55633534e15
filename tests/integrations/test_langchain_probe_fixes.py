"""`healjson.langchain`: a turn that calls the structured-response tools with several different
answers (two members of a union, or one member with other arguments) is asked again, never a
silent pick; the same call twice is one answer. A `ToolStrategy` answer read from the message's
text instead of a call says so (`structured_from_text`).

A real LangChain v1 agent (`create_agent`) with `ChatOpenAI` over real HTTP to
`ScriptedServer`.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy

from healjson import Flag, Healed
from healjson.langchain import OUTCOME_KEY, HealMiddleware
from healjson.testing import ScriptedReply, ScriptedServer
from langchain_kit import scripted_model
from pinned import pinned


class Ship(BaseModel):
    order_id: str


class Refund(BaseModel):
    order_id: str
    amount: float


def turn(*made: tuple[str, dict[str, Any]]) -> ScriptedReply:
    """One model turn calling each `(tool name, arguments)` in `made`."""
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(a)}}
        for n, (name, a) in enumerate(made)
    ]
    return ScriptedReply(tool_calls=calls, finish_reason="tool_calls")


def run(
    script: list[ScriptedReply], response_format: Any = None
) -> tuple[dict[str, Any], list[Any]]:
    """The agent (`ToolStrategy(Ship | Refund)` unless `response_format` says otherwise, healed)
    on `script`: its result and requests."""
    response_format = response_format or ToolStrategy(Ship | Refund)
    message = {"messages": [{"role": "user", "content": "Handle order A1."}]}
    with ScriptedServer(script) as server, httpx.Client() as http:
        model = scripted_model(server, http)
        agent = create_agent(model, response_format=response_format, middleware=[HealMiddleware()])
        return agent.invoke(message), list(server.requests)


def offered(request: Any) -> set[str]:
    """The tool names a model request offered."""
    return {entry["function"]["name"] for entry in request.body.get("tools", ())}


def test_two_members_called_in_one_turn_are_asked_again() -> None:
    """A turn calling `Ship` and `Refund` is never silently `Ship`: the model is asked again,
    offered both tools, and its one answer is the structured response."""
    script = [
        turn(("Ship", {"order_id": "A1"}), ("Refund", {"order_id": "A1", "amount": 5})),
        turn(("Refund", {"order_id": "A1", "amount": 5})),
    ]
    result, requests = run(script)
    assert Refund(order_id="A1", amount=5) == result["structured_response"]
    assert 2 == len(requests)
    assert {"Ship", "Refund"} == offered(requests[1])
    assert result[OUTCOME_KEY].attempts[0].diagnostics


def test_one_member_called_twice_with_other_arguments_is_asked_again() -> None:
    """Two `Ship` calls with different orders are two answers: asked again, never the first."""
    script = [
        turn(("Ship", {"order_id": "A1"}), ("Ship", {"order_id": "A2"})),
        turn(("Ship", {"order_id": "A2"})),
    ]
    result, requests = run(script)
    assert Ship(order_id="A2") == result["structured_response"]
    assert 2 == len(requests)


ANSWERS: list[tuple[str, dict[str, Any]]] = [
    ("Ship", {"order_id": "A1"}),
    ("Ship", {"order_id": "A2"}),
    ("Refund", {"order_id": "A1", "amount": 5.0}),
    ("Refund", {"order_id": "A1", "amount": 7.0}),
]
FINAL = {"Ship": {"order_id": "Z9"}, "Refund": {"order_id": "Z9", "amount": 1.0}}


@pinned(max_examples=10)
@given(st.lists(st.sampled_from(ANSWERS), min_size=1, max_size=3))
def test_a_turn_is_one_answer_only_when_its_calls_agree(made: list[Any]) -> None:
    """A turn of 1-3 structured calls is its answer when every call is the same one; with
    different answers it is asked again and the next turn's answer is the value."""
    name, args = made[0]
    again = name if {m[0] for m in made} == {name} else "Refund"  # a member's repair offers it
    result, requests = run([turn(*made), turn((again, FINAL[again]))])
    outcome = result[OUTCOME_KEY]
    assert isinstance(outcome, Healed)
    if len({json.dumps(m, sort_keys=True) for m in made}) == 1:
        assert 1 == len(requests)
        expected: BaseModel = (Ship if name == "Ship" else Refund)(**args)
        assert len(made) == 1 or outcome.flags  # the same call again: one answer, flagged
    else:
        assert 2 == len(requests)
        expected = (Ship if again == "Ship" else Refund)(**FINAL[again])
    assert expected == result["structured_response"]
    assert type(expected) is type(result["structured_response"])


@pytest.mark.parametrize("strategy", ["tool", "bare schema"])
def test_a_tool_strategy_answer_given_as_text_is_flagged_as_read_from_text(strategy: str) -> None:
    """Under `ToolStrategy` a JSON answer in the text heals flagged `structured_from_text`; a
    bare schema, where the text may be LangChain's own provider format, is not flagged."""
    response_format = ToolStrategy(Ship) if strategy == "tool" else Ship
    text = ScriptedReply(content='Here you go: {"order_id": "A1"}')
    result, requests = run([text], response_format)
    outcome = result[OUTCOME_KEY]
    assert isinstance(outcome, Healed)
    assert outcome.value == Ship(order_id="A1")
    assert len(requests) == 1
    assert (Flag.STRUCTURED_FROM_TEXT in outcome.flags) is (strategy == "tool")
    assert Flag.PROSE_AROUND in outcome.flags
