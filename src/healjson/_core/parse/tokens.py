"""When an unquoted token is a value: the one rule the tolerant reader and `grounded` share.

A *bare token* is what a reply writes without quotes where a value belongs, up to the next
comma, bracket, brace, quote, comment or line break (spaces do not end it: `New York` is one
token, and so is `1 2 3`). It is a value only when the whole token is one:

1. **A literal**, spelled whole, in any case: JSON's `true`, `false`, `null`; Python's `True`,
   `False`, `None`; JavaScript's `undefined`, `NaN`, `Infinity`, `-Infinity`; `nil`.
2. **A number** in a form JSON, Python or JavaScript source writes: JSON's grammar (`-0.5`,
   `1e5`), with a `+` sign, a fraction without its leading zero (`.25`) and digit groups
   joined by single underscores (`82_461_110`, as Python and JavaScript write them: one
   meaning only). Not a number: leading zeros (`007`: an id or a grouped number, `1,000` read
   up to its comma), a point or an exponent without digits (`1.`, `1e`), any other grouping
   (`1.000.000`, `12 345`).
3. **A word**, read as the string it is (a schema that wants something else then refuses it):
   a token holding a letter that is neither of the above nor could have been one, that is,
   none of these:

   - a token without a letter (`-`, `.`, `$`, `1..2`, `1:`, `12 345`, `2024-01-02`, and
     `1e5e`: an `e` right after a digit is an exponent's, not a letter): digits, signs and
     punctuation are a number in a form not read here, or nothing;
   - an integer in a base other than ten as Python and JavaScript write it (`0x1F`, `0o17`,
     `0b101`): a number in a form not read here, whose letters are not a word's;
   - a literal or an exponent cut short: more than half of a literal's spelling that stops
     short of it (`tru`, `fals`, `nul`, `Non`, `undef`), a number whose exponent has no digits
     (`1e`, `2E+`): it may be that value, mistyped or cut. Less than that is too little of a
     literal to say it was meant, and is the word it is (`no`, `in`, `t`: for a boolean,
     pydantic reads `no` and `t` as it reads them quoted);
   - a literal of four letters or more mistyped by one slip of a key, in any case: a letter
     doubled (`truee`, `nulll`, `ffalse`) or two neighbours swapped (`Flase`, `ture`,
     `nlul`). No word is spelled so (`None` is left out: `noone` is one), and keeping it as
     the string it spells would keep a value the model did not mean;
   - values side by side (`1 2 3`, `true false`) or a value fused with punctuation (`true.`,
     `null;`): every space-separated part, its edge punctuation aside, is a value or a piece
     of one;
   - a part that begins or ends with a colon (`see: this`, `b:`): a key's colon, not text;
   - a part that begins or ends with a quote (`rock 'n'`, `abc'`): quoted and bare text
     mixed.

A token that is none of the three is refused: the reader gives the candidate up, and the engine
asks again rather than keep a value the model did not write. Keys are names, not values: an
unquoted key is its token as written.

This is linear: a token is split once and each part checked against fixed-size patterns.
"""

from __future__ import annotations

import re
from typing import Any, Final

from healjson._core.sentinels import NOTHING

__all__ = ["LITERALS", "REFUSED", "bare_value", "is_number_or_literal", "number"]

