"""`corrupted(value)`: a value rendered the way language models break JSON (`Corruption`)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from healjson._core.target.target import Target, target_for

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

from ._schema_data import as_instance, require_hypothesis
from ._written import written

__all__ = ["KINDS", "Corruption", "corrupted", "model_data"]

KINDS: tuple[str, ...] = (
    "fence",
    "prose_before",
    "prose_after",
    "trailing_comma",
    "line_comment",
    "block_comment",
    "single_quotes",
    "python_literals",
    "unquoted_keys",
    "pretty",
    "truncated",
)
"""Every corruption kind `corrupted` can apply, in the order they are listed on a `Corruption`."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RESERVED = frozenset({"true", "false", "null", "True", "False", "None", "undefined", "NaN"})
_PROSE_BEFORE = (
    "Here is the JSON:",
    "Sure! Here's the result:",
    "Answer:",
    "Of course. The extracted data follows.",
)
_PROSE_AFTER = (
    "Let me know if you need anything else.",
    "Hope this helps!",
    "All fields are filled in.",
)
_COMMENT_TEXT = (
    "note",
    "computed from the input",
    "see above",
    "see [1]",  # brackets and quotes in comments are text, not structure
    "kept {as given}",
    'the customer\'s "id"',
)


# --- corruptions ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Corruption:
    """A value rendered the way a language model breaks JSON.

    `text` is the reply, `kinds` the corruptions applied (names from `KINDS`), `finish_reason`
    what the provider would report (`"length"` for a truncated reply), `recoverable` whether L1
    must recover it (False for truncation: L1 must refuse a cut-off reply) and `expected` the JSON
    data it must recover.

    For a truncated reply `expected` is the data before the cut: what a reader of the cut text
    can know, which is what healjson's `Degraded.partial` holds. Each container opened before
    the cut, closed there, holding the members complete before it: a string whose closing quote
    came before the cut; a number or literal (`true`, `None`, ...) once a comma, a closing
    bracket or a comment (`//`, `/*`) follows it (whitespace alone does not end one: a model may
    be writing a longer word; `12` may be the start of `125`); an object's member once its value
    is. A cut string, number or literal, a key with no value yet, and every member after them,
    are left out (`{"a": [1, 2,` expects `{"a": [1, 2]}`; `{"a": [1, 2` expects `{"a": [1]}`).
    """

    text: str
    kinds: tuple[str, ...]
    finish_reason: str | None
    recoverable: bool
    expected: Any


def corrupted(value: Any, *, model: Any = None) -> SearchStrategy[Corruption]:
    """Renderings of `value` (a model instance or JSON data) the way language models break JSON.

    Kinds (see `KINDS`), drawn in combinations: a markdown code fence (```` ```json ```` or a bare
    ```` ``` ````), prose before and after, trailing commas, `//` and `/* */` comments, single
    quotes (only for strings with no quotes, backslashes or control characters), Python literals
    `True`/`False`/`None`, unquoted keys (plain identifiers only), pretty-printing — and
    truncation: the reply cut strictly inside the JSON value, with `finish_reason="length"` and
    `recoverable=False`. A top-level scalar is only ever fenced. `model` (a pydantic model or any
    type pydantic validates) serialises `value` the way L1 will read it: with field aliases.
    The JSON is what a model writes for `value`: every field, a `SecretStr` as its secret
    value, a `Field(exclude=True)` field included (pydantic's own dump masks the one and
    leaves out the other).
    Raises at once if `value` cannot be turned into JSON data.
    """
    require_hypothesis()

    data = _json_data(value, model)
    return _renderings()(data, _applicable(data))


@functools.cache
def _renderings() -> Callable[[Any, tuple[str, ...]], SearchStrategy[Corruption]]:
    """The composite strategy, built once (hypothesis inspects a composite's source when built)."""
    from hypothesis import strategies as st

    return st.composite(_draw_corruption)


def _draw_corruption(draw: DrawFn, data: Any, applicable: tuple[str, ...]) -> Corruption:
    from hypothesis import strategies as st

    parts = _parts()
    kinds = set(draw(_kind_sets(applicable)))
    indent = draw(parts.indents) if "pretty" in kinds else 0
    spaced = draw(parts.booleans) if not indent else False
    renderer = _Renderer(kinds, indent, spaced, draw)
    body, written = renderer.render(data)
    before = after = ""
    if "fence" in kinds:
        lang = draw(parts.fence_langs)
        before, after = f"```{lang}\n", "\n```"
    if "prose_before" in kinds:
        gap = draw(parts.gaps)
        before = draw(parts.prose_before) + gap + before
    if "prose_after" in kinds:
        gap = draw(parts.gaps)
        after = after + gap + draw(parts.prose_after)
    applied = renderer.applied | (kinds & {"fence", "prose_before", "prose_after", "pretty"})
    if "truncated" in kinds:
        cut = draw(st.integers(1, len(body) - 1))  # strictly inside the value
        ordered = tuple(k for k in KINDS if k in applied or k == "truncated")
        known = _before_cut(written, body, cut, 0)
        return Corruption(before + body[:cut], ordered, "length", False, known)
    ordered = tuple(k for k in KINDS if k in applied)
    finish = draw(parts.finish_reasons)
    return Corruption(before + body + after, ordered, finish, True, data)


