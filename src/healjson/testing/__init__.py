"""Test helpers for healjson users: a scripted model that replays canned replies.

`ScriptedModel` is a plain callable (sync and async) for `Healer.run`/`arun`; it needs no network
and no API key. Each scripted item is a reply string, a `healjson.Reply`, an exception to raise,
or a callable `(messages, params) -> item`.
"""

from __future__ import annotations

from ._scripted import Call, ScriptedModel, ScriptExhausted
from ._server import RecordedRequest, ScriptedReply, ScriptedServer

__all__ = [
    "Call",
    "RecordedRequest",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedReply",
    "ScriptedServer",
]