LITERALS: Final = {
    "true": True,
    "false": False,
    "null": None,
    "none": None,
    "nil": None,
    "undefined": None,
    "nan": float("nan"),
    "infinity": float("inf"),
    "-infinity": float("-inf"),
}
_CUT_LITERALS: Final = frozenset(  # more than half of a spelling, short of all of it
    spelling[:end] for spelling in LITERALS for end in range(len(spelling) // 2 + 1, len(spelling))
)
# JSON's and JavaScript's literals of four letters or more, a letter doubled or two neighbours
# swapped (what one slip of a key makes of them); not Python's `None` (`noone` is a word)
_SLIPPED_FROM: Final = ("true", "false", "null", "undefined", "infinity", "-infinity")
_SLIPPED: Final = (
    frozenset(
        slip
        for spelling in _SLIPPED_FROM
        for i in range(len(spelling))
        for slip in (
            spelling[: i + 1] + spelling[i:],  # the letter at i doubled
            spelling[:i] + spelling[i + 1 : i + 2] + spelling[i] + spelling[i + 2 :],  # swapped
        )
    )
    - LITERALS.keys()
    - {spelling[:end] for spelling in LITERALS for end in range(len(spelling))}
)
REFUSED: Final = NOTHING
"""What `bare_value` returns for a token that is no value."""

_DIGITS: Final = r"\d+(?:_\d+)*+"
_NUMBER: Final = re.compile(
    rf"[+-]?(?:(?:0|[1-9]\d*+(?:_\d+)*+)(?:\.{_DIGITS})?|\.{_DIGITS})(?:[eE][+-]?\d++)?"
)
_CUT_EXPONENT: Final = re.compile(r"[+-]?(?:\d++(?:\.\d*+)?|\.\d++)[eE][+-]?")
_PREFIXED: Final = re.compile(
    r"[+-]?0(?:[xX][0-9a-fA-F]++(?:_[0-9a-fA-F]++)*+|[oO][0-7]++(?:_[0-7]++)*+|[bB][01]++(?:_[01]++)*+)"
)
_QUOTES: Final = "\"'`\u201c\u201d\u2018\u2019"


def number(token: str) -> int | float | None:
    """The number `token` spells as a whole (rule 2), or None."""
    if len(token) > 400 or not _NUMBER.fullmatch(token):
        return None
    plain = token.replace("_", "")
    if "." in plain or "e" in plain or "E" in plain:
        return float(plain)
    return int(plain)


def is_number_or_literal(token: str) -> bool:
    """Whether the whole token is a literal or a number (rules 1 and 2)."""
    return token.casefold() in LITERALS or number(token) is not None


def bare_value(token: str) -> Any:
    """The value of a bare token (stripped), by the rules above, or `REFUSED`."""
    literal = token.casefold()
    if literal in LITERALS:
        return LITERALS[literal]
    value = number(token)
    if value is not None:
        return value
    if not _has_letter(token) or _value_like(token):
        return REFUSED
    parts = token.split()
    for part in parts:
        if part[0] in ":" + _QUOTES or part[-1] in ":" + _QUOTES:
            return REFUSED
    if all(_value_like(_core(part)) for part in parts):
        return REFUSED
    return token


def _core(part: str) -> str:
    """`part` without the punctuation at its edges (walked from each end: linear)."""
    start, end = 0, len(part)
    while start < end and not (part[start].isalnum() or part[start] == "_"):
        start += 1
    while end > start and not (part[end - 1].isalnum() or part[end - 1] == "_"):
        end -= 1
    return part[start:end]


def _value_like(part: str) -> bool:
    """A value, a piece of one, or no word at all: a literal or number, one cut short, or a
    part without a letter."""
    folded = part.casefold()
    return (
        not part
        or folded in LITERALS
        or folded in _CUT_LITERALS
        or folded in _SLIPPED
        or number(part) is not None
        or _CUT_EXPONENT.fullmatch(part) is not None
        or _PREFIXED.fullmatch(part) is not None
        or not _has_letter(part)
    )


def _has_letter(text: str) -> bool:
    """Whether `text` holds a letter other than an exponent's `e` (one right after a digit, or
    after a digit and a point: `1e5e`, `1.e3x.` hold none; `e5`, `3rd` do)."""
    for i, char in enumerate(text):
        if char.isalpha():
            if char not in "eE" or i == 0:
                return True
            before = text[i - 1]
            if not (before.isdigit() or (before == "." and i > 1 and text[i - 2].isdigit())):
                return True
    return False
