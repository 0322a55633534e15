"""A JSON schema's string node as a hypothesis strategy: lengths, plain patterns, formats.

A plain pattern (literals, character classes and `.`, each optionally repeated) under length
bounds is drawn at a length within both: the total length is drawn first, within the bounds
and what the pattern's repeats allow together, and split across the repeats (the pattern's
fixed parts counted in), so no draw is thrown away. A long string (more than `_DRAWN`
characters in one repeat) is a short drawn run repeated to its length: hypothesis draws each
character of a string, and a string of thousands of them fails its health check ("the
smallest natural input is very large"). Hypothesis is imported when a strategy is built,
never when this module is imported.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ._numbers import DECIMAL, numbers

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy
    from pydantic import TypeAdapter

__all__ = ["plain_regex", "strings"]

_ALPHABET = 1024  # a character class of at most this many characters is drawn from as a string
_DRAWN = 32  # a repeat of at most this many characters draws each; a longer one repeats a run
_SPREAD = 32  # under length bounds, strings at most this many characters over the shortest

# One repeat of a plain pattern: its alphabet (a string, a `characters` strategy, or None for
# any character `text` draws), and how many times it repeats: at least, at most (None: any).
_Part = tuple[Any, int, int | None]


def strings(schema: dict[str, Any], zones: str | None) -> SearchStrategy[Any]:
    """The strings a string node allows: of its length (`minLength`, `maxLength`), matching
    its `pattern`, in its `format` (`zones`: see `_schema_data.zone_constraint`); a
    `Decimal`'s string branch as the numbers it allows. A format, or a pattern that is not
    plain, under length bounds is filtered to them (a pattern that is not Python's is left to
    the model's validation)."""
    from hypothesis import strategies as st

    if DECIMAL in schema:  # a Decimal's string branch: the numbers it allows, as strings
        return cast("SearchStrategy[Any]", numbers(schema, text=True))
    low = int(schema.get("minLength", 0) or 0)
    high = schema.get("maxLength")
    high = high if isinstance(high, int) else None
    formatted = _formatted(schema.get("format"), zones)
    pattern = schema.get("pattern")
    if formatted is not None:
        base = formatted
    elif isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error:  # an ECMA-only pattern: plain text, filtered by validation later
            return _text(low, high)
        plain = plain_regex(pattern, low, high)
        if plain is not None:
            return plain
        base = st.from_regex(pattern, fullmatch=True)
    else:
        return _text(low, high)
    if low == 0 and high is None:
        return base
    return base.filter(lambda s: low <= len(s) and (high is None or len(s) <= high))


def plain_regex(pattern: str, low: int = 0, high: int | None = None) -> SearchStrategy[str] | None:
    """Strings that fully match a plain pattern — literals, character classes (ranges and
    `\\d`) and `.`, each optionally repeated, between optional anchors (`^[A-Z]{3}-\\d{2}$`) —
    of `low` to `high` characters (nothing when no string of the pattern has such a length):
    a few `text` draws, each drawing its characters at once, where `from_regex` draws one
    character at a time (about half the cost per string). None for anything else (groups,
    alternatives, flags, negated classes, `\\w`, `\\s`, ...): `from_regex` draws those."""
    from hypothesis import strategies as st

    parts = _plain_parts(pattern)
    if parts is None:
        return None
    if low == 0 and high is None and all(least <= _DRAWN for _, least, _ in parts):
        drawn = [
            st.just(alphabet * least)
            if _fixed(alphabet) and least == most
            else st.text(alphabet, min_size=least, max_size=most)
            for alphabet, least, most in parts
        ]
        return st.tuples(*drawn).map("".join)
    return _within(parts, low, high)


def _text(low: int, high: int | None) -> SearchStrategy[str]:
    """Any text of `low` to `high` characters (a longer one than `_DRAWN`: a run repeated)."""
    from hypothesis import strategies as st

    if low <= _DRAWN:
        return st.text(min_size=low, max_size=high)
    return _within([(None, 0, None)], low, high)


def _plain_parts(pattern: str) -> list[_Part] | None:
    """The repeats of a plain pattern, in order; None when it is not plain."""
    try:  # the parser `re` compiles with (`from_regex` reads patterns with it too)
        sre = importlib.import_module("re._constants")
        parsed = importlib.import_module("re._parser").parse(pattern)
    except Exception:  # another Python's `re`
        return None
    if parsed.state.flags & ~re.UNICODE:
        return None
    items = list(parsed)
    if items[:1] in ([(sre.AT, sre.AT_BEGINNING)], [(sre.AT, sre.AT_BEGINNING_STRING)]):
        items = items[1:]
    if items[-1:] in ([(sre.AT, sre.AT_END)], [(sre.AT, sre.AT_END_STRING)]):
        items = items[:-1]
    parts: list[_Part] = []
    for op, av in items:
        least, most, item = 1, 1, (op, av)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            least, most, sub = av
            if len(sub) != 1:
                return None
            item = sub[0]
        alphabet = _regex_alphabet(item, sre)
        if alphabet is None:
            return None
        parts.append((alphabet, least, None if most == sre.MAXREPEAT else most))
    return parts


def _regex_alphabet(item: tuple[Any, Any], sre: Any) -> Any:
    """The characters one element of a plain pattern matches: a string, or a `characters`
    strategy for `.` and a class holding `\\d`; None when the element is not that plain."""
    from hypothesis import strategies as st

    op, av = item
    if op == sre.LITERAL:
        return chr(av)
    if op == sre.ANY:
        return st.characters(exclude_characters="\n")
    if op != sre.IN:
        return None
    chars: list[str] = []
    digits = False
    for kind, value in av:
        if kind == sre.LITERAL:
            chars.append(chr(value))
        elif kind == sre.RANGE and value[1] - value[0] < _ALPHABET:
            chars.extend(chr(code) for code in range(value[0], value[1] + 1))
        elif kind == sre.CATEGORY and value == sre.CATEGORY_DIGIT:
            digits = True
        else:  # a negation, `\w`, `\s`, a wide range
            return None
    text = "".join(dict.fromkeys(chars))
    if digits:  # any decimal digit, as `re` and pydantic read `\d` (and `from_regex` draws it)
        return st.characters(categories=["Nd"], include_characters=text)
    return text if 0 < len(text) <= _ALPHABET else None


def _fixed(alphabet: Any) -> bool:
    """An alphabet of one character: its repeats are known, nothing to draw."""
    return isinstance(alphabet, str) and len(alphabet) == 1


def _within(parts: list[_Part], low: int, high: int | None) -> SearchStrategy[str]:
    """Strings of `parts` (their repeats in order) of `low` to `high` characters: the length
    drawn first, from the lengths both allow (at most `_SPREAD` over the shortest), then
    split across the repeats; nothing when no length fits both."""
    from hypothesis import strategies as st

    shortest = max(low, sum(least for _, least, _ in parts))
    caps = [most for _, _, most in parts]
    longest = None if None in caps else sum(cast("list[int]", caps))
    if high is not None:
        longest = high if longest is None else min(longest, high)
    longest = shortest + _SPREAD if longest is None else min(longest, shortest + _SPREAD)
    if shortest > longest:
        return st.nothing()
    return _drawer()(tuple(parts), shortest, longest)


@functools.cache
def _drawer() -> Callable[[tuple[_Part, ...], int, int], SearchStrategy[str]]:
    """The composite strategy, built once (hypothesis inspects a composite's source when
    built)."""
    from hypothesis import strategies as st

    return st.composite(_draw_within)


def _draw_within(draw: DrawFn, parts: tuple[_Part, ...], shortest: int, longest: int) -> str:
    from hypothesis import strategies as st

    total = draw(st.integers(shortest, longest))
    spare = total - sum(least for _, least, _ in parts)
    # room each repeat has over its least, and all the repeats after it have together
    room = [None if most is None else most - least for _, least, most in parts]
    out: list[str] = []
    for index, (alphabet, least, _) in enumerate(parts):
        later = room[index + 1 :]
        after = None if None in later else sum(cast("list[int]", later))
        fewest = 0 if after is None else max(0, spare - after)
        most = spare if room[index] is None else min(spare, cast(int, room[index]))
        extra = fewest if fewest >= most else draw(st.integers(fewest, most))
        spare -= extra
        out.append(_run(draw, alphabet, least + extra))
    return "".join(out)


def _run(draw: DrawFn, alphabet: Any, count: int) -> str:
    """`count` characters of the alphabet: each drawn, or a drawn run repeated past
    `_DRAWN`."""

    if count == 0:
        return ""
    if _fixed(alphabet):
        return cast(str, alphabet) * count
    if count <= _DRAWN:
        return draw(_texts(alphabet, count, count))
    unit = draw(_texts(alphabet, 1, _DRAWN))
    return (unit * (count // len(unit) + 1))[:count]


def _texts(alphabet: Any, least: int, most: int) -> SearchStrategy[str]:
    """`text` of the alphabet (any character for None); hypothesis keeps the strategies it
    built for the same arguments, so this costs nothing after the first draw."""
    from hypothesis import strategies as st

    if alphabet is None:
        return st.text(min_size=least, max_size=most)
    return st.text(alphabet, min_size=least, max_size=most)


def _formatted(fmt: Any, zones: str | None) -> SearchStrategy[str] | None:
    import datetime as dt
    import uuid

    from hypothesis import strategies as st

    def dumped(type_: Any, values: SearchStrategy[Any]) -> SearchStrategy[str]:
        adapter = _adapter(type_)
        return values.map(lambda v: str(adapter.dump_python(v, mode="json")))

    formats: dict[str, Callable[[], SearchStrategy[str]]] = {
        "date": lambda: dumped(dt.date, st.dates()),
        "date-time": lambda: dumped(dt.datetime, _datetimes(zones)),
        "time": lambda: dumped(dt.time, st.times()),
        "duration": lambda: dumped(dt.timedelta, st.timedeltas()),
        "uuid": lambda: dumped(uuid.UUID, st.uuids()),
        "email": st.emails,
        "uri": lambda: st.from_regex(
            r"https://[a-z]{1,12}\.example/[a-z0-9/]{0,20}", fullmatch=True
        ),
        "ipv4": lambda: st.ip_addresses(v=4).map(str),
        "ipv6": lambda: st.ip_addresses(v=6).map(str),
    }
    make = formats.get(fmt) if isinstance(fmt, str) else None
    return make() if make is not None else None


def _datetimes(zones: str | None) -> SearchStrategy[Any]:
    """Datetimes: with an offset when `zones` is "aware", without one when "naive", else
    either (see `_schema_data.zone_constraint`)."""
    import datetime as dt

    from hypothesis import strategies as st

    if zones == "naive":
        return st.datetimes()
    offsets = st.integers(-23 * 60, 23 * 60).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
    aware = st.just(dt.UTC) | offsets
    return st.datetimes(timezones=aware if zones == "aware" else st.none() | aware)


@functools.cache
def _adapter(type_: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    return TypeAdapter(type_)
