"""Invoices: arithmetic and consistency rules a model gets wrong while every field looks fine.

Each line's total is its quantity times its unit price, the line totals plus tax make the total,
one currency is used throughout, and the invoice is not due before it was issued. Amounts are
`Decimal` (a JSON number or a numeric string both validate); sums are compared within 0.01.
Violations name exact paths (`lines[2].line_total`) and give the number that would be right.

Load it from anywhere with `healjson.load_contracts("invoice")` (an installed pack's name: an
entry point of the `healjson.contracts` group; the module is `healjson_contracts.invoice`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Annotated, Any

from pydantic import BaseModel, Field, WithJsonSchema

from healjson import ContractPack, Violation, contract

__all__ = [
    "TOLERANCE",
    "Invoice",
    "InvoiceLine",
    "due_after_issue",
    "line_totals_match",
    "one_currency",
    "pack",
    "total_adds_up",
]

TOLERANCE = Decimal("0.01")
"""How far a stated amount may be from the computed one (rounding to cents)."""

CENT = Decimal("0.01")
TIMES = "\N{MULTIPLICATION SIGN}"
MAX_AMOUNT = Decimal("1000000000000")  # keeps every product and sum exact in `_MONEY`
_MONEY = Context(prec=60, rounding=ROUND_HALF_UP)
CurrencyCode = Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217, e.g. EUR")]
# The model is asked for amounts as JSON numbers (pydantic's own schema for Decimal also allows
# any string); numeric strings such as "25.00" are still accepted when validating.
Amount = Annotated[
    Decimal,
    Field(ge=0, le=MAX_AMOUNT),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": int(MAX_AMOUNT)}),
]
Quantity = Annotated[
    Decimal,
    Field(gt=0, le=MAX_AMOUNT),
    WithJsonSchema({"type": "number", "exclusiveMinimum": 0, "maximum": int(MAX_AMOUNT)}),
]


class InvoiceLine(BaseModel):
    """One billed item."""

    description: str = Field(min_length=1)
    quantity: Quantity
    unit_price: Amount
    line_total: Amount
    currency: CurrencyCode


class Invoice(BaseModel):
    """An invoice read from a document or an email."""

    number: str = Field(min_length=1)
    currency: CurrencyCode
    issue_date: date
    due_date: date
    lines: list[InvoiceLine] = Field(min_length=1)
    tax: Amount
    total: Amount


def _amount(value: Decimal) -> str:
    """`5.00` for whole cents, the exact digits otherwise (`0.125`)."""
    if value == value.quantize(CENT, context=_MONEY):
        return f"{value.quantize(CENT, context=_MONEY):f}"
    return f"{value.normalize(_MONEY):f}"


def _quantity(value: Decimal) -> str:
    return f"{value.normalize(_MONEY):f}"


def _expected_line_total(line: InvoiceLine) -> Decimal:
    return _MONEY.multiply(line.quantity, line.unit_price).quantize(CENT, context=_MONEY)


def _off(stated: Decimal, expected: Decimal) -> bool:
    return abs(_MONEY.subtract(stated, expected)) > TOLERANCE


def _q(text: str) -> str:
    """A name as JSON writes it: `"Paris"`."""
    return json.dumps(text, ensure_ascii=False)


def _recompute_line_totals(invoice: Invoice) -> Invoice:
    """`line_totals_match`'s fix: every line total that is off becomes quantity x unit price,
    rounded to cents; `total` is left as stated (when it was read right it now adds up; when it
    does not, `total_adds_up` asks the model again)."""
    lines = [
        line.model_copy(update={"line_total": _expected_line_total(line)})
        if _off(line.line_total, _expected_line_total(line))
        else line
        for line in invoice.lines
    ]
    return invoice.model_copy(update={"lines": lines})


@contract(fields=("lines",), on_fail="fix", fix=_recompute_line_totals)
def line_totals_match(invoice: Invoice) -> Iterator[Violation]:
    """Every line's line_total equals its quantity times its unit_price (within 0.01)."""
    for index, line in enumerate(invoice.lines):
        expected = _expected_line_total(line)
        if not _off(line.line_total, expected):
            continue
        at = f"lines[{index}]"
        product = f"{_quantity(line.quantity)} {TIMES} {_amount(line.unit_price)}"
        yield Violation(
            f"{at}.line_total must equal {at}.quantity {TIMES} {at}.unit_price = {product} = "
            f"{_amount(expected)} (within {TOLERANCE}); found {_amount(line.line_total)}",
            fields=(f"{at}.line_total", f"{at}.quantity", f"{at}.unit_price"),
            prescription=(
                f"Set `{at}.line_total` to {_amount(expected)} (= {product}), or change "
                f"`{at}.quantity` / `{at}.unit_price` if those were misread; any of them may "
                "change (then check `total` again)."
            ),
        )


