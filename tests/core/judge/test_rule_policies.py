"""Per-rule failure policies: `@contract(on_fail="reask" | "fix" | "warn" | "drop" | "stop")`.

Each policy through every entry point: `validate`, `Healer.run` / `arun`, `wrap(OpenAI())` over
the scripted server, `Healer.stream`, and `Healer.replay` (the batch runners' driver), which
must decide exactly as the live run. A property over generated values and rule mixes: warn
rules never change the verdict, a drop never leaves a failing item, a fix's result passes every
rule or is re-asked.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Delta, Flag, Healed, Healer, HealPolicy, Reason, contract
from healjson.testing import ScriptedModel, capture_events


class Line(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    customer: str
    qty: int
    note: str = ""


@contract(
    fields=("customer",),
    on_fail="fix",
    fix=lambda o: o.model_copy(update={"customer": o.customer.strip()}),
)
def trimmed(order: Order) -> str | None:
    return (
        "customer must not have surrounding spaces"
        if order.customer != order.customer.strip()
        else None
    )


@contract(fields=("qty",), on_fail="warn")
def usual_qty(order: Order) -> str | None:
    return "qty is usually at most 10" if order.qty > 10 else None


@contract(fields=("qty",), on_fail="stop")
def not_negative(order: Order) -> str | None:
    return "qty must not be negative" if order.qty < 0 else None


@contract(fields=("customer",))
def has_customer(order: Order) -> str | None:
    return "customer must not be empty" if not order.customer.strip() else None


@contract(fields=("qty",), on_fail="drop")
def positive_line(line: Line) -> str | None:
    return "qty must be positive" if line.qty <= 0 else None


def order(customer: str = "Ada", qty: int = 2) -> str:
    return json.dumps({"customer": customer, "qty": qty})


def lines(*qtys: int) -> str:
    return json.dumps([{"sku": f"S{i}", "qty": q} for i, q in enumerate(qtys)])


# --- declaration ----------------------------------------------------------------------------------


def test_fix_needs_a_fix_function_and_only_fix_takes_one() -> None:
    """`on_fail="fix"` without `fix=`, `fix=` with another policy, and an unknown policy are
    refused when the contract is declared."""
    with pytest.raises(TypeError, match="fix="):
        contract(on_fail="fix")
    with pytest.raises(TypeError, match="fix="):
        contract(on_fail="warn", fix=lambda v: v)
    with pytest.raises(TypeError, match="on_fail"):
        contract(on_fail="ignore")  # type: ignore[call-overload]


def test_drop_is_for_item_contracts_only() -> None:
    """A `drop` rule is refused as a whole-value contract and accepted as an item contract."""
    with pytest.raises(TypeError, match="item contracts"):
        Healer(list[Line], contracts=[positive_line])
    with pytest.raises(TypeError, match="item contracts"):
        healjson.validate(lines(1), list[Line], contracts=[positive_line])
    Healer(list[Line], item_contracts=[positive_line])  # fine


# --- each policy, no model call -------------------------------------------------------------------


def test_warn_heals_and_keeps_the_violation_everywhere() -> None:
    """A broken `warn` rule heals the value and keeps the violation in `warnings`, the record,
    the rebuilt outcome and the trace."""
    outcome = healjson.validate(order(qty=30), Order, contracts=[usual_qty])
    assert isinstance(outcome, Healed)
    assert outcome.value.qty == 30
    [warning] = outcome.warnings
    assert (warning.path, warning.rule, warning.value) == ("qty", "usual_qty", 30)
    data = outcome.to_dict()
    assert data["warnings"][0]["constraint"] == "qty is usually at most 10"
    rebuilt = healjson.outcome_from_dict(data, Order)
    assert isinstance(rebuilt, Healed)
    assert [w.constraint for w in rebuilt.warnings] == ["qty is usually at most 10"]
    assert "Warnings" in outcome.trace()
    assert "qty is usually at most 10" in outcome.trace()


def test_a_run_without_policies_keeps_its_record_unchanged() -> None:
    """A run where no policy acted writes no `warnings`, `dropped` or `fixed` key in its record."""
    data = healjson.validate(order(), Order, contracts=[usual_qty]).to_dict()
    assert not {"warnings", "dropped", "fixed"} & data.keys()


def test_stop_degrades_with_contract_error_and_no_reask() -> None:
    """A broken `stop` rule degrades at once with `contract_error` and makes no second call."""
    model = ScriptedModel([order(qty=-1), order()])
    outcome = Healer(Order, contracts=[not_negative], policy=HealPolicy(max_attempts=3)).run(
        model, "x"
    )
    assert isinstance(outcome, Degraded)
    assert outcome.reason is Reason.CONTRACT_ERROR
    assert outcome.calls == 1
    assert [e.constraint for e in outcome.errors] == ["qty must not be negative"]


def test_fix_is_applied_locally_flagged_and_named() -> None:
    """A `fix` rule corrects the value locally in one call, flagged `contract_fixed` and named in
    `fixed`, the trace and the record."""
    model = ScriptedModel([order(customer="  Ada ")])
    outcome = Healer(Order, contracts=[trimmed]).run(model, "x")
    assert isinstance(outcome, Healed)
    assert outcome.value.customer == "Ada"
    assert outcome.calls == 1
    assert Flag.CONTRACT_FIXED in outcome.flags
    assert Flag.CONTRACT_FIXED in outcome.attempts[-1].flags
    assert outcome.fixed == ("trimmed",)
    assert "trimmed" in outcome.trace()
    rebuilt = healjson.outcome_from_dict(outcome.to_dict(), Order)
    assert isinstance(rebuilt, Healed)
    assert rebuilt.fixed == ("trimmed",)


def test_a_fix_that_breaks_another_rule_falls_back_to_reask() -> None:
    """A fix whose result breaks another rule is discarded and the model is asked again."""
    blank = contract(
        fields=("customer",), on_fail="fix", fix=lambda o: o.model_copy(update={"customer": ""})
    )(lambda o: "customer must be lower case" if o.customer != o.customer.lower() else None)
    model = ScriptedModel([order(customer="ADA"), order(customer="ada")])
    outcome = Healer(Order, contracts=[blank, has_customer]).run(model, "x")
    assert isinstance(outcome, Healed)
    assert outcome.calls == 2
    assert outcome.value.customer == "ada"
    assert outcome.fixed == ()
    assert "lower case" in outcome.attempts[0].diagnostics[0].constraint


def test_a_fix_that_still_fails_its_own_rule_is_reasked() -> None:
    """A fix whose result still breaks its own rule is not accepted: the rule's violation stands."""
    useless = contract(fields=("qty",), on_fail="fix", fix=lambda o: o)(
        lambda o: "qty must be even" if o.qty % 2 else None
    )
    outcome = healjson.validate(order(qty=3), Order, contracts=[useless])
    assert isinstance(outcome, Degraded)
    assert outcome.errors[0].constraint == "qty must be even"


