"""Golden examples for repair prompts: the caller's own, or one synthesised from the JSON schema.

A synthesised example is kept only if it validates against the target and passes the synchronous
contracts — an exemplar that breaks the rules would teach the model the wrong thing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ._contracts import Contract, ContractContext
from ._target import Target

__all__ = ["golden_example", "synthesise"]

_FORMATS = {
    "date": "2024-01-31",
    "date-time": "2024-01-31T09:30:00Z",
    "time": "09:30:00",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
}
_MAX_DEPTH = 12


def golden_example(
    target: Target[Any], examples: Sequence[Any], contracts: Sequence[Contract]
) -> str | None:
    """JSON text of the first example: the caller's (already checked) or a synthesised one."""
    for example in examples:
        return _dump(target, example)
    return synthesise(target, contracts)


def synthesise(target: Target[Any], contracts: Sequence[Contract] = ()) -> str | None:
    """Build a small instance from the schema that validates and passes the sync contracts."""
    schema = target.json_schema
    if not schema:
        return None
    try:
        data = _value(schema, schema, 0)
        instance = target.adapter.validate_json(json.dumps(data))
    except Exception:  # synthesis is best effort: no example is better than a wrong one
        return None
    for rule in contracts:
        try:
            result = rule(instance, ContractContext())
        except Exception:
            return None
        if hasattr(result, "__await__"):
            result.close() if hasattr(result, "close") else None
            continue
        if result is not None and result is not True and result != []:
            return None
    return _dump(target, instance)


def _dump(target: Target[Any], value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(by_alias=True)
    try:
        return target.adapter.dump_json(value, by_alias=True).decode()
    except Exception:
        return json.dumps(value, ensure_ascii=False, default=str)


def _resolve(root: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    for _ in range(32):
        ref = schema.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#/")):
            break
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        schema = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _value(root: dict[str, Any], schema: dict[str, Any], depth: int) -> Any:
    schema = _resolve(root, schema)
    if depth > _MAX_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            usable = [b for b in branches if isinstance(b, dict) and b.get("type") != "null"]
            return _value(root, (usable or branches)[0], depth + 1)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return _value(root, schema["allOf"][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        out = {name: _value(root, sub, depth + 1) for name, sub in props.items()}
        extra = schema.get("additionalProperties")
        if not props and isinstance(extra, dict):
            out["key"] = _value(root, extra, depth + 1)
        return out
    if kind == "array":
        items = schema.get("items")
        count = max(int(schema.get("minItems", 1) or 0), 1)
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [_value(root, sub, depth + 1) for sub in prefix]
        if isinstance(items, dict):
            return [_value(root, items, depth + 1) for _ in range(count)]
        return []
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    return None


def _string(schema: dict[str, Any]) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        return _FORMATS[fmt]
    pattern = schema.get("pattern")
    text = _from_pattern(pattern) if isinstance(pattern, str) else None
    if text is None:
        text = "example text"
    low = int(schema.get("minLength", 0) or 0)
    high = schema.get("maxLength")
    if len(text) < low:
        text = (text + " " + "x" * low)[:low] if text else "x" * low
    if isinstance(high, int) and len(text) > high:
        text = text[:high]
    return text


def _number(schema: dict[str, Any], *, integer: bool) -> float | int:
    low = schema.get("minimum")
    high = schema.get("maximum")
    if schema.get("exclusiveMinimum") is not None:
        low = schema["exclusiveMinimum"] + (1 if integer else 0.5)
    if schema.get("exclusiveMaximum") is not None:
        high = schema["exclusiveMaximum"] - (1 if integer else 0.5)
    value: float = 1
    if low is not None:
        value = low
    elif high is not None and high < value:
        value = high
    return int(value) if integer else float(value)


def _from_pattern(pattern: str) -> str | None:
    """The shortest string the regex matches, for simple patterns (None when unsure)."""
    try:
        import re._parser as sre  # type: ignore[import-not-found]

        return _emit(sre.parse(pattern), sre)
    except Exception:
        return None


def _emit(tokens: Any, sre: Any) -> str:
    c = sre  # opcode names live on the parser module's constants
    out: list[str] = []
    for op, arg in tokens:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_pick(arg))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, sub = arg
            out.append(_emit(sub, c) * max(low, 0))
        elif name == "SUBPATTERN":
            out.append(_emit(arg[-1], c))
        elif name == "ATOMIC_GROUP":
            out.append(_emit(arg, c))
        elif name == "BRANCH":
            out.append(_emit(arg[1][0], c))
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        else:
            raise ValueError(f"unsupported regex construct {name}")
    return "".join(out)


def _pick(items: Any) -> str:
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            raise ValueError("negated class")
        if name == "LITERAL":
            return chr(arg)
        if name == "RANGE":
            return chr(arg[0])
        if name == "CATEGORY":
            category = str(arg)
            if "DIGIT" in category and "NOT" not in category:
                return "0"
            if "WORD" in category and "NOT" not in category:
                return "a"
            if "SPACE" in category and "NOT" not in category:
                return " "
    raise ValueError("empty class")
