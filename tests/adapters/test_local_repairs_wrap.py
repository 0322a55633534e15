"""Local repairs through `wrap(openai.OpenAI())` over real HTTP against the scripted server: a
per-item repair answered in the strict format's envelope keeps the accepted items, and a
contract's fix leaves the fields it did not touch as validated."""

from __future__ import annotations

import json
from typing import Annotated, Any

import openai
from pydantic import BaseModel, BeforeValidator, Field, SecretStr

import healjson
from healjson import Flag, Healed, Strategy, Violation, contract
from healjson.testing import ScriptedServer

USER = [{"role": "user", "content": "the order lines"}]


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


def test_a_per_item_repair_answered_in_the_strict_envelope_keeps_the_accepted_items() -> None:
    """One failed item of a `list[Line]` is asked for alone under the strict format; its answer
    in the `{"value": [...]}` envelope that format forces is spliced in place: A and C stay."""
    first = json.dumps([{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}, {"sku": "C", "qty": 3}])
    repair = json.dumps({"value": [{"sku": "B", "qty": 2}]})
    with (
        ScriptedServer([first, repair]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=list[Line]
        )
        bodies = [request.body for request in server.requests]
    assert isinstance(outcome, Healed), outcome
    assert [("A", 1), ("B", 2), ("C", 3)] == [(x.sku, x.qty) for x in outcome.value]
    assert Strategy.ITEMS is outcome.attempts[1].strategy
    assert {Flag.UNWRAPPED, Flag.ITEMS_MERGED} <= set(outcome.attempts[1].flags)
    assert ("[1].qty",) == outcome.changed_fields
    second = bodies[1]
    assert second is not None
    assert "json_schema" == second["response_format"]["type"]  # the envelope was forced
    assert "in this order: [1]" in second["messages"][-1]["content"]


def to_cents(value: Any) -> int:
    """Dollars to cents: not idempotent."""
    return round(float(value) * 100)


class Account(BaseModel):
    owner: str
    balance_cents: Annotated[int, BeforeValidator(to_cents)]
    pin: SecretStr
    internal_ref: str = Field(default="", exclude=True)


@contract(
    fields=("owner",),
    on_fail="fix",
    fix=lambda account: account.model_copy(update={"owner": account.owner.strip()}),
)
def trimmed(account: Account) -> Violation | None:
    """The owner has no surrounding spaces."""
    if account.owner.strip() != account.owner:
        return Violation("owner has no surrounding spaces")
    return None


def test_a_fix_through_wrap_leaves_the_fields_it_did_not_touch() -> None:
    """A fix of `owner` through a wrapped client keeps the cents, the secret and the excluded
    field as validated from the one answer."""
    answer = {"owner": " Ada ", "balance_cents": 12.5, "pin": "4711", "internal_ref": "R-42"}
    with (
        ScriptedServer([json.dumps(answer)]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=Account, contracts=[trimmed]
        )
    assert isinstance(outcome, Healed), outcome
    value = outcome.value
    assert ("Ada", 1250, "4711", "R-42") == (
        value.owner,
        value.balance_cents,
        value.pin.get_secret_value(),
        value.internal_ref,
    )
    assert (1, ("trimmed",)) == (outcome.calls, outcome.fixed)
