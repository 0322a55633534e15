"""Which exceptions from a model call degrade a run and which propagate: one rule, one table.

The provider's and the transport's failures (any `OSError` or `TimeoutError`, the exceptions of
the provider SDKs and HTTP libraries, and the types in `HealPolicy.provider_errors`) become
`Degraded`; any other exception is a bug in the caller's code and propagates unchanged, from
`Healer.run`, `Healer.arun` and `@heal` alike.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healer, HealPolicy, Reason

try:  # the HTTP library under the installed openai SDK
    import httpx
except ImportError:  # pragma: no cover - openai 3 ships on httpx2
    import httpx2 as httpx  # type: ignore[no-redef]

REQUEST = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


class Item(BaseModel):
    name: str


class GatewayDown(Exception):
    """A caller's own transport error type (declared through `provider_errors`)."""


def _raises(exc: BaseException) -> Callable[..., Any]:
    def call(messages: Any, **params: Any) -> Any:
        raise exc

    return call


def _raises_async(exc: BaseException) -> Callable[..., Any]:
    async def call(messages: Any, **params: Any) -> Any:
        raise exc

    return call


DEGRADED = [
    pytest.param(TimeoutError("slow"), Reason.TIMEOUT, id="TimeoutError"),
    pytest.param(ConnectionResetError("reset"), Reason.API_ERROR, id="ConnectionResetError"),
    pytest.param(OSError("no route to host"), Reason.API_ERROR, id="OSError"),
    pytest.param(httpx.ConnectError("refused", request=REQUEST), Reason.API_ERROR, id="httpx"),
    pytest.param(httpx.ReadTimeout("slow", request=REQUEST), Reason.TIMEOUT, id="httpx-timeout"),
    pytest.param(openai.APIConnectionError(request=REQUEST), Reason.API_ERROR, id="openai"),
    pytest.param(openai.APITimeoutError(request=REQUEST), Reason.TIMEOUT, id="openai-timeout"),
    pytest.param(healjson.ProviderError("the gateway said 502"), Reason.API_ERROR, id="marked"),
    pytest.param(json.JSONDecodeError("Expecting value", "<html>", 0), Reason.API_ERROR, id="json"),
    pytest.param(
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
        Reason.API_ERROR,
        id="undecodable",
    ),
]
RAISED = [
    pytest.param(NameError("name 'clinet' is not defined"), id="NameError"),
    pytest.param(TypeError("create() got an unexpected keyword 'temprature'"), id="TypeError"),
    pytest.param(KeyError("choices"), id="KeyError"),
    pytest.param(ValueError("bad value in my code"), id="ValueError"),
    pytest.param(AttributeError("'NoneType' has no attribute 'chat'"), id="AttributeError"),
    pytest.param(ZeroDivisionError("division by zero"), id="ZeroDivisionError"),
    pytest.param(RuntimeError("my own bug"), id="RuntimeError"),
    pytest.param(GatewayDown("not declared"), id="undeclared-custom"),
]


def _run(mode: str, healer: Healer[Any], exc: BaseException) -> Any:
    if mode == "run":
        return healer.run(_raises(exc), "Name it.")
    if mode == "arun":
        return asyncio.run(healer.arun(_raises_async(exc), "Name it."))
    if mode == "heal":
        return healjson.heal(Item, policy=healer.policy)(_raises(exc))("Name it.")
    return asyncio.run(healjson.heal(Item, policy=healer.policy)(_raises_async(exc))("Name it."))


MODES = ["run", "arun", "heal", "heal-async"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("exc", "reason"), DEGRADED)
def test_provider_and_transport_failures_degrade(
    mode: str, exc: BaseException, reason: Reason
) -> None:
    """Provider and transport failures degrade after one call with their reason, from `run`,
    `arun` and `@heal` alike."""
    outcome = _run(mode, Healer(Item), exc)
    assert isinstance(outcome, Degraded)
    assert reason == outcome.reason
    assert 1 == outcome.calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("exc", RAISED)
def test_a_bug_in_the_callers_code_propagates_unchanged(mode: str, exc: BaseException) -> None:
    """An exception that is a bug in the caller's code propagates as the very same object, from
    every entry point."""
    with pytest.raises(type(exc)) as raised:
        _run(mode, Healer(Item), exc)
    assert raised.value is exc


@pytest.mark.parametrize("mode", MODES)
def test_declared_provider_errors_degrade(mode: str) -> None:
    """An exception type declared in `HealPolicy.provider_errors` degrades as `api_error`."""
    healer = Healer(Item, policy=HealPolicy(provider_errors=(GatewayDown,)))
    outcome = _run(mode, healer, GatewayDown("503 from the gateway"))
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason


def test_a_bug_under_a_deadline_propagates_too() -> None:
    """The worker thread of a time-limited call hands the caller's bug back, unchanged."""
    healer = Healer(Item, policy=HealPolicy(deadline_s=5.0))
    exc = NameError("name 'x' is not defined")
    with pytest.raises(NameError) as raised:
        healer.run(_raises(exc), "Name it.")
    assert raised.value is exc


def test_a_return_value_healjson_cannot_read_is_an_api_error() -> None:
    """Not an exception: the call returned something that is no reply (reported, not raised)."""
    outcome = Healer(Item).run(lambda messages, **params: 42, "Name it.")
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason


@pytest.mark.parametrize("bad", [(ValueError(),), [ValueError], (int,), "ValueError"])
def test_provider_errors_must_be_exception_types(bad: Any) -> None:
    """`provider_errors` holding anything but exception types is refused when the policy is
    built."""
    with pytest.raises(ValueError, match="provider_errors"):
        HealPolicy(provider_errors=bad)
