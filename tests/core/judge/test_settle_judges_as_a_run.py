"""`settle` judges the value a fix or a drop made as a run's first judging judges an answer
(`judge_value`): a contract that changes the corrected value it checks is a `contract_error`,
though it left the first value alone."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

import healjson
from healjson import Degraded, Healer, Reason, Violation, contract
from healjson._core.judge.contracts import ContractContext
from healjson._core.judge.judging import CHANGED_BY, judge_value
from healjson._core.judge.policies import settle
from healjson._core.run.drive import drive_sync
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import target_for
from healjson.testing import ScriptedModel


class Order(BaseModel):
    customer: str
    qty: int
    note: str = ""


def at_most_10() -> Any:
    """A whole-value rule capping `qty` at 10, fixed by setting it to 10."""

    @contract(fields=("qty",), on_fail="fix", fix=lambda o: o.model_copy(update={"qty": 10}))
    def capped(order: Order) -> Violation | None:
        return Violation("qty is at most 10") if order.qty > 10 else None

    return capped


def normalises_the_fixed_value() -> Any:
    """A rule that leaves an order of more than 10 alone but writes a note into any other."""

    @contract(fields=("note",))
    def noted(order: Order) -> Violation | None:
        if order.qty <= 10:
            order.note = "checked"  # a contract that changes what it checks: a bug
        return None

    return noted


def test_a_contract_that_changes_only_the_corrected_value_is_a_contract_error() -> None:
    """A contract that changes the value a fix made (and not the first one) degrades the run
    with `contract_error` after the one model call, naming the contracts that ran on it as on a
    first answer."""
    model = ScriptedModel([json.dumps({"customer": "Ada", "qty": 12})])
    healer = Healer(Order, contracts=[at_most_10(), normalises_the_fixed_value()])
    outcome = healer.run(model, "q")
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR is outcome.reason
    assert 1 == len(model.calls)
    assert [("capped", "noted")] == [d.extra.get(CHANGED_BY) for d in outcome.errors]


def test_settle_reports_a_rule_that_changes_its_own_fixed_value() -> None:
    """`settle` gives a `contract_error` (and no accepted value) when the fixed rule itself
    changes the corrected value on its second judging."""

    def fix(order: Order) -> Order:
        return order.model_copy(update={"qty": 10})

    @contract(fields=("qty",), on_fail="fix", fix=fix)
    def capped(order: Order) -> Violation | None:
        if order.qty > 10:
            return Violation("qty is at most 10")
        order.note = "capped"  # changes the value it accepts
        return None

    target, ctx = target_for(Order), ContractContext()
    value = Order(customer="Ada", qty=12)
    groups = drive_sync(judge_value(target, (capped,), value, ctx))
    settled = drive_sync(settle(target, (capped,), groups, value, ctx))
    assert NOTHING is settled.instance
    assert [("capped",)] == [d.extra.get(CHANGED_BY) for d in settled.error]


def test_a_contract_that_reads_the_corrected_value_only_accepts_it() -> None:
    """A contract that only reads the corrected value lets the fix's value through, flagged."""

    @contract(fields=("note",))
    def reads(order: Order) -> Violation | None:
        return None if order.note == "" else Violation("no note")

    outcome = healjson.validate(
        json.dumps({"customer": "Ada", "qty": 12}), Order, contracts=[at_most_10(), reads]
    )
    assert outcome.ok
    assert 10 == outcome.value.qty
