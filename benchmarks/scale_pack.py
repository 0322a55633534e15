"""The contract pack of `bench_scale.py` (`healjson batch --contracts benchmarks/scale_pack.py`).

A support ticket and one business rule, as in the command-line tests' fixture
(`tests/fixtures/cli/ticket_pack.py`), copied here so the benchmark does not depend on the test
tree. `CheckedTicket` is the same model with the rule as a pydantic `model_validator`: what a
library without contracts (instructor's `BatchProcessor`) is given, so both sides check the same
rules.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from healjson import ContractPack, Violation, contract

__all__ = ["CheckedTicket", "Ticket", "pack", "urgent_summary_explains"]


class Ticket(BaseModel):
    """A support ticket."""

    urgency: int = Field(ge=1, le=5)
    category: Literal["logistics", "refund", "quality", "other"]
    summary: str = Field(min_length=5, max_length=160)
    orderId: str = Field(pattern=r"^ORD-\d{6}$")


RULE = "a ticket with urgency >= 4 needs a summary of at least 15 characters"


@contract(fields=("urgency", "summary"))
def urgent_summary_explains(ticket: Ticket) -> Violation | None:
    """An urgent ticket needs a summary that explains why."""
    if ticket.urgency >= 4 and len(ticket.summary) < 15:
        return Violation(RULE)
    return None


class CheckedTicket(Ticket):
    """`Ticket` with `urgent_summary_explains` as a pydantic validator."""

    @model_validator(mode="after")
    def _urgent_summary_explains(self) -> CheckedTicket:
        if self.urgency >= 4 and len(self.summary) < 15:
            raise ValueError(RULE)
        return self


pack = ContractPack(Ticket, contracts=[urgent_summary_explains], name="scale-tickets")
