"""The one shape every failure takes: a diagnostic triple (value, constraint, prescription).

Syntax errors, schema errors, contract violations and truncation all become a `Diagnostic`, so
the repair prompt, the trace and the caller read one format.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "MISSING",
    "ROOT",
    "Diagnostic",
    "Source",
    "describe_exception",
    "format_path",
    "short_repr",
]

ROOT: Final = "<root>"


class _Missing(enum.Enum):
    """Marker for "the field was not there" (distinct from an explicit null)."""

    MISSING = "<missing>"

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing.MISSING


class Source(enum.StrEnum):
    """Which check produced a diagnostic."""

    SYNTAX = "syntax"
    EMPTY = "empty"
    TRUNCATION = "truncation"
    SCHEMA = "schema"
    CONTRACT = "contract"
    CONTRACT_ERROR = "contract_error"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    API = "api"
    BUDGET = "budget"
    FALLBACK = "fallback"


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One failed check, phrased so that a model (or a person) can act on it.

    `path` locates the value (`summary`, `items[2].price`, or `<root>`); `value` is what was
    received (`MISSING` when absent); `constraint` states the rule in words; `prescription` says
    how to fix it and, for a cross-field rule, names every field involved (`fields`).
    """

    path: str
    value: Any
    constraint: str
    prescription: str
    source: Source
    fields: tuple[str, ...] = ()
    rule: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def is_missing(self) -> bool:
        """True when the value was absent rather than wrong."""
        return self.value is MISSING

    def describe(self, *, max_value_chars: int = 200) -> str:
        """One line: `path = value: constraint`."""
        shown = "<missing>" if self.is_missing else short_repr(self.value, max_value_chars)
        return f"{self.path} = {shown}: {self.constraint}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the missing marker becomes the string `<missing>`)."""
        data: dict[str, Any] = {
            "path": self.path,
            "value": "<missing>" if self.is_missing else _jsonable(self.value),
            "constraint": self.constraint,
            "prescription": self.prescription,
            "source": str(self.source),
        }
        if self.fields:
            data["fields"] = list(self.fields)
        if self.rule:
            data["rule"] = self.rule
        values = self.extra.get("values")
        if isinstance(values, dict) and values:
            data["involved"] = {
                str(k): "<missing>" if v is MISSING else _jsonable(v) for k, v in values.items()
            }
        return data


def format_path(loc: tuple[str | int, ...] | list[str | int]) -> str:
    """Render a location tuple as `items[2].price`; the empty location is `<root>`."""
    out: list[str] = []
    for part in loc:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif out:
            out.append(f".{part}")
        else:
            out.append(str(part))
    return "".join(out) or ROOT


def short_repr(value: Any, limit: int = 200) -> str:
    """JSON-ish rendering of a value, cut to `limit` characters with a visible marker."""
    try:
        text = json.dumps(_jsonable(value), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > limit:
        return f"{text[: max(limit - 12, 0)]}…(+{len(text) - limit + 12} chars)"
    return text


def _jsonable(value: Any) -> Any:
    """Best-effort conversion to plain JSON data, never raising."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return _jsonable(dump(mode="json"))
        except Exception:  # a broken model_dump must not break a diagnostic
            return repr(value)
    return repr(value)


def describe_exception(exc: BaseException) -> str:
    """`TypeName: message`, even for an exception whose `__str__` itself raises."""
    try:
        message = str(exc)
    except Exception:
        message = "<exception message could not be printed>"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
