"""`healjson.pydantic_ai`: a value pydantic-ai gets from a repair is validated once, by
pydantic-ai, as a clean one is. A real pydantic-ai `Agent` with its OpenAI model over real HTTP
to `ScriptedServer` (and its `FunctionModel` for the property).

A tool's parameter (or an output's field) may carry a validator that is not idempotent: here
`dollars_to_cents`, the model writes dollars and the tool gets cents. Validated once, `12.5` is
1250; validated again, 125000. `HealCapability` hands pydantic-ai the JSON data L1 read, never
the value healjson validated from it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, BeforeValidator

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from healjson import Flag
from healjson.pydantic_ai import HealCapability
from healjson.testing import ScriptedReply, ScriptedServer, corrupted


def dollars_to_cents(value: Any) -> int:
    """The model writes dollars; the value is cents (not idempotent: a second run is x100)."""
    return round(float(value) * 100)


Cents = Annotated[int, BeforeValidator(dollars_to_cents)]


class Receipt(BaseModel):
    customer: str
    amount_cents: Cents


def call(name: str, arguments: str, call_id: str = "call_1") -> ScriptedReply:
    function = {"name": name, "arguments": arguments}
    return ScriptedReply(tool_calls=[{"id": call_id, "type": "function", "function": function}])


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


def run(
    server: ScriptedServer, tool_args: str, output_args: str, *, default: bool = False
) -> tuple[list[int], Any, HealCapability[Any]]:
    """One run: the model calls `charge` with `tool_args`, then answers with `output_args`;
    what the tool got, the output, the capability. `default`: the amount has a default."""
    server.extend([call("charge", tool_args), call("final_result", output_args, "call_2")])
    model = OpenAIChatModel(
        "scripted", provider=OpenAIProvider(base_url=server.base_url, api_key="test")
    )
    heal: HealCapability[Any] = HealCapability()
    agent = Agent(model, output_type=Receipt, capabilities=[heal])
    charged: list[int] = []

    if default:

        @agent.tool_plain
        def charge(customer: str, amount_cents: Cents = 0) -> str:
            """Charge the customer; `amount_cents` is written in dollars."""
            charged.append(amount_cents)
            return "ok"

    else:

        @agent.tool_plain
        def charge(customer: str, amount_cents: Cents) -> str:  # type: ignore[misc]
            """Charge the customer; `amount_cents` is written in dollars."""
            charged.append(amount_cents)
            return "ok"

    async def go() -> Any:
        async with agent:
            return await agent.run("Charge Ada 12.50 dollars.")

    return charged, asyncio.run(go()).output, heal


CLEAN = '{"customer": "Ada", "amount_cents": 12.5}'
SLOPPY = {
    "single_quotes_trailing_comma": "{'customer': 'Ada', 'amount_cents': 12.5,}",
    "fenced": '```json\n{"customer": "Ada", "amount_cents": 12.5}\n```',
    "key_case": '{"Customer": "Ada", "amount_cents": 12.5}',
    "quoted_number": "{'customer': 'Ada', 'amount_cents': '12.5'}",
}


@pytest.mark.parametrize("sloppiness", sorted(SLOPPY))
def test_repaired_arguments_and_output_are_validated_once_as_clean_ones_are(
    server: ScriptedServer, sloppiness: str
) -> None:
    """Repaired tool arguments and a repaired output reach the tool and the run validated once
    (1250 cents, as clean ones do); each record holds the data pydantic-ai was handed."""
    charged, output, heal = run(server, CLEAN, CLEAN)
    assert charged == [1250]
    assert output == Receipt(customer="Ada", amount_cents=12.5)
    assert heal.records() == []

    charged, output, heal = run(server, SLOPPY[sloppiness], SLOPPY[sloppiness])
    assert charged == [1250]
    assert output.amount_cents == 1250
    records = heal.records()
    assert records[0].name == "charge"  # (pydantic-ai reads a fenced output itself)
    assert {r.action for r in records} == {"healed"}
    for record in records:  # what pydantic-ai was handed: the model's data, not 1250
        assert float(record.value["amount_cents"]) == 12.5


def test_a_key_aligned_after_pydantic_ai_accepted_the_value_is_validated_once(
    server: ScriptedServer,
) -> None:
    """pydantic-ai accepts a call whose key misspells a field with a default (the default is
    taken, the key ignored): the aligned data it is handed is validated once."""
    charged, _, heal = run(server, '{"customer": "Ada", "Amount_Cents": 12.5}', CLEAN, default=True)
    assert charged == [1250]
    [record] = heal.records()
    assert record.flags == (Flag.KEYS_ALIGNED,)
    assert record.value == {"customer": "Ada", "amount_cents": 12.5}


@settings(max_examples=20, deadline=None)
@given(data=st.data(), cents=st.integers(min_value=1, max_value=10**7), name=st.text(max_size=20))
def test_a_tool_gets_exactly_one_application_of_its_validator(
    data: st.DataObject, cents: int, name: str
) -> None:
    """Any rendering of the arguments the way models break JSON: a recoverable one runs the tool
    with the model's dollars converted once (never twice), with no re-ask; a cut one is asked
    again and the tool runs once, with the value sent then."""
    broken = data.draw(corrupted({"customer": name, "amount_cents": cents / 100}))
    clean = json.dumps({"customer": name, "amount_cents": cents / 100})
    calls: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(len(messages))
        if len(calls) == 1:
            part = ToolCallPart("charge", broken.text, "call_1")
            return ModelResponse(parts=[part], finish_reason=broken.finish_reason or "tool_call")
        if len(calls) == 2 and not broken.recoverable:
            return ModelResponse(parts=[ToolCallPart("charge", clean, "call_2")])
        return ModelResponse(parts=[ToolCallPart("final_result", clean, "call_3")])

    charged: list[int] = []
    agent: Agent[None, Receipt] = Agent(
        FunctionModel(model), output_type=Receipt, capabilities=[HealCapability()]
    )

    @agent.tool_plain
    def charge(customer: str, amount_cents: Cents) -> str:
        charged.append(amount_cents)
        return "ok"

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        assert agent.run_sync("Charge.").output.amount_cents == cents
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert charged == [cents]
    assert len(calls) == (2 if broken.recoverable else 3)
