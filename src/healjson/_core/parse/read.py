"""The L1 pipeline: one reply in, one `ParseResult` out (the rules are in the package docstring).

Order of work, cheapest first: the whole reply through pydantic-core's Rust parser (and, with a
target, straight through `validate_json`); a reply that is one JSON string is read again as the
text it encodes; only then the slow path — reasoning set aside, then the candidates (fence
bodies, bracketed spans), each parsed strictly, then as encoded JSON, then leniently, and fitted
to the target.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_core import from_json, to_json

from healjson._core.diagnostic import ROOT, Diagnostic, Source, describe_exception, short_repr
from healjson._core.flags import Flag
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target, target_for

from .align import Fit, align, answer_key, settled
from .defaults import left_out
from .diagnostics import ambiguity, empty, no_json, only_reasoning, truncation_diagnostic
from .lenient import MAX_REPAIR_CHARS, RepairBudget, lenient_loads, partial_loads
from .meter import charge
from .result import ParseResult
from .scalar import Reading, decide, fence_text_reading, is_scalar, not_found, text_readings
from .scan import (
    Candidate,
    closed_despite_quotes,
    cut_string,
    find_candidates,
    left_open,
    strip_fences,
)
from .segment import split_reasoning

__all__ = ["Ambiguity", "check_ambiguity", "parse", "read"]

Ambiguity = Literal["reask", "first", "last"]
AMBIGUITY_MODES: tuple[Ambiguity, ...] = ("reask", "first", "last")

_FENCE_MARKS = re.compile(r"(`{3,}|~{3,})[A-Za-z0-9_+.\-]*")
_QUOTE_COLON = re.compile(r"'\s*+:")
_MAX_DEPTH = 4  # nested readings: an encoded reply inside a reply, reasoning around an answer


def parse(
    text: str,
    schema: Any = None,
    *,
    finish_reason: str | None = None,
    on_ambiguity: Ambiguity = "reask",
    context: Any = None,
) -> ParseResult:
    """Recover the JSON value in `text` locally (no model call); never raises on bad input.

    With `schema` (a pydantic model or any type pydantic validates), candidates are fitted to it
    and `valid` / `instance` say whether one validated. When the reply holds several *different*
    answers, `on_ambiguity="reask"` (the default) returns no value: `error` has source
    `ambiguity` and `candidates` lists them; `"first"` / `"last"` pick one (flag
    `ambiguous_choice`). A bad `schema` or `on_ambiguity` raises: that is a programming error.
    `context` is pydantic's validation context (`info.context` in a validator) wherever `schema`
    validates.
    """
    target = target_for(schema) if schema is not None else None
    check_ambiguity(on_ambiguity)
    return read(
        text, target, finish_reason=finish_reason, on_ambiguity=on_ambiguity, context=context
    )


def check_ambiguity(mode: str) -> None:
    """Raise a clear error for an unknown `on_ambiguity` mode."""
    if mode not in AMBIGUITY_MODES:
        raise ValueError(f"on_ambiguity must be 'reask', 'first' or 'last', got {mode!r}")


@dataclass(frozen=True, slots=True)
class _Context:
    target: Target[Any] | None
    cut: bool
    on_ambiguity: Ambiguity
    reasoning_elsewhere: bool  # the provider returned reasoning in a field of its own
    reply_chars: int = 0  # the whole reply's length, as a diagnostic reports it
    validation: Any = None  # pydantic's validation context, in every validation


@dataclass(frozen=True, slots=True)
class _Parsed:
    candidate: Candidate
    value: Any
    flags: tuple[Flag, ...]


def read(
    text: Any,
    target: Target[Any] | None,
    *,
    finish_reason: str | None = None,
    on_ambiguity: Ambiguity = "reask",
    reasoning: str | None = None,
    from_tool: bool = False,
    context: Any = None,
) -> ParseResult:
    """L1 on one reply, for the engine: `reasoning`, the provider's reasoning field (never read
    for candidates; only reasoning is a truncation; set aside, it is flagged); `from_tool`: text
    of a tool call's arguments the provider sent as an object (`ToolCall.as_object`: cut by the
    token limit, truncated even when they parse, since the provider's parser may have closed
    them; arguments sent as text that parse whole are complete, as an answer's text is);
    `context`: pydantic's validation context, everywhere."""
    cut = finish_reason == "length"
    chars = len(text) if isinstance(text, str) else 0
    elsewhere = bool(reasoning and reasoning.strip())
    ctx = _Context(target, cut, on_ambiguity, elsewhere, chars, context)
    try:
        result = _read(ctx, text, 0)
    except RecursionError:
        return _failure(text, "is nested too deeply to parse", "Reply with a flatter JSON value.")
    except Exception as exc:  # the never-throw guarantee: an L1 bug is a diagnostic, not a crash
        return _failure(
            text,
            f"could not be parsed ({describe_exception(exc)})",
            "Reply with only the JSON value, no prose or code fences.",
        )
    if elsewhere and Flag.REASONING_SET_ASIDE not in result.flags:  # as a `<think>` block is
        result = result.replace(flags=(Flag.REASONING_SET_ASIDE, *result.flags))
    if cut and result.ok:
        if from_tool:
            return ParseResult(
                result.value,
                (*result.flags, Flag.TRUNCATED),
                True,
                truncation_diagnostic(text if isinstance(text, str) else "", True),
                reasoning=result.reasoning,
            )
        return result.replace(flags=(*result.flags, Flag.TRUNCATED))
    return result


