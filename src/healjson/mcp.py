"""`healjson.mcp` (extra `mcp`): the MCP boundary healed, on both sides, with the official SDK.

Client side, `healjson.wrap(session)` (an `mcp.ClientSession` or `mcp.Client`) is enough;
`heal_session(session, tool_contracts=..., policy=...)` is the same with rules per tool:

    async with healjson.mcp.heal_session(Client(server), tool_contracts={"quote": [rule]}) as c:
        result = await c.call_tool("quote", {"sku": "A-1"})  # the SDK's own CallToolResult

Server side, `heal_tools(server)` (an `MCPServer` or a low-level `Server`): every `tools/call`
answers with structured content that conforms to the tool's output schema, or with an error
result whose text is the diagnostics, and accepts arguments that fit the input schema once
normalised (a stringified object where the schema says object).

What is never done, on either side: a value the result does not hold is never made up (a
missing field stays missing, and the result becomes an error result naming it); an error result
is never judged against the success schema; a protocol or transport error stays the SDK's.
See `healjson._mcp` for the rules, and `healjson.outcome_of(result)` for what was done.
"""

from __future__ import annotations

from ._extras import missing_extra

try:
    import mcp  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(missing_extra("mcp", "mcp")) from exc

from ._mcp.server import heal_tools
from .adapters._mcp import HealingSession
from .adapters._mcp import wrap_session as heal_session

__all__ = ["HealingSession", "heal_session", "heal_tools"]
