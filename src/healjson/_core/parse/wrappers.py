"""Which one-key objects stand for the plain value they wrap (the alignment's `unwrapped`).

The whole answer stands for its value under any key: a JSON object mode makes a model wrap a
plain answer in an object, under a key of its choosing. Inside the answer, a one-key object
stands for its value only under an envelope word (`value`, `result`, ...) or the name of the
field it is the value of (an item of a list has none); any other key there says something of
the value (a unit, a bound, a negation, a former value: `{"fahrenheit": 70}`, `{"min": 5}`,
`{"not": "cats"}`), which the value alone would drop, so such an object is not read as it.
"""

from __future__ import annotations

from typing import Any, Final

from .shape import key_form

__all__ = ["names_the_value"]

_ENVELOPE_KEYS: Final = frozenset(
    {"value", "values", "result", "results", "answer", "data", "output", "response", "content"}
)
"""Keys (as `key_form`s) that say nothing of the plain value a one-key object wraps."""


def names_the_value(key: Any, field: str | None) -> bool:
    """Whether a one-key object's `key` says no more of the plain value it wraps than "the
    value"; `field`: the name of the field the object is the value of ("" for a list's item,
    None for the whole answer)."""
    if field is None:
        return True
    if not isinstance(key, str):
        return False
    form = key_form(key)
    return form in _ENVELOPE_KEYS or (bool(field) and form == key_form(field))
