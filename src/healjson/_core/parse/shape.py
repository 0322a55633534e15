"""The target's JSON schema compiled once into the tree of shapes the aligner walks.

A `Shape` is one node of the schema as alignment needs it: the JSON types it allows, its enum or
const choices, its properties (by the names the JSON carries: aliases), which of them are
required, what it says of other keys, its item shapes, and — for `anyOf` / `oneOf` (an
`Optional` field, a union) — its branches. Local `$ref`s become shared nodes, so a recursive
model is a cycle of shapes, compiled once. A node with nothing to check (`Any`, an unknown
keyword) is `free`: any value fits it as written.

Each node also knows whether a key may be left out of an object at it or below (`defaults`: an
object with a property that is not required and no ban on other keys): only there can a key of
the answer be a misspelling of a field that validation left at its default (`defaults.py`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Final

from healjson._core.target.target import Target

__all__ = ["Shape", "key_form", "shape_of"]

_SEPARATORS: Final = re.compile(r"[\s\-_]+")


def key_form(key: str) -> str:
    """A key without case and separators: `answerText`, `Answer Text`, `ANSWER_TEXT` are one."""
    return _SEPARATORS.sub("", key).casefold()


@dataclass(eq=False)
class Shape:
    """One schema node (filled in place, so a `$ref` cycle can point at a node being built)."""

    kinds: frozenset[str] = frozenset()
    choices: tuple[Any, ...] | None = None
    props: dict[str, Shape] | None = None
    required: frozenset[str] = frozenset()
    closed: bool = False  # additionalProperties: false (extra="forbid")
    extra: Shape | None = None  # additionalProperties: a schema (dict values)
    items: Shape | None = None
    prefix: tuple[Shape, ...] = ()
    branches: tuple[Shape, ...] = ()
    forms: dict[str, str] = field(default_factory=dict)  # key form → the one property with it
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a form several hold
    list_field: str | None = None  # the one array property, when every other is optional
    optional: bool = False  # an object whose property may be left out, other keys not banned
    defaults: bool = False  # this node or one below it is `optional`
    deep: tuple[tuple[str, Shape], ...] = ()  # the properties whose shapes have `defaults`
    titles: dict[str, str] = field(default_factory=dict)  # property → its title's key form
    title: str = ""  # an object's own title, as a key form (its type's name: `Ticket`)

    @property
    def free(self) -> bool:
        """Nothing to check here: any value fits as written."""
        return not (self.kinds or self.branches or self.choices is not None)


@functools.lru_cache(maxsize=512)
def shape_of(target: Target[Any]) -> Shape:
    """The compiled shape of `target`'s JSON schema (free when it has none)."""
    root = target.json_schema
    shape = _compile(root, root, {}) if isinstance(root, dict) else Shape()
    _mark_defaults(shape)
    return shape


def _children(node: Shape) -> list[Shape]:
    found = [*node.branches, *node.prefix, *(node.props or {}).values()]
    found += [sub for sub in (node.extra, node.items) if sub is not None]
    return found


def _mark_defaults(root: Shape) -> None:
    """Set `optional`, `defaults` and `deep` on every node (a fixed point: `$ref` cycles)."""
    nodes: dict[int, Shape] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) not in nodes:
            nodes[id(node)] = node
            stack.extend(_children(node))
    for node in nodes.values():
        props = node.props
        node.optional = props is not None and not node.closed and not props.keys() <= node.required
        node.defaults = node.optional
    changed = True
    while changed:
        changed = False
        for node in nodes.values():
            if not node.defaults and any(child.defaults for child in _children(node)):
                node.defaults = changed = True
    for node in nodes.values():
        node.deep = tuple((name, sub) for name, sub in (node.props or {}).items() if sub.defaults)


def _compile(root: dict[str, Any], schema: Any, refs: dict[str, Shape]) -> Shape:
    if not isinstance(schema, dict):
        return Shape()
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith("#/"):
            return Shape()
        known = refs.get(ref)
        if known is not None:
            return known
        node = refs[ref] = Shape()
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        _fill(node, root, target if isinstance(target, dict) else {}, refs)
        return node
    node = Shape()
    _fill(node, root, schema, refs)
    return node


def _fill(
    node: Shape, root: dict[str, Any], schema: dict[str, Any], refs: dict[str, Shape]
) -> None:
    branches = schema.get("anyOf") or schema.get("oneOf")
    every = schema.get("allOf")
    if isinstance(every, list) and len(every) == 1 and not branches:
        branches = every
    elif every is not None:
        return  # an intersection: left free, pydantic alone decides
    if isinstance(branches, list):
        node.branches = tuple(_compile(root, branch, refs) for branch in branches)
        return
    if isinstance(schema.get("enum"), list):
        node.choices = tuple(schema["enum"])
    elif "const" in schema:
        node.choices = (schema["const"],)
    kind = schema.get("type")
    kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
    props = schema.get("properties")
    if isinstance(props, dict):
        kinds.add("object")
        title = schema.get("title")
        node.title = key_form(title) if isinstance(title, str) else ""
        node.props = {str(name): _compile(root, sub, refs) for name, sub in props.items()}
        node.titles = {  # a field's other name (pydantic's title of its Python name)
            str(name): key_form(sub["title"])
            for name, sub in props.items()
            if isinstance(sub, dict) and isinstance(sub.get("title"), str)
        }
        required = schema.get("required")
        node.required = frozenset(required) if isinstance(required, list) else frozenset()
        node.forms, node.shared = _forms(node.props)
        node.list_field = _list_field(node.props, node.required)
    extra = schema.get("additionalProperties")
    node.closed = extra is False
    if isinstance(extra, dict):
        kinds.add("object")
        node.extra = _compile(root, extra, refs)
    items = schema.get("items")
    if isinstance(items, dict):
        kinds.add("array")
        node.items = _compile(root, items, refs)
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        kinds.add("array")
        node.prefix = tuple(_compile(root, sub, refs) for sub in prefix)
    node.kinds = frozenset(str(k) for k in kinds)


def _forms(props: dict[str, Shape]) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """Key forms held by exactly one property, and those several properties hold (spelled
    alike: a key of that form is none of them, and says so)."""
    seen: dict[str, list[str]] = {}
    for name in props:
        seen.setdefault(key_form(name), []).append(name)
    one = {form: names[0] for form, names in seen.items() if len(names) == 1}
    return one, {form: tuple(names) for form, names in seen.items() if len(names) > 1}


def _list_field(props: dict[str, Shape], required: frozenset[str]) -> str | None:
    arrays = [name for name, sub in props.items() if _only_array(sub)]
    if len(arrays) != 1 or not required <= set(arrays):
        return None
    return arrays[0]


def _only_array(shape: Shape) -> bool:
    if shape.branches:
        return all(not branch.branches and branch.kinds == {"array"} for branch in shape.branches)
    return shape.kinds == {"array"}
