"""Which one-key objects stand for the value they wrap (the alignment's `unwrapped`).

A one-key object `{key: value}` where the schema wants no such object is read as `value` only
when `key` says nothing more of it than "the value":

- the whole answer, under any key, unless the target is itself a map (a `dict[str, X]`, an
  object schema with only `additionalProperties`), where the key may be an entry's: a JSON
  object mode makes a model wrap a plain answer (`{"count": 5}`), or name the answer's type
  (`{"ticket": {...}}`);
- anywhere inside the answer, only under a word that can name the value: an envelope word
  (`value`, `result`, `items`, ...); a name of the field the object is the value of (its
  property key or title, a map entry's key; for a list's item, the list field's name or its
  singular, `tags` → `tag`); for a list, any plural word (a collection's name:
  `{"nodes": [...]}`); for an object, its type's name (the schema's title:
  `{"address": {"Address": {...}}}`).

Any other key says something of the value (a unit, a bound, a negation, a former value:
`{"fahrenheit": 70}`, `{"min": 5}`, `{"not": [1, 2]}`), which the value alone would drop, so
the object is not read as its value, whatever the value is (a number, a list, an object).

One wrapper is more than a reading: the envelope a strict format asks a list target in
(`{"value": [...]}`, `carried`) is judged as the list it carries even when that list fails, so
its diagnostics are the items' and a repair asks for the failing items only.
"""

from __future__ import annotations

from typing import Any, Final

from healjson._core.sentinels import NOTHING

from .shape import Shape, key_form

__all__ = ["ENVELOPE_KEY", "carried", "item_names", "names_the_value"]

ENVELOPE_KEY: Final = "value"
"""The key of the envelope a strict format asks for a target whose JSON is no object in:
`{"value": [...]}` (OpenAI's strict schemas, `_providers/openai_strict_schema.py`). An answer
in it is judged as the list it carries (`carried`)."""

_ENVELOPE_KEYS: Final = frozenset(
    {"value", "values", "result", "results", "answer", "data", "output", "response", "content"}
    | {"items", "list"}
)
"""Keys (as `key_form`s) that say nothing of the value a one-key object wraps."""


def names_the_value(
    key: Any, names: frozenset[str] | None, is_map: bool, inner: Any, title: str = ""
) -> bool:
    """Whether a one-key object's `key` says no more of the value it wraps (`inner`) than "the
    value". `names`: the key forms of the field the object is the value of (None: the whole
    answer); `is_map`: the schema there is a map, whose entries' keys are data; `title`: the
    key form of the type the schema there wants, when it wants an object."""
    if names is None and not is_map:
        return True
    if not isinstance(key, str):
        return False
    form = key_form(key)
    if form in _ENVELOPE_KEYS or (names is not None and form in names):
        return True
    if isinstance(inner, list):
        return len(form) > 2 and form.endswith("s")
    return isinstance(inner, dict) and bool(title) and form == title


def item_names(names: frozenset[str] | None) -> frozenset[str]:
    """The names an item of a list field answers to: the field's, and their singulars."""
    if not names:
        return frozenset()
    found = set(names)
    for name in names:
        if name.endswith("es") and len(name) > 3:
            found.add(name[:-2])
        if name.endswith("s") and len(name) > 2:
            found.add(name[:-1])
    return frozenset(found)


def carried(shape: Shape, data: Any) -> Any:
    """The list `data` carries when it is the envelope a strict format asks a list target in
    (`{"value": [...]}`, its key in any case or with separators), NOTHING when it is not.
    Only where nothing else can take the object: the target (`shape`, its root) wants no
    object, and no item of its list could be the object itself (an item with a field of that
    name, a map, an item of any kind). Such an answer is judged as that list, valid or not:
    its diagnostics are the list's, at the list's paths (`[1].sku`)."""
    if type(data) is not dict or len(data) != 1:
        return NOTHING
    ((key, inner),) = data.items()
    if type(inner) is not list or not isinstance(key, str) or key_form(key) != ENVELOPE_KEY:
        return NOTHING
    nodes = shape.branches or (shape,)
    if not any("array" in node.kinds for node in nodes):
        return NOTHING
    for node in nodes:
        if node.branches or node.free or "object" in node.kinds:
            return NOTHING
        items = (*node.prefix, *((node.items,) if node.items is not None else ()))
        if any(_takes(item, key) for item in items):
            return NOTHING
    return inner


def _takes(shape: Shape, key: str) -> bool:
    """Whether an object `{key: ...}` could be read at `shape` as the object it is."""
    if shape.branches:
        return any(branch.branches or _takes(branch, key) for branch in shape.branches)
    if shape.free or shape.extra is not None:
        return True
    props = shape.props or {}
    form = key_form(key)
    return key in props or form in shape.forms or form in shape.shared
