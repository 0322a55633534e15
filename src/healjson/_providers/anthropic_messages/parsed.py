"""The SDK's own structured calls on a wrapped Anthropic client, healed in place:
`messages.parse(output_format=M)` and `messages.stream(output_format=M)`.

- `parsed_message(M)`: the `ParsedMessage[M]` that the SDK's `parse` returns, built from a
  message and a healed value (`parse`'s builder).
- `message_stream_manager(open, heal, is_async)`: the SDK's stream manager (a subclass of
  `MessageStreamManager` / `AsyncMessageStreamManager`, built on first use so `import healjson`
  does not import anthropic). Entering it opens the SDK's own `messages.stream(...)`, asked for
  the schema as a plain `output_config` JSON schema format (no `output_format`), so the SDK
  parses nothing on the way: its events are the SDK's, passed through as they arrive, and a
  prose-wrapped answer raises nothing (the bare SDK validates a text block at its
  `content_block_stop` and raises there). The stream is the SDK's `MessageStream` (its class
  made a subclass of the SDK's, so `isinstance` holds) whose `get_final_message()` is healed:
  the streamed message, read to its end, is the first answer of a healing run (`heal`), which
  may make repair calls (plain, not streamed); the final message is a `ParsedMessage` of the
  classes the SDK's stream builds, made from the run's last answer, `parsed_output` the healed
  value (None when the run degraded), `healjson.outcome_of(...)` its outcome. Once healed,
  `current_message_snapshot` is that message too, and `get_final_text()` its text, as on the
  bare SDK's stream once it has ended. The events keep what the SDK streamed: a
  `content_block_stop` or `message_stop` event carries no parsed value.
- `stream_entering`: the SDK's `messages.stream` as a call that opens it, which the client's
  sender steps through its JSON tiers as it does `messages.create` (never the forced tool's,
  whose answer is no text block), or sends the caller's own format as given.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from healjson.adapters._parsed import fields_of, type_parameter, with_request_id

__all__ = ["message_stream_manager", "parsed_message", "stream_entering", "streamed_message"]

Build = Callable[[Any, Any], Any]
"""`build(message, value)`: the SDK's parsed message of `message`, `value` its parsed output."""
Heal = Callable[[Any], Any]
"""The streamed message -> the final parsed message (an awaitable of it for an async client)."""
Open = Callable[[], Any]
"""() -> (the SDK's stream manager, its stream entered) (an awaitable of them, async)."""


def _builder(message_type: Any, text_type: Any) -> Build:
    def build(message: Any, value: Any) -> Any:
        content = list(message.content or ())
        texts = [i for i, block in enumerate(content) if block.type == "text"]
        answer = texts[-1] if texts else -1
        blocks = [
            text_type.construct(
                **{**fields_of(block), "parsed_output": value if index == answer else None}
            )
            if block.type == "text"
            else block
            for index, block in enumerate(content)
        ]
        return with_request_id(
            message_type.construct(**{**fields_of(message), "content": blocks}), message
        )

    return build


def parsed_message(model: type[Any], *, beta: bool = False) -> Build:
    """`build(message, value)`: the SDK's `ParsedMessage` of a message (with `beta`, the beta
    API's `ParsedBetaMessage`), of the very classes its own `parse` builds, `value` as the
    `parsed_output` of its last text block (so the message's `parsed_output` is it); every
    other text block's is None."""
    return _builder(*_parsed_types(beta))


