"""Local references in a JSON schema (`#/$defs/...`), followed the way every reader here does,
and the references that lead outside it (`remote_refs`): healjson never fetches a schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import unquote, urldefrag, urljoin

__all__ = ["defs_referenced", "pointer", "remote_refs", "resolve_ref"]

_REFERENCES: Final = ("$ref", "$dynamicRef", "$recursiveRef")


def resolve_ref(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its local `$ref` chain (`#/$defs/...`, at most 32 links) followed; the
    keys beside a `$ref` (a description, a default) are kept over the referenced ones."""
    for _ in range(32):
        ref = schema.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/")):
            break
        node = pointer(root, ref)
        referenced = node if isinstance(node, dict) else {}
        schema = {**referenced, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def pointer(root: Any, ref: str) -> Any:
    """The node a local reference (`#`, `#/$defs/Item`, `#/properties/a~1b`, `#/$defs/a%20b`)
    names in `root`, or None when it names nothing. The fragment of a URI reference is
    percent-encoded: it is decoded first, then read as a JSON Pointer (`~1` is `/`, `~0` `~`)."""
    node = root
    for raw in unquote(ref[2:]).split("/") if ref != "#" else ():
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def defs_referenced(node: Any) -> set[str]:
    """The `$defs` names `node` refers to (`#/$defs/<name>`), at any depth (a dialect's transform
    reads which definitions reach which)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                name = unquote(ref.removeprefix("#/$defs/"))
                found.add(name.replace("~1", "/").replace("~0", "~"))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def remote_refs(schema: Any, id_key: str = "$id") -> list[tuple[str, str]]:
    """`(reference, where it leads)` for every reference of `schema` that resolves to a
    document the schema does not hold: an absolute URI, or a relative one (`item.json`)
    resolved against the `$id` of the schema around it (`https://example.com/root.json` makes
    it `https://example.com/item.json`). The documents the schema holds are its root and every
    subschema with an `id_key` (`$id`; draft 3 and 4 say `id`). Iterative: no depth limit."""
    root_id = _own_id(schema, id_key)
    root = urldefrag(urljoin("", root_id)).url if root_id else ""
    held = {root}
    refs: list[tuple[str, str]] = []
    stack: list[tuple[Any, str]] = [(schema, root)]
    while stack:
        node, base = stack.pop()
        if isinstance(node, list):
            stack.extend((item, base) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        own = _own_id(node, id_key)
        if own and node is not schema:
            base = urldefrag(urljoin(base, own)).url
            held.add(base)
        for key, value in node.items():
            if key in _REFERENCES and isinstance(value, str):
                refs.append((value, urljoin(base, value)))
            elif isinstance(value, dict | list):
                stack.append((value, base))
    return [(ref, target) for ref, target in refs if urldefrag(target).url not in held]


def _own_id(node: dict[str, Any], id_key: str) -> str | None:
    """A subschema's identifier (a plain-name `#anchor` moves no base: None)."""
    value = node.get(id_key)
    if isinstance(value, str) and value and not value.startswith("#"):
        return value
    return None
