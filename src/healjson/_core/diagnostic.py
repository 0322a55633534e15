"""The one shape every failure takes: a diagnostic triple (value, constraint, prescription).

Syntax errors, schema errors, contract violations and truncation all become a `Diagnostic`, so
the repair prompt, the trace and the caller read one format.
"""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic_core import to_jsonable_python

from .redact import redact_text
from .sentinels import MISSING

__all__ = [
    "MISSING_MARK",
    "ROOT",
    "Diagnostic",
    "Source",
    "describe_exception",
    "format_path",
    "jsonable",
    "qualified_name",
    "safe_repr",
    "short_repr",
    "type_name",
    "value_data",
    "value_form",
]

ROOT: Final = "<root>"
MISSING_MARK: Final = "<missing>"
"""How a record writes `MISSING` (a diagnostic's `missing` key says which it is)."""


class Source(enum.StrEnum):
    """Which check produced a diagnostic."""

    SYNTAX = "syntax"
    EMPTY = "empty"
    TRUNCATION = "truncation"
    AMBIGUITY = "ambiguity"
    TOOL_CALL = "tool_call"
    SCHEMA = "schema"
    CONTRACT = "contract"
    CONTRACT_ERROR = "contract_error"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    API = "api"
    BUDGET = "budget"
    FALLBACK = "fallback"
    DEGENERATE = "degenerate"
    REDACTION = "redaction"
    """A healed value that a store keeping no secret (a batch or dataset row) cannot hold as
    it is: the redactor would change it."""


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

    def __repr__(self) -> str:
        # the value and extra through the safe renderer (see `_plain`): a repr must not raise
        # or take exponential time on the values user code puts here
        return redact_text(
            f"Diagnostic(path={safe_repr(self.path, 200)}, value={short_repr(self.value, 200)}, "
            f"constraint={safe_repr(self.constraint, 300)}, "
            f"prescription={safe_repr(self.prescription, 300)}, source={self.source!r}, "
            f"fields={safe_repr(self.fields, 200)}, rule={safe_repr(self.rule, 100)}, "
            f"extra={short_repr(self.extra, 200)})"
        )

    @property
    def is_missing(self) -> bool:
        """True when the value was absent rather than wrong."""
        return self.value is MISSING

    def describe(self, *, max_value_chars: int = 200) -> str:
        """One line: `path = value: constraint`."""
        shown = "<missing>" if self.is_missing else short_repr(self.value, max_value_chars)
        return f"{self.path} = {shown}: {self.constraint}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the missing marker becomes the string `<missing>`, with `missing`
        true; a value that is that very string has `missing` false, so a reader tells the two
        apart); the value and the involved values are rendered safely, at most
        `_DIAGNOSTIC_NODES` values each."""
        value = MISSING_MARK if self.is_missing else jsonable(self.value, _DIAGNOSTIC_NODES)
        data: dict[str, Any] = {
            "path": self.path,
            "value": value,
            "constraint": self.constraint,
            "prescription": self.prescription,
            "source": str(self.source),
        }
        if value == MISSING_MARK:
            data["missing"] = self.is_missing
        if self.fields:
            data["fields"] = list(self.fields)
        if self.rule:
            data["rule"] = self.rule
        values = self.extra.get("values")
        if isinstance(values, dict) and values:
            involved = jsonable(values, _DIAGNOSTIC_NODES)  # MISSING renders as "<missing>"
            if isinstance(involved, dict):
                data["involved"] = involved
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


# -- rendering values that come from user code ------------------------------------------------
#
# Violation values, fallbacks, partial data, examples and call parameters come from code healjson
# does not control: they may be cyclic, nested thousands deep, too large to print (`10**100000`,
# which `str()` refuses in Python 3.11+), or have a `__repr__`, `items()` or `model_dump` that
# raises. Every renderer (repair prompts, traces, records, events) goes through `_plain`, which
# never raises: a cycle, a container past the depth cap or past the size budget, and an object
# that cannot be printed each become a visible marker string instead.

_MAX_DEPTH: Final = 200
"""Containers nested deeper render as `<nested too deep>` (pydantic-core's own JSON parser stops
near this depth, so no value parsed from an answer is cut)."""
_MAX_NODES: Final = 200_000
"""Values (and keys) `jsonable` converts at most, the rest of each container becoming a marker:
more than any model answer holds (100k output tokens), few enough to render in well under a
second (a shared structure such as `a = [a0, a0]` repeated 60 times would expand to 2**60)."""
_DIAGNOSTIC_NODES: Final = 10_000
"""Values a diagnostic's record keeps of the value it shows (the raw answer is kept whole)."""
_REPR_CHARS: Final = 2_000
"""`repr()` of an object that is not JSON data is cut to this many characters."""
_INT_BITS: Final = 14_000
"""Integers longer than this (about 4,200 digits) render as their size: Python 3.11+ refuses to
print integers of more than 4,300 digits, and `json.dumps` prints them."""
_EXCEPTION_CHARS: Final = 2_000
"""`describe_exception` cuts a longer message."""
_REDACT_MARGIN: Final = 1_024
"""A text cut for a short rendering is redacted over this many characters past the cut: longer
than any credential, so one that starts before the cut is removed whole."""
CYCLE: Final = "<cycle>"
TOO_DEEP: Final = "<nested too deep>"


