"""The agent frameworks' MCP clients, healed like `healjson.wrap(session)`.

- `heal_pydantic_ai_mcp(toolset)` (as `healjson.pydantic_ai.heal_mcp`): a pydantic-ai
  `MCPToolset`. Its FastMCP client's `call_tool_mcp` (through which every tool call of the
  toolset goes, task calls aside) returns the healed `CallToolResult`: FastMCP then reads
  conforming structured content into the tool's return value, and a result healjson turned into
  an error reaches pydantic-ai as the tool error it is (`tool_error_behavior`: by default a
  `ModelRetry` whose text is the diagnostics) instead of the SDK's `RuntimeError`, which
  pydantic-ai does not catch (the run fails).
- `heal_agents_mcp(server)` (as `healjson.agents.heal_mcp`): an OpenAI Agents SDK MCP server
  (`MCPServerStdio`, `MCPServerStreamableHttp`, `MCPServerSse`: any with a `session` and
  `call_tool`). Its `call_tool` returns the healed result; the Agents SDK then hands the model
  the healed structured content (with `use_structured_content=True`) or its text.

Both take `tool_contracts={name: [rules]}` and `policy` as `healjson.mcp.heal_session` does,
heal on the object given (and return it), and are idempotent: healing again replaces the rules.
Arguments are normalised against each tool's `inputSchema` before they are sent. Neither
framework is imported here: the objects are read by the attributes named above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

from ._core.run.policy import HealPolicy

__all__ = ["heal_agents_mcp", "heal_pydantic_ai_mcp"]

T = TypeVar("T")

_MARK: Final = "_healjson_heals_mcp"


def heal_pydantic_ai_mcp(
    toolset: T,
    *,
    tool_contracts: Mapping[str, Iterable[Any]] | None = None,
    policy: HealPolicy | None = None,
) -> T:
    """Heal a pydantic-ai `MCPToolset`'s tool results and arguments (see the module's
    documentation); returns the toolset.

        toolset = healjson.pydantic_ai.heal_mcp(MCPToolset(server))
        agent = Agent(model, toolsets=[toolset])
    """
    from ._mcp import seam
    from ._mcp.calls import CallHealer
    from ._mcp.tools import ToolIndex

    client: Any = getattr(toolset, "client", None)
    current = getattr(client, "call_tool_mcp", None)
    if current is None:
        raise TypeError(
            "healjson.pydantic_ai.heal_mcp takes a pydantic_ai.mcp.MCPToolset (its FastMCP "
            f"client's call_tool_mcp is what it heals), got {type(toolset).__name__}"
        )
    original = getattr(current, _MARK, current)

    async def list_page(cursor: str | None) -> tuple[list[Any], str | None]:
        return list(await client.list_tools()), None  # FastMCP reads every page itself

    healer = CallHealer(ToolIndex(list_page), tool_contracts=tool_contracts, policy=policy)

    async def call_tool_mcp(
        name: str,
        arguments: dict[str, Any],
        progress_handler: Any = None,
        timeout: Any = None,
        meta: dict[str, Any] | None = None,
    ) -> Any:
        seam.install(client.session)

        async def send(sent: Any) -> Any:
            return await original(
                name,
                {} if sent is None else sent,
                progress_handler=progress_handler,
                timeout=timeout,
                meta=meta,
            )

        return await healer.call(name, arguments, send)

    setattr(call_tool_mcp, _MARK, original)
    client.call_tool_mcp = call_tool_mcp
    return toolset


def heal_agents_mcp(
    server: T,
    *,
    tool_contracts: Mapping[str, Iterable[Any]] | None = None,
    policy: HealPolicy | None = None,
) -> T:
    """Heal an OpenAI Agents SDK MCP server's tool results and arguments (see the module's
    documentation); returns the server.

        server = healjson.agents.heal_mcp(MCPServerStdio(params={...}))
        agent = Agent(name="assistant", mcp_servers=[server])
    """
    from mcp import types

    from ._mcp import seam
    from ._mcp.calls import CallHealer
    from ._mcp.tools import ToolIndex

    current = getattr(server, "call_tool", None)
    if current is None or not hasattr(server, "session"):
        raise TypeError(
            "healjson.agents.heal_mcp takes an Agents SDK MCP server (MCPServerStdio, "
            f"MCPServerStreamableHttp, MCPServerSse), got {type(server).__name__}"
        )
    original = getattr(current, _MARK, current)
    owner: Any = server

    async def list_page(cursor: str | None) -> tuple[list[Any], str | None]:
        session = owner.session
        if cursor is None:
            page = await session.list_tools()
        else:
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        return list(page.tools), page.next_cursor

    healer = CallHealer(ToolIndex(list_page), tool_contracts=tool_contracts, policy=policy)

    async def call_tool(
        tool_name: str, arguments: dict[str, Any] | None, meta: dict[str, Any] | None = None
    ) -> Any:
        session = owner.session
        if session is None:  # not connected: the SDK says so
            return await original(tool_name, arguments, meta)
        seam.install(session)

        async def send(sent: Any) -> Any:
            return await original(tool_name, sent, meta)

        return await healer.call(tool_name, arguments, send)

    setattr(call_tool, _MARK, original)
    owner.call_tool = call_tool
    return server
