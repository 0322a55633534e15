"""Unit behaviour of contracts, violations, schema diagnostics and the repair prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator

import healjson
from healjson import (
    MISSING,
    Contract,
    ContractContext,
    Degraded,
    Diagnostic,
    Healed,
    Healer,
    RepairPrompt,
    Source,
    Strategy,
    Violation,
    contract,
)
from healjson._core.repair import MAX_HISTORY_LINES, history_line

# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


class Ticket(BaseModel):
    urgency: Literal["low", "high"]
    summary: str = Field(max_length=80)
    order_id: str = Field(pattern=r"^ORD-\d{6}$")


class Line(BaseModel):
    sku: str
    price: float = Field(gt=0)


class Order(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rating: int = Field(le=5)
    count: int = Field(ge=1)
    note: str = Field(max_length=10)
    tags: list[str] = Field(min_length=1)
    code: str = Field(pattern=r"^ORD-\d{6}$")
    kind: Literal["a", "b"]
    items: list[Line]
    even: int

    @field_validator("even")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("must be even")
        return value


HIGH = {"urgency": "high", "summary": "printer jammed", "order_id": "ORD-123456"}
GOOD_ORDER = {
    "rating": 4,
    "count": 1,
    "note": "ok",
    "tags": ["x"],
    "code": "ORD-123456",
    "kind": "a",
    "items": [{"sku": "a", "price": 1.0}],
    "even": 2,
}


def contract_errors(rule: Any, data: Any = None) -> tuple[Diagnostic, ...]:
    """Diagnostics of one contract on a schema-valid ticket (via the public validate())."""
    out = healjson.validate(json.dumps(HIGH if data is None else data), Ticket, contracts=[rule])
    assert isinstance(out, Degraded)
    return out.errors


def schema_errors(**changes: Any) -> dict[str, Diagnostic]:
    """Schema diagnostics of an order with some fields changed (None removes a field)."""
    data = {**GOOD_ORDER, **changes}
    data = {key: value for key, value in data.items() if value is not None}
    out = healjson.validate(json.dumps(data), Order)
    assert isinstance(out, Degraded)
    return {d.path: d for d in out.errors}


def diagnostic(**overrides: Any) -> Diagnostic:
    base: dict[str, Any] = {
        "path": "summary",
        "value": "way too long",
        "constraint": "must have at most 5 characters",
        "prescription": "Shorten `summary` to at most 5 characters.",
        "source": Source.SCHEMA,
    }
    base.update(overrides)
    return Diagnostic(**base)


# ---------------------------------------------------------------------------------------------
# Violation defaults
# ---------------------------------------------------------------------------------------------


@contract(fields=("urgency", "summary"))
def high_needs_outage(ticket: Ticket, ctx: ContractContext) -> Violation | None:
    """A high-urgency ticket must mention an outage."""
    if ticket.urgency == "high" and "outage" not in ticket.summary:
        return Violation("a high-urgency ticket must mention an outage in the summary")
    return None


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


# ---------------------------------------------------------------------------------------------
# Schema-error diagnostics
# ---------------------------------------------------------------------------------------------


def test_upper_bound_reads_must_be_at_most() -> None:
    """A `le=5` violation reads `must be at most 5` and prescribes the bound with the value."""
    error = schema_errors(rating=7)["rating"]

    assert "must be at most 5" == error.constraint
    assert 7 == error.value
    assert "Set `rating` to a value at most 5 (got 7)." == error.prescription
    assert Source.SCHEMA == error.source


def test_lower_bound_reads_must_be_at_least() -> None:
    """A `ge=1` violation reads `must be at least 1`."""
    assert "must be at least 1" == schema_errors(count=0)["count"].constraint


def test_missing_field_has_the_missing_value() -> None:
    """An absent field is reported with value MISSING and `is required`."""
    error = schema_errors(rating=None)["rating"]

    assert MISSING is error.value
    assert error.is_missing
    assert "is required" == error.constraint
    assert "Add the required field `rating` with a valid value." == error.prescription
    assert "rating = <missing>: is required" == error.describe()
    assert "<missing>" == error.to_dict()["value"]


def test_nested_list_item_paths_use_brackets_and_dots() -> None:
    """Errors inside list items have paths like `items[2].price`."""
    items = [{"sku": "a", "price": 1}, {"price": 2}, {"sku": "c", "price": -1}]
    errors = schema_errors(items=items)

    assert {"items[1].sku", "items[2].price"} == set(errors)
    assert MISSING is errors["items[1].sku"].value
    assert -1 == errors["items[2].price"].value
    assert errors["items[2].price"].constraint.startswith("must be greater than 0")


def test_string_length_and_list_size_diagnostics() -> None:
    """Too-long strings and too-short lists state the limit and the actual size."""
    errors = schema_errors(note="x" * 12, tags=[])

    assert "must have at most 10 characters" == errors["note"].constraint
    assert "(it has 12 characters)" in errors["note"].prescription
    assert errors["tags"].constraint.startswith("must have at least 1")
    assert "(it has 0 items)" in errors["tags"].prescription


def test_pattern_and_literal_diagnostics() -> None:
    """Pattern and literal errors name the pattern and the allowed values."""
    errors = schema_errors(code="nope", kind="c")

    assert r"must match the pattern ^ORD-\d{6}$" == errors["code"].constraint
    assert "must be one of 'a' or 'b'" == errors["kind"].constraint
    assert "nope" == errors["code"].value


def test_extra_field_and_validator_diagnostics() -> None:
    """A forbidden extra field and a custom validator error read as rules, not pydantic jargon."""
    errors = schema_errors(extra=1, even=3)

    assert "is not a field of the schema" == errors["extra"].constraint
    assert "must be even" == errors["even"].constraint
    assert "Value error" not in errors["even"].constraint


def test_type_error_reads_must_not_input_should() -> None:
    """pydantic's `Input should be ...` becomes `must be ...`."""
    error = schema_errors(rating="lots")["rating"]

    assert error.constraint.startswith("must be a valid integer")
    assert "Input should" not in error.constraint