def test_a_fix_that_raises_is_a_contract_error() -> None:
    """A fix function that raises degrades the run with `contract_error`, saying it raised."""

    def boom(value: Any) -> Any:
        raise ValueError("no")

    broken = contract(fields=("qty",), on_fail="fix", fix=boom)(
        lambda o: "qty must be even" if o.qty % 2 else None
    )
    outcome = healjson.validate(order(qty=3), Order, contracts=[broken])
    assert isinstance(outcome, Degraded)
    assert outcome.reason is Reason.CONTRACT_ERROR
    assert "raised" in outcome.errors[0].constraint


def test_drop_removes_failing_items_and_lists_them() -> None:
    """A `drop` item rule removes the failing items and lists each with its index, item and
    diagnostics, in the record and the trace."""
    model = ScriptedModel([lines(1, 0, 3, -2)])
    outcome = Healer(list[Line], item_contracts=[positive_line]).run(model, "x")
    assert isinstance(outcome, Healed)
    assert [line.qty for line in outcome.value] == [1, 3]
    assert [(d.index, d.item["qty"]) for d in outcome.dropped] == [(1, 0), (3, -2)]
    assert outcome.dropped[0].diagnostics[0].path == "[1].qty"
    assert Flag.ITEMS_DROPPED in outcome.flags
    rebuilt = healjson.outcome_from_dict(outcome.to_dict(), list[Line])
    assert isinstance(rebuilt, Healed)
    assert [(d.index, d.item) for d in rebuilt.dropped] == [
        (1, {"sku": "S1", "qty": 0}),
        (3, {"sku": "S3", "qty": -2}),
    ]
    assert "Items dropped" in outcome.trace()


