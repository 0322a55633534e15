"""A JSON schema in the dialect Gemini's `response_json_schema` accepts.

Gemini takes a JSON schema but supports only some of its keywords: `$id`, `$defs`, `$ref`,
`$anchor`, `type`, `format`, `title`, `description`, `enum` (of strings and numbers), `items`,
`prefixItems`, `minItems`, `maxItems`, `minimum`, `maximum`, `anyOf`, `oneOf` (read as
`anyOf`), `properties`, `additionalProperties`, `required` and its own `propertyOrdering`. A
node with a `$ref` may carry nothing else but `$` keywords, and a cyclic reference may only
sit under a property that is not required (it is unrolled to a limited depth).

So: what the dialect cannot say as a constraint but a model can read (string lengths and
patterns, exclusive bounds, `multipleOf`, defaults, an `enum` or `const` of other values, ...)
moves into the node's description — the model is still told, and pydantic still checks it
locally; a `const` of a string or number is a one-value `enum`; a `$ref` with siblings becomes
an `anyOf` of that one reference (the siblings kept beside it); a required property through
which a definition refers back to itself is sent as not required (pydantic still requires it).
A structure outside the dialect (`not`, `if`, `patternProperties`, an `allOf` of several
schemas, ...) raises `GeminiSchemaUnsupported`: that tier is skipped.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, Final

from healjson._core.target.schema_refs import defs_referenced
from healjson._providers._per_schema import PerSchema

__all__ = ["GeminiSchemaUnsupported", "gemini_schema", "shared_gemini_schema"]


class GeminiSchemaUnsupported(ValueError):
    """The schema's structure cannot be expressed in Gemini's `response_json_schema` dialect."""


_KEPT: Final = frozenset(
    {"$id", "$anchor", "type", "format", "title", "description", "minItems", "maxItems",
     "minimum", "maximum", "propertyOrdering"}
)  # fmt: skip
_STRUCTURAL: Final = frozenset(
    {"not", "if", "then", "else", "patternProperties", "dependentSchemas", "dependentRequired",
     "unevaluatedProperties", "unevaluatedItems", "propertyNames", "contains"}
)  # fmt: skip


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` (a pydantic JSON schema) in Gemini's dialect; `GeminiSchemaUnsupported` when
    its structure is outside it."""
    return json.loads(_cached(json.dumps(schema)))  # type: ignore[no-any-return]


shared_gemini_schema = PerSchema(gemini_schema, GeminiSchemaUnsupported)
"""`gemini_schema(schema)` for a schema object that lives on (a target's): computed once per
object and shared by every request."""


@functools.lru_cache(maxsize=256)
def _cached(text: str) -> str:
    schema = json.loads(text)
    defs = schema.get("$defs") or {}
    out = _node(schema, root=True)
    if defs:
        reach = _reachable({name: defs_referenced(sub) for name, sub in defs.items()})
        out["$defs"] = {name: _unrequire(_node(sub), name, reach) for name, sub in defs.items()}
    return json.dumps(out)


def _node(schema: Any, *, root: bool = False) -> dict[str, Any]:
    if schema is True or schema == {}:
        return {}
    if not isinstance(schema, Mapping):
        raise GeminiSchemaUnsupported(f"a schema node that is not an object: {schema!r}")
    out: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    ref = None
    for key, value in schema.items():
        if key in _STRUCTURAL:
            raise GeminiSchemaUnsupported(f"`{key}` has no equivalent")
        if key == "$ref":
            ref = value
        elif key == "$defs":
            if not root:
                raise GeminiSchemaUnsupported("`$defs` below the root")
        elif key in _KEPT:
            out[key] = value
        elif key in ("anyOf", "oneOf"):
            out["anyOf"] = [_node(sub) for sub in value]
        elif key == "allOf":
            if len(value) != 1:
                raise GeminiSchemaUnsupported("an `allOf` of several schemas")
            out["anyOf"] = [_node(value[0])]
        elif key == "properties":
            out["properties"] = {name: _node(sub) for name, sub in value.items()}
        elif key == "required":
            out["required"] = list(value)
        elif key == "items":
            out["items"] = _node(value)
        elif key == "prefixItems":
            out["prefixItems"] = [_node(sub) for sub in value]
        elif key == "additionalProperties":
            out[key] = value if isinstance(value, bool) else _node(value)
        elif key == "enum" and _plain(value):
            out["enum"] = list(value)
        elif key == "const" and _plain([value]):
            out["enum"] = [value]
        else:
            moved[key] = value
    if ref is not None:
        if not out and not moved:
            return {"$ref": ref}
        if "anyOf" in out:
            raise GeminiSchemaUnsupported("a `$ref` beside an `anyOf`")
        out["anyOf"] = [{"$ref": ref}]  # its siblings stay on the node beside it
    if moved:
        note = json.dumps(moved, ensure_ascii=False, sort_keys=True, default=str)
        description = out.get("description")
        out["description"] = f"{description}\n\n{note}" if description else note
    return out


def _plain(values: Any) -> bool:
    """An `enum` Gemini takes: strings and numbers only."""
    return isinstance(values, list) and all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in values
    )


def _reachable(edges: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Each definition's set of the definitions it reaches (one step or more)."""
    out: dict[str, set[str]] = {}
    for start in edges:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            name = stack.pop()
            if name in seen or name not in edges:
                continue
            seen.add(name)
            stack.extend(edges[name])
        out[start] = seen
    return out


def _unrequire(node: dict[str, Any], name: str, reach: Mapping[str, set[str]]) -> dict[str, Any]:
    """Definition `name` with every required property through which it refers back to itself
    made optional (in every object inside it, up to the next reference)."""
    stack = [node]
    while stack:
        item = stack.pop()
        properties = item.get("properties")
        required = item.get("required")
        if isinstance(properties, dict) and isinstance(required, list):
            cyclic = {
                key
                for key in required
                if any(
                    ref == name or name in reach.get(ref, ())
                    for ref in defs_referenced(properties.get(key))
                )
            }
            if cyclic:
                item["required"] = [key for key in required if key not in cyclic]
        if isinstance(properties, dict):
            stack.extend(sub for sub in properties.values() if isinstance(sub, dict))
        for key in ("anyOf", "prefixItems"):
            if isinstance(item.get(key), list):
                stack.extend(sub for sub in item[key] if isinstance(sub, dict))
        stack.extend(
            item[key]
            for key in ("items", "additionalProperties")
            if isinstance(item.get(key), dict)
        )
    return node