def _read(ctx: _Context, text: Any, depth: int) -> ParseResult:
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "replace")
    if text is None:
        text = ""
    if not isinstance(text, str):
        return _failure(
            repr(text)[:200], f"must be text, got {type(text).__name__}", "Reply with JSON text."
        )
    target = ctx.target
    charge(len(text))
    # Fast path: the whole reply is valid JSON (and, with a target, valid data). The JSON
    # parsers skip surrounding whitespace themselves, so a large reply is not copied by strip().
    if target is not None:
        try:
            instance = target.validate_json(text, strict=True, context=ctx.validation)
        except Exception:  # ValidationError, or a surrogate pydantic-core cannot encode
            pass
        else:  # the JSON data is only decoded if someone reads it
            if ctx.cut and _ends_bare(text):
                return _truncated(text, ctx, NOTHING, ())  # `12` may have been `123`
            if not left_out(target, instance):
                return ParseResult(instance=instance, lazy_text=text)
            return _settled(ctx, text, instance)
    try:
        whole = from_json(text)
    except Exception:
        whole = NOTHING
    if whole is not NOTHING and ctx.cut and _ends_bare(text):
        return _truncated(text, ctx, NOTHING, ())  # a number or literal touching the cut
    if whole is not NOTHING and target is None:
        return ParseResult(whole)
    stripped = text.strip()
    if not stripped:
        if ctx.cut or ctx.reasoning_elsewhere:  # reasoning spent the budget, or never ended
            return _truncated(text, ctx, NOTHING, (Flag.TRUNCATED,), reasoning_only=True)
        return ParseResult(error=empty())
    if whole is not NOTHING and target is not None:
        fitted = align(target, whole, ctx.validation)
        if fitted.ok:
            return _fitted(fitted, ())
        if isinstance(whole, str):
            if depth < _MAX_DEPTH and ("{" in whole or "[" in whole):
                inner = _read(ctx, whole, depth + 1)  # the reply encoded its text in a string
                if inner.valid:
                    return inner.replace(flags=(Flag.DOUBLE_ENCODED, *inner.flags))
            if is_scalar(target):  # `"ONE: the first"` for an enum: the string is text
                found = _scalar_of_text(ctx, whole.strip(), [])
                if found is not None:
                    return found
        return _failed(fitted, ())
    if depth < _MAX_DEPTH:
        segments = split_reasoning(stripped)
        if segments.found:
            answer = segments.answer.strip()
            if not answer:  # only reasoning: the answer was never written
                return _truncated(
                    text,
                    ctx,
                    NOTHING,
                    (Flag.REASONING_SET_ASIDE, Flag.TRUNCATED),
                    reasoning_only=True,
                    reasoning=segments.reasoning,
                    answer="",
                )
            inner = _read(ctx, answer, depth + 1)
            reasoning = "\n\n".join(r for r in (segments.reasoning, inner.reasoning) if r)
            flags = (Flag.REASONING_SET_ASIDE, *inner.flags)
            return inner.replace(flags=flags, reasoning=reasoning, answer=answer)
    return _slow_path(ctx, stripped)


