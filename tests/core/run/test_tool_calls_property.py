"""A property of healed tool calls: whatever way a call's arguments are broken (the kit's
`corrupted` renderings), the run never raises and never hands back wrong arguments: a call
healed locally (one model call) has exactly the arguments the model meant; a call no local
repair can save is asked again alone; when the budget is spent the outcome is `Degraded` with
every call as sent. The flow runs on a scripted call (no HTTP: hundreds of runs in seconds);
the HTTP path is tests/adapters/test_tool_calls.py's."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Degraded, Healed, HealPolicy, Reason, Reply, ToolCall, ToolCalls
from healjson._core.run.drive import drive_sync
from healjson._core.run.tools import Tool, ToolSpec, start_tools
from healjson._core.target.target import target_for
from healjson.testing import Corruption, capture_events, corrupted
from pinned import pinned


class Order(BaseModel):
    sku: str
    qty: int
    gift: bool
    notes: list[str]
    discount: float | None = None


class Ping(BaseModel):
    host: str


class Stamp(BaseModel):
    mark: str


PING = ToolCall("ping", '{"host": "a.example"}', "call_ping")
USER = ({"role": "user", "content": "Order it and ping."},)

orders = st.builds(
    Order,
    sku=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    qty=st.integers(-(10**6), 10**6),
    gift=st.booleans(),
    notes=st.lists(st.text(max_size=8), max_size=3),
    discount=st.none() | st.floats(-100, 100, allow_nan=False).map(lambda f: round(f, 3)),
)


def spec(attempts: int) -> ToolSpec:
    tools = {
        "order": Tool("order", target_for(Order)),
        "ping": Tool("ping", target_for(Ping)),
        "stamp": Tool("stamp", target_for(Stamp)),
    }
    return ToolSpec(tools, HealPolicy(max_attempts=attempts))


def run(replies: list[Reply], attempts: int) -> tuple[Any, list[Any]]:
    sent: list[Any] = []

    def call(messages: list[dict[str, Any]], **params: Any) -> Reply:
        sent.append(messages)
        return replies[min(len(sent), len(replies)) - 1]

    flow = start_tools(spec(attempts), USER).flow
    return drive_sync(flow, call), sent


@settings(max_examples=75, deadline=None)
@given(data=st.data(), order=orders)
def test_a_broken_call_is_healed_exactly_or_asked_again_alone(data: Any, order: Order) -> None:
    """However a call's arguments are broken, the run heals them to exactly the model's meaning
    locally, or asks for that call again alone."""
    broken: Corruption = data.draw(corrupted(order))
    made = ToolCall("order", broken.text, "call_order")
    fixed = ToolCall("order", order.model_dump_json(), "call_again")
    first = Reply(None, broken.finish_reason or "tool_calls", tool_calls=(PING, made))
    outcome, sent = run([first, Reply(None, "tool_calls", tool_calls=(fixed,))], attempts=2)

    assert isinstance(outcome, Healed), outcome
    answer = outcome.value
    assert isinstance(answer, ToolCalls)
    assert [Ping(host="a.example"), order] == [c.arguments for c in answer.calls]
    assert "call_ping" == answer.calls[0].id
    if broken.recoverable:  # every local repair heals in the first call
        assert 1 == len(sent)
        assert broken.text == answer.calls[1].raw
    else:  # a cut call: asked again, alone
        assert 2 == len(sent)
        assert outcome.attempts[0].diagnostics
        asked = sent[1]
        answers = [m for m in asked if m.get("role") == "tool"]
        assert ["call_ping", "call_order"] == [m["tool_call_id"] for m in answers]
        assert answers[0]["content"].startswith("Accepted")
        assert "`order` (call_order)" in asked[-1]["content"]
        assert "`ping`" not in asked[-1]["content"]


@settings(max_examples=50, deadline=None)
@given(data=st.data(), order=orders)
def test_a_call_never_saved_degrades_with_every_call_as_sent(data: Any, order: Order) -> None:
    """A call no repair saves degrades with every call kept exactly as sent, unless a local
    repair heals it exactly."""
    broken: Corruption = data.draw(corrupted(order))
    wrong = json.dumps({**order.model_dump(mode="json"), "qty": "a few"})
    texts = [broken.text, wrong]
    made = ToolCall("order", texts[data.draw(st.integers(0, 1))], "call_order")
    finish = broken.finish_reason if made.arguments == broken.text else "tool_calls"
    reply = Reply("Doing both.", finish, tool_calls=(PING, made))
    outcome, sent = run([reply], attempts=2)

    if isinstance(outcome, Healed):  # only a local repair heals it: the exact arguments
        assert made.arguments == broken.text
        assert broken.recoverable
        assert order == outcome.value.calls[1].arguments
        return
    assert isinstance(outcome, Degraded)
    assert outcome.reason in (Reason.MAX_RETRIES_EXCEEDED, Reason.TOKEN_TRUNCATED)
    assert 2 == len(sent)
    partial = outcome.partial
    assert isinstance(partial, ToolCalls)
    assert "Doing both." == partial.text
    assert [PING.arguments, made.arguments] == [c.raw for c in partial.calls]
    assert [True, False] == [c.ok for c in partial.calls]
    assert made.arguments == partial.calls[1].arguments  # as sent, never a guess
    assert all(d.path.startswith("calls[1]") for d in outcome.errors)


def test_a_tool_run_reports_its_attempts_and_outcome_to_the_logger() -> None:
    """A tool-call run reports each attempt and its outcome as events, each with the run's id."""
    broken = ToolCall("order", '{"sku": "A", "qty": "x", "gift": false, "notes": []}', "c1")
    fixed = ToolCall("order", '{"sku": "A", "qty": 1, "gift": false, "notes": []}', "c2")
    replies = [
        Reply(None, "tool_calls", tool_calls=(broken,)),
        Reply(None, "tool_calls", tool_calls=(fixed,)),
    ]
    with capture_events() as seen:
        outcome, _ = run(replies, attempts=2)
    assert isinstance(outcome, Healed)
    events = [event["event"] for event in seen]
    assert 2 == events.count("healjson.attempt")
    assert "healjson.healed" in events
    assert {outcome.run_id} == {event["run_id"] for event in seen}


