"""`Partial[T]`: a read-only view of an answer still arriving, never a validated `T`.

A snapshot of a stream is JSON data read so far (`JsonStream.snapshot`). `Partial` wraps it with
the target's field names: `snap.customer` is the `customer` field if it has arrived, else None;
a nested model field is a `Partial` of that model, a list field a list (of `Partial`s for model
items). Values are the JSON values as received: not validated, not converted (a date is still
its string), possibly cut short (a string still arriving). The validated value is the stream's
`.outcome`. Building a view costs nothing per snapshot: fields are looked up when read.

Statically, `Partial[Order]` is its own type: a type checker rejects it where an `Order` is
expected, and every attribute read on it is `Any` (it may be None).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

__all__ = ["Partial"]

T = TypeVar("T")


class Partial(Generic[T]):
    """What has arrived of a `T` so far; see the module docstring."""

    __slots__ = ("_model", "complete", "data")

    def __init__(self, data: Any, model: Any = None, *, complete: bool = False) -> None:
        self.data = data
        """The JSON data read so far (shared with later snapshots: do not mutate it)."""
        self.complete = complete
        """True when the whole JSON value has arrived (it may still fail validation)."""
        self._model = model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        model = self._model
        data = self.data
        if not isinstance(data, dict):
            return None
        fields = getattr(model, "model_fields", None)
        if fields is None:
            return data.get(name)
        info = fields.get(name)
        if info is None:
            raise AttributeError(f"{getattr(model, '__name__', model)!r} has no field {name!r}")
        value = data.get(info.alias or name, data.get(name))
        return _view(value, info.annotation)

    def __getitem__(self, key: Any) -> Any:
        data = self.data
        if isinstance(data, dict | list):
            try:
                return _view(data[key], _item_type(self._model))
            except (KeyError, IndexError):
                return None
        return None

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.data, list):
            item = _item_type(self._model)
            return iter([_view(value, item) for value in self.data])
        return iter(())

    def __len__(self) -> int:
        return len(self.data) if isinstance(self.data, dict | list | str) else 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Partial):
            return bool(self.data == other.data)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = getattr(self._model, "__name__", None) or "Any"
        state = "complete" if self.complete else "partial"
        return f"Partial[{name}]({state}: {self.data!r})"[:300]

    def to_dict(self) -> Any:
        """A deep copy of the data read so far (safe to change)."""
        return _copy(self.data)


def _view(value: Any, annotation: Any) -> Any:
    model = _model_of(annotation)
    if model is not None and isinstance(value, dict):
        return Partial(value, model)
    if isinstance(value, list):
        item = _model_of(_item_type(annotation))
        if item is not None:
            return [Partial(v, item) if isinstance(v, dict) else v for v in value]
    return value


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model an annotation names (through Optional / Annotated), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        models = [m for m in map(_model_of, typing.get_args(annotation)) if m is not None]
        return models[0] if len(models) == 1 else None
    return None


def _item_type(annotation: Any) -> Any:
    """The item type of a `list[X]` / `tuple[X, ...]` / `Sequence[X]` annotation (else Any)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _item_type(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    if origin is not None and args and isinstance(origin, type) and origin is not dict:
        return args[0]
    return Any


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value
