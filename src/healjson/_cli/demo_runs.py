"""The demo's four runs on one support ticket: scripted replies offline, provoked ones live."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from healjson._core.judge.contracts import ContractContext, Violation, contract
from healjson._core.outcome.outcome import Outcome
from healjson._core.run.healer import Healer
from healjson._core.run.policy import HealPolicy
from healjson._core.wire.reply import Reply
from healjson.testing import ScriptedModel

__all__ = [
    "GOOD",
    "PROMPT",
    "DemoScenario",
    "LiveSetup",
    "SupportTicket",
    "demo_scenarios",
    "run_demo",
    "run_live_demo",
    "urgent_tickets_explain",
]


class SupportTicket(BaseModel):
    """A support ticket extracted from a customer's message."""

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


@contract(fields=("summary",))
def summary_fits_a_pager(ticket: SupportTicket, ctx: ContractContext) -> Violation | None:
    """An impossible rule for the live degradation demo: the schema wants >= 5 characters."""
    if len(ticket.summary) > 4:
        return Violation("the summary must fit a 4-character pager display")
    return None


FALLBACK = {
    "urgency": 3,
    "category": "other",
    "summary": "needs manual triage",
    "orderId": "ORD-000000",
}
"""What the demo's degraded run falls back to: a ticket that passes the schema and contracts."""


@dataclass(frozen=True)
class LiveSetup:
    """How the live demo provokes a scenario from a real model.

    `instruction` is appended to the system prompt; `params` go to `create` (e.g. `max_tokens`);
    `contracts` are added to the demo's own; `policy` and `json_mode` override the defaults.
    """

    instruction: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    contracts: tuple[Any, ...] = ()
    policy: HealPolicy | None = None
    json_mode: str | None = None

    def messages(self) -> list[dict[str, Any]]:
        """The demo prompt with this scenario's instruction added to the system turn."""
        system, *rest = (dict(message) for message in PROMPT)
        if self.instruction:
            system["content"] = f"{system['content']} {self.instruction}"
        return [system, *rest]


@dataclass(frozen=True)
class DemoScenario:
    """One demo run: a title, what it shows, the scripted replies and the live setup."""

    title: str
    shows: str
    replies: tuple[Any, ...]
    live: LiveSetup = field(default_factory=LiveSetup)


def demo_scenarios() -> list[DemoScenario]:
    """The four demo runs."""
    return [
        DemoScenario(
            "L1 local heal",
            "a fenced answer with prose, a trailing comma and urgency as a string: healed "
            "locally, no second call",
            (
                'Here is the ticket:\n```json\n{"urgency": "5", "category": "logistics", '
                '"summary": "Order stuck in awaiting shipment since yesterday, customer needs '
                'it urgently", "orderId": "ORD-123456",}\n```\nLet me know if you need more.',
            ),
            LiveSetup(
                "Start with one short sentence, then give the ticket in a ```json code block.",
                json_mode="prompt",
            ),
        ),
        DemoScenario(
            "L2 + L3: cross-field repair",
            "urgency 5 with an 11-character summary breaks a cross-field contract; the repair "
            "prompt carries the full context and the model fixes it on the second call",
            (
                '{"urgency": 5, "category": "logistics", "summary": "Ship it now", '
                '"orderId": "ORD-123456"}',
                GOOD,
            ),
            LiveSetup("Keep the summary very short: two or three words."),
        ),
        DemoScenario(
            "Truncation",
            "the first answer hits max_tokens mid-string; the partial data is never accepted "
            "and a compact rewrite is requested",
            (
                Reply('{"urgency": 5, "category": "logistics", "summary": "Order stuck', "length"),
                GOOD,
            ),
            LiveSetup(
                "Pretty-print the JSON with an indent of 8 spaces and write a detailed summary "
                "of about 150 characters.",
                params={"max_tokens": 40},
                policy=HealPolicy(on_truncation="both"),
            ),
        ),
        DemoScenario(
            "L4: three failures, graceful degradation",
            "every answer is invalid; after 3 calls the caller gets Degraded with the raw text, "
            "the diagnostics and the fallback, not an exception",
            (
                '{"urgency": 99, "summary": ""}',
                '{"urgency": 88, "summary": "abc"}',
                '{"urgency": 77, "summary": "xyz"}',
            ),
            LiveSetup(
                "The summary must fit a 4-character pager display.",
                contracts=(summary_fits_a_pager,),
            ),
        ),
    ]


def run_demo() -> list[tuple[DemoScenario, Outcome[SupportTicket]]]:
    """Run every scenario on the scripted model and return the outcomes."""
    healer = Healer(
        SupportTicket,
        contracts=[urgent_tickets_explain],
        fallback=FALLBACK,
    )
    results = []
    for scenario in demo_scenarios():
        model = ScriptedModel(scenario.replies)
        results.append((scenario, healer.run(model, PROMPT, max_tokens=200)))
    return results


def run_live_demo(client: Any, model: str) -> list[tuple[DemoScenario, Outcome[SupportTicket]]]:
    """Run every scenario's live setup through a `healjson.wrap`-ped sync OpenAI client.

    A real model answers differently from the script, so the layers a run shows may differ; the
    last scenario's contract cannot hold together with the schema, so it always degrades.
    """
    results = []
    for scenario in demo_scenarios():
        live = scenario.live
        outcome = client.chat.completions.create(
            model=model,
            messages=live.messages(),
            response_model=SupportTicket,
            contracts=[urgent_tickets_explain, *live.contracts],
            fallback=FALLBACK,
            policy=live.policy,
            json_mode=live.json_mode,
            **live.params,
        )
        results.append((scenario, outcome))
    return results
