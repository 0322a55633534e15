"""JSON Schema targets: a JSON Schema dict wherever a target type is taken.

`target_for({"type": "object", ...})` wraps the dict in a `JsonSchema` (hashable: equal schemas,
compared as canonical JSON text, share one cached target) and validates with `SchemaAdapter`,
a stand-in for pydantic's `TypeAdapter` with the methods healjson calls on it:

- validation by the maintained `jsonschema` package (with the `fast` extra, `jsonschema-rs`
  says "valid" first, meaning the same: `json_schema_fast`): the draft the schema's `$schema` names,
  Draft 2020-12 without one; the schema itself is checked when the target is built (a schema
  that is not valid JSON Schema, an unknown `$schema`, a `$ref` to anything outside the schema,
  relative ones under a remote `$id` included: `ValueError` naming it, the caller's bug; no
  schema is ever fetched, and a reference that still resolves to nothing while validating is
  the value's error, `json_schema_ref`). Patterns (`pattern`, `patternProperties`) run within a
  time budget per validation (`patterns`): one cut short is the value's error,
  `json_schema_pattern_timeout`. `format` is an annotation, as the 2020-12 default says (a
  check that depends on which optional packages are installed would make a schema mean
  different things on different machines): use `pattern` or a contract to enforce one;
- the value of a valid answer is the plain JSON value (dict, list, str, ...);
- errors are raised as pydantic's `ValidationError` with pydantic's error types where one means
  the same (`missing`, `greater_than_equal`, `string_too_short`, `enum`, ...; `schema_errors`
  turns them into diagnostic triples as for a model), `json_schema_<keyword>` otherwise;
- "lax" validation (what pydantic's lax mode is for a model: the `coerced` step of alignment)
  converts a scalar to the one JSON type its node allows, when exactly one reading fits
  (`json_schema_lax`): `"5"` for an integer, `"true"` for a boolean;
- pydantic's validation `context=` has nothing to reach in a JSON Schema: it is ignored.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic_core import PydanticSerializationError, ValidationError, from_json, to_json

from .json_schema_errors import holds_infinity, line_errors, overflow_lines
from .json_schema_fast import fast_is_valid
from .json_schema_lax import lax
from .patterns import BOUNDED_KEYWORDS, pattern_budget
from .schema_refs import pointer, remote_refs, resolve_ref

__all__ = ["JsonSchema", "SchemaAdapter", "json_schema_of", "resolve_ref"]

_ARRAY_ONLY: Final = frozenset(
    {"type", "items", "$defs", "definitions", "$schema", "$comment", "title", "description"}
    | {"examples", "default", "deprecated", "readOnly", "writeOnly"}
)
"""Root keywords of an array schema with nothing on the list itself (no bound, no rule across
items): its items can be judged one by one."""
_BASE_CHANGERS: Final = frozenset(
    {"$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor"}
)
_LOCAL_DEFS: Final = ("#/$defs/", "#/definitions/")
_TITLE_CHARS: Final = 64
_BIG_NUMBER: Final = r"[eE]\+?0*[1-9][0-9]{2}|[0-9]{200}"
_BIG_TEXT: Final = re.compile(_BIG_NUMBER)
_REMEMBERED_FROM: Final = 1 << 16  # characters: a shorter invalid text is judged again
_BIG_BYTES: Final = re.compile(_BIG_NUMBER.encode())
"""Where a JSON text may hold a number a 64-bit float cannot (at least 1e308): an exponent of
three digits, or 200 digits in a row. Only a text with one is searched for an overflow."""


class JsonSchema:
    """A JSON Schema as a target "type": hashable, compared by its canonical JSON text.

    `schema` is healjson's own copy (the caller may change theirs afterwards): read-only.
    `__name__` is the schema's `title`, else `Response` (what prompts and request names say).
    """

    def __init__(self, source: Mapping[str, Any], text: str) -> None:
        self._source: Mapping[str, Any] | None = source
        self.text = text
        title = source.get("title")
        self.__name__ = (
            title.strip()[:_TITLE_CHARS] if isinstance(title, str) and title.strip() else "Response"
        )

    @functools.cached_property
    def schema(self) -> dict[str, Any]:
        """healjson's copy of the schema, taken when the target is built (in the caller's key
        order); a `JsonSchema` made only to look a cached target up never copies."""
        source, self._source = self._source, None
        copied: dict[str, Any] = json.loads(json.dumps(source, ensure_ascii=False))
        return copied

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonSchema) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"JsonSchema({self.__name__})"

    @functools.cached_property
    def items(self) -> JsonSchema | None:
        """The schema of the items of an array schema, standing alone (the root's `$defs`
        carried along), or None when they cannot stand alone: not an array of one item schema,
        or references other than to `$defs` / `definitions` (a `#` back to the root, `$id`s)."""
        root = resolve_ref(self.schema, self.schema)
        items = root.get("items")
        if root.get("type") != "array" or not isinstance(items, dict) or "prefixItems" in root:
            return None
        if not self.local_refs_only:
            return None
        carried: dict[str, Any] = {
            key: self.schema[key]
            for key in ("$schema", "$defs", "definitions")
            if key in self.schema
        }
        if carried.keys() & items.keys():
            return None
        return json_schema_of({**items, **carried})

    @functools.cached_property
    def local_refs_only(self) -> bool:
        """Every reference names a definition (`#/$defs/...`, `#/definitions/...`) and no
        keyword moves where references resolve: a part of the schema stands alone with them."""
        return _self_contained(self.schema)

    @functools.cached_property
    def plain_array(self) -> bool:
        """An array schema with nothing on the list itself (no length bound, no `uniqueItems`,
        no `contains`): a valid item stays valid whatever the other items are."""
        return self.items is not None and self.schema.keys() <= _ARRAY_ONLY


def json_schema_of(schema: Mapping[str, Any]) -> JsonSchema:
    """The `JsonSchema` for a schema mapping (raises TypeError for data that is not JSON).
    Any mapping is read as the plain dict it holds (a `MappingProxyType`, a frozen mapping),
    at every depth: `jsonschema` and the walks over the schema expect dicts."""
    schema = _plain(schema)
    try:
        text = json.dumps(
            schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"a JSON Schema target must be JSON data (a dict of JSON values): {exc}"
        ) from exc
    return JsonSchema(schema, text)


def _plain(value: Any) -> Any:
    """`value` with every mapping a dict (a dict kept as it is when nothing in it changes)."""
    if isinstance(value, Mapping):
        items = {key: _plain(item) for key, item in value.items()}
        if type(value) is dict and all(items[key] is item for key, item in value.items()):
            return value
        return items
    if isinstance(value, list):
        converted = [_plain(item) for item in value]
        if all(new is old for new, old in zip(converted, value, strict=True)):
            return value
        return converted
    return value


class SchemaAdapter:
    """Validates against one JSON Schema; the `TypeAdapter` methods healjson uses (see the
    module docstring). Built once per schema (`target_for` caches it)."""

    pydantic_complete = True

    def __init__(self, schema: JsonSchema) -> None:
        self.type_ = schema
        self._validator = _validator(schema.schema)
        self._fast = fast_is_valid(schema.schema, self._validator)
        """`jsonschema-rs`'s `is_valid` when installed and trusted with the schema
        (`json_schema_fast`): a valid value costs no `jsonschema` run."""
        self._failed: tuple[Any, bool | None, ValidationError] | None = None
        """The last large JSON text found invalid, with its error (`_remembered`)."""

    def validate_json(
        self, data: str | bytes | bytearray, /, *, strict: bool | None = None, **_: Any
    ) -> Any:
        """The JSON value `data` holds, when it is valid (`strict=False` / None: the lax
        conversions first, for a value that fails as written); else a `ValidationError`."""
        try:
            value = from_json(data, allow_inf_nan=False)  # NaN and Infinity are not JSON
        except ValueError as exc:
            raise _error("json_invalid", (), _shown(data), {"error": str(exc)}) from None
        big = _BIG_TEXT.search(data) if isinstance(data, str) else _BIG_BYTES.search(data)
        if big and holds_infinity(value):
            # a number too large for a float is read as infinity, which is not JSON
            lines = overflow_lines(data, value)
            raise ValidationError.from_exception_data(self.type_.__name__, lines)
        return self._remembered(len(data), None, value, strict)

    def validate_python(self, value: Any, /, *, strict: bool | None = None, **_: Any) -> Any:
        """`value` as JSON data (a copy: tuples become lists), when it is valid."""
        try:
            text = to_json(value, inf_nan_mode="constants")
            data = from_json(text, allow_inf_nan=False)
        except (PydanticSerializationError, ValueError) as exc:
            raise _error("json_schema_json", (), value, {"error": str(exc)}) from None
        return self._remembered(len(text), text, data, strict)

    def dump_python(self, value: Any, /, **_: Any) -> Any:
        """A copy of the value as JSON data (the value already is: no aliases, no modes)."""
        return from_json(to_json(value, inf_nan_mode="constants"))

    def dump_json(self, value: Any, /, **_: Any) -> bytes:
        """The value as JSON text."""
        return to_json(value, inf_nan_mode="constants")

    def json_schema(self, *_: Any, **__: Any) -> dict[str, Any]:
        """The schema (healjson's copy: read-only)."""
        return self.type_.schema

    def rebuild(self, *_: Any, **__: Any) -> bool:
        """Nothing to rebuild: every name resolved when the schema was checked."""
        return True

    def _remembered(self, size: int, compact: bytes | None, value: Any, strict: bool | None) -> Any:
        """`_checked` of `value` (`size`: its JSON text's length; `compact`: its compact JSON,
        when known), except that a large value found invalid just before is not judged again:
        its error is given again (a value and a schema give the same errors every time; a lax
        judgement, the strict one's when the lax conversions change nothing). The value is
        known by its compact JSON, however its text was spaced. The readings of one reply
        judge it several times, and `jsonschema` spends seconds per megabyte finding an
        invalid value's errors."""
        if size < _REMEMBERED_FROM:
            return self._checked(value, strict)
        key = to_json(value) if compact is None else compact  # the value's one spelling
        failed = self._failed
        if failed is not None and (failed[0] is key or failed[0] == key):
            if failed[1] == strict:
                raise failed[2].with_traceback(None)
            if failed[1] and not strict and lax(self.type_.schema, value) is value:
                raise failed[2].with_traceback(None)
        try:
            return self._checked(value, strict)
        except ValidationError as exc:
            self._failed = (key, strict, exc)  # one assignment: readers see old or new
            raise

    def _checked(self, value: Any, strict: bool | None) -> Any:
        """`value` when valid; every pattern of the check within one budget (`patterns`), a
        reference that cannot be resolved an error of its own (never fetched)."""
        from referencing.exceptions import Unresolvable

        with pattern_budget():
            try:
                return self._judged(value, strict)
            except Unresolvable as exc:
                raise _error("json_schema_ref", (), value, {"error": _unresolved(exc)}) from None

    def _judged(self, value: Any, strict: bool | None) -> Any:
        fast = self._fast
        if fast is not None:
            try:
                if fast(value):
                    return value
            except Exception:  # e.g. a string `jsonschema-rs` cannot read: `jsonschema` judges
                pass
        validator = self._validator
        errors = validator.iter_errors(value)
        first = next(errors, None)
        if first is None:
            return value
        if not strict:
            converted = lax(self.type_.schema, value)
            if converted is not value:
                errors = validator.iter_errors(converted)
                first = next(errors, None)
                if first is None:
                    return converted
                value = converted
        # the walk that found the first error goes on for the others (a second one would cost
        # as much again: seconds per megabyte)
        found = itertools.chain((first,), errors)
        raise ValidationError.from_exception_data(
            self.type_.__name__, line_errors(validator, value, found)
        )


def _error(kind: str, loc: tuple[str | int, ...], value: Any, ctx: dict[str, Any]) -> Exception:
    from pydantic_core import PydanticCustomError

    if kind == "json_invalid":
        line: Any = {"type": kind, "loc": loc, "input": value, "ctx": ctx}
    elif kind == "json_schema_ref":
        message = "Input cannot be checked: {error}"
        line = {"type": PydanticCustomError(kind, message, ctx), "loc": loc, "input": value}
    else:
        message = "Input should be JSON data ({error})"
        line = {"type": PydanticCustomError(kind, message, ctx), "loc": loc, "input": value}
    return ValidationError.from_exception_data("JSON Schema", [line])


def _unresolved(exc: Exception) -> str:
    """Which reference could not be resolved (`jsonschema` wraps `referencing`'s error)."""
    cause = getattr(exc, "_wrapped", exc)
    ref, anchor = getattr(cause, "ref", None), getattr(cause, "anchor", None)
    if isinstance(anchor, str):
        ref = f"{ref or ''}#{anchor}"
    said = f"$ref {ref!r}" if isinstance(ref, str) and ref else "a $ref"
    return f"{said} of the schema cannot be resolved inside it (healjson never fetches a schema)"


def _shown(data: Any) -> Any:
    if isinstance(data, bytes | bytearray):
        return bytes(data[:1000]).decode("utf-8", "replace")
    return data[:1000] if isinstance(data, str) else data


def _validator(schema: dict[str, Any]) -> Any:
    """The checked validator for `schema` (ValueError: not a usable JSON Schema)."""
    from jsonschema import Draft202012Validator, exceptions, validators

    cls: Any = Draft202012Validator
    if "$schema" in schema:
        cls = validators.validator_for(schema, default=None)
    if cls is None:
        raise ValueError(
            f"unknown $schema {schema.get('$schema')!r}: name a JSON Schema draft "
            "(https://json-schema.org/draft/2020-12/schema, draft-07, ...) or leave it out"
        )
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path) or "<root>"
        raise ValueError(f"not a valid JSON Schema at {where}: {exc.message}") from None
    _check_refs(schema, "id" if cls.__name__ in _ID_DRAFTS else "$id")
    bounded: Any = validators.extend(cls, BOUNDED_KEYWORDS)
    bounded.__name__ = bounded.__qualname__ = cls.__name__  # the draft `json_schema_fast` reads
    return bounded(schema, registry=_offline_registry())


