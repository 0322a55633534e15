"""A rule's `fix=` is a plain function: an async one is refused where the rule is declared (as
an async item rule is), never accepted and left unawaited."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from pydantic import BaseModel

from healjson import Contract, Healed, Healer, Reason, contract
from healjson.testing import ScriptedModel


class Order(BaseModel):
    customer: str
    qty: int


async def strip_customer(order: Order) -> Order:
    """An async fix: nothing would await it."""
    return order.model_copy(update={"customer": order.customer.strip()})


class AsyncCall:
    """An object whose `__call__` is async."""

    async def __call__(self, order: Order) -> Order:
        return order


def trimmed(order: Order) -> str | None:
    """The customer's name has no surrounding spaces."""
    return (
        "customer has no surrounding spaces" if order.customer != order.customer.strip() else None
    )


@pytest.mark.parametrize("fix", [strip_customer, AsyncCall()])
def test_an_async_fix_is_refused_at_decoration(fix: Any) -> None:
    """`@contract(on_fail="fix", fix=<async>)` raises TypeError saying a fix is a plain function."""
    with pytest.raises(TypeError, match="fix= must be a plain function"):
        contract(fields=("customer",), on_fail="fix", fix=fix)(trimmed)


def test_a_hand_built_rule_whose_fix_returns_an_awaitable_is_a_contract_error() -> None:
    """A `Contract` built past the decorator with an async fix ends the run as the caller's bug
    (`contract_error`, one call), and the coroutine is closed: no "never awaited" warning."""
    rule = Contract(trimmed, ("customer",), "trimmed", takes_context=False, on_fail="fix",
                    fix=strip_customer)  # fmt: skip
    model = ScriptedModel(['{"customer": " Ada ", "qty": 1}'] * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = Healer(Order, contracts=[rule]).run(model, "q")
    assert not isinstance(outcome, Healed)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert 1 == len(model.calls)
    assert "awaitable" in outcome.errors[0].constraint
