"""What the LangChain integration tests share: LangChain's OpenAI chat model talking to a scripted
server over the caller's HTTP client."""

from __future__ import annotations

import httpx
from langchain_openai import ChatOpenAI

from healjson.testing import ScriptedServer

__all__ = ["scripted_model"]


def scripted_model(server: ScriptedServer, http: httpx.Client | httpx.AsyncClient) -> ChatOpenAI:
    """`ChatOpenAI` on `server` (model `scripted-model`, no retries) over `http`: a sync client
    for `invoke`, an async one for `ainvoke`."""
    client = {"http_async_client" if isinstance(http, httpx.AsyncClient) else "http_client": http}
    return ChatOpenAI(
        model="scripted-model", base_url=server.base_url, api_key="sk-test", max_retries=0, **client
    )