@dataclass(slots=True)
class _Walk:
    """The budget of one rendering: values left, text characters left (None: no limit), text
    characters cut so far, whether a container was cut short, and the containers on the current
    path (the cycle guard)."""

    nodes: int
    chars: int | None = None
    omitted: int = 0
    cut_short: bool = False
    active: set[int] = field(default_factory=set)


def short_repr(value: Any, limit: int = 200) -> str:
    """JSON-ish rendering of any value in at most `limit` characters, never raising.

    A longer rendering is cut with a visible `…(+N chars)` marker (`…(+N or more chars)` when
    the conversion itself stopped early). The work is bounded by `limit` too: a 20 MB string or a
    million-item list is cut while it is converted, not after.
    """
    limit = max(limit, 0)
    walk = _Walk(nodes=limit + 1, chars=limit + 1)
    try:
        text = json.dumps(_plain(value, walk, _MAX_DEPTH), ensure_ascii=False)
    except Exception:  # pragma: no cover - _plain returns plain JSON data
        text = safe_repr(value, limit + 1)
    if len(text) <= limit:
        return text
    marker, cut = "", limit
    more = " or more" if walk.cut_short else ""
    for _ in range(3):  # the marker's own length moves the cut, which moves its count
        marker = f"…(+{len(text) - cut + walk.omitted}{more} chars)"
        cut = limit - len(marker)
    return f"{text[:cut]}{marker}" if cut >= 0 else text[:limit]


def safe_repr(value: Any, limit: int = _REPR_CHARS) -> str:
    """`repr(value)` cut to `limit` characters, or `<unprintable TypeName>` when it raises."""
    try:
        text = str.__str__(repr(value))
    except Exception:
        text = f"<unprintable {type_name(value)}>"
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def jsonable(value: Any, max_nodes: int = _MAX_NODES) -> Any:
    """Plain JSON data for any value, never raising (`json.dumps` accepts the result).

    JSON data is returned unchanged up to `_MAX_DEPTH` levels and `max_nodes` values; tuples and
    sets become lists, enums their values, models their `model_dump(mode="json")`, anything else
    its (safe) repr. Cycles, excess depth or size and huge integers become marker strings.
    """
    try:
        return _plain(value, _Walk(nodes=max_nodes), _MAX_DEPTH)
    except Exception:  # pragma: no cover - _plain catches per value; this is the last guard
        return f"<unprintable {type_name(value)}>"


def value_data(value: Any) -> Any:
    """A validated value as the JSON data its type validates back to an equal value, never
    raising: pydantic's own JSON-mode serialization by alias (models, dataclasses, dates, UUIDs,
    decimals, enums; a field a model excludes from serialization is left out, as pydantic leaves
    it out), a model's computed fields left out (validation derives them again; pydantic 2.12
    on), within `jsonable`'s bounds. What pydantic cannot serialize renders as `jsonable` renders
    it (`value_form` says so)."""
    return value_form(value)[0]


def value_form(value: Any) -> tuple[Any, str | None]:
    """`value_data(value)`, and None, or why pydantic cannot write the value as JSON (then the
    data is `jsonable`'s rendering of it, which does not validate back: a store that must keep
    the value as it is cannot take it)."""
    try:
        dump = getattr(value, "model_dump", None)
        if not callable(dump):
            data = to_jsonable_python(value, by_alias=True)
        else:
            try:
                options: dict[str, Any] = {"by_alias": True, "exclude_computed_fields": True}
                data = dump(mode="json", **options)
            except TypeError:  # a pydantic without `exclude_computed_fields`
                options = {"by_alias": True}
                data = dump(mode="json", **options)
            if _holds_none(data):  # JSON mode writes a non-finite float typed `Any` as null
                data = _non_finite_kept(data, dump(mode="python", **options))
    except Exception as exc:  # a type pydantic cannot serialize, a serializer that raises
        return jsonable(value), f"{type(exc).__name__}: {str(exc)[:200]}"
    return jsonable(data), None


