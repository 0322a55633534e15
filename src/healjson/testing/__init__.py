"""Test helpers for healjson users.

- `ScriptedModel`: a plain callable (sync and async) for `Healer.run` / `arun` that replays
  canned replies (strings, `healjson.Reply` objects, exceptions, callables) and records calls.
- `ScriptedServer` / `ScriptedReply`: an OpenAI-compatible chat-completions server on 127.0.0.1
  that replays scripted replies over real HTTP (content, tool calls, finish reasons, refusals,
  HTTP errors, non-JSON bodies, slow replies) and records every request. The pytest fixture
  `scripted_server` (registered automatically when healjson is installed) yields a started one.

Nothing here needs a network or an API key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._scripted import Call, ScriptedModel, ScriptExhausted

if TYPE_CHECKING:
    from ._server import RecordedRequest, ScriptedReply, ScriptedServer

__all__ = [
    "Call",
    "RecordedRequest",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedReply",
    "ScriptedServer",
]

_SERVER_NAMES = frozenset({"RecordedRequest", "ScriptedReply", "ScriptedServer"})


def __getattr__(name: str) -> Any:
    # the HTTP server loads http.server and friends: only when someone asks for it
    if name in _SERVER_NAMES:
        from . import _server

        return getattr(_server, name)
    raise AttributeError(f"module 'healjson.testing' has no attribute {name!r}")
