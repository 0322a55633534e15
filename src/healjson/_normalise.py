"""A strict-looking rewrite of the commonest JSON slips, tried before json-repair.

One regex pass (linear, strings matched first so their content is never touched) rewrites:
trailing commas, `//` `/* */` and line-start `#` comments, single-quoted strings, raw control
characters inside strings, Python / JavaScript literals (`True`, `False`, `None`, `undefined`)
and unquoted identifier keys. The result is used only if pydantic-core's strict parser then
accepts it — so this pass can make a reply parse exactly (keeping escapes and punctuation inside
strings that json-repair sometimes mangles), but can never make a result worse: anything it does
not turn into valid JSON goes to json-repair unchanged.
"""

from __future__ import annotations

import json
import re
from typing import Final

__all__ = ["normalise"]

_TOKEN: Final = re.compile(
    r"""
      (?P<dq>"(?:\\.|[^"\\])*")
    | (?P<sq>'(?:\\.|[^'\\\n])*')
    | (?P<comment>//[^\n]*|/\*(?:(?!\*/).)*\*/|(?:(?<=\n)|(?<=^))[ \t]*\#[^\n]*|(?<=[,\s])\#[^\n]*)
    | (?P<comma>,(?=(?:\s|//[^\n]*+|/\*(?:(?!\*/).)*\*/)*[}\]]))
    | (?P<literal>(?<![\w$.])(?:True|False|None|undefined)(?![\w$]))
    | (?P<key>(?:(?<=[{,\n])|(?<=\*/))\s*[A-Za-z_$][\w$]*(?=\s*:))
    """,
    re.DOTALL | re.VERBOSE,
)
_LITERALS: Final = {"True": "true", "False": "false", "None": "null", "undefined": "null"}
_CONTROL: Final = re.compile(r"[\x00-\x1f]")


def normalise(text: str) -> str:
    """The text with the slips above rewritten (it may still be invalid JSON)."""
    return _TOKEN.sub(_rewrite, text)


def _rewrite(match: re.Match[str]) -> str:
    kind = match.lastgroup
    token = match.group()
    if kind == "dq":
        if not _CONTROL.search(token):
            return token
        # a raw line break just before the closing quote is layout, not content (json-repair
        # reads it the same way); raw breaks inside the text are kept, escaped
        return _CONTROL.sub(_escape_control, token[:-1].rstrip(" \t\r\n") + '"')
    if kind == "sq":
        return _single_to_double(token)
    if kind in ("comment", "comma"):
        return ""
    if kind == "literal":
        return _LITERALS[token]
    stripped = token.lstrip()
    return f'{token[: len(token) - len(stripped)]}"{stripped}"'


def _escape_control(match: re.Match[str]) -> str:
    return json.dumps(match.group())[1:-1]


def _single_to_double(token: str) -> str:
    body = token[1:-1]
    # unescape \' and keep every other escape as it was; then re-encode for double quotes
    decoded = re.sub(r"\\(.)", lambda m: m.group(1) if m.group(1) in "'\"" else m.group(), body)
    decoded = decoded.replace('"', '\\"')
    return '"' + _CONTROL.sub(_escape_control, decoded) + '"'
