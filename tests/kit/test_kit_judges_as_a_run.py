"""The kit judges a value exactly as a run does: a contract that changes the value it checks is
the `contract_error` a run degrades with, reported once by `check_pack` with the rule's name,
never a pack that passes or a misleading "no change broke it" about another rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import ContractPack, Degraded, Reason, Source, contract
from healjson.testing import check_pack
from healjson.testing._strategies import judge
from pinned import pinned


class P(BaseModel):
    name: str = Field(max_length=20)
    qty: int = Field(ge=0, le=100)


@contract(fields=("name", "qty"))
def capped(p: P) -> str | None:
    """A rule that (by accident) normalises the value it checks."""
    p.name = p.name.strip()
    return "qty must be at most 50" if p.qty > 50 else None


@contract(fields=("name",))
def trimmed(p: P) -> str | None:
    """A rule the normalising one hides: the name has no surrounding spaces."""
    return "name has no surrounding spaces" if p.name != p.name.strip() else None


@contract(fields=("qty",))
def small(p: P) -> str | None:
    """A rule that only reads."""
    return "qty must be at most 90" if p.qty > 90 else None


def problems(pack: ContractPack) -> str:
    with pytest.raises(AssertionError) as info:
        check_pack(pack, max_examples=12)
    return str(info.value)


def test_check_pack_reports_a_golden_example_a_run_degrades_on() -> None:
    """The golden example a run degrades on with `contract_error` fails `check_pack`, with the
    rule named, the example quoted as it was, and how to fix it."""
    golden = {"name": " Ann ", "qty": 3}
    outcome = healjson.validate(json.dumps(golden), P, contracts=[capped])
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    text = problems(ContractPack(P, (capped,), (golden,), name="mutating"))
    assert "found 1 problem(s)" in text
    assert "contract `capped` changed the value it checks" in text
    assert 'on golden example examples[0] {"name": " Ann ", "qty": 3}' in text
    assert "copy it before changing anything" in text
    assert "`capped` was left out of the other checks" in text


def test_the_rule_a_mutation_hid_is_checked_without_it() -> None:
    """With the mutating rule named and left out, the rule it hid is broken alone as usual: no
    "no change the kit tried broke `trimmed`"."""
    pack = ContractPack(P, (small, capped, trimmed), ({"name": "Ann", "qty": 3},), name="hidden")
    text = problems(pack)
    assert "found 1 problem(s)" in text
    assert "contract `capped` changed the value it checks" in text
    assert "trimmed" not in text
    assert "small" not in text


def test_a_run_and_the_kit_give_the_same_verdict_the_kit_naming_the_rule() -> None:
    """Among several rules, a run degrades with a `contract_error` naming the rules that ran
    (the value before the change quoted), and the kit's judging names the one that did it."""
    data = {"name": " Ann ", "qty": 3}
    outcome = healjson.validate(json.dumps(data), P, contracts=[small, capped])
    assert isinstance(outcome, Degraded)
    [error] = outcome.errors
    assert error.constraint.startswith("one of the contracts `small`, `capped` changed the value")
    assert data == error.value  # the value before the change
    found = judge(ContractPack(P, (small, capped), name="p"), P.model_validate(data))
    [mine] = found
    assert "capped" == mine.rule
    assert mine.constraint.startswith("contract `capped` changed the value it checks")
    assert data == mine.value


@contract(fields=("qty",))
async def waits(p: P) -> None:
    """An async rule that only reads."""
    return


@contract(fields=("qty",))
async def bumps(p: P) -> None:
    """An async rule that changes the value."""
    p.qty = 7


def test_async_rules_that_ran_together_are_all_named_and_left_out() -> None:
    """When one of several async rules (which run together) changed the value, the report names
    them all and leaves them all out, once."""
    text = problems(ContractPack(P, (waits, bumps), ({"name": "Ann", "qty": 3},), name="async"))
    assert "found 1 problem(s)" in text
    assert "one of the contracts `waits`, `bumps` changed the value they check" in text
    assert "`waits` / `bumps` were left out of the other checks" in text


_PADDING = st.sampled_from(["", " ", "\t", "\n "])


@pinned(max_examples=20)
@given(
    name=st.tuples(_PADDING, st.text(max_size=16), _PADDING).map("".join),
    qty=st.integers(0, 100),
    rules=st.permutations([small, capped]),
)
def test_the_kit_gives_the_verdict_a_run_gives(name: str, qty: int, rules: list[Any]) -> None:
    """On any value, the kit's judging reports a `contract_error` exactly when `validate`
    degrades with one, naming the same rule."""
    data = {"name": name, "qty": qty}
    outcome = healjson.validate(json.dumps(data), P, contracts=rules)
    found = judge(ContractPack(P, tuple(rules), name="p"), P.model_validate(data))
    errors = [d.rule for d in found if d.source is Source.CONTRACT_ERROR]
    degraded = isinstance(outcome, Degraded) and Reason.CONTRACT_ERROR == outcome.reason
    assert degraded == bool(errors) == (name != name.strip())
    if degraded:
        assert ["capped"] == errors
        [error] = [e for e in outcome.errors if e.source is Source.CONTRACT_ERROR]
        assert "capped" in error.extra["changed_by"]
