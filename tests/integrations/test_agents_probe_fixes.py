"""`healjson.agents` never delivers wrong data silently: a cut reply in the SDK's `{"response":
...}` wrapper gives no result, the repairs made to read that wrapper are flagged, contracts given
to the final-output handler say loudly that they never see a clean output, and the key of the
model's client never reaches a log entry or an event. The real OpenAI Agents SDK over real HTTP
against `ScriptedServer`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    ModelBehaviorError,
    OutputGuardrailTripwireTriggered,
    function_tool,
)

from agents_kit import Ran, run, sdk_trace_exporter_closed  # noqa: E402, F401
from healjson import Violation, contract  # noqa: E402
from healjson.agents import (  # noqa: E402
    HealLog,
    contract_guardrail,
    heal_final_output,
    heal_tools,
)
from healjson.testing import ScriptedReply  # noqa: E402

agents.set_tracing_disabled(True)

KEY = "sk-proj-Q9x7LmN2pR4tV6wY8zA1bC3dE5fG"


def run_numbers(script: list[Any], log: HealLog) -> Ran:
    """A `list[int]` agent (the SDK wraps it in `{"response": ...}`) run with the handler."""
    handlers = {"invalid_final_output": heal_final_output(log=log)}
    return run(
        lambda model: Agent(name="n", model=model, output_type=list[int]),
        script,
        error_handlers=handlers,
    )


@pytest.mark.parametrize(
    "reply", ['{"response": [101, 102, 103', '```json\n{"response": [101, 102, 103']
)
def test_a_cut_reply_in_the_sdks_wrapper_gives_no_result(reply: str) -> None:
    """A reply in the SDK's wrapper cut by the token limit is never delivered as a complete
    value: the SDK raises as without a handler, and the log and events say it was cut."""
    log = HealLog()
    ran = run_numbers([ScriptedReply(content=reply, finish_reason="length")], log)

    assert ran.result is None
    assert isinstance(ran.error, ModelBehaviorError)
    [entry] = log.entries
    assert not entry.healed
    assert not any(event["event"] == "healjson.healed" for event in ran.events)
    flagged = [event.get("flags") or [] for event in ran.events]
    assert any("truncated" in flags for flags in flagged)


@pytest.mark.parametrize(
    ("reply", "flags"),
    [
        ('{"response": [1, 2, 3,]}', ("syntax_repaired",)),
        ('```json\n{"response": [1, 2, 3]}\n```', ("code_fence",)),
        ("Sure: {'response': [1, 2, 3]} hope it helps", ("prose_around", "syntax_repaired")),
    ],
    ids=["trailing-comma", "fenced", "prose-single-quotes"],
)
def test_the_repairs_made_to_read_the_sdks_wrapper_are_flagged(
    reply: str, flags: tuple[str, ...]
) -> None:
    """A wrapper healed locally gives the value inside it, and the repairs made to read the
    wrapper are the flags of the log entry and of the run's events."""
    log = HealLog()
    ran = run_numbers([reply], log)

    assert ran.result is not None
    assert [1, 2, 3] == ran.result.final_output
    [entry] = log.entries
    assert entry.healed
    assert set(flags) <= set(entry.flags)
    [healed] = [event for event in ran.events if event["event"] == "healjson.healed"]
    assert set(flags) <= set(healed["flags"])


class Order(BaseModel):
    item: str
    qty: int


@contract(fields=("qty",))
def at_most_ten(order: Order) -> Violation | None:
    """An order is for at most 10."""
    return Violation("qty must be at most 10") if order.qty > 10 else None


def test_handler_contracts_warn_that_a_clean_output_needs_the_guardrail() -> None:
    """Contracts given to the handler warn that the SDK never hands it a clean output, and the
    guardrail the warning points to refuses the clean output that breaks them."""
    with pytest.warns(UserWarning, match=r"contract_guardrail"):
        handler = heal_final_output([at_most_ten])
    clean = '{"item": "a", "qty": 99}'

    def guarded(model: Any) -> Agent[Any]:
        guardrail = contract_guardrail([at_most_ten])
        return Agent(name="o", model=model, output_type=Order, output_guardrails=[guardrail])

    ran = run(guarded, [clean], error_handlers={"invalid_final_output": handler})

    assert isinstance(ran.error, OutputGuardrailTripwireTriggered)


class Note(BaseModel):
    note: str


@function_tool
def search(query: str, limit: int) -> str:
    """Search."""
    return "OK"


@pytest.mark.parametrize(
    ("final", "healed"),
    [("Here: {'note': 'key " + KEY + "',}", True), ('{"note": "key ' + KEY, False)],
    ids=["healed", "refused"],
)
def test_the_clients_key_echoed_by_the_model_is_never_recorded_nor_emitted(
    final: str, healed: bool
) -> None:
    """The API key of the client the agent's model runs on, echoed in a tool call's arguments
    and a final output, is in no log entry (raw text, value, `str`, `repr`) and no event, while
    the run's value keeps what the model sent."""
    call = {"name": "search", "arguments": "{'query': '" + KEY + "', 'limit': 2,}"}
    tool_call = ScriptedReply(tool_calls=[{"id": "call_1", "type": "function", "function": call}])
    log = HealLog()
    handlers = {"invalid_final_output": heal_final_output(log=log)}
    ran = run(
        lambda model: heal_tools(
            Agent(name="a", tools=[search], model=model, output_type=Note), log=log
        ),
        [tool_call, final],
        key=KEY,
        error_handlers=handlers,
    )

    if healed:
        assert ran.result is not None
        assert f"key {KEY}" == ran.result.final_output.note
    else:
        assert isinstance(ran.error, ModelBehaviorError)
    assert [True, healed] == [entry.healed for entry in log]
    for entry in log:
        assert KEY not in entry.raw_text
        assert KEY not in (entry.value_json or "")
        assert KEY not in repr(entry)
    assert KEY not in str(log)
    assert ran.events
    assert KEY not in json.dumps(ran.events, default=str)
