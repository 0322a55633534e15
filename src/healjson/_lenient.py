"""Syntax repair for one candidate: the json-repair library plus the slips it misses.

Only reached when the strict Rust parser has already said no, so its cost never touches the
happy path. Inputs above `MAX_REPAIR_CHARS` are declined (json-repair is pure Python, about
1 MB/s) rather than risking seconds of CPU on one reply.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from pydantic_core import from_json

from ._normalise import normalise

__all__ = ["MAX_REPAIR_CHARS", "NOTHING", "lenient_loads", "too_deep"]

MAX_REPAIR_CHARS: Final = 1_000_000


class _Nothing:
    """Sentinel: no value could be recovered (distinct from JSON null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Final = _Nothing()

# Typographic single quotes (U+2018/U+2019) used as string delimiters; json-repair keeps the
# closing one as part of the text. Only rewritten where JSON expects a key or a value.
_SMART_SINGLE = re.compile(r"(?<=[{\[,:])(\s*)\u2018([^\u2018\u2019\n]*)\u2019(?=\s*[:,}\]])")
# JavaScript's `undefined` means "no value"; json-repair would turn it into the string "undefined".
_JS_UNDEFINED = re.compile(r"(?<=[:\[,])(\s*)undefined(?=\s*[,}\]])")


# Python triple-quoted and JavaScript backtick strings: json-repair guesses wrongly on both
# (`"""print("hi")"""` became ""), so they are re-encoded as JSON strings first.
_TRIPLE = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', re.DOTALL)
_BACKTICK = re.compile(r"(?<=[:\[,])(\s*)`([^`]*)`(?=\s*[,}\]])")


# json-repair misreads a comment glued to a comma or bracket (`1,// note` became the string
# "1,/"); a space in between is read correctly. Strings are matched first and left untouched.
_GLUED_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|([,{\[])(?=//|/\*)')


def _unglue(match: re.Match[str]) -> str:
    return match.group(1) + " " if match.group(1) else match.group()


def _reencode(match: re.Match[str]) -> str:
    body = match.group(1) if match.group(1) is not None else match.group(2)
    return json.dumps(body, ensure_ascii=False)


_BRACKETS = re.compile(r"[\[\]{}]")
MAX_DEPTH = 200  # pydantic-core's own parser stops near here; json-repair slows down sharply


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when brackets (counted naively, strings included) nest deeper than `limit`."""
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def lenient_loads(text: str, *, max_chars: int = MAX_REPAIR_CHARS) -> Any:
    """Parse `text` leniently; return `NOTHING` when no JSON value can be recovered."""
    if len(text) > max_chars or too_deep(text):
        return NOTHING
    try:  # the common slips, rewritten exactly; only a strictly valid result is taken
        return from_json(normalise(text))
    except Exception:
        pass
    text = _SMART_SINGLE.sub(r'\1"\2"', text)
    text = _JS_UNDEFINED.sub(r"\1null", text)
    if "//" in text or "/*" in text:
        text = _GLUED_COMMENT.sub(_unglue, text)
    if '"""' in text or "'''" in text:
        text = _TRIPLE.sub(_reencode, text)
    if "`" in text:
        text = _BACKTICK.sub(
            lambda m: m.group(1) + json.dumps(m.group(2), ensure_ascii=False), text
        )
    try:
        import json_repair

        value = json_repair.repair_json(text, return_objects=True, skip_json_loads=True)
    except Exception:  # json-repair raises ValueError on deep nesting; any failure means "no"
        return NOTHING
    if value == "" and text.strip() not in ('""', "''"):
        return NOTHING
    return value
