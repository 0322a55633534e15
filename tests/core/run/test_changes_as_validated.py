"""`changed_fields` names what the rules or a repair changed, never what a validator did: a fix
or a drop on an answer is judged between that answer's value as validated (before any rule
ran) and the accepted value, both dumped alike, so a field a `BeforeValidator` turned from
dollars into cents or a `SecretStr` (whose dump hides it) is not listed; after a repair, a
path where the final answer said what the first one said is not listed either."""

from __future__ import annotations

import json
from typing import Annotated, Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, BeforeValidator, SecretStr, create_model

from healjson import Healed, Healer, HealPolicy, Violation, contract
from healjson.testing import ScriptedModel
from pinned import pinned


def dollars_to_cents(value: Any) -> int:
    """Dollars (as the model writes them) to cents: not idempotent (1250 -> 125000)."""
    return round(float(value) * 100)


Cents = Annotated[int, BeforeValidator(dollars_to_cents)]
Upper = Annotated[str, AfterValidator(str.upper)]


class Account(BaseModel):
    owner: str
    balance_cents: Cents
    pin: SecretStr


class Line(BaseModel):
    sku: str
    price_cents: Cents


class Invoice(BaseModel):
    total_cents: Cents
    pin: SecretStr
    lines: list[Line]


ACCOUNT = {"owner": " Ada ", "balance_cents": 12.5, "pin": "4711"}


def healed(healer: Healer[Any], *answers: Any) -> Healed[Any]:
    """The outcome of one scripted run whose model answers `answers` (as JSON), each used."""
    model = ScriptedModel([json.dumps(answer) for answer in answers])
    outcome = healer.run(model, "q")
    assert isinstance(outcome, Healed), outcome
    assert len(answers) == len(model.calls)
    return outcome


def trimmed_rule(fix: Any) -> Any:
    """A whole-value rule on `owner` (no surrounding spaces) with `fix`."""

    @contract(fields=("owner",), on_fail="fix", fix=fix)
    def trimmed(account: Account) -> Violation | None:
        owner = account.owner
        return Violation("owner has no surrounding spaces") if owner != owner.strip() else None

    return trimmed


def strip_in_place(account: Account) -> Account:
    """A fix that changes the value it is given, and returns it."""
    account.owner = account.owner.strip()
    return account


def test_a_fix_of_owner_lists_owner_only_beside_transformed_fields() -> None:
    """A fix of `owner` on the first answer lists `owner` alone, not the dollars-to-cents field
    nor the `SecretStr`, whose dumps differ from the JSON the model wrote."""
    fix = trimmed_rule(lambda a: a.model_copy(update={"owner": a.owner.strip()}))
    assert ("owner",) == healed(Healer(Account, contracts=[fix]), ACCOUNT).changed_fields


def test_a_fix_that_changes_the_value_in_place_still_lists_what_it_changed() -> None:
    """A fix that strips `owner` on the object it was given (and returns it) lists `owner`:
    the value as validated was dumped before the fix ran."""
    outcome = healed(Healer(Account, contracts=[trimmed_rule(strip_in_place)]), ACCOUNT)
    assert ("owner",) == outcome.changed_fields


def test_a_drop_lists_the_shortened_list_only() -> None:
    """A drop of one line lists `lines`, not the transformed total nor the secret."""

    @contract(fields=("sku",), on_fail="drop", items="lines")
    def no_samples(line: Line) -> Violation | None:
        return Violation("samples are not invoiced") if line.sku == "SAMPLE" else None

    lines = [{"sku": "A", "price_cents": 1.5}, {"sku": "SAMPLE", "price_cents": 0}]
    answer = {"total_cents": 1.5, "pin": "1", "lines": lines}
    assert ("lines",) == healed(Healer(Invoice, contracts=[no_samples]), answer).changed_fields


def test_an_item_fix_lists_the_item_field_it_changed_only() -> None:
    """An item fix of one line's `sku` lists `lines[1].sku`, not the lines' transformed
    prices."""

    @contract(
        fields=("sku",),
        on_fail="fix",
        items="lines",
        fix=lambda line: line.model_copy(update={"sku": line.sku.upper()}),
    )
    def upper(line: Line) -> Violation | None:
        return None if line.sku.isupper() else Violation("sku is upper case")

    lines = [{"sku": "A", "price_cents": 1.5}, {"sku": "b", "price_cents": 2.25}]
    answer = {"total_cents": 3.75, "pin": "1", "lines": lines}
    outcome = healed(Healer(Invoice, contracts=[upper]), answer)
    assert ("lines[1].sku",) == outcome.changed_fields


def test_a_repair_lists_what_the_model_changed_only() -> None:
    """After a repair that adds the missing `owner`, `changed_fields` is `owner` alone: the
    balance and the pin the model wrote as before are no change, though their dumps differ
    from what it wrote."""
    first = {"balance_cents": 12.5, "pin": "4711"}
    outcome = healed(Healer(Account), first, {**first, "owner": "Ada"})
    assert ("owner",) == outcome.changed_fields


