"""The SDK's own result check, left to healjson for the calls healjson makes.

`ClientSession.call_tool` ends with `self.validate_tool_result(name, result)`, which raises
`RuntimeError` for structured content that is missing or does not conform (and the SDK's
`Client`, FastMCP's client and the Agents SDK all reach it through the session). healjson
judges that result itself, and must receive it: `install(session)` puts, on that one session
object, a `validate_tool_result` that, while `bypassed()` is in effect (a `contextvars` flag, so
only the calls healjson makes, in their own task, are concerned), defers the SDK's check to
healjson: `bypassed()` yields the `Deferred` checks, which healjson runs (`Deferred.run()`) for a
result it does not judge itself, so the SDK's check is never off for a result nobody judged.
Outside `bypassed()` it is the SDK's own check: code that calls the session directly keeps the
SDK's behaviour.

`listen(session, index)` has a session's tool index forget its tools when the server says they
changed (`notifications/tools/list_changed`): the next call lists them again. It goes before the
session's own message handler, which still gets every message.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, Protocol

__all__ = ["Deferred", "bypassed", "install", "listen"]


class Deferred:
    """The SDK's checks the calls made within `bypassed()` left to healjson, in order."""

    __slots__ = ("checks",)

    def __init__(self) -> None:
        self.checks: list[tuple[Callable[[str, Any], Awaitable[None]], str, Any]] = []

    async def run(self) -> None:
        """Run the SDK's own checks now (they raise as the bare SDK's call would)."""
        checks, self.checks = self.checks, []
        for check, name, result in checks:
            await check(name, result)


_BYPASS: ContextVar[Deferred | None] = ContextVar("healjson_mcp_result_check", default=None)
_MARK: Final = "_healjson_checks_for_itself"
_LISTENERS: Final = "_healjson_tool_indexes"
_TOOLS_CHANGED: Final = "notifications/tools/list_changed"


class Forgetting(Protocol):
    def forget(self) -> None: ...


def install(session: Any) -> None:
    """Put the switchable check on `session` (once: a second install is a no-op)."""
    current = getattr(session, "validate_tool_result", None)
    if current is None or getattr(current, _MARK, False):
        return
    sdk_check = current

    async def validate_tool_result(name: str, result: Any) -> None:
        deferred = _BYPASS.get()
        if deferred is not None:  # healjson judges this result, or runs this check itself
            deferred.checks.append((sdk_check, name, result))
            return
        await sdk_check(name, result)

    setattr(validate_tool_result, _MARK, True)
    session.validate_tool_result = validate_tool_result


@contextmanager
def bypassed() -> Iterator[Deferred]:
    """Within the block (this task and the tasks it starts), installed checks are deferred:
    kept in the `Deferred` it yields, for healjson to run on a result it does not judge."""
    deferred = Deferred()
    token = _BYPASS.set(deferred)
    try:
        yield deferred
    finally:
        _BYPASS.reset(token)


def listen(session: Any, index: Forgetting) -> None:
    """Have `index.forget()` called whenever `session` receives the server's
    `notifications/tools/list_changed` (several indexes, one handler per session; an index is
    held weakly). A session without the SDK's message handler attribute is left as it is: its
    changed tools are then seen at a name the index does not hold, or a listing of the
    caller's own."""
    listeners: weakref.WeakSet[Any] | None = getattr(session, _LISTENERS, None)
    if listeners is None:
        handler = getattr(session, "_message_handler", None)
        if handler is None:
            return
        listeners = weakref.WeakSet()
        heard = listeners

        async def message_handler(message: Any) -> None:
            if getattr(message, "method", None) == _TOOLS_CHANGED:
                for listening in list(heard):
                    listening.forget()
            await handler(message)

        session._message_handler = message_handler
        setattr(session, _LISTENERS, listeners)
    listeners.add(index)
