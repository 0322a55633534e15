"""Support tickets: a ticket schema extracted from customer messages, and its cross-field rules.

A customer writes in; the model turns the message into a ticket. Besides the schema (urgency 1-5,
a known category, a 5-160 character summary, an `ORD-nnnnnn` order id) the ticket must be
internally consistent, and one rule checks it against the customer's own words: a message that
reports a defect and asks for a refund is a refund or quality ticket, whatever the model would
rather lower instead ("semantic masking": making the rules pass by changing the wrong field).

Load it from anywhere with `healjson.load_contracts("support_ticket")` (an installed pack's name: an
entry point of the `healjson.contracts` group; the module is `healjson_contracts.support_ticket`).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from healjson import ContractContext, ContractPack, Violation, contract

__all__ = [
    "DEFECT_AND_REFUND_CONTEXT",
    "SupportTicket",
    "category_matches_defect_refund",
    "logistics_is_not_urgent",
    "pack",
    "refund_is_urgent",
    "summary_omits_order_number",
    "urgent_summary_explains",
]

CATEGORIES = ("logistics", "refund", "quality", "other")
URGENT = 4  # urgency from which a ticket counts as urgent
URGENT_SUMMARY_MIN = 15
ORDER_NUMBER = re.compile(r"ORD-\d{6}")

# Keyword heuristics over the customer's text (English); they only need to catch the clear cases.
_DEFECT = re.compile(
    r"\b(?:broken|broke|defective|damaged|faulty|cracked|shattered|malfunction\w*"
    r"|dead\s+on\s+arrival"
    r"|(?:doesn|don|didn|won|isn)['\u2019]?t\s+work\w*"
    r"|(?:does|do|did|will|is)\s+not\s+work\w*"
    r"|(?:not|stopped|no\s+longer)\s+working"
    r"|won['\u2019]?t\s+(?:turn|switch|power)\s+on)\b",
    re.IGNORECASE,
)
_REFUND = re.compile(
    r"\b(?:refunds?|refunded|money\s+back|reimburse\w*|charge\s?back"
    r"|return(?:ed|ing)?\s+(?:it|this|that|them|the|my)"
    r"|(?:a|for)\s+return|send\s+(?:it|this|them)\s+back)\b",
    re.IGNORECASE,
)


class SupportTicket(BaseModel):
    """One support ticket extracted from a customer's message."""

    urgency: int = Field(ge=1, le=5, description="1 = can wait, 5 = act now")
    category: Literal["logistics", "refund", "quality", "other"]
    summary: str = Field(min_length=5, max_length=160)
    orderId: str = Field(pattern=r"^ORD-\d{6}$")  # the wire name the ticket system uses


def _q(text: str) -> str:
    """A name as JSON writes it: `"Paris"`."""
    return json.dumps(text, ensure_ascii=False)


@contract(fields=("category", "urgency"))
def refund_is_urgent(ticket: SupportTicket) -> Violation | None:
    """A refund ticket has urgency 4 or 5: money is at stake."""
    if ticket.category == "refund" and ticket.urgency < URGENT:
        return Violation(
            f'a ticket with category "refund" needs urgency >= {URGENT} '
            f"(found urgency {ticket.urgency})",
            prescription=(
                f"Raise `urgency` to {URGENT} or 5, or — if the customer does not want their "
                "money back — choose another `category`; either field may change."
            ),
        )
    return None


@contract(fields=("urgency", "summary"))
def urgent_summary_explains(ticket: SupportTicket) -> Violation | None:
    """An urgent ticket (urgency >= 4) has a summary of at least 15 characters saying why."""
    if ticket.urgency >= URGENT and len(ticket.summary) < URGENT_SUMMARY_MIN:
        return Violation(
            f"a ticket with urgency >= {URGENT} needs a summary of at least "
            f"{URGENT_SUMMARY_MIN} characters that explains why it is urgent "
            f"(found urgency {ticket.urgency} and a {len(ticket.summary)}-character summary)",
            prescription=(
                f"Rewrite `summary` to at least {URGENT_SUMMARY_MIN} characters stating what "
                f"happened and why it is urgent, or lower `urgency` below {URGENT} if the "
                "message is not urgent; either field may change."
            ),
        )
    return None


_ORDER_MENTION = re.compile(r"(\b(?i:order)\s+)?(?:#\s*)?ORD-\d{6}")
_SPACES = re.compile(r"[ \t]{2,}")


def _mention(found: re.Match[str]) -> str:
    word = found.group(1)
    return word.rstrip() if word else "the order"


def _pointer(found: re.Match[str]) -> str:
    return f"{_mention(found)} (see orderId)"


