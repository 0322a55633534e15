"""The calls benchmark's scenario set: every malformation class on each of the three contract packs.

Run from the repository root to regenerate `benchmarks/scenarios/packs.jsonl`:

    .venv/bin/python benchmarks/pack_scenarios.py

For each pack in `healjson_contracts` the known-good value is the pack's first golden example; this
file adds, by hand, a realistic prompt (system + user) that the good value answers, and a
`violation`: a value that passes the schema but breaks exactly one of the pack's contracts (so
every pack has the `contract_violation` class). `healjson._cli.scenarios.malformations` derives the
rest and checks that every reply is what its class claims. A class that does not apply to the
good value is left out (no `true`/`false`/`null` for `python_literals` to spell, no number for
`quoted_number` to quote).

Each row names its pack by its installed name (`"contracts": "support_ticket"`), which
`healjson eval` loads from any directory, so the file also runs as
`healjson eval benchmarks/scenarios/packs.jsonl`. `tests/benchmarks/test_pack_scenarios.py`
regenerates the file in memory and fails when the committed copy is stale.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import healjson
from healjson._cli.scenarios import EvalScenario, malformations

__all__ = [
    "OUTPUT",
    "PACKS",
    "PackCase",
    "build",
    "pack_scenarios",
    "policy_scenarios",
    "render_file",
]

HERE = Path(__file__).resolve().parent
SCENARIO_DIR = HERE / "scenarios"
OUTPUT = SCENARIO_DIR / "packs.jsonl"


@dataclass(frozen=True)
class PackCase:
    """One pack's hand-written inputs to `malformations`."""

    name: str
    spec: str  # the pack's installed name (`healjson.load_contracts`), as written in the rows
    messages: tuple[Mapping[str, str], ...]
    violation: Mapping[str, Any]
    breaks: str  # the one contract `violation` breaks (checked by `build`)


def _changed(pack: healjson.ContractPack, **changes: Any) -> dict[str, Any]:
    """The pack's first golden example with top-level fields replaced."""
    return {**copy.deepcopy(pack.examples[0]), **changes}


def _load(spec: str) -> healjson.ContractPack:
    return healjson.load_contracts(spec)


# -- support_ticket -------------------------------------------------------------------------------
# Good value: urgency 3, logistics, "Order shows 'awaiting shipment' since yesterday; customer
# needs it soon", ORD-123456. The customer reports no defect and wants no refund, so the
# input-grounded rule (`category_matches_defect_refund`) lets a logistics ticket stand.

_TICKET_SPEC = "support_ticket"
_TICKET_MESSAGES = (
    {
        "role": "system",
        "content": (
            "You turn customer e-mails into support tickets for the triage queue. Answer with "
            "one JSON object: urgency (1 = can wait, 5 = act now), category (logistics, refund, "
            "quality or other), a one-line summary without the order number, and orderId."
        ),
    },
    {
        "role": "user",
        "content": (
            "Hi, my order ORD-123456 has said 'awaiting shipment' since yesterday and nothing has "
            "moved. I need it fairly soon, it's a present for next week. Can you check what is "
            "holding it up? Thanks, Priya"
        ),
    },
)


def _ticket_violation(pack: healjson.ContractPack) -> dict[str, Any]:
    # the model reads "need it soon" as urgent: a logistics ticket may not exceed urgency 3
    return _changed(pack, urgency=4)


# -- invoice --------------------------------------------------------------------------------------
# Good value: INV-2024-0042, EUR, issued 2024-03-01, due 2024-03-31; 10 h consulting at 120.00 and
# travel 85.50; VAT 244.25; total 1529.75.

_INVOICE_SPEC = "invoice"
_INVOICE_MESSAGES = (
    {
        "role": "system",
        "content": (
            "You read invoices from e-mailed documents and return them as JSON: number, "
            "currency (ISO 4217), issue_date and due_date (YYYY-MM-DD), lines (description, "
            "quantity, unit_price, line_total, currency), tax and total, amounts as numbers."
        ),
    },
    {
        "role": "user",
        "content": (
            "Please extract this invoice.\n\n"
            "Northwind Consulting GmbH -- INVOICE INV-2024-0042\n"
            "Date of issue: 1 March 2024. Payment due: 31 March 2024. All amounts in EUR.\n"
            "1. Consulting, hours: 10 x 120.00 = 1,200.00\n"
            "2. Travel: 1 x 85.50 = 85.50\n"
            "Net 1,285.50; VAT 19% 244.25; TOTAL DUE 1,529.75"
        ),
    },
)