def test_a_repair_lists_a_transformed_field_the_model_did_change() -> None:
    """After a repair whose answer changes the balance and the pin, both are listed."""
    first = {"balance_cents": 12.5, "pin": "4711"}
    final = {"owner": "Ada", "balance_cents": 13, "pin": "0000"}
    outcome = healed(Healer(Account), first, final)
    assert {"owner", "balance_cents", "pin"} == set(outcome.changed_fields)


def test_a_fix_on_a_repaired_answer_lists_what_it_changed() -> None:
    """A fix of `owner` on the answer to a repair lists `owner` though the model wrote it as
    in its first answer: the fix changed it."""
    first = {"owner": " Ada ", "balance_cents": 12.5}
    healer = Healer(Account, contracts=[trimmed_rule(strip_in_place)])
    outcome = healed(healer, first, {**first, "pin": "4711"})
    assert ("owner", "pin") == outcome.changed_fields


KINDS: dict[str, Any] = {
    "cents": (Cents, lambda i: 1.5 + i, lambda i: 999_000 + i),
    "upper": (Upper, lambda i: f"name {i}", lambda i: f"OTHER {i}"),
    "secret": (SecretStr, lambda i: f"pin {i}", None),
    "plain": (int, lambda i: i, lambda i: 1_000 + i),
}
"""Per kind of field: its type, the JSON the model writes for field `i`, and the validated
value a fix sets it to (None: a fix does not change it, its dump would not show it)."""


def generated(kinds: list[str]) -> type[BaseModel]:
    """A model with one field per kind (`f0`, `f1`, ...) and a `flagged` flag."""
    fields: dict[str, Any] = {f"f{i}": (KINDS[kind][0], ...) for i, kind in enumerate(kinds)}
    return create_model("Generated", flagged=(bool, False), **fields)


def answer_of(kinds: list[str]) -> dict[str, Any]:
    """The model's JSON answer: every field as written, flagged."""
    return {"flagged": True} | {f"f{i}": KINDS[kind][1](i) for i, kind in enumerate(kinds)}


kinds_lists = st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=6)


@pinned(max_examples=30)
@given(kinds=kinds_lists, picked=st.sets(st.integers(0, 5)), in_place=st.booleans())
@example(kinds=["cents", "secret", "upper"], picked={2}, in_place=False)
@example(kinds=["cents", "cents"], picked=set(), in_place=True)
def test_changed_fields_names_exactly_what_a_fix_changed(
    kinds: list[str], picked: set[int], in_place: bool
) -> None:
    """For a generated model of fields with transforming validators, a fix on the first
    answer that changes any subset of them (and the flag), on a copy or in place, is listed
    as exactly that subset and `flagged`."""
    model = generated(kinds)
    touched = {
        f"f{i}": KINDS[kinds[i]][2](i) for i in picked if i < len(kinds) and KINDS[kinds[i]][2]
    }
    updates = touched | {"flagged": False}

    def fix(value: Any) -> Any:
        if not in_place:
            return value.model_copy(update=updates)
        for name, new in updates.items():
            setattr(value, name, new)
        return value

    rule = contract(fields=("flagged",), on_fail="fix", fix=fix)(
        lambda v: "flagged" if v.flagged else None
    )
    healer = Healer(model, contracts=[rule], policy=HealPolicy(max_attempts=1))
    outcome = healed(healer, answer_of(kinds))
    assert ["flagged", *sorted(touched, key=lambda n: int(n[1:]))] == list(outcome.changed_fields)


@pinned(max_examples=30)
@given(kinds=kinds_lists, picked=st.sets(st.integers(0, 5)))
@example(kinds=["secret", "cents"], picked={0})
def test_changed_fields_names_exactly_what_a_repair_changed(
    kinds: list[str], picked: set[int]
) -> None:
    """For a generated model of fields with transforming validators, a first answer without
    `flagged` (required here) repaired by one that adds it and rewrites any subset of the
    fields lists exactly `flagged` and that subset."""
    fields: dict[str, Any] = {f"f{i}": (KINDS[kind][0], ...) for i, kind in enumerate(kinds)}
    model = create_model("Generated", flagged=(bool, ...), **fields)
    first = {name: value for name, value in answer_of(kinds).items() if name != "flagged"}
    rewritten = {f"f{i}" for i in picked if i < len(kinds)}
    final = {"flagged": False} | {
        name: (value + 1 if isinstance(value, int | float) else f"{value} again")
        if name in rewritten
        else value
        for name, value in first.items()
    }
    outcome = healed(Healer(model), first, final)
    expected = ["flagged", *sorted(rewritten, key=lambda n: int(n[1:]))]
    assert expected == list(outcome.changed_fields)