@contract(fields=("lines", "tax", "total"))
def total_adds_up(invoice: Invoice) -> Violation | None:
    """The line totals plus tax equal the invoice total (within 0.01)."""
    subtotal = sum((line.line_total for line in invoice.lines), Decimal(0))
    expected = _MONEY.add(subtotal, invoice.tax)
    if not _off(invoice.total, expected):
        return None
    line_fields = tuple(f"lines[{index}].line_total" for index in range(len(invoice.lines)))
    named_lines = ", ".join(f"`{name}`" for name in line_fields)
    return Violation(
        f"total must equal the sum of the line totals plus tax = {_amount(subtotal)} + "
        f"{_amount(invoice.tax)} = {_amount(expected)} (within {TOLERANCE}); found "
        f"{_amount(invoice.total)}",
        fields=("total", "tax", *line_fields),
        path="total",
        prescription=(
            f"Set `total` to {_amount(expected)} (= line totals {_amount(subtotal)} + tax "
            f"{_amount(invoice.tax)}), or correct `tax` or a line total ({named_lines}) if that "
            "was misread; any of them may change."
        ),
    )


@contract(fields=("currency", "lines"))
def one_currency(invoice: Invoice) -> Iterator[Violation]:
    """Every line uses the invoice's currency."""
    for index, line in enumerate(invoice.lines):
        if line.currency == invoice.currency:
            continue
        at = f"lines[{index}].currency"
        yield Violation(
            f"one currency throughout: {at} is {_q(line.currency)} but the invoice currency is "
            f"{_q(invoice.currency)}",
            fields=(at, "currency"),
            prescription=(
                f"Set `{at}` to {_q(invoice.currency)}, or — if the invoice is really in "
                f"{_q(line.currency)} — set `currency` (and every line's currency) to "
                f"{_q(line.currency)}; either field may change."
            ),
        )


@contract(fields=("issue_date", "due_date"))
def due_after_issue(invoice: Invoice) -> Violation | None:
    """The due date is on or after the issue date."""
    if invoice.issue_date <= invoice.due_date:
        return None
    return Violation(
        f"due_date ({invoice.due_date.isoformat()}) must be on or after issue_date "
        f"({invoice.issue_date.isoformat()})",
        path="due_date",
        fields=("due_date", "issue_date"),
        prescription=(
            f"Set `due_date` to {invoice.issue_date.isoformat()} or later, or correct "
            "`issue_date` if that was misread (day and month swapped?); either field may change."
        ),
    )


CONTRACTS = (line_totals_match, total_adds_up, one_currency, due_after_issue)

EXAMPLES = (
    {
        "number": "INV-2024-0042",
        "currency": "EUR",
        "issue_date": "2024-03-01",
        "due_date": "2024-03-31",
        "lines": [
            {
                "description": "Consulting, hours",
                "quantity": 10,
                "unit_price": 120.00,
                "line_total": 1200.00,
                "currency": "EUR",
            },
            {
                "description": "Travel",
                "quantity": 1,
                "unit_price": 85.50,
                "line_total": 85.50,
                "currency": "EUR",
            },
        ],
        "tax": 244.25,
        "total": 1529.75,
    },
    {
        "number": "A-7781",
        "currency": "USD",
        "issue_date": "2024-06-15",
        "due_date": "2024-06-15",
        "lines": [
            {
                "description": "Gadget",
                "quantity": 2,
                "unit_price": 19.99,
                "line_total": 39.98,
                "currency": "USD",
            },
            {
                "description": "Shipping",
                "quantity": 1,
                "unit_price": 7.50,
                "line_total": 7.50,
                "currency": "USD",
            },
            {
                "description": "Widget",
                "quantity": 5,
                "unit_price": 5.00,
                "line_total": 25.00,
                "currency": "USD",
            },
        ],
        "tax": 0,
        "total": 72.48,
    },
)


# ---------------------------------------------------------------------------------------------
# hypothesis strategies (hypothesis is imported inside, so loading the pack never needs it); each
# is built once (`functools.cache`): hypothesis validates a strategy the first time it is drawn
# from, and a test that calls a factory inside `data.draw` would pay for that on every example
# ---------------------------------------------------------------------------------------------

CURRENCIES = ("EUR", "USD", "GBP", "JPY", "CHF")


@functools.cache
def _money(st: Any, low: str = "0", high: str = "10000") -> Any:
    return st.decimals(min_value=Decimal(low), max_value=Decimal(high), places=2)


