"""A scalar reply that is a literal as Python or JavaScript spell it reads as that literal.

`None` for an `Optional[int]` is null, as `{"a": None}` is inside an object, and carries the
same flag (`syntax_repaired`); the text as written still comes first (`None` for a `str` is
the word).
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Flag, Healed


class Discount(BaseModel):
    discount: int | None


@pytest.mark.parametrize("text", ["None", "none", "NULL", "nil", "undefined", "`None`", "None."])
def test_a_python_null_reads_as_null_for_an_optional_scalar(text: str) -> None:
    """A null literal in any spelling reads as None for an optional scalar, flagged as the same
    literal is inside an object."""
    in_object = healjson.parse(f'{{"discount": {text.strip("`.")}}}', Discount)
    result = healjson.parse(text, int | None)
    assert result.valid
    assert result.instance is None
    assert set(in_object.flags) == set(result.flags) == {Flag.SYNTAX_REPAIRED}
    outcome = healjson.validate(text, int | None)
    assert isinstance(outcome, Healed)
    assert outcome.value is None


FITS: list[tuple[str, Any, Any]] = [
    ("None", type(None), None),
    ("NULL", float | None, None),
    ("None", Literal["a", "b"] | None, None),
    ("None", str | None, "None"),  # the text as written fits first: the word
]


def test_a_literal_reply_fits_as_the_object_path_reads_it() -> None:
    """The literal is read as the tolerant reader reads it in an object, then fitted, once the
    text as written does not fit; when neither fits there is no value (never a made-up 0)."""
    for text, target, expected in FITS:
        outcome = healjson.validate(text, target)
        assert isinstance(outcome, Healed), (text, target)
        assert expected == outcome.value
    assert isinstance(healjson.validate("None", int), Degraded)
