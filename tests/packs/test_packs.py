"""The example contract packs (`contracts/healjson_contracts/`, shipped as `healjson_contracts`):
loading, golden examples, diagnostics, strategies, e2e."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import to_json

import healjson
import healjson_contracts
from healjson import ContractPack, Diagnostic, Healed, Source, load_contracts
from healjson.testing import ScriptedServer

PACK_DIR = Path(healjson_contracts.__file__).resolve().parent
PACK_NAMES = ("support_ticket", "invoice", "itinerary")
PACKS: dict[str, ContractPack] = {name: load_contracts(name) for name in PACK_NAMES}
RULES = [(name, rule.name) for name in PACK_NAMES for rule in PACKS[name].contracts]

TICKET = PACKS["support_ticket"]
DEFECT_AND_REFUND = TICKET.extra["contexts"]["category_matches_defect_refund"]


def errors(outcome: Any) -> tuple[Diagnostic, ...]:
    """The diagnostics of a `Degraded` outcome, `()` for `Healed`."""
    return () if outcome.ok else tuple(outcome.errors)


def reasked(pack: ContractPack) -> tuple[healjson.Contract[Any], ...]:
    """The pack's rules, each `on_fail="reask"`: every violation is reported, none settled."""
    return tuple(dataclasses.replace(rule, on_fail="reask", fix=None) for rule in pack.contracts)


def check(pack: ContractPack, data: Any, context: Any = None) -> tuple[Diagnostic, ...]:
    """Validate `data` (a dict, a model instance or JSON text) against the pack's rules; the
    diagnostics every rule gives (a fix rule's too, as if it re-asked)."""
    text = data if isinstance(data, str) else to_json(data).decode()
    return errors(healjson.validate(text, pack.model, contracts=reasked(pack), context=context))


def example(pack: ContractPack, index: int) -> Any:
    """A deep copy of a golden example, ready to be broken."""
    return json.loads(to_json(pack.examples[index]))


