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


def test_the_example_is_checked_once_at_the_first_repair_with_the_runs_context() -> None:
    """A repair shows a synthesised example the contract accepted, checked once (at the first
    repair, with the run's context) for all the healer's runs."""
    SEEN.clear()
    healer = Healer(Order, contracts=[audited], policy=HealPolicy(example_from_repair=1))
    for _ in range(2):
        outcome = healer.run(ScriptedModel([BAD, GOOD]), "p", context={"tenant": "t1"})
        assert outcome.ok
        assert outcome.attempts[1].prompt is not None
        assert outcome.attempts[1].prompt.example is not None
    made_up = [seen for seen in SEEN if seen[0] != "A-1"]
    assert [(made_up[0][0], "t1")] == made_up  # one check, with the first repairing run's context