def test_list_level_rules_still_apply_after_a_drop() -> None:
    """List-level rules (a minimum length, a whole-list contract) judge the list after the
    dropped items are gone."""
    at_least_two = Annotated[list[Line], Field(min_length=2)]
    model = ScriptedModel([lines(1, 0, -1), lines(1, 2, 0)])
    outcome = Healer(at_least_two, item_contracts=[positive_line]).run(model, "x")
    assert isinstance(outcome, Healed)
    assert outcome.calls == 2  # the first answer kept one item: too few, re-asked
    assert [line.qty for line in outcome.value] == [1, 2]
    assert [d.index for d in outcome.dropped] == [2]

    @contract
    def sums_to_three(items: list[Line]) -> str | None:
        return "quantities must sum to 3" if sum(i.qty for i in items) != 3 else None

    model = ScriptedModel([lines(1, 2, -5)])
    outcome = Healer(list[Line], contracts=[sums_to_three], item_contracts=[positive_line]).run(
        model, "x"
    )
    assert isinstance(outcome, Healed)  # the sum holds once the bad item is gone
    assert outcome.calls == 1


def test_item_fix_corrects_only_the_failing_items() -> None:
    """An item `fix` rule corrects only the items that fail it."""
    at_least_one = contract(
        fields=("qty",), on_fail="fix", fix=lambda line: line.model_copy(update={"qty": 1})
    )(lambda line: "qty must be positive" if line.qty <= 0 else None)
    outcome = Healer(list[Line], item_contracts=[at_least_one]).run(
        ScriptedModel([lines(3, 0, 2)]), "x"
    )
    assert isinstance(outcome, Healed)
    assert [line.qty for line in outcome.value] == [3, 1, 2]
    assert outcome.fixed == ("<lambda>",)


# --- mixes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_reask_and_warn_reasks_and_keeps_only_the_final_values_warnings(mode: str) -> None:
    """A re-ask asks only for the blocking rule, and the healed outcome keeps only the final
    value's warnings, sync and async."""

    @contract(fields=("note",), on_fail="warn")
    async def has_note(o: Order) -> str | None:
        await asyncio.sleep(0)
        return "a note helps" if not o.note else None

    first = json.dumps({"customer": " ", "qty": 30})
    second = json.dumps({"customer": "Ada", "qty": 3})
    model = ScriptedModel([first, second])
    healer = Healer(Order, contracts=[has_customer, usual_qty, has_note])
    if mode == "sync":
        outcome = healer.run(model, "x")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "x"))
    assert isinstance(outcome, Healed)
    assert outcome.calls == 2
    assert [w.rule for w in outcome.warnings] == ["has_note"]  # qty's warning was the first value's
    # the repair asked for the blocking rule only
    assert "customer must not be empty" in model.calls[1].last_user_text
    assert "usually at most 10" not in model.calls[1].last_user_text


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_async_rule_is_fixed_and_checked_again(mode: str) -> None:
    """An async `fix` rule's fixed value is judged again by every rule, sync and async."""

    @contract(fields=("qty",), on_fail="fix", fix=lambda o: o.model_copy(update={"qty": 10}))
    async def capped(o: Order) -> str | None:
        await asyncio.sleep(0)
        return "qty must be at most 10" if o.qty > 10 else None

    model = ScriptedModel([order(qty=99)])
    healer = Healer(Order, contracts=[capped, usual_qty])
    if mode == "sync":
        outcome = healer.run(model, "x")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "x"))
    assert isinstance(outcome, Healed)
    assert outcome.value.qty == 10
    assert outcome.fixed == ("capped",)
    assert outcome.warnings == ()  # judged on the fixed value: 10 is usual


