"""What the SDK drop-in tests share (the SDKs' own structured calls on a wrapped client:
`parse`, `stream(output_format=...)`, `response_schema`, their beta twins): the invoice they ask
for, its contract, the models and strategies of their equal-to-the-bare-SDK properties, and an
OpenAI client's call in either mode."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

import openai
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Violation, contract
from healjson.testing import ScriptedServer
from sdk_calls import TLS

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")
GOOD = '{"number": "INV-1", "total": 3}'


class Invoice(BaseModel):
    number: str
    total: int


EXPECTED = Invoice(number="INV-1", total=3)

INVOICES = st.builds(
    Invoice, number=st.text(max_size=12), total=st.integers(min_value=-(2**40), max_value=2**40)
)


@contract
def total_positive(invoice: Invoice) -> Violation | None:
    """The total is above zero."""
    if invoice.total <= 0:
        return Violation("the total must be above zero: give the invoice's real total")
    return None


class Line(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    order_id: str
    paid: bool
    lines: list[Line]
    note: str | None


ORDERS = st.builds(
    Order,
    order_id=st.text(max_size=12),
    paid=st.booleans(),
    lines=st.lists(st.builds(Line, sku=st.text(max_size=6), qty=st.integers()), max_size=3),
    note=st.none() | st.text(max_size=20),
)


def run_openai(
    server: ScriptedServer, mode: Mode, call: Callable[[Any], Any], wrap: bool = True
) -> Any:
    """`call(client)` on an OpenAI client (wrapped unless `wrap=False`) for `server`, sync or
    async (an awaitable result awaited), the client closed after."""
    if mode == "sync":
        http = openai.DefaultHttpxClient(verify=TLS)
        with openai.OpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            return call(healjson.wrap(sdk) if wrap else sdk)

    async def main() -> Any:
        http = openai.DefaultAsyncHttpxClient(verify=TLS)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            return await call(healjson.wrap(sdk) if wrap else sdk)

    return asyncio.run(main())


def run_anthropic(
    server: ScriptedServer, mode: Mode, call: Callable[[Any], Any], wrap: bool = True
) -> Any:
    """`call(client)` on an Anthropic client (wrapped unless `wrap=False`) for `server`, sync
    or async (an awaitable result awaited), the client closed after."""
    import anthropic

    options = {"base_url": server.anthropic_base_url, "api_key": "test", "max_retries": 0}
    if mode == "sync":
        with anthropic.Anthropic(**options) as sdk:
            return call(healjson.wrap(sdk) if wrap else sdk)

    async def main() -> Any:
        async with anthropic.AsyncAnthropic(**options) as sdk:
            return await call(healjson.wrap(sdk) if wrap else sdk)

    return asyncio.run(main())


def gemini_call(server: ScriptedServer, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A user's google-genai structured call for `server`: its request (`response_schema`
    `Invoice`, `kwargs` on top) and the client's `HttpOptions` keywords."""
    request = {
        "model": "gemini-test",
        "contents": "Extract the invoice.",
        "config": {"response_mime_type": "application/json", "response_schema": Invoice},
        **kwargs,
    }
    options: dict[str, Any] = {
        "base_url": server.gemini_base_url,
        "timeout": 10_000,
        "client_args": {"verify": TLS},
        "async_client_args": {"ssl": TLS},
    }
    return request, options
