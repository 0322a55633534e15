"""The provider boundary: the core reads through the registry its formats fill on import."""

from __future__ import annotations

from typing import Any

from healjson import Reply
from healjson._core.run import drive
from healjson._core.wire import delta as chunks
from healjson._core.wire import formats as wire
from healjson._core.wire import reply
from healjson._core.wire.delta import Delta, read_chunk
from healjson._core.wire.registry import register
from healjson._providers import PROVIDERS, openai_chat


def test_healjson_registers_its_default_format_and_binds_the_fast_readers() -> None:
    """Importing healjson registers the default provider's formats (its catch-all last) and
    the drivers' fast path calls the chat format's reader itself (no lookup on the hot path)."""
    assert openai_chat.FORMAT is wire.formats()[0]
    assert openai_chat.MESSAGE is PROVIDERS.default.catch_all[0]
    assert wire.formats().index(openai_chat.MESSAGE) > wire.formats().index(openai_chat.FORMAT)
    assert drive.read_completion is openai_chat.read_completion
    assert reply.read_completion is openai_chat.read_completion
    assert chunks.read_sdk_chunk is openai_chat.read_sdk_chunk
    register(openai_chat.FORMAT)  # twice: no second entry
    assert 1 == sum(fmt is openai_chat.FORMAT for fmt in wire.formats())


class _Ping:
    """A response of a format no shipped module reads."""

    def __init__(self, text: str) -> None:
        self.pong = text


def test_a_registered_format_is_read_by_the_core_and_names_its_token_limit() -> None:
    """One `register` call is all a new wire format needs: replies, chunks and the token limit
    of its requests reach it, and its error package counts as the provider's."""
    fmt = wire.WireFormat(
        "ping",
        lambda obj: hasattr(obj, "pong"),
        lambda obj: Reply(obj.pong, "stop"),
        reads_chunk=lambda chunk: hasattr(chunk, "pong"),
        read_chunk=lambda chunk: Delta(text=chunk.pong),
        token_limit=lambda params: (
            ("ping_limit", params["ping_limit"]) if "ping_limit" in params else None
        ),
        with_token_limit=lambda params, n: {**params, "ping_limit": n},
        error_packages=frozenset({"pingsdk"}),
    )
    try:
        register(fmt)
        assert Reply("hi", "stop") == reply.to_reply(_Ping("hi"))
        assert reply.is_response(_Ping("hi"))
        assert Delta(text="h") == read_chunk(_Ping("h"))
        assert (fmt, 5) == wire.token_limit({"ping_limit": 5})
        assert "pingsdk" in drive.PROVIDER_PACKAGES
    finally:
        wire.formats().remove(fmt)
        wire.error_packages().discard("pingsdk")


def test_token_limit_without_one_named_is_the_first_formats() -> None:
    """A request naming no limit gets the first format with one (today's `max_tokens`)."""
    fmt, value = wire.token_limit({"model": "m"})
    assert (fmt, value) == (openai_chat.FORMAT, None)
    assert fmt is not None
    assert fmt.with_token_limit is not None
    assert {"model": "m", "max_tokens": 9} == fmt.with_token_limit({"model": "m"}, 9)
    params: dict[str, Any] = {"max_completion_tokens": 3}
    assert (openai_chat.FORMAT, 3) == wire.token_limit(params)
