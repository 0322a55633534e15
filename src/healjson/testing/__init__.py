"""Test helpers for healjson users.

- `ScriptedModel`: a plain callable (sync and async) for `Healer.run` / `arun` that replays
  canned replies (strings, `healjson.Reply` objects, exceptions, callables) and records calls.
- `ScriptedServer` / `ScriptedReply`: a model server on 127.0.0.1 that replays scripted replies
  over real HTTP (content, tool calls, finish reasons, refusals, HTTP errors, non-JSON bodies,
  slow replies) and records every request. One script is served in the wire format of the route
  each request arrives on: OpenAI chat completions and the Responses API (`base_url`),
  Anthropic Messages (`anthropic_base_url`), Gemini `generateContent` (`gemini_base_url`) and
  Ollama's chat (`ollama_host`), so the real openai, anthropic, google-genai and ollama SDKs
  can all be pointed at it. It also serves
  OpenAI's Batch API (files and batches) and Anthropic's Message Batches from the same script,
  its store shown as `ScriptedBatch` and `ScriptedFile` snapshots (`server.batches`,
  `server.files`). The pytest fixture `scripted_server` (registered automatically when
  healjson is installed) yields a started one.
- `ScriptedMCPServer` (extra `mcp`): an MCP server whose tools answer what a test scripts
  (`ScriptedTool`, `ScriptedToolResult`: JSON only in a text block, structured content off its
  schema, error results, slow results), in memory (`Client(scripted.server)`) or over stdio
  (`scripted.stdio_parameters(directory)`, `python -m healjson.testing mcp`), recording each
  call (`RecordedToolCall`).
- The hypothesis kit for property-based contract tests (`pip install 'healjson[testing]'`):
  `valid(pack)`, `violating(pack, contract)`, `from_schema(model)` and `corrupted(value)`
  (renderings as a `Corruption`) are strategies; `check_pack(pack)` runs every check a contract
  pack should pass and returns a `PackReport`. Hypothesis is imported only when they are used.
- `capture_events()`: a context manager yielding a list that collects healjson's events (each a
  dict: `event`, `log_level`, `run_id` and its fields) while the block runs, in the current
  thread or task only (structlog's `capture_logs` is the model; nothing is configured
  process-wide).

Nothing here needs a network or an API key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._scripted import Call, ScriptedModel, ScriptExhausted

if TYPE_CHECKING:
    from ._batches import ScriptedBatch, ScriptedFile
    from ._capture import capture_events
    from ._check_pack import PackReport, check_pack
    from ._corruptions import Corruption, corrupted
    from ._mcp_server import (
        RecordedToolCall,
        ScriptedMCPServer,
        ScriptedTool,
        ScriptedToolResult,
    )
    from ._replies import RecordedRequest, ScriptedReply
    from ._schema_data import from_schema
    from ._server import ScriptedServer
    from ._strategies import valid, violating

__all__ = [
    "Call",
    "Corruption",
    "PackReport",
    "RecordedRequest",
    "RecordedToolCall",
    "ScriptExhausted",
    "ScriptedBatch",
    "ScriptedFile",
    "ScriptedMCPServer",
    "ScriptedModel",
    "ScriptedReply",
    "ScriptedServer",
    "ScriptedTool",
    "ScriptedToolResult",
    "capture_events",
    "check_pack",
    "corrupted",
    "from_schema",
    "valid",
    "violating",
]

# name -> submodule, imported on first access: the HTTP server loads http.server and friends,
# the hypothesis kit loads hypothesis when a strategy is built
_LAZY = {
    "RecordedRequest": "_replies",
    "ScriptedReply": "_replies",
    "ScriptedServer": "_server",
    "ScriptedBatch": "_batches",
    "ScriptedFile": "_batches",
    "Corruption": "_corruptions",
    "corrupted": "_corruptions",
    "from_schema": "_schema_data",
    "valid": "_strategies",
    "violating": "_strategies",
    "PackReport": "_check_pack",
    "RecordedToolCall": "_mcp_server",
    "ScriptedMCPServer": "_mcp_server",
    "ScriptedTool": "_mcp_server",
    "ScriptedToolResult": "_mcp_server",
    "capture_events": "_capture",
    "check_pack": "_check_pack",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is not None:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{module_name}"), name)
    raise AttributeError(f"module 'healjson.testing' has no attribute {name!r}")
