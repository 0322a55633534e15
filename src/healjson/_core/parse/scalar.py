"""Scalar targets (`int`, `float`, `bool`, `str`, an Enum, a Literal, a date, ...): one rule.

A reply that is, as a whole, one JSON value (fenced or not) is read as that value, fitted to the
target (`align`: a one-key wrapper unwrapped, a number word read, ...). Any other reply is text,
and its readings are:

- the text as a whole (stripped; a fence that is all of the reply: its body) read as the
  scalar: `hello world` for a `str`, `seven` for an `int`, `Red` for an Enum, `2024-01-02` for
  a date; when it does not fit as written, the literal it spells as a whole (`None`, `nil`,
  `undefined`, `True`: any case, `tokens.LITERALS`), read as the tolerant reader reads it in
  an object and flagged as it is there (`syntax_repaired`): `None` for an `Optional[int]` is
  null; then the same text with the markup and punctuation around it dropped, as for any
  reply (flag `syntax_repaired`): inline-code backticks, bold and italic markers, quotes, a
  trailing period (`` `42` ``, `**42**`, `42.`, `"High"`, `*true*`). A `str` fits as written,
  so its text keeps them (`None` for a `str` is the word);
- each JSON value found in it (`find_candidates`: fence bodies, bracketed spans), fitted, and
  each code fence that holds text (not JSON), its text read as the scalar (as above).

**Prose is read for no scalar kind.** A sentence is not searched for a number, a date, a
yes / no or a choice's name: the sentence may be about something else (`I only received page 1
of the report` holds no count, `This is not urgent` names the wrong choice, `Priority: high`
is a label and a value, and no rule tells a label from an answer). Reading words out of prose
for one kind and not for another would be two rules; reading them for every kind would invent
values. A reply in prose gets a diagnostic asking for the value alone, and the engine asks
again.

Every reading that validates gives a value; readings of the same value are one. Exactly one
value: it is the answer, flagged with how it was read (`text_as_value`, `prose_around`,
`code_fence`, `unwrapped`, ...). Several: the reply is ambiguous (no value, a diagnostic listing
them, unless `on_ambiguity` picks the first or the last). None: a diagnostic naming the scalar
expected. Linear in the text for a given target: the markup is dropped in a bounded number of
steps from each end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic_core import from_json

from healjson._core.diagnostic import ROOT, Diagnostic, Source, short_repr
from healjson._core.flags import Flag
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target, resolve_ref

from .align import Fit, align, answer_key
from .meter import charge
from .result import ParseResult
from .tokens import LITERALS

__all__ = [
    "Reading",
    "decide",
    "expected",
    "fence_text_reading",
    "is_scalar",
    "not_found",
    "text_readings",
    "unmarked",
]

_SCALAR_KINDS: Final = frozenset({"string", "number", "integer", "boolean", "null"})
_STRUCTURE: Final = re.compile(r"[{}\[\]]|\"\s*+:")
_LONGEST_LITERAL: Final = max(map(len, LITERALS))


@dataclass(frozen=True, slots=True)
class Reading:
    """One way to read the reply as the scalar: how (`what`, for the diagnostic), where it
    starts, its fit, and the flags of the reading itself (the fit adds its own)."""

    what: str
    start: int
    fit: Fit
    flags: tuple[Flag, ...] = ()
    rank: int = 0
    """Which reading is shown for a value several give: the whole text (0), a JSON value in it
    (1), a word (2)."""
    context: Callable[[], tuple[Flag, ...]] | None = None
    """More flags, worked out only if this reading is the answer (where it sits in the reply:
    a pass over the text, made once, not once per reading)."""


def is_scalar(target: Target[Any]) -> bool:
    """True for a target whose every JSON type at the root is a scalar (or an enum / literal)."""
    kinds = target.kinds_at(())
    return not (kinds - _SCALAR_KINDS) and bool(kinds or target.choices_at(()))


def text_readings(target: Target[Any], text: str, body: str, context: Any) -> list[Reading]:
    """The reading of a reply that is text (not one JSON value): `body` (the text, or the body
    of the one fence that is the whole reply) as a whole, as written or without its markup."""
    charge(len(body))
    fenced = (Flag.CODE_FENCE,) if body != text.strip() else ()
    fit, flags = _text_fit(target, body, context)
    if fit is None:
        return []
    return [Reading("the whole text", 0, fit, (*fenced, *flags))]


def fence_text_reading(target: Target[Any], body: str, context: Any) -> Reading | None:
    """A code fence's body read as the scalar, when it holds text (no JSON value, no JSON
    structure: a JSON body is a JSON value's reading already)."""
    stripped = body.strip()
    charge(len(stripped))
    if not stripped or _STRUCTURE.search(stripped):
        return None
    try:
        from_json(stripped)
    except ValueError:
        fit, flags = _text_fit(target, stripped, context)
        if fit is None:
            fit, flags = align(target, stripped, context), (Flag.TEXT_AS_VALUE,)
        return Reading("the code fence's text", 0, fit, flags, 1)
    return None


