"""A JSON Schema's regular expressions run with a bound: a schema's `pattern` is untrusted code
over model text, and a backtracking one (`^(a|a)*$`) takes seconds per character added.

Patterns run in the `regex` package (Python `re`'s syntax and meaning) with its `timeout=`, out
of a time budget per validation: `PATTERN_BUDGET_S` for every pattern one value is checked
against, in all (`pattern_budget()` opens it; a search outside one gets a budget of its own). A
search the budget cuts short is neither a match nor a mismatch: `search` returns None, and the
keyword reports it as its own error (`pattern_timeout`, a diagnostic that names the pattern), so
a run still ends by its deadline however its schema's patterns backtrack. `regex`'s timeout is
checked while it works, so a search overshoots the budget by a few times at most.

A search cut short fails the whole value wherever it happens: a keyword that reads a
subschema's verdict (`not`, `oneOf`, `anyOf`, `if`, `contains`, `unevaluated*`) and saw one
reports the timeout instead of its own verdict (`not` would turn the unchecked pattern into a
pass); `cut_short_count()` tells a caller (the fast path) that one happened.

`re`'s meaning is kept where `regex` (its VERSION0) reads the same text differently
(`regex_pattern`): inside a character class a `[` is a literal (`[[:alpha:]]` is no POSIX
class), a `{` that is no `re` quantifier is a literal (`a{e<=1}` is no fuzzy match); `\\w`,
`\\d`, `\\s` and their negations, in a class or not, are the code points `re`'s own match
(str patterns without ASCII: `str.isalnum()` and `_`, `str.isdecimal()`, `str.isspace()`, in
this Python's Unicode version, not `regex`'s newer one), written out as ranges (found once per
process, when a pattern first uses them) and kept out of `regex`'s case folding; `\\b`/`\\B`
are boundaries of that `\\w` (`\\B` matches no empty text, as in `re` before 3.14); under
IGNORECASE a class or character that `re` folds otherwise than `regex` (`re`'s extra cases:
`i` with U+0131 and U+0130, `s` with U+017F, U+00B5 with U+03BC, ...) gets `re`'s folding. A
pattern `re` cannot compile matches nothing. Still `regex`'s own, not `re`'s:
a backreference under IGNORECASE (`regex` compares case folds, `re` lower cases: `(?i)(s)\\1`
matches "s" + U+017F in `regex` only), and under IGNORECASE a character outside a class written
as `\\N{...}` or as an octal escape (`(?i)\\151` misses U+0131, which `re` matches).

The keywords here replace `jsonschema`'s own where a pattern meets the data: `pattern` (string
values), `patternProperties` and `additionalProperties` beside it (property names).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Final

__all__ = [
    "PATTERN_BUDGET_S",
    "TIMEOUT_KEYWORD",
    "additional_properties_keyword",
    "cut_short_count",
    "pattern_budget",
    "pattern_keyword",
    "pattern_properties_keyword",
    "regex_pattern",
    "search",
]

PATTERN_BUDGET_S: Final = 0.1
"""Seconds of pattern matching one validation may spend, over all its patterns."""
TIMEOUT_KEYWORD: Final = "pattern_timeout"
"""The `validator` of the error a search cut short reports."""

# when the current validation's pattern budget runs out (a `time.monotonic()`), None: no budget
_ENDS: ContextVar[float | None] = ContextVar("healjson_pattern_budget", default=None)
_MIN_TIMEOUT_S: Final = 0.001
# searches cut short so far in this context, and the last one's pattern
_CUTS: ContextVar[tuple[int, str]] = ContextVar("healjson_pattern_cuts", default=(0, ""))


def cut_short_count() -> int:
    """How many searches the budget has cut short in this context so far (a count that grows
    while a validation runs means its verdict cannot be trusted)."""
    return _CUTS.get()[0]


@contextlib.contextmanager
def pattern_budget() -> Iterator[None]:
    """Every pattern searched inside shares one budget of `PATTERN_BUDGET_S` (an enclosing
    budget already open is kept: a validation inside another spends the outer one)."""
    if _ENDS.get() is not None:
        yield
        return
    token = _ENDS.set(time.monotonic() + PATTERN_BUDGET_S)
    try:
        yield
    finally:
        _ENDS.reset(token)


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    """`pattern` compiled by `regex` (None: it does not compile; `re` refuses it too, and the
    schema check has said so already where the schema says `format: regex`)."""
    import re
    import warnings

    import regex  # loaded with the first pattern

    try:
        with warnings.catch_warnings():  # `re`'s FutureWarning on set-like syntax: not ours
            warnings.simplefilter("ignore")
            re.compile(pattern)
        return regex.compile(regex_pattern(pattern), regex.VERSION0)
    except (re.error, regex.error, ValueError, TypeError, OverflowError, RecursionError):
        return None


def search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text` (`re.search`'s meaning); None when the
    budget ran out first (nothing can be said). A search once cut short is not tried again for
    the same text (a value is validated several times while L1 reads it: each would spend its
    budget again)."""
    compiled = _compiled(pattern)
    if compiled is None:
        return False
    if (pattern, text) in _CUT_SHORT:
        return _cut_short(pattern)
    ends = _ENDS.get()
    left = PATTERN_BUDGET_S if ends is None else ends - time.monotonic()
    if left <= 0:
        return _cut_short(pattern)
    try:
        return compiled.search(text, timeout=max(left, _MIN_TIMEOUT_S)) is not None
    except TimeoutError:
        if len(_CUT_SHORT) >= _MAX_CUT_SHORT:
            _CUT_SHORT.clear()
        _CUT_SHORT[(pattern, text)] = None
        return _cut_short(pattern)


