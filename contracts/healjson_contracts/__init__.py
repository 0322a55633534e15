"""Example contract packs that ship with healjson: copy one to start your own.

Each module defines `pack = healjson.ContractPack(...)`: a pydantic model, its business rules
(`@contract` functions), golden examples and hypothesis strategies for testing. Load one by its
bare name from any directory, `healjson.load_contracts("support_ticket")` (or
`healjson heal --contracts support_ticket` on the command line), or import its module. They
register by name the way any other package's packs do: as entry points of the
`healjson.contracts` group (healjson's `pyproject.toml`), which `healjson packs` lists.

- `support_ticket` (`healjson_contracts.support_ticket`): `SupportTicket`, a ticket extracted
  from a customer message; cross-field rules (refunds are urgent, an urgent ticket explains
  itself, logistics is not urgent, no order number in the summary) and one rule that reads the
  customer's own words (a defect plus a refund request is a refund or quality ticket).
- `invoice` (`healjson_contracts.invoice`): `Invoice` with `Decimal` amounts; line totals, the
  total, one currency, the due date after the issue date, with exact paths
  (`lines[2].line_total`).
- `itinerary` (`healjson_contracts.itinerary`): `Itinerary`, a list of legs with UTC offsets;
  legs arrive after departing and connect in place and in time, the trip's endpoints match its
  legs.

Their source lives outside the engine, in the repository's `contracts/` folder (whose
`README.md` explains how to write and load packs); the wheel ships them as the top-level package
`healjson_contracts`, beside `healjson`. The engine never imports these modules, and they import
only healjson's public names (`tests/promises/test_package_layout.py` checks both): they are
examples, found by name only when asked for.
"""
