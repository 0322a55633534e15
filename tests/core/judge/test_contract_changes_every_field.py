"""A contract that changes the value it checks is a `contract_error` whatever it changed: a field
declared `exclude=True`, a field with a custom serializer, a secret, an extra, a private
attribute, a dataclass's field, at any depth; one that only reads the value is none."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from functools import cached_property
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretBytes,
    SecretStr,
    field_serializer,
)

from healjson import Degraded, Healed, Healer, Reason, contract
from healjson._core.judge.contracts import ContractContext
from healjson._core.judge.judging import CHANGED_BY, judge_value
from healjson._core.judge.snapshot import same_snapshot, snapshot
from healjson._core.run.drive import drive_sync
from healjson._core.target.target import target_for
from healjson.testing import ScriptedModel
from pinned import pinned


@dataclasses.dataclass
class Spot:
    x: int
    y: int


class Item(BaseModel):
    sku: str
    hidden: str = Field(default="", exclude=True)
    _seen: int = PrivateAttr(default=0)


class Vault(BaseModel):
    model_config = ConfigDict(extra="allow")

    a: int
    internal: int = Field(default=0, exclude=True)
    note: str = ""
    secret: SecretStr = SecretStr("")
    token: SecretBytes = SecretBytes(b"")
    items: list[Item] = []
    meta: dict[str, int] = {}
    spot: Spot = Spot(0, 0)
    ratio: float = 0.0

    @field_serializer("note")
    def _note(self, note: str) -> str:
        return "constant"

    @cached_property
    def total(self) -> int:
        return self.a + self.internal


def _bump_item(vault: Vault) -> None:
    """An item's excluded field, or a new item when there is none."""
    if vault.items:
        vault.items[-1].hidden += "!"
    else:
        vault.items.append(Item(sku="new"))


def _bump_private(vault: Vault) -> None:
    """An item's private attribute, or a new item when there is none."""
    if vault.items:
        vault.items[0]._seen += 1
    else:
        vault.items.append(Item(sku="new"))


MUTATIONS: dict[str, Callable[[Vault], None]] = {
    "internal": lambda v: setattr(v, "internal", v.internal + 1),
    "note": lambda v: setattr(v, "note", v.note + "!"),
    "secret": lambda v: setattr(v, "secret", SecretStr(v.secret.get_secret_value() + "!")),
    "token": lambda v: setattr(v, "token", SecretBytes(v.token.get_secret_value() + b"!")),
    "item_hidden": _bump_item,
    "item_private": _bump_private,
    "meta": lambda v: v.meta.__setitem__("k", v.meta.get("k", 0) + 1),
    "spot": lambda v: setattr(v.spot, "x", v.spot.x + 1),
    "extra": lambda v: setattr(v, "flag", not getattr(v, "flag", False)),
    "ratio_nan_to_zero": lambda v: setattr(v, "ratio", 0.0 if v.ratio != 0.0 else float("nan")),
}

TEXT = st.text(max_size=6)
VAULTS = st.builds(
    lambda a, internal, note, secret, token, skus, meta, x, ratio, flag: Vault(
        a=a,
        internal=internal,
        note=note,
        secret=SecretStr(secret),
        token=SecretBytes(token),
        items=[Item(sku=sku, hidden=sku) for sku in skus],
        meta=meta,
        spot=Spot(x, -x),
        ratio=ratio,
        flag=flag,
    ),
    st.integers(-100, 100),
    st.integers(-100, 100),
    TEXT,
    TEXT,
    st.binary(max_size=6),
    st.lists(TEXT, max_size=3),
    st.dictionaries(st.sampled_from("jk"), st.integers(-5, 5), max_size=2),
    st.integers(-5, 5),
    st.one_of(st.floats(allow_nan=True), st.just(float("nan"))),
    st.booleans(),
)


def _judged(vault: Vault, change: Callable[[Vault], None] | None) -> list[Any]:
    """The changed-value diagnostics' `CHANGED_BY` of a run's judging of `vault` by one contract
    that applies `change` (or reads every part of the value, with None)."""

    @contract
    def rule(v: Vault) -> None:
        if change is None:  # reads everything, a cached property and the secrets too
            _ = (v.total, v.secret.get_secret_value(), v.token.get_secret_value(), v.spot)
            _ = [(item.hidden, item._seen) for item in v.items]
        else:
            change(v)

    groups = drive_sync(judge_value(target_for(Vault), (rule,), vault, ContractContext()))
    return [d.extra[CHANGED_BY] for group in groups for d in group if CHANGED_BY in d.extra]


@pinned(max_examples=75)
@given(vault=VAULTS, which=st.sampled_from(sorted(MUTATIONS)))
@example(vault=Vault(a=1, ratio=float("nan")), which="internal")
def test_any_change_to_any_field_is_seen_and_reading_is_not(vault: Vault, which: str) -> None:
    """For any value and any change (an excluded, serialized, secret, extra, private, dataclass
    or nested field), a contract making it is named as having changed the value, and a contract
    that only reads the value (a NaN, a cached property and the secrets too) is not."""
    assert [] == _judged(vault, None)
    assert [("rule",)] == _judged(vault, MUTATIONS[which])


def test_the_probe_s_three_mutations_degrade_with_contract_error() -> None:
    """The probe's repro: a contract that changes an excluded field, a field with a custom
    serializer or a `SecretStr` degrades the run with `contract_error`, and one that changes
    nothing heals it."""

    @contract
    def mut_excluded(v: Vault) -> None:
        v.internal = 999

    @contract
    def mut_serialized(v: Vault) -> None:
        v.note = "EVIL"

    @contract
    def mut_secret(v: Vault) -> None:
        v.secret = SecretStr("EVIL")

    @contract
    def reads(v: Vault) -> None:
        _ = (v.internal, v.note, v.secret.get_secret_value())

    answer = json.dumps({"a": 1, "internal": 5, "note": "orig", "secret": "s3cr3tvalue"})
    reasons = []
    for rule in (mut_excluded, mut_serialized, mut_secret):
        outcome = Healer(Vault, contracts=[rule]).run(ScriptedModel([answer]), "q")
        assert isinstance(outcome, Degraded)
        assert "s3cr3tvalue" not in json.dumps(outcome.errors[-1].value)  # still masked
        reasons.append(outcome.reason)
    assert [Reason.CONTRACT_ERROR] * 3 == reasons
    healed = Healer(Vault, contracts=[reads]).run(ScriptedModel([answer]), "q")
    assert isinstance(healed, Healed)
    assert "s3cr3tvalue" == healed.value.secret.get_secret_value()


def test_a_snapshot_sees_shared_and_cyclic_parts_and_objects_it_cannot_walk() -> None:
    """A list shared twice and a list holding itself are walked once; an object the walk
    cannot look into is compared by identity and by its dump."""

    class Opaque:
        def __init__(self, n: int) -> None:
            self.n = n

        def __str__(self) -> str:
            return f"Opaque({self.n})"

    shared: list[Any] = [1]
    cyclic: list[Any] = [2]
    cyclic.append(cyclic)
    opaque = Opaque(1)
    value = {"a": shared, "b": shared, "c": cyclic, "d": opaque}
    before = snapshot(value)
    assert same_snapshot(before, snapshot(value))

    opaque.n = 2
    assert not same_snapshot(before, snapshot(value))
    before = snapshot(value)
    value["d"] = Opaque(2)
    assert not same_snapshot(before, snapshot(value))
    before = snapshot(value)
    shared.append(3)
    assert not same_snapshot(before, snapshot(value))
