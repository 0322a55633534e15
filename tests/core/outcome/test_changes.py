"""`changed_fields` means the fields whose value differs from what the model's first answer said.

A coercion of the same value (`"5"` read as `5`) is no change; a field the first answer left out
and a repair supplied is one; an extra key only the first answer held is not listed (a field
the healed value left at its default: `test_changes_defaults.py`).
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Healed, Healer, Violation, contract
from healjson._core.outcome.changes import changed_paths, same_value
from healjson.testing import ScriptedModel

FATES = ("same", "coerced", "changed", "absent")

LEAVES = st.one_of(
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.integers(-(10**6), 10**6).map(str),
    st.text(min_size=1, max_size=8),
)


def _first(after: Any, fate: str) -> Any:
    """What the first answer said for a leaf of the healed value, by its fate."""
    if fate == "same":
        return after
    if fate == "coerced":
        if isinstance(after, bool):
            return "true" if after else "false"
        if isinstance(after, int | float):
            return str(after)
        try:  # a number written as a string was a number in the first answer
            number = int(after)
        except ValueError:
            return after
        return number if str(number) == after else after
    if isinstance(after, bool):
        return not after
    if isinstance(after, int | float):
        return after + 1
    return after + "!"


@settings(max_examples=150, derandomize=True, deadline=None)
@given(
    fields=st.dictionaries(
        st.text("abcdefgh", min_size=1, max_size=3),
        st.tuples(LEAVES, st.sampled_from(FATES)),
        max_size=8,
    ),
    extra=st.booleans(),
)
@example(fields={"a": (5, "coerced")}, extra=False)
@example(fields={"a": ("5", "coerced"), "b": (True, "coerced")}, extra=True)
@example(fields={"a": (1.0, "coerced"), "b": (0, "changed")}, extra=False)
def test_changed_paths_are_exactly_the_changed_and_the_supplied_fields(
    fields: dict[str, tuple[Any, str]], extra: bool
) -> None:
    """For any healed object and a first answer where each field is the same, coerced, changed
    or absent (plus a key the target does not keep), exactly the changed and absent ones are
    listed."""
    after = {name: value for name, (value, _) in fields.items()}
    before = {name: _first(value, fate) for name, (value, fate) in fields.items()}
    before = {name: before[name] for name, (_, fate) in fields.items() if fate != "absent"}
    if extra:
        before["zz_extra"] = "not a field"
    wanted = {name for name, (_, fate) in fields.items() if fate in ("changed", "absent")}

    assert wanted == set(changed_paths(before, after))


def test_a_number_and_its_string_are_the_same_value_but_a_different_one_is_not() -> None:
    """`"5"` and `5`, `"true"` and `true`, `5` and `5.0` are one value; `"6"` and `5`, `1` and
    `"x"`, `null` and `0` are not."""
    assert [True, True, True, True] == [
        same_value("5", 5),
        same_value("true", True),
        same_value(5, 5.0),
        same_value(5, "5"),
    ]
    assert [False, False, False, False] == [
        same_value("6", 5),
        same_value(1, "x"),
        same_value(None, 0),
        same_value({"a": 1}, "x"),
    ]


class Order(BaseModel):
    quantity: int
    express: bool
    note: str
    gift: bool = False


@contract(fields=("note",))
def note_is_polite(order: Order) -> Violation | None:
    """The note must say please."""
    return None if "please" in order.note else Violation("the note must say please")


def test_a_repair_that_only_coerced_a_field_does_not_list_it() -> None:
    """A first answer with `"5"` and `"true"` repaired to `5` and `true` (and a new note and
    a `gift` it had left out) lists only `note` and `gift`."""
    first = '{"quantity": "5", "express": "true", "note": "send it", "colour": "red"}'
    fixed = '{"quantity": 5, "express": true, "note": "send it please", "gift": true}'
    model = ScriptedModel([first, fixed])

    outcome = Healer(Order, contracts=[note_is_polite]).run(model, "Order 5, express.")

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert ("note", "gift") == outcome.changed_fields