def _settled(ctx: _Context, text: str, instance: Any) -> ParseResult:
    """A strictly valid reply whose value left a field at its default: a key of the text may be
    that field misspelled (`align.settled`)."""
    assert ctx.target is not None
    data = from_json(text)
    fitted = settled(ctx.target, data, Fit(instance, data), ctx.validation)
    if fitted.instance is instance:
        return ParseResult(instance=instance, lazy_text=text)
    return _fitted(fitted, ()) if fitted.ok else _failed(fitted, ())


def _slow_path(ctx: _Context, text: str) -> ParseResult:
    target = ctx.target
    # `"parcel is la`: the answer opens a string (its first character, or the first of the
    # fence that opens it) and never closes it: a cut string, never a value. A fence marker
    # further on (inside a string value) opens no answer.
    opening = text.lstrip()[:1]
    body = strip_fences(text) if opening in ("`", "~") else text.strip()
    if opening in ('"', "`", "~") and cut_string(body):
        fenced: tuple[Flag, ...] = (Flag.CODE_FENCE,) if opening != '"' else ()
        return _truncated(text, ctx, NOTHING, fenced)
    candidates = find_candidates(text)
    parsed: list[_Parsed] = []
    still_open: list[Candidate] = []
    complete: list[Candidate] = []
    budget = RepairBudget()
    for found in candidates:
        broken = not (found.complete or ctx.cut or found.fenced)  # a fence may be mis-paired
        candidate = (closed_despite_quotes(found) if broken else None) or found
        if candidate.complete:
            complete.append(candidate)
            value, flags = _parse_candidate(candidate, budget)
            if value is not NOTHING:
                parsed.append(_Parsed(candidate, value, flags))
        else:
            still_open.append(candidate)
    cut_off = left_open(still_open, [(item.candidate.start, item.candidate.end) for item in parsed])
    parsed = sorted(_outermost(parsed, complete), key=lambda item: item.candidate.start)
    several = (Flag.MULTIPLE_CANDIDATES,) if len(parsed) > 1 else ()
    # A structure left open at the end makes the reply cut, whatever came before it: a span
    # inside it is a piece of the cut answer (`{"name": "a"}` of a cut tree), never an answer
    # of its own, and a span before it is no answer either (the reply went on into JSON that
    # never closed), as in a reply cut by the token limit (`_unsafe_when_cut`)
    open_at_end = cut_off is not None
    residue = _last_residue(text) if ctx.cut else -1

    def usable(item: _Parsed) -> bool:
        return not (open_at_end or (ctx.cut and _unsafe_when_cut(item, residue, len(text))))

    if target is not None:
        fits: list[tuple[_Parsed, Fit]] = []
        failures: list[tuple[_Parsed, Fit]] = []
        for item in filter(usable, parsed):
            fitted = align(target, item.value, ctx.validation)
            (fits if fitted.ok else failures).append((item, fitted))
        if not open_at_end and not ctx.cut and is_scalar(target):
            return _scalar_reply(ctx, text, fits, failures, candidates)
        if fits:
            return _choose(ctx, text, fits, several)
        if ctx.cut and not parsed and cut_off is None and is_scalar(target):
            return _truncated(text, ctx, NOTHING, ())  # the text, its reading, is cut
        if not open_at_end and not ctx.cut and failures:
            item, fitted = min(failures, key=lambda pair: len(pair[1].errors))
            return _failed(fitted, (*_context_flags(item.candidate, text), *item.flags))
    else:
        answers = [item for item in parsed if usable(item)]
        if answers and not open_at_end:
            return _choose_untyped(ctx, text, answers, several)

    if ctx.cut and cut_off is None and parsed:
        # cut by the token limit and nothing trustworthy: the best reading is partial data
        first = parsed[0]
        return _truncated(text, ctx, first.value, (*_context_flags(first.candidate, text),))
    if cut_off is not None:
        flags = _context_flags(cut_off, text)
        return _truncated(text, ctx, _partial(cut_off), flags)
    return ParseResult(error=no_json(text, candidates))


