"""Local references in a JSON schema (`#/$defs/...`), followed the way every reader here does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["defs_referenced", "pointer", "resolve_ref"]


def resolve_ref(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its local `$ref` chain (`#/$defs/...`, at most 32 links) followed; the
    keys beside a `$ref` (a description, a default) are kept over the referenced ones."""
    for _ in range(32):
        ref = schema.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/")):
            break
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        referenced = node if isinstance(node, dict) else {}
        schema = {**referenced, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def pointer(root: Any, ref: str) -> Any:
    """The node a local reference (`#`, `#/$defs/Item`, `#/properties/a~1b`) names in `root`,
    or None when it names nothing."""
    node = root
    for raw in ref[2:].split("/") if ref != "#" else ():
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
                found.add(ref.removeprefix("#/$defs/"))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