def _without_number(summary: str, mention: Any) -> str:
    while ORDER_NUMBER.search(summary):  # each pass removes every number: none comes back
        summary = _ORDER_MENTION.sub(mention, summary)
    return _SPACES.sub(" ", summary).strip()


def _strip_order_number(ticket: SupportTicket) -> SupportTicket:
    """`summary_omits_order_number`'s fix: "order ORD-123456" becomes "order" and a bare
    "ORD-123456" becomes "the order" (the number stays in `orderId`). It never breaks
    `urgent_summary_explains`, which the summary the model wrote passed: an urgent ticket's
    summary that this would cut under 15 characters points to the number instead, "Order
    ORD-123456 is lost" becoming "Order (see orderId) is lost" (a summary already too short
    stays too short, and the model is asked for one that explains)."""
    summary = _without_number(ticket.summary, _mention)
    urgent = ticket.urgency >= URGENT and len(ticket.summary) >= URGENT_SUMMARY_MIN
    if urgent and len(summary) < URGENT_SUMMARY_MIN:
        summary = _without_number(ticket.summary, _pointer)
    return ticket.model_copy(update={"summary": summary})


@contract(fields=("summary",), on_fail="fix", fix=_strip_order_number)
def summary_omits_order_number(ticket: SupportTicket) -> Violation | None:
    """The summary describes the problem; the order number belongs in `orderId` alone."""
    found = ORDER_NUMBER.search(ticket.summary)
    if found is None:
        return None
    return Violation(
        f"summary must not repeat an order number (found {_q(found.group())}); the order "
        "number belongs in orderId only",
        prescription=(
            f"Remove {_q(found.group())} from `summary` and use the words to describe the "
            "problem instead (keep `orderId` as it is); an urgent ticket's summary still needs "
            f"{URGENT_SUMMARY_MIN} characters or more."
        ),
    )


@contract(fields=("category", "urgency"))
def logistics_is_not_urgent(ticket: SupportTicket) -> Violation | None:
    """A pure logistics ticket (delivery, tracking) has urgency 3 at most."""
    if ticket.category == "logistics" and ticket.urgency >= URGENT:
        return Violation(
            f'a ticket with category "logistics" has urgency <= {URGENT - 1} '
            f"(found urgency {ticket.urgency}); an urgent delivery problem that puts money at "
            'stake is a "refund" ticket',
            prescription=(
                f"Lower `urgency` to {URGENT - 1} or less, or change `category` to the one that "
                'really fits (for example "refund" when the customer wants their money back); '
                "either field may change."
            ),
        )
    return None


@contract(fields=("category",))
def category_matches_defect_refund(ticket: SupportTicket, ctx: ContractContext) -> Violation | None:
    """When the customer reports a defect and asks for a refund, the category is refund or
    quality (checked against the customer's own message)."""
    text = ctx.input_text
    defect = _DEFECT.search(text)
    refund = _REFUND.search(text)
    if defect is None or refund is None or ticket.category in ("refund", "quality"):
        return None
    return Violation(
        f"the customer reports a defect ({_q(defect.group())}) and asks for a refund "
        f'({_q(refund.group())}), so category must be "refund" or "quality" '
        f"(found {_q(ticket.category)})",
        prescription=(
            'Set `category` to "refund" (or "quality" if the defect is the main point). Do '
            "not lower `urgency` or shorten `summary` to get around other rules: a refund "
            f"ticket needs urgency >= {URGENT} and a summary of at least {URGENT_SUMMARY_MIN} "
            "characters."
        ),
    )


CONTRACTS = (
    refund_is_urgent,
    urgent_summary_explains,
    summary_omits_order_number,
    logistics_is_not_urgent,
    category_matches_defect_refund,
)

EXAMPLES = (
    {
        "urgency": 3,
        "category": "logistics",
        "summary": "Order shows 'awaiting shipment' since yesterday; customer needs it soon",
        "orderId": "ORD-123456",
    },
    {
        "urgency": 5,
        "category": "refund",
        "summary": "Blender arrived broken; customer wants their money back",
        "orderId": "ORD-654321",
    },
    {
        "urgency": 2,
        "category": "quality",
        "summary": "Jacket zipper came off after a week",
        "orderId": "ORD-000042",
    },
)

DEFECT_AND_REFUND_CONTEXT = ContractContext(
    messages=(
        {"role": "system", "content": "Turn the customer's message into a support ticket."},
        {"role": "user", "content": "My blender arrived broken, I want my money back."},
    )
)
"""A request under which `category_matches_defect_refund` applies (used by its strategy)."""


