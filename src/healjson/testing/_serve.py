"""The scripted server as a separate process: serve a reply file until signalled (for a program
that is not Python, a test in another process, a demo, or a benchmark).

Started as::

    python -m healjson.testing._serve --replies FILE.json [--repeat] [--port 0]

FILE.json is a JSON list of strings (assistant contents) or objects with `ScriptedReply` fields.
The process prints exactly one line, `READY <base_url>`, once it listens, and serves until
SIGTERM or SIGINT. `<base_url>` is the openai SDK's; without its trailing `/v1` it is the
anthropic and google-genai SDKs' base URL, and the ollama client's host.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import fields
from types import FrameType

from ._replies import ScriptedReply, ScriptItem
from ._server import ScriptedServer

__all__ = ["load_replies", "main"]


class _Terminate(Exception):
    pass


def _raise_terminate(signum: int, frame: FrameType | None) -> None:
    raise _Terminate(signum)


def load_replies(path: str) -> list[ScriptItem]:
    """The script in a reply file; `SystemExit` naming the first bad entry."""
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of strings or reply objects")
    known = {field.name for field in fields(ScriptedReply)}
    items: list[ScriptItem] = []
    for position, entry in enumerate(data):
        if isinstance(entry, str):
            items.append(entry)
        elif isinstance(entry, dict) and set(entry) <= known:
            items.append(ScriptedReply(**entry))
        else:
            raise SystemExit(
                f"{path}: item {position} must be a string or an object with keys among "
                f"{sorted(known)}"
            )
    return items


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a reply file until SIGTERM/SIGINT, after printing `READY <base_url>`
    (`mcp ...` as the first arguments: the scripted MCP server over stdio, `_mcp_serve`)."""
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:1] == ["mcp"]:
        from ._mcp_serve import main as serve_mcp

        return serve_mcp(given[1:])
    parser = argparse.ArgumentParser(
        prog="python -m healjson.testing",
        description=(
            "A scripted LLM server on 127.0.0.1 that answers from a reply file, for testing "
            "code that calls a model with no API key and no network: OpenAI chat and "
            "Responses, Anthropic, Gemini and Ollama routes. Prints READY <base_url>; "
            "`mcp ...` serves the scripted MCP server over stdio instead."
        ),
    )
    parser.add_argument("--replies", required=True, help="JSON list of strings or reply objects")
    parser.add_argument("--repeat", action="store_true", help="cycle the script forever")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--model", default="scripted-model", help="default model name")
    args = parser.parse_args(given)

    server = ScriptedServer(
        load_replies(args.replies), repeat=args.repeat, model=args.model, port=args.port
    )
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for sig in previous:
            signal.signal(sig, _raise_terminate)
        server.start()
        print(f"READY {server.base_url}", flush=True)
        while True:
            time.sleep(3600)
    except _Terminate:
        pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
