"""The arguments of a healed google-genai call: exactly those the SDK's method takes.

A healing `generate_content` / `generate_content_stream` takes the SDK method's own keywords
(read from its signature, so a new SDK's are taken as they come) plus healjson's options; for
anything else it raises the TypeError the SDK's method raises, before any request.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final, NamedTuple

__all__ = ["check_call", "forces_call"]


class _Keywords(NamedTuple):
    """The keywords a method takes, those it needs, and whether it needs a positional argument
    too (read once per function)."""

    taken: frozenset[str]
    needed: frozenset[str]
    positional: bool


# (function, bound) -> its keywords; None: not checked (no signature, or any keyword taken)
_READ: dict[tuple[Any, bool], _Keywords | None] = {}
_MAX_READ: Final = 64


def check_call(
    method: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> None:
    """Raise the TypeError `method(*args, **kwargs)` raises for arguments it does not take (an
    unknown keyword, a missing one, a positional one), without calling it otherwise. A method
    whose signature cannot be read, or that takes any keyword, is not checked."""
    function = getattr(method, "__func__", method)
    key = (function, function is not method)
    try:
        keywords = _READ[key]
    except KeyError:
        keywords = _READ[key] = _keywords(method)
        if len(_READ) > _MAX_READ:
            _READ.clear()
    except TypeError:  # an unhashable callable: read each time
        keywords = _keywords(method)
    if keywords is None:
        return
    if not args and not keywords.positional and keywords.needed <= kwargs.keys() <= keywords.taken:
        return  # the common call, known good without binding it
    try:
        inspect.signature(method).bind(*args, **kwargs)
    except TypeError as exc:
        if _binds_as_signed(method):
            # Python binds the arguments before the body runs: its own TypeError, nothing sent
            opened = method(*args, **kwargs)
            close = getattr(opened, "close", None)  # not reached; a coroutine's, a generator's
            if callable(close):
                close()
        name = getattr(method, "__qualname__", None) or type(method).__name__
        raise TypeError(f"{name}() {exc}") from None


def _keywords(method: Callable[..., Any]) -> _Keywords | None:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    named = [
        p
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    needed = [p.name for p in named if p.default is inspect.Parameter.empty]
    positional = any(
        p.kind is inspect.Parameter.POSITIONAL_ONLY and p.default is inspect.Parameter.empty
        for p in parameters
    )
    return _Keywords(frozenset(p.name for p in named), frozenset(needed), positional)


def _binds_as_signed(method: Callable[..., Any]) -> bool:
    """True when calling `method` binds its arguments exactly as its signature says, before
    any of its code runs: a plain function or bound method, not wrapped, with no signature of
    its own."""
    function = getattr(method, "__func__", method)
    return (
        inspect.isfunction(function)
        and not hasattr(function, "__wrapped__")
        and "__signature__" not in vars(function)
    )


def forces_call(tool_config: Any) -> bool:
    """True when a `tool_config` forces a function call (its `function_calling_config` in
    mode `ANY`, with or without `allowed_function_names`): the model cannot give a JSON answer
    then. A dict or the SDK's `ToolConfig`; a mode as a string (any case) or the SDK's enum."""
    calling = _field(tool_config, "function_calling_config")
    mode = _field(calling, "mode")
    value = getattr(mode, "value", mode)
    return isinstance(value, str) and value.upper() == "ANY"


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)
