"""`@healjson.heal` in both styles, sync and async.

Style (a): the decorated function is the model call (a `ScriptedModel`, or the bare SDK over real
HTTP). Style (b): the decorated function builds the prompt and the decorator calls `client=` (the
real openai SDK against `ScriptedServer`, `max_retries=0`) or `call=`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import ContractContext, Degraded, Healed, Reason, Violation, contract
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from sdk_calls import TLS as _SSL

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")


class Invoice(BaseModel):
    number: str
    total: int
    paid: bool


GOOD = '{"number": "INV-1", "total": 5, "paid": true}'
EXPECTED = Invoice(number="INV-1", total=5, paid=True)
INVALID = '{"number": "INV-1", "total": "lots"}'
SYSTEM = {"role": "system", "content": "You extract invoices."}


def sync_sdk(server: ScriptedServer) -> openai.OpenAI:
    """A real sync SDK client for `server`, without SDK retries."""
    return openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=_SSL),
    )


def async_sdk(server: ScriptedServer) -> openai.AsyncOpenAI:
    """A real async SDK client for `server`, without SDK retries."""
    return openai.AsyncOpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=_SSL),
    )


def with_client(mode: Mode, server: ScriptedServer, body: Callable[[Any], Any]) -> Any:
    """Run `body(sdk)` with a real client of `mode` (awaiting an awaitable result for async)."""
    if mode == "sync":
        with sync_sdk(server) as sdk:
            return body(sdk)

    async def main() -> Any:
        async with async_sdk(server) as sdk:
            result = body(sdk)
            return await result if inspect.isawaitable(result) else result

    return asyncio.run(main())


def finish(mode: Mode, result: Any) -> Any:
    """The outcome of a decorated call: awaited with `asyncio.run` for async."""
    if mode == "async":
        assert inspect.isawaitable(result)
        return asyncio.run(result)
    return result


def build_prompt(number: str, *, currency: str = "EUR") -> str:
    """Build the extraction prompt for one invoice."""
    return f"Extract invoice {number} (amounts in {currency})."


async def build_prompt_async(number: str, *, currency: str = "EUR") -> str:
    """Build the extraction prompt for one invoice, asynchronously."""
    return f"Extract invoice {number} (amounts in {currency})."


def build_messages(number: str) -> list[dict[str, str]]:
    """Build system and user messages for one invoice."""
    return [SYSTEM, {"role": "user", "content": f"Extract invoice {number}."}]


# ---------------------------------------------------------------------------------------------
# Style (a): the function is the model call
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_model_call_style_heals_a_scripted_model(mode: Mode) -> None:
    """A decorated model call returns an outcome; decorator params and call params both arrive."""
    model = ScriptedModel([INVALID, GOOD])
    if mode == "sync":

        def ask(messages: Any, **params: Any) -> Any:
            """Ask the scripted model."""
            return model(messages, **params)

    else:

        async def ask(messages: Any, **params: Any) -> Any:
            """Ask the scripted model."""
            return await model.acall(messages, **params)

    decorated = healjson.heal(Invoice, model="m")(ask)
    outcome = finish(mode, decorated("Extract invoice INV-1.", temperature=0))

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert 2 == outcome.calls
    assert 2 == len(model.calls)
    assert ({"role": "user", "content": "Extract invoice INV-1."},) == model.calls[0].messages
    assert {"model": "m", "temperature": 0} == dict(model.calls[0].params)
    assert {"model": "m", "temperature": 0} == dict(model.calls[1].params)
    assert "ask" == decorated.__name__
    assert "Ask the scripted model." == decorated.__doc__


@pytest.mark.parametrize("mode", MODES)
def test_model_call_style_passes_context_to_contracts(mode: Mode) -> None:
    """`context=` on a decorated model call reaches the contracts as `ctx.extra`."""

    @contract(fields=("total",))
    def total_matches_ledger(value: Invoice, ctx: ContractContext) -> Violation | None:
        """total must equal the ledger amount."""
        expected = ctx.extra["ledger_total"]
        return None if value.total == expected else Violation(f"total must be {expected}")

    model = ScriptedModel([GOOD, '{"number": "INV-1", "total": 7, "paid": true}'])
    call: Callable[..., Any] = model if mode == "sync" else model.acall
    decorated = healjson.heal(Invoice, contracts=[total_matches_ledger])(call)

    outcome = finish(mode, decorated([SYSTEM], context={"ledger_total": 7}))

    assert isinstance(outcome, Healed)
    assert 7 == outcome.value.total
    assert 2 == outcome.calls
    assert "total must be 7" in model.calls[1].last_user_text


@pytest.mark.parametrize("mode", MODES)
def test_model_call_style_calling_the_bare_sdk_over_http(mode: Mode) -> None:
    """A function that calls the bare SDK is healed; extra params reach the HTTP request."""

    def body(sdk: Any) -> Any:
        if mode == "sync":

            def ask(messages: Any, **params: Any) -> Any:
                return sdk.chat.completions.create(messages=messages, **params)

        else:

            async def ask(messages: Any, **params: Any) -> Any:
                return await sdk.chat.completions.create(messages=messages, **params)

        return healjson.heal(Invoice, model="m", temperature=0)(ask)([SYSTEM])

    with ScriptedServer([INVALID, GOOD]) as server:
        outcome = with_client(mode, server, body)

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert 2 == outcome.calls
    assert 2 == len(server.requests)
    assert ["m", "m"] == [r.body["model"] for r in server.requests]
    assert [0, 0] == [r.body["temperature"] for r in server.requests]
    assert [SYSTEM] == server.requests[0].messages


@pytest.mark.parametrize("mode", MODES)
def test_model_call_style_degrades_instead_of_raising(mode: Mode) -> None:
    """A model call that fails on the transport becomes `api_error`, never an exception."""
    model = ScriptedModel([ConnectionResetError("connection reset")])
    call: Callable[..., Any] = model if mode == "sync" else model.acall

    outcome = finish(mode, healjson.heal(Invoice)(call)("Extract."))

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == outcome.calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("returned", [None, 42, ["not", "a", "reply"]], ids=["none", "int", "list"])
def test_a_model_call_returning_no_reply_degrades_after_one_call(mode: Mode, returned: Any) -> None:
    """A model call that returns no reply (None from a missing `return`, or any other type it
    cannot read) is a bug in the call: one call, `api_error`, and the message says what it
    returned; None is not an empty answer to ask again for."""
    calls: list[Any] = []

    def sync_call(messages: Any, **params: Any) -> Any:
        calls.append(messages)
        return returned

    async def async_call(messages: Any, **params: Any) -> Any:
        calls.append(messages)
        return returned

    call: Callable[..., Any] = sync_call if mode == "sync" else async_call

    outcome = finish(mode, healjson.heal(Invoice)(call)("Extract."))

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == len(calls) == outcome.calls
    if returned is None:
        assert "returned None (a missing `return`?)" in (outcome.attempts[0].error or "")


# ---------------------------------------------------------------------------------------------
# Style (b): the function builds the prompt, `client=` makes the call
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_prompt_builder_returning_a_string_with_a_client(mode: Mode) -> None:
    """The builder's string becomes the user turn; extra params reach every request."""

    def body(sdk: Any) -> Any:
        extract = healjson.heal(Invoice, client=sdk, model="m", temperature=0)(build_prompt)
        return extract("INV-1", currency="USD")

    with ScriptedServer([INVALID, GOOD]) as server:
        outcome = with_client(mode, server, body)

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert 2 == outcome.calls
    assert 2 == len(server.requests)
    first = server.requests[0]
    assert [{"role": "user", "content": "Extract invoice INV-1 (amounts in USD)."}] == (
        first.messages
    )
    assert ["m", "m"] == [r.body["model"] for r in server.requests]
    assert [0, 0] == [r.body["temperature"] for r in server.requests]
    assert "json_schema" == first.body["response_format"]["type"]


