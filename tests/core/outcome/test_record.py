"""The outcome as kept: the Markdown trace of each round and the JSON record that round-trips."""

from __future__ import annotations

import json
from typing import Any

import pytest

import healjson
from contract_cases import UrgentTicket as Ticket
from contract_cases import urgent_needs_detail
from healjson import Healer, Reply, outcome_from_dict
from healjson.testing import ScriptedModel

GOOD = '{"urgency": 5, "summary": "Parcel lost for a week, customer is furious"}'
SHORT = '{"urgency": 5, "summary": "Lost it"}'


def _run(replies: list[Any], **params: Any) -> healjson.Outcome[Ticket]:
    healer = Healer(Ticket, contracts=[urgent_needs_detail])
    return healer.run(ScriptedModel(replies), "triage this", **params)


def test_markdown_trace_shows_each_round() -> None:
    """The Markdown trace lists rounds out of budget, flags, diagnostics, prompt and raw output."""
    outcome = _run(["Here:\n" + SHORT, GOOD])
    text = outcome.trace()
    assert "**Healed** in 2 rounds of 3 allowed (1 repair)" in text
    assert "#### Round 1 (initial)" in text
    assert "prose_around" in text
    assert "urgency >= 4 needs a summary" in text
    assert "Repair prompt sent" in text
    assert '"Lost it"' in text
    assert "#### Outcome" in text
    assert text.index("#### Outcome") < text.index("#### Totals")


@pytest.mark.parametrize(
    "replies",
    [
        [GOOD],
        [SHORT, GOOD],
        ['{"urgency": 99, "summary": ""}'] * 3,
        [Reply(None, "stop", refusal="I can't help with that")],
        [TimeoutError("slow")],
    ],
)
def test_json_record_round_trips(replies: list[Any]) -> None:
    """`to_dict` → JSON → `outcome_from_dict` gives back an equal record (and value with model)."""
    outcome = _run(replies)
    data = json.loads(outcome.trace("json"))
    rebuilt = outcome_from_dict(data, model=Ticket)
    assert outcome.to_dict() == rebuilt.to_dict()
    assert type(outcome) is type(rebuilt)
    if outcome.ok:
        assert outcome.value == rebuilt.value


def test_malformed_record_raises_value_error() -> None:
    """A record that is not an outcome is rejected with ValueError."""
    with pytest.raises(ValueError, match="not a healjson outcome record"):
        outcome_from_dict({"ok": False, "reason": "not-a-reason"})
    with pytest.raises(ValueError, match="trace format"):
        _run([GOOD]).trace("yaml")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "record",
    [{"ok": True, "attempts": "x"}, {"ok": True, "attempts": [{"number": "one"}]}, {}, {"ok": 1}],
)
def test_any_malformed_record_raises_value_error(record: dict[str, Any]) -> None:
    """Whatever is wrong with a record, `outcome_from_dict` raises ValueError, nothing else."""
    with pytest.raises(ValueError, match="not a healjson outcome record"):
        outcome_from_dict(record)