def _invoice_violation(pack: healjson.ContractPack) -> dict[str, Any]:
    # the model copies the net amount into `total` and forgets the VAT
    return _changed(pack, total=1285.50)


# -- itinerary ------------------------------------------------------------------------------------
# Good value: Lisbon -> Paris by air (07:10 +01:00 -> 10:45 +02:00), Paris -> Amsterdam by train
# (13:25 -> 16:43 +02:00), all on 2024-05-01.

_ITINERARY_SPEC = "itinerary"
_ITINERARY_MESSAGES = (
    {
        "role": "system",
        "content": (
            "You turn travel plans into itineraries: start, end and the legs in order, each with "
            "origin, destination, depart and arrive as ISO 8601 times with the local UTC offset, "
            "and mode (flight, train, bus, car or ferry)."
        ),
    },
    {
        "role": "user",
        "content": (
            "On 1 May 2024 I fly from Lisbon at 07:10 (Lisbon time, UTC+1) and land in Paris at "
            "10:45 local time (UTC+2). From Paris I take the 13:25 train to Amsterdam, arriving "
            "at 16:43. Please write up the itinerary."
        ),
    },
)


def _itinerary_violation(pack: healjson.ContractPack) -> dict[str, Any]:
    # the model puts the train 10 minutes after landing (a misread time): too short to connect
    legs = copy.deepcopy(pack.examples[0]["legs"])
    legs[1]["depart"] = "2024-05-01T10:55:00+02:00"
    return _changed(pack, legs=legs)


_CASES = (
    (
        "support_ticket",
        _TICKET_SPEC,
        _TICKET_MESSAGES,
        _ticket_violation,
        "logistics_is_not_urgent",
    ),
    ("invoice", _INVOICE_SPEC, _INVOICE_MESSAGES, _invoice_violation, "total_adds_up"),
    (
        "itinerary",
        _ITINERARY_SPEC,
        _ITINERARY_MESSAGES,
        _itinerary_violation,
        "legs_connect_in_time",
    ),
)
PACKS = tuple(name for name, *_ in _CASES)


def _broken_rules(pack: healjson.ContractPack, value: Any, messages: Any) -> list[str]:
    """The names of the pack's contracts that `value` breaks (under the request `messages`),
    whatever each rule's `on_fail` would make of it."""
    rules = tuple(dataclasses.replace(rule, on_fail="reask", fix=None) for rule in pack.contracts)
    outcome = healjson.validate(
        json.dumps(value), pack.model, contracts=rules, context=list(messages)
    )
    if outcome.ok:
        return []
    return sorted({d.rule for d in outcome.errors if d.rule})


def build() -> list[tuple[PackCase, healjson.ContractPack, list[EvalScenario]]]:
    """Each pack's case, the loaded pack and its scenarios (ValueError on a bad hand-made case)."""
    out = []
    for name, spec, messages, make_violation, breaks in _CASES:
        pack = _load(spec)
        violation = make_violation(pack)
        broken = _broken_rules(pack, violation, messages)
        if broken != [breaks]:
            raise ValueError(f"{name}: the violation breaks {broken}, expected only [{breaks!r}]")
        case = PackCase(name, spec, messages, violation, breaks)
        scenarios = malformations(
            pack.examples[0],
            pack.model,
            violation=violation,
            contracts=pack.contracts,
            prefix=f"{name}/",
            messages=messages,
            pack=spec,
        )
        out.append((case, pack, scenarios))
    return out


def pack_scenarios() -> list[tuple[str, healjson.ContractPack, list[EvalScenario]]]:
    """(pack name, pack, scenarios) for each of the three packs, in a fixed order."""
    return [(case.name, pack, scenarios) for case, pack, scenarios in build()]


