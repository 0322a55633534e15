"""The MCP boundary, healed: tool results against `outputSchema`, arguments against `inputSchema`.

No engine of its own: each result and each set of arguments is one `healjson.validate` run (L1
and the alignments, then the JSON Schema and the tool's contracts), so it is recorded like any
other run (events, spans, trace). The pieces, each used by the client adapter
(`healjson.adapters._mcp`), the server side (`healjson.mcp.heal_tools`) and the agent
frameworks (`healjson._mcp_frameworks`):

- `internals`   the one module that imports healjson's core internals
- `tools`       a tool's schemas as targets, and a session's tools listed once (`ToolIndex`)
- `arguments`   outgoing (or incoming) arguments normalised against `inputSchema`
- `results`     a tool result judged and healed against `outputSchema` (`Verdict`)
- `calls`       one healed `tools/call` on the client side, the SDK's `CallToolResult` in and out
- `seam`        the SDK's own result check, left to healjson for the calls healjson makes
- `server`      `heal_tools`: the same, server side

Nothing here imports the `mcp` SDK at module level except `calls` and `server`, which only
the code paths that hold an SDK object import.
"""
