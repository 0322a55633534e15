"""A provider SDK that cannot read the provider's answer fails the call, not the caller.

The SDKs decode the body (and google-genai validates it) inside the client call, or while a
stream is iterated: a body nested past the JSON decoder's limit raises `RecursionError`, a
response google-genai's models refuse raises pydantic's `ValidationError`. Neither is the
caller's bug: `ReadChecked` (an adapter's `Exchange`) and `read_checked_stream` hand them to the
run as `UnreadableReply` (`healjson._providers._unreadable`), a provider failure.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, NoReturn

from healjson._core.run.drive import is_stream
from healjson._providers._unreadable import sdk_reading_failure

from ._base import ShapeCheck
from ._proxy import Forwarding

__all__ = ["ReadChecked", "read_checked_call", "read_checked_stream"]


class ReadChecked(ShapeCheck):
    """A `ShapeCheck` whose call's failures to read the answer are the provider's, and whose
    streams are read the same way (see the module)."""

    __slots__ = ()

    def read(self, ok: bool, value: Any) -> tuple[bool, Any]:
        if not ok:
            return False, sdk_reading_failure(value)
        ok, value = ShapeCheck.read(self, ok, value)
        if ok and is_stream(value):
            value = read_checked_stream(value)
        return ok, value


class _CheckedStream(Forwarding):
    """A stream whose iteration raises `UnreadableReply` where the SDK failed to read a chunk;
    everything else (closing, the SDK's attributes) is the stream's own."""

    __slots__ = ("_stream",)
    state = "_stream"

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[Any]:
        iterator = iter(self._stream)
        while True:
            try:
                chunk = next(iterator)
            except StopIteration:
                return
            except Exception as exc:
                _raise_read(exc)
            yield chunk

    async def _chunks(self) -> AsyncIterator[Any]:
        iterator = aiter(self._stream)
        while True:
            try:
                chunk = await anext(iterator)
            except StopAsyncIteration:
                return
            except Exception as exc:
                _raise_read(exc)
            yield chunk

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._chunks()

    def close(self) -> Any:
        close = getattr(self._stream, "close", None)
        return close() if callable(close) else None

    def aclose(self) -> Any:
        close = getattr(self._stream, "aclose", None) or getattr(self._stream, "close", None)
        return close() if callable(close) else None

    def forwarded(self) -> Any:
        return self._stream


def _raise_read(exc: Exception) -> NoReturn:
    """Raise `exc` as the run should see it (unchanged when it is not a reading failure)."""
    failure = sdk_reading_failure(exc)
    if failure is exc:
        raise exc
    raise failure from exc


def read_checked_stream(stream: Any) -> Any:
    """`stream`, its chunks' reading failures the provider's (see `_CheckedStream`)."""
    return stream if isinstance(stream, _CheckedStream) else _CheckedStream(stream)


def read_checked_call(start: Callable[..., Any]) -> Callable[..., Any]:
    """`start` (a call that returns a stream, or an awaitable of one), its failures to read the
    answer the provider's."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            value = start(*args, **kwargs)
        except Exception as exc:
            _raise_read(exc)
        if hasattr(value, "__await__"):
            return _awaited(value)
        return read_checked_stream(value) if is_stream(value) else value

    return call


async def _awaited(value: Any) -> Any:
    try:
        result = await value
    except Exception as exc:
        _raise_read(exc)
    return read_checked_stream(result) if is_stream(result) else result
