"""Contracts and violations: defaults, prescriptions, results, the decorator, the context."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field

import healjson
from contract_cases import GOOD_ORDER, HIGH, Order, Ticket, contract_errors, high_needs_outage
from healjson import (
    MISSING,
    Contract,
    ContractContext,
    Degraded,
    Healed,
    Healer,
    Source,
    Violation,
    contract,
)

# ---------------------------------------------------------------------------------------------
# Violation defaults
# ---------------------------------------------------------------------------------------------


def test_violation_path_defaults_to_the_first_declared_field() -> None:
    """A Violation without a path points at the contract's first field, with its value."""
    (error,) = contract_errors(high_needs_outage)

    assert "urgency" == error.path
    assert "high" == error.value
    assert ("urgency", "summary") == error.fields
    assert Source.CONTRACT == error.source
    assert "high_needs_outage" == error.rule
    assert "a high-urgency ticket must mention an outage in the summary" == error.constraint
    assert {"urgency": "high", "summary": "printer jammed"} == error.extra["values"]


def test_default_prescription_names_every_field_and_allows_any_to_change() -> None:
    """The default prescription of a cross-field rule names all fields and says any may change."""
    (error,) = contract_errors(high_needs_outage)

    assert "`urgency`" in error.prescription
    assert "`summary`" in error.prescription
    assert "change any of them" in error.prescription
    assert "a high-urgency ticket must mention an outage" in error.prescription


def test_single_field_prescription_names_that_field() -> None:
    """A one-field rule's default prescription says to change that field."""

    @contract(fields=("summary",))
    def short(ticket: Ticket) -> Violation:
        return Violation("must be at most 5 words")

    (error,) = contract_errors(short)

    assert "summary" == error.path
    assert "printer jammed" == error.value
    assert "Change `summary` so that: must be at most 5 words." == error.prescription


def test_violation_without_fields_points_at_the_root() -> None:
    """With no fields anywhere, the path is the root and the value is the whole instance."""

    def rule(ticket: Ticket) -> Violation:
        return Violation("the ticket is not plausible")

    (error,) = contract_errors(rule)

    assert "<root>" == error.path
    assert Ticket(**HIGH) == error.value
    assert () == error.fields
    assert "Change `<root>` so that: the ticket is not plausible." == error.prescription


def test_violation_fields_override_the_contract_fields() -> None:
    """Fields given on the Violation replace the contract's declared fields."""

    @contract(fields=("urgency", "summary"))
    def rule(ticket: Ticket) -> Violation:
        return Violation("the order id must match the summary", fields=("order_id", "summary"))

    (error,) = contract_errors(rule)

    assert "order_id" == error.path
    assert "ORD-123456" == error.value
    assert ("order_id", "summary") == error.fields
    assert "`order_id`" in error.prescription
    assert "`urgency`" not in error.prescription


def test_explicit_path_value_is_looked_up() -> None:
    """An explicit path without a value reports the value found at that path."""

    @contract(fields=("urgency", "summary"))
    def rule(ticket: Ticket) -> Violation:
        return Violation("must mention an outage", path="summary")

    (error,) = contract_errors(rule)

    assert "summary" == error.path
    assert "printer jammed" == error.value


def test_explicit_value_is_kept_even_when_none() -> None:
    """An explicit value (even None) is reported as given, not looked up."""

    @contract(fields=("summary",))
    def rule(ticket: Ticket) -> Violation:
        return Violation("needs a reference", path="summary", value=None)

    (error,) = contract_errors(rule)

    assert error.value is None


def test_path_that_does_not_exist_has_the_missing_value() -> None:
    """A violation path that is not in the value reports MISSING."""

    def rule(ticket: Ticket) -> Violation:
        return Violation("needs an assignee", path="assignee")

    (error,) = contract_errors(rule)

    assert MISSING is error.value
    assert error.is_missing


def test_nested_violation_path_looks_up_list_items() -> None:
    """A violation path like `items[0].price` finds the nested value."""

    @contract(fields=("items",))
    def rule(order: Order) -> Violation:
        return Violation("the first price must be round", path="items[0].price")

    data = {**GOOD_ORDER, "items": [{"sku": "a", "price": 1.5}]}
    out = healjson.validate(json.dumps(data), Order, contracts=[rule])

    assert isinstance(out, Degraded)
    assert "items[0].price" == out.errors[0].path
    assert 1.5 == out.errors[0].value


def test_violation_value_is_found_by_the_field_alias() -> None:
    """A contract may name a field by its JSON alias; its value is looked up, not MISSING."""

    class Aliased(BaseModel):
        order_id: str = Field(alias="orderId")
        total: int

    @contract(fields=("orderId", "total"))
    def rule(value: Aliased) -> Violation | None:
        return Violation("the total is too high") if value.total > 10 else None

    Healer(Aliased, contracts=[rule])  # the alias is an accepted field name
    out = healjson.validate('{"orderId": "A1", "total": 50}', Aliased, contracts=[rule])

    assert isinstance(out, Degraded)
    assert "orderId" == out.errors[0].path
    assert "A1" == out.errors[0].value
    assert {"orderId": "A1", "total": 50} == out.errors[0].extra["values"]


