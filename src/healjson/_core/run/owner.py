"""The SDK client a model call belongs to, when the call is one of the client's own methods.

`Healer.run` or a durable step given `client.chat.completions.create`: the call is a bound
method of an SDK resource, and the resource holds its client under `_client` (where the SDKs
built on a generated client keep it); a client whose methods are its own is the owner itself,
and a resource that holds its API client under another name is kept (the redactor follows the
nested clients the providers register). Knowing the client, the run's redactor knows its key,
as inside `wrap(client)`. A function of the caller's own that calls a client is opaque: no
client is found, and only credential names and shapes are redacted.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Final

from healjson._core.redact.places import read_attribute

__all__ = ["call_client"]

_MAX_HOPS: Final = 3


def call_client(call: Any) -> Any:
    """The client `call` belongs to (see the module docstring), or None: the object the bound
    method is bound to, then through `_client` until an object that holds an `api_key` (an SDK
    client; not the HTTP client it holds there) or one of another package."""
    while isinstance(call, functools.partial):
        call = call.func
    owner = read_attribute(call, "__self__")
    if owner is None or isinstance(owner, type | types.ModuleType):
        return None
    package = _package(owner)
    for _ in range(_MAX_HOPS):
        if read_attribute(owner, "api_key") is not None:
            break
        inner = read_attribute(owner, "_client")
        if inner is None or _package(inner) != package:
            break
        owner = inner
    return owner


def _package(obj: Any) -> str:
    return type(obj).__module__.partition(".")[0]
