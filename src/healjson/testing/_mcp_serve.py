"""`python -m healjson.testing mcp`: the scripted MCP server as a process of its own, over stdio.

    python -m healjson.testing mcp --script FILE.json [--calls CALLS.jsonl] [--heal]

`FILE.json` is `ScriptedMCPServer.script()`'s data: `{"tools": [{"name", "input_schema",
"output_schema", "description"}], "results": {tool: [{"structured", "text", "is_error",
"delay_s"}]}, "repeat": false, "check_arguments": true}`. The process speaks MCP on its stdin and
stdout until the client closes them; each call it receives is appended to `--calls` as a JSON
line. `--heal` serves it through `healjson.mcp.heal_tools` (results healed server side).
`ScriptedMCPServer.stdio_parameters(directory)` writes both files and returns the SDK's
`StdioServerParameters` for it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script over stdio until the client closes the connection."""
    import anyio

    from ._mcp_server import ScriptedMCPServer

    parser = argparse.ArgumentParser(
        prog="python -m healjson.testing mcp",
        description="Scripted MCP server over stdio (tools answer from a script).",
    )
    parser.add_argument("--script", required=True, help="the server's script (JSON)")
    parser.add_argument("--calls", help="append each call received to this file (JSON lines)")
    parser.add_argument("--heal", action="store_true", help="heal results server side")
    args = parser.parse_args(argv)
    with open(args.script, encoding="utf-8") as file:
        scripted = ScriptedMCPServer.from_script(json.load(file))
    if args.calls:
        scripted.record_to(args.calls)
    if args.heal:
        from healjson.mcp import heal_tools

        heal_tools(scripted.server)
    anyio.run(scripted.run_stdio)
    return 0
