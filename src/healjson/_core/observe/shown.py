"""What telemetry shows of text from outside healjson: one rule for spans and events alike.

Text the model or the provider wrote (a model name, a finish reason, an error message, a
diagnostic, the answer itself when content is captured) reaches a span attribute or an event
field only through `said`: redacted, and cut at a stated bound with a visible marker
(`SAID_CHARS`, or `CONTENT_CHARS` for captured content). `bounded` applies that rule to an
event's fields, containers cut at `MAX_ITEMS` members. A diagnostic's path is the model's text
where it names a key the model invented: with content capture off, `shown_path` keeps only the
names the target declares (and list indexes), each other segment written `KEY`.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from healjson._core.diagnostic import ROOT, short_repr
from healjson._core.redact import redact_text

__all__ = [
    "CONTENT_CHARS",
    "KEY",
    "MAX_ITEMS",
    "SAID_CHARS",
    "bounded",
    "declared_names",
    "said",
    "shown_path",
]

SAID_CHARS: Final = 500
"""The most characters of a short text from outside (model name, finish reason, diagnostic,
error message) a span attribute or an event field carries."""
CONTENT_CHARS: Final = 16_000
"""The most characters of captured content (the request's messages, the model's answer, a
repair prompt) a span attribute or an event field carries."""
MAX_ITEMS: Final = 50
"""The most members of a list or mapping an event field carries (one more says how many were
left out)."""
KEY: Final = "<key>"
"""A path segment the target does not declare, as shown with content capture off."""

_REDACT_MARGIN: Final = 1_024  # redacted past the cut: longer than any credential
_DEPTH: Final = 4  # an event field's containers are flat; deeper ones render as one text


def said(text: str, limit: int = SAID_CHARS) -> str:
    """`text` as telemetry may carry it: redacted (a secret that starts before the cut is
    removed whole), and when longer than `limit`, cut to `limit` characters with a marker
    saying how long it was."""
    head = redact_text(text[: limit + _REDACT_MARGIN])
    if len(head) <= limit and len(text) <= limit + _REDACT_MARGIN:
        return head
    marker = f"…(cut from {len(text)} chars)"
    return head[: max(limit - len(marker), 0)] + marker


def bounded(value: Any, limit: int = SAID_CHARS, depth: int = _DEPTH) -> Any:
    """An event field's value within the bounds: strings through `said`, lists and mappings
    at most `MAX_ITEMS` members (each bounded), anything nested deeper than an event field
    nests as one short text; numbers, booleans and None as they are."""
    if isinstance(value, str):
        return said(value, limit)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth <= 0:
        return said(short_repr(value, limit), limit)
    if isinstance(value, Mapping):
        out = {
            said(str(key)): bounded(member, limit, depth - 1)
            for key, member in _first(value.items())
        }
        if len(value) > MAX_ITEMS:
            out["…"] = f"+{len(value) - MAX_ITEMS} more"
        return out
    if isinstance(value, list | tuple | set | frozenset):
        items = [bounded(member, limit, depth - 1) for member in _first(value)]
        if len(value) > MAX_ITEMS:
            items.append(f"…(+{len(value) - MAX_ITEMS} more)")
        return items
    return said(short_repr(value, limit), limit)


def _first(members: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for member in members:
        if len(out) == MAX_ITEMS:
            break
        out.append(member)
    return out


# a list index, or the dot between two names; what lies between is a name (a key)
_SEPARATORS: Final = re.compile(r"(\[\d+\]|\.)")


def shown_path(path: str, declared: frozenset[str]) -> str:
    """`path` (`items[0].price`) with every segment that is neither a name in `declared` nor
    a list index written `KEY`: a key the model invented (an extra key, a key of a free-form
    mapping) is the model's text, decided segment by segment."""
    if path == ROOT or path in declared:
        return path
    return "".join(
        piece if not piece or _SEPARATORS.fullmatch(piece) or piece in declared else KEY
        for piece in _SEPARATORS.split(path)
    )


def declared_names(spec: Any) -> frozenset[str]:
    """The names the run's target declares (for a tool-call run: its tools' names, their
    arguments' names, and `calls`, the word healjson's own paths begin with): every property
    name of its JSON schema, by alias and by field name. Empty when `spec` declares none."""
    if spec is None:
        return frozenset()
    tools = getattr(spec, "tools", None)
    if isinstance(tools, Mapping):
        names = {"calls", *(str(name) for name in tools)}
        for tool in tools.values():
            names |= _target_names(getattr(tool, "target", None))
        return frozenset(names)
    return _target_names(getattr(spec, "target", None))


@functools.lru_cache(maxsize=256)
def _target_names(target: Any) -> frozenset[str]:
    if target is None:
        return frozenset()
    schemas = [getattr(target, "json_schema", None)]
    # the fields' own names too, where an alias renames them (a JSON Schema target, a type
    # without a schema: its one schema)
    with contextlib.suppress(Exception):
        schemas.append(target.adapter.json_schema(by_alias=False))
    names: set[str] = set()
    for schema in schemas:
        names |= _property_names(schema)
    return frozenset(names)


def _property_names(schema: Any) -> set[str]:
    """Every key of every `properties` object in `schema`, walked without recursion."""
    names: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping):
                names.update(key for key in props if isinstance(key, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return names
