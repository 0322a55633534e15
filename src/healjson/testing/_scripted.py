"""`ScriptedModel`: a model that answers from a script and records what it was asked."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from healjson._core.wire.reply import Reply, Usage

__all__ = ["Call", "ScriptExhausted", "ScriptedModel"]

Item = str | Reply | BaseException | Callable[..., Any] | None


class ScriptExhausted(ConnectionError):
    """The model was called more often than its script has replies.

    The scripted model stands in for a provider, so this is a provider-side failure (like a
    server that closed the connection): a run degrades on it with `api_error`, as it would on
    a real outage, instead of raising into the test."""


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded call: the messages and keyword parameters it received."""

    messages: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any]

    @property
    def last_user_text(self) -> str:
        """Content of the last user message."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content") or "")
        return ""


class ScriptedModel:
    """Replays `replies` in order; `delay_s` sleeps before each (async: without blocking).

    Strings become `Reply(content, finish_reason="stop")` with token usage estimated as
    characters / 4 (one request each), so budgets and usage sums behave as with a real
    provider.
    """

    def __init__(self, replies: Iterable[Item], *, delay_s: float = 0.0, model: str = "scripted"):
        self._replies = list(replies)
        self._delay_s = delay_s
        self._model = model
        self._lock = threading.Lock()
        self.calls: list[Call] = []

    @property
    def remaining(self) -> int:
        """Replies not yet used: 0 once the script is used up, however often it was called
        since (each such call is recorded in `calls`, and raised `ScriptExhausted`)."""
        return max(0, len(self._replies) - len(self.calls))

    def __call__(self, messages: Any, **params: Any) -> Reply:
        """Answer synchronously."""
        if self._delay_s:
            threading.Event().wait(self._delay_s)
        return self._next(messages, params)

    async def acall(self, messages: Any, **params: Any) -> Reply:
        """Answer asynchronously."""
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        return self._next(messages, params)

    def _next(self, messages: Any, params: dict[str, Any]) -> Reply:
        with self._lock:
            index = len(self.calls)
            self.calls.append(Call(tuple(dict(m) for m in messages), dict(params)))
        if index >= len(self._replies):
            raise ScriptExhausted(
                f"scripted model called {index + 1} times; script has {len(self._replies)}"
            )
        item = self._replies[index]
        if callable(item) and not isinstance(item, BaseException | Reply):
            item = item(messages, params)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Reply):
            return item
        text = item
        prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4
        usage = Usage(prompt, len(text or "") // 4, requests=1)
        return Reply(text, "stop", None, usage, params.get("model", self._model))
