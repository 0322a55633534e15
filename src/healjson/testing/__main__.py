"""`python -m healjson.testing`: the scripted model server as a process of its own.

    python -m healjson.testing --replies FILE.json [--repeat] [--port 0] [--model NAME]

`FILE.json` is a JSON list of assistant contents (strings) or objects with `ScriptedReply` fields.
The server listens on 127.0.0.1 only, prints one line, `READY <base_url>` (the openai SDK's
`base_url`, ending in `/v1`), once it listens, answers each model request with the next reply
(`--repeat` cycles them), and runs until SIGTERM or SIGINT (Ctrl-C). Point any OpenAI-compatible
client at it: `OPENAI_BASE_URL=<base_url> OPENAI_API_KEY=test`, or `--base-url` on the command
line. The work is `healjson.testing._serve.main`.

    python -m healjson.testing mcp --script FILE.json [--calls CALLS.jsonl]

serves a scripted MCP server over stdio instead (`ScriptedMCPServer.stdio_parameters`, in
`healjson.testing._mcp_serve`).
"""

from __future__ import annotations

from ._serve import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
