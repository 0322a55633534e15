"""A provider's answer a LangChain chat model could not read: an HTTP 2xx whose body is no reply.

A proxy or gateway that answers HTTP 200 with an HTML page (or any body that is not a reply of
the provider's format: a JSON list, a string, an object with no `choices`) makes the chat model
raise whatever its own reading meets: langchain-openai a plain `ValueError` or `TypeError`, the
openai SDK's parser an `AttributeError`. The class says nothing; where it was raised does. Such
an exception is the provider's failure (a `healjson.ProviderError`, so the run degrades with
`api_error`) when all of these hold:

* it is not already one (`is_provider_error`, or one of the `known` classes);
* it was raised in the chat model's own package (`langchain_openai`, ...) or a provider SDK or
  HTTP package, not in the caller's code (a validator, a callback, another middleware);
* a 2xx HTTP response is at hand where it was raised: the exception's `response` (what
  langchain-openai attaches) or a local of a frame of those packages on its way out (an SDK's
  raw response, or the HTTP response itself);
* that response's body is not a reply of any registered format (not JSON, or JSON that no
  wire format reads as a reply).

Anything else propagates unchanged: the caller's bugs stay theirs.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import FrameType
from typing import Any, TypeVar

from healjson import ProviderError

from .core import PROVIDER_PACKAGES, describe_exception, is_provider_error, to_reply

__all__ = ["aread_through", "read_through", "unread_answer"]

R = TypeVar("R")
Q = TypeVar("Q")

_FRAMEWORK = frozenset({"langchain", "langchain_core", "langgraph", "healjson"})
"""Packages whose code is the framework's or healjson's, never a chat model's own."""


def read_through(
    handler: Callable[[Q], R], request: Q, known: tuple[type[BaseException], ...] = ()
) -> R:
    """`handler(request)`, an exception that stands for a 2xx body that is no reply raised as
    the provider's failure (`unread_answer`)."""
    try:
        return handler(request)
    except Exception as exc:
        failure = unread_answer(exc, getattr(request, "model", None), known)
        if failure is None:
            raise
        raise failure from exc


async def aread_through(
    handler: Callable[[Q], Awaitable[R]], request: Q, known: tuple[type[BaseException], ...] = ()
) -> R:
    """`read_through`, awaited."""
    try:
        return await handler(request)
    except Exception as exc:
        failure = unread_answer(exc, getattr(request, "model", None), known)
        if failure is None:
            raise
        raise failure from exc


def unread_answer(
    exc: BaseException, model: Any, known: tuple[type[BaseException], ...] = ()
) -> ProviderError | None:
    """The provider's failure `exc` stands for (raised reading a 2xx answer whose body is no
    reply, by the chat model `model`'s package or a provider's: see the module), else None."""
    if is_provider_error(exc, known):
        return None
    frames = list(_frames(exc))
    if not frames:
        return None
    theirs = PROVIDER_PACKAGES | ({_top(type(model).__module__)} - _FRAMEWORK)
    if _top(frames[-1].f_globals.get("__name__")) not in theirs:
        return None  # raised in the caller's code (or the framework's): not the body's doing
    for found in _responses(exc, frames, theirs):
        status, body, kind = found
        if not 200 <= status < 300 or _is_reply(body):
            return None  # an error answer, or a reply: the exception is not about the body
        return ProviderError(
            f"the provider answered HTTP {status} with a body that is no reply ({kind or 'no '}"
            f" content type, {len(body)} bytes): {describe_exception(exc)}"
        )
    return None


def _frames(exc: BaseException) -> Iterator[FrameType]:
    """The frames `exc` passed through, from where it was caught to where it was raised."""
    tb = exc.__traceback__
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def _top(module: Any) -> str:
    return module.partition(".")[0] if isinstance(module, str) else ""


def _responses(
    exc: BaseException, frames: list[FrameType], theirs: frozenset[str] | set[str]
) -> Iterator[tuple[int, bytes, str]]:
    """The HTTP responses at hand where `exc` was raised, nearest first: its own `response`,
    then the locals of the provider's and the chat model's frames, innermost first."""
    answer = _answer(getattr(exc, "response", None))
    if answer is not None:
        yield answer
    for frame in reversed(frames):
        if _top(frame.f_globals.get("__name__")) not in theirs:
            continue  # the caller's frames are not looked into
        for value in list(frame.f_locals.values()):
            answer = _answer(value)
            if answer is not None:
                yield answer


def _answer(obj: Any) -> tuple[int, bytes, str] | None:
    """(status, body, content type) of an HTTP response of a provider or HTTP package (an SDK's
    raw response: the HTTP response inside it), read; None for anything else."""
    if obj is None or _top(type(obj).__module__) not in PROVIDER_PACKAGES:
        return None
    try:
        inner = getattr(obj, "http_response", None)
        if inner is not None and _top(type(inner).__module__) in PROVIDER_PACKAGES:
            obj = inner
        status = getattr(obj, "status_code", None)
        body = getattr(obj, "content", None)
        headers = getattr(obj, "headers", None)
    except Exception:  # a body not read yet (a stream), or an object that is no response
        return None
    if type(status) is not int or not isinstance(body, bytes | bytearray):
        return None
    kind = headers.get("content-type", "") if isinstance(headers, Mapping) else ""
    return status, bytes(body), str(kind).split(";", 1)[0].strip()


def _is_reply(body: bytes) -> bool:
    """Whether `body` is a reply of a registered wire format (a JSON object one of them reads)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return False
    if not isinstance(data, Mapping):
        return False
    try:
        to_reply(data)
    except Exception:  # no format reads it as a reply
        return False
    return True