# -- choosing the answer -----------------------------------------------------------------------


def _choose(
    ctx: _Context, text: str, fits: list[tuple[_Parsed, Fit]], several: tuple[Flag, ...]
) -> ParseResult:
    """One answer among the candidates that validate: identical ones are one answer; different
    ones are ambiguous (no value, unless the policy picks the first or the last)."""
    assert ctx.target is not None
    target = ctx.target
    keys = [answer_key(target, fitted.instance) for _, fitted in fits]
    distinct = list(dict.fromkeys(keys))
    if len(distinct) == 1:
        item, fitted = fits[0]
        return _fitted(fitted, (*_context_flags(item.candidate, text), *item.flags, *several))
    if ctx.on_ambiguity == "reask":
        values = [_decoded(key) for key in distinct]
        return ParseResult(
            flags=several,
            error=ambiguity(values, typed=True),
            candidates=tuple(values),
        )
    item, fitted = fits[0] if ctx.on_ambiguity == "first" else fits[-1]
    flags = (*_context_flags(item.candidate, text), *item.flags, *several, Flag.AMBIGUOUS_CHOICE)
    return _fitted(fitted, flags)


def _choose_untyped(
    ctx: _Context, text: str, parsed: list[_Parsed], several: tuple[Flag, ...]
) -> ParseResult:
    """Without a schema, the answer is an object if the reply holds one (a bracketed `[1]` in
    prose is a citation, not the answer), else an array, else any value; different answers of
    that kind are ambiguous."""
    for kind in (dict, list, object):
        answers = [item for item in parsed if isinstance(item.value, kind)]
        if answers:
            break
    keys = [_json_key(item.value) for item in answers]
    distinct = list(dict.fromkeys(keys))
    if len(distinct) > 1 and ctx.on_ambiguity == "reask":
        values = [answers[keys.index(key)].value for key in distinct]
        return ParseResult(
            flags=several, error=ambiguity(values, typed=False), candidates=tuple(values)
        )
    if len(distinct) == 1:
        item = _best_reading(list(answers))
        extra: tuple[Flag, ...] = ()
    else:
        item = answers[0] if ctx.on_ambiguity == "first" else answers[-1]
        extra = (Flag.AMBIGUOUS_CHOICE,)
    flags = (*_context_flags(item.candidate, text), *item.flags, *several, *extra)
    return ParseResult(item.value, flags)


def _best_reading(readings: list[_Parsed]) -> _Parsed:
    """Among readings of one answer: cleanly parsed over repaired, fenced over bare, longest."""
    return max(
        readings,
        key=lambda item: (
            Flag.SYNTAX_REPAIRED not in item.flags,
            item.candidate.fenced,
            len(item.candidate.text),
        ),
    )


def _json_key(value: Any) -> bytes:
    try:
        return to_json(value)
    except Exception:
        return repr(value).encode("utf-8", "replace")


def _decoded(key: bytes) -> Any:
    try:
        return from_json(key)
    except Exception:
        return key.decode("utf-8", "replace")


# -- candidates --------------------------------------------------------------------------------