@dataclass(frozen=True, slots=True)
class _Parts:
    """The strategies every rendering draws from, built once (hypothesis validates and labels a
    strategy the first time it is drawn from: one built per draw pays for that every time)."""

    booleans: SearchStrategy[bool]
    indents: SearchStrategy[int]
    fence_langs: SearchStrategy[str]
    gaps: SearchStrategy[str]
    prose_before: SearchStrategy[str]
    prose_after: SearchStrategy[str]
    finish_reasons: SearchStrategy[str | None]
    comment_text: SearchStrategy[str]
    comment_kinds: dict[tuple[str, ...], SearchStrategy[str]]


@functools.cache
def _parts() -> _Parts:
    from hypothesis import strategies as st

    comments = [("block_comment",), ("line_comment",), ("block_comment", "line_comment")]
    return _Parts(
        booleans=st.booleans(),
        indents=st.sampled_from((2, 4)),
        fence_langs=st.sampled_from(("json", "")),
        gaps=st.sampled_from(("\n", "\n\n", " ")),
        prose_before=st.sampled_from(_PROSE_BEFORE),
        prose_after=st.sampled_from(_PROSE_AFTER),
        finish_reasons=st.sampled_from((None, "stop")),
        comment_text=st.sampled_from(_COMMENT_TEXT),
        comment_kinds={kinds: st.sampled_from(kinds) for kinds in comments},
    )


@functools.cache
def _kind_sets(applicable: tuple[str, ...]) -> SearchStrategy[list[str]]:
    from hypothesis import strategies as st

    return st.lists(st.sampled_from(applicable), min_size=1, unique=True)


def _json_data(value: Any, model: Any) -> Any:
    if model is None and isinstance(value, BaseModel):
        model = type(value)
    if model is None:
        data = written(value, to_jsonable_python(value))
    else:
        target = target_for(model)
        data = model_data(target, as_instance(target, value))
    json.dumps(data, allow_nan=True)  # fail now, not inside a strategy, on data JSON cannot hold
    return data


def model_data(target: Target[Any], instance: Any) -> Any:
    """The JSON data a model writes for `instance` (`written`): the target's dump by alias, every
    secret with its value and every excluded field put back."""
    return written(instance, target.adapter.dump_python(instance, mode="json", by_alias=True))


def _applicable(data: Any) -> tuple[str, ...]:
    if not isinstance(data, dict | list):
        return ("fence",)  # prose, comments or quotes around a bare scalar are not recoverable
    kinds = ["fence", "prose_before", "prose_after", "line_comment", "block_comment", "pretty"]
    strings, keys, literals, filled = _inventory(data)
    if filled:
        kinds.append("trailing_comma")
    if any(_quotable(s) for s in (*strings, *keys)):
        kinds.append("single_quotes")
    if literals:
        kinds.append("python_literals")
    if any(_bare_key(k) for k in keys):
        kinds.append("unquoted_keys")
    if len(json.dumps(data)) > 2:
        kinds.append("truncated")  # needs a character strictly inside the value
    return tuple(k for k in KINDS if k in kinds)


