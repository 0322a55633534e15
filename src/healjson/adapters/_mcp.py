"""`healjson.wrap(session)` for the official MCP SDK's `ClientSession` and `Client`.

    async with healjson.wrap(Client(server)) as client:
        result = await client.call_tool("get_weather", {"city": "Oslo"})  # a CallToolResult

`call_tool` returns the SDK's own `CallToolResult`, its structured content validated against
the tool's `outputSchema` and healed (`healjson._mcp.calls`): recovered from a JSON text block
when missing (flag `structured_from_text`), aligned when it does not conform, never invented;
a result that cannot be healed comes back as `is_error=True` with the diagnostics as its text,
never as the SDK's `RuntimeError`. Outgoing arguments are normalised against `inputSchema`.
Every other attribute is the wrapped object's (`initialize`, `list_prompts`, `session`, ...);
`list_tools` is the wrapped one's too, and its listing refreshes the schemas healjson holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Final

from healjson._core.redact import MARKER, redact_text
from healjson._core.run.policy import HealPolicy
from healjson._extras import missing_extra

try:
    import mcp
    from mcp import types
except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(missing_extra("mcp", "mcp")) from exc

from healjson._mcp import seam
from healjson._mcp.calls import CallHealer
from healjson._mcp.tools import ToolIndex

from ._proxy import Forwarding

__all__ = ["HealingSession", "wrap_session"]

# a URL's `user:password@`: the password (up to the `@` that ends the userinfo) is masked
_USERINFO: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s/?#@:'\"]*:)[^\s/?#@'\"]+@")


class HealingSession(Forwarding):
    """A `ClientSession` or `Client` whose `call_tool` heals (see the module's documentation).

    `tool_contracts={name: [rules]}`: healjson rules over each tool's (validated) structured
    content, with their `on_fail` policies; `policy`: its `on_ambiguity` applies (a text block
    holding two different values that both fit).
    """

    def __init__(
        self,
        session: Any,
        *,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
        policy: HealPolicy | None = None,
    ) -> None:
        if not isinstance(session, mcp.ClientSession | mcp.Client):
            raise TypeError(
                "healjson.mcp heals an mcp.ClientSession or an mcp.Client, "
                f"got {type(session).__name__}"
            )
        self.wrapped: Any = session
        self._client = isinstance(session, mcp.Client)
        self._healer = CallHealer(
            ToolIndex(self._tools_page), tool_contracts=tool_contracts, policy=policy
        )
        if not self._client:
            seam.install(session)
            seam.listen(session, self._healer.index)

    async def __aenter__(self) -> HealingSession:
        await self.wrapped.__aenter__()
        if self._client:  # its session exists now: heard from before the first call
            seam.listen(self.wrapped.session, self._healer.index)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        result: bool | None = await self.wrapped.__aexit__(exc_type, exc, traceback)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        read_timeout_seconds: float | None = None,
        progress_callback: Any = None,
        *,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
        **kwargs: Any,
    ) -> types.CallToolResult:
        """The wrapped `call_tool(name, arguments, ...)`, healed; `tool_contracts=` here
        replaces the wrapper's rules for this call. Every other keyword is the SDK's."""
        if self._client:  # the Client's session exists once entered
            seam.install(self.wrapped.session)
            seam.listen(self.wrapped.session, self._healer.index)

        async def send(sent: Any) -> Any:
            return await self.wrapped.call_tool(
                name, sent, read_timeout_seconds, progress_callback, **kwargs
            )

        result: types.CallToolResult = await self._healer.call(
            name, arguments, send, tool_contracts=tool_contracts
        )
        return result

    async def list_tools(self, *args: Any, **kwargs: Any) -> types.ListToolsResult:
        """The wrapped `list_tools(...)`; the tools it lists refresh healjson's schemas."""
        listed: types.ListToolsResult = await self.wrapped.list_tools(*args, **kwargs)
        self._healer.index.absorb(listed.tools)
        return listed

    async def _tools_page(self, cursor: str | None) -> tuple[list[types.Tool], str | None]:
        if self._client:
            page = await self.wrapped.list_tools(cursor=cursor)
        elif cursor is None:
            page = await self.wrapped.list_tools()
        else:
            page = await self.wrapped.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        return page.tools, page.next_cursor

    state = "wrapped"

    def forwarded(self) -> Any:
        return self.wrapped

    def __repr__(self) -> str:
        # through the redactor: a password in the server's URL (`http://user:pw@host/mcp`)
        # or a token in its query never shows
        return redact_text(_USERINFO.sub(rf"\1{MARKER}@", f"HealingSession({self.wrapped!r})"))


def wrap_session(
    session: Any,
    *,
    tool_contracts: Mapping[str, Iterable[Any]] | None = None,
    policy: HealPolicy | None = None,
) -> HealingSession:
    """`HealingSession(session)`; a `HealingSession` is unwrapped first (one healing layer)."""
    if isinstance(session, HealingSession):
        session = session.wrapped
    return HealingSession(session, tool_contracts=tool_contracts, policy=policy)
