"""`Violation`: what a contract returns when its rule is broken (checked where it is built)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from healjson._core.diagnostic import safe_repr, short_repr, type_name

__all__ = ["UNSET", "Violation", "malformation"]

UNSET: Any = object()
"""A `Violation`'s `value` when the contract gave none (the value at its path is shown)."""
_UNSET = UNSET


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken rule: what must hold (`constraint`), and optionally where and how to fix it.

    `fields` defaults to the contract's declared fields, `path` to the first of them, `value` to
    the value found there, and `prescription` to an instruction that names every field involved.

    The constructor raises TypeError for wrong attribute types (`constraint`, `path` and
    `prescription` must be strings, `fields` a sequence of strings): a misuse fails where it is
    written, and inside a contract that becomes a `contract_error` naming it. The engine checks
    again what a contract returns, since a Violation can be altered past these checks (a
    subclass, `object.__setattr__`); a malformed one becomes a `contract_error` too.
    """

    constraint: str
    fields: tuple[str, ...] = ()
    path: str | None = None
    value: Any = _UNSET
    prescription: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.fields, str):
            raise TypeError(
                f"Violation.fields must be a sequence of names, e.g. ({self.fields!r},)"
            )
        try:
            fields = tuple(self.fields)
        except TypeError:
            raise TypeError(
                f"Violation.fields must be a sequence of names, got {type_name(self.fields)}"
            ) from None
        object.__setattr__(self, "fields", fields)
        problem = malformation(self)
        if problem is not None:
            raise TypeError(problem)

    def __repr__(self) -> str:
        # every attribute through the safe renderer: asyncio and pytest repr results, and a
        # value may be unprintable, cyclic or (a shared structure) exponentially long to print
        value = "<unset>" if self.value is _UNSET else short_repr(self.value, 200)
        return (
            f"Violation(constraint={safe_repr(self.constraint, 200)}, "
            f"fields={safe_repr(self.fields, 200)}, path={safe_repr(self.path, 200)}, "
            f"value={value}, prescription={safe_repr(self.prescription, 200)})"
        )


def malformation(violation: Violation) -> str | None:
    """What is wrong with a Violation's attribute types (None when nothing is)."""
    constraint, fields = violation.constraint, violation.fields
    if not isinstance(constraint, str):
        return f"Violation.constraint must be a string, got {type_name(constraint)}"
    if isinstance(fields, str) or not isinstance(fields, tuple | list):
        return f"Violation.fields must be a sequence of names, got {type_name(fields)}"
    for name in fields:
        if not isinstance(name, str):
            return f"Violation.fields must hold names (strings), got {short_repr(name, 40)}"
    for attribute in ("path", "prescription"):
        value = getattr(violation, attribute)
        if value is not None and not isinstance(value, str):
            return f"Violation.{attribute} must be a string or None, got {type_name(value)}"
    return None
