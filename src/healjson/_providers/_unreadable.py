"""A provider's answer that cannot be read: the provider's failure, never the caller's crash.

Two places read what a provider sent: healjson's own readers (the formats' reply and chunk
readers, `unreadable_as_failure`) and the provider SDK, which decodes the body before healjson
sees it (`sdk_reading_failure`). Hostile bodies make both fail in ways of their own: a body
nested past the decoder's recursion limit (`RecursionError`), a field of a type the reader does
not expect (`TypeError`, `AttributeError`, ...), a body the SDK's models refuse (pydantic's
`ValidationError`, raised by google-genai while it reads a response). Each becomes
`UnreadableReply`: a `ProviderError` (the run degrades with `api_error`, the reader's words
kept) and a `TypeError` (what the readers' callers already treat as a call without a reply).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Final, ParamSpec, TypeVar

from healjson._core.wire.effects import ProviderError

__all__ = ["UnreadableReply", "sdk_reading_failure", "unreadable_as_failure"]

_R = TypeVar("_R")
_P = ParamSpec("_P")

# what a reader raises on a field of the wrong type or shape, or on a body nested too deep
_READING_ERRORS: Final = (
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    RecursionError,
    OverflowError,
)

# the SDK functions that turn a response body into the SDK's objects (every other SDK frame
# builds a request, whose failures are the caller's): google-genai's generated converters
# (`_GenerateContentResponse_from_mldev`, `_Candidate_from_vertex`, ...) and its models'
# `_from_response`
_SDK_READERS: Final = re.compile(r"(?:_from_response|_from_mldev|_from_vertex)\Z")
_SDK_PACKAGES: Final = frozenset({"google", "anthropic", "openai"})
_MAX_WORDS: Final = 200


class UnreadableReply(ProviderError, TypeError):
    """The provider's answer could not be read (too deep, or a field of the wrong type)."""


def _described(exc: BaseException) -> str:
    try:
        said = str(exc).split("\n", 1)[0]
    except Exception:  # an exception whose `__str__` raises: its type says enough
        said = ""
    said = said if len(said) <= _MAX_WORDS else said[:_MAX_WORDS] + "…"
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def unreadable(exc: BaseException) -> UnreadableReply:
    """`exc` (raised reading a provider's answer) as the provider's failure."""
    if isinstance(exc, RecursionError):
        error = UnreadableReply("the provider's answer nests too deep to be read")
    else:
        error = UnreadableReply(f"the provider's answer could not be read ({_described(exc)})")
    error.__cause__ = exc
    return error


def unreadable_as_failure(reader: Callable[_P, _R]) -> Callable[_P, _R]:
    """`reader` (a format's reply or chunk reader, a collector's `feed`), its failures on a
    hostile answer raised as `UnreadableReply` (a `ProviderError` it raises on purpose passes
    unchanged)."""

    @functools.wraps(reader)
    def read(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return reader(*args, **kwargs)
        except ProviderError:
            raise
        except _READING_ERRORS as exc:
            raise unreadable(exc) from exc

    return read


def sdk_reading_failure(exc: BaseException) -> BaseException:
    """What a provider SDK's call raised, as the run should see it: `UnreadableReply` when the
    SDK failed reading the provider's answer (a body nested past the decoder's limit, a
    response its models refuse), else `exc` unchanged."""
    if isinstance(exc, ProviderError | UnreadableReply):
        return exc
    if isinstance(exc, RecursionError):
        return unreadable(exc)
    if isinstance(exc, _READING_ERRORS) and _raised_reading(exc):
        return unreadable(exc)
    return exc


def _raised_reading(exc: BaseException) -> bool:
    """True when `exc` was raised inside a provider SDK's response reader."""
    trace = exc.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if _SDK_READERS.search(code.co_name):
            module = trace.tb_frame.f_globals.get("__name__", "")
            if isinstance(module, str) and module.partition(".")[0] in _SDK_PACKAGES:
                return True
        trace = trace.tb_next
    return False