def test_violation_fields_as_a_bare_string_raises() -> None:
    """Violation(fields="summary") raises TypeError like contract(fields="summary") does."""
    # otherwise the string is split into one "field" per character: `s`, `u`, `m`, ...
    with pytest.raises(TypeError):
        Violation("too vague", fields="summary")  # type: ignore[arg-type]


def test_custom_prescription_naming_all_fields_is_kept_verbatim() -> None:
    """A prescription that already names every field is used unchanged."""
    text = "Lower urgency or put the outage in summary."

    @contract(fields=("urgency", "summary"))
    def rule(ticket: Ticket) -> Violation:
        return Violation("high needs an outage", prescription=text)

    (error,) = contract_errors(rule)

    assert text == error.prescription


def test_custom_prescription_missing_a_field_gets_the_fields_appended() -> None:
    """A prescription that omits a field is completed with every field involved."""

    @contract(fields=("urgency", "summary"))
    def rule(ticket: Ticket) -> Violation:
        return Violation("high needs an outage", prescription="Lower the urgency.")

    (error,) = contract_errors(rule)

    assert (
        "Lower the urgency. Fields involved: `urgency`, `summary`; any of them may change."
        == error.prescription
    )


def test_single_field_custom_prescription_is_kept() -> None:
    """A one-field rule keeps its own prescription as written."""

    @contract(fields=("summary",))
    def rule(ticket: Ticket) -> Violation:
        return Violation("too vague", prescription="Say what broke.")

    (error,) = contract_errors(rule)

    assert "Say what broke." == error.prescription


# ---------------------------------------------------------------------------------------------
# What a contract may return
# ---------------------------------------------------------------------------------------------


def test_contract_returning_none_or_true_passes() -> None:
    """None and True both mean the rule holds."""
    out_none = healjson.validate(json.dumps(HIGH), Ticket, contracts=[lambda t: None])
    out_true = healjson.validate(json.dumps(HIGH), Ticket, contracts=[lambda t: True])
    out_empty = healjson.validate(json.dumps(HIGH), Ticket, contracts=[lambda t: []])

    assert isinstance(out_none, Healed)
    assert isinstance(out_true, Healed)
    assert isinstance(out_empty, Healed)


def test_contract_returning_false_uses_its_description() -> None:
    """False is a violation described by the contract's docstring."""

    @contract(fields=("summary",))
    def mentions_outage(ticket: Ticket) -> bool:
        """The summary must mention an outage."""
        return "outage" in ticket.summary

    (error,) = contract_errors(mentions_outage)

    assert "The summary must mention an outage." == error.constraint
    assert "summary" == error.path


def test_contract_returning_false_without_docstring_names_the_rule() -> None:
    """False from an undocumented rule is described by the rule's name."""

    def no_doc(ticket: Ticket) -> bool:
        return False

    (error,) = contract_errors(no_doc)

    assert "rule no_doc" == error.constraint


def test_contract_returning_a_string_uses_it_as_the_constraint() -> None:
    """A string result is the violated constraint."""
    (error,) = contract_errors(lambda t: "summary must name the product")

    assert "summary must name the product" == error.constraint
    assert Source.CONTRACT == error.source


def test_contract_yielding_violations_reports_each() -> None:
    """A generator contract yields one diagnostic per violation."""

    @contract(fields=("urgency", "summary"))
    def rules(ticket: Ticket) -> Iterator[Violation]:
        yield Violation("first", path="urgency")
        yield Violation("second", path="summary")

    errors = contract_errors(rules)

    assert ["first", "second"] == [e.constraint for e in errors]
    assert ["urgency", "summary"] == [e.path for e in errors]


def test_generator_contract_raising_half_way_keeps_earlier_violations() -> None:
    """A generator that raises after a violation reports both the violation and the crash."""

    def rules(ticket: Ticket) -> Iterator[Violation]:
        yield Violation("first", path="urgency")
        raise RuntimeError("boom")

    out = healjson.validate(json.dumps(HIGH), Ticket, contracts=[rules])

    assert isinstance(out, Degraded)
    assert healjson.Reason.CONTRACT_ERROR == out.reason
    assert [Source.CONTRACT, Source.CONTRACT_ERROR] == [e.source for e in out.errors]


def test_contract_returning_an_unknown_type_is_a_contract_error() -> None:
    """A result that is not None, a bool, a string or Violations is a bug in the contract."""
    out = healjson.validate(json.dumps(HIGH), Ticket, contracts=[lambda t: 42])

    assert isinstance(out, Degraded)
    assert healjson.Reason.CONTRACT_ERROR == out.reason
    assert Source.CONTRACT_ERROR == out.errors[0].source
    assert "42" in out.errors[0].constraint


