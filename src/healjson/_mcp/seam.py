"""The SDK's own result check, left to healjson for the calls healjson makes.

`ClientSession.call_tool` ends with `self.validate_tool_result(name, result)`, which raises
`RuntimeError` for structured content that is missing or does not conform (and the SDK's
`Client`, FastMCP's client and the Agents SDK all reach it through the session). healjson
judges that result itself, and must receive it: `install(session)` puts, on that one session
object, a `validate_tool_result` that does nothing while `bypassed()` is in effect (a
`contextvars` flag, so only the calls healjson makes, in their own task, skip it) and is the
SDK's own check otherwise: code that calls the session directly keeps the SDK's behaviour.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

__all__ = ["bypassed", "install"]

_BYPASS: ContextVar[bool] = ContextVar("healjson_mcp_result_check", default=False)
_MARK: Final = "_healjson_checks_for_itself"


def install(session: Any) -> None:
    """Put the switchable check on `session` (once: a second install is a no-op)."""
    current = getattr(session, "validate_tool_result", None)
    if current is None or getattr(current, _MARK, False):
        return
    sdk_check = current

    async def validate_tool_result(name: str, result: Any) -> None:
        if _BYPASS.get():
            return  # healjson judges this result against the schema itself
        await sdk_check(name, result)

    setattr(validate_tool_result, _MARK, True)
    session.validate_tool_result = validate_tool_result


@contextmanager
def bypassed() -> Iterator[None]:
    """Within the block (this task and the tasks it starts), installed checks do nothing."""
    token = _BYPASS.set(True)
    try:
        yield
    finally:
        _BYPASS.reset(token)
