"""A healer's fingerprint (the response cache's keys, durable units' names) tells apart rules
made by one factory with different values: the plain values a rule's closure and defaults hold
are part of it, so two healers whose rules differ only by a number never share a cached answer
or a recorded call."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Violation, contract
from healjson._core.run.cache import spec_fingerprint
from healjson._durable import request_id
from pinned import pinned


class Invoice(BaseModel):
    number: str
    total: int


def at_least(floor: Any) -> Any:
    """A rule made with `floor` held in its closure."""

    @contract(name="total_floor")
    def check(value: Invoice) -> Violation | None:
        if value.total < floor:
            return Violation("total", value.total, f">= {floor}", "Raise the total.")
        return None

    return check


def with_default(floor: Any) -> Any:
    """The same rule with `floor` held as a default argument."""

    def check(value: Invoice, floor: Any = floor) -> Violation | None:
        return None if value.total >= floor else Violation("total", value.total, ">= floor", "")

    return contract(name="total_floor")(check)


plain = st.one_of(st.integers(), st.text(max_size=5), st.tuples(st.integers(), st.booleans()))


@pinned(max_examples=30)
@given(first=plain, second=plain, made=st.sampled_from([at_least, with_default]))
def test_rules_differing_only_by_a_held_value_have_different_fingerprints(
    first: Any, second: Any, made: Any
) -> None:
    """Equal values give equal fingerprints (and durable names); different ones never collide."""
    one = healjson.Healer(Invoice, contracts=[made(first)])
    two = healjson.Healer(Invoice, contracts=[made(second)])
    messages, params = [{"role": "user", "content": "invoice"}], {"model": "m"}

    same = repr(first) == repr(second)
    assert same == (spec_fingerprint(one.spec) == spec_fingerprint(two.spec))
    assert same == (request_id(messages, params, one) == request_id(messages, params, two))
