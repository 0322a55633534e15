"""Split a reply into the model's reasoning and its answer, before L1 looks for candidates.

Reasoning models write a chain of thought first, and it often holds JSON-looking drafts; a draft
must never be taken as the answer. Recognised, case-insensitively:

- inline blocks `<think>…</think>`, `<thinking>…</thinking>`, `<reasoning>…</reasoning>` (an
  opening tag may carry attributes) and `[THINK]…[/THINK]`. An opening tag counts only at the
  start of a line (nothing but whitespace before it on its line), so a tag quoted inside a JSON
  string is text. A block that is never closed runs to the end of the reply: the model stopped
  (or was cut off) before answering.
- a closing tag with no opening tag, as the first tag of the reply: chat templates that put the
  opening tag in the prompt (DeepSeek-R1 and its distills) make the model's output start inside
  the block. Everything before it is reasoning. It counts only when followed by whitespace, the
  end of the text, a bracket or a fence (not a quote: then it is text inside a JSON string).
- the channels of OpenAI's harmony format (gpt-oss served raw): `analysis` and `commentary`
  are reasoning, `final` is the answer.

One pass over the tags (a bounded regex), so the cost is linear in the reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .meter import charge

__all__ = ["Segments", "split_reasoning"]

_TAG = re.compile(
    r"<(?P<close>/?)(?P<name>think|thinking|reasoning)(?:\s[^<>\n]{0,200})?>|\[(?P<bclose>/?)THINK\]",
    re.IGNORECASE,
)
_HARMONY = re.compile(r"<\|(?P<token>channel|message|end|return|call|start)\|>")
_CHANNEL_NAME = re.compile(r"\s*([A-Za-z]+)")
_AFTER_LONE_CLOSER = frozenset(" \t\r\n{[`~")
_LOOKBACK = 200  # how far back an opening tag's line start is looked for


@dataclass(frozen=True, slots=True)
class Segments:
    """A reply split into `answer` and `reasoning` (both "" when absent).

    `found` is True when reasoning was set aside; `unfinished` when a reasoning block never
    closed (the answer was never written).
    """

    answer: str
    reasoning: str = ""
    found: bool = False
    unfinished: bool = False


def split_reasoning(text: str) -> Segments:
    """The reply's answer and reasoning (see the module docstring for what counts)."""
    charge(len(text))
    if "<|channel|>" in text:
        return _harmony(text)
    if "<" not in text and "[" not in text:
        return Segments(text)
    answer: list[str] = []
    reasoning: list[str] = []
    pos = 0
    open_name: str | None = None
    open_end = 0
    seen = False
    for match in _TAG.finditer(text):
        closing = bool(match.group("close") or match.group("bclose"))
        name = (match.group("name") or "[think]").lower()
        if open_name is not None:
            if closing and name == open_name:
                reasoning.append(text[open_end : match.start()])
                pos = match.end()
                open_name = None
            continue
        if not closing and _at_line_start(text, match.start()):
            answer.append(text[pos : match.start()])
            open_name, open_end, seen = name, match.end(), True
        elif closing and not seen and _lone_closer(text, match.end()):
            reasoning.append(text[: match.start()])
            pos, seen = match.end(), True
    if open_name is not None:
        reasoning.append(text[open_end:])
        return Segments("".join(answer), _join(reasoning), True, unfinished=True)
    if not seen:
        return Segments(text)
    answer.append(text[pos:])
    return Segments("".join(answer), _join(reasoning), True)


def _at_line_start(text: str, i: int) -> bool:
    floor = max(i - _LOOKBACK, 0)
    newline = text.rfind("\n", floor, i)
    if newline < 0 and floor > 0:
        return False
    return not text[newline + 1 : i].strip()


def _lone_closer(text: str, end: int) -> bool:
    return end >= len(text) or text[end] in _AFTER_LONE_CLOSER


def _join(parts: list[str]) -> str:
    return "\n\n".join(part.strip() for part in parts if part.strip())


def _harmony(text: str) -> Segments:
    """Harmony channels: `<|channel|>NAME<|message|>…` up to `<|end|>`, `<|return|>`,
    `<|call|>` or the next `<|start|>` / `<|channel|>`. Without a `final` channel the reply holds
    reasoning only."""
    answer: list[str] = []
    reasoning: list[str] = []
    final = False
    channel: str | None = None
    body_start: int | None = None
    for token in _HARMONY.finditer(text):
        kind = token.group("token")
        if kind == "message":
            body_start = token.end() if channel is not None else None
            continue
        if channel is not None and body_start is not None:  # any other token ends the body
            (answer if channel == "final" else reasoning).append(text[body_start : token.start()])
            final = final or channel == "final"
        body_start = None
        name = _CHANNEL_NAME.match(text, token.end()) if kind == "channel" else None
        channel = name.group(1).lower() if name is not None else None
    if channel is not None and body_start is not None:
        (answer if channel == "final" else reasoning).append(text[body_start:])
        final = final or channel == "final"
    if not final:
        return Segments("", _join(reasoning), True, unfinished=True)
    return Segments("".join(answer), _join(reasoning), True)