def test_stop_wins_over_reask_fix_and_warn() -> None:
    """When a `stop` rule breaks beside `reask`, `fix` and `warn` rules, the run stops with only
    the stop rule's error."""
    reply = json.dumps({"customer": " x ", "qty": -50})
    outcome = healjson.validate(
        reply, Order, contracts=[trimmed, usual_qty, has_customer, not_negative]
    )
    assert isinstance(outcome, Degraded)
    assert outcome.reason is Reason.CONTRACT_ERROR
    assert [e.rule for e in outcome.errors] == ["not_negative"]


# --- events and telemetry -------------------------------------------------------------------------


def test_the_healed_event_carries_warnings_dropped_and_fixed() -> None:
    """The `healjson.healed` event carries the warnings and the fixed rules of the run."""
    with capture_events() as events:
        Healer(Order, contracts=[usual_qty, trimmed]).run(
            ScriptedModel([order(customer=" a ", qty=11)]), "x"
        )
    [fields] = [event for event in events if event["event"] == "healjson.healed"]
    assert fields["warnings"] == ["qty: qty is usually at most 10"]
    assert fields["fixed"] == ["trimmed"]


# --- the real SDK over HTTP -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_policies_through_wrap_over_the_scripted_server(mode: str) -> None:
    """Rule policies act the same through a wrapped openai client over HTTP, sync and async."""
    import openai

    from healjson.testing import ScriptedServer

    messages = [{"role": "user", "content": "order for Ada"}]
    call = {
        "model": "m",
        "messages": messages,
        "response_model": Order,
        "contracts": [trimmed, usual_qty, has_customer],
    }
    replies = [json.dumps({"customer": "", "qty": 1}), json.dumps({"customer": " Ada ", "qty": 12})]
    with ScriptedServer(replies) as server:
        if mode == "sync":
            with openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as sdk:
                outcome = healjson.wrap(sdk).chat.completions.create(**call)
        else:

            async def main() -> Any:
                async with openai.AsyncOpenAI(
                    base_url=server.base_url, api_key="t", max_retries=0
                ) as sdk:
                    return await healjson.wrap(sdk).chat.completions.create(**call)

            outcome = asyncio.run(main())
        assert len(server.requests) == 2
    assert isinstance(outcome, Healed)
    assert outcome.value.customer == "Ada"
    assert outcome.fixed == ("trimmed",)
    assert [w.rule for w in outcome.warnings] == ["usual_qty"]


# --- streams --------------------------------------------------------------------------------------


def _chunks(text: str, size: int = 4) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Script:
    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.calls = 0

    def __call__(self, messages: Any, **params: Any) -> Any:
        # a tool call's arguments: one JSON value, which a stream may judge before its end
        self.calls += 1
        return iter([Delta(tool_arguments=piece) for piece in _chunks(self.replies.pop(0))])


def test_a_warn_rule_never_stops_a_stream_and_the_outcome_equals_the_unstreamed_one() -> None:
    """A broken `warn` rule never aborts a stream, and the streamed outcome equals the unstreamed
    one, warnings included."""

    @contract(fields=("customer",), on_fail="warn")
    def short_name(o: Order) -> str | None:
        return "customer is usually short" if len(o.customer) > 3 else None

    reply = json.dumps({"customer": "Adalbert", "qty": 2, "note": "a long note " * 5})
    script = _Script(reply)
    stream = Healer(Order, contracts=[short_name]).stream(script, "x")
    list(stream)
    streamed = stream.outcome
    unstreamed = healjson.validate(reply, Order, contracts=[short_name])
    assert isinstance(streamed, Healed)
    assert isinstance(unstreamed, Healed)
    assert script.calls == 1
    assert Flag.STREAM_ABORTED not in streamed.flags
    assert streamed.value == unstreamed.value
    assert [w.constraint for w in streamed.warnings] == [w.constraint for w in unstreamed.warnings]


