"""A streamed call read on a worker thread, so that a deadline holds whatever the wire does.

A sync SDK stream blocks inside its HTTP read until bytes arrive: a slow first byte, keep-alive
comments or `ping` events the SDK drops, a byte trickle or silence after the answer keep it
waiting while no chunk reaches healjson, so no per-chunk check can end it on time. With a
deadline the sync driver therefore makes the call (streamed or not) and iterates its stream on
a worker thread (`Pump`), taking each chunk from a queue with a timed wait: the caller's
outcome comes at the deadline, whatever the wire does; an abandoned call finishes (or fails)
in the background, since a blocking call cannot be interrupted from outside.

At the end (the deadline, an early abort, the caller leaving the loop) the worker is told to
stop and the stream is closed: a stream over an HTTP/1.x response (an SDK's `Stream.response`, when
it has one) has its socket shut down, which wakes the blocked read at once, so the worker closes the
response and ends. A stream that exposes no response (any other iterable) is closed by the worker as
soon as its pending read returns: a blocking read cannot be interrupted from outside.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["CHUNK", "END", "ERROR", "STREAM", "VALUE", "Pump", "close_stream"]

VALUE: Final = "value"  # the call returned something else than a stream (the payload)
STREAM: Final = "stream"  # the call returned a stream; its chunks follow
CHUNK: Final = "chunk"  # one chunk of the stream (the payload)
END: Final = "end"  # the stream ended
ERROR: Final = (
    "error"  # the call or the stream raised (the payload: the exception, an interrupt too)
)

THREAD_NAME: Final = "healjson-stream"


def close_stream(stream: Any) -> None:
    """Close a stream (its `close()`, if any), quietly: closing a broken stream must not hide
    its outcome."""
    close = getattr(stream, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            return


class Pump:
    """One model call (`make()`: the driver's call line) and its stream, performed on a daemon
    worker thread in the caller's context (its logger and redaction scopes); `get` takes what
    it produced, in order. Without a reader (`is_stream` None) whatever the call returned is
    its value."""

    def __init__(self, make: Callable[[], Any], is_stream: Callable[[Any], bool] | None) -> None:
        self._make = make
        self._is_stream = is_stream
        self._queue: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: Any = None
        self._reading = False  # between the stream's arrival and its close, on the worker
        context = contextvars.copy_context()
        self.thread = threading.Thread(
            target=context.run, args=(self._work,), name=THREAD_NAME, daemon=True
        )
        self.thread.start()

    def get(self, timeout: float) -> tuple[str, Any] | None:
        """The next thing the worker produced, waiting at most `timeout` seconds (None: none
        came in time)."""
        try:
            return self._queue.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None

    def stop(self) -> None:
        """Stop the worker: it reads no further chunk, and a stream still being read is cut
        (its socket shut down, when it has one) so the blocked read returns now."""
        self._stop.set()
        with self._lock:  # the worker, done reading, closes the stream only after this
            if self._reading:
                _interrupt(self._stream)

    def _work(self) -> None:
        # an interrupt (`KeyboardInterrupt`, `SystemExit`) is queued too, as any exception: the
        # driver raises it again in the caller's thread, where it would have been raised
        try:
            value = self._make()
        except BaseException as exc:
            self._queue.put((ERROR, exc))
            return
        if self._is_stream is None or not self._is_stream(value):
            self._queue.put((VALUE, value))
            return
        with self._lock:
            self._stream, self._reading = value, True
        last: tuple[str, Any] | None = None
        try:
            if not self._stop.is_set():  # else the caller gave up while the call was made
                self._queue.put((STREAM, None))
                last = self._read(value)
        except BaseException as exc:
            last = (ERROR, exc)
        finally:
            with self._lock:
                self._reading = False
            close_stream(value)
        if last is not None:
            self._queue.put(last)

    def _read(self, stream: Any) -> tuple[str, Any] | None:
        """Queue each chunk of `stream`; its end (None: told to stop)."""
        for chunk in stream:
            self._queue.put((CHUNK, chunk))
            if self._stop.is_set():
                return None
        return (END, None)


_HTTP1: Final = frozenset({"HTTP/1.0", "HTTP/1.1"})


def _interrupt(stream: Any) -> None:
    """Wake a read blocked on `stream`'s HTTP/1.x connection by shutting its socket down (the
    read then fails, and the reader closes the response). HTTP/2 connections carry other
    requests' streams too and are left alone, as is a response already closed."""
    response = getattr(stream, "response", None)
    extensions = getattr(response, "extensions", None)
    if not isinstance(extensions, Mapping) or getattr(response, "is_closed", True):
        return
    if getattr(response, "http_version", None) not in _HTTP1:
        return
    network = extensions.get("network_stream")
    get_info = getattr(network, "get_extra_info", None)
    sock = get_info("socket") if callable(get_info) else None
    import socket  # here: a stream that has one has imported it (`import healjson` need not)

    if isinstance(sock, socket.socket):
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the raw socket, TLS or not
        except OSError:
            return
