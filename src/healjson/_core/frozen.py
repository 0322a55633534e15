"""Cheaper construction of frozen slots dataclasses, for the records every run builds.

A frozen dataclass's `__init__` sets each field with `object.__setattr__(self, name, value)`
(a plain `self.name = value` would meet the class's `__setattr__`, which refuses): a call
through a slot wrapper per field, about three times the cost of a plain attribute store. A run
that heals its first reply builds six such records (the model call, its result, the reply, its
usage, the attempt, the outcome: some 55 fields), and on a provider whose SDK call is cheap that
was a measurable part of healjson's whole overhead.

`builder(cls)` returns a twin class with the same slots (and the same bases, so the layouts
match) whose `__init__` stores the fields plainly and then sets the instance's class to `cls`:
the object that comes out is a `cls` in every respect (type, equality, hash, repr, pickling,
`dataclasses.replace`, and frozen from then on). Its signature is the dataclass's own,
defaults and default factories included. Only frozen dataclasses with slots and without
`__post_init__` are accepted; anything else keeps its own constructor.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["builder"]

P = ParamSpec("P")
T = TypeVar("T")

_NO_VALUE: Any = object()  # a default factory's parameter left out


def builder(cls: Callable[P, T]) -> Callable[P, T]:
    """A constructor making exactly what `cls(...)` makes, without the frozen `__init__`'s cost
    (see the module docstring)."""
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    params = getattr(cls, dataclasses._PARAMS)  # type: ignore[attr-defined]
    slots = cls.__dict__.get("__slots__")
    if not params.frozen or slots is None or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} is not a frozen slots dataclass without __post_init__")
    fields = dataclasses.fields(cls)
    if tuple(slots) != tuple(field.name for field in fields):
        raise TypeError(f"{cls.__name__}'s slots are not its fields")
    namespace: dict[str, Any] = {"_cls": cls, "_NO_VALUE": _NO_VALUE}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for field in fields:
        name = field.name
        if field.default_factory is not dataclasses.MISSING:
            namespace[f"_make_{name}"] = field.default_factory
            if field.init:
                default = "=_NO_VALUE"
                body.append(f"    self.{name} = _make_{name}() if {name} is _NO_VALUE else {name}")
            else:
                body.append(f"    self.{name} = _make_{name}()")
        elif field.default is not dataclasses.MISSING:
            namespace[f"_default_{name}"] = field.default
            default = f"=_default_{name}"
            body.append(f"    self.{name} = {name if field.init else f'_default_{name}'}")
        else:
            default = ""
            body.append(f"    self.{name} = {name}")
        if field.init:
            (keyword if field.kw_only else positional).append(f"{name}{default}")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = "\n".join([f"def __init__({signature}):", *body, "    self.__class__ = _cls"])
    exec(source, namespace)  # as `dataclasses` itself writes `__init__`
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    bases = getattr(cls, "__orig_bases__", cls.__bases__)

    def fill(body_namespace: dict[str, Any]) -> None:
        body_namespace.update(__slots__=tuple(slots), __init__=init, __module__=cls.__module__)

    twin: Any = types.new_class(f"{cls.__name__}Builder", bases, exec_body=fill)
    return twin  # type: ignore[no-any-return]
