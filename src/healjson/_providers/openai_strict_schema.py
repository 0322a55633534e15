"""OpenAI "structured outputs" (`strict: true`): turn a target's JSON schema into the strict subset.

OpenAI constrains decoding to a schema only when the schema stays inside a subset of JSON Schema
("Supported schemas" in the structured-outputs guide):

- the root is an object (not `anyOf`); a non-object target is wrapped in a `{"value": ...}`
  envelope that the caller unwraps;
- every object has `additionalProperties: false` and lists every property in `required`;
- kept keywords: `type`, `properties`, `required`, `additionalProperties` (false), `items`,
  `enum`, `const`, `anyOf`, `$ref`/`$defs` (recursion included), `description`, `title`; strings:
  `pattern` and `format` (only the formats in `SUPPORTED_FORMATS`); numbers: `multipleOf`,
  `maximum`, `exclusiveMaximum`, `minimum`, `exclusiveMinimum`; arrays: `minItems`, `maxItems`;
- a `$ref` may not carry sibling keywords (the API answers `$ref cannot have keywords
  {'description'}`), so such a node is inlined, or wrapped in a one-branch `anyOf` when the
  definition is recursive.

Every other keyword is removed, but never silently: it is rewritten into the node's `description`
in words ("Must have at least 5 characters.", "Default: 3.", "Items must be unique."). healjson
still validates every original constraint locally (pydantic; `jsonschema` for a JSON Schema
target), so the description is a hint to the model and the local check is the guarantee.

Two rewrites keep "strict-valid implies locally valid" as far as the types go:

- `oneOf` becomes `anyOf` and a single-`$ref` `allOf` is inlined;
- a property that pydantic does not require is made required *without* adding `null` unless its
  type already allows null (`Optional[X] = None` stays nullable). A non-nullable field with a
  default (`retries: int = 3`) must then be filled in by the model, and its default is in the
  description; adding `null` instead would let the model produce a value pydantic rejects.

What strict mode cannot express raises `StrictSchemaUnsupported` (a `ValueError`) so the caller
can fall back to a weaker JSON mode: free-form maps (`dict[str, X]`), untyped values (`Any`),
arrays without an item schema, multi-branch `allOf`, and `$ref`s with constraining siblings.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from healjson._core.target.target import Target, spelling, target_for

__all__ = [
    "SUPPORTED_FORMATS",
    "StrictSchema",
    "StrictSchemaUnsupported",
    "strict_format",
    "strict_json_schema",
]

SUPPORTED_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
"""String formats OpenAI strict mode accepts; any other `format` moves to the description."""

ENVELOPE_KEY = "value"

# Keywords copied as they are (objects, arrays, unions and `$ref` are rebuilt, not copied).
_KEPT = frozenset(
    {"type", "enum", "const", "title", "description", "pattern"}
    | {"multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"}
)
# Bookkeeping keywords with no meaning for the model: dropped without a note.
_SILENT = frozenset({"$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$vocabulary"})
# Keywords that may sit beside a `$ref` without changing what it accepts.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
)
_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: bool is an int subclass
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (type(None), "null"),
)
_NAME_MAX = 64
_NAME_JUNK = re.compile(r"[^a-zA-Z0-9_-]+")
_TYPING_PREFIX = re.compile(r"\b(?:typing|typing_extensions|collections\.abc|builtins)\.")


class StrictSchemaUnsupported(ValueError):
    """The target cannot be expressed in OpenAI strict mode (fall back to a weaker JSON mode)."""

    def __init__(self, reason: str, path: tuple[str, ...] = ()) -> None:
        where = "/".join(path) or "<root>"
        super().__init__(f"not expressible as an OpenAI strict schema at {where}: {reason}")
        self.reason = reason
        self.path = path


@dataclass(frozen=True)
class StrictSchema:
    """A strict-mode schema for one target, ready to send as `response_format`.

    The object is cached and shared per target type, and `schema` is a plain dict (so it
    serialises as-is in a request body): treat it as read-only. Deep-copy it before editing.
    """

    name: str
    """A valid OpenAI schema name (`^[a-zA-Z0-9_-]{1,64}$`) derived from the type's name."""
    schema: dict[str, Any]
    """The strict JSON schema. Shared: do not mutate."""
    envelope: str | None = None
    """`"value"` when the target is not an object type: the reply is `{"value": <target>}` and
    the caller validates `reply["value"]`. None when the reply is the target itself."""

    def response_format(self) -> dict[str, Any]:
        """The `response_format` parameter for a chat-completions request."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.schema, "strict": True},
        }

    def unwrap(self, reply: Any) -> Any:
        """The target value inside a parsed reply (removes the envelope when there is one)."""
        if self.envelope is not None and isinstance(reply, dict) and self.envelope in reply:
            return reply[self.envelope]
        return reply


def strict_json_schema(target: Any) -> StrictSchema:
    """The OpenAI strict schema for `target` (a model class, any TypeAdapter type, a JSON Schema
    dict, or a `Target`).

    Cached per type (failures too); raises `StrictSchemaUnsupported` when strict mode cannot
    express the target. A target pydantic cannot validate at all is not "unsupported": the error
    from `target_for` propagates unchanged.
    """
    type_ = target.type_ if isinstance(target, Target) else target
    if isinstance(type_, Mapping):  # a JSON Schema dict: by its (hashable) JsonSchema
        type_ = target_for(type_).type_
    try:
        result = _cached(type_, spelling(type_))
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise
        result = _attempt(type_)
    if isinstance(result, StrictSchema):
        return result
    raise StrictSchemaUnsupported(*result)  # a fresh exception each call (no growing traceback)


@functools.lru_cache(maxsize=256)
def _cached(type_: Any, spelled: str) -> StrictSchema | tuple[str, tuple[str, ...]]:
    return _attempt(type_)


def _attempt(type_: Any) -> StrictSchema | tuple[str, tuple[str, ...]]:
    try:
        return _build(type_)
    except StrictSchemaUnsupported as exc:
        return exc.reason, exc.path


def _build(type_: Any) -> StrictSchema:
    source = copy.deepcopy(target_for(type_).json_schema)  # never touch pydantic's cached schema
    converter = _Converter(source)
    root = converter.root()
    envelope: str | None = None
    if root.get("type") != "object":
        envelope = ENVELOPE_KEY
        root = {
            "type": "object",
            "properties": {ENVELOPE_KEY: root},
            "required": [ENVELOPE_KEY],
            "additionalProperties": False,
        }
    defs = converter.reachable_defs(root)
    if defs:
        root["$defs"] = defs
    return StrictSchema(name=schema_name(type_), schema=root, envelope=envelope)


def schema_name(type_: Any) -> str:
    """An OpenAI-valid schema name for a type: `SupportTicket`, `list_Item`, `Literal_a_b`."""
    name = _NAME_JUNK.sub("_", _type_name(type_)).strip("_")[:_NAME_MAX].rstrip("_")
    return name or "response"


def _type_name(type_: Any) -> str:
    origin, args = typing.get_origin(type_), typing.get_args(type_)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return "Literal_" + "_".join(map(str, args))
    if origin is typing.Union or origin is types.UnionType:
        return "_or_".join(_type_name(arg) for arg in args)
    if origin is not None:
        head = getattr(origin, "__name__", None) or str(origin)
        return "_".join([head, *(_type_name(arg) for arg in args)])
    if type_ is None or type_ is type(None):
        return "None"
    if type_ is Ellipsis:  # tuple[int, ...]
        return ""
    name = getattr(type_, "__name__", None)
    return name if isinstance(name, str) else _TYPING_PREFIX.sub("", repr(type_))


class _Converter:
    """One conversion: the source `$defs`, which of them are recursive, and converted bodies."""

    def __init__(self, source: dict[str, Any]) -> None:
        defs = source.pop("$defs", None)
        legacy = source.pop("definitions", None)
        self.prefix = "#/$defs/" if defs is not None or legacy is None else "#/definitions/"
        raw = defs if defs is not None else legacy
        self.source = source
        self.defs: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.converted: dict[str, dict[str, Any]] = {}
        self.recursive = {name for name in self.defs if self._reaches(name, name)}

    # --- $defs --------------------------------------------------------------------------------

    def _def_name(self, ref: Any, path: tuple[str, ...]) -> str:
        if not isinstance(ref, str) or not ref.startswith(self.prefix):
            raise StrictSchemaUnsupported(f"unsupported $ref {ref!r}", path)
        name = ref[len(self.prefix) :].replace("~1", "/").replace("~0", "~")
        if name not in self.defs:
            raise StrictSchemaUnsupported(f"$ref {ref!r} does not resolve", path)
        return name

    def _reaches(self, start: str, goal: str) -> bool:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for ref in _refs(self.defs.get(stack.pop())):
                name = ref[len(self.prefix) :] if ref.startswith(self.prefix) else ""
                if name == goal:
                    return True
                if name in self.defs and name not in seen:
                    seen.add(name)
                    stack.append(name)
        return False

    def definition(self, name: str) -> dict[str, Any]:
        """The converted body of `$defs[name]` (converted once)."""
        if name not in self.converted:
            self.converted[name] = self.convert(self.defs[name], ("$defs", name))
        return self.converted[name]

    def reachable_defs(self, root: dict[str, Any]) -> dict[str, Any]:
        """The converted definitions the output still refers to (inlined ones are pruned)."""
        out: dict[str, Any] = {}
        pending = [self._def_name(ref, ()) for ref in _refs(root)]
        while pending:
            name = pending.pop()
            if name in out:
                continue
            out[name] = self.definition(name)
            pending.extend(self._def_name(ref, ("$defs", name)) for ref in _refs(out[name]))
        return {name: out[name] for name in self.defs if name in out}  # pydantic's order

    # --- nodes --------------------------------------------------------------------------------

    def root(self) -> dict[str, Any]:
        """The converted root (a root `$ref`, as pydantic emits for recursive models, inlined)."""
        node = self.convert(self.source, ())
        if set(node) == {"$ref"}:
            return copy.deepcopy(self.definition(self._def_name(node["$ref"], ())))
        branches = node.get("anyOf")
        if isinstance(branches, list) and len(branches) == 1 and set(branches[0]) == {"$ref"}:
            # a described recursive root (`Annotated[Tree, Field(description=...)]`)
            body = self.definition(self._def_name(branches[0]["$ref"], ()))
            if body.get("type") == "object":
                annotations = {k: v for k, v in node.items() if k != "anyOf"}
                return {**copy.deepcopy(body), **annotations}
        return node

    def convert(self, schema: Any, path: tuple[str, ...]) -> dict[str, Any]:
        """Convert one schema node (and its children) to the strict subset."""
        if not isinstance(schema, dict):
            raise StrictSchemaUnsupported(f"boolean or non-object schema {schema!r}", path)
        node = {k: v for k, v in schema.items() if k not in _SILENT}
        if "allOf" in node:
            return self.convert(_merge_all_of(node, path), path)
        if "$ref" in node:
            return self._convert_ref(node, path)
        if "oneOf" in node:
            if "anyOf" in node:
                raise StrictSchemaUnsupported("both oneOf and anyOf", path)
            node["anyOf"] = node.pop("oneOf")

        out: dict[str, Any] = {}
        notes: list[str] = []
        kinds = _kinds(node)
        if len(kinds) > 1 and kinds & {"object", "array"}:
            raise StrictSchemaUnsupported(f"a node of several types {sorted(kinds)}", path)
        if kinds == {"object"} or (not kinds and "properties" in node):
            self._convert_object(node, out, path)
        elif kinds == {"array"}:
            self._convert_array(node, out, notes, path)
        if "anyOf" in node:
            branches = node.pop("anyOf")
            if not isinstance(branches, list) or not branches:
                raise StrictSchemaUnsupported("anyOf must be a non-empty list", path)
            out["anyOf"] = [
                self.convert(b, (*path, "anyOf", str(i))) for i, b in enumerate(branches)
            ]
        for key, value in node.items():
            if key in _KEPT or (key == "format" and value in SUPPORTED_FORMATS):
                out[key] = value
            else:
                notes.append(_describe(key, value, node))
        if not {"type", "anyOf", "enum", "const"} & out.keys():
            raise StrictSchemaUnsupported(
                "an untyped value (Any, or a schema with no type) cannot be constrained", path
            )
        if "type" not in out and "anyOf" not in out:
            out["type"] = _infer_type(out, path)
        return _with_notes(out, notes)

    def _convert_ref(self, node: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
        ref = node.pop("$ref")
        name = self._def_name(ref, path)
        constraining = sorted(set(node) - _ANNOTATIONS)
        if constraining:
            raise StrictSchemaUnsupported(
                f"$ref with constraining siblings {constraining} (cannot be merged safely)", path
            )
        if not node:
            return {"$ref": ref}
        if name in self.recursive:  # inlining would never end: annotate a one-branch anyOf
            out: dict[str, Any] = {"anyOf": [{"$ref": ref}]}
        else:
            out = copy.deepcopy(self.definition(name))
        notes: list[str] = []
        for key, value in node.items():
            if key in {"title", "description"}:
                out[key] = value  # the field's own annotation wins over the type's
            else:
                notes.append(_describe(key, value, node))
        return _with_notes(out, notes)

    def _convert_object(
        self, node: dict[str, Any], out: dict[str, Any], path: tuple[str, ...]
    ) -> None:
        props = node.pop("properties", None)
        extra = node.pop("additionalProperties", None)
        pattern_props = node.pop("patternProperties", None)
        node.pop("unevaluatedProperties", None)
        node.pop("required", None)  # every property becomes required (see the module docstring)
        node.pop("type", None)
        if props is None and (extra is not False or pattern_props):
            raise StrictSchemaUnsupported(
                "a free-form map (dict[str, X] or an object without named properties) cannot "
                "be expressed with additionalProperties: false; use a model with named fields",
                path,
            )
        if props is not None and not isinstance(props, dict):
            raise StrictSchemaUnsupported("properties must be an object", path)
        # Extra keys a model would also accept (extra="allow", patternProperties,
        # unevaluatedProperties) only widen what validates; the strict schema never produces
        # them, so forbidding them loses no constraint and needs no note.
        props = props or {}
        out["type"] = "object"
        out["properties"] = {
            key: self.convert(sub, (*path, "properties", key)) for key, sub in props.items()
        }
        out["required"] = list(props)
        out["additionalProperties"] = False

    def _convert_array(
        self, node: dict[str, Any], out: dict[str, Any], notes: list[str], path: tuple[str, ...]
    ) -> None:
        items = node.pop("items", None)
        prefix = node.pop("prefixItems", None)
        node.pop("type", None)
        out["type"] = "array"
        if isinstance(prefix, list) and prefix:
            branches = [
                self.convert(p, (*path, "prefixItems", str(i))) for i, p in enumerate(prefix)
            ]
            labels = [f"{i}. {_label(b)}" for i, b in enumerate(branches, 1)]
            size = _count(len(branches), "item", "items")
            note = f"A tuple of {size}, in this order: {'; '.join(labels)}."
            if isinstance(items, dict):
                tail = self.convert(items, (*path, "items"))
                branches.append(tail)
                note += f" Any further items: {_label(tail)}."
            notes.append(note)
            unique: dict[str, dict[str, Any]] = {}
            for branch in branches:
                unique.setdefault(json.dumps(branch, sort_keys=True), branch)
            out["items"] = (
                next(iter(unique.values()))
                if len(unique) == 1
                else {"anyOf": list(unique.values())}
            )
        elif isinstance(items, dict):
            out["items"] = self.convert(items, (*path, "items"))
        else:
            raise StrictSchemaUnsupported("an array needs an item schema", path)
        for key in ("minItems", "maxItems"):
            if key in node:
                out[key] = node.pop(key)


def _merge_all_of(node: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """Fold a one-branch `allOf` (pydantic's old `$ref` wrapper) into its node."""
    branches = node.pop("allOf")
    if not isinstance(branches, list) or len(branches) != 1 or not isinstance(branches[0], dict):
        raise StrictSchemaUnsupported("allOf with more than one branch (an intersection)", path)
    inner = branches[0]
    clash = sorted((set(inner) & set(node)) - _ANNOTATIONS)
    if clash:
        raise StrictSchemaUnsupported(f"allOf branch and its node both set {clash}", path)
    return {**inner, **node}


def _kinds(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def _infer_type(out: dict[str, Any], path: tuple[str, ...]) -> str | list[str]:
    """A `type` for an `enum`/`const` node that has none (`Literal[1, "a"]`)."""
    values = out["enum"] if "enum" in out else [out["const"]]
    kinds: list[str] = []
    for value in values:
        kind = next((name for cls, name in _JSON_TYPES if isinstance(value, cls)), None)
        if kind is None:
            raise StrictSchemaUnsupported(f"enum value {value!r} is not a JSON scalar", path)
        if kind not in kinds:
            kinds.append(kind)
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    return kinds[0] if len(kinds) == 1 else kinds


def _refs(schema: Any) -> Iterator[str]:
    """Every `$ref` string anywhere under `schema`."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def _with_notes(out: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    if notes:
        parts = [out["description"]] if isinstance(out.get("description"), str) else []
        parts = [p.strip() for p in [*parts, *notes] if p.strip()]
        out["description"] = " ".join(p if p[-1] in ".!?" else p + "." for p in parts)
    return out


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _count(n: Any, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _describe(key: str, value: Any, node: dict[str, Any]) -> str:
    """A removed keyword, in words."""
    if key in {"minLength", "maxLength"} and {"minLength", "maxLength"} <= node.keys():
        if key == "maxLength":
            return ""  # said together with minLength
        low, high = value, node["maxLength"]
        if low == high:
            return f"Must have exactly {_count(low, 'character', 'characters')}."
        return f"Must have {low} to {_count(high, 'character', 'characters')}."
    if key == "minLength":
        return f"Must have at least {_count(value, 'character', 'characters')}."
    if key == "maxLength":
        return f"Must have at most {_count(value, 'character', 'characters')}."
    if key == "uniqueItems":
        return "Items must be unique." if value else ""
    if key == "minProperties":
        return f"Must have at least {_count(value, 'property', 'properties')}."
    if key == "maxProperties":
        return f"Must have at most {_count(value, 'property', 'properties')}."
    if key == "default":
        return f"Default: {_json(value)}."
    if key == "examples":
        if isinstance(value, list) and len(value) == 1:
            return f"Example: {_json(value[0])}."
        if isinstance(value, list):
            return f"Examples: {', '.join(_json(v) for v in value)}."
        return f"Examples: {_json(value)}."
    if key == "format":
        return f"Format: {value}."
    if key == "discriminator":
        field = value.get("propertyName") if isinstance(value, dict) else value
        return f"The `{field}` field selects the variant."
    if key == "deprecated":
        return "Deprecated." if value else ""
    if key == "contains":
        low, high = node.get("minContains"), node.get("maxContains")
        count = f"at least {low}" if low is not None else "at least one"
        if high is not None:
            count += f" and at most {high}"
        return f"Must contain {count} item(s) matching {_json(value)}."
    if key in {"minContains", "maxContains"}:
        return "" if "contains" in node else f"{key}: {_json(value)}."
    if key == "not":
        return f"Must not match {_json(value)}."
    if key == "propertyNames":
        return f"Keys must match {_json(value)}."
    if key == "if":
        text = f"If it matches {_json(value)}"
        text += f", it must match {_json(node['then'])}" if "then" in node else ""
        text += f"; otherwise it must match {_json(node['else'])}" if "else" in node else ""
        return text + "."
    if key in {"then", "else"}:
        return "" if "if" in node else f"{key}: {_json(value)}."
    return f"{key}: {_json(value)}."


def _label(schema: dict[str, Any]) -> str:
    """A short name for an item schema (tuple positions)."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "const" in schema:
        return _json(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(_json(v) for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_label(b) for b in schema["anyOf"])
    if "title" in schema and schema.get("type") == "object":
        return str(schema["title"])
    kind = schema.get("type")
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"array of {_label(schema['items'])}"
    if isinstance(kind, list):
        return " or ".join(map(str, kind))
    return str(kind or "value")


def strict_format(type_: Any) -> dict[str, Any]:
    """The strict `response_format` for `type_`, built once per spelling of it and shared by
    its requests (the SDK only reads it)."""
    return _strict_format(type_, spelling(type_))


@functools.lru_cache(maxsize=256)
def _strict_format(type_: Any, spelled: str) -> dict[str, Any]:
    return strict_json_schema(type_).response_format()
