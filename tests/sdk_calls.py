"""The real SDKs on the scripted server: one healed `chat.completions.create` through openai, a
google-genai client closed on both its sides, and the one TLS context every client shares."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Iterator
from typing import Any, Literal

import anthropic
import httpx2
import openai

import healjson
from healjson.testing import ScriptedServer

# building a client's default TLS context loads the CA bundle (~50 ms); the tests speak plain
# HTTP to 127.0.0.1, so every test module's clients share this one
TLS = ssl.create_default_context()

DROPPED = (httpx2.RemoteProtocolError, openai.APIConnectionError, anthropic.APIConnectionError)
"""What iterating a stream raises when the server drops the connection mid-body: httpx2's
`RemoteProtocolError`, which openai 3.60 (not 3.0) and anthropic 2.17 (not 2.16) wrap in their
`APIConnectionError`, raised from it."""


def dropped_cause(exc: BaseException) -> httpx2.RemoteProtocolError:
    """The `RemoteProtocolError` of a dropped connection: `exc` itself, or the error the
    SDK's `APIConnectionError` was raised from."""
    wrapped = isinstance(exc, openai.APIConnectionError | anthropic.APIConnectionError)
    cause = exc.__cause__ if wrapped else exc
    assert isinstance(cause, httpx2.RemoteProtocolError), repr(exc)
    return cause


def wrapped_create(server: ScriptedServer, mode: Literal["sync", "async"], **kwargs: Any) -> Any:
    """`healjson.wrap(OpenAI())` (or `AsyncOpenAI()`, awaited) on `server`, without SDK retries,
    making one `chat.completions.create(**kwargs)`."""
    if mode == "sync":
        http = openai.DefaultHttpxClient(verify=TLS)
        with openai.OpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            return healjson.wrap(sdk).chat.completions.create(**kwargs)

    async def main() -> Any:
        http = openai.DefaultAsyncHttpxClient(verify=TLS)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            return await healjson.wrap(sdk).chat.completions.create(**kwargs)

    return asyncio.run(main())


@contextlib.contextmanager
def gemini_client(**options: Any) -> Iterator[Any]:
    """A `google.genai.Client(**options)`, both its sides closed on exit: `close()` closes its
    sync HTTP client, and the async one it makes at once (used or not) needs
    `await client.aio.aclose()` (run here on a loop of its own: call it outside one)."""
    from google import genai

    client = genai.Client(**options)
    try:
        yield client
    finally:
        close_gemini(client)


def close_gemini(client: Any) -> None:
    """Close a google-genai client's sync side and the async HTTP client it made with it (call
    it outside a running event loop; inside one, `await client.aio.aclose()` and `close()`)."""
    client.close()
    asyncio.run(client.aio.aclose())
