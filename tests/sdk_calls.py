"""One healed `chat.completions.create` through the real openai SDK on the scripted server."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, Literal

import openai

import healjson
from healjson.testing import ScriptedServer

# building a client's default TLS context loads the CA bundle (~50 ms); the tests speak plain
# HTTP to 127.0.0.1, so every test module's clients share this one
TLS = ssl.create_default_context()


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