# -- rule policies --------------------------------------------------------------------------------
# Scenarios for the rules a pack declares `on_fail="fix"`: the first reply is schema-valid but
# breaks such a rule (and possibly rules that follow from it), the second is the good value. With
# the pack's policies the fix settles the first reply when the fixed value passes every rule;
# with every rule re-asked it takes a second call. The last invoice case is one where the fix is
# not enough (the total was computed from the misread line), so both re-ask: a fix never hides a
# disagreement another rule still sees.


def _ticket_order_number(pack: healjson.ContractPack) -> dict[str, Any]:
    # the model copies the order number into the summary ("Order ORD-123456 shows ...")
    good = pack.examples[0]
    return _changed(pack, summary=good["summary"].replace("Order ", "Order ORD-123456 ", 1))


def _invoice_line(pack: healjson.ContractPack, line_total: float, total: float) -> dict[str, Any]:
    lines = copy.deepcopy(pack.examples[0]["lines"])
    lines[0]["line_total"] = line_total
    return _changed(pack, lines=lines, total=total)


def _invoice_line_misread(pack: healjson.ContractPack) -> dict[str, Any]:
    # 1,200.00 read as 120.00; the total was read from the document (so it no longer adds up)
    return _invoice_line(pack, 120.00, 1529.75)


def _invoice_line_and_total(pack: healjson.ContractPack) -> dict[str, Any]:
    # 1,200.00 read as 120.00 and the total summed from that misread line: fixing the line
    # leaves a total that does not add up, so the model is asked again
    return _invoice_line(pack, 120.00, 449.75)


_POLICY_CASES = (
    (
        "support_ticket",
        "order_number_in_summary",
        _ticket_order_number,
        ["summary_omits_order_number"],
        True,
    ),
    (
        "invoice",
        "line_total_misread",
        _invoice_line_misread,
        ["line_totals_match", "total_adds_up"],
        True,
    ),
    (
        "invoice",
        "line_total_and_total_misread",
        _invoice_line_and_total,
        ["line_totals_match"],
        False,
    ),
)


def policy_scenarios() -> list[tuple[str, healjson.ContractPack, EvalScenario]]:
    """(pack name, pack, scenario) for each rule-policy case: a schema-valid first reply that
    breaks a fix rule, then the good value. `locally_fixable` says the rule's fix alone turns the
    first reply into the expected value (checked by the calls benchmark). ValueError on a bad
    hand-made case."""
    cases = {name: (spec, messages) for name, spec, messages, _, _ in _CASES}
    out = []
    for name, kind, make, breaks, fixable in _POLICY_CASES:
        spec, messages = cases[name]
        pack = _load(spec)
        first = make(pack)
        broken = _broken_rules(pack, first, messages)
        if broken != sorted(breaks):
            raise ValueError(f"{name}/{kind}: the reply breaks {broken}, expected {breaks}")
        scenario = EvalScenario(
            id=f"{name}/{kind}",
            messages=tuple(messages),
            replies=(json.dumps(first), json.dumps(pack.examples[0])),
            expected=copy.deepcopy(pack.examples[0]),
            has_expected=True,
            kind=kind,
            locally_fixable=fixable,
            contracts=spec,
        )
        out.append((name, pack, scenario))
    return out


def render_file(
    built: list[tuple[str, healjson.ContractPack, list[EvalScenario]]] | None = None,
) -> str:
    """The text of `packs.jsonl`: one `EvalScenario.to_dict()` per line."""
    built = pack_scenarios() if built is None else built
    lines = [
        json.dumps(scenario.to_dict(), ensure_ascii=False)
        for _, _, scenarios in built
        for scenario in scenarios
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    built = pack_scenarios()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(render_file(built), encoding="utf-8")
    for name, _, scenarios in built:
        kinds = ", ".join(scenario.kind for scenario in scenarios)
        print(f"{name}: {len(scenarios)} rows ({kinds})")
    total = sum(len(scenarios) for _, _, scenarios in built)
    print(f"{total} rows written to {OUTPUT.relative_to(HERE.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