def _text_fit(target: Target[Any], text: str, context: Any) -> tuple[Fit | None, tuple[Flag, ...]]:
    """`text` fitted as written (flag `text_as_value`), else as the literal it spells (`None`
    for a null: flag `syntax_repaired`, as the tolerant reader flags a literal in an object);
    then the same without the markup around it (`syntax_repaired` too); None when none fits."""
    for written in _as_written_then_unmarked(text):
        repaired = (Flag.SYNTAX_REPAIRED,) if written != text else ()
        fit = align(target, written, context)
        if fit.ok:
            return fit, (Flag.TEXT_AS_VALUE, *repaired)
        literal = _literal_fit(target, written, context)
        if literal is not None:
            return literal, (Flag.SYNTAX_REPAIRED,)
    return None, ()


def _as_written_then_unmarked(text: str) -> Iterator[str]:
    """`text`, then (only if asked for) the same without its markup, when that differs."""
    yield text
    bare = unmarked(text)
    if bare and bare != text:
        yield bare


def _literal_fit(target: Target[Any], text: str, context: Any) -> Fit | None:
    """`text` read as the literal it spells as a whole (`None`, `True`, `undefined`, any case:
    `tokens.LITERALS`), as the tolerant reader reads a bare literal inside an object; None when
    it spells none, or when the literal does not fit."""
    if len(text) > _LONGEST_LITERAL:
        return None
    value = LITERALS.get(text.casefold(), NOTHING)
    if value is NOTHING:
        return None
    fit = align(target, value, context)
    return fit if fit.ok else None


_MARKUP: Final = (
    ("**", "**"),
    ("__", "__"),
    ("*", "*"),
    ("_", "_"),
    ("`", "`"),
    ('"', '"'),
    ("'", "'"),
    ("\u201c", "\u201d"),
    ("\u2018", "\u2019"),
)
_MARKUP_ROUNDS: Final = 4


def unmarked(text: str) -> str:
    """`text` without the markup and punctuation around it: pairs of backticks, bold or italic
    markers and quotes that enclose all of it, and one trailing period (`**42**.` → `42`; an
    ellipsis is not a period). At most a few layers: each is a constant-size step."""
    out = text.strip()
    for _ in range(_MARKUP_ROUNDS):
        before = out
        if out.endswith(".") and not out.endswith(".."):
            out = out[:-1].rstrip()
        for opener, closer in _MARKUP:
            enclosed = out.startswith(opener) and out.endswith(closer)
            if enclosed and len(out) > len(opener) + len(closer):
                out = out[len(opener) : -len(closer)].strip()
                break
        if out == before:
            break
    return out