@pytest.mark.parametrize("mode", MODES)
def test_prompt_builder_returning_messages_with_a_client(mode: Mode) -> None:
    """Messages from the builder are sent as they are."""

    def body(sdk: Any) -> Any:
        return healjson.heal(Invoice, client=sdk, model="m")(build_messages)("INV-1")

    with ScriptedServer([GOOD]) as server:
        outcome = with_client(mode, server, body)

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert 1 == outcome.calls
    assert 1 == len(server.requests)
    assert build_messages("INV-1") == server.requests[0].messages
    assert "m" == server.requests[0].body["model"]


def test_async_prompt_builder_with_an_async_client() -> None:
    """An `async def` prompt builder is awaited before the async client is called."""

    async def main() -> Any:
        with ScriptedServer([GOOD]) as server:
            async with async_sdk(server) as sdk:
                extract = healjson.heal(Invoice, client=sdk, model="m")(build_prompt_async)
                outcome = await extract("INV-1")
            return outcome, server.requests

    outcome, requests = asyncio.run(main())

    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert 1 == len(requests)
    assert "Extract invoice INV-1 (amounts in EUR)." == requests[0].last_user_text


@pytest.mark.parametrize("mode", MODES)
def test_prompt_builder_with_a_client_degrades_on_an_http_error(mode: Mode) -> None:
    """An HTTP 500 from the client's endpoint becomes `api_error` after one request."""

    def body(sdk: Any) -> Any:
        return healjson.heal(Invoice, client=sdk, model="m")(build_prompt)("INV-1")

    with ScriptedServer([ScriptedReply.error(500), GOOD]) as server:
        outcome = with_client(mode, server, body)

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == outcome.calls
    assert 1 == len(server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_client_style_keeps_name_doc_and_signature(mode: Mode) -> None:
    """`functools.wraps` keeps `__name__`, `__doc__` and the signature of the builder."""
    builder = build_prompt if mode == "sync" else build_prompt_async

    def body(sdk: Any) -> Any:
        return healjson.heal(Invoice, client=sdk, model="m")(builder)

    with ScriptedServer() as server:
        decorated = with_client(mode, server, body)

    assert builder.__name__ == decorated.__name__
    assert builder.__doc__ == decorated.__doc__
    assert builder.__qualname__ == decorated.__qualname__
    assert inspect.signature(builder) == inspect.signature(decorated)
    assert (mode == "async") is inspect.iscoroutinefunction(decorated)
    assert 0 == len(server.requests)


def test_async_prompt_builder_with_a_sync_client_raises_at_decoration() -> None:
    """An `async def` builder cannot be driven by a sync client: TypeError when decorating."""
    with ScriptedServer() as server, sync_sdk(server) as sdk:
        decorate = healjson.heal(Invoice, client=sdk, model="m")
        with pytest.raises(TypeError, match="async"):
            decorate(build_prompt_async)
        assert 0 == len(server.requests)


# ---------------------------------------------------------------------------------------------
# Style (b) with `call=`
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_prompt_builder_with_a_plain_call_function(mode: Mode) -> None:
    """`call=` receives the builder's messages plus the extra params, and is healed."""
    model = ScriptedModel([INVALID, GOOD])
    call: Callable[..., Any] = model if mode == "sync" else model.acall

    extract = healjson.heal(Invoice, call=call, model="m")(build_prompt)
    outcome = finish(mode, extract("INV-1"))

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert 2 == outcome.calls
    assert 2 == len(model.calls)
    assert "Extract invoice INV-1 (amounts in EUR)." == model.calls[0].last_user_text
    assert {"model": "m"} == dict(model.calls[0].params)
    assert "build_prompt" == extract.__name__
    assert inspect.signature(build_prompt) == inspect.signature(extract)


def test_async_prompt_builder_with_a_plain_sync_call() -> None:
    """An async builder with a sync `call=` gives an async decorated function."""
    model = ScriptedModel([GOOD])

    extract = healjson.heal(Invoice, call=model)(build_prompt_async)

    assert inspect.iscoroutinefunction(extract)
    outcome = asyncio.run(extract("INV-2"))
    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert "Extract invoice INV-2 (amounts in EUR)." == model.calls[0].last_user_text


# ---------------------------------------------------------------------------------------------
# Configuration mistakes raise at decoration time
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_client_and_call_together_raise_at_decoration(mode: Mode) -> None:
    """`client=` and `call=` are mutually exclusive: TypeError before any function is given."""
    model = ScriptedModel([])

    def body(sdk: Any) -> Any:
        with pytest.raises(TypeError, match="client= or call="):
            healjson.heal(Invoice, client=sdk, call=model)

    with ScriptedServer() as server:
        with_client(mode, server, body)

    assert 0 == len(server.requests)
    assert 0 == len(model.calls)


STYLES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "model_call": lambda sdk: {},
    "client": lambda sdk: {"client": sdk},
    "call": lambda sdk: {"call": ScriptedModel([])},
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("style", STYLES.values(), ids=STYLES.keys())
def test_invalid_example_raises_at_decoration(
    mode: Mode, style: Callable[[Any], dict[str, Any]]
) -> None:
    """A golden example that does not validate is a configuration error, raised at once."""

    def body(sdk: Any) -> Any:
        with pytest.raises(ValueError, match=r"examples\[0\]"):
            healjson.heal(Invoice, examples=[{"number": "INV-1", "total": "lots"}], **style(sdk))

    with ScriptedServer() as server:
        with_client(mode, server, body)

    assert 0 == len(server.requests)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("style", STYLES.values(), ids=STYLES.keys())
def test_contract_on_an_unknown_field_raises_at_decoration(
    mode: Mode, style: Callable[[Any], dict[str, Any]]
) -> None:
    """A contract naming a field the model lacks is a configuration error, raised at once."""

    @contract(fields=("amount",))
    def positive(value: Invoice) -> None:
        return None

    def body(sdk: Any) -> Any:
        with pytest.raises(ValueError, match="amount"):
            healjson.heal(Invoice, contracts=[positive], **style(sdk))

    with ScriptedServer() as server:
        with_client(mode, server, body)

    assert 0 == len(server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_one_decorator_serves_several_functions(mode: Mode) -> None:
    """A `heal(...)` decorator applied twice gives two independent healed functions."""
    first, second = ScriptedModel([GOOD]), ScriptedModel([INVALID, GOOD])
    decorate = healjson.heal(Invoice)
    pick: Callable[[ScriptedModel], Callable[..., Any]] = (
        (lambda m: m) if mode == "sync" else (lambda m: m.acall)
    )

    one = finish(mode, decorate(pick(first))("a"))
    two = finish(mode, decorate(pick(second))("b"))

    assert isinstance(one, Healed)
    assert isinstance(two, Healed)
    assert (1, 2) == (one.calls, two.calls)
    assert (1, 2) == (len(first.calls), len(second.calls))
