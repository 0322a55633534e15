"""`Partial[T]`: a read-only view of an answer still arriving, never a validated `T`.

A snapshot of a stream is JSON data read so far (`JsonStream.snapshot`). `Partial` wraps it with
the target's field names: `snap.customer` is the `customer` field if it has arrived, else None;
a nested model field is a `Partial` of that model, a list field a list (of `Partial`s for model
items). Values are the JSON values as received: not validated, not converted (a date is still
its string), possibly cut short (a string still arriving). The validated value is the stream's
`.outcome`. Building a view costs nothing per snapshot: fields are looked up when read.

The model's fields win over the snapshot's own names: `snap.data` on a model with a field
`data` is that field. The snapshot's data, completeness and copy are always reachable through
the class: `Partial.data_of(snap)`, `Partial.is_complete(snap)`, `Partial.to_dict(snap)`.

Statically, `Partial[Order]` is its own type: a type checker rejects it where an `Order` is
expected, and every attribute read on it is `Any` (it may be None).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from healjson._core.redact import redact_with, run_secrets

__all__ = ["Partial"]

T = TypeVar("T")


class Partial(Generic[T]):
    """What has arrived of a `T` so far; see the module docstring.

    The model's fields win: on a `Partial[Doc]` whose model has a field named `data`, `complete`
    or `to_dict`, `snap.data` is that field. The snapshot's own `data`, `complete` and
    `to_dict()` are read through the class, which no field can shadow:
    `Partial.data_of(snap)`, `Partial.is_complete(snap)`, `Partial.to_dict(snap)`.
    """

    __slots__ = ("_complete", "_data", "_forms", "_model")

    def __init__(self, data: Any, model: Any = None, *, complete: bool = False) -> None:
        self._data = data
        self._complete = complete
        self._model = model
        self._forms = run_secrets()  # the run's secrets: its `repr` shows none of them

    def __getattribute__(self, name: str) -> Any:
        if name[:1] != "_" and name in _OWN:  # one of ours, unless the model has such a field
            fields = getattr(object.__getattribute__(self, "_model"), "model_fields", None)
            if fields is not None and name in fields:
                return object.__getattribute__(self, "_field")(name)
        return object.__getattribute__(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._field(name)

    def _field(self, name: str) -> Any:
        model = self._model
        data = self._data
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

    @property
    def data(self) -> Any:
        """The JSON data read so far (shared with later snapshots: do not mutate it). A field
        named `data` wins: `Partial.data_of(snap)` always reads this."""
        return self._data

    @property
    def complete(self) -> bool:
        """True when the whole JSON value has arrived (it may still fail validation). A field
        named `complete` wins: `Partial.is_complete(snap)` always reads this."""
        return self._complete

    @staticmethod
    def data_of(snapshot: Partial[Any]) -> Any:
        """`snapshot.data`, whatever the model's fields are called."""
        return snapshot._data

    @staticmethod
    def is_complete(snapshot: Partial[Any]) -> bool:
        """`snapshot.complete`, whatever the model's fields are called."""
        return snapshot._complete

    def __getitem__(self, key: Any) -> Any:
        data = self._data
        if isinstance(data, dict | list):
            try:
                return _view(data[key], _item_type(self._model))
            except (KeyError, IndexError):
                return None
        return None

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self._data, list):
            item = _item_type(self._model)
            return iter([_view(value, item) for value in self._data])
        return iter(())

    def __len__(self) -> int:
        return len(self._data) if isinstance(self._data, dict | list | str) else 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Partial):
            return bool(self._data == other._data)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = getattr(self._model, "__name__", None) or "Any"
        state = "complete" if self._complete else "partial"
        return redact_with(f"Partial[{name}]({state}: {self._data!r})"[:300], self._forms)

    def to_dict(self) -> Any:
        """A deep copy of the data read so far (safe to change). A field named `to_dict` wins:
        `Partial.to_dict(snap)` always calls this."""
        return _copy(self._data)


_OWN = frozenset(("data", "complete", "to_dict", "data_of", "is_complete"))
"""The snapshot's own public names: a model field of the same name wins over each."""


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