def test_empty_arguments_are_the_no_argument_object() -> None:
    """Empty arguments of a call to a tool without parameters are its no-argument object."""

    class NoArgs(BaseModel):
        pass

    tools = {"now": Tool("now", target_for(NoArgs))}
    replies = [Reply(None, "tool_calls", tool_calls=(ToolCall("now", "", "c1"),))]
    flow = start_tools(ToolSpec(tools), USER).flow
    outcome = drive_sync(flow, lambda messages, **params: replies[0])
    assert isinstance(outcome, Healed)
    assert NoArgs() == outcome.value.calls[0].arguments
    assert "" == outcome.value.calls[0].raw


def test_a_refusal_degrades_or_is_asked_again_as_the_policy_says() -> None:
    """A refusal in a tool run degrades with `refusal`, or is asked again when the policy says
    `on_refusal="retry"`."""
    refused = Reply(None, "stop", refusal="I cannot help with that.")
    good = Reply(None, "tool_calls", tool_calls=(PING,))
    outcome, sent = run([refused, good], attempts=2)
    assert isinstance(outcome, Degraded)
    assert (Reason.REFUSAL, 1) == (outcome.reason, len(sent))

    tools = {"ping": Tool("ping", target_for(Ping))}
    retry = ToolSpec(tools, HealPolicy(max_attempts=2, on_refusal="retry"))
    asked: list[Any] = []
    replies = iter([refused, good])

    def call(messages: list[dict[str, Any]], **params: Any) -> Reply:
        asked.append(messages)
        return next(replies)

    healed = drive_sync(start_tools(retry, USER).flow, call)
    assert isinstance(healed, Healed)
    assert [list(USER), list(USER)] == asked  # the same request, again


def test_a_repair_with_the_whole_set_again_keeps_the_accepted_call() -> None:
    """A repair answered with the whole set again, the accepted call changed, keeps the accepted
    call with its id and place, the changed one a new call beside the replacement."""
    bad = ToolCall("order", '{"sku": "A", "qty": "x", "gift": false, "notes": []}', "c1")
    good = ToolCall("order", '{"sku": "A", "qty": 2, "gift": false, "notes": []}', "c3")
    first = Reply("Both.", "tool_calls", tool_calls=(PING, bad))
    again = Reply(
        "Again.", "tool_calls", tool_calls=(ToolCall("ping", '{"host": "b"}', "c2"), good)
    )
    outcome, _ = run([first, again], attempts=2)
    assert isinstance(outcome, Healed)
    assert [("call_ping", Ping(host="a.example")), ("c2", Ping(host="b")), ("c3", 2)] == [
        (c.id, c.arguments if c.name == "ping" else c.arguments.qty) for c in outcome.value.calls
    ]
    assert "Both." == outcome.value.text  # the text of the answer stays
    assert ("calls[1]", "calls[2]") == outcome.changed_fields