def test_union_errors_for_one_location_are_merged() -> None:
    """Several union branch errors at one path become one diagnostic."""

    class Either(BaseModel):
        value: int | list[int]

    out = healjson.validate('{"value": "abc"}', Either)

    assert isinstance(out, Degraded)
    assert ["value"] == [e.path for e in out.errors]
    assert ", or " in out.errors[0].constraint
    assert "union" == out.errors[0].rule


# ---------------------------------------------------------------------------------------------
# RepairPrompt
# ---------------------------------------------------------------------------------------------

ORIGINAL = ({"role": "system", "content": "sys"}, {"role": "user", "content": "make a ticket"})


def test_repair_render_lists_each_diagnostic_with_value_rule_and_fix() -> None:
    """A repair prompt numbers each diagnostic with its path, value, rule and fix."""
    prompt = RepairPrompt(
        Strategy.REPAIR,
        round=1,
        raw_output='{"summary": "way too long"}',
        diagnostics=(
            diagnostic(),
            diagnostic(
                path="urgency",
                value=MISSING,
                constraint="is required",
                prescription="Add `urgency`.",
            ),
        ),
    )

    text = prompt.render()

    assert text.startswith("Your previous answer (above) failed 2 checks:")
    assert '1. `summary` = "way too long"' in text
    assert "   rule: must have at most 5 characters" in text
    assert "   fix: Shorten `summary` to at most 5 characters." in text
    assert "2. `urgency` = <missing>" in text
    assert text.endswith("if that is what makes all the rules hold.")
    assert "Reply with the complete corrected JSON value only" in text


def test_repair_render_says_check_for_one_diagnostic() -> None:
    """One diagnostic reads `failed 1 check:` (singular)."""
    text = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(),)).render()

    assert text.startswith("Your previous answer (above) failed 1 check:")


