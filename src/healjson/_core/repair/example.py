"""Golden examples for repair prompts: the caller's own, or one synthesised from the JSON schema.

A synthesised example is kept only if it validates against the target and passes the synchronous
contracts — an exemplar that breaks the rules would teach the model the wrong thing. That check
runs the caller's contracts on a made-up value, so it runs when a repair prompt would show the
example (`Golden`), with that run's context, never when a healer is built: a healer whose runs
never repair never runs its contracts on anything but the model's answers.

Building an example never raises and never builds anything large: any exception (a schema the
synthesiser cannot read, a field serializer or contract that fails on the synthesised value)
just means "no example", and so does an example longer than `MAX_EXAMPLE_CHARS` — synthesis
counts what it builds against that budget and stops as soon as it is exceeded, so a
`min_length=50_000_000` field (or `minItems`, a pattern repeat, a schema whose references fan out)
costs nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from healjson._core.judge.contracts import Contract, ContractContext
from healjson._core.target.target import Target, resolve_ref

from .prompt import MAX_EXAMPLE_CHARS

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


class _TooLarge(Exception):
    """The example being synthesised outgrew `MAX_EXAMPLE_CHARS`."""


class _Budget:
    """Characters (roughly, as JSON) the example being synthesised may still take."""

    __slots__ = ("left",)

    def __init__(self, chars: int) -> None:
        self.left = chars

    def spend(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise _TooLarge


class Golden:
    """A healer's golden example: the caller's first checked example that fits, else one
    synthesised from the schema and validated, both found when the healer is built; the
    synthesised one's contract check runs at each use (`text_for`), with that run's context."""

    __slots__ = ("_contracts", "_instance", "_settled", "_text")

    def __init__(
        self, target: Target[Any], examples: Sequence[Any], contracts: Sequence[Contract[Any]]
    ) -> None:
        self._contracts = tuple(contracts)
        self._instance: Any = None  # a synthesised instance whose contracts are still to run
        self._settled = True
        for example in examples:
            self._text = _fitting(target, example)
            if self._text is not None:
                return
        self._instance = _candidate(target)
        self._text = None if self._instance is None else _fitting(target, self._instance)
        self._settled = self._text is None or not self._contracts

    @property
    def text(self) -> str | None:
        """The example's JSON text, or None (no example fits, or a synthesised one breaks a
        synchronous contract), its contracts run with an empty context."""
        return self.text_for(ContractContext())

    def text_for(self, ctx: ContractContext) -> str | None:
        """`text`, a synthesised example's contracts run with `ctx`: the run's own, so that
        what they read and validate is the caller's context. Run at each use (a repair prompt
        that shows it), not kept: runs of one healer may have contexts the example passes and
        contexts it breaks."""
        if self._settled:
            return self._text
        return self._text if _passes(self._instance, self._contracts, ctx) else None


def golden_example(
    target: Target[Any], examples: Sequence[Any], contracts: Sequence[Contract[Any]]
) -> str | None:
    """JSON text of the caller's first (already checked) example that can be dumped within
    `MAX_EXAMPLE_CHARS`, else a synthesised one, else None — never an exception."""
    return Golden(target, examples, contracts).text


def synthesise(target: Target[Any], contracts: Sequence[Contract[Any]] = ()) -> str | None:
    """Build a small instance from the schema that validates and passes the sync contracts."""
    return Golden(target, (), contracts).text


def _candidate(target: Target[Any]) -> Any:
    """A small instance built from the schema that validates, or None."""
    try:
        schema = target.json_schema
        if not schema:
            return None
        data = _value(schema, schema, 0, _Budget(MAX_EXAMPLE_CHARS))
        return target.adapter.validate_json(json.dumps(data))
    except Exception:  # synthesis is best effort: no example is better than a wrong one
        return None


def _passes(instance: Any, contracts: Sequence[Contract[Any]], ctx: ContractContext) -> bool:
    """Whether the synchronous `contracts` accept `instance` (an async one is not awaited:
    it is closed, and counts as passing); any exception means no."""
    try:
        for rule in contracts:
            result = rule(instance, ctx)
            if hasattr(result, "__await__"):
                result.close() if hasattr(result, "close") else None
                continue
            if result is not None and result is not True and result != []:
                return False
    except Exception:  # a contract failing on the made-up value: no example
        return False
    return True


def _fitting(target: Target[Any], value: Any) -> str | None:
    """The value's JSON when it can be dumped and fits `MAX_EXAMPLE_CHARS`, else None."""
    try:
        text = _dump(target, value)
    except Exception:  # a field serializer that fails on this value: no example
        return None
    return text if len(text) <= MAX_EXAMPLE_CHARS else None


