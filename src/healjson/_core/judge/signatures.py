"""How a rule is called: `rule(value, ctx)` when it takes two positional parameters or more,
else `rule(value)`; a rule that cannot be called either way is refused where it is given."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["arity", "check_callable"]


def arity(fn: Callable[..., Any]) -> int:
    """The positional parameters `fn` takes (2 for `*args`, or a signature Python cannot read)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if any(p.kind is p.VAR_POSITIONAL for p in positional):
        return 2
    return len(positional)


def check_callable(fn: Callable[..., Any], name: str, takes_context: bool) -> None:
    """Raise TypeError when `fn` cannot be called the way a rule is (see the module), with how
    to fix it."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a callable Python cannot describe: trusted
        return
    arguments = (None, None) if takes_context else (None,)
    try:
        signature.bind(*arguments)
    except TypeError:
        raise TypeError(
            f"contract {name!r} cannot be called as {name}(value"
            f"{', ctx' if takes_context else ''}): its signature is {name}{signature}; a rule "
            "takes the value, and optionally the ContractContext, as its first two positional "
            "parameters (give any other parameter a default)"
        ) from None