def _parse_candidate(candidate: Candidate, budget: RepairBudget) -> tuple[Any, tuple[Flag, ...]]:
    body = candidate.text.strip()
    charge(len(body))
    try:
        return from_json(body), ()
    except Exception:
        pass
    if '\\"' in body:  # `{\"a\": 1}`: JSON encoded inside a JSON string, met outside one
        decoded = _decode_escaped(body)
        if decoded is not NOTHING:
            return decoded, (Flag.DOUBLE_ENCODED,)
    value = lenient_loads(body, budget)
    return value, ((Flag.SYNTAX_REPAIRED,) if value is not NOTHING else ())


def _decode_escaped(body: str) -> Any:
    """Decode JSON that was encoded inside a JSON string, one level at a time (up to 4)."""
    for _ in range(4):
        try:
            decoded = from_json(f'"{body}"')
        except Exception:
            return NOTHING
        if not isinstance(decoded, str):
            return NOTHING
        charge(len(decoded))
        try:
            return from_json(decoded)
        except Exception:
            body = decoded
    return NOTHING


def _outermost(parsed: list[_Parsed], complete: list[Candidate]) -> list[_Parsed]:
    """Drop candidates lying inside a complete bare span, read or not: they are pieces of it
    (a ``` inside a string value is content, not a fence; `{"x": "a, {"k": 1}` is one broken
    object, not the answer `{"k": 1}`)."""
    bare = sorted((c.start, c.end) for c in complete if not c.fenced)
    if not bare:
        return parsed

    def inside(candidate: Candidate) -> bool:
        span = (candidate.start, candidate.end)
        return any(s <= span[0] and span[1] <= e and (s, e) != span for s, e in bare)

    return [item for item in parsed if not inside(item.candidate)]


def _last_residue(text: str) -> int:
    """The offset of the last JSON-looking character in the reply (a bracket, a double quote,
    or a single quote followed by a colon): computed once per reply."""
    charge(len(text))
    last = max(text.rfind(char) for char in '{}[]"')
    for match in _QUOTE_COLON.finditer(text):
        last = max(last, match.start())
    return last


def _unsafe_when_cut(item: _Parsed, residue: int, end: int) -> bool:
    """In a reply cut by the token limit, a span is trusted only if it parsed strictly (a repair
    could be closing a cut structure), no JSON-looking text follows it (keys, brackets,
    quotes: it would be a piece of a longer, unfinished answer), and it does not run to the
    cut with a bare number or literal (the body of a fence left open: `12` of `123`)."""
    candidate = item.candidate
    return (
        Flag.SYNTAX_REPAIRED in item.flags
        or residue >= candidate.end
        or (candidate.end >= end and _ends_bare(candidate.text))
    )


def _partial(candidate: Candidate) -> Any:
    # a number or literal touching the cut may itself be cut (`12` of `125`): leave it out
    body = candidate.text if candidate.string_start is not None else _trim_cut_token(candidate.text)
    value = partial_loads(body)
    if value is NOTHING and candidate.string_start is not None:
        value = partial_loads(body[: candidate.string_start])  # a cut string: drop it
    return value


def _ends_bare(text: str) -> bool:
    """Whether valid JSON `text` ends with a number or a literal (not a closing quote or
    bracket): in a cut reply, a token that may itself be cut (walked back over the trailing
    whitespace only: no copy of the reply)."""
    i = len(text) - 1
    while i >= 0 and text[i] in " \t\r\n":
        i -= 1
    return i >= 0 and text[i] not in '"}]'


def _trim_cut_token(text: str) -> str:
    """`text` without the trailing whitespace and the word, number or literal touching the end
    (walked back character by character: linear, unlike a `[\\w.]+\\s*$` search)."""
    end = len(text.rstrip())
    i = end
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_.+-"):
        i -= 1
    charge(len(text) - i)
    return text[:i]


