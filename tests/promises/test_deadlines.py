"""Nothing blocks forever: a run deadline, a contract timeout, a total deadline over HTTP.

`HealPolicy(deadline_s=...)` bounds the whole run (a slow model, a provider that trickles its
body past every per-read timeout); `HealPolicy(contract_timeout_s=...)` bounds user code (an
async contract stuck on a lookup, an async fallback factory). Past them the run degrades with
`timeout` or `contract_error`, sync and async.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy, Reason, Source, Violation, contract
from healjson.testing import ScriptedModel


class Item(BaseModel):
    name: str


GOOD = '{"name": "a"}'


def _never() -> Any:
    return asyncio.get_running_loop().create_future()  # never resolved: a stuck lookup


@contract(fields=("name",))
async def looks_up_forever(value: Item) -> Violation | None:
    """A contract whose lookup never answers."""
    await _never()
    return None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stuck_async_contract_is_a_contract_error(mode: str) -> None:
    """Past `contract_timeout_s` the contract is cancelled and reported; no model call more."""
    healer = Healer(Item, contracts=[looks_up_forever], policy=HealPolicy(contract_timeout_s=0.05))
    model = ScriptedModel([GOOD])
    if mode == "sync":
        outcome = healer.run(model, "Name it.")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "Name it."))
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert "looks_up_forever" in outcome.errors[0].constraint
    assert "did not finish in time" in outcome.errors[0].constraint
    assert 1 == outcome.calls


@contract(fields=("name",))
def looks_up_slowly(value: Item) -> Violation | None:
    """A sync contract that takes longer than its limit (it cannot be interrupted)."""
    time.sleep(0.12)
    return None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_sync_contract_that_returns_too_late_is_a_contract_error(mode: str) -> None:
    """Its verdict is not trusted: the run degrades with `contract_error` naming the limit."""
    healer = Healer(Item, contracts=[looks_up_slowly], policy=HealPolicy(contract_timeout_s=0.05))
    model = ScriptedModel([GOOD])
    if mode == "sync":
        outcome = healer.run(model, "Name it.")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "Name it."))
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert "looks_up_slowly" in outcome.errors[0].constraint
    assert "must return within 0.05 s" in outcome.errors[0].constraint
    assert 1 == outcome.calls


def test_a_sync_contract_within_its_limit_is_judged_as_usual() -> None:
    """A sync contract that finishes within `contract_timeout_s` is judged as usual."""
    healer = Healer(Item, contracts=[looks_up_slowly], policy=HealPolicy(contract_timeout_s=5.0))
    outcome = healer.run(ScriptedModel([GOOD]), "Name it.")
    assert isinstance(outcome, Healed)
    assert Item(name="a") == outcome.value


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_past_its_deadline_degrades_with_timeout(mode: str) -> None:
    """A model slower than the deadline: `timeout`, with a diagnostic naming the deadline."""
    healer = Healer(Item, policy=HealPolicy(deadline_s=0.05))
    model = ScriptedModel([GOOD], delay_s=2.0)
    if mode == "sync":
        outcome = healer.run(model, "Name it.")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "Name it."))
    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert Source.BUDGET == outcome.errors[0].source
    assert "deadline_s" in outcome.errors[0].constraint


def test_no_call_starts_after_the_deadline() -> None:
    """Repairs stop when the deadline has passed between calls: `timeout`, not more calls."""
    model = ScriptedModel(['{"name": 1}'] * 5, delay_s=0.06)
    policy = HealPolicy(max_attempts=5, deadline_s=0.1)
    outcome = Healer(Item, policy=policy).run(model, "Name it.")
    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert len(model.calls) < 5
    assert outcome.attempts  # what was learned before the deadline is kept


def test_an_async_fallback_factory_is_bounded_too() -> None:
    """The fallback factory is user code: past `contract_timeout_s` it gives no fallback."""

    async def fallback(raw: str | None, errors: Any) -> Any:
        await _never()

    policy = HealPolicy(max_attempts=1, contract_timeout_s=0.05)
    outcome = Healer(Item, policy=policy, fallback=fallback).run(ScriptedModel(["nope"]), "?")
    assert isinstance(outcome, Degraded)
    assert None is outcome.fallback
    assert Source.FALLBACK == outcome.errors[-1].source


def test_a_deadline_that_is_not_reached_changes_nothing() -> None:
    """A generous deadline: the same healed value in one call."""
    outcome = Healer(Item, policy=HealPolicy(deadline_s=30)).run(ScriptedModel([GOOD]), "?")
    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls


@pytest.mark.parametrize("value", [0, -1, float("nan"), "1"])
def test_a_bad_limit_is_a_configuration_error(value: Any) -> None:
    """Limits must be positive numbers of seconds."""
    with pytest.raises(ValueError, match="seconds"):
        HealPolicy(deadline_s=value)
    with pytest.raises(ValueError, match="seconds"):
        HealPolicy(contract_timeout_s=value)


# --- a provider that trickles its reply ----------------------------------------------------------


class _Trickler:
    """An HTTP server on 127.0.0.1 that sends a chat completion one byte every 50 ms: each read
    completes well within the SDK's read timeout, the whole reply takes seconds."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.stop = threading.Event()
        self.finished = threading.Event()  # the whole body went out
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:  # closed by `close()`
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        body = (
            b'{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
            b'"message":{"role":"assistant","content":"{\\"name\\": \\"a\\"}"},'
            b'"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}'
        )
        with conn:
            conn.recv(65536)
            head = (
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            )
            try:
                conn.sendall(head.encode())
                for byte in body:
                    if self.stop.wait(0.05):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:
                return
            self.finished.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def trickler() -> Iterator[_Trickler]:
    server = _Trickler()
    yield server
    server.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_trickling_provider_is_cut_off_at_the_deadline(trickler: _Trickler, mode: str) -> None:
    """The SDK's 1 s timeout is per read and never fires; the run's deadline does."""
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "Name it."}],
        "response_model": Item,
        "policy": HealPolicy(deadline_s=0.3),
    }
    if mode == "sync":
        with openai.OpenAI(
            base_url=trickler.base_url, api_key="test", max_retries=0, timeout=1.0
        ) as sdk:
            outcome = healjson.wrap(sdk).chat.completions.create(**kwargs)
    else:

        async def main() -> Any:
            async with openai.AsyncOpenAI(
                base_url=trickler.base_url, api_key="test", max_retries=0, timeout=1.0
            ) as sdk:
                return await healjson.wrap(sdk).chat.completions.create(**kwargs)

        outcome = asyncio.run(main())
    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert not trickler.finished.is_set()  # the outcome came while the body was still trickling


# --- a contract must not change what it checks ---------------------------------------------------


class Bounded(BaseModel):
    a: int = Field(le=5)


@contract(fields=("a",))
def sets_a(value: Bounded) -> None:
    """A buggy contract that writes to the value it was given."""
    value.a = 99


@contract(fields=("a",))
async def sets_a_later(value: Bounded) -> None:
    """The same bug, async."""
    value.a = 3


@pytest.mark.parametrize("rule", [sets_a, sets_a_later], ids=["sync", "async"])
def test_a_contract_that_mutates_the_value_is_a_contract_error(rule: Any) -> None:
    """Never `Healed(a=99)` for a field bounded at 5: the run reports the contract's bug."""
    outcome = Healer(Bounded, contracts=[rule]).run(ScriptedModel(['{"a": 1}']), "?")
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert "must not change the value" in outcome.errors[-1].constraint
    outcome = healjson.validate('{"a": 1}', Bounded, contracts=[rule])
    assert Reason.CONTRACT_ERROR == outcome.reason