def test_repair_render_shows_the_other_fields_of_a_contract_rule() -> None:
    """A contract diagnostic lists the other fields involved with their values."""
    (error,) = contract_errors(high_needs_outage)

    text = RepairPrompt(Strategy.REPAIR, 1, json.dumps(HIGH), (error,)).render()

    assert '1. `urgency` = "high"' in text
    assert '   also involved: `summary` = "printer jammed"' in text
    assert "`urgency`, `summary`" in text


def test_repair_render_cuts_long_values() -> None:
    """A very long offending value is shortened with a visible marker."""
    text = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(value="x" * 5000),)).render()

    assert "x" * 5000 not in text
    assert "…(+" in text
    assert len(text) < 1500


def test_repair_render_adds_history_example_and_schema() -> None:
    """History lines, the golden example and the schema each get their own section."""
    prompt = RepairPrompt(
        Strategy.REPAIR,
        round=2,
        raw_output="{}",
        diagnostics=(diagnostic(),),
        history=("attempt 1 (schema): a", "attempt 2 (schema): b"),
        example='{"summary": "ok"}',
        schema='{"type":"object"}',
    )

    text = prompt.render()

    assert (
        "Earlier attempts failed like this; do not repeat them:\n"
        "- attempt 1 (schema): a\n- attempt 2 (schema): b"
    ) in text
    assert 'Example of a valid answer (shape only; use your own values): {"summary": "ok"}' in text
    assert 'JSON schema of the answer: {"type":"object"}' in text
    assert text.index("Earlier attempts") < text.index("Example of") < text.index("JSON schema")


def test_repair_render_without_extras_has_no_extra_sections() -> None:
    """Without history, example or schema, none of those sections appear."""
    text = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(),)).render()

    assert "Earlier attempts" not in text
    assert "Example of a valid answer" not in text
    assert "JSON schema" not in text


def test_syntax_render_quotes_the_parse_problem() -> None:
    """A syntax prompt says why the answer could not be read and asks for bare JSON."""
    error = diagnostic(
        path="<root>",
        constraint="must be valid JSON (no JSON object or array was found)",
        source=Source.SYNTAX,
    )

    text = RepairPrompt(Strategy.SYNTAX, 1, "sorry", (error,)).render()

    assert text.startswith(
        "Your previous answer could not be read as JSON: it must be valid JSON "
        "(no JSON object or array was found)."
    )
    assert "no prose, no code fences" in text
    assert "Reply with the complete corrected JSON value only" not in text


def test_syntax_render_without_diagnostics_has_a_generic_reason() -> None:
    """A syntax prompt with no diagnostics still says the answer was not valid JSON."""
    text = RepairPrompt(Strategy.SYNTAX, 1, "sorry").render()

    assert text.startswith("Your previous answer could not be read as JSON: it is not valid JSON.")


def test_truncation_render_states_the_size_and_asks_for_compact_json() -> None:
    """A truncation prompt says how many characters arrived and asks for a compact object."""
    raw = '{"a": 1, "b": "cut'

    text = RepairPrompt(Strategy.TRUNCATION, 1, raw).render()

    assert f"cut off after {len(raw)} characters" in text
    assert "compactly" in text
    assert "Include every field." in text
    assert "failed" not in text


@pytest.mark.parametrize("strategy", [Strategy.EMPTY_RETRY, Strategy.RESEND])
def test_clean_retry_renders_nothing_and_resends_the_original(strategy: Strategy) -> None:
    """Empty-retry and resend prompts add nothing: the request is the original messages."""
    prompt = RepairPrompt(strategy, 1, "", (diagnostic(),), history=("h",), example="{}")

    assert "" == prompt.render()
    assert list(ORIGINAL) == prompt.messages(ORIGINAL)


@pytest.mark.parametrize("strategy", [Strategy.REPAIR, Strategy.SYNTAX, Strategy.TRUNCATION])
def test_messages_append_the_raw_answer_and_the_repair_turn(strategy: Strategy) -> None:
    """messages() is the original messages, the raw answer as assistant, then the repair turn."""
    raw = '{"summary": "way too long"'
    prompt = RepairPrompt(strategy, 1, raw, (diagnostic(),))

    out = prompt.messages(ORIGINAL)

    assert [*ORIGINAL] == out[:2]
    assert {"role": "assistant", "content": raw} == out[2]
    assert {"role": "user", "content": prompt.render()} == out[3]
    assert 4 == len(out)