def _cut_short(pattern: str) -> bool | None:
    """None (a search cut short), counted (`cut_short_count`)."""
    _CUTS.set((_CUTS.get()[0] + 1, pattern))
    return None


# (pattern, text) searches the budget cut short, remembered (bounded; emptied when full)
_CUT_SHORT: dict[tuple[str, str], None] = {}
_MAX_CUT_SHORT: Final = 256


def _timed_out(what: str, pattern: str) -> Any:
    from jsonschema.exceptions import ValidationError

    return ValidationError(
        f"{what} could not be checked against the pattern {pattern!r} within {PATTERN_BUDGET_S} s",
        validator=TIMEOUT_KEYWORD,
        validator_value=pattern,
    )


def pattern_keyword(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """`pattern`, bounded: a string that does not match (or that the budget could not check)."""
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    found = search(pattern, instance)
    if found is None:
        yield _timed_out("the string", pattern)
    elif not found:
        from jsonschema.exceptions import ValidationError

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def pattern_properties_keyword(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    """`patternProperties`, bounded: each property whose name a pattern matches is checked
    against that pattern's schema."""
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            found = search(pattern, name)
            if found is None:
                yield _timed_out(f"the property name {name!r}", pattern)
            elif found:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def additional_properties_keyword(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    """`additionalProperties`, its property names matched against `patternProperties` with the
    bound (without `patternProperties` it is `jsonschema`'s own)."""
    from jsonschema.exceptions import ValidationError
    from jsonschema.validators import Draft202012Validator

    patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
    if not isinstance(patterns, dict) or not validator.is_type(instance, "object"):
        # jsonschema's own keyword (the same function in every draft's validator table)
        own = Draft202012Validator.VALIDATORS["additionalProperties"]
        yield from own(validator, additional, instance, schema)
        return
    known = schema.get("properties")
    names = known if isinstance(known, dict) else {}
    extras = []
    for name in instance:
        if name in names:
            continue
        matched = False
        for pattern in patterns:
            found = search(pattern, name)
            if found is None:
                yield _timed_out(f"the property name {name!r}", pattern)
                matched = True  # not checked: not reported as extra as well
                break
            if found:
                matched = True
                break
        if not matched:
            extras.append(name)
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif additional is False and extras:
        listed = ", ".join(repr(name) for name in sorted(extras, key=str))
        shown = ", ".join(repr(pattern) for pattern in sorted(patterns))
        yield ValidationError(f"{listed} do not match any of the regexes: {shown}")


_JUDGING: Final = ("not", "oneOf", "anyOf", "if", "contains")
_JUDGING_MORE: Final = ("unevaluatedProperties", "unevaluatedItems")
"""The keywords that read a subschema's verdict instead of passing its errors on."""


@functools.lru_cache(maxsize=64)
def _own_keywords(meta_schema_id: str) -> Any:
    """The keyword functions of the `jsonschema` draft whose meta-schema is `meta_schema_id`."""
    from jsonschema import Draft202012Validator, validators

    found = validators.validator_for({"$schema": meta_schema_id}, default=Draft202012Validator)
    return found.VALIDATORS


def _judging(keyword: str) -> Any:
    """`keyword` as the validator's draft defines it (nothing where the draft has no such
    keyword), reporting a search cut short inside it as the value's error."""

    def bounded(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        meta = validator.META_SCHEMA if isinstance(validator.META_SCHEMA, dict) else {}
        own = _own_keywords(str(meta.get("$schema", ""))).get(keyword)
        if own is None:
            return
        before = _CUTS.get()[0]
        errors = list(own(validator, value, instance, schema) or ())
        count, pattern = _CUTS.get()
        if count == before:
            yield from errors
            return
        timed_out = [error for error in errors if error.validator == TIMEOUT_KEYWORD]
        yield from timed_out or [_timed_out("the value", pattern)]

    bounded.__name__ = f"bounded_{keyword}"
    return bounded


BOUNDED_KEYWORDS: Final = {
    "pattern": pattern_keyword,
    "patternProperties": pattern_properties_keyword,
    "additionalProperties": additional_properties_keyword,
    **{keyword: _judging(keyword) for keyword in (*_JUDGING, *_JUDGING_MORE)},
}
"""The keywords that replace `jsonschema`'s (see the module)."""


_QUANTIFIER_END: Final = frozenset("0123456789,")
_SETS: Final = frozenset("wWdDsS")  # the escapes that name a set of `re`'s own
_HEX: Final = {"x": 2, "u": 4, "U": 8}  # a character's escape: how many hex digits follow


def regex_pattern(pattern: str) -> str:
    """`pattern` (one `re` compiles) written so that `regex` (VERSION0) reads what `re` reads:
    a `[` inside a character class and a `{` that starts no `re` quantifier escaped; `\\w`,
    `\\d`, `\\s` (their negations, in a class or not) spelled as the code points `re`'s own
    match, `\\b`/`\\B` as lookarounds on that `\\w`; under IGNORECASE, a class or character
    `re` folds otherwise (`i` with U+0131 and U+0130, `s` with U+017F, ...) given `re`'s
    folding (module docstring).
    One pass, linear in the pattern."""
    out: list[str] = []
    flags = [_global_flags(pattern)]
    size = len(pattern)
    at = 0
    while at < size:
        char = pattern[at]
        now = flags[-1]
        if char == "\\":
            pair = pattern[at : at + 2]
            at += 2
            if "a" in now:  # `regex`'s ASCII sets are `re`'s; its `\\B` matches an empty text
                out.append("(?:\\B(?!\\A\\Z))" if pair == "\\B" else pair)
            elif pair[1:] in _SETS:
                out.append(f"(?-i:[{_set_body(pair[1])}])")
            elif pair in ("\\b", "\\B"):
                out.append(_boundary(pair == "\\b"))
            elif "i" in now and pair[1:] in _HEX and _odd(pattern[at : at + _HEX[pair[1]]]):
                end = at + _HEX[pair[1]]
                out.append(_class_text(False, pattern[at - 2 : end], pattern[at - 2 : end], ""))
                at = end
            else:
                out.append(pair)
        elif char == "[":
            at = _char_class(pattern, at, out, now)
        elif char == "{":
            end = _quantifier_end(pattern, at)
            out.append(pattern[at:end] if end else "\\{")
            at = end or at + 1
        elif char == "#" and "x" in now:  # a comment: to the end of the line
            end = pattern.find("\n", at)
            end = size if end < 0 else end
            out.append(pattern[at:end].replace("[", "\\[").replace("{", "\\{"))
            at = end
        elif char == "(":  # its head (flags, a name, a condition, a comment) as written
            end = _group_head(pattern, at)
            if not pattern.startswith(("(?#", "(?P="), at):
                flags.append(_group_flags(pattern, at, now))
            out.append(pattern[at:end])
            at = end
        else:
            if char == ")" and len(flags) > 1:
                flags.pop()
            folds = "i" in now and "a" not in now and char in _odd_cases()
            out.append(_class_text(False, char, char, "") if folds else char)
            at += 1
    return "".join(out)


def _char_class(pattern: str, at: int, out: list[str], flags: frozenset[str]) -> int:
    """Copy the class opening at `at` (as `re` reads it: a `]` first is a literal, a `[`
    anywhere is one, `\\w`... are `re`'s sets), escaping each `[` inside; where it ends."""
    start = at + 1
    negated = pattern.startswith("^", start)
    at = start + negated
    items: list[str] = []
    letters = ""
    first = True
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            pair = pattern[at : at + 2]
            if pair[1:] in _SETS and "a" not in flags:
                letters += pair[1]
            else:
                items.append(pair)
            at += 2
        elif char == "]" and not first:
            body = pattern[start + negated : at] if "i" in flags and "a" not in flags else ""
            out.append(_class_text(negated, "".join(items), body, letters))
            return at + 1
        else:
            items.append("\\[" if char == "[" else "\\]" if char == "]" else char)
            at += 1
        first = False
    out.append("[^" if negated else "[")  # no end: `re` refuses it
    out.extend(items)
    return at


def _class_text(negated: bool, items: str, body: str, letters: str) -> str:
    """The class `[items]` (`[^items]`) with `re`'s sets `letters` in it, for `regex`: the
    sets as explicit code points, out of `regex`'s case folding; `body` (the class as written,
    when IGNORECASE holds): the characters `re` folds otherwise added or taken away."""
    items = "\\" + items if items.startswith("^") else items
    added, taken = _fold_fix(body, items, letters) if body and items else ("", "")
    items += added
    own = _set_body(letters) if letters else ""
    if not own and not taken:
        return f"[^{items}]" if negated else f"[{items}]"
    if negated:
        core = f"[^{items}]" if not own else f"(?!(?-i:[{own}]))[^{items}]" if items else ""
        core = core or f"(?-i:[^{own}])"
        return f"(?:(?-i:[{taken}])|{core})" if taken else f"(?:{core})"
    mine = f"(?!(?-i:[{taken}]))[{items}]" if taken else f"[{items}]" if items else ""
    return f"(?:{'|'.join(part for part in (mine, own and f'(?-i:[{own}])') if part)})"


@functools.lru_cache(maxsize=256)
def _fold_fix(body: str, items: str, letters: str) -> tuple[str, str]:
    """Which characters `re` (with `(?i:[body])`) matches and `regex` (with `(?i:[items])`
    and the sets `letters`) does not, and the reverse: (added, taken), as class text."""
    import re
    import warnings

    import regex

    odd = sorted(_odd_cases())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = re.compile(f"(?i:[{body}])")
    own = re.compile(f"[{_set_body(letters)}]") if letters else None

    def ours(spelled: str) -> set[str]:
        found = regex.compile(f"(?i:[{spelled}])", regex.VERSION0)
        return {char for char in odd if found.match(char) or (own and own.match(char))}

    wanted = {char for char in odd if theirs.match(char)}
    added = "".join(_code(ord(char)) for char in sorted(wanted - ours(items)))
    taken = "".join(_code(ord(char)) for char in sorted(ours(items + added) - wanted))
    return added, taken


def _boundary(word: bool) -> str:
    """`\\b` (`word`) or `\\B` as `re` reads them: between a `re` `\\w` and a non-`\\w` (the
    ends count as non-`\\w`); `re`'s `\\B` (before Python 3.14) never matches an empty text."""
    w = f"[{_set_body('w')}]"
    if word:
        return f"(?-i:(?<={w})(?!{w})|(?<!{w})(?={w}))"
    return f"(?-i:(?<={w})(?={w})|(?<!{w})(?!{w})(?!\\A\\Z))"


@functools.lru_cache(maxsize=64)
def _set_body(letters: str) -> str:
    """The code points of `re`'s sets `letters` (`\\w`, `\\W`, `\\d`, `\\D`, `\\s`, `\\S`),
    together, as the inside of a class (ranges)."""
    spans = sorted(span for letter in set(letters) for span in _spans(letter))
    merged: list[list[int]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    return "".join(_code(low) + (f"-{_code(high)}" if high > low else "") for low, high in merged)


@functools.lru_cache(maxsize=8)
def _spans(letter: str) -> tuple[tuple[int, int], ...]:
    """The code points `re`'s own `\\<letter>` matches (str patterns, no ASCII flag: `\\w` is
    `str.isalnum()` and `_`, `\\d` `str.isdecimal()`, `\\s` `str.isspace()`), as ranges; found
    once per process, by `re` itself, when a pattern first needs them."""
    import re

    if letter.isupper():  # `\\W`, `\\D`, `\\S`: the others
        ends = [-1, *(end for span in _spans(letter.lower()) for end in span), sys.maxunicode + 1]
        pairs = zip(ends[::2], ends[1::2], strict=True)
        return tuple((low + 1, high - 1) for low, high in pairs if high - low > 1)
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    return tuple((found.start(), found.end() - 1) for found in re.finditer(f"\\{letter}+", every))


def _code(code: int) -> str:
    """The code point `code` as an escape both `re` and `regex` read."""
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


@functools.cache
def _odd_cases() -> frozenset[str]:
    """The characters `re` and `regex` may fold differently under IGNORECASE: those of `re`'s
    table of extra cases (`i` and U+0131, `s` and U+017F, ...: same upper case, different
    lower), their upper cases, and every character that case-maps onto one (U+0130)."""
    import importlib

    extra: dict[int, tuple[int, ...]] = getattr(
        importlib.import_module("re._casefix"), "_EXTRA_CASES", {}
    )
    seeds = {chr(code) for key, more in extra.items() for code in (key, *more)}
    seeds |= {seed.upper() for seed in seeds}
    maps = (str.lower, str.upper, str.casefold)
    chars = map(chr, range(0x20000))  # no cased character lies above
    return frozenset(char for char in chars if any(fold(char)[:1] in seeds for fold in maps))


def _odd(digits: str) -> bool:
    """Whether the hex `digits` of a character's escape name one of `_odd_cases()`."""
    try:
        return chr(int(digits, 16)) in _odd_cases()
    except (ValueError, OverflowError):
        return False


def _quantifier_end(pattern: str, at: int) -> int:
    """Where the `re` quantifier `{m}`, `{m,}`, `{,n}`, `{m,n}` (`{,}`) opening at `at` ends;
    0: the `{` is a literal."""
    end = at + 1
    commas = 0
    while end < len(pattern) and pattern[end] in _QUANTIFIER_END:
        commas += pattern[end] == ","
        end += 1
    if end == at + 1 or commas > 1 or not pattern.startswith("}", end):
        return 0
    return end + 1


def _global_flags(pattern: str) -> frozenset[str]:
    """The flags among ASCII (`a`), IGNORECASE (`i`), VERBOSE (`x`) that hold for the whole
    pattern (its leading `(?aix)`), as `re` reads them."""
    import re
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = re.compile(pattern).flags
    except (re.error, ValueError, TypeError, OverflowError, RecursionError):
        return frozenset()
    named = (("a", re.ASCII), ("i", re.IGNORECASE), ("x", re.VERBOSE))
    return frozenset(letter for letter, flag in named if found & flag)


def _group_head(pattern: str, at: int) -> int:
    """Where the head of the group opening at `at` ends: its `(?` and flags, its name
    (`(?P<name>`, `(?P=name)`), its condition (`(?(1)`) or the whole comment (`(?#...)`)."""
    if not pattern.startswith("(?", at):
        return at + 1
    if pattern.startswith(("(?P", "(?(", "(?#"), at):
        end = pattern.find(">" if pattern.startswith("(?P<", at) else ")", at + 2)
        return len(pattern) if end < 0 else end + 1
    end = at + 2
    while end < len(pattern) and (pattern[end].isalpha() or pattern[end] == "-"):
        end += 1
    return end


def _group_flags(pattern: str, at: int, flags: frozenset[str]) -> frozenset[str]:
    """The flags that hold inside the group opening at `at` (`(?x:...)`, `(?-i:...)`)."""
    if not pattern.startswith("(?", at):
        return flags
    end = at + 2
    while end < len(pattern) and (pattern[end].isalpha() or pattern[end] == "-"):
        end += 1
    if not pattern.startswith(":", end) or end == at + 2:
        return flags
    on, _, off = pattern[at + 2 : end].partition("-")
    now = (flags | set(on)) - set(off)
    return now - {"a"} if "u" in on else now