def test_a_reask_rule_still_stops_a_stream_early_but_not_when_a_stop_rule_could_end_it() -> None:
    """A broken `reask` rule aborts a stream early, except when a `stop` rule could still end the
    run on later text."""

    @contract(fields=("customer",))
    def short_name(o: Order) -> str | None:
        return "customer must be short" if len(o.customer) > 3 else None

    long = json.dumps({"customer": "Adalbert", "qty": 2, "note": "x" * 80})
    good = order()
    script = _Script(long, good)
    stream = Healer(Order, contracts=[short_name]).stream(script, "x")
    list(stream)
    assert Flag.STREAM_ABORTED in stream.outcome.attempts[0].flags

    script = _Script(long, good)
    stream = Healer(Order, contracts=[short_name, not_negative]).stream(script, "x")
    list(stream)
    assert Flag.STREAM_ABORTED not in stream.outcome.attempts[0].flags
    assert isinstance(stream.outcome, Healed)
    assert stream.outcome.calls == 2


@pytest.mark.parametrize(
    ("healer", "replies"),
    [
        (Healer(Order, contracts=[trimmed, usual_qty, not_negative]), [order(" Ada ", 30)]),
        (Healer(Order, contracts=[not_negative, has_customer]), [order(" ", -1)]),
        (Healer(list[Line], item_contracts=[positive_line]), [lines(0, 2, -1, 4)]),
        (Healer(Order, contracts=[has_customer, usual_qty]), [order("", 40), order("B", 50)]),
    ],
)
def test_streamed_and_unstreamed_runs_apply_the_policies_alike(
    healer: Healer[Any], replies: list[str]
) -> None:
    """Streamed and unstreamed runs reach the same outcome under every mix of policies."""
    live = healer.run(ScriptedModel(replies), "x")
    stream = healer.stream(_Script(*replies), "x")
    list(stream)
    streamed = stream.outcome
    assert type(streamed) is type(live)
    assert streamed.calls == live.calls
    if isinstance(live, Healed):
        assert isinstance(streamed, Healed)
        assert streamed.value == live.value
        assert streamed.warnings == live.warnings
        assert streamed.dropped == live.dropped
        assert streamed.fixed == live.fixed
    else:
        assert isinstance(streamed, Degraded)
        assert streamed.reason == live.reason


# --- replay (the batch runners) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("healer", "replies"),
    [
        (Healer(Order, contracts=[trimmed, usual_qty]), [order(" Ada ", 30)]),
        (Healer(Order, contracts=[has_customer, usual_qty]), [order("", 40), order("B", 50)]),
        (Healer(list[Line], item_contracts=[positive_line]), [lines(0, 2, -1, 4)]),
        (Healer(Order, contracts=[not_negative]), [order("A", -1)]),
    ],
)
def test_a_replayed_row_decides_as_the_live_run(healer: Healer[Any], replies: list[str]) -> None:
    """A run replayed from stored replies decides as the live run did, policies included."""
    from healjson._core.run.replay import replied
    from healjson._core.wire.effects import ModelCall

    live = healer.run(ScriptedModel(replies), "x", model="m")
    final = healer.replay("x", [replied(r) for r in replies[: live.calls]], model="m")
    assert not isinstance(final, ModelCall)
    assert type(final) is type(live)
    if isinstance(live, Healed):
        assert isinstance(final, Healed)
        assert (final.value, final.warnings, final.dropped, final.fixed, final.flags) == (
            live.value,
            live.warnings,
            live.dropped,
            live.fixed,
            live.flags,
        )
    else:
        assert isinstance(final, Degraded)
        assert (final.reason, final.errors) == (live.reason, live.errors)


# --- the property ---------------------------------------------------------------------------------


