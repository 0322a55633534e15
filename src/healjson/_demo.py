"""The offline demo: four scripted runs that show each healing layer at work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from ._contracts import ContractContext, Violation, contract
from ._healer import Healer
from ._outcome import Outcome
from ._reply import Reply
from .testing import ScriptedModel

__all__ = ["Scenario", "run_demo", "scenarios"]


class SupportTicket(BaseModel):
    """The seed's Case #7 schema."""

    urgency: int = Field(ge=1, le=5)
    category: Literal["logistics", "refund", "quality", "other"]
    summary: str = Field(min_length=5, max_length=160)
    orderId: str = Field(pattern=r"^ORD-\d{6}$")


@contract(fields=("urgency", "summary"))
def urgent_tickets_explain(ticket: SupportTicket, ctx: ContractContext) -> Violation | None:
    """High-urgency tickets need a summary that explains why."""
    if ticket.urgency >= 4 and len(ticket.summary) < 15:
        return Violation("a ticket with urgency >= 4 needs a summary of at least 15 characters")
    return None


PROMPT = [
    {"role": "system", "content": "Turn the customer's message into a support ticket (JSON)."},
    {
        "role": "user",
        "content": "My order ORD-123456 has shown 'awaiting shipment' since yesterday. "
        "I need it urgently or I will ask for a refund.",
    },
]
GOOD = (
    '{"urgency": 5, "category": "logistics", "summary": "Order stuck in awaiting shipment '
    'since yesterday; customer needs it urgently or wants a refund", "orderId": "ORD-123456"}'
)


@dataclass(frozen=True)
class Scenario:
    """One demo run: a title, what it shows, and the scripted replies."""

    title: str
    shows: str
    replies: tuple[Any, ...]


def scenarios() -> list[Scenario]:
    """The four demo runs."""
    return [
        Scenario(
            "L1 local heal",
            "a fenced answer with prose, a trailing comma and urgency as a string: healed "
            "locally, no second call",
            (
                'Here is the ticket:\n```json\n{"urgency": "5", "category": "logistics", '
                '"summary": "Order stuck in awaiting shipment since yesterday, customer needs '
                'it urgently", "orderId": "ORD-123456",}\n```\nLet me know if you need more.',
            ),
        ),
        Scenario(
            "L2 + L3: Case #7 cross-field repair",
            "urgency 5 with an 11-character summary breaks a cross-field contract; the repair "
            "prompt carries the full context and the model fixes it on the second call",
            (
                '{"urgency": 5, "category": "logistics", "summary": "Ship it now", '
                '"orderId": "ORD-123456"}',
                GOOD,
            ),
        ),
        Scenario(
            "Truncation",
            "the first answer hits max_tokens mid-string; the partial data is never accepted "
            "and a compact rewrite is requested",
            (
                Reply('{"urgency": 5, "category": "logistics", "summary": "Order stuck', "length"),
                GOOD,
            ),
        ),
        Scenario(
            "L4: three failures, graceful degradation",
            "every answer is invalid; after 3 calls the caller gets Degraded with the raw text, "
            "the diagnostics and the fallback, not an exception",
            (
                '{"urgency": 99, "summary": ""}',
                '{"urgency": 88, "summary": "abc"}',
                '{"urgency": 77, "summary": "xyz"}',
            ),
        ),
    ]


def run_demo() -> list[tuple[Scenario, Outcome[SupportTicket]]]:
    """Run every scenario on the scripted model and return the outcomes."""
    healer = Healer(
        SupportTicket,
        contracts=[urgent_tickets_explain],
        fallback={"urgency": 3, "category": "other", "summary": "needs manual triage"},
    )
    results = []
    for scenario in scenarios():
        model = ScriptedModel(scenario.replies)
        results.append((scenario, healer.run(model, PROMPT, max_tokens=200)))
    return results
