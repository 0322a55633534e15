"""Each step of a caller's stream run in the stream's own context, and in the client's scope.

A stream is read in the caller's loop, step by step, so healjson's state must hold exactly while
healjson's code runs: each step runs in the stream's own `contextvars.Context` (what healjson
makes current while it works — the attempt's OpenTelemetry span — is never current in the
caller's loop body), and inside the wrapped client's secrets scope (`redact.secrets_scope`),
which must not leak into the caller's loop body either (it may even run in another thread or
task).
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Awaitable, Generator, Iterator
from typing import Any

from healjson._core.redact import activate, deactivate, secrets_scope
from healjson._core.stream.events import Event

__all__ = ["aown_context", "ascoped", "own_context", "scoped"]


def own_context(events: Iterator[Event]) -> Iterator[Event]:
    """`events`, each step run in the stream's own `contextvars.Context` (a copy of the
    caller's when the iteration starts): what healjson makes current while it works (the
    attempt's OpenTelemetry span, which an instrumented SDK nests its span under) stays current
    from one step to the next, and never in the caller's loop body, whose own spans are not
    healjson's children."""
    context: contextvars.Context | None = None
    try:
        while True:
            context = context or contextvars.copy_context()
            try:
                event = context.run(next, events)
            except StopIteration:
                return
            yield event
    finally:
        close = getattr(events, "close", None)
        if callable(close):
            (context or contextvars.copy_context()).run(close)


async def aown_context(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """`own_context` for an async stream: each step's coroutine is run in the context."""
    context: contextvars.Context | None = None
    try:
        while True:
            context = context or contextvars.copy_context()
            try:
                event = await _InContext(events.__anext__(), context)
            except StopAsyncIteration:
                return
            yield event
    finally:
        close = getattr(events, "aclose", None)
        if callable(close):
            await _InContext(close(), context or contextvars.copy_context())


class _InContext:
    """Await `awaitable` with each of its steps run in `context` (asyncio runs a task's steps
    in the task's own context; this keeps one awaitable's changes apart from it)."""

    __slots__ = ("awaitable", "context")

    def __init__(self, awaitable: Awaitable[Any], context: contextvars.Context) -> None:
        self.awaitable = awaitable
        self.context = context

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, run = self.awaitable.__await__(), self.context.run
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                if thrown is None:
                    waited = run(coroutine.send, sent)
                else:
                    waited = run(coroutine.throw, thrown)
            except StopIteration as stop:
                return stop.value
            try:
                sent, thrown = (yield waited), None
            except BaseException as exc:  # a cancellation, delivered to the coroutine
                sent, thrown = None, exc


def scoped(events: Iterator[Event], scope: secrets_scope) -> Iterator[Event]:
    """`events`, each step inside `scope`: a stream is read in the caller's loop, step by step,
    and the scope must hold exactly while healjson's code runs (not in the caller's loop body,
    which may even run in another thread or task)."""
    try:
        while True:
            token = activate(scope)
            try:
                event = next(events)
            except StopIteration:
                return
            finally:
                deactivate(token)
            yield event
    finally:
        token = activate(scope)
        try:
            close = getattr(events, "close", None)
            if callable(close):
                close()
        finally:
            deactivate(token)


async def ascoped(events: AsyncIterator[Event], scope: secrets_scope) -> AsyncIterator[Event]:
    """`scoped` for an async stream."""
    try:
        while True:
            token = activate(scope)
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                return
            finally:
                deactivate(token)
            yield event
    finally:
        token = activate(scope)
        try:
            close = getattr(events, "aclose", None)
            if callable(close):
                await close()
        finally:
            deactivate(token)