def test_messages_are_copies_of_the_original() -> None:
    """Changing the built messages does not change the caller's messages."""
    original = [{"role": "user", "content": "make a ticket"}]
    out = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(),)).messages(original)

    out[0]["content"] = "changed"

    assert "make a ticket" == original[0]["content"]


def test_messages_with_no_raw_output_send_an_empty_assistant_turn() -> None:
    """A missing raw output (a refusal) becomes an empty assistant turn."""
    out = RepairPrompt(Strategy.REPAIR, 1, None, (diagnostic(),)).messages(ORIGINAL)

    assert {"role": "assistant", "content": ""} == out[2]


def test_history_line_summarises_an_attempt_in_one_bounded_line() -> None:
    """history_line is one line with the attempt number, verdict and diagnostics, <= 200 chars."""
    short = history_line(2, "schema", [diagnostic()])
    long = history_line(3, "schema", [diagnostic(constraint="c" * 500)] * 3)
    empty = history_line(1, "empty", [])

    assert 'attempt 2 (schema): summary = "way too long": must have at most 5 characters' == short
    assert 200 == len(long)
    assert long.endswith("…")
    assert "\n" not in long
    assert "attempt 1 (empty): no usable answer" == empty
    assert 4 == MAX_HISTORY_LINES


class _Span(BaseModel):
    start: int
    end: int


@healjson.contract(fields=("start", "end"))
def _ordered(span: _Span) -> healjson.Violation | None:
    return None if span.start <= span.end else healjson.Violation("start must not exceed end")


@pytest.mark.parametrize(
    ("text", "also"),
    [
        ('{"start": 1}', "end"),  # a provider closed a cut tool call: a field is missing
        ('{"start": 9, "end": 3}', "start must not exceed end"),  # cut before a fix-up
    ],
)
def test_a_complete_value_failing_l2_in_a_cut_reply_is_a_truncation(text: str, also: str) -> None:
    outcome = healjson.validate(text, _Span, contracts=[_ordered], finish_reason="length")
    assert isinstance(outcome, healjson.Degraded)
    assert healjson.Reason.TOKEN_TRUNCATED == outcome.reason
    assert "truncation" == outcome.errors[0].source
    assert any(also in (e.path + e.constraint) for e in outcome.errors[1:])
    # the same reply without the cut is an ordinary L2 failure
    plain = healjson.validate(text, _Span, contracts=[_ordered])
    assert isinstance(plain, healjson.Degraded)
    assert healjson.Reason.INVALID_OUTPUT == plain.reason


def test_a_complete_valid_value_in_a_cut_reply_is_still_accepted() -> None:
    outcome = healjson.validate('{"start": 1, "end": 2}', _Span, finish_reason="length")
    assert isinstance(outcome, healjson.Healed)
    assert _Span(start=1, end=2) == outcome.value


@pytest.mark.parametrize(
    ("finish_reason", "reply", "opening"),
    [
        ("length", '{"a": 1, "b": "cu', "by the output token limit"),
        (None, '{"a": 1, "b": "cu', "before the JSON value was complete"),
        (None, "<think>first the a, then", "held only reasoning and no JSON value"),
    ],
)
def test_a_truncation_prompt_names_the_cause_the_parser_found(
    finish_reason: str | None, reply: str, opening: str
) -> None:
    """The token limit is blamed only when the provider said so (finish_reason=length)."""
    outcome = healjson.validate(reply, dict, finish_reason=finish_reason)
    assert isinstance(outcome, Degraded)
    diagnostics = outcome.attempts[0].diagnostics
    text = RepairPrompt(Strategy.TRUNCATION, 1, reply, diagnostics).render()
    assert opening in text.splitlines()[0]
    if finish_reason is None:
        assert "token limit" not in text