def decide(
    target: Target[Any], readings: Sequence[Reading], on_ambiguity: str
) -> ParseResult | None:
    """The answer when the readings that fit give one value; an ambiguity when they give several
    (or the first / last by position, with `on_ambiguity`); None when none fits."""
    fits = sorted((r for r in readings if r.fit.ok), key=lambda r: r.start)
    if not fits:
        return None
    by_value: dict[bytes, Reading] = {}
    for reading in fits:
        by_value.setdefault(answer_key(target, reading.fit.instance), reading)
    if len(by_value) == 1:
        return _result(_best(fits), ())
    if on_ambiguity == "reask":
        values = [(_shown(key), reading) for key, reading in by_value.items()]
        return ParseResult(
            flags=(Flag.MULTIPLE_CANDIDATES,),
            error=_ambiguity(target, values),
            candidates=tuple(value for value, _ in values),
        )
    pick = fits[0] if on_ambiguity == "first" else fits[-1]
    return _result(pick, (Flag.MULTIPLE_CANDIDATES, Flag.AMBIGUOUS_CHOICE))


def _best(fits: Sequence[Reading]) -> Reading:
    """Of readings of one value: the whole text over a JSON value in it over a word."""
    return min(fits, key=lambda r: r.rank)


def _result(reading: Reading, extra: tuple[Flag, ...]) -> ParseResult:
    fit = reading.fit
    where = reading.context() if reading.context is not None else ()
    flags = tuple(dict.fromkeys((*where, *reading.flags, *extra, *fit.flags)))
    return ParseResult(fit.data, flags, instance=fit.instance)


def expected(target: Target[Any]) -> str:
    """The scalar a target expects, in words: `an integer`, `a number`, `a boolean (true or
    false)`, `one of 'red', 'blue'`, `a string (date)`, ..."""
    choices = target.choices_at(())
    if choices:
        shown = ", ".join(short_repr(c, 40) for c in choices[:8])
        return f"one of {shown}" + (", ..." if len(choices) > 8 else "")
    kinds = target.kinds_at(()) - {"null"}
    names = {
        "integer": "an integer",
        "number": "a number",
        "boolean": "a boolean (true or false)",
        "string": _string_kind(target),
    }
    said = " or ".join(names[k] for k in ("integer", "number", "boolean", "string") if k in kinds)
    return said or "a null"


def _string_kind(target: Target[Any]) -> str:
    root = target.json_schema
    schema = resolve_ref(root, root) if isinstance(root, dict) else {}
    form = schema.get("format")
    return f"a string ({form})" if isinstance(form, str) else "a string"


def not_found(target: Target[Any], text: str) -> Diagnostic:
    """No reading of the reply fits: the diagnostic names the scalar expected."""
    want = expected(target)
    return Diagnostic(
        path=ROOT,
        value=text,
        constraint=(
            f"must be {want}; the reply is not, as a whole, and holds no JSON value that is "
            "(a value in prose is not read: the sentence may be about something else)"
        ),
        prescription=f"Reply with only {want}: no sentence or label around it.",
        source=Source.SYNTAX,
        extra={"expected": want},
    )


def _shown(key: bytes) -> Any:
    """A validated value as JSON data (its answer key decoded)."""
    try:
        return from_json(key)
    except ValueError:
        return key.decode("utf-8", "replace")


def _ambiguity(target: Target[Any], readings: Sequence[tuple[Any, Reading]]) -> Diagnostic:
    want = expected(target)
    said = "; ".join(f"{short_repr(value, 60)} ({r.what})" for value, r in readings[:6])
    more = f"; and {len(readings) - 6} more" if len(readings) > 6 else ""
    values = tuple(value for value, _ in readings)
    return Diagnostic(
        path=ROOT,
        value=list(values),
        constraint=(
            f"must hold exactly one answer, {want}; the reply reads as {len(readings)} different "
            f"values: {said}{more}"
        ),
        prescription=(
            f"Reply with only your final answer, {want}, with no other value, example or JSON "
            "beside it."
        ),
        source=Source.AMBIGUITY,
        extra={"candidates": values},
    )