# ---------------------------------------------------------------------------------------------
# hypothesis strategies (hypothesis is imported inside, so loading the pack never needs it); each
# is built once (`functools.cache`): hypothesis validates a strategy the first time it is drawn
# from, and a test that calls a factory inside `data.draw` would pay for that on every example
# ---------------------------------------------------------------------------------------------


@functools.cache
def _summaries(st: Any, min_size: int, max_size: int = 160) -> Any:
    alphabet = st.characters(categories=("L", "N", "P", "Zs"))
    text = st.text(alphabet, min_size=min_size, max_size=max_size)
    return text.filter(lambda s: not ORDER_NUMBER.search(s))


@functools.cache
def _order_ids(st: Any) -> Any:
    return st.integers(0, 999_999).map(lambda n: f"ORD-{n:06d}")


def _ticket(draw: Any, st: Any, category: str, urgency: int, summary: str | None = None) -> Any:
    if summary is None:
        minimum = URGENT_SUMMARY_MIN if urgency >= URGENT else 5
        summary = draw(_summaries(st, minimum, 160))
    return SupportTicket(
        urgency=urgency, category=category, summary=summary, orderId=draw(_order_ids(st))
    )


def _urgencies(category: str) -> range:
    if category == "refund":
        return range(URGENT, 6)
    if category == "logistics":
        return range(1, URGENT)
    return range(1, 6)


@functools.cache
def _valid() -> Any:
    """Tickets that pass the schema and every rule (for a message that does not report both a
    defect and a refund wish: under such a message only refund and quality tickets are valid)."""
    from hypothesis import strategies as st

    @st.composite
    def tickets(draw: Any) -> Any:
        # refund and quality satisfy the input-grounded rule whatever the customer wrote;
        # logistics and other are valid too as long as the message does not force a category
        category = draw(st.sampled_from(CATEGORIES))
        return _ticket(draw, st, category, draw(st.sampled_from(_urgencies(category))))

    return tickets()


@functools.cache
def _breaks_refund_is_urgent() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def tickets(draw: Any) -> Any:
        return _ticket(draw, st, "refund", draw(st.integers(1, URGENT - 1)))

    return tickets()


@functools.cache
def _breaks_urgent_summary_explains() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def tickets(draw: Any) -> Any:
        category = draw(st.sampled_from(("refund", "quality", "other")))
        summary = draw(_summaries(st, 5, URGENT_SUMMARY_MIN - 1))
        return _ticket(draw, st, category, draw(st.integers(URGENT, 5)), summary)

    return tickets()


@functools.cache
def _breaks_summary_omits_order_number() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def tickets(draw: Any) -> Any:
        category = draw(st.sampled_from(CATEGORIES))
        urgency = draw(st.sampled_from(_urgencies(category)))
        order_id = draw(_order_ids(st))
        before = draw(_summaries(st, 3, 70))
        after = draw(_summaries(st, 0, 70))
        summary = f"{before} {order_id} {after}"  # >= 15 characters, <= 152
        return SupportTicket(urgency=urgency, category=category, summary=summary, orderId=order_id)

    return tickets()


@functools.cache
def _breaks_logistics_is_not_urgent() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def tickets(draw: Any) -> Any:
        return _ticket(draw, st, "logistics", draw(st.integers(URGENT, 5)))

    return tickets()


@functools.cache
def _breaks_category_matches_defect_refund() -> Any:
    """Logistics or other tickets; they break the rule under `DEFECT_AND_REFUND_CONTEXT`."""
    from hypothesis import strategies as st

    @st.composite
    def tickets(draw: Any) -> Any:
        category = draw(st.sampled_from(("logistics", "other")))
        return _ticket(draw, st, category, draw(st.sampled_from(_urgencies(category))))

    return tickets()


pack = ContractPack(
    model=SupportTicket,
    contracts=CONTRACTS,
    examples=EXAMPLES,
    name="support_ticket",
    description="Support tickets from customer messages, with cross-field "
    "rules and one rule checked against the customer's own words.",
    strategies={
        "valid": _valid,
        "refund_is_urgent": _breaks_refund_is_urgent,
        "urgent_summary_explains": _breaks_urgent_summary_explains,
        "summary_omits_order_number": _breaks_summary_omits_order_number,
        "logistics_is_not_urgent": _breaks_logistics_is_not_urgent,
        "category_matches_defect_refund": _breaks_category_matches_defect_refund,
    },
    # A rule that reads the request cannot be broken by a value alone: this is the request under
    # which each such rule's strategy breaks it (every other rule ignores the request).
    extra={"contexts": {"category_matches_defect_refund": DEFECT_AND_REFUND_CONTEXT}},
)
