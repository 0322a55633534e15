"""The SDK's own stream managers for `chat.completions.stream(response_format=M)` and
`responses.stream(text_format=M)` on a wrapped OpenAI client, their final object healed.

The stream a manager opens is the SDK's own (`ChatCompletionStream`, `ResponseStream` and their
async twins), asked for the schema as a plain JSON schema format so that the SDK parses nothing
while it streams (a prose-wrapped answer would make it raise): its events are the SDK's, passed
through as they arrive. Its `get_final_completion()` / `get_final_response()` is healjson's: the
streamed answer, read to its end, is the first answer of a healing run (`heal(answer)`), which
may make repair calls (non-streamed); the final object is the SDK's parsed type, built from the
last answer of that run (the repaired call's, when there was one), `.parsed` healed and
`healjson.outcome_of(...)` its outcome. The managers are subclasses of the SDK's, so
`isinstance` checks still hold.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["chat_stream_manager", "response_stream_manager"]

Heal = Callable[[Any], Any]
"""The streamed answer -> the final SDK object (an awaitable of it for an async client)."""


def _chat_final(stream: Any) -> Any:
    # read to its end; the snapshot, not `get_final_completion` (which raises on `length`)
    stream.until_done()
    return stream.current_completion_snapshot


async def _achat_final(stream: Any) -> Any:
    await stream.until_done()
    return stream.current_completion_snapshot


@functools.cache
def _classes() -> dict[str, type]:
    """The managers, built once on first use (openai imported then, never by `import healjson`)."""
    from openai.lib.streaming.chat import (
        AsyncChatCompletionStreamManager,
        ChatCompletionStreamManager,
    )
    from openai.lib.streaming.responses import (
        AsyncResponseStreamManager,
        ResponseStreamManager,
    )

    def sync_manager(base: type, method: str, read: Callable[[Any, Any], Any]) -> type:
        def __init__(self: Any, inner: Any, heal: Heal) -> None:
            self.inner = inner
            self.heal = heal

        def __enter__(self: Any) -> Any:
            stream = self.inner.__enter__()
            own = getattr(stream, method)
            done: list[Any] = []

            def final() -> Any:
                if not done:
                    done.append(self.heal(read(stream, own)))
                return done[0]

            setattr(stream, method, final)
            return stream

        def __exit__(self: Any, *exc: Any) -> Any:
            return self.inner.__exit__(*exc)

        namespace = {"__init__": __init__, "__enter__": __enter__, "__exit__": __exit__}
        return type(f"Healing{base.__name__}", (base,), namespace)

    def async_manager(base: type, method: str, read: Callable[[Any, Any], Awaitable[Any]]) -> type:
        def __init__(self: Any, inner: Any, heal: Heal) -> None:
            self.inner = inner
            self.heal = heal

        async def __aenter__(self: Any) -> Any:
            stream = await self.inner.__aenter__()
            own = getattr(stream, method)
            done: list[Any] = []

            async def final() -> Any:
                if not done:
                    done.append(await self.heal(await read(stream, own)))
                return done[0]

            setattr(stream, method, final)
            return stream

        async def __aexit__(self: Any, *exc: Any) -> Any:
            return await self.inner.__aexit__(*exc)

        namespace = {"__init__": __init__, "__aenter__": __aenter__, "__aexit__": __aexit__}
        return type(f"Healing{base.__name__}", (base,), namespace)

    async def achat(stream: Any, own: Any) -> Any:
        return await _achat_final(stream)

    async def aresponse(stream: Any, own: Any) -> Any:
        return await own()

    return {
        "chat": sync_manager(
            ChatCompletionStreamManager, "get_final_completion", lambda s, own: _chat_final(s)
        ),
        "achat": async_manager(AsyncChatCompletionStreamManager, "get_final_completion", achat),
        "responses": sync_manager(
            ResponseStreamManager, "get_final_response", lambda s, own: own()
        ),
        "aresponses": async_manager(AsyncResponseStreamManager, "get_final_response", aresponse),
    }


def chat_stream_manager(inner: Any, heal: Heal, is_async: bool) -> Any:
    """The SDK's chat stream manager `inner`, its stream's `get_final_completion()` healed:
    `heal(snapshot)` on the stream's accumulated completion."""
    return _classes()["achat" if is_async else "chat"](inner, heal)


def response_stream_manager(inner: Any, heal: Heal, is_async: bool) -> Any:
    """The SDK's Responses stream manager `inner`, its stream's `get_final_response()` healed:
    `heal(response)` on the response of the `response.completed` event."""
    return _classes()["aresponses" if is_async else "responses"](inner, heal)