@functools.cache
def _parsed_types(beta: bool) -> tuple[Any, Any]:
    """The classes the SDK's own `parse` builds (message, text block; the beta API's with
    `beta`): found once by running its own builder on a one-block message with no format, since
    releases differ (2.16 builds `ParsedMessage[ResponseFormatT]`, 2.17 the bare
    `ParsedMessage`); the type-variable form where the SDK's builder has moved."""
    found: tuple[Any, ...]
    if beta:
        from anthropic.types.beta import BetaMessage
        from anthropic.types.beta.parsed_beta_message import ParsedBetaMessage, ParsedBetaTextBlock

        found = (BetaMessage, ParsedBetaMessage, ParsedBetaTextBlock)
    else:
        from anthropic.types import Message, ParsedMessage, ParsedTextBlock

        found = (Message, ParsedMessage, ParsedTextBlock)
    message_type, parsed_message_type, text_type = found
    try:
        import anthropic
        from anthropic.lib._parse import _response

        build: Any = _response.parse_beta_response if beta else _response.parse_response
        message = message_type.model_validate(
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [{"type": "text", "text": ""}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        )
        parsed: Any = build(output_format=anthropic.NOT_GIVEN, response=message)
        return type(parsed), type(parsed.content[0])
    except Exception:  # pragma: no cover - an SDK whose builder moved or changed its shape
        param = type_parameter("ResponseFormatT", Any, "anthropic.lib._parse._response")
        return parsed_message_type[param], text_type[param]


def streamed_message(snapshot: Any) -> Build:
    """`parsed_message` for a stream's final message: of the classes the SDK's stream built
    `snapshot` (its accumulated message) with, as the bare stream's final message is."""
    texts = [type(block) for block in snapshot.content or () if block.type == "text"]
    if texts:
        return _builder(type(snapshot), texts[0])
    beta = ".beta." in type(snapshot).__module__
    return _builder(type(snapshot), _parsed_types(beta)[1])


def stream_entering(stream: Callable[..., Any], *, is_async: bool) -> Callable[..., Any]:
    """`stream` (the SDK's `messages.stream`) as a call that opens it: `(**request)` -> (the
    SDK's manager, its stream entered), awaitable for an async client. The client's call
    (`HealingAnthropic._stepped`) asks it for the target in the client's tier as it asks
    `messages.create` (a tier the endpoint refuses, with an HTTP 400 raised as the stream
    opens, stepped down and remembered), or sends the caller's own format as given."""

    def enter(**body: Any) -> tuple[Any, Any]:
        inner = stream(**body)
        return inner, inner.__enter__()

    async def aenter(**body: Any) -> tuple[Any, Any]:
        inner = stream(**body)
        return inner, await inner.__aenter__()

    return aenter if is_async else enter


def message_stream_manager(
    open_stream: Open, heal: Heal, is_async: bool, *, beta: bool = False
) -> Any:
    """The SDK's stream manager over `open_stream` (the beta API's with `beta`), its stream's
    final message `heal`ed."""
    return _classes(beta)["async" if is_async else "sync"](open_stream, heal)


def _healing(stream: Any, heal: Heal, is_async: bool) -> Any:
    """The SDK's entered `stream`, made the healing subclass of its own class."""
    stream._healjson_heal = heal
    stream._healjson_final = []
    own: Any = type(stream)
    stream.__class__ = _healing_class(own, is_async)
    return stream


@functools.cache
def _healing_class(base: type, is_async: bool) -> type:
    """The SDK's stream class `base` with a healed final message (see the module's
    docstring); its events, text stream and everything else are `base`'s."""
    snapshot = base.current_message_snapshot  # type: ignore[attr-defined]

    def current_message_snapshot(self: Any) -> Any:
        done = self._healjson_final
        return done[0] if done else snapshot.__get__(self, base)

    def get_final_message(self: Any) -> Any:
        done = self._healjson_final
        if not done:
            healed = self._healjson_heal(base.get_final_message(self))  # type: ignore[attr-defined]
            if not done:
                done.append(healed)
        return done[0]

    async def aget_final_message(self: Any) -> Any:
        done = self._healjson_final
        if not done:
            streamed = await base.get_final_message(self)  # type: ignore[attr-defined]
            healed = await self._healjson_heal(streamed)
            if not done:
                done.append(healed)
        return done[0]

    namespace = {
        "__doc__": base.__doc__,
        "current_message_snapshot": property(current_message_snapshot),
        "get_final_message": aget_final_message if is_async else get_final_message,
    }
    return type(f"Healing{base.__name__}", (base,), namespace)


@functools.cache
def _classes(beta: bool) -> dict[str, type]:
    """The managers, built once on first use (anthropic imported then, never by `import
    healjson`): subclasses of the SDK's own (the beta API's with `beta`)."""
    from anthropic.lib import streaming

    prefix = "Beta" if beta else ""
    sync_base: type = getattr(streaming, f"{prefix}MessageStreamManager")
    async_base: type = getattr(streaming, f"{prefix}AsyncMessageStreamManager")

    def __init__(self: Any, open_stream: Open, heal: Heal) -> None:
        self._healjson_open = open_stream
        self._healjson_heal = heal
        self._healjson_inner = None

    def __enter__(self: Any) -> Any:
        self._healjson_inner, stream = self._healjson_open()
        return _healing(stream, self._healjson_heal, False)

    def __exit__(self: Any, *exc: Any) -> Any:
        inner = self._healjson_inner
        return None if inner is None else inner.__exit__(*exc)

    async def __aenter__(self: Any) -> Any:
        self._healjson_inner, stream = await self._healjson_open()
        return _healing(stream, self._healjson_heal, True)

    async def __aexit__(self: Any, *exc: Any) -> Any:
        inner = self._healjson_inner
        return None if inner is None else await inner.__aexit__(*exc)

    sync = {"__init__": __init__, "__enter__": __enter__, "__exit__": __exit__}
    asynchronous = {"__init__": __init__, "__aenter__": __aenter__, "__aexit__": __aexit__}
    return {
        "sync": type(f"Healing{sync_base.__name__}", (sync_base,), sync),
        "async": type(f"Healing{async_base.__name__}", (async_base,), asynchronous),
    }
