"""The keywords of a healing `generate_content` / `generate_content_stream` on
`wrap(genai.Client())`: the SDK method's own (read from its signature) plus healjson's options;
anything else raises the TypeError the bare SDK raises, before any request. The real SDK over
real HTTP to the scripted server, and a client whose method takes a keyword google-genai's
does not (as a newer SDK's might)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import types as gt
from pydantic import BaseModel

import healjson
from healjson import Healed, HealPolicy
from healjson.testing import ScriptedServer
from sdk_calls import TLS, close_gemini

GOOD = '{"name": "Ann", "age": 31}'
PROMPT = "Ann is 31. Extract the person as JSON."


class Person(BaseModel):
    name: str
    age: int


def _http(server: ScriptedServer, session: aiohttp.ClientSession | None = None) -> Any:
    return gt.HttpOptions(
        base_url=server.gemini_base_url,
        timeout=10_000,
        client_args={"verify": TLS},
        async_client_args={"ssl": TLS},
        aiohttp_client=session,
    )


def raised(
    server: ScriptedServer, runner: str, streamed: bool, heal: bool, *args: Any, **kwargs: Any
) -> tuple[type[BaseException], str] | None:
    """The exception a call raises on being made (the bare SDK's method, or the wrapped one with
    `response_model=Person`), as its type and message; None when it raises none."""
    if heal:
        kwargs["response_model"] = Person
    name = "generate_content_stream" if streamed else "generate_content"

    def attempt(models: Any) -> tuple[type[BaseException], str] | None:
        try:
            answer = getattr(models, name)(*args, **kwargs)
        except Exception as exc:  # the call itself raises: what the SDK does
            return type(exc), str(exc)
        if asyncio.iscoroutine(answer):  # not awaited: nothing sent
            answer.close()
        return None

    if runner == "async":

        async def go() -> tuple[type[BaseException], str] | None:
            async with aiohttp.ClientSession() as session:
                client = genai.Client(api_key="test-key", http_options=_http(server, session))
                try:
                    return attempt((healjson.wrap(client) if heal else client).aio.models)
                finally:
                    await client.aio.aclose()
                    client.close()

        return asyncio.run(go())
    client = genai.Client(api_key="test-key", http_options=_http(server))
    try:
        return attempt((healjson.wrap(client) if heal else client).models)
    finally:
        close_gemini(client)


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[False, True], ids=["whole", "streamed"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return request.param  # type: ignore[no-any-return]


WRONG_CALLS = {
    "a typo": ((), {"model": "gemini-test", "contents": PROMPT, "temprature": 0.1}),
    "a config field": ((), {"model": "gemini-test", "contents": PROMPT, "temperature": 0.1}),
    "a system instruction": (
        (),
        {"model": "gemini-test", "contents": PROMPT, "system_instruction": "Be terse."},
    ),
    "a positional model": (("gemini-test",), {"contents": PROMPT}),
    "no model": ((), {"contents": PROMPT}),
    "no contents": ((), {"model": "gemini-test"}),
}


@pytest.mark.parametrize("wrong", list(WRONG_CALLS))
def test_a_keyword_the_sdk_refuses_raises_its_type_error(
    scripted_server: ScriptedServer, runner: str, streamed: bool, wrong: str
) -> None:
    """A call the SDK's method does not take (an unknown keyword, a config field given at the
    top level, a missing or positional argument) raises the bare SDK's own TypeError, and
    sends nothing."""
    args, kwargs = WRONG_CALLS[wrong]

    bare = raised(scripted_server, runner, streamed, False, *args, **dict(kwargs))
    healed = raised(scripted_server, runner, streamed, True, *args, **dict(kwargs))

    assert bare is not None
    assert TypeError is bare[0]
    assert bare == healed
    assert [] == scripted_server.requests


def test_healjson_options_are_taken(scripted_server: ScriptedServer, streamed: bool) -> None:
    """healjson's own options (contracts, policy, fallback, examples, context) are taken
    beside the SDK's keywords, none of them sent."""
    scripted_server.push(GOOD)
    client = genai.Client(api_key="test-key", http_options=_http(scripted_server))
    options: dict[str, Any] = {
        "contracts": (),
        "policy": HealPolicy(max_attempts=2),
        "fallback": None,
        "examples": (),
        "context": {"source": "test"},
    }
    try:
        models = healjson.wrap(client).models
        keywords = {"model": "gemini-test", "contents": PROMPT, "response_model": Person}
        if streamed:
            with models.generate_content_stream(**keywords, **options) as stream:
                for _ in stream:
                    pass
            outcome = stream.outcome
        else:
            outcome = models.generate_content(**keywords, **options)
    finally:
        close_gemini(client)

    assert isinstance(outcome, Healed)
    body = scripted_server.requests[0].body or {}
    assert not {"context", "policy", "contracts"} & set(body.get("generationConfig") or {})


def test_the_sdk_methods_own_keywords_are_read_from_its_signature(
    scripted_server: ScriptedServer,
) -> None:
    """A keyword the client's method takes (one a newer SDK's might) is handed to it as its
    own keyword, not moved into the config; one it does not take raises the method's
    TypeError."""
    scripted_server.push(GOOD)
    client = genai.Client(api_key="test-key", http_options=_http(scripted_server))
    original = client.models.generate_content
    seen: list[dict[str, Any]] = []

    def generate_content(
        *, model: str, contents: Any, config: Any = None, labels: Any = None
    ) -> Any:
        seen.append({"config": config, "labels": labels})
        return original(model=model, contents=contents, config=config)

    try:
        client.models.generate_content = generate_content  # type: ignore[method-assign]
        models = healjson.wrap(client).models
        outcome = models.generate_content(
            model="gemini-test", contents=PROMPT, labels={"team": "a"}, response_model=Person
        )
        with pytest.raises(TypeError, match=r"generate_content\(\) got an unexpected keyword"):
            models.generate_content(
                model="gemini-test", contents=PROMPT, lables={}, response_model=Person
            )
    finally:
        close_gemini(client)

    assert isinstance(outcome, Healed)
    assert [{"team": "a"}] == [call["labels"] for call in seen]
    assert "labels" not in (seen[0]["config"] or {})
    assert 1 == len(scripted_server.requests)