def _rule(kind: str, limit: int, policy: str) -> Any:
    def check(line: Line) -> str | None:
        bad = line.qty > limit if kind == "max" else line.qty % limit != 0
        return f"qty must pass {kind} {limit}" if bad else None

    fix = None
    if policy == "fix":
        fix = (
            (lambda line: line.model_copy(update={"qty": limit}))
            if kind == "max"
            else (lambda line: line.model_copy(update={"qty": line.qty - line.qty % limit}))
        )
    return contract(fields=("qty",), name=f"{kind}{limit}{policy}", on_fail=policy, fix=fix)(check)  # type: ignore[call-overload]


RULES = st.lists(
    st.tuples(
        st.sampled_from(["max", "mod"]),
        st.integers(1, 5),
        st.sampled_from(["reask", "fix", "warn", "drop", "stop"]),
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=40, deadline=None)
@given(qtys=st.lists(st.integers(-3, 12), min_size=1, max_size=5), specs=RULES)
def test_policy_mixes_keep_their_promises(
    qtys: list[int], specs: list[tuple[str, int, str]]
) -> None:
    """For any mix of item rules, warn rules never change the verdict and every non-warn rule
    holds on every item of a healed value."""
    rules = [_rule(*spec) for spec in specs]
    reply = lines(*qtys)
    outcome = Healer(list[Line], item_contracts=rules, policy=HealPolicy(max_attempts=1)).run(
        ScriptedModel([reply]), "x"
    )
    # warn rules never change the verdict: the same rules without them decide the same
    blocking = [r for r in rules if r.on_fail != "warn"]
    without = Healer(list[Line], item_contracts=blocking, policy=HealPolicy(max_attempts=1)).run(
        ScriptedModel([reply]), "x"
    )
    assert outcome.ok == without.ok
    if not isinstance(outcome, Healed):
        return
    # every rule but a warning passes on every item of the value; warnings are exactly the rest
    warned = 0
    for rule in rules:
        for line in outcome.value:
            if rule.check(line) is not None:
                assert rule.on_fail == "warn"
                warned += 1
    assert warned == len(outcome.warnings)
    # a dropped item broke a drop rule
    for dropped in outcome.dropped:
        assert any(r.on_fail == "drop" and r.check(Line(**dropped.item)) for r in rules)
    assert len(outcome.value) + len(outcome.dropped) == len(qtys)


# --- check_pack: a fix fixes what its rule rejects -----------------------------------------------


class Span(BaseModel):
    low: int
    high: int


def _spans(widths: st.SearchStrategy[int]) -> st.SearchStrategy[Span]:
    return st.builds(lambda low, w: Span(low=low, high=low + w), st.integers(-100, 100), widths)


def _span_pack(fix: Any) -> Any:
    from healjson import ContractPack

    @contract(fields=("low", "high"), on_fail="fix", fix=fix)
    def ordered(span: Span) -> str | None:
        return "low must not exceed high" if span.low > span.high else None

    return ContractPack(
        Span,
        (ordered,),
        ({"low": 1, "high": 2},),
        name="span",
        strategies={
            "valid": lambda: _spans(st.integers(0, 50)),
            "ordered": lambda: _spans(st.integers(-50, -1)),
        },
    )


def test_check_pack_accepts_a_fix_that_fixes() -> None:
    """`check_pack` passes a pack whose fix function really fixes its rule."""
    from healjson.testing import check_pack

    swap = _span_pack(lambda span: Span(low=span.high, high=span.low))
    check_pack(swap, max_examples=10)


@pytest.mark.parametrize(
    ("fix", "message"),
    [
        (lambda span: span, "still breaks `ordered`"),
        (lambda span: {"low": "x"}, "fails the schema"),
        (lambda span: 1 / 0, "raised ZeroDivisionError"),
    ],
)
def test_check_pack_reports_a_fix_that_does_not_fix(fix: Any, message: str) -> None:
    """`check_pack` reports a fix that leaves its rule broken, breaks the schema, or raises."""
    from healjson.testing import check_pack

    with pytest.raises(AssertionError, match=re.escape(message)):
        check_pack(_span_pack(fix), max_examples=10)
