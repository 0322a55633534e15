"""L1: recover the JSON value from a model's reply without a model call.

Order of work, cheapest first: the whole reply through pydantic-core's Rust parser (and, with a
target, straight through `validate_json`); only when that fails, the candidates in the text
(fence bodies, bracketed spans), each parsed strictly and then leniently; with a target, the first
candidate that validates wins. A reply that ends inside a structure (or whose finish reason is
`length`) is truncated: its partial value is kept for the caller but never counts as recovered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic_core import ErrorDetails, from_json

from ._align import Alignment, Coercion, align
from ._diagnostic import ROOT, Diagnostic, Source, describe_exception, short_repr
from ._flags import Flag
from ._lenient import MAX_REPAIR_CHARS, NOTHING, lenient_loads
from ._scan import Candidate, find_candidates, strip_fences
from ._target import Target, target_for

__all__ = ["ParseResult", "Recovery", "parse", "recover"]

_FENCE_MARKS = re.compile(r"(`{3,}|~{3,})[A-Za-z0-9_+.\-]*")
_WORD = re.compile(r"[A-Za-z0-9_]")


class ParseResult:
    """What L1 recovered from one reply (immutable).

    `value` is the recovered JSON data (with healjson's own rewrites, such as enum case, applied;
    pydantic's lax coercions are listed in `coercions` but left to validation). When `truncated`,
    `value` holds the partial data and `error` says the reply was cut off: a partial value is never
    a result. When nothing could be recovered, `value` is None and `error` says why.
    `flags` lists the local repairs applied.
    """

    __slots__ = ("_text", "_value", "coercions", "error", "flags", "truncated")
    _text: str | None
    _value: Any
    flags: tuple[Flag, ...]
    truncated: bool
    error: Diagnostic | None
    coercions: tuple[Coercion, ...]

    def __init__(
        self,
        value: Any = None,
        flags: tuple[Flag, ...] = (),
        truncated: bool = False,
        error: Diagnostic | None = None,
        coercions: tuple[Coercion, ...] = (),
        *,
        lazy_text: str | None = None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "_text", lazy_text)
        setter(self, "_value", value)
        setter(self, "flags", tuple(flags))
        setter(self, "truncated", truncated)
        setter(self, "error", error)
        setter(self, "coercions", tuple(coercions))

    @property
    def value(self) -> Any:
        """The recovered data; on the valid-JSON fast path it is decoded on first access."""
        if self._text is not None:
            object.__setattr__(self, "_value", from_json(self._text))
            object.__setattr__(self, "_text", None)
        return self._value

    @property
    def ok(self) -> bool:
        """True when a complete value was recovered."""
        return self.error is None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ParseResult is immutable; cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParseResult):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def _key(self) -> tuple[Any, ...]:
        return (self.value, self.flags, self.truncated, self.error, self.coercions)

    def __repr__(self) -> str:
        return (
            f"ParseResult(value={self.value!r}, flags={self.flags!r}, truncated={self.truncated!r},"
            f" error={self.error!r}, coercions={self.coercions!r})"
        )


@dataclass(frozen=True, slots=True)
class Recovery:
    """L1's result plus, when a target was given, the validated instance or the schema errors."""

    result: ParseResult
    instance: Any = NOTHING
    schema_errors: tuple[ErrorDetails, ...] = field(default=())
    data: Any = NOTHING


def parse(text: str, schema: Any = None, *, finish_reason: str | None = None) -> ParseResult:
    """Recover the JSON value in `text` locally (no model call); never raises on bad input.

    With `schema` (a pydantic model or any type pydantic validates), the choice between several
    candidates is schema-aligned, and lax coercions and enum-case fixes are recorded as flags.
    """
    target = target_for(schema) if schema is not None else None
    return recover(text, target, finish_reason, want_value=True).result


def recover(
    text: Any,
    target: Target[Any] | None,
    finish_reason: str | None = None,
    *,
    want_value: bool = False,
) -> Recovery:
    """The L1 pipeline. `want_value=False` lets the happy path skip building the JSON data."""
    try:
        return _recover(text, target, finish_reason, want_value)
    except RecursionError:
        return _failure(text, "is nested too deeply to parse", "Reply with a flatter JSON value.")
    except Exception as exc:  # the never-throw guarantee: an L1 bug is a diagnostic, not a crash
        return _failure(
            text,
            f"could not be parsed ({describe_exception(exc)})",
            "Reply with only the JSON value, no prose or code fences.",
        )


def _recover(
    text: Any, target: Target[Any] | None, finish_reason: str | None, want_value: bool
) -> Recovery:
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    if text is None:
        text = ""
    if not isinstance(text, str):
        return _failure(
            repr(text)[:200], f"must be text, got {type(text).__name__}", "Reply with JSON text."
        )
    # Fast path: the whole reply is valid JSON (and, with a target, valid data). The JSON
    # parsers skip surrounding whitespace themselves, so a large reply is not copied by strip().
    if target is not None:
        try:
            instance = target.validate_json(text, strict=True)
        except Exception:  # ValidationError, or a surrogate pydantic-core cannot encode
            pass
        else:
            # the JSON data is only decoded if someone reads it (parse() callers may not)
            return Recovery(ParseResult(lazy_text=text if want_value else None), instance)
    try:
        whole = from_json(text)
    except Exception:
        whole = NOTHING
    if whole is not NOTHING and target is None:
        return Recovery(ParseResult(value=whole), data=whole)
    stripped = text.strip()
    cut = finish_reason == "length"
    if not stripped:
        if cut:  # a reasoning model can spend the whole budget before writing anything
            flags = (Flag.TRUNCATED,)
            return Recovery(ParseResult(None, flags, True, truncation_diagnostic(text, cut)))
        return Recovery(ParseResult(error=_empty()))
    if whole is not NOTHING and target is not None:
        fitted = align(target, whole)
        if not fitted.ok and isinstance(whole, str):
            scalar = _scalar_from_text(whole, target)  # `"ONE: the first"` for an enum target
            if scalar is not None:
                return scalar
        if fitted.ok or not _may_hold_more(whole, stripped):
            return _from_alignment(fitted, ())
    return _slow_path(stripped, target, cut)


def _may_hold_more(value: Any, text: str) -> bool:
    """A whole-reply JSON string might itself contain the answer in prose or fences."""
    return isinstance(value, str) and ("{" in value or "[" in value) and text.startswith('"')


def _slow_path(text: str, target: Target[Any] | None, cut: bool) -> Recovery:
    candidates = find_candidates(text)
    parsed: list[tuple[Candidate, Any, tuple[Flag, ...]]] = []
    truncated: list[tuple[Candidate, Any]] = []
    still_open: list[Candidate] = []
    for found in candidates:
        broken = not (found.complete or cut or found.fenced)  # a fence may be mis-paired
        candidate = (_closed_despite_quotes(found) if broken else None) or found
        if candidate.complete:
            value, flags = _parse_candidate(candidate, text)
            if value is not NOTHING:
                parsed.append((candidate, value, flags))
        else:
            still_open.append(candidate)
    # an open span that starts where a complete one does is the same structure misread (a ```
    # inside a string value closed the fence early): it is not a truncation
    closed_starts = {candidate.start for candidate, _, _ in parsed}
    for candidate in sorted(still_open, key=lambda c: c.start):  # the outermost open structure
        if candidate.start not in closed_starts:
            truncated.append((candidate, _partial(candidate)))
            break
    parsed = _outermost(parsed)
    several = (Flag.MULTIPLE_CANDIDATES,) if len(parsed) > 1 else ()
    open_at_end = bool(truncated) and (cut or not _inside_only(parsed, truncated))

    if target is not None:
        failures: list[tuple[Alignment, tuple[Flag, ...]]] = []
        for candidate, value, flags in parsed:
            if open_at_end and candidate.start > truncated[0][0].start:
                continue  # a span inside the cut-off structure is a fragment, not the answer
            if cut and _unsafe_when_cut(candidate, flags, text):
                continue
            fitted = align(target, value)
            if fitted.ok:
                return _from_alignment(fitted, (*flags, *several))
            failures.append((fitted, (*flags, *several)))
        if not open_at_end and not cut:  # a cut reply's text is never a value
            scalar = _scalar_from_text(text, target)
            if scalar is not None:
                return scalar
        if failures and not open_at_end and not cut:
            fitted, flags = min(failures, key=lambda item: len(item[0].errors))
            return _from_alignment(fitted, flags)
    elif cut:
        parsed = [item for item in parsed if not _unsafe_when_cut(item[0], item[2], text)]
    if target is None and parsed and not open_at_end:
        candidate, value, flags = _best_untyped(parsed)
        return Recovery(ParseResult(value=value, flags=(*flags, *several)), data=value)

    if cut and not truncated and parsed:
        # cut by the token limit and nothing trustworthy: the best reading is partial data
        first, data, _ = parsed[0]
        truncated.append((Candidate(first.text, first.start, first.fenced, complete=False), data))
    if truncated:
        candidate, partial = truncated[0]
        flags = (*_context_flags(candidate, text), Flag.TRUNCATED)
        return Recovery(
            ParseResult(
                value=None if partial is NOTHING else partial,
                flags=flags,
                truncated=True,
                error=truncation_diagnostic(text, cut),
            ),
            data=partial,
        )
    return Recovery(ParseResult(error=_no_json(text, candidates)))


_RESIDUE = re.compile(r"""[{}\[\]"]|'\s*:""")  # not a bare ":" (prose has colons)


def _unsafe_when_cut(candidate: Candidate, flags: tuple[Flag, ...], text: str) -> bool:
    """In a reply cut by the token limit, a span is trusted only if it parsed strictly (a repair
    could be closing a cut structure) and no JSON-looking text follows it (keys, brackets,
    quotes: it would be a piece of a longer, unfinished answer)."""
    if Flag.SYNTAX_REPAIRED in flags:
        return True
    after = _FENCE_MARKS.sub("", text[candidate.start + len(candidate.text) :])
    return bool(_RESIDUE.search(after))


def _closed_despite_quotes(candidate: Candidate) -> Candidate | None:
    """A span that "never closes" only because of a stray quote (`"New York, "gender": ...}`)
    still ends with its closer and has balanced brackets: it is broken, not truncated."""
    body = candidate.text.rstrip()
    closer = {"{": "}", "[": "]"}.get(body[:1])
    if closer is None or len(body) < 2 or not body.endswith(closer):
        return None
    if body.count("{") != body.count("}") or body.count("[") != body.count("]"):
        return None
    return Candidate(body, candidate.start, candidate.fenced, complete=True)


def _inside_only(
    parsed: list[tuple[Candidate, Any, tuple[Flag, ...]]],
    truncated: list[tuple[Candidate, Any]],
) -> bool:
    """True when some complete candidate lies before the first open structure (so the reply may
    just have an unbalanced bracket in prose after a complete answer)."""
    first_open = truncated[0][0].start
    return any(candidate.start < first_open for candidate, _, _ in parsed)


def _parse_candidate(candidate: Candidate, text: str) -> tuple[Any, tuple[Flag, ...]]:
    flags = _context_flags(candidate, text)
    try:
        return from_json(candidate.text.strip()), flags
    except Exception:
        value = lenient_loads(candidate.text)
        return value, (*flags, Flag.SYNTAX_REPAIRED)


_MAX_PARTIAL_REPAIR_CHARS = 64_000
_CUT_TOKEN = re.compile(r"[\w.+\-]+\s*$")


def _partial(candidate: Candidate) -> Any:
    # a number or literal touching the cut may itself be cut (`12` of `125`): leave it out
    body = _CUT_TOKEN.sub("", candidate.text) if candidate.string_start is None else candidate.text
    try:
        return from_json(body, allow_partial=True)
    except Exception:
        pass
    if candidate.string_start is not None:
        body = body[: candidate.string_start]  # a cut string is corrupted data: drop it
    # partial data is best effort: a cut reply is as long as max_tokens allowed, rarely more
    return lenient_loads(body, max_chars=_MAX_PARTIAL_REPAIR_CHARS)


def _context_flags(candidate: Candidate, text: str) -> tuple[Flag, ...]:
    flags: list[Flag] = []
    outside = text[: candidate.start] + text[candidate.start + len(candidate.text) :]
    without_fences = _FENCE_MARKS.sub("", outside)
    if candidate.fenced or len(without_fences) != len(outside):
        flags.append(Flag.CODE_FENCE)
    if without_fences.strip():
        flags.append(Flag.PROSE_AROUND)
    return tuple(flags)


def _outermost(
    parsed: list[tuple[Candidate, Any, tuple[Flag, ...]]],
) -> list[tuple[Candidate, Any, tuple[Flag, ...]]]:
    """Drop candidates lying inside a bare parsed span: they are pieces of it (a ``` inside a
    string value is content, not a fence)."""
    bare = [(c.start, c.start + len(c.text)) for c, _, _ in parsed if not c.fenced]
    if not bare:
        return parsed

    def inside(candidate: Candidate) -> bool:
        span = (candidate.start, candidate.start + len(candidate.text))
        return any(s <= span[0] and span[1] <= e and (s, e) != span for s, e in bare)

    return [item for item in parsed if not inside(item[0])] or parsed


def _best_untyped(
    parsed: list[tuple[Candidate, Any, tuple[Flag, ...]]],
) -> tuple[Candidate, Any, tuple[Flag, ...]]:
    """Without a schema: prefer cleanly parsed over repaired, fenced over bare, then the longest."""

    def rank(item: tuple[Candidate, Any, tuple[Flag, ...]]) -> tuple[bool, bool, int]:
        candidate, _, flags = item
        return (
            Flag.SYNTAX_REPAIRED not in flags,
            candidate.fenced,
            len(candidate.text),
        )

    return max(parsed, key=rank)


def _scalar_from_text(text: str, target: Target[Any]) -> Recovery | None:
    """For string, number, boolean and enum targets: read the value from plain text."""
    if target.expects_object or target.json_schema.get("type") == "array":
        return None
    body = strip_fences(text)
    fitted = align(target, body)
    if fitted.ok:
        return _from_alignment(fitted, (Flag.TEXT_AS_VALUE,))
    choices = [c for c in target.choices_at(()) if isinstance(c, str)]
    if choices:
        lowered = body.casefold()
        found = {c for c in choices if _mentions(lowered, c.casefold())}
        if len(found) == 1:
            fitted = align(target, found.pop())
            if fitted.ok:
                flags = (Flag.TEXT_AS_VALUE, Flag.PROSE_AROUND, *fitted.flags)
                return _from_alignment(fitted, flags)
    return None


def _mentions(text: str, word: str) -> bool:
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not _WORD.match(before) and not _WORD.match(after):
            return True
        start = text.find(word, start + 1)
    return False


def _from_alignment(fitted: Alignment, flags: tuple[Flag, ...]) -> Recovery:
    all_flags = tuple(dict.fromkeys((*flags, *fitted.flags)))
    result = ParseResult(value=fitted.data, flags=all_flags, coercions=fitted.coercions)
    return Recovery(result, fitted.instance, fitted.errors, fitted.data)


def _empty() -> Diagnostic:
    return Diagnostic(
        path=ROOT,
        value="",
        constraint="must contain a JSON value (the reply was empty)",
        prescription="Answer again with the complete JSON value.",
        source=Source.EMPTY,
    )


def truncation_diagnostic(text: str, cut: bool) -> Diagnostic:
    """The diagnostic for a reply cut off by the token limit (`cut`) or ending mid-structure."""
    why = "the token limit was reached (finish_reason=length)" if cut else "it ends mid-structure"
    return Diagnostic(
        path=ROOT,
        value=text[-120:],
        constraint=f"must be complete; the reply was cut off after {len(text)} characters: {why}",
        prescription=(
            "Write the complete JSON value again, compactly: no whitespace between tokens and "
            "free-text fields as short as the rules allow."
        ),
        source=Source.TRUNCATION,
    )


def _no_json(text: str, candidates: list[Candidate]) -> Diagnostic:
    if len(text) > MAX_REPAIR_CHARS:
        detail = f"the reply is {len(text)} characters, too large to repair locally"
    elif candidates:
        detail = _strict_error(candidates[0].text)
    else:
        detail = "no JSON object or array was found"
    return Diagnostic(
        path=ROOT,
        value=text,
        constraint=f"must be valid JSON ({detail})",
        prescription=(
            "Reply with only the JSON value: no prose, no code fences, double-quoted keys and "
            "strings, balanced brackets."
        ),
        source=Source.SYNTAX,
    )


def _strict_error(text: str) -> str:
    try:
        from_json(text)
    except Exception as exc:
        return str(exc)
    return "it could not be read as the expected value"


def _failure(text: Any, constraint: str, prescription: str) -> Recovery:
    shown = text if isinstance(text, str) else short_repr(text)
    diagnostic = Diagnostic(
        path=ROOT,
        value=shown,
        constraint=constraint,
        prescription=prescription,
        source=Source.SYNTAX,
    )
    return Recovery(ParseResult(error=diagnostic))