def _inventory(data: Any) -> tuple[list[str], list[str], bool, bool]:
    """Strings, keys, whether there is a bool or null, and whether a container is non-empty."""
    strings: list[str] = []
    keys: list[str] = []
    literals = False
    filled = False
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            filled = filled or bool(node)
            keys.extend(str(k) for k in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            filled = filled or bool(node)
            stack.extend(node)
        elif isinstance(node, str):
            strings.append(node)
        elif node is None or isinstance(node, bool):
            literals = True
    return strings, keys, literals, filled


def _quotable(text: str) -> bool:
    """Safe to single-quote: nothing that would need escaping or could end the string early."""
    return not any(c in "'\"\\" or ord(c) < 0x20 or c in "\u2018\u2019" for c in text)


def _bare_key(key: str) -> bool:
    return bool(_IDENTIFIER.match(key)) and key not in _RESERVED


class _Renderer:
    """Writes JSON data with the chosen corruptions, drawing where optional ones go."""

    def __init__(self, kinds: set[str], indent: int, spaced: bool, draw: DrawFn) -> None:
        parts = _parts()
        self.kinds = kinds
        self.indent = indent
        self.spaced = spaced
        self.draw = draw
        self.booleans = parts.booleans
        self.comments = tuple(k for k in ("block_comment", "line_comment") if k in kinds)
        self.comment_choice = parts.comment_kinds.get(self.comments)
        self.comment_text = parts.comment_text
        self.applied: set[str] = set()

    def render(self, data: Any) -> tuple[str, _Written]:
        """The text, and where each of its values ends in it (`_Written`)."""
        return self._value(data, 0)

    def _value(self, node: Any, depth: int) -> tuple[str, _Written]:
        if isinstance(node, dict):
            colon = ": " if self.indent or self.spaced else ":"
            items: list[_Item] = []
            for k, v in node.items():
                key = self._key(str(k)) + colon
                text, written = self._value(v, depth + 1)
                items.append((key + text, str(k), len(key), written))
            return self._container("{", "}", items, depth, keyed=True)
        if isinstance(node, list):
            elements: list[_Item] = []
            for v in node:
                text, written = self._value(v, depth + 1)
                elements.append((text, None, 0, written))
            return self._container("[", "]", elements, depth, keyed=False)
        if node is None or isinstance(node, bool):
            if "python_literals" in self.kinds:
                self.applied.add("python_literals")
                text = repr(node)
            else:
                text = json.dumps(node)
            return text, _Written(len(text), True, node, None)
        if isinstance(node, str):
            text = self._string(node)
            return text, _Written(len(text), False, node, None)
        text = json.dumps(node, allow_nan=True)
        return text, _Written(len(text), True, node, None)

    def _string(self, text: str) -> str:
        if "single_quotes" in self.kinds and _quotable(text):
            self.applied.add("single_quotes")
            return f"'{text}'"
        return json.dumps(text, ensure_ascii=False)

    def _key(self, key: str) -> str:
        if "unquoted_keys" in self.kinds and _bare_key(key):
            self.applied.add("unquoted_keys")
            return key
        return self._string(key)

    def _container(
        self, opener: str, closer: str, items: list[_Item], depth: int, *, keyed: bool
    ) -> tuple[str, _Written]:
        top = depth == 0
        inner = "\n" + " " * (self.indent * (depth + 1)) if self.indent else ""
        outer = "\n" + " " * (self.indent * depth) if self.indent else ""
        comma = ", " if self.spaced else ","
        out = [opener, self._comment(forced="block_comment" if top else None)]
        at = len(out[0]) + len(out[1])
        members: list[tuple[str | None, int, _Written]] = []
        for index, (item, key, key_size, shape) in enumerate(items):
            if index:
                out.append(comma + self._comment())
                at += len(out[-1])
            members.append((key, at + len(inner) + key_size, shape))
            out.append(inner + item)
            at += len(out[-1])
        # the first non-empty container always gets a trailing comma; later ones maybe
        first = "trailing_comma" not in self.applied
        if items and "trailing_comma" in self.kinds and (first or self.draw(self.booleans)):
            self.applied.add("trailing_comma")
            out.append(",")
        out.append(self._comment(forced="line_comment" if top else None))
        out.append(outer + closer)
        text = "".join(out)
        return text, _Written(len(text), False, {} if keyed else [], tuple(members))

    def _comment(self, forced: str | None = None) -> str:
        """A comment at this slot: always the `forced` kind when it is enabled, else drawn."""
        if forced in self.comments:
            kind: str | None = forced
        elif self.comment_choice is not None and self.draw(self.booleans):
            kind = self.draw(self.comment_choice)
        else:
            kind = None
        if kind is None:
            return ""
        self.applied.add(kind)
        text = self.draw(self.comment_text)
        if kind == "block_comment":
            return f" /* {text} */ " if self.spaced or self.indent else f"/* {text} */"
        return f" // {text}" if self.indent else f"// {text}\n"


# --- the data before a cut -----------------------------------------------------------------------

# one member as rendered: its text (key and value), its key (None in a list), the size of the
# key and colon before its value, and where its value's own parts end
_Item = tuple[str, str | None, int, "_Written"]


@dataclass(frozen=True, slots=True)
class _Written:
    """Where a rendered value ends, relative to where it starts: a scalar's `value` and whether
    it is written `bare` (a number or literal, which only what follows it ends); a container's
    `members` (its key, where its value starts, relative to the container's start)."""

    end: int
    bare: bool
    value: Any
    members: tuple[tuple[str | None, int, _Written], ...] | None


_ENDS_A_TOKEN = (",", "]", "}", "//", "/*")


def _before_cut(written: _Written, body: str, cut: int, start: int) -> Any:
    """The data a reader of `body[:cut]` knows of the value written at `start` (opened before
    the cut), as `Corruption.expected` describes it; `_CUT` when it knows none of it."""
    if written.members is None:
        end = start + written.end
        if end > cut:
            return _CUT
        if written.bare and not body[end:cut].lstrip().startswith(_ENDS_A_TOKEN):
            return _CUT  # `12` at the cut may be the start of `125`
        return written.value
    known: dict[str, Any] | list[Any] = {} if isinstance(written.value, dict) else []
    for key, at, member in written.members:
        if start + at >= cut:
            break
        value = _before_cut(member, body, cut, start + at)
        if value is _CUT:
            break
        if isinstance(known, dict):
            known[str(key)] = value
        else:
            known.append(value)
    return known


_CUT = object()  # a value the cut left unknown
