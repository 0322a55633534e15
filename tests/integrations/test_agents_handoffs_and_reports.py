"""`healjson.agents`: the guardrail's report (the SDK's `output_info`,
kept in the run's results and state) never shows the model client's key; `heal_tools` heals the
whole run, the agents it hands off to included; and an answer the SDK wanted in its `{"response":
...}` wrapper that came bare is flagged like every other repair. The real OpenAI Agents SDK over
real HTTP against `ScriptedServer`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, BaseModel, ValidationInfo

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    FunctionTool,
    Handoff,
    OutputGuardrailTripwireTriggered,
    function_tool,
    handoff,
)

from agents_kit import Ran, run, sdk_trace_exporter_closed  # noqa: E402, F401
from healjson import Violation, contract  # noqa: E402
from healjson.agents import (  # noqa: E402
    ContractReport,
    ContractStopped,
    HealLog,
    contract_guardrail,
    heal_final_output,
    heal_tools,
)
from healjson.testing import ScriptedReply  # noqa: E402

agents.set_tracing_disabled(True)

KEY = "sk-agents-secret-0123456789abcdef"


def call(name: str, arguments: str, call_id: str = "call_1") -> ScriptedReply:
    """A reply that calls tool `name` with `arguments`."""
    function = {"name": name, "arguments": arguments}
    return ScriptedReply(tool_calls=[{"id": call_id, "type": "function", "function": function}])


# ---------------------------------------------------------------------------------------------
# The guardrail's report: redacted with the client's secrets
# ---------------------------------------------------------------------------------------------


class Note(BaseModel):
    note: str


@contract(fields=("note",))
def no_key_in_the_note(note: Note) -> Violation | None:
    """A note quotes no key."""
    return Violation("a note must not quote a key") if "sk-" in note.note else None


@contract
def no_key_at_all(output: Any) -> Violation | None:
    """The whole output quotes no key."""
    return Violation("the output must not quote a key") if "sk-" in str(output) else None


@contract(
    fields=("note",),
    on_fail="fix",
    fix=lambda note: note.model_copy(update={"note": note.note + " (checked)"}),
)
def checked_note(note: Note) -> Violation | None:
    """A note says it was checked."""
    return None if note.note.endswith("(checked)") else Violation("a note must be checked")


@contract(fields=("note",), on_fail="warn")
def short_note(note: Note) -> Violation | None:
    """A note is short."""
    return Violation("a note should be short") if len(note.note) > 10 else None


def shown(report: Any) -> list[str]:
    """Every way a report is shown: `repr`, `str`, and the SDK's own serialization of an
    `output_info` (a dataclass's fields as data, anything else through `str`)."""
    return [repr(report), str(report), json.dumps(dataclasses.asdict(report), default=str)]


NOTE_REPLY = json.dumps({"note": "key " + KEY})


@pytest.mark.parametrize(
    ("output_type", "rule", "reply"),
    [
        (Note, no_key_in_the_note, NOTE_REPLY),
        (Note, no_key_at_all, NOTE_REPLY),
        (Note, checked_note, NOTE_REPLY),
        (str, no_key_at_all, "key " + KEY),
    ],
    ids=["field-rule", "whole-output-rule", "fix-rule", "plain-text"],
)
def test_a_tripped_guardrail_shows_the_clients_key_nowhere(
    output_type: Any, rule: Any, reply: str
) -> None:
    """The key of the agent's client, echoed in an output that breaks a contract, is in no
    rendering of the guardrail's result, its report (diagnostics, fixed value) or its log entry,
    while the report still says which rule broke."""
    log = HealLog()

    def build(model: Any) -> Agent[Any]:
        guardrail = contract_guardrail([rule], log=log)
        return Agent(name="a", model=model, output_type=output_type, output_guardrails=[guardrail])

    ran = run(build, [ScriptedReply(content=reply)], key=KEY)

    assert isinstance(ran.error, OutputGuardrailTripwireTriggered)
    output = ran.error.guardrail_result.output
    report = output.output_info
    assert isinstance(report, ContractReport)
    assert not report.ok
    assert [rule.name] == [d.rule for d in report.diagnostics]
    assert KEY not in repr(output)
    for text in shown(report):
        assert KEY not in text
    assert "[redacted]" in str(report)
    [entry] = log.entries
    assert KEY not in repr(entry)
    assert KEY not in str(log)


def test_a_passing_guardrails_warnings_in_the_run_state_hold_no_key() -> None:
    """A `"warn"` rule broken by an output that echoes the client's key lets it pass, and the
    report the SDK keeps in the run's results and serializes into its run state holds no key."""

    def build(model: Any) -> Agent[Any]:
        guardrail = contract_guardrail([short_note])
        return Agent(name="a", model=model, output_type=Note, output_guardrails=[guardrail])

    ran = run(build, [ScriptedReply(content=NOTE_REPLY)], key=KEY)

    assert ran.result is not None
    assert f"key {KEY}" == ran.result.final_output.note  # the run's value: what the model sent
    [checked] = ran.result.output_guardrail_results
    report = checked.output.output_info
    assert report.ok
    assert [w.path for w in report.warnings] == ["note"]
    for text in shown(report):
        assert KEY not in text
    state = ran.result.to_state().to_json()
    [kept] = state["output_guardrail_results"]
    assert KEY not in json.dumps(kept["output"]["outputInfo"])


def test_a_report_without_secrets_keeps_the_outputs_own_values() -> None:
    """A fixed value that shows no secret stays a value of the output type."""

    def build(model: Any) -> Agent[Any]:
        guardrail = contract_guardrail([checked_note])
        return Agent(name="a", model=model, output_type=Note, output_guardrails=[guardrail])

    ran = run(build, [ScriptedReply(content='{"note": "fine"}')], key=KEY)

    assert isinstance(ran.error, OutputGuardrailTripwireTriggered)
    report = ran.error.guardrail_result.output.output_info
    assert Note(note="fine (checked)") == report.fixed_value


def masked(text: str, info: ValidationInfo) -> str:
    """The text, or `masked` when the validation context says `mask` (the SDK gives none)."""
    return "masked" if (info.context or {}).get("mask") else text


@contract(fields=("text",), on_fail="stop")
def no_key_saved(args: Any) -> Violation | None:
    """A saved text never quotes a key."""
    return Violation("a saved text must not quote a key") if "sk-" in args.text else None


def test_a_stop_rules_error_shows_the_clients_key_nowhere() -> None:
    """Arguments whose value as the SDK reads it (no validation context) echoes the client's
    key and breaks a `"stop"` rule end the run with `ContractStopped`, whose message and
    diagnostics hold no key."""

    @function_tool
    def save(text: Annotated[str, AfterValidator(masked)]) -> str:
        """Save a text."""
        return "OK"

    def build(model: Any) -> Agent[Any]:
        return heal_tools(Agent(name="a", model=model, tools=[save]), {"save": [no_key_saved]})

    arguments = json.dumps({"text": "key " + KEY})
    ran = run(build, [call("save", arguments), "Done."], key=KEY, context={"mask": True})

    error = ran.error
    assert isinstance(error, ContractStopped)
    assert ("no_key_saved",) == error.rules
    assert KEY not in str(error)
    assert KEY not in repr(error.diagnostics)
    assert KEY not in json.dumps([d.to_dict() for d in error.diagnostics], default=str)


# ---------------------------------------------------------------------------------------------
# heal_tools: the agents a run hands off to are healed too
# ---------------------------------------------------------------------------------------------


def make_search(ran_with: list[tuple[str, int]]) -> FunctionTool:
    """A `search` tool that records what it ran with in `ran_with`."""

    @function_tool
    def search(query: str, limit: int) -> str:
        """Search the catalogue."""
        ran_with.append((query, limit))
        return "OK"

    return search


BROKEN_SEARCH = "{'query': 'red lamp', 'limit': 2,}"


def target_of(kind: str, agent: Agent[Any]) -> Agent[Any] | Handoff[Any, Any]:
    """`agent` as a handoff target: itself, or the SDK's `handoff(agent)`."""
    return agent if kind == "agent" else handoff(agent)


@pytest.mark.parametrize("kind", ["agent", "handoff"])
def test_the_tools_of_an_agent_handed_off_to_are_healed(kind: str) -> None:
    """Broken arguments sent to a tool of the agent a healed agent hands off to are healed and
    the tool runs on them (logged), where the SDK alone never runs the tool."""
    script = [call("transfer_to_specialist", "{}"), call("search", BROKEN_SEARCH, "c2"), "Done."]

    def build(healed: bool, ran_with: list[tuple[str, int]], log: HealLog) -> Any:
        def agent(model: Any) -> Agent[Any]:
            specialist = Agent(name="specialist", model=model, tools=[make_search(ran_with)])
            triage = Agent(name="triage", model=model, handoffs=[target_of(kind, specialist)])
            return heal_tools(triage, log=log) if healed else triage

        return agent

    alone: list[tuple[str, int]] = []
    run(build(False, alone, HealLog()), list(script))
    assert alone == []

    ran_with: list[tuple[str, int]] = []
    log = HealLog()
    ran = run(build(True, ran_with, log), list(script))

    assert ran.result is not None
    assert ran.result.last_agent.name == "specialist"
    assert ran_with == [("red lamp", 2)]
    [entry] = log.entries
    assert entry.healed
    assert (entry.where, entry.name) == ("tool_arguments", "search")


def test_tool_contracts_reach_a_tool_only_a_handoff_target_has() -> None:
    """`tool_contracts` may name a tool only an agent handed off to has, and its rule judges
    that tool's arguments there: a breach is told to the model, the tool not run."""

    @contract(fields=("limit",))
    def small(args: Any) -> Violation | None:
        return Violation("limit must be at most 10") if args.limit > 10 else None

    ran_with: list[tuple[str, int]] = []
    told: list[str] = []

    def model_turn(body: dict[str, Any]) -> ScriptedReply:
        told.append(str(body["messages"][-1].get("content")))
        return ScriptedReply(content="Done.")

    def build(model: Any) -> Agent[Any]:
        specialist = Agent(name="specialist", model=model, tools=[make_search(ran_with)])
        triage = Agent(name="triage", model=model, handoffs=[specialist])
        return heal_tools(triage, {"search": [small]})

    script = [
        call("transfer_to_specialist", "{}"),
        call("search", '{"query": "lamp", "limit": 500}', "c2"),
        model_turn,
    ]
    ran = run(build, script)

    assert ran.result is not None
    assert ran_with == []
    assert "limit must be at most 10" in told[-1]


def test_handoffs_in_a_cycle_are_healed_once_each() -> None:
    """Agents that hand off to each other are each healed into one clone (the cycle kept, the
    originals untouched, the handoff handing on the clone its SDK reference names), and
    healing again adds no second layer to a tool."""
    search = make_search([])
    a = Agent(name="a", tools=[search])
    b = Agent(name="b", tools=[search], handoffs=[a])
    a.handoffs = [handoff(b)]

    healed = heal_tools(heal_tools(a))

    [to_b] = healed.handoffs
    assert isinstance(to_b, Handoff)
    healed_b = to_b._agent_ref() if to_b._agent_ref is not None else None
    assert isinstance(healed_b, Agent)
    assert healed_b is not b
    [back] = healed_b.handoffs
    assert back is healed
    for agent in (healed, healed_b):
        [tool] = agent.tools
        assert isinstance(tool, FunctionTool)
        assert tool is not search
        assert not hasattr(tool.on_invoke_tool.inner, "inner")  # type: ignore[attr-defined]
    assert a.tools == [search]
    assert b.tools == [search]
    assert b.handoffs == [a]
    returned: Any = asyncio.run(to_b.on_invoke_handoff(None, ""))  # type: ignore[arg-type]
    assert returned is healed_b


# ---------------------------------------------------------------------------------------------
# An answer without the SDK's wrapper: flagged
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "flags"),
    [("[1, 2]", {"wrapped"}), ("```json\n[1, 2]\n```", {"wrapped", "code_fence"})],
    ids=["bare", "fenced"],
)
def test_an_answer_without_the_sdks_wrapper_is_flagged(reply: str, flags: set[str]) -> None:
    """A bare list for a `list[int]` output (which the SDK wants as `{"response": [...]}`) is
    delivered, flagged `wrapped` on its log entry and its events, as every repair is."""
    log = HealLog()
    handlers = {"invalid_final_output": heal_final_output(log=log)}
    ran = run(
        lambda model: Agent(name="n", model=model, output_type=list[int]),
        [ScriptedReply(content=reply)],
        error_handlers=handlers,
    )

    assert ran.result is not None
    assert [1, 2] == ran.result.final_output
    [entry] = log.entries
    assert entry.healed
    assert flags == set(entry.flags)
    [healed] = [event for event in ran.events if event["event"] == "healjson.healed"]
    assert flags == set(healed["flags"])


def test_an_answer_in_the_sdks_wrapper_is_not_flagged_wrapped() -> None:
    """An answer in the SDK's wrapper, healed for another slip, is never flagged `wrapped`."""
    log = HealLog()
    handlers = {"invalid_final_output": heal_final_output(log=log)}
    ran = run(
        lambda model: Agent(name="n", model=model, output_type=list[int]),
        [ScriptedReply(content='{"response": [1, 2],}')],
        error_handlers=handlers,
    )

    assert ran.result is not None
    assert [1, 2] == ran.result.final_output
    [entry] = log.entries
    assert "wrapped" not in entry.flags
    assert "syntax_repaired" in entry.flags
