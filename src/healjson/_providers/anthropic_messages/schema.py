"""A JSON schema in the dialect Anthropic's structured outputs accept.

Anthropic's constrained decoding (`output_config.format` of type `json_schema`, and a tool with
`strict: true`) takes a subset of JSON Schema: types, `properties` / `required`, `items`,
`enum` / `const`, `anyOf` / `allOf`, `$ref` / `$defs`, descriptions, the common string
`format`s and `minItems` of 0 or 1; every object closed (`additionalProperties: false`); no
recursion. What the dialect cannot express as a constraint but a model can read (numeric
bounds, string lengths and patterns, other formats, `maxItems`, defaults, ...) moves into the
node's description: the model is still told, and pydantic still checks it locally. A schema
whose structure itself is outside the dialect (a free-form map, a tuple, a recursive type,
`not`/`if`) raises `AnthropicSchemaUnsupported`: that tier is skipped.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, Final

from healjson._core.target.schema_refs import defs_referenced
from healjson._providers._per_schema import PerSchema

__all__ = ["AnthropicSchemaUnsupported", "anthropic_schema", "shared_anthropic_schema"]


class AnthropicSchemaUnsupported(ValueError):
    """The schema's structure cannot be expressed in Anthropic's structured-output dialect."""


_KEPT: Final = frozenset({"type", "enum", "const", "description", "title"})
_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
# keywords that carry structure the dialect has no place for (a description cannot stand in)
_STRUCTURAL: Final = frozenset(
    {"prefixItems", "patternProperties", "not", "if", "then", "else", "dependentSchemas",
     "unevaluatedProperties", "propertyNames", "contains"}
)  # fmt: skip


def anthropic_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` (a pydantic JSON schema) in Anthropic's dialect; `AnthropicSchemaUnsupported`
    when its structure is outside it."""
    # the key order is kept (not sorted): an answer follows its schema's property order
    return json.loads(_cached(json.dumps(schema)))  # type: ignore[no-any-return]


shared_anthropic_schema = PerSchema(anthropic_schema, AnthropicSchemaUnsupported)
"""`anthropic_schema(schema)` for a schema object that lives on (a target's): computed once per
object and shared by every request."""


@functools.lru_cache(maxsize=256)
def _cached(text: str) -> str:
    schema = json.loads(text)
    defs = schema.get("$defs") or {}
    _check_acyclic(defs)
    out = _node(schema)
    if defs:
        out["$defs"] = {name: _node(sub) for name, sub in defs.items()}
    return json.dumps(out)


def _node(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise AnthropicSchemaUnsupported(f"a schema node that is not an object: {schema!r}")
    if "$ref" in schema:
        return {"$ref": schema["$ref"]}
    out: dict[str, Any] = {}
    moved: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _STRUCTURAL:
            raise AnthropicSchemaUnsupported(f"`{key}` has no equivalent")
        if key in _KEPT:
            out[key] = value
        elif key in ("anyOf", "oneOf", "allOf"):
            out["allOf" if key == "allOf" else "anyOf"] = [_node(sub) for sub in value]
        elif key == "properties":
            out["properties"] = {name: _node(sub) for name, sub in value.items()}
        elif key == "required":
            out["required"] = list(value)
        elif key == "items":
            out["items"] = _node(value)
        elif key == "format" and value in _FORMATS:
            out["format"] = value
        elif key == "minItems" and value in (0, 1):
            out["minItems"] = value
        elif key in ("additionalProperties", "$defs"):
            pass  # checked below / handled at the root
        else:
            moved[key] = value
    if _is_object(schema):
        extra = schema.get("additionalProperties")
        if extra not in (None, False) or not schema.get("properties"):
            raise AnthropicSchemaUnsupported("a free-form object (a map) has no closed form")
        out["additionalProperties"] = False
    if moved:
        note = json.dumps(moved, ensure_ascii=False, sort_keys=True)
        description = out.get("description")
        out["description"] = f"{description}\n\n{note}" if description else note
    return out


def _is_object(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind)


def _check_acyclic(defs: Mapping[str, Any]) -> None:
    """Raise for a definition that refers to itself, directly or through others."""
    edges = {name: defs_referenced(sub) for name, sub in defs.items()}
    done: set[str] = set()
    for start in edges:
        path: set[str] = set()
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            name, leaving = stack.pop()
            if leaving:
                path.discard(name)
                done.add(name)
                continue
            if name in path:
                raise AnthropicSchemaUnsupported(f"`{name}` is recursive")
            if name in done or name not in edges:
                continue
            path.add(name)
            stack.append((name, True))
            stack.extend((child, False) for child in edges[name])