def _context_flags(candidate: Candidate, text: str) -> tuple[Flag, ...]:
    flags: list[Flag] = []
    before, after = text[: candidate.start], text[candidate.end :]
    charge(len(before) + len(after))
    bare_before, bare_after = _FENCE_MARKS.sub("", before), _FENCE_MARKS.sub("", after)
    if candidate.fenced or len(bare_before) + len(bare_after) != len(before) + len(after):
        flags.append(Flag.CODE_FENCE)
    if bare_before.strip() or bare_after.strip():
        flags.append(Flag.PROSE_AROUND)
    return tuple(flags)


# -- scalar targets (the rule is in `scalar.py`) -----------------------------------------------


def _scalar_reply(
    ctx: _Context,
    text: str,
    fits: list[tuple[_Parsed, Fit]],
    failures: list[tuple[_Parsed, Fit]],
    candidates: list[Candidate],
) -> ParseResult:
    """A reply that is not one JSON value, for a scalar target: its JSON values and its text
    read as the scalar, one value or none (`scalar.py`)."""
    target = ctx.target
    assert target is not None
    readings = [
        Reading(
            "a JSON value in the reply",
            item.candidate.start,
            fitted,
            item.flags,
            1,
            functools.partial(_context_flags, item.candidate, text),
        )
        for item, fitted in (*fits, *failures)
    ]
    for candidate in candidates:  # a fence that holds text, not JSON: its text is a reading
        fenced = candidate.fenced and candidate.complete
        reading = fenced and fence_text_reading(target, candidate.text, ctx.validation)
        if reading:
            where = functools.partial(_context_flags, candidate, text)
            readings.append(dataclasses.replace(reading, start=candidate.start, context=where))
    found = _scalar_of_text(ctx, text, readings)
    if found is not None:
        return found
    if failures:
        item, fitted = min(failures, key=lambda pair: len(pair[1].errors))
        return _failed(fitted, (*_context_flags(item.candidate, text), *item.flags))
    if len(text) > MAX_REPAIR_CHARS and candidates:
        return ParseResult(error=no_json(text, candidates))
    return ParseResult(error=not_found(target, text))


def _scalar_of_text(ctx: _Context, text: str, readings: list[Reading]) -> ParseResult | None:
    """`readings` and the text's own (unless the text, or the one fence that is all of it, is a
    JSON value: then that value is the reading), decided."""
    assert ctx.target is not None
    body = strip_fences(text)
    if body != text.strip() and _FENCE_MARKS.sub("", text.replace(body, "", 1)).strip():
        body = text.strip()  # prose around the fence: the text is the whole reply
    charge(len(body))
    try:
        from_json(body)
    except Exception:
        readings = [*readings, *text_readings(ctx.target, text, body, ctx.validation)]
    return decide(ctx.target, readings, ctx.on_ambiguity)


# -- results -----------------------------------------------------------------------------------


def _fitted(fitted: Fit, flags: Sequence[Flag]) -> ParseResult:
    return ParseResult(fitted.data, (*flags, *fitted.flags), instance=fitted.instance)


def _failed(fitted: Fit, flags: Sequence[Flag]) -> ParseResult:
    return ParseResult(fitted.data, (*flags, *fitted.flags), schema_errors=fitted.errors)


def _truncated(
    text: str,
    ctx: _Context,
    partial: Any,
    flags: Sequence[Flag],
    *,
    reasoning_only: bool = False,
    reasoning: str | None = None,
    answer: str | None = None,
) -> ParseResult:
    diagnostic = (
        only_reasoning(text, ctx.cut)
        if reasoning_only
        else truncation_diagnostic(text, ctx.cut, ctx.reply_chars)
    )
    return ParseResult(
        partial, (*flags, Flag.TRUNCATED), True, diagnostic, reasoning=reasoning, answer=answer
    )


def _failure(text: Any, constraint: str, prescription: str) -> ParseResult:
    shown = text if isinstance(text, str) else short_repr(text)
    diagnostic = Diagnostic(
        path=ROOT,
        value=shown,
        constraint=constraint,
        prescription=prescription,
        source=Source.SYNTAX,
    )
    return ParseResult(error=diagnostic)
