"""What a stream may judge before its end: only what no later text can change.

A streamed answer is the same reply the unstreamed call would get, so an early verdict must be
the final check's verdict, whatever the rest of the text holds. Two things make that provable
only in narrow cases:

* The final check (L1) reads the whole reply: a model may write a draft or an example, then the
  answer, and L1 takes the one that fits. So nothing is judged early unless the answer is one
  JSON value by construction: a tool call's arguments, or a request the adapter says
  constrains the output to one JSON value (`wrap()`'s JSON-mode tiers, or such a
  `response_format` the caller chose; `Healer.stream` over the caller's own function cannot see
  the request, so only tool calls count there). A reply that repeats a key inside that value is
  the one exception left: the later value of a repeated key replaces the first.
* L1 aligns the data to the schema (keys in another case, number words, encoded objects, one-key
  wrappers), and the model's own validators may read other fields or rewrite the whole input.
  So a top-level field is judged only when its key is the field's own name (no alias, no
  alignment needed), the model has no `before` / `wrap` model validator, and no validator of the
  field reads other fields (`ValidationInfo`); it is validated by the model itself, as the final
  check does (JSON mode, lax, its validators and config); and it is a breach only when L1's
  alignment cannot make the member fit either (a bound, a length, a pattern, a validator's
  `ValueError`) — a number word or an enum in another case is left to the final check, and so is
  an accepted member that holds a key spelling a field left at its default (`align.settled`). (An
  `after` model validator or `model_post_init` never runs on a rejected field, but may change
  an accepted one: such a model's fields are not handed to contracts early.)

An object JSON Schema's field is judged the same way when the schema relates no fields to each
other (its root holds only `type`, `properties`, `required`, `additionalProperties`, `$defs`
and annotations; every `$ref` names a definition): validated, laxly, by a schema that holds that
property alone, a breach only when alignment cannot make it fit either. (Its contracts read the
plain value by key: none is run early.)

A contract is run early only on such fields, when every field it declares has arrived, on a
stand-in that holds those fields alone: reading any other attribute (a defaulted or undeclared
field, a method) means it cannot be judged yet. A violation it returns is final; a contract that
raises, or changes the fields it reads, is never a reason to stop, and after one no later breach
stops the answer either (the final check ends on its `contract_error`, as the unstreamed call
does).

What a stop changes, then, is only what the stream did not read: the run makes the repair call
the unstreamed run makes (its prompt names the breach found, perhaps not every other problem
the whole answer had). A breach followed by a cut at the token limit would have been a
truncation, repaired too — unless `HealPolicy(on_truncation="degrade")` ends the run on a cut:
then nothing is stopped early (the healer passes `abort=False`).
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, Final

from pydantic import BaseModel, ValidationError, create_model
from pydantic_core import ErrorDetails, to_json

from healjson._core.parse.align import Fit, align, settled
from healjson._core.target.json_schema import JsonSchema, json_schema_of
from healjson._core.target.target import target_for

__all__ = ["FieldVerdict", "Stand", "judge_field", "judge_schema_field"]


class FieldVerdict(typing.NamedTuple):
    """A field judged alone: `value` validated (None: not judged) or the `errors` that reject
    it whatever follows."""

    judged: bool
    value: Any = None
    errors: tuple[ErrorDetails, ...] = ()


_NOT_JUDGED = FieldVerdict(False)


def judge_field(model: type[BaseModel], key: str, data: Any, context: Any = None) -> FieldVerdict:
    """Validate the top-level member `key: data` the way the final check will (`context`:
    pydantic's validation context, as there); see the module docstring for when that verdict
    is final."""
    probe = _probe(model, key)
    if probe is None:
        return _NOT_JUDGED
    member = {key: data}
    try:
        raw = to_json(member, inf_nan_mode="constants")
        instance = probe.model_validate_json(raw, context=context)
    except ValidationError as exc:
        errors = [e for e in exc.errors() if e["loc"][:1] == (key,)]
        if len(errors) != exc.error_count() or not errors:
            return _NOT_JUDGED
        # L1's alignment reads a member by its own shape and value alone (its key is the
        # field's name): what it cannot make fit here, it cannot make fit in the whole answer
        if align(target_for(probe), {key: data}, context).ok:
            return _NOT_JUDGED
        return FieldVerdict(True, errors=tuple(errors))
    except Exception:  # a validator that fails oddly: the final check decides
        return _NOT_JUDGED
    if _reshaped_after(model):  # the final value may differ: not one for contracts to read
        return _NOT_JUDGED
    # a key inside it that spells a field left at its default: the final check decides
    if settled(target_for(probe), member, Fit(instance, member), context).instance is not instance:
        return _NOT_JUDGED
    return FieldVerdict(True, getattr(instance, key))


def judge_schema_field(schema: JsonSchema, key: str, data: Any) -> FieldVerdict:
    """`judge_field` for an object JSON Schema: the member validated by a schema that holds
    that property alone (its `$defs` carried), as the final check validates it (lax); judged
    only when the schema relates no fields to each other (see `_schema_probe`)."""
    probe = _schema_probe(schema, key)
    if probe is None:
        return _NOT_JUDGED
    target = target_for(probe)
    try:
        value = target.adapter.validate_json(to_json({key: data}, inf_nan_mode="constants"))
    except ValidationError as exc:
        errors = [e for e in exc.errors() if e["loc"][:1] == (key,)]
        if len(errors) != exc.error_count() or not errors:
            return _NOT_JUDGED
        if align(target, {key: data}).ok:  # as for a model: what alignment makes fit
            return _NOT_JUDGED
        return FieldVerdict(True, errors=tuple(errors))
    except Exception:  # a validator that fails oddly: the final check decides
        return _NOT_JUDGED
    member = {key: data}
    if settled(target, member, Fit(value, member)).instance is not value:  # a key to align
        return _NOT_JUDGED
    return FieldVerdict(True, value[key])


_ALONE: Final = frozenset(
    {"type", "properties", "required", "additionalProperties", "$defs", "definitions"}
    | {"$schema", "$comment", "title", "description", "examples", "default", "deprecated"}
)
"""Root keywords of an object schema whose properties are each judged alone (no `anyOf`,
`if`, `dependentRequired`, `minProperties`... that relate one field to the others)."""


@functools.lru_cache(maxsize=1024)
def _schema_probe(schema: JsonSchema, name: str) -> JsonSchema | None:
    root = schema.schema
    props = root.get("properties")
    if not (root.keys() <= _ALONE and root.get("type") == "object" and isinstance(props, dict)):
        return None
    if name not in props or not isinstance(props[name], dict) or not schema.local_refs_only:
        return None
    carried: dict[str, Any] = {
        key: root[key] for key in ("$schema", "$defs", "definitions") if key in root
    }
    return json_schema_of({"type": "object", "properties": {name: props[name]}, **carried})


def _reshaped_after(model: type[BaseModel]) -> bool:
    """Whether the model changes its instance after its fields validated (an `after` model
    validator, `model_post_init`). Those never run on a rejected field, so a rejection stands;
    an accepted value may still change."""
    return bool(model.__pydantic_decorators__.model_validators) or (
        model.__pydantic_post_init__ is not None
    )


@functools.lru_cache(maxsize=1024)
def _probe(model: type[BaseModel], name: str) -> type[BaseModel] | None:
    """The model that judges field `name` alone (`_optional_twin`: every field optional, each
    keeping its type, validators and the model's config; a member holding `name` alone is
    validated as the model validates it), or None when `name` cannot be judged alone."""
    from pydantic import RootModel  # building its class costs `import healjson` ~30 ms

    if issubclass(model, RootModel):  # its one field is the whole value, not a member
        return None
    fields = model.model_fields
    info = fields.get(name)
    if info is None or info.alias not in (None, name) or info.validation_alias not in (None, name):
        return None
    decorators = model.__pydantic_decorators__
    if decorators.root_validators or any(
        validator.info.mode != "after" for validator in decorators.model_validators.values()
    ):
        return None  # they may rewrite the whole input: no field is judged alone
    for decorator in decorators.field_validators.values():
        fields_of = decorator.info.fields
        if (name in fields_of or "*" in fields_of) and _takes_info(
            decorator.func, decorator.info.mode
        ):
            return None
    if not _self_contained(info.metadata) or not _self_contained_type(info.annotation):
        return None
    return _optional_twin(model)


@functools.lru_cache(maxsize=256)
def _optional_twin(model: type[BaseModel]) -> type[BaseModel] | None:
    """`model` with every field optional (default None, never validated: a field the member
    leaves out is neither checked nor reported), each keeping its type, validators and the
    model's config; None for a model that cannot be subclassed this way. One per model, built
    in time linear in its fields: every field of a wide model is judged by it, so a stream's
    first answer costs no more per field than its next ones (a twin per field made each
    field's verdict cost the whole model)."""
    from pydantic.fields import FieldInfo  # here: its import costs `import healjson` ~25 ms

    optional: dict[str, Any] = {
        field: (info.annotation, FieldInfo.merge_field_infos(
            info, default=None, default_factory=None, validate_default=False
        ))
        for field, info in model.model_fields.items()
    }  # fmt: skip
    try:
        twin = create_model(f"{model.__name__}Probe", __base__=model, **optional)
    except Exception:  # a model that cannot be subclassed this way: not judged
        return None
    if twin.model_config.get("validate_default"):  # the defaults stand in for absent fields
        return None
    return twin


def _self_contained(metadata: Any) -> bool:
    for item in metadata:
        func = getattr(item, "func", None)
        if callable(func) and _takes_info(func, _mode_of(item)):
            return False
    return True


def _self_contained_type(annotation: Any, depth: int = 0) -> bool:
    """No validator in the field's type reads other fields (nested models validate alone)."""
    if depth > 8:
        return False
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *metadata = typing.get_args(annotation)
        return _self_contained(metadata) and _self_contained_type(inner, depth + 1)
    return all(_self_contained_type(arg, depth + 1) for arg in typing.get_args(annotation))


def _mode_of(item: Any) -> str:
    name = type(item).__name__.lower()
    return "wrap" if "wrap" in name else "before"


def _takes_info(func: Callable[..., Any], mode: str) -> bool:
    """Whether a validator takes `ValidationInfo` (so it may read other fields)."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return True
    positional = 0
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        if parameter.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            positional += 1
    return positional >= (3 if mode == "wrap" else 2)


class _Undeclared(Exception):
    """A contract read what a stand-in does not hold: it cannot be judged yet."""


class Stand:
    """Stands in for the model instance while a contract is judged early: it holds the
    contract's declared fields (validated) and nothing else."""

    __slots__ = ("_fields", "touched")

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields
        self.touched = False
        """True once the contract read anything else."""

    def __getattr__(self, name: str) -> Any:
        fields = object.__getattribute__(self, "_fields")
        if name in fields:
            return fields[name]
        object.__setattr__(self, "touched", True)
        raise _Undeclared(name)

    def __getitem__(self, key: Any) -> Any:
        object.__setattr__(self, "touched", True)
        raise _Undeclared(str(key))