def test_new_calls_never_take_an_id_a_call_that_stays_has() -> None:
    """A new call keeps its own id unless a call that stays has it; then it takes the replaced
    call's id, suffixed for the calls after the first."""
    bad = ToolCall("order", '{"sku": "A", "qty": "x", "gift": false, "notes": []}', "c1")
    fixed = '{"sku": "A", "qty": 1, "gift": false, "notes": []}'
    first = Reply(None, "tool_calls", tool_calls=(PING, bad))
    again = Reply(
        None,
        "tool_calls",
        tool_calls=(
            ToolCall("order", fixed, "call_ping"),  # an accepted call's id
            ToolCall("order", fixed.replace("1", "2")),  # none
            ToolCall("order", fixed.replace("1", "3"), "c1"),  # the replaced call's: free
        ),
    )
    outcome, _ = run([first, again], attempts=2)
    assert isinstance(outcome, Healed)
    assert ["call_ping", "c1", "c1_2", "c1_3"] == [c.id for c in outcome.value.calls]
    assert [1, 2, 3] == [c.arguments.qty for c in outcome.value.calls[1:]]


def test_the_answer_after_a_refused_repair_keeps_the_accepted_calls() -> None:
    """After a refused repair, the request sent again is answered by replacements too: the
    accepted call keeps its id and place."""
    bad = ToolCall("order", '{"sku": "A", "qty": "x", "gift": false, "notes": []}', "c1")
    fixed = ToolCall("order", '{"sku": "A", "qty": 1, "gift": false, "notes": []}', "c9")
    ping = ToolCall("ping", '{"host":"a.example"}', "c8")  # the accepted call, made again
    replies = iter(
        [
            Reply(None, "tool_calls", tool_calls=(PING, bad)),
            Reply(None, "stop", refusal="No."),
            Reply(None, "tool_calls", tool_calls=(ping, fixed)),
        ]
    )
    tools = {"order": Tool("order", target_for(Order)), "ping": Tool("ping", target_for(Ping))}
    policy = HealPolicy(max_attempts=3, on_refusal="retry")
    flow = start_tools(ToolSpec(tools, policy), USER).flow
    outcome = drive_sync(flow, lambda messages, **params: next(replies))
    assert isinstance(outcome, Healed)
    assert [("call_ping", "ping"), ("c9", "order")] == [(c.id, c.name) for c in outcome.value.calls]
    assert ("calls[1]",) == outcome.changed_fields


# -- the property: whatever a repair answers, the accepted calls stand ----------------------------

BROKEN_ARGS = {"order": '{"sku": "x", "qty": "many", "gift": false, "notes": []}', "ping": "{}"}


def good_args(tool: str, tag: str) -> str:
    """Valid arguments of `tool`, told apart by `tag`."""
    if tool == "ping":
        return json.dumps({"host": f"{tag}.example"})
    if tool == "stamp":
        return json.dumps({"mark": tag})
    return json.dumps({"sku": tag, "qty": 1, "gift": False, "notes": []})


