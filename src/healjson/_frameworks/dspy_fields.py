"""A DSPy answer read field by field, before healjson judges it as one JSON object.

DSPy's chat format puts each output field under a header line (`[[ ## answer ## ]]`); a JSON
answer (the JSON adapter's, or a repair's) is one object. `read_answer` turns the first kind
into that object: each section under the field it names (a header in another case or with
other separators is the one field it can mean; the header is kept as written, so the core's
key alignment names it), a text field's section as its text, a typed field's section read by
L1 against the field's type (a code fence, prose around, a trailing comma, a JSON string,
keys in another case; `healjson.parse`). A section L1 cannot read stays as its text: the
field's validation then says why. A field no header names is left out (never invented).

A text field is what DSPy's own chat adapter reads as text: a `str` field, or a union that
holds `str` and `None` (`Optional[str]`); its section is the model's text, kept as written (a
code fence in it is part of the text, as in stock DSPy). The local repairs L1 applied to each
typed section are the answer's `flags`, as `healjson.parse` reports them for that section.

A field given twice is one answer when both sections read as the same value (flag
`multiple_candidates`); with different values the answer holds several: `objects` then has one
object per reading (the first values, ..., the last ones), and healjson judges them as it
judges any reply with several answers (`HealPolicy.on_ambiguity`: asked again by default).

`chat_reader` is the healer's reply reader (`Healer.with_reply_reader`): the run judges the
objects an answer's sections make, with their local repairs as the attempt's flags, and keeps
the model's text as the answer everywhere (attempts, events, spans, trace, repairs).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic_core import to_json

from healjson import Flag, parse
from healjson._frameworks.core import ReadReply, ReplyReader

__all__ = [
    "HEADER",
    "Answer",
    "chat_reader",
    "is_text_field",
    "merge_flags",
    "read_answer",
    "read_fields",
]

HEADER: Final = re.compile(r"\[\[ ?## ?(\w+) ?## ?\]\]")
"""A field's header line (matched at the start of a stripped line: linear, no backtracking)."""
_DONE: Final = "completed"  # the chat format's closing marker


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer in the chat format, read: `objects` (one object of output fields; several when
    a field was given more than once with different values), the local repairs applied to its
    sections (`flags`) and the fields given with different values (`repeated`)."""

    objects: tuple[dict[str, Any], ...]
    flags: tuple[Flag, ...] = ()
    repeated: tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        """True when a field was given more than once with different values."""
        return len(self.objects) > 1

    def text(self) -> str:
        """The answer as the text healjson judges: the object, or the objects one a line (a
        reply holding several answers)."""
        return "\n".join(self.answers())

    def answers(self) -> tuple[str, ...]:
        """Each object as JSON text."""
        return tuple(_json(found) for found in self.objects)


def is_text_field(annotation: Any) -> bool:
    """Whether DSPy's chat adapter keeps a field's section as its text: `str`, or a union of
    `str` and `None` (DSPy validates the text itself against it)."""
    if annotation is str:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        return str in members and type(None) in members
    return False


def merge_flags(*groups: Iterable[Flag]) -> tuple[Flag, ...]:
    """The flags of `groups`, each once, in the order first seen."""
    return tuple(dict.fromkeys(flag for group in groups for flag in group))


def read_fields(text: str, fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """The answer as one object of output fields (`fields`: name -> annotation), or None when
    it has no field header (then the text itself is the answer L1 reads). A field given with
    different values is read as its first value here (`read_answer` keeps every one)."""
    found = read_answer(text, fields)
    return None if found is None else found.objects[0]


def chat_reader(fields: Mapping[str, Any]) -> ReplyReader:
    """The reply reader of a signature's output fields (`fields`: name -> annotation): an
    answer in the chat format read as its objects (`ReadReply`, with its sections' local
    repairs); None for a text with no field header (a JSON answer: L1 reads it as it came)."""

    def read(text: str) -> ReadReply | None:
        found = read_answer(text, fields)
        return None if found is None else ReadReply(found.answers(), found.flags)

    return read


def read_answer(text: str, fields: Mapping[str, Any]) -> Answer | None:
    """The chat format's sections of `text` read against `fields` (name -> annotation); None
    when it has no field header (then the text itself is the answer L1 reads)."""
    sections = _sections(text)
    if sections is None:
        return None
    by_key: dict[str, list[str]] = {}
    for name in fields:
        by_key.setdefault(_key(name), []).append(name)
    headers: dict[str, str] = {}  # field -> its first header, as written
    readings: dict[str, list[tuple[bytes, Any]]] = {}  # field -> its different values
    flags: list[Flag] = []
    for header, lines in sections:
        field = header if header in fields else _only(by_key.get(_key(header), ()))
        if field is None or header == _DONE:
            continue
        value, found = _value("\n".join(lines).strip(), fields[field])
        flags.extend(found)
        seen = readings.setdefault(field, [])
        headers.setdefault(field, header)
        key = _json(value).encode()
        if any(key == known for known, _ in seen):
            flags.append(Flag.MULTIPLE_CANDIDATES)  # the same value again: one answer
            continue
        seen.append((key, value))
    count = max((len(values) for values in readings.values()), default=1)
    objects = tuple(
        {
            headers[field]: values[min(index, len(values) - 1)][1]
            for field, values in readings.items()
        }
        for index in range(count)
    )
    repeated = tuple(field for field, values in readings.items() if len(values) > 1)
    return Answer(objects, merge_flags(flags), repeated)


def _sections(text: str) -> list[tuple[str, list[str]]] | None:
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        found = HEADER.match(line.strip())
        if found is None:
            if sections:
                sections[-1][1].append(line)
            continue
        rest = line.strip()[found.end() :].strip()
        sections.append((found.group(1), [rest] if rest else []))
    return sections or None


def _key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _only(names: Any) -> str | None:
    return names[0] if len(names) == 1 else None


def _json(value: Any) -> str:
    return to_json(value, fallback=str).decode()


def _value(body: str, annotation: Any) -> tuple[Any, tuple[Flag, ...]]:
    """A section's value and the local repairs L1 applied to read it (a text field's section
    is its text, as written; a section L1 cannot read stays as its text, unflagged). The chat
    format writes every value as text: reading a section's text as its value
    (`text_as_value`) is the format, not a repair."""
    if is_text_field(annotation):
        return body, ()
    found = parse(body, annotation)
    if found.error is not None:
        return body, ()
    return found.value, tuple(flag for flag in found.flags if flag is not Flag.TEXT_AS_VALUE)