def _dump(target: Target[Any], value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json(by_alias=True)
    try:
        return target.adapter.dump_json(value, by_alias=True).decode()
    except Exception:
        return json.dumps(value, ensure_ascii=False, default=str)


def _value(root: dict[str, Any], schema: dict[str, Any], depth: int, budget: _Budget) -> Any:
    schema = resolve_ref(root, schema)
    budget.spend(1)  # every value costs at least a character, so fan-out is bounded too
    if depth > _MAX_DEPTH:
        return None
    for key in ("const", "default"):  # already built (they are in the schema): only measured
        if key in schema and (key == "const" or schema[key] is not None):
            budget.spend(len(json.dumps(schema[key])))
            return schema[key]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        budget.spend(len(json.dumps(schema["enum"][0])))
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            usable = [b for b in branches if isinstance(b, dict) and b.get("type") != "null"]
            return _value(root, (usable or branches)[0], depth + 1, budget)
    if isinstance(schema.get("allOf"), list) and schema["allOf"]:
        return _value(root, schema["allOf"][0], depth + 1, budget)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        out: dict[str, Any] = {}
        for name, sub in props.items():
            budget.spend(len(name) + 4)
            out[name] = _value(root, sub, depth + 1, budget)
        extra = schema.get("additionalProperties")
        if not props and isinstance(extra, dict):
            out["key"] = _value(root, extra, depth + 1, budget)
        return out
    if kind == "array":
        items = schema.get("items")
        count = max(int(schema.get("minItems", 1) or 0), 1)
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [_value(root, sub, depth + 1, budget) for sub in prefix]
        if isinstance(items, dict):
            budget.spend(count)  # before building any item: `minItems: 10**9` stops here
            return [_value(root, items, depth + 1, budget) for _ in range(count)]
        return []
    if kind == "string":
        return _string(schema, budget)
    if kind in ("integer", "number"):
        budget.spend(24)
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    return None


def _string(schema: dict[str, Any], budget: _Budget) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        budget.spend(len(_FORMATS[fmt]) + 2)
        return _FORMATS[fmt]
    low = int(schema.get("minLength", 0) or 0)
    budget.spend(low + 2)  # before building it: `min_length=50_000_000` stops here
    pattern = schema.get("pattern")
    text = _from_pattern(pattern, budget.left) if isinstance(pattern, str) else None
    if text is None:
        text = "example text"
    high = schema.get("maxLength")
    if len(text) < low:
        text = (text + " " + "x" * low)[:low] if text else "x" * low
    if isinstance(high, int) and len(text) > high:
        text = text[:high]
    budget.spend(len(text) - low)
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


def _from_pattern(pattern: str, limit: int) -> str | None:
    """The shortest string the regex matches, for simple patterns (None when unsure, or when
    it would be longer than `limit` characters: `a{1000000000}` is never built)."""
    try:
        import re._parser as sre  # type: ignore[import-not-found]

        return _emit(sre.parse(pattern), sre, limit)
    except Exception:
        return None


def _emit(tokens: Any, sre: Any, limit: int) -> str:
    c = sre  # opcode names live on the parser module's constants
    out: list[str] = []
    size = 0
    for op, arg in tokens:
        name = str(op)
        if name == "LITERAL":
            piece = chr(arg)
        elif name == "NOT_LITERAL":
            piece = "a" if chr(arg) != "a" else "b"
        elif name == "ANY":
            piece = "a"
        elif name == "IN":
            piece = _pick(arg)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, sub = arg
            unit = _emit(sub, c, limit - size)
            if len(unit) * max(low, 0) > limit - size:  # measured before it is built
                raise _TooLarge
            piece = unit * max(low, 0)
        elif name == "SUBPATTERN":
            piece = _emit(arg[-1], c, limit - size)
        elif name == "ATOMIC_GROUP":
            piece = _emit(arg, c, limit - size)
        elif name == "BRANCH":
            piece = _emit(arg[1][0], c, limit - size)
        elif name in ("AT", "ASSERT", "ASSERT_NOT"):
            continue
        else:
            raise ValueError(f"unsupported regex construct {name}")
        size += len(piece)
        if size > limit:
            raise _TooLarge
        out.append(piece)
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
