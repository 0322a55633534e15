"""One run loop for every answer kind: a tool-call run is the loop's, so its repairs are
`RepairPrompt`s (recorded, announced, traced like any other), its deadline holds while it
streams, its repair requests stay bounded whatever the number of calls, a forced call is asked
for once more (not on every attempt), a repair that names another tool does not take the broken
call's place, and tool rules that warn or fix leave their trace on the outcome."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, Reason, Reply, ToolCall, Violation, contract
from healjson._core.repair.prompt import MAX_REPAIR_EXTRA_CHARS, RepairPrompt
from healjson._core.run.drive import drive_sync
from healjson._core.run.tools import Tool, ToolSpec, start_tools
from healjson._core.target.target import target_for
from healjson.testing import ScriptedReply, ScriptedServer, capture_events

USER = ({"role": "user", "content": "Do the things."},)


class Ping(BaseModel):
    host: str


class Order(BaseModel):
    sku: str
    qty: int


def tools(**contracts: Any) -> dict[str, Tool]:
    return {
        "ping": Tool("ping", target_for(Ping), tuple(contracts.get("ping", ()))),
        "order": Tool("order", target_for(Order), tuple(contracts.get("order", ()))),
    }


def run(spec: ToolSpec, replies: list[Reply]) -> tuple[Any, list[list[dict[str, Any]]]]:
    """The run on a scripted call; the messages of every request it made."""
    sent: list[list[dict[str, Any]]] = []

    def call(messages: list[dict[str, Any]], **params: Any) -> Reply:
        sent.append(messages)
        return replies[min(len(sent), len(replies)) - 1]

    return drive_sync(start_tools(spec, USER).flow, call), sent


def calls(*made: ToolCall, text: str | None = None) -> Reply:
    return Reply(text, "tool_calls", tool_calls=made)


def added_chars(messages: list[dict[str, Any]]) -> int:
    """What a repair request adds to the original messages: content and call arguments."""
    extra = messages[len(USER) :]
    size = 0
    for message in extra:
        size += len(message.get("content") or "")
        for made in message.get("tool_calls") or ():
            size += len(made["function"]["arguments"]) + len(made["function"]["name"])
    return size


def test_a_tool_call_repair_is_a_repair_prompt_recorded_announced_and_traced() -> None:
    """The attempt after a broken call carries its `RepairPrompt`, the record stores it, a repair
    event is sent for it, and the trace shows its rendering."""
    spec = ToolSpec(tools(), HealPolicy(max_attempts=2))
    broken = calls(ToolCall("order", '{"sku": "A", "qty": "many"}', "c1"))
    fixed = calls(ToolCall("order", '{"sku": "A", "qty": 2}', "c2"))
    with capture_events() as events:
        outcome, _ = run(spec, [broken, fixed])
    assert isinstance(outcome, Healed)
    prompt = outcome.attempts[1].prompt
    assert isinstance(prompt, RepairPrompt)
    assert prompt.calls is not None
    assert (0,) == prompt.calls.pending
    record = outcome.to_dict()
    assert record["attempts"][1]["prompt"]["rendered"] == prompt.render()
    assert "qty" in record["attempts"][1]["prompt"]["rendered"]
    assert ["healjson.repair_request"] == [
        e["event"] for e in events if e["event"] == "healjson.repair_request"
    ]
    assert prompt.render() in outcome.trace()
    again = healjson.outcome_from_dict(json.loads(json.dumps(record)))
    assert prompt == again.attempts[1].prompt


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    good=st.integers(0, 200),
    bad=st.integers(1, 60),
    size=st.sampled_from([10, 2_000, 40_000]),
    text=st.sampled_from([None, "x" * 50_000]),
)
def test_a_tool_call_repair_request_is_bounded_whatever_the_calls(
    good: int, bad: int, size: int, text: str | None
) -> None:
    """However many calls, however large their arguments or the text, a tool-call repair adds
    at most `MAX_REPAIR_EXTRA_CHARS` to the original messages."""
    spec = ToolSpec(tools(), HealPolicy(max_attempts=2))
    pad = "y" * size
    made = [ToolCall("ping", json.dumps({"host": pad}), f"g{i}") for i in range(good)]
    made += [ToolCall("order", json.dumps({"sku": pad, "qty": "?"}), f"b{i}") for i in range(bad)]
    _, sent = run(spec, [calls(*made, text=text), calls()])
    assert 2 == len(sent)
    assert added_chars(sent[1]) <= MAX_REPAIR_EXTRA_CHARS


def test_one_broken_call_among_150_good_ones_is_asked_again_within_the_bound() -> None:
    """The case a probe found (334,607 characters added): now within the bound, and the broken
    call is still named and sent back with its problems."""
    spec = ToolSpec(tools(), HealPolicy(max_attempts=2))
    good = [ToolCall("ping", json.dumps({"host": "h" * 2_200}), f"g{i}") for i in range(150)]
    bad = ToolCall("order", '{"sku": "A", "qty": "many"}', "broken")
    _, sent = run(spec, [calls(*good, bad), calls(ToolCall("order", '{"sku": "A", "qty": 1}'))])
    assert added_chars(sent[1]) <= MAX_REPAIR_EXTRA_CHARS
    assert "`order` (broken)" in sent[1][-1]["content"]
    answered = [m["tool_call_id"] for m in sent[1] if m.get("role") == "tool"]
    assert "broken" in answered


def test_a_forced_call_missing_is_asked_for_once_more_then_degrades() -> None:
    """A request that forces a call, answered twice without one: `tool_call_missing` after the
    second answer, even with attempts left."""
    spec = ToolSpec(tools(), HealPolicy(max_attempts=4), required="ping")
    outcome, sent = run(spec, [Reply("No call from me.", "stop")])
    assert isinstance(outcome, Degraded)
    assert (Reason.TOOL_CALL_MISSING, 2) == (outcome.reason, len(sent))
    assert "requires a call to the tool `ping`" in sent[1][-1]["content"]


def test_a_repair_that_calls_another_tool_does_not_take_the_broken_calls_place() -> None:
    """The broken `order` call made again as a `ping` call is itself broken: the run does not
    heal with a call the model was not asked for."""
    spec = ToolSpec(tools(), HealPolicy(max_attempts=2))
    broken = calls(ToolCall("order", '{"sku": "A", "qty": "many"}', "c1"))
    other = calls(ToolCall("ping", '{"host": "a.example"}', "c2"))
    outcome, _ = run(spec, [broken, other])
    assert isinstance(outcome, Degraded)
    assert "must be the call to `order` made again" in outcome.errors[0].constraint
    assert "calls[0]" == outcome.errors[0].path


def test_a_call_to_an_undeclared_tool_may_be_made_again_to_a_declared_one() -> None:
    """A call naming no declared tool is made again to whichever tool is right."""
    spec = ToolSpec(tools(), HealPolicy(max_attempts=2))
    unknown = calls(ToolCall("find", '{"q": "x"}', "c1"))
    right = calls(ToolCall("ping", '{"host": "a.example"}', "c2"))
    outcome, _ = run(spec, [unknown, right])
    assert isinstance(outcome, Healed)
    assert [("c2", "ping")] == [(c.id, c.name) for c in outcome.value.calls]


def test_tool_rules_that_warn_or_fix_leave_their_trace_on_the_outcome() -> None:
    """A `warn` rule's violation is an outcome warning under `calls[i]`; a `fix` rule is named
    in `fixed`, as for a JSON answer."""

    @contract(fields=("host",), on_fail="warn")
    def internal_host(value: Ping) -> Violation | None:
        return Violation("prefer internal hosts") if not value.host.endswith(".internal") else None

    @contract(fields=("qty",), on_fail="fix", fix=lambda value: value.model_copy(update={"qty": 1}))
    def at_least_one(value: Order) -> Violation | None:
        return Violation("qty must be at least 1") if value.qty < 1 else None

    spec = ToolSpec(tools(ping=[internal_host], order=[at_least_one]), HealPolicy(max_attempts=1))
    reply = calls(
        ToolCall("ping", '{"host": "a.example"}', "c1"),
        ToolCall("order", '{"sku": "A", "qty": 0}', "c2"),
    )
    outcome, _ = run(spec, [reply])
    assert isinstance(outcome, Healed)
    assert ["calls[0]"] == [d.path.split(".")[0] for d in outcome.warnings]
    assert ("at_least_one",) == outcome.fixed
    assert 1 == outcome.value.calls[1].arguments.qty


def _slow_tool_stream() -> ScriptedReply:
    """A streamed tool-call answer that trickles: far longer than the deadline."""
    made = {
        "id": "c1",
        "type": "function",
        "function": {"name": "Ping", "arguments": '{"host": "a.example"}'},
    }
    return ScriptedReply(tool_calls=[made], finish_reason="tool_calls", chunk_delay_s=1.0)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_streamed_tool_call_run_ends_at_its_deadline(mode: str) -> None:
    """`heal_tools=True, stream=True` is driven by the one driver: `deadline_s` ends it on time
    (`timeout`), whatever the wire does."""
    policy = HealPolicy(deadline_s=0.6)
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "ping it"}],
        "tools": [Ping],
        "heal_tools": True,
        "stream": True,
        "policy": policy,
    }
    with ScriptedServer([_slow_tool_stream()]) as server:
        started = time.monotonic()
        if mode == "sync":
            with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
                outcome = healjson.wrap(sdk).chat.completions.create(**kwargs).finish()
                elapsed = time.monotonic() - started
        else:

            async def main() -> Any:
                async with openai.AsyncOpenAI(
                    base_url=server.base_url, api_key="k", max_retries=0
                ) as sdk:
                    stream = await healjson.wrap(sdk).chat.completions.create(**kwargs)
                    return await stream.finish()

            outcome = asyncio.run(main())
            elapsed = time.monotonic() - started
    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert elapsed < 2.5  # the deadline, not the second or more the stream would take
