"""`check_pack` judges a rule's fix exactly as a run's `settle` does (the same function,
`policies.correct`): the fix's own value is checked as it stands, never dumped and validated
again, so a fix a run accepts passes the kit and a fix a run refuses is reported."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

import pytest
from hypothesis import strategies as st
from pydantic import BaseModel, BeforeValidator, Field

import healjson
from healjson import ContractPack, Degraded, Healer, HealPolicy, Violation, contract
from healjson.testing import ScriptedModel, check_pack


def dollars_to_cents(value: Any) -> int:
    """Dollars (as the model writes them) to cents: not idempotent (150 -> 15000 -> ...)."""
    return round(float(value) * 100)


class Account(BaseModel):
    owner: str
    balance_cents: Annotated[int, BeforeValidator(dollars_to_cents)]


@contract(
    fields=("balance_cents",),
    on_fail="fix",
    fix=lambda a: a.model_copy(update={"balance_cents": 10_000}),
)
def capped(account: Account) -> Violation | None:
    """A balance of at most 100 dollars, capped by the fix."""
    return Violation("balance is at most 10000 cents") if account.balance_cents > 10_000 else None


def account_pack() -> ContractPack:
    """A pack whose model's validator is not idempotent: its valid values hold a balance of
    0 (the one the validator keeps as it is, so a rendering of it reads back as it)."""
    owners = st.text("abc", min_size=1, max_size=5)
    return ContractPack(
        Account,
        (capped,),
        ({"owner": "Ada", "balance_cents": 0},),
        name="accounts",
        strategies={
            "valid": lambda: st.builds(lambda o: Account(owner=o, balance_cents=0), owners),
            "capped": lambda: st.builds(
                lambda o, d: Account.model_validate({"owner": o, "balance_cents": d}),
                owners,
                st.integers(101, 10_000),
            ),
        },
    )


class Ticket(BaseModel):
    title: str
    flagged: bool = False
    internal_ref: str = Field(default="", exclude=True)


@contract(
    fields=("flagged", "internal_ref"),
    on_fail="fix",
    fix=lambda t: t.model_copy(update={"internal_ref": "AUTO"}),
)
def referenced(ticket: Ticket) -> Violation | None:
    """A flagged ticket holds an internal reference (a field its dumps leave out)."""
    missing = ticket.flagged and not ticket.internal_ref
    return Violation("a flagged ticket has an internal_ref, flagged") if missing else None


def ticket_pack() -> ContractPack:
    """A pack whose fix sets a field the model's dumps exclude."""
    titles = st.text("xyz", min_size=1, max_size=5)
    return ContractPack(
        Ticket,
        (referenced,),
        ({"title": "t"},),
        name="tickets",
        strategies={
            "valid": lambda: st.builds(lambda t: Ticket(title=t), titles),
            "referenced": lambda: st.builds(lambda t: Ticket(title=t, flagged=True), titles),
        },
    )


@pytest.mark.parametrize("pack", [account_pack, ticket_pack], ids=["validator", "excluded"])
def test_a_fix_a_run_accepts_passes_check_pack(pack: Any) -> None:
    """A fix that a run accepts (a model whose validator is not idempotent, a fix of a field
    its dumps exclude) passes `check_pack`: the kit no longer validates its dump again."""
    check_pack(pack(), max_examples=10)


def test_the_run_accepts_the_capped_balance_as_the_kit_does() -> None:
    """A run's `settle` accepts the capped balance as the fix set it (10000 cents, not
    validated again into 1000000): what the kit now checks the fix by."""
    outcome = healjson.validate(
        json.dumps({"owner": "Ada", "balance_cents": 150}), Account, contracts=[capped]
    )
    assert outcome.ok
    assert 10_000 == outcome.value.balance_cents


class Span(BaseModel):
    low: int
    high: int


def span_pack(fix: Any) -> ContractPack:
    """A pack of one rule (`low` at most `high`) with `fix`."""

    @contract(fields=("low", "high"), on_fail="fix", fix=fix)
    def ordered(span: Span) -> Violation | None:
        return Violation("low must not exceed high") if span.low > span.high else None

    def spans(widths: st.SearchStrategy[int]) -> st.SearchStrategy[Span]:
        return st.builds(lambda low, w: Span(low=low, high=low + w), st.integers(-9, 9), widths)

    return ContractPack(
        Span,
        (ordered,),
        ({"low": 1, "high": 2},),
        name="span",
        strategies={
            "valid": lambda: spans(st.integers(0, 9)),
            "ordered": lambda: spans(st.integers(-9, -1)),
        },
    )


def floats(span: Span) -> Span:
    """A fix that swaps the bounds as floats: `5.0` in an `int` field."""
    return span.model_copy(update={"low": float(span.high), "high": float(span.low)})


def test_a_fix_that_puts_a_float_in_an_int_is_reported() -> None:
    """A fix whose value holds `5.0` in an `int` field, which a run refuses (it asks the model
    again), is reported by `check_pack` as failing the schema."""
    with pytest.raises(AssertionError, match=re.escape("fails the schema")) as info:
        check_pack(span_pack(floats), max_examples=10)
    assert "the fix of `ordered`" in str(info.value)
    model = ScriptedModel([json.dumps({"low": 5, "high": 1})])
    rule = span_pack(floats).contracts[0]
    outcome = Healer(Span, contracts=[rule], policy=HealPolicy(max_attempts=1)).run(model, "q")
    assert isinstance(outcome, Degraded)


class Line(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    lines: list[Line]


@contract(
    fields=("sku",),
    on_fail="fix",
    items="lines",
    fix=lambda line: line.model_copy(update={"sku": line.sku.upper()}),
)
def upper(line: Line) -> Violation | None:
    """Each line's sku is upper case, fixed by upper-casing it."""
    return None if line.sku.isupper() else Violation("sku is upper case")


def test_an_item_fix_is_checked_on_its_items_as_a_run_applies_it() -> None:
    """A rule over items whose fix corrects one item passes `check_pack`: the kit applies the
    fix to the failing items, as `settle` does, not to the whole value."""
    lines = st.lists(
        st.builds(Line, sku=st.sampled_from(["A", "B"]), qty=st.integers(0, 3)), max_size=3
    )
    bad = st.builds(Line, sku=st.sampled_from(["a", "b"]), qty=st.integers(0, 3))
    pack = ContractPack(
        Order,
        (upper,),
        ({"lines": [{"sku": "A", "qty": 1}]},),
        name="orders",
        strategies={
            "valid": lambda: st.builds(Order, lines=lines),
            "upper": lambda: st.builds(lambda ok, b: Order(lines=[*ok, b]), lines, bad),
        },
    )
    check_pack(pack, max_examples=10)