# ---------------------------------------------------------------------------------------------
# Loading and golden examples
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PACK_NAMES)
def test_every_pack_loads_by_name_from_any_directory(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`load_contracts("<name>")` is `healjson_contracts.<name>.pack` wherever the process runs; its
    file still loads by path (a copy to start from behaves the same)."""
    monkeypatch.chdir(tmp_path)
    pack = load_contracts(name)
    assert importlib.import_module(f"healjson_contracts.{name}").pack is pack
    assert pack is PACKS[name]
    by_path = load_contracts(PACK_DIR / f"{name}.py")
    assert name == by_path.name
    assert [rule.name for rule in pack.contracts] == [rule.name for rule in by_path.contracts]
    assert pack.examples == by_path.examples


@pytest.mark.parametrize("name", PACK_NAMES)
def test_pack_is_complete(name: str) -> None:
    """A pack has 2+ golden examples, documented rules and a strategy for "valid" and each rule."""
    pack = PACKS[name]
    assert len(pack.examples) >= 2
    assert all(rule.description for rule in pack.contracts)
    assert {"valid", *(rule.name for rule in pack.contracts)} == set(pack.strategies)
    assert pack.description
    pack.healer()  # a Healer re-checks the examples and the rules' field names


@pytest.mark.parametrize("name", PACK_NAMES)
def test_golden_examples_validate(name: str) -> None:
    """Every golden example passes the schema and every contract through `healjson.validate`."""
    pack = PACKS[name]
    for data in pack.examples:
        outcome = healjson.validate(to_json(data).decode(), pack.model, contracts=pack.contracts)
        assert isinstance(outcome, Healed), errors(outcome)


def test_golden_ticket_examples_pass_the_input_grounded_rule_too() -> None:
    """The refund example stays valid under a message that reports a defect and wants a refund."""
    assert () == check(TICKET, TICKET.examples[1], DEFECT_AND_REFUND)


# ---------------------------------------------------------------------------------------------
# Hand-made violations of every rule
# ---------------------------------------------------------------------------------------------


def _set(index: int, **changes: Any) -> Callable[[ContractPack], Any]:
    def build(pack: ContractPack) -> Any:
        data = example(pack, index)
        data.update(changes)
        return data

    return build


def _set_leg(index: int, key: str, leg: int, field: str, value: Any) -> Callable[..., Any]:
    def build(pack: ContractPack) -> Any:
        data = example(pack, index)
        data[key][leg][field] = value
        return data

    return build


def _line_total_off(pack: ContractPack) -> Any:
    data = example(pack, 1)  # lines[2] is 5 x 5.00 = 25.00 of a 72.48 total
    data["lines"][2]["line_total"] = 20.00
    data["total"] = 67.48  # still the sum of the stated line totals: only one rule breaks
    return data


VIOLATIONS: dict[str, tuple[str, Callable[[ContractPack], Any], str, tuple[str, ...], str]] = {
    # rule: (pack, build, path, fields, a phrase the prescription must contain)
    "refund_is_urgent": (
        "support_ticket",
        _set(1, urgency=3),
        "category",
        ("category", "urgency"),
        "Raise `urgency` to 4 or 5",
    ),
    "urgent_summary_explains": (
        "support_ticket",
        _set(2, urgency=5, summary="Bad zipper"),
        "urgency",
        ("urgency", "summary"),
        "at least 15 characters",
    ),
    "summary_omits_order_number": (
        "support_ticket",
        _set(2, summary="Zipper of ORD-000042 came off after a week"),
        "summary",
        ("summary",),
        'Remove "ORD-000042"',
    ),
    "logistics_is_not_urgent": (
        "support_ticket",
        _set(0, urgency=4),
        "category",
        ("category", "urgency"),
        "Lower `urgency` to 3 or less",
    ),
    "line_totals_match": (
        "invoice",
        _line_total_off,
        "lines[2].line_total",
        ("lines[2].line_total", "lines[2].quantity", "lines[2].unit_price"),
        "Set `lines[2].line_total` to 25.00 (= 5 \N{MULTIPLICATION SIGN} 5.00)",
    ),
    "total_adds_up": (
        "invoice",
        _set(0, total=1500),
        "total",
        ("total", "tax", "lines[0].line_total", "lines[1].line_total"),
        "Set `total` to 1529.75 (= line totals 1285.50 + tax 244.25)",
    ),
    "one_currency": (
        "invoice",
        _set_leg(0, "lines", 1, "currency", "USD"),
        "lines[1].currency",
        ("lines[1].currency", "currency"),
        'Set `lines[1].currency` to "EUR"',
    ),
    "due_after_issue": (
        "invoice",
        _set(0, due_date="2024-02-01"),
        "due_date",
        ("due_date", "issue_date"),
        "Set `due_date` to 2024-03-01 or later",
    ),
    "legs_arrive_after_departing": (
        "itinerary",
        _set_leg(0, "legs", 1, "arrive", "2024-05-01T13:00:00+02:00"),
        "legs[1].arrive",
        ("legs[1].arrive", "legs[1].depart"),
        "a time after 2024-05-01T13:25:00+02:00",
    ),
    "legs_connect_in_place": (
        "itinerary",
        _set_leg(1, "legs", 1, "origin", "Glasgow"),
        "legs[1].origin",
        ("legs[1].origin", "legs[0].destination"),
        'Set `legs[1].origin` to "Edinburgh"',
    ),
    "legs_connect_in_time": (
        "itinerary",
        _set_leg(0, "legs", 1, "depart", "2024-05-01T11:00:00+02:00"),
        "legs[1].depart",
        ("legs[1].depart", "legs[0].arrive"),
        "Set `legs[1].depart` to 2024-05-01T11:15:00+02:00 or later",
    ),
    "endpoints_match": (
        "itinerary",
        _set(1, end="Aberdeen"),
        "end",
        ("end", "legs[2].destination"),
        'Set `end` to "Inverness"',
    ),
}


def test_every_instance_only_rule_has_a_hand_made_violation() -> None:
    """The hand-made table covers every rule but the input-grounded one (tested on its own)."""
    expected = {rule for _, rule in RULES} - {"category_matches_defect_refund"}
    assert expected == set(VIOLATIONS)


@pytest.mark.parametrize("rule", sorted(VIOLATIONS))
def test_hand_made_violation_gives_a_precise_diagnostic(rule: str) -> None:
    """Breaking one rule yields one contract diagnostic at the exact path, naming every field."""
    name, build, path, fields, phrase = VIOLATIONS[rule]
    [diagnostic] = check(PACKS[name], build(PACKS[name]))
    assert (rule, Source.CONTRACT, path, fields) == (
        diagnostic.rule,
        diagnostic.source,
        diagnostic.path,
        diagnostic.fields,
    )
    assert diagnostic.constraint
    assert all(f"`{field}`" in diagnostic.prescription for field in fields)
    assert phrase in diagnostic.prescription
    if len(fields) > 1:
        assert "may change" in diagnostic.prescription


POLICIES = {
    "support_ticket": {"summary_omits_order_number": "fix"},
    "invoice": {"line_totals_match": "fix"},
    "itinerary": {},
}


@pytest.mark.parametrize("name", PACK_NAMES)
def test_packs_declare_their_policies(name: str) -> None:
    """The computable rules are `fix`, every other rule re-asks (contracts/README.md says why)."""
    declared = {rule.name: rule.on_fail for rule in PACKS[name].contracts}
    assert {rule: POLICIES[name].get(rule, "reask") for rule in declared} == declared


def _ticket_with_number(summary: str) -> dict[str, Any]:
    return {"urgency": 3, "category": "other", "summary": summary, "orderId": "ORD-123456"}


@pytest.mark.parametrize(
    ("summary", "fixed"),
    [
        ("Order ORD-123456 shows 'awaiting shipment'", "Order shows 'awaiting shipment'"),
        ("Customer says ORD-123456 never arrived", "Customer says the order never arrived"),
        ("Parcel for order #ORD-123456 is late", "Parcel for order is late"),
        ("ORD-123456 and ORD-654321 both late", "the order and the order both late"),
    ],
)
def test_order_number_in_summary_is_fixed_without_a_call(summary: str, fixed: str) -> None:
    """`summary_omits_order_number` strips the number locally: Healed, flagged, nothing else
    changed."""
    outcome = healjson.validate(
        json.dumps(_ticket_with_number(summary)), TICKET.model, contracts=TICKET.contracts
    )
    assert isinstance(outcome, Healed), errors(outcome)
    assert fixed == outcome.value.summary
    assert ("summary_omits_order_number",) == outcome.fixed
    assert "contract_fixed" in [str(flag) for flag in outcome.flags]


def test_misread_line_total_is_recomputed_without_a_call() -> None:
    """A line total off while the stated total is right: the fix recomputes the line (quantity x
    unit price, to cents) and the invoice then passes every rule, `total_adds_up` included."""
    pack = PACKS["invoice"]
    data = example(pack, 0)
    data["lines"][0]["line_total"] = 120.00  # 1,200.00 misread
    outcome = healjson.validate(json.dumps(data), pack.model, contracts=pack.contracts)
    assert isinstance(outcome, Healed), errors(outcome)
    assert outcome.value == pack.model.model_validate(pack.examples[0])
    assert ("line_totals_match",) == outcome.fixed


def test_line_total_fix_never_hides_a_total_that_no_longer_adds_up() -> None:
    """When the total was summed from the misread line, the fixed invoice breaks `total_adds_up`:
    the answer is not accepted (the model is asked again with the original violation)."""
    pack = PACKS["invoice"]
    data = example(pack, 0)
    data["lines"][0]["line_total"] = 120.00
    data["total"] = 449.75  # 120.00 + 85.50 + 244.25
    outcome = healjson.validate(json.dumps(data), pack.model, contracts=pack.contracts)
    assert not outcome.ok
    assert ["line_totals_match"] == [d.rule for d in outcome.errors]


def test_invoice_diagnostic_carries_the_values_found() -> None:
    """The line-total diagnostic shows the stated value and the values of the fields involved."""
    pack = PACKS["invoice"]
    [diagnostic] = check(pack, _line_total_off(pack))
    assert Decimal(20) == diagnostic.value
    values = diagnostic.extra["values"]
    assert (5, 5) == (values["lines[2].quantity"], values["lines[2].unit_price"])


def test_seed_case_7_answer_breaks_two_rules_here() -> None:
    """Urgency 5, logistics, 11-character summary: both the summary and the logistics rule fire."""
    answer = {"urgency": 5, "category": "logistics", "summary": "Ship it now"}
    found = check(TICKET, {**answer, "orderId": "ORD-123456"})
    assert ["urgent_summary_explains", "logistics_is_not_urgent"] == [d.rule for d in found]


# ---------------------------------------------------------------------------------------------
# The input-grounded rule
# ---------------------------------------------------------------------------------------------

LOGISTICS_TICKET = {
    "urgency": 2,
    "category": "logistics",
    "summary": "Blender arrived broken",
    "orderId": "ORD-654321",
}


@pytest.mark.parametrize(
    ("fires", "text"),
    [
        (True, "my blender arrived broken, I want my money back"),
        (True, "The lamp is defective. Please refund me."),
        (True, "It doesn't work at all, I'd like to return it."),
        (True, "The screen stopped working after a day; can I get a refund?"),
        (False, "my blender arrived broken, please send a replacement"),
        (False, "I changed my mind and want my money back"),
        (False, "Where is my parcel? Tracking has not moved for a week."),
        (False, ""),
    ],
)
def test_input_grounded_rule_needs_both_a_defect_and_a_refund(fires: bool, text: str) -> None:
    """The category rule fires on a logistics ticket only when the user reports both."""
    context = [{"role": "user", "content": text}]
    found = check(TICKET, LOGISTICS_TICKET, context)
    assert fires == bool(found)
    if fires:
        [diagnostic] = found
        assert ("category_matches_defect_refund", "category") == (
            diagnostic.rule,
            diagnostic.path,
        )
        assert "logistics" == diagnostic.value
        assert "`category`" in diagnostic.prescription


@pytest.mark.parametrize("category", ["refund", "quality"])
def test_input_grounded_rule_accepts_refund_and_quality(category: str) -> None:
    """Under a defect-and-refund message, refund and quality tickets pass every rule."""
    ticket = {**LOGISTICS_TICKET, "category": category, "urgency": 4}
    ticket["summary"] = "Blender arrived broken; customer wants the money back"
    assert () == check(TICKET, ticket, DEFECT_AND_REFUND)


def test_input_grounded_rule_reads_only_user_turns() -> None:
    """A system prompt that mentions defects and refunds does not trigger the rule."""
    context = [
        {"role": "system", "content": "Broken items and refund requests are common."},
        {"role": "user", "content": "Where is my parcel?"},
    ]
    assert () == check(TICKET, LOGISTICS_TICKET, context)


# ---------------------------------------------------------------------------------------------
# Strategies (hypothesis)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PACK_NAMES)
def test_pack_strategies_are_built_once(name: str) -> None:
    """Each strategy function gives the strategy it built the first time: a test that calls it
    inside `data.draw` does not build (and hypothesis does not validate) a new one per example."""
    for factory in PACKS[name].strategies.values():
        assert factory() is factory()


@pytest.mark.parametrize("name", PACK_NAMES)
@settings(max_examples=15)
@given(data=st.data())
def test_valid_strategy_instances_pass_every_contract(name: str, data: st.DataObject) -> None:
    """Instances from the "valid" strategy round-trip through JSON and pass every rule."""
    pack = PACKS[name]
    instance = data.draw(pack.strategies["valid"](), label="instance")
    assert isinstance(instance, pack.model)
    outcome = healjson.validate(instance.model_dump_json(), pack.model, contracts=pack.contracts)
    assert isinstance(outcome, Healed), errors(outcome)
    assert instance == outcome.value


@pytest.mark.parametrize(("name", "rule"), RULES)
@settings(max_examples=15)
@given(data=st.data())
def test_violating_strategy_breaks_exactly_its_contract(
    name: str, rule: str, data: st.DataObject
) -> None:
    """Instances from a rule's strategy pass the schema and break that rule and no other."""
    pack = PACKS[name]
    context = pack.extra.get("contexts", {}).get(rule)
    instance = data.draw(pack.strategies[rule](), label="instance")
    found = check(pack, instance.model_dump_json(), context)
    assert {rule} == {d.rule for d in found}
    assert {Source.CONTRACT} == {d.source for d in found}


# ---------------------------------------------------------------------------------------------
# The engine never imports the packs
# ---------------------------------------------------------------------------------------------

_IMPORT_PROBE = """
import json, sys
def from_packs(pack_dir):
    return sorted(
        name for name, module in list(sys.modules.items())
        if name == "healjson_contracts"
        or name.startswith(("healjson_contracts.", "healjson_pack_"))
        or str(getattr(module, "__file__", None) or "").startswith(pack_dir)
    )
import healjson, healjson.testing, healjson.adapters
before = from_packs(sys.argv[1])
healjson.load_contracts("support_ticket")
print(json.dumps([before, from_packs(sys.argv[1])]))
"""


def test_importing_healjson_imports_none_of_the_packs(tmp_path: Path) -> None:
    """`import healjson` loads nothing from `healjson_contracts`; loading a pack by name does."""
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE, str(PACK_DIR)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = json.loads(result.stdout)
    assert [] == before
    assert ["healjson_contracts", "healjson_contracts.support_ticket"] == after


# ---------------------------------------------------------------------------------------------
# End to end: the real openai SDK against the scripted HTTP server
# ---------------------------------------------------------------------------------------------


def heal_ticket(server: ScriptedServer, messages: list[dict[str, str]]) -> Any:
    """One healing `create` for a support ticket through a wrapped `openai.OpenAI`."""
    with openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as sdk:
        client = healjson.wrap(sdk)
        return client.chat.completions.create(
            model="m", messages=messages, response_model=TICKET.model, contracts=TICKET.contracts
        )


CASE_7_MESSAGES = [
    {"role": "system", "content": "Turn the customer's message into a support ticket (JSON)."},
    {
        "role": "user",
        "content": "The kettle from order ORD-123456 trips the breaker every time I switch it "
        "on. I have no other way to boil water, please help quickly.",
    },
]
CASE_7_FIRST = (
    '{"urgency": 5, "category": "quality", "summary": "Bad kettle", "orderId": "ORD-123456"}'
)
CASE_7_SECOND = (
    '{"urgency": 5, "category": "quality", "summary": "Kettle trips the breaker on every use; '
    'customer has no other way to boil water", "orderId": "ORD-123456"}'
)


def test_case_7_heals_on_the_second_call_with_full_context(
    scripted_server: ScriptedServer,
) -> None:
    """Urgency 5 with a 10-character summary is repaired with messages, answer and diagnostics."""
    scripted_server.extend([CASE_7_FIRST, CASE_7_SECOND])
    outcome = heal_ticket(scripted_server, CASE_7_MESSAGES)
    assert isinstance(outcome, Healed), errors(outcome)
    assert 2 == outcome.calls == len(scripted_server.requests)
    assert json.loads(CASE_7_SECOND)["summary"] == outcome.value.summary
    [first] = outcome.attempts[0].diagnostics
    assert ("urgent_summary_explains", ("urgency", "summary")) == (first.rule, first.fields)

    repair = scripted_server.requests[1].body["messages"]
    assert CASE_7_MESSAGES == repair[: len(CASE_7_MESSAGES)]
    assert {"role": "assistant", "content": CASE_7_FIRST} == repair[len(CASE_7_MESSAGES)]
    assert "user" == repair[-1]["role"]
    assert len(CASE_7_MESSAGES) + 2 == len(repair)
    instruction = repair[-1]["content"]
    assert "`urgency`" in instruction
    assert "`summary`" in instruction
    assert "at least 15 characters" in instruction


MASKING_MESSAGES = [
    {
        "role": "system",
        "content": "Turn the customer's message into a support ticket (JSON). "
        "The customer's open order is ORD-654321.",
    },
    {"role": "user", "content": "my blender arrived broken, I want my money back"},
]
MASKED = (
    '{"urgency": 2, "category": "logistics", "summary": "Blender arrived broken", '
    '"orderId": "ORD-654321"}'
)
UNMASKED = (
    '{"urgency": 4, "category": "refund", "summary": "Blender arrived broken; customer wants '
    'their money back", "orderId": "ORD-654321"}'
)


def test_semantic_masking_is_caught_against_the_input_and_healed(
    scripted_server: ScriptedServer,
) -> None:
    """A low-urgency logistics answer to a broken-and-refund message is repaired to refund."""
    scripted_server.extend([MASKED, UNMASKED])
    outcome = heal_ticket(scripted_server, MASKING_MESSAGES)
    assert isinstance(outcome, Healed), errors(outcome)
    assert 2 == outcome.calls
    assert "refund" == outcome.value.category
    assert ["category_matches_defect_refund"] == [d.rule for d in outcome.attempts[0].diagnostics]
    assert "category" in outcome.changed_fields
    instruction = scripted_server.requests[1].body["messages"][-1]["content"]
    assert "`category`" in instruction
    assert '"refund"' in instruction


# ---------------------------------------------------------------------------------------------
# healjson.testing.check_pack
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PACK_NAMES)
def test_packs_pass_check_pack(name: str) -> None:
    """`healjson.testing.check_pack` finds no problem in the pack."""
    from healjson.testing import check_pack

    report = check_pack(PACKS[name], max_examples=10)  # the strategies are tested above
    assert name == report.pack
    assert {rule.name for rule in PACKS[name].contracts} == set(report.violating)