def as_floats(value: Any) -> Any:
    """`value` with every number a float (`1` as `1.0`; bools stay bools)."""
    if isinstance(value, dict):
        return {key: as_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_floats(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def as_data(name: str, raw: str) -> tuple[str, str]:
    """A call as JSON data: its tool and its arguments with integral numbers as ints (bools
    apart), keys sorted."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: plain(item) for key, item in value.items()}
        if isinstance(value, list):
            return [plain(item) for item in value]
        return int(value) if isinstance(value, float) and value.is_integer() else value

    return name, json.dumps(plain(json.loads(raw)), sort_keys=True)


def resent(data: Any, arguments: str) -> str:
    """The same arguments as data, written another way (spacing, key order, `1.0` for `1`)."""
    indent = data.draw(st.sampled_from([None, 0, 2]), label="indent")
    keys = data.draw(st.booleans(), label="sort_keys")
    value = json.loads(arguments)
    if data.draw(st.booleans(), label="floats"):
        value = as_floats(value)
    return json.dumps(value, indent=indent, sort_keys=keys, separators=(",", ": "))


def twin(arguments: str) -> str:
    """Other arguments, though Python's `==` finds them equal to `arguments` once parsed: an
    order's `"qty": 1, "gift": false` as `true` and `0`; a ping's host in other case."""
    value = json.loads(arguments)
    if "host" in value:
        return json.dumps({**value, "host": value["host"].upper()})
    return json.dumps({**value, "qty": True, "gift": 0})


def answer(
    data: Any,
    groups: list[list[ToolCall]],
    accepted: list[ToolCall],
    extra: list[ToolCall] | None = None,
) -> Reply:
    """A repair's answer: the calls of `groups` in order, with accepted calls sent again (the
    same arguments written another way, any id) and the `extra` calls inserted anywhere."""
    made = [call for group in groups for call in group]
    again = data.draw(st.lists(st.sampled_from(accepted), max_size=3)) if accepted else []
    for n, call in enumerate(again):
        ident = data.draw(st.sampled_from([call.id, f"again_{n}", None]), label="id")
        copy = ToolCall(call.name, resent(data, call.arguments), ident)
        made.insert(data.draw(st.integers(0, len(made)), label="at"), copy)
    for call in extra or ():
        made.insert(data.draw(st.integers(0, len(made)), label="at"), call)
    return Reply(None, "tool_calls", tool_calls=tuple(made))


def gaps_of(kinds: list[tuple[str, bool]]) -> list[set[str]]:
    """The tools of the rejected calls between each two accepted calls (and before the first,
    after the last)."""
    gaps: list[set[str]] = [set()]
    for tool, ok in kinds:
        if ok:
            gaps.append(set())
        else:
            gaps[-1].add(tool)
    return gaps


@pinned(max_examples=100)
@given(data=st.data())
def test_a_repair_never_loses_renames_or_moves_an_accepted_call(data: Any) -> None:
    """Whatever a repair answers (replacements, calls split in several, accepted calls sent
    again as JSON-equal data or changed, rejected calls left out then made, a call made again to
    another tool round after round), every accepted call stays once with its id, arguments and
    order, only a call to a rejected call's own tool fills its place, and `changed_fields` names
    exactly the places a repair made."""
    tools = st.sampled_from(["order", "ping"])
    kinds = data.draw(st.lists(st.tuples(tools, st.booleans()), min_size=1, max_size=6))
    kinds[data.draw(st.integers(0, len(kinds) - 1))] = (data.draw(tools), False)  # one broken
    first = [
        ToolCall(tool, good_args(tool, f"g{i}") if ok else BROKEN_ARGS[tool], f"c{i}")
        for i, (tool, ok) in enumerate(kinds)
    ]
    accepted = [call for call, (_, ok) in zip(first, kinds, strict=True) if ok]
    broken = [(i, tool) for i, (tool, ok) in enumerate(kinds) if not ok]
    mode = data.draw(st.sampled_from(["plain", "skip", "wrong"]), label="mode")
    # left out of the repair, made in a third answer
    skipped = data.draw(st.sampled_from(["order", "ping"])) if mode == "skip" else None
    later = any(tool == skipped for _, tool in broken)
    # "wrong": one rejected call made again to another tool, twice, then to its own tool (the
    # other rejected calls made again as one call each, so that the wrong call is a
    # replacement, never an extra call)
    wrong_at, wrong = -1, None
    if mode == "wrong":
        wrong_at, wanted = broken[data.draw(st.integers(0, len(broken) - 1), label="wrong")]
        others = [t for t in ("order", "ping", "stamp") if t not in {t for _, t in broken}]
        other = data.draw(st.sampled_from(others), label="other tool")
        wrong = ToolCall(other, good_args(other, "w"), "w2")

    def group(i: int, tool: str, rnd: int) -> list[ToolCall]:
        """The calls made for rejected call `i` in round `rnd`: one, or it split in several."""
        calls = []
        most = 1 if wrong is not None and rnd == 2 else 3
        for n in range(data.draw(st.integers(1, most), label="calls")):
            pick = data.draw(st.sampled_from(["own", "c0", "none"]), label="id")
            ident = {"own": f"r{rnd}-{i}-{n}", "c0": "c0", "none": None}[pick]
            calls.append(ToolCall(tool, good_args(tool, f"f{rnd}-{i}-{n}"), ident))
        return calls

    second = [
        [] if tool == skipped else [wrong] if i == wrong_at and wrong else group(i, tool, 2)
        for i, tool in broken
    ]
    # accepted calls sent again with other arguments (even ones Python's `==` finds equal):
    # new calls (only when none is left out or made to another tool: such a call to a
    # left-out call's tool would be its replacement)
    some = accepted and not later and wrong is None
    changed = data.draw(st.lists(st.sampled_from(accepted), max_size=2)) if some else []
    twins = [data.draw(st.booleans(), label="twin") for _ in changed]
    revised = [
        ToolCall(c.name, twin(c.arguments) if two else good_args(c.name, f"v{n}"), c.id)
        for n, (c, two) in enumerate(zip(changed, twins, strict=True))
    ]
    replies = [Reply(None, "tool_calls", tool_calls=tuple(first))]
    replies.append(answer(data, second, accepted, revised))
    made = [c for g in second for c in g if c is not wrong] + revised
    if later:  # the calls left out, made in a third answer
        third = [group(i, tool, 3) for i, tool in broken if tool == skipped]
        replies.append(answer(data, third, accepted + made))
        made += [c for g in third for c in g]
    if wrong is not None:  # the other tool again (as it was, any id), then its own tool
        ident = data.draw(st.sampled_from(["w2", "w3", None]), label="id")
        again = ToolCall(wrong.name, wrong.arguments, ident)
        replies.append(answer(data, [[again]], accepted + made))
        fourth = group(wrong_at, wanted, 4)
        replies.append(answer(data, [fourth], accepted + made))
        made += fourth
    outcome, sent = run(replies, attempts=4)

    assert isinstance(outcome, Healed), outcome
    assert len(sent) == (4 if wrong else 3 if later else 2)
    calls = outcome.value.calls
    first_ids = {c.id for c in accepted}
    kept = [(c.id, c.name, c.raw) for c in calls if c.id in first_ids]
    assert [(c.id, c.name, c.arguments) for c in accepted] == kept  # in order, as they were
    seen = [as_data(c.name, c.raw) for c in calls]
    assert all(1 == seen.count(as_data(c.name, c.arguments)) for c in accepted)  # never twice
    if wrong is not None:  # never in the place of a call to another tool; asked for by its tool
        assert wrong.arguments not in {c.raw for c in calls}
        for asked in sent[2:]:
            assert f"`{wanted}` (" in asked[-1]["content"]
            assert f"which called `{wrong.name}` instead" in asked[-1]["content"]
    assert len({c.id for c in calls}) == len(calls)  # no id twice
    places = tuple(f"calls[{i}]" for i, c in enumerate(calls) if c.id not in first_ids)
    assert places == outcome.changed_fields
    new = sorted((c.name, c.raw) for c in calls if c.id not in first_ids)
    assert sorted((c.name, c.arguments) for c in made) == new  # each call a repair made, once
    # each new call sits where a rejected call was (one of its tool, unless a changed accepted
    # call): between the accepted calls that were around it
    gaps, gap, changes = gaps_of(kinds), 0, {c.arguments for c in revised}
    for c in calls:
        if c.id in first_ids:
            gap += 1
            continue
        assert gaps[gap], (gap, c)
        assert c.name in gaps[gap] or c.raw in changes, (gap, c)


def test_calls_without_ids_or_with_one_id_get_distinct_ids() -> None:
    """Calls without ids, or sharing one id, get distinct ids."""
    one = ToolCall("ping", '{"host": "a"}')
    two = ToolCall("ping", '{"host": "b"}', "same")
    three = ToolCall("ping", '{"host": "c"}', "same")
    outcome, _ = run([Reply(None, "tool_calls", tool_calls=(one, two, three))], attempts=1)
    assert isinstance(outcome, Healed)
    assert ["call_0", "same", "same_2"] == [c.id for c in outcome.value.calls]


def test_a_call_to_another_tool_than_the_forced_one_is_broken() -> None:
    """A call to another tool than the forced one is a broken answer that names the tool it must
    call."""
    tools = {"order": Tool("order", target_for(Order)), "ping": Tool("ping", target_for(Ping))}
    forced = ToolSpec(tools, HealPolicy(max_attempts=1), required="order")
    flow = start_tools(forced, USER).flow
    outcome = drive_sync(
        flow, lambda messages, **params: Reply(None, "tool_calls", tool_calls=(PING,))
    )
    assert isinstance(outcome, Degraded)
    assert Reason.INVALID_OUTPUT == outcome.reason
    assert "must be a call to `order`" in outcome.errors[0].constraint


def test_repair_requests_are_bounded_and_do_not_grow_with_the_rounds() -> None:
    """A tool run's repair requests quote text and arguments within their caps and do not grow
    with the rounds."""
    from healjson._core.repair.quote import MAX_ANSWER_CHARS

    huge = "x" * 40_000
    bad = ToolCall("order", '{"sku": "' + huge + '", "qty": "many"}', "c1")
    reply = Reply(huge, "tool_calls", tool_calls=(PING, bad))
    outcome, sent = run([reply], attempts=4)
    assert isinstance(outcome, Degraded)
    assert 4 == len(sent)
    sizes = [
        sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in s)
        for s in sent
    ]
    assert sizes[1] == sizes[2] == sizes[3]  # the same one exchange each round
    assert sizes[1] - sizes[0] < 3 * MAX_ANSWER_CHARS  # text and arguments quoted within caps
