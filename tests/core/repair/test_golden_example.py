"""The golden example's contract check waits for the first repair prompt that shows it: building
a healer or decorating a function runs no contract on made-up data, and the check, once made,
runs with that run's context."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import healjson
from healjson import ContractContext, Healer, HealPolicy, Violation, contract
from healjson.testing import ScriptedModel

SEEN: list[tuple[str, Any]] = []


class Order(BaseModel):
    order_id: str
    amount: int


@contract(fields=["amount"])
def audited(value: Order, ctx: ContractContext) -> Violation | None:
    """Records each value it judges (a contract with a side effect) and wants a positive
    amount."""
    SEEN.append((value.order_id, ctx.extra.get("tenant")))
    return None if value.amount > 0 else Violation("amount must be positive")


GOOD = '{"order_id": "A-1", "amount": 5}'
BAD = '{"order_id": "A-1", "amount": -5}'


def test_building_a_healer_or_decorating_runs_no_contract() -> None:
    """`Healer(...)` and `@heal` run no contract: nothing has been judged yet."""
    SEEN.clear()
    Healer(Order, contracts=[audited])

    @healjson.heal(response_model=Order, contracts=[audited])
    def ask(prompt: str) -> str:
        return GOOD

    assert [] == SEEN


def test_a_run_that_never_repairs_judges_only_the_models_answers() -> None:
    """A first answer that passes: the contract judged that answer, and nothing made up."""
    SEEN.clear()
    outcome = Healer(Order, contracts=[audited]).run(ScriptedModel([GOOD]), "p")
    assert outcome.ok
    assert [("A-1", None)] == SEEN


@contract(fields=("amount",))
def within_limit(value: Order, ctx: ContractContext) -> Violation | None:
    """The amount must be within the caller's limit (read from the run's context)."""
    return None if value.amount <= ctx.extra["limit"] else Violation("amount over the limit")


def test_the_example_is_checked_at_each_repair_with_that_runs_context() -> None:
    """Runs of one healer with different contexts: each repair shows the synthesised example
    exactly when the contracts accept it under that run's own context."""
    SEEN.clear()
    healer = Healer(
        Order, contracts=[audited, within_limit], policy=HealPolicy(example_from_repair=1)
    )
    shown = []
    for tenant, limit in (("t1", 1000), ("t2", -1000), ("t3", 1000)):
        context = {"tenant": tenant, "limit": limit}
        outcome = healer.run(ScriptedModel([BAD, BAD]), "p", context=context)
        prompt = outcome.attempts[1].prompt
        assert prompt is not None
        shown.append(prompt.example is not None)
    assert [True, False, True] == shown
    made_up = {tenant for order_id, tenant in SEEN if order_id != "A-1"}
    assert {"t1", "t2", "t3"} == made_up  # each run's check, under its own context
