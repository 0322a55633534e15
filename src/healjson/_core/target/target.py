"""Target types: anything pydantic can validate, behind one cached `Target` object.

A target may be a `BaseModel` subclass or any type a `TypeAdapter` accepts (`list[Item]`,
`Literal[...]`, enums, unions, `TypedDict`, dataclasses). The adapter and the JSON schema are
built once per type. A JSON Schema dict is a target too (`json_schema.py`): its `type_` is a
`JsonSchema` and its adapter a `SchemaAdapter`, built once per schema (equal schemas share it).
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import GenericAlias, UnionType
from typing import Any, Final, Generic, TypeAlias, TypeVar, _SpecialForm

from pydantic import BaseModel, TypeAdapter
from pydantic_core import SchemaValidator, to_json

from .json_schema import JsonSchema, SchemaAdapter, json_schema_of, resolve_ref

__all__ = [
    "JsonSchema",
    "SpecialForm",
    "Target",
    "list_item_type",
    "resolve_ref",
    "spelling",
    "target_for",
]

SpecialForm: TypeAlias = "_SpecialForm | UnionType | GenericAlias"
"""How a type checker sees a target that is not a class: `Literal[...]`, `Annotated[...]`,
`Union[...]` / `X | Y`, `list[Item]`-style aliases (typed as `Healer[Any]`)."""

T = TypeVar("T")


@dataclass(frozen=True, eq=False)  # no slots: cached_property needs a __dict__
class Target(Generic[T]):
    """A validated-for target type with its adapter and (lazily) its JSON schema."""

    type_: Any
    adapter: TypeAdapter[T]
    """pydantic's adapter; for a JSON Schema target, a `SchemaAdapter` (the same methods)."""

    @property
    def name(self) -> str:
        """A readable name for the target (`SupportTicket`, `list[Item]`)."""
        return getattr(self.type_, "__name__", None) or repr(self.type_)

    @functools.cached_property
    def validate_json(self) -> Callable[..., Any]:
        """pydantic-core's `validate_json`, skipping the TypeAdapter wrapper on the hot path."""
        validator = getattr(self.adapter, "validator", None)
        if isinstance(validator, SchemaValidator):
            return validator.validate_json
        return self.adapter.validate_json

    @functools.cached_property
    def json_schema(self) -> dict[str, Any]:
        """The JSON schema pydantic derives for the target (validation mode)."""
        try:
            return self.adapter.json_schema()
        except Exception:  # some types (callables, arbitrary classes) have no JSON schema
            return {}

    @functools.cached_property
    def json_schema_text(self) -> str:
        """The schema as compact JSON, for prompts."""
        return json.dumps(self.json_schema, ensure_ascii=False, separators=(",", ":"))

    @functools.cached_property
    def field_names(self) -> frozenset[str] | None:
        """The names a rule may read at the top of the value, when the target is an object
        type whose names are known, else None (any name): a model's fields, their aliases, its
        computed fields and properties; a JSON Schema object's properties, unless its
        `additionalProperties` allows other keys (`true` or a schema)."""
        cls = self.type_
        if isinstance(cls, type) and issubclass(cls, BaseModel):
            names = set(cls.model_fields) | set(cls.model_computed_fields)
            for info in cls.model_fields.values():
                if isinstance(info.alias, str):
                    names.add(info.alias)
            names.update(
                name
                for klass in cls.__mro__
                if klass not in (BaseModel, object)
                for name, member in vars(klass).items()
                if isinstance(member, property | functools.cached_property)
            )
            return frozenset(names)
        schema = self.json_schema
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(props, dict) and schema.get("type") == "object" and not _allows(extra):
            return frozenset(props)
        return None

    @property
    def expects_object(self) -> bool:
        """True when the target validates from a JSON object."""
        return _kinds(self.json_schema, self.json_schema) >= {"object"} or (
            self.field_names is not None
        )

    def kinds_at(self, loc: tuple[str | int, ...]) -> frozenset[str]:
        """The JSON types (`object`, `array`, `string`, ...) the schema allows at `loc`."""
        root = self.json_schema
        return frozenset(k for sub in _subschemas_at(root, root, loc) for k in _kinds(root, sub))

    def choices_at(self, loc: tuple[str | int, ...]) -> list[Any]:
        """Enum/const values allowed at `loc` (used for case-insensitive enum matching)."""
        out: list[Any] = []
        for sub in _subschemas_at(self.json_schema, self.json_schema, loc):
            if isinstance(sub.get("enum"), list):
                out.extend(sub["enum"])
            if "const" in sub:
                out.append(sub["const"])
        return out


def spelling(type_: Any) -> str:
    """What tells apart two spellings of `type_` that Python calls equal, for a cache keyed on
    `(type_, spelling(type_))`. Python compares typing forms as sets: `Literal["a", "b"] ==
    Literal["b", "a"]` and `int | str == str | int`, with equal hashes, also nested
    (`list[Literal["b", "a"]]`). Keyed on the type alone, a cache would hand one spelling
    what was built for the other: its enum and `anyOf` order, its schema name, and for a
    union the member pydantic tries first. A class (a model, an enum) is its own spelling."""
    kind = type(type_)
    return repr(type_) if kind in _ALIASES or kind.__module__ == "typing" else ""


_ALIASES: Final = (GenericAlias, UnionType)


@functools.lru_cache(maxsize=512)
def _cached_target(type_: Any, spelled: str) -> Target[Any]:
    if isinstance(type_, JsonSchema):
        return Target(type_, typing.cast(Any, SchemaAdapter(type_)))
    return Target(type_, _complete_adapter(type_))