def test_raising_contract_is_a_contract_error_naming_the_rule() -> None:
    """A contract that raises becomes a contract_error diagnostic that blames the contract."""

    @contract(fields=("summary",))
    def broken(ticket: Ticket) -> None:
        raise ZeroDivisionError("division by zero")

    out = healjson.validate(json.dumps(HIGH), Ticket, contracts=[broken])

    assert isinstance(out, Degraded)
    assert healjson.Reason.CONTRACT_ERROR == out.reason
    error = out.errors[0]
    assert "broken" == error.rule
    assert ("summary",) == error.fields
    assert "contract `broken` raised ZeroDivisionError: division by zero" == error.constraint
    assert "bug in the contract" in error.prescription


def test_async_contract_works_with_validate() -> None:
    """validate() awaits an async contract."""

    @contract(fields=("urgency", "summary"))
    async def rule(ticket: Ticket, ctx: ContractContext) -> Violation | None:
        return Violation("nope") if ticket.urgency == "high" else None

    out = healjson.validate(json.dumps(HIGH), Ticket, contracts=[rule])

    assert isinstance(out, Degraded)
    assert "nope" == out.errors[0].constraint
    assert "high" == out.errors[0].value


def test_every_contract_runs_even_after_a_violation() -> None:
    """All contracts run on a value; their diagnostics are reported in order."""
    out = healjson.validate(
        json.dumps(HIGH), Ticket, contracts=[lambda t: "first rule", lambda t: "second rule"]
    )

    assert isinstance(out, Degraded)
    assert ["first rule", "second rule"] == [e.constraint for e in out.errors]


# ---------------------------------------------------------------------------------------------
# The contract decorator
# ---------------------------------------------------------------------------------------------


def test_contract_fields_as_a_bare_string_raises() -> None:
    """fields="summary" (not a tuple) raises TypeError at decoration."""
    with pytest.raises(TypeError, match="sequence of names"):
        contract(fields="summary")  # type: ignore[arg-type]


def test_contract_decorating_a_non_callable_raises() -> None:
    """Applying @contract(...) to something that is not a function raises TypeError."""
    with pytest.raises(TypeError, match="needs a function"):
        contract(fields=("summary",))(42)  # type: ignore[arg-type]


def test_non_callable_contract_given_to_healer_raises() -> None:
    """Healer(contracts=[...]) with a non-callable raises TypeError at construction."""
    with pytest.raises(TypeError, match="contracts must be functions"):
        Healer(Ticket, contracts=[42])  # type: ignore[list-item]


def test_bare_contract_decorator_builds_a_contract() -> None:
    """@contract without arguments takes the name and description from the function."""

    @contract
    def rule(ticket: Ticket, ctx: ContractContext) -> None:
        """Tickets must be real."""

    assert isinstance(rule, Contract)
    assert "rule" == rule.name
    assert "Tickets must be real." == rule.description
    assert () == rule.fields
    assert rule.takes_context is True


def test_contract_name_and_description_can_be_given() -> None:
    """name= and description= override the function's own."""

    @contract(fields=("summary",), name="short_summary", description="Keep it short.")
    def rule(ticket: Ticket) -> None:
        """Ignored docstring."""

    assert "short_summary" == rule.name
    assert "Keep it short." == rule.description
    assert ("summary",) == rule.fields


def test_contract_fields_list_becomes_a_tuple() -> None:
    """A list of field names is stored as a tuple."""
    rule = contract(fields=["urgency", "summary"])(lambda t: None)

    assert ("urgency", "summary") == rule.fields


def test_single_argument_contract_does_not_take_a_context() -> None:
    """A one-parameter function is called with the value only."""
    calls: list[tuple[Any, ...]] = []

    def one(value: Any) -> None:
        calls.append((value,))

    def two(value: Any, ctx: ContractContext) -> None:
        calls.append((value, ctx))

    def star(*args: Any) -> None:
        calls.append(args)

    ctx = ContractContext(extra={"k": 1})
    contract(one)("v", ctx)
    contract(two)("v", ctx)
    contract(star)("v", ctx)

    assert [("v",), ("v", ctx), ("v", ctx)] == calls
    assert contract(one).takes_context is False


def test_contract_called_without_context_gets_an_empty_one() -> None:
    """Calling a two-argument contract with no context passes an empty ContractContext."""
    seen: list[ContractContext] = []
    rule = contract(lambda value, ctx: seen.append(ctx))

    rule("v")

    assert [ContractContext()] == seen


def test_context_input_text_joins_the_user_turns() -> None:
    """input_text is the text of the user turns (and text parts), joined by blank lines."""
    ctx = ContractContext(
        messages=(
            {"role": "system", "content": "system prompt"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "reply"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "second"},
                    {"type": "image_url", "image_url": {"url": "https://x"}},
                ],
            },
            {"content": "no role means user"},
        )
    )

    assert "first\n\nsecond\n\nno role means user" == ctx.input_text


def test_validate_context_may_be_a_mapping_of_extra_data() -> None:
    """validate(context={...}) exposes the mapping as ctx.extra."""
    seen: list[Any] = []

    def rule(ticket: Ticket, ctx: ContractContext) -> None:
        seen.append(dict(ctx.extra))

    healjson.validate(json.dumps(HIGH), Ticket, contracts=[rule], context={"tenant": "acme"})

    assert [{"tenant": "acme"}] == seen
