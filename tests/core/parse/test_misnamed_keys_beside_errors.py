"""Keys that settle no field (`misnamed_keys`: a key spelling several fields alike, a field
written under several keys) are reported beside the answer's other errors, not only once the
rest validates: one repair asks for every fix at once."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson._core.parse.shape import key_form
from pinned import pinned


class Limited(BaseModel):
    limit: int = 5
    need: int


class Shared(BaseModel):
    a_b: str = "x"
    ab: str = "y"
    need: int


def spellings(name: str) -> st.SearchStrategy[str]:
    """`name` in any case, with `_` or `-` between any of its letters (its key form kept)."""
    marks = st.lists(
        st.tuples(st.booleans(), st.sampled_from(["", "_", "-"])),
        min_size=len(name),
        max_size=len(name),
    )
    return marks.map(
        lambda chosen: "".join(
            (char.upper() if upper else char.lower()) + (mark if i < len(name) - 1 else "")
            for i, (char, (upper, mark)) in enumerate(zip(name, chosen, strict=True))
        )
    )


@pinned(max_examples=30)
@given(
    first=spellings("limit"),
    second=spellings("limit"),
    need=st.none() | st.text(max_size=3),
)
def test_a_field_under_two_keys_is_reported_beside_a_missing_or_wrong_field(
    first: str, second: str, need: str | None
) -> None:
    """`limit` written under two keys that are not its name, and `need` missing or not a
    number: both failures are in the diagnostics of the one outcome."""
    assume(len({first, second, "limit"}) == 3 and key_form(first) == key_form(second))
    data = f'{{"{first}": 7, "{second}": 8' + ("}" if need is None else f', "need": "{need}x"}}')

    outcome = healjson.validate(data, Limited)

    assert not outcome.ok
    paths = {error.path for error in outcome.errors}
    assert {"need", "limit"} <= paths
    assert any("several keys" in error.constraint for error in outcome.errors)


@pinned(max_examples=20)
@given(key=spellings("a_b"))
def test_a_key_spelling_two_fields_is_reported_beside_a_missing_field(key: str) -> None:
    """A key spelling both `a_b` and `ab`, with the required `need` missing: the ambiguous key
    and the missing field are both reported."""
    assume(key not in ("a_b", "ab"))

    outcome = healjson.validate(f'{{"{key}": "v"}}', Shared)

    assert not outcome.ok
    constraints = {error.path: error.constraint for error in outcome.errors}
    assert "need" in constraints
    assert "spells several fields alike" in constraints[key]
