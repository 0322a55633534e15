"""Models, data and helpers shared by the contract, schema-error and repair-prompt tests."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

import healjson
from healjson import ContractContext, Degraded, Diagnostic, Source, Violation, contract

# ---------------------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------------------


class Ticket(BaseModel):
    urgency: Literal["low", "high"]
    summary: str = Field(max_length=80)
    order_id: str = Field(pattern=r"^ORD-\d{6}$")


class UrgentTicket(BaseModel):
    """The trace and event tests' ticket: urgent ones must explain themselves."""

    urgency: int = Field(ge=1, le=5)
    summary: str = Field(min_length=5)


@contract(fields=("urgency", "summary"))
def urgent_needs_detail(ticket: UrgentTicket) -> Violation | None:
    """Urgent tickets explain themselves."""
    if ticket.urgency >= 4 and len(ticket.summary) < 15:
        return Violation("urgency >= 4 needs a summary of at least 15 characters")
    return None


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


@contract(fields=("urgency", "summary"))
def high_needs_outage(ticket: Ticket, ctx: ContractContext) -> Violation | None:
    """A high-urgency ticket must mention an outage."""
    if ticket.urgency == "high" and "outage" not in ticket.summary:
        return Violation("a high-urgency ticket must mention an outage in the summary")
    return None
