"""A call whose request never reached the provider (a refused connection, a name that did not
resolve, an HTTP stack's connect error, however deep an SDK wraps it) was billed nothing: its
attempt counts one request and no token, as an HTTP error answer does; a call that may have
reached the provider (a read timeout, a dropped connection) keeps its estimate."""

from __future__ import annotations

import itertools
import socket
from typing import Any

import httpx
import ollama
import openai
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded
from healjson._core.wire.fault import never_sent


class Item(BaseModel):
    name: str


MESSAGES = [{"role": "user", "content": "an item, please, with a name of some length"}]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_refused_openai_call_is_billed_nothing() -> None:
    """The real openai SDK against a closed loopback port: `api_error`, one request, 0 tokens."""
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="sk-test", max_retries=0
    )
    outcome = healjson.wrap(client).chat.completions.create(
        model="m", messages=MESSAGES, response_model=Item
    )
    assert isinstance(outcome, Degraded)
    assert "api_error" == outcome.reason
    assert (1, 0, 0) == (
        outcome.usage.requests,
        outcome.usage.prompt_tokens,
        outcome.usage.completion_tokens,
    )
    assert "retry them in the client" in outcome.errors[0].prescription


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_refused_ollama_call_is_billed_nothing(mode: str) -> None:
    """The real ollama SDK against a closed loopback port, sync and async: 0 tokens, and advice
    that does not claim the client retries."""
    host = f"http://127.0.0.1:{closed_port()}"
    if mode == "sync":
        outcome = healjson.wrap(ollama.Client(host=host)).chat(
            model="o", messages=MESSAGES, response_model=Item
        )
    else:
        import asyncio

        healed = healjson.wrap(ollama.AsyncClient(host=host))
        outcome = asyncio.run(healed.chat(model="o", messages=MESSAGES, response_model=Item))
    assert isinstance(outcome, Degraded)
    assert "api_error" == outcome.reason
    assert 0 == outcome.usage.total_tokens
    assert 1 == outcome.usage.requests
    assert "client's own retry policy" not in outcome.errors[0].prescription


def test_a_read_timeout_keeps_its_estimate() -> None:
    """A call that timed out after it was sent may have been billed: its prompt is estimated."""

    def model(messages: Any, **params: Any) -> str:
        raise httpx.ReadTimeout("the server did not answer in time")

    outcome = healjson.Healer(Item).run(model, MESSAGES)
    assert isinstance(outcome, Degraded)
    assert outcome.usage.prompt_tokens > 0
    assert outcome.usage.estimated


CONNECT = [
    lambda: ConnectionRefusedError(111, "Connection refused"),
    lambda: socket.gaierror(-2, "Name or service not known"),
    lambda: httpx.ConnectError("All connection attempts failed"),
    lambda: httpx.ConnectTimeout("timed out connecting"),
]
OTHER = [
    lambda: httpx.ReadTimeout("read"),
    lambda: httpx.RemoteProtocolError("peer closed"),
    lambda: ConnectionResetError(104, "reset"),
    lambda: TimeoutError("slow"),
    lambda: RuntimeError("wrapped"),
    lambda: ValueError("body"),
]


@given(
    outer=st.lists(st.sampled_from(OTHER), max_size=6),
    root=st.one_of(st.none(), st.sampled_from(CONNECT)),
    via_cause=st.lists(st.booleans(), min_size=6, max_size=6),
    cycle=st.booleans(),
)
def test_never_sent_finds_a_connect_error_anywhere_in_the_chain(
    outer: list[Any], root: Any, via_cause: list[bool], cycle: bool
) -> None:
    """For any chain of wrapping exceptions (by cause or by context, a cycle included), the
    call counts as never sent exactly when a connect error is somewhere in the chain."""
    chain: list[BaseException] = [make() for make in outer]
    if root is not None:
        chain.append(root())
    assume(chain)
    for index, (upper, lower) in enumerate(itertools.pairwise(chain)):
        if via_cause[index]:
            upper.__cause__ = lower
        else:
            upper.__context__ = lower
    if cycle:
        chain[-1].__context__ = chain[0]
    assert never_sent(chain[0]) == (root is not None)