_ID_DRAFTS: Final = frozenset({"Draft3Validator", "Draft4Validator"})


@functools.cache
def _offline_registry() -> Any:
    """A `referencing` registry that refuses every retrieval: a reference to a document the
    schema does not hold is `Unresolvable`, never fetched (`jsonschema`'s default would fetch
    it over HTTP)."""
    import referencing
    import referencing.exceptions

    missing: Any = referencing.exceptions.NoSuchResource  # attrs classes: no keyword stubs
    registry: Any = referencing.Registry

    def refuse(uri: str) -> Any:
        raise missing(ref=uri)

    return registry(retrieve=refuse)


def _check_refs(schema: dict[str, Any], id_key: str = "$id") -> None:
    """Every reference must resolve inside the schema: healjson never fetches a schema. A
    reference that leads outside it (an absolute URI, or a relative one under a remote `$id`)
    is refused, named with the document it would fetch."""
    remote = remote_refs(schema, id_key)
    if remote:
        shown = "; ".join(f"{ref!r} (would fetch {target})" for ref, target in remote[:5])
        more = f" and {len(remote) - 5} more" if len(remote) > 5 else ""
        raise ValueError(
            f"$ref {shown}{more} points outside the schema; healjson never fetches a schema "
            "and resolves only references inside it (put the definition under $defs)"
        )
    nested_ids = any(key in _BASE_CHANGERS for key, _ in _keywords(schema))
    for key, ref in _keywords(schema):
        if key != "$ref" or not isinstance(ref, str):
            continue
        if ref.startswith("#/") and not nested_ids and pointer(schema, ref) is None:
            raise ValueError(f"$ref {ref!r} does not resolve inside the schema")


def _keywords(node: Any) -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair of every object in the schema (iteratively: no depth limit)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            for key, value in current.items():
                yield key, value
                stack.append(value)
        elif isinstance(current, list):
            stack.extend(current)


def _self_contained(schema: dict[str, Any]) -> bool:
    """Whether every reference names a definition (`#/$defs/...`, `#/definitions/...`) and no
    keyword changes where references resolve: a part of it then stands alone with them."""
    for key, value in _keywords(schema):
        if key in _BASE_CHANGERS:
            return False
        if key == "$ref" and not (isinstance(value, str) and value.startswith(_LOCAL_DEFS)):
            return False
    return True
