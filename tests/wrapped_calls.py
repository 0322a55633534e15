"""One healed call of each wrapped provider SDK (chat, Responses, Anthropic, Gemini, Ollama),
sync or async, streamed or whole, against a scripted server: its outcome. The provider tests
that serve raw bodies (hostile 200 bodies, chunks of the wrong type) share it."""

from __future__ import annotations

import asyncio
import inspect
import ssl
from collections.abc import Callable
from typing import Any

import aiohttp
import anthropic
import ollama
import openai
from google import genai
from google.genai import types as gt
from pydantic import BaseModel

import healjson
from healjson import HealPolicy
from healjson.testing import ScriptedServer

TLS = ssl.create_default_context()
KEY = "sk-test-key"
POLICY = HealPolicy(max_attempts=1)
"""One attempt: the verdict of the body served, no repair after it."""


class Person(BaseModel):
    name: str
    age: int


async def _drain(stream: Any) -> Any:
    async for _ in stream:
        pass
    return stream.outcome


def _openai(server: ScriptedServer, is_async: bool) -> Any:
    kind = openai.AsyncOpenAI if is_async else openai.OpenAI
    return kind(base_url=server.base_url, api_key=KEY, max_retries=0)


def _request(provider: str, streamed: bool) -> tuple[Callable[[Any], Any], dict[str, Any]]:
    """The wrapped client's healed method and its keywords."""
    said = [{"role": "user", "content": "Ann is 31"}]
    keywords: dict[str, Any] = {"response_model": Person, "policy": POLICY}
    if provider == "chat":
        keywords |= {"model": "gpt-test", "messages": said}
        method: Callable[[Any], Any] = lambda c: c.chat.completions.create  # noqa: E731
    elif provider == "responses":
        keywords |= {"model": "gpt-test", "input": "Ann is 31"}
        method = lambda c: c.responses.create  # noqa: E731
    elif provider == "anthropic":
        keywords |= {"model": "claude-test", "messages": said, "max_tokens": 256}
        method = lambda c: c.messages.create  # noqa: E731
    else:
        keywords |= {"model": "llama3.2", "messages": said}
        method = lambda c: c.chat  # noqa: E731
    if streamed:
        keywords["stream"] = True
    return method, keywords


def ask(server: ScriptedServer, provider: str, runner: str, streamed: bool) -> Any:
    """One healed call of `provider`'s wrapped client against `server`: its outcome."""
    is_async = runner == "async"
    if provider == "gemini":
        return _ask_gemini(server, is_async, streamed)
    method, keywords = _request(provider, streamed)

    def sdk() -> Any:
        if provider == "anthropic":
            kind = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
            return kind(base_url=server.anthropic_base_url, api_key=KEY, max_retries=0)
        if provider == "ollama":
            kind = ollama.AsyncClient if is_async else ollama.Client
            return kind(host=server.ollama_host, verify=TLS)
        return _openai(server, is_async)

    if not is_async:
        client = sdk()
        try:
            answer = method(healjson.wrap(client))(**keywords)
            if streamed:
                for _ in answer:
                    pass
                return answer.outcome
            return answer
        finally:
            client.close()

    async def go() -> Any:
        client = sdk()
        try:
            answer = method(healjson.wrap(client))(**keywords)
            if inspect.isawaitable(answer):
                answer = await answer
            return await _drain(answer) if streamed else answer
        finally:
            await client.close()

    return asyncio.run(go())


def _ask_gemini(server: ScriptedServer, is_async: bool, streamed: bool) -> Any:
    keywords: dict[str, Any] = {"model": "gemini-test", "contents": "Ann is 31"}
    keywords |= {"response_model": Person, "policy": POLICY}
    if not is_async:
        options = gt.HttpOptions(base_url=server.gemini_base_url, timeout=10_000)
        client = genai.Client(api_key=KEY, http_options=options)
        try:
            models = healjson.wrap(client).models
            if not streamed:
                return models.generate_content(**keywords)
            with models.generate_content_stream(**keywords) as stream:
                for _ in stream:
                    pass
            return stream.outcome
        finally:
            client.close()

    async def go() -> Any:
        async with aiohttp.ClientSession() as session:
            options = gt.HttpOptions(
                base_url=server.gemini_base_url, timeout=10_000, aiohttp_client=session
            )
            client = genai.Client(api_key=KEY, http_options=options)
            try:
                models = healjson.wrap(client).aio.models
                if not streamed:
                    return await models.generate_content(**keywords)
                async with models.generate_content_stream(**keywords) as stream:
                    return await _drain(stream)
            finally:
                await client.aio.aclose()
                client.close()

    return asyncio.run(go())
