"""`check_pack` judges a fix's result against every rule of the pack, as a run does, and renders
a value as a model writes it (secrets by their value, excluded fields included), so that it
blames neither a fix another rule refuses on nobody nor L1 for a dump's mask."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, SecretStr

import healjson
from healjson import ContractPack, Degraded, Healed, contract
from healjson.testing import check_pack, corrupted
from pinned import pinned


class Order(BaseModel):
    qty: int = Field(ge=0, le=100)
    note: str = ""


@contract(fields=("qty",), on_fail="fix", fix=lambda o: o.model_copy(update={"qty": 10}))
def capped(order: Order) -> str | None:
    """At most 10 of a kind, capped to 10 by the fix."""
    return "qty at most 10" if order.qty > 10 else None


@contract(fields=("qty", "note"))
def ten_has_note(order: Order) -> str | None:
    """An order of exactly 10 says why in its note."""
    return "qty 10 needs a note" if order.qty == 10 and not order.note else None


def test_a_fix_whose_result_another_rule_refuses_is_reported_naming_both() -> None:
    """A fix whose value breaks another rule of the pack, which a run refuses (it asks the
    model again), fails `check_pack` with the fix's rule and the other rule named."""
    outcome = healjson.validate(json.dumps({"qty": 50}), Order, contracts=[capped, ten_has_note])
    assert isinstance(outcome, Degraded)
    examples = ({"qty": 3}, {"qty": 10, "note": "n"})
    pack = ContractPack(Order, (capped, ten_has_note), examples, name="capped")
    with pytest.raises(AssertionError) as info:
        check_pack(pack, max_examples=10)
    text = str(info.value)
    assert "found 1 problem(s)" in text
    assert "the fix of `capped`" in text
    assert "which breaks `ten_has_note`" in text
    assert "every rule of the pack" in text


def test_a_fix_another_rule_accepts_passes() -> None:
    """The same fix passes when the other rule accepts its value (a capped order needs no
    note), as a run accepts it without a call."""

    @contract(fields=("qty", "note"))
    def nine_has_note(order: Order) -> str | None:
        return "qty 9 needs a note" if order.qty == 9 and not order.note else None

    assert healjson.validate('{"qty": 50}', Order, contracts=[capped, nine_has_note]).ok
    examples = ({"qty": 3}, {"qty": 9, "note": "n"})
    check_pack(ContractPack(Order, (capped, nine_has_note), examples, name="ok"), max_examples=10)


@pinned(max_examples=15)
@given(
    st.sampled_from(["Order ORD-123456 is lost", "ORD-123456 lost", "Lost: ORD-123456 !!"]),
    st.integers(4, 5),
)
def test_the_shipped_ticket_fix_keeps_an_urgent_summary_long_enough(
    summary: str, urgency: int
) -> None:
    """The shipped `support_ticket` fix never cuts an urgent ticket's summary (which was long
    enough) under the 15 characters `urgent_summary_explains` needs: a run accepts it."""
    pack = healjson.load_contracts("support_ticket")
    ticket = {"urgency": urgency, "category": "refund", "summary": summary}
    ticket["orderId"] = "ORD-123456"
    outcome = healjson.validate(json.dumps(ticket), pack.model, contracts=pack.contracts)
    assert isinstance(outcome, Healed), outcome
    assert ("summary_omits_order_number",) == outcome.fixed
    assert "ORD-" not in outcome.value.summary
    assert len(outcome.value.summary) >= 15


def test_the_shipped_packs_fixes_pass_every_rule() -> None:
    """`check_pack` (which now judges each fix against every rule) passes the shipped packs
    whose rules have fixes."""
    for name in ("support_ticket", "invoice"):
        check_pack(healjson.load_contracts(name), max_examples=10)


class Keyed(BaseModel):
    token: SecretStr
    n: int = Field(ge=0, le=9)
    internal: int = Field(default=0, exclude=True, ge=0, le=9)


@contract(fields=("n",))
def n_small(keyed: Keyed) -> str | None:
    """`n` at most 5."""
    return "n at most 5" if keyed.n > 5 else None


def test_a_secret_or_an_excluded_field_is_no_l1_bug() -> None:
    """A model with a `SecretStr` and a `Field(exclude=True)` field passes `check_pack`: its
    renderings carry the secret's value and the excluded field, and L1 reads them back."""
    pack = ContractPack(Keyed, (n_small,), ({"token": "abcdefgh12", "n": 1},), name="keyed")
    check_pack(pack, max_examples=10)


@pinned(max_examples=15)
@given(
    st.text("abcxyz019", min_size=1, max_size=12),
    st.integers(0, 9),
    st.integers(0, 9),
    st.data(),
)
def test_a_rendering_is_what_a_model_writes_and_l1_reads_it_back(
    secret: str, n: int, internal: int, data: st.DataObject
) -> None:
    """Every recoverable rendering of a value with a secret and an excluded field holds the
    secret's value and the field, and L1 recovers that very value from it."""
    value = Keyed(token=secret, n=n, internal=internal)
    corruption = data.draw(corrupted(value, model=Keyed))
    if corruption.recoverable:  # a cut one expects the data before the cut
        assert {"token": secret, "n": n, "internal": internal} == corruption.expected
        outcome = healjson.validate(corruption.text, Keyed, finish_reason=corruption.finish_reason)
        assert outcome.ok
        assert value == outcome.value
        assert secret == outcome.value.token.get_secret_value()
        assert internal == outcome.value.internal


class Broken(BaseModel):
    a: int
    b: str


def test_a_real_l1_failure_is_still_reported() -> None:
    """A recovered value that differs where it was written is still reported as L1's bug."""
    from healjson.testing._corruptions import Corruption
    from healjson.testing._internals import ContractContext, target_for
    from healjson.testing._pack_checks import check_recovery
    from healjson.testing._pack_problems import Problem

    text = json.dumps({"a": 1, "b": "x"})
    corruption = Corruption(text, ("pretty",), None, True, {"a": 1, "b": "x"})
    with pytest.raises(Problem, match="L1 recovered a different value") as info:
        check_recovery(target_for(Broken), (), ContractContext(), Broken(a=2, b="x"), corruption)
    assert "a bug in healjson's L1" in info.value.finding.fix