@functools.cache
def _quantities(st: Any) -> Any:
    return st.integers(1, 50).map(Decimal) | _money(st, "0.01", "1000")


def _draw_invoice(draw: Any, st: Any, min_lines: int = 1) -> Invoice:
    """A valid invoice, built forwards: quantities and prices first, then the totals."""
    currency = draw(st.sampled_from(CURRENCIES))
    issue = draw(st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31)))
    due = issue + timedelta(days=draw(st.integers(0, 120)))
    lines = []
    for number in range(draw(st.integers(min_lines, 6))):
        quantity = draw(_quantities(st))
        unit_price = draw(_money(st))
        line = InvoiceLine(
            description=f"item {number + 1}",
            quantity=quantity,
            unit_price=unit_price,
            line_total=Decimal(0),
            currency=currency,
        )
        lines.append(line.model_copy(update={"line_total": _expected_line_total(line)}))
    tax = draw(_money(st, "0", "5000"))
    total = sum((line.line_total for line in lines), tax)
    return Invoice(
        number=f"INV-{draw(st.integers(1, 99_999)):05d}",
        currency=currency,
        issue_date=issue,
        due_date=due,
        lines=lines,
        tax=tax,
        total=total,
    )


def _shifted(draw: Any, st: Any, amount: Decimal) -> Decimal:
    """`amount` moved by more than the tolerance, staying >= 0."""
    offset: Decimal = draw(_money(st, "0.02", "500"))
    return amount - offset if amount >= offset and draw(st.booleans()) else amount + offset


def _with_line(invoice: Invoice, index: int, **update: Any) -> Invoice:
    lines = list(invoice.lines)
    lines[index] = lines[index].model_copy(update=update)
    return invoice.model_copy(update={"lines": lines})


@functools.cache
def _valid() -> Any:
    """Invoices that pass the schema and every rule."""
    from hypothesis import strategies as st

    @st.composite
    def invoices(draw: Any) -> Invoice:
        return _draw_invoice(draw, st)

    return invoices()


@functools.cache
def _breaks_line_totals_match() -> Any:
    """Two lines' totals swapped (each line read with the other's): the total, read from the
    document, adds up the stated line totals and the right ones alike, so the fix gives an
    invoice that passes every rule (the case it is for: a total summed from one misread line
    breaks `total_adds_up` once the line is fixed, and the model is asked again by design)."""
    from hypothesis import strategies as st

    @st.composite
    def invoices(draw: Any) -> Invoice:
        invoice = _draw_invoice(draw, st, min_lines=2)
        count = len(invoice.lines)
        first, second = draw(st.permutations(range(count)))[:2]
        lines = list(invoice.lines)
        price = lines[first].line_total + draw(_money(st, "1", "500"))  # the totals differ
        lines[second] = lines[second].model_copy(
            update={"quantity": Decimal(1), "unit_price": price, "line_total": price}
        )
        total = sum((line.line_total for line in lines), invoice.tax)
        a, b = lines[first].line_total, lines[second].line_total
        lines[first] = lines[first].model_copy(update={"line_total": b})
        lines[second] = lines[second].model_copy(update={"line_total": a})
        return invoice.model_copy(update={"lines": lines, "total": total})

    return invoices()


@functools.cache
def _breaks_total_adds_up() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def invoices(draw: Any) -> Invoice:
        invoice = _draw_invoice(draw, st)
        return invoice.model_copy(update={"total": _shifted(draw, st, invoice.total)})

    return invoices()


@functools.cache
def _breaks_one_currency() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def invoices(draw: Any) -> Invoice:
        invoice = _draw_invoice(draw, st)
        index = draw(st.integers(0, len(invoice.lines) - 1))
        other = draw(st.sampled_from([c for c in CURRENCIES if c != invoice.currency]))
        return _with_line(invoice, index, currency=other)

    return invoices()


@functools.cache
def _breaks_due_after_issue() -> Any:
    from hypothesis import strategies as st

    @st.composite
    def invoices(draw: Any) -> Invoice:
        invoice = _draw_invoice(draw, st)
        due = invoice.issue_date - timedelta(days=draw(st.integers(1, 365)))
        return invoice.model_copy(update={"due_date": due})

    return invoices()


pack = ContractPack(
    model=Invoice,
    contracts=CONTRACTS,
    examples=EXAMPLES,
    name="invoice",
    description="Invoices whose line totals, total, currency and dates must agree.",
    strategies={
        "valid": _valid,
        "line_totals_match": _breaks_line_totals_match,
        "total_adds_up": _breaks_total_adds_up,
        "one_currency": _breaks_one_currency,
        "due_after_issue": _breaks_due_after_issue,
    },
)
