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

import dataclasses
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import to_json

from healjson import Contract, Flag, Usage, Violation, contract, parse
from healjson._frameworks.core import (
    ReadReply,
    ReplyReader,
    chat_usage,
    get_field,
    key_form,
    names_the_value,
)

__all__ = [
    "HEADER",
    "Answer",
    "LastRead",
    "chat_reader",
    "is_text_field",
    "lm_secrets",
    "lm_usage",
    "merge_flags",
    "model_name",
    "one_value_per_field",
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
    values: Mapping[str, tuple[Any, ...]] = dataclass_field(default_factory=dict)
    """Each field in `repeated` and its different values, in order."""

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


class LastRead:
    """What a `chat_reader` read last (`answer`: None for a text with no field header), for
    the rule that judges the same answer after it (`one_value_per_field`)."""

    __slots__ = ("answer",)

    def __init__(self) -> None:
        self.answer: Answer | None = None


def chat_reader(fields: Mapping[str, Any], last: LastRead | None = None) -> ReplyReader:
    """The reply reader of a signature's output fields (`fields`: name -> annotation): an
    answer in the chat format read as its objects (`ReadReply`, with its sections' local
    repairs); None for a text with no field header (a JSON answer: L1 reads it as it came).
    `last` (if given) keeps each answer it reads."""

    def read(text: str) -> ReadReply | None:
        found = read_answer(text, fields)
        if last is not None:
            last.answer = found
        return None if found is None else ReadReply(found.answers(), found.flags)

    return read


def one_value_per_field(last: LastRead) -> Contract[Any]:
    """The rule that a field given more than once says one thing: an answer whose sections
    give a field different values is asked again, whether or not each value would validate
    (the core judges several answers among those that fit the schema: a value that does not
    would be dropped, and the other taken silently). `last`: the answer's reading, kept by
    the healer's `chat_reader`."""

    @contract(name="one_value_per_field", description="each output field is given one value")
    def rule(_: Any) -> list[Violation]:
        found = last.answer
        if found is None:
            return []
        return [
            Violation(
                f"must be given once: the answer gave it {len(values)} different values "
                f"({'; '.join(_shown(value) for value in values)})",
                fields=(field,),
                path=field,
                value=list(values),
                prescription=f"Give `{field}` once, with its one final value.",
            )
            for field, values in found.values.items()
        ]

    return rule


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
        value, found = _value("\n".join(lines).strip(), fields[field], field)
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
    different = {
        field: tuple(value for _, value in values)
        for field, values in readings.items()
        if len(values) > 1
    }
    return Answer(objects, merge_flags(flags), tuple(different), different)


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


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _json(value: Any) -> str:
    return to_json(value, fallback=str).decode()


def _value(body: str, annotation: Any, name: str) -> tuple[Any, tuple[Flag, ...]]:
    """A section's value and the local repairs L1 applied to read it (a text field's section
    is its text, as written; a section L1 cannot read stays as its text, unflagged). The chat
    format writes every value as text: reading a section's text as its value
    (`text_as_value`) is the format, not a repair.

    A section is the value of the field `name`, not a whole answer: a one-key object in it
    stands for the value it wraps only under the rule the core applies inside an answer (an
    envelope word, the field's own name, ...: `names_the_value`). Under any other key
    (`{"b": 2}` in section `a`: the model gave another field's value, or said more of it) the
    section is the object as written, which the field's validation then judges."""
    if is_text_field(annotation):
        return body, ()
    found = parse(body, annotation)
    if found.error is not None:
        return body, ()
    if Flag.UNWRAPPED in found.flags:
        kept = _wrapper_kept(body, annotation, name, found.value)
        if kept is not None:
            return kept
    return found.value, _local(found.flags)


def _wrapper_kept(
    body: str, annotation: Any, name: str, value: Any
) -> tuple[Any, tuple[Flag, ...]] | None:
    """The section as the object it holds when L1 read it as the value a one-key object wraps
    whose key does not name the field's value (None: the unwrapping stands, or was deeper)."""
    plain = parse(body)
    if plain.error is not None or not isinstance(plain.value, dict) or len(plain.value) != 1:
        return None
    ((key, inner),) = plain.value.items()
    title = annotation.__name__ if _is_model(annotation) else ""
    if names_the_value(key, frozenset({key_form(name)}), False, inner, key_form(title)):
        return None
    unwrapped = parse(_json(inner), annotation)  # the top-level object was the one unwrapped
    if unwrapped.error is not None or unwrapped.value != value:
        return None
    return plain.value, _local(plain.flags)


def _local(flags: Iterable[Flag]) -> tuple[Flag, ...]:
    return tuple(flag for flag in flags if flag is not Flag.TEXT_AS_VALUE)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def lm_secrets(lm: Any, lm_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments a DSPy LM call carries (the LM's own, then the call's), as
    `secrets_scope`'s parameters: their credentials (`api_key`, ...) are what the run redacts
    wherever it keeps or emits the model's text."""
    own = getattr(lm, "kwargs", None)
    return {**(own if isinstance(own, Mapping) else {}), **lm_kwargs}


def model_name(current: Any, model: str) -> str:
    """The escalated model as DSPy names it: a bare name takes the LM's provider prefix
    (`openai/gpt-4o-mini` escalated to `gpt-4o`: `openai/gpt-4o`)."""
    prefix, slash, _ = str(current).partition("/")
    return f"{prefix}/{model}" if slash and "/" not in model else model


def lm_usage(raw: Any, model: str | None) -> Usage | None:
    """The tokens a DSPy LM response reported (DSPy's record of the call), read as a chat
    completion's usage (`chat_usage`), with the cache writes LiteLLM reports among the prompt's
    details; None when it reported none."""
    usage = chat_usage(raw, model)
    written = get_field(get_field(raw, "prompt_tokens_details"), "cache_creation_tokens")
    if usage is None or type(written) is not int or written <= 0:  # no count, or none written
        return usage
    return dataclasses.replace(usage, cache_write_tokens=written)