def _complete_adapter(type_: Any) -> TypeAdapter[Any]:
    """pydantic's adapter for `type_`, every name in it resolved now: a string or a forward
    reference naming nothing pydantic can find would otherwise fail on every reply, spending
    every attempt (raises pydantic's error, which `target_for` reports)."""
    adapter: TypeAdapter[Any] = TypeAdapter(type_)
    if not adapter.pydantic_complete:
        adapter.rebuild(raise_errors=True)
    return adapter


def target_for(type_: Any) -> Target[Any]:
    """Return the (cached) `Target` for a type or a JSON Schema dict; raises a clear error for
    anything else (TypeError; ValueError for a dict that is not a usable JSON Schema)."""
    if isinstance(type_, Target):
        return type_
    if type(type_) is dict:  # a JSON Schema: found by its rendering, not re-canonicalised
        return _schema_target(type_)
    try:
        return _cached_target(type_, spelling(type_))
    except TypeError as exc:
        if "unhashable" not in str(exc):
            raise _bad_target(type_, exc) from exc
    except Exception as exc:  # pydantic's schema-generation error is a RuntimeError
        if isinstance(type_, JsonSchema) and isinstance(exc, ValueError):
            raise  # the schema's own check: its message says what is wrong
        raise _bad_target(type_, exc) from exc
    if isinstance(type_, Mapping):  # a JSON Schema (a dict is unhashable: keyed by its text)
        return _cached_target(json_schema_of(type_), "")
    try:
        return Target(type_, _complete_adapter(type_))
    except Exception as exc:
        raise _bad_target(type_, exc) from exc


_BY_RENDERING: dict[bytes, Target[Any]] = {}
_RENDERINGS: Final = 512


def _schema_target(schema: dict[str, Any]) -> Target[Any]:
    """The target of a schema dict, found by its plain JSON rendering (`to_json`: several
    times cheaper than the sorted canonical text, which it then needs only once per rendering:
    the hot path of `validate(text, {...})` called with the same schema on every call). A
    rendering stands for the schema it renders (`NaN` and infinities render as no JSON text
    does, so a schema the canonical text refuses never shares one's target)."""
    try:
        key = to_json(schema, inf_nan_mode="constants")
    except Exception:
        key = None
    if key is not None:
        found = _BY_RENDERING.get(key)
        if found is not None:
            return found
    target = _cached_target(json_schema_of(schema), "")
    if key is not None:
        if len(_BY_RENDERING) >= _RENDERINGS:
            _BY_RENDERING.clear()
        _BY_RENDERING[key] = target
    return target


def clear_targets() -> None:
    """Forget every cached target (tests: a target built again, e.g. without `jsonschema-rs`)."""
    _cached_target.cache_clear()
    _BY_RENDERING.clear()


def _bad_target(type_: Any, exc: Exception) -> TypeError:
    hint = (
        " A string is read as a type expression pydantic resolves without your module's names "
        "('int', 'list[int]'): pass the class itself."
        if isinstance(type_, str)
        else ""
    )
    return TypeError(
        f"healjson cannot validate against {type_!r}: pass a pydantic model class or any type "
        f"pydantic's TypeAdapter accepts (list[Item], Literal[...], an Enum, a TypedDict...)."
        f"{hint} pydantic said: {exc}"
    )


def _alternatives(root: dict[str, Any], schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    schema = resolve_ref(root, schema)
    branches = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if isinstance(branches, list):
        for branch in branches:
            if isinstance(branch, dict):
                yield from _alternatives(root, branch)
    else:
        yield schema


def _kinds(root: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    kinds: set[str] = set()
    for alt in _alternatives(root, schema):
        kind = alt.get("type")
        if isinstance(kind, str):
            kinds.add(kind)
        elif isinstance(kind, list):
            kinds.update(k for k in kind if isinstance(k, str))
        elif "properties" in alt:
            kinds.add("object")
    return kinds


def _subschemas_at(
    root: dict[str, Any], schema: dict[str, Any], loc: tuple[str | int, ...]
) -> Iterator[dict[str, Any]]:
    if not loc:
        yield from _alternatives(root, schema)
        return
    head, rest = loc[0], loc[1:]
    for alt in _alternatives(root, schema):
        if isinstance(head, int):
            items = alt.get("items")
            if isinstance(items, dict):
                yield from _subschemas_at(root, items, rest)
            prefix = alt.get("prefixItems")
            if isinstance(prefix, list) and head < len(prefix):
                yield from _subschemas_at(root, prefix[head], rest)
            continue
        props = alt.get("properties")
        if isinstance(props, dict) and isinstance(props.get(head), dict):
            yield from _subschemas_at(root, props[head], rest)
        extra = alt.get("additionalProperties")
        if isinstance(extra, dict):
            yield from _subschemas_at(root, extra, rest)


def list_item_type(type_: Any) -> Any:
    """The item type of a `list[X]` / `tuple[X, ...]` / `Sequence[X]` target (for an array
    JSON Schema: its items' `JsonSchema`, when they stand alone), else None."""
    origin = typing.get_origin(type_)
    if origin is typing.Annotated:
        return list_item_type(typing.get_args(type_)[0])
    args = typing.get_args(type_)
    sequence = origin in (list, tuple, set, frozenset) or (
        origin is not None and getattr(origin, "__name__", "") in ("Sequence", "Iterable")
    )
    if sequence and args and (origin is not tuple or (len(args) == 2 and args[1] is Ellipsis)):
        return args[0]
    return type_.items if isinstance(type_, JsonSchema) else None


def _allows(extra: Any) -> bool:
    """Whether an `additionalProperties` value allows keys besides the properties."""
    return extra is True or isinstance(extra, dict)