def _holds_none(data: Any) -> bool:
    """Whether JSON data holds a null at any depth (iteratively: no depth limit)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if item is None:
            return True
        if type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return False


def _non_finite_kept(data: Any, python: Any, depth: int = 0) -> Any:
    """`data` (a JSON-mode dump) with each null that the Python-mode dump of the same value
    (`python`) holds a non-finite float for given that float back (pydantic's JSON mode writes
    NaN and infinity typed `Any` as null; the record writes them as `"NaN"` / `"Infinity"`,
    which read back)."""
    if data is None:
        return python if type(python) is float and not math.isfinite(python) else None
    if depth >= _MAX_KEPT_DEPTH:
        return data
    if type(data) is dict and type(python) is dict:
        return {
            key: _non_finite_kept(item, python.get(key), depth + 1) for key, item in data.items()
        }
    if type(data) is list and type(python) in (list, tuple) and len(data) == len(python):
        return [_non_finite_kept(a, b, depth + 1) for a, b in zip(data, python, strict=True)]
    return data


_MAX_KEPT_DEPTH: Final = 200


def _plain(value: Any, walk: _Walk, depth: int) -> Any:
    """One value as plain JSON data (one stack frame per nesting level, by design)."""
    walk.nodes -= 1
    kind = type(value)
    if value is None or kind is bool:
        return value
    if kind is str:
        return _text(value, walk)
    if kind is int:
        return _integer(value, walk)
    if kind is float:
        _charge(walk, 24)
        return value
    ident = id(value)
    entered = False
    try:
        if isinstance(value, enum.Enum):
            return _plain(value.value, walk, depth)
        if isinstance(value, str):  # subclasses: their exact text, not their own methods
            return _text(str.__str__(value), walk)
        if isinstance(value, int):
            return _integer(int.__int__(value), walk)
        if isinstance(value, float):
            _charge(walk, 24)
            return float.__float__(value)
        if isinstance(value, dict | list | tuple | set | frozenset):
            if depth <= 0:
                return _text(TOO_DEEP, walk)
            if ident in walk.active:
                return _text(CYCLE, walk)
            walk.active.add(ident)
            entered = True
            if isinstance(value, dict):
                mapping: dict[str, Any] = {}
                for index, (key, item) in enumerate(value.items()):
                    if _spent(walk):
                        mapping["…"] = f"+{len(value) - index} more keys"
                        break
                    # the key first: it is shown before its value, and takes its budget first
                    name = _key(key, walk)
                    mapping[name] = _plain(item, walk, depth - 1)
                return mapping
            items: list[Any] = []
            for index, item in enumerate(value):
                if _spent(walk):
                    items.append(f"…(+{len(value) - index} more items)")
                    break
                items.append(_plain(item, walk, depth - 1))
            return items
        dump = getattr(value, "model_dump", None)
        if callable(dump):
            return _plain(dump(mode="json"), walk, depth)
    except Exception:  # a hostile items(), __iter__, __len__ or model_dump: show what it is
        pass
    finally:
        if entered:
            walk.active.discard(ident)
    return _text(safe_repr(value), walk)


def _key(key: Any, walk: _Walk) -> str:
    """A mapping key as a string (`str(key)`, as JSON does for numbers), never raising."""
    if type(key) is str:
        return _text(key, walk)
    if isinstance(key, int) and not isinstance(key, bool):
        shown = _integer(int.__int__(key), walk)
        return shown if isinstance(shown, str) else str(shown)
    try:
        text = str.__str__(str(key))
    except Exception:
        text = safe_repr(key)
    return _text(text, walk)


def _text(text: str, walk: _Walk) -> str:
    if walk.chars is None:
        return text
    keep = max(walk.chars, 0)
    walk.chars -= len(text) + 2
    # a short rendering is printed (`repr`, traces, errors): redacted before it is cut, so a cut
    # cannot leave part of a secret; the work stays bounded by the budget (`_REDACT_MARGIN`)
    shown = redact_text(text[: keep + _REDACT_MARGIN])
    if len(text) > keep:
        walk.omitted += len(text) - keep
        return shown[:keep]
    return shown


def _integer(number: int, walk: _Walk) -> int | str:
    bits = number.bit_length()
    if bits > _INT_BITS:
        return _text(f"<integer of about {int(bits * 0.30103) + 1} digits>", walk)
    _charge(walk, bits // 3 + 1)
    return number


def _charge(walk: _Walk, chars: int) -> None:
    if walk.chars is not None:
        walk.chars -= chars


def _spent(walk: _Walk) -> bool:
    if walk.nodes <= 0 or (walk.chars is not None and walk.chars <= 0):
        walk.cut_short = True
        return True
    return False


def type_name(value: Any) -> str:
    try:
        return str.__str__(type(value).__name__)
    except Exception:  # pragma: no cover - a metaclass with a hostile __name__
        return "object"


def qualified_name(value: Any) -> str:
    """The fully-qualified name of `value`'s class, as OpenTelemetry's `error.type` names an
    exception's: `openai.RateLimitError`, `httpx.ConnectError` (the module a package exports
    it from, when it says so); a builtin's bare name (`TimeoutError`)."""
    cls = type(value)
    try:
        module = str.__str__(cls.__module__)
        name = str.__str__(cls.__qualname__)
    except Exception:  # pragma: no cover - a metaclass with a hostile name
        return type_name(value)
    return name if module == "builtins" else f"{module}.{name}"


def describe_exception(exc: BaseException) -> str:
    """`TypeName: message`, even for an exception whose `__str__` itself raises (a message
    longer than `_EXCEPTION_CHARS` is cut)."""
    try:
        message = str.__str__(str(exc))
    except Exception:
        message = "<exception message could not be printed>"
    if len(message) > _EXCEPTION_CHARS:
        message = message[: _EXCEPTION_CHARS - 1] + "…"
    name = type_name(exc)
    return f"{name}: {message}" if message else name
