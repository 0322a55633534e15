"""`with healjson.wrap(client) as c:` / `async with ...`: a wrapped client is a context manager
exactly where the SDK's client is one, binds the healing client (not the bare one), and exits as
the bare client exits (closing it); where the bare client lacks a protocol, the wrapped one
raises what Python raises for the bare one. The real SDKs, over HTTP to the scripted server."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from types import SimpleNamespace, TracebackType
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson._providers import PROVIDERS, resolve
from healjson._typing import generate
from healjson.adapters._openai import HealingClient
from healjson.testing import ScriptedServer
from sdk_calls import TLS, close_gemini

MESSAGES = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
PROSE = 'Sure! Here it is: {"name": "Ann", "age": 31}'  # heals only through healjson
NOWHERE = "http://127.0.0.1:9/v1"  # never reached: these clients make no request
DUNDERS = ("__enter__", "__exit__", "__aenter__", "__aexit__")
no_ollama = pytest.mark.skipif(find_spec("ollama") is None, reason="ollama is not installed")


class Person(BaseModel):
    name: str
    age: int


@dataclass(frozen=True)
class Kind:
    """One SDK client kind: how to build it on a server, one healing call, whether it is closed."""

    make: Callable[[ScriptedServer], Any]
    heal: Callable[[Any], Any]
    closed: Callable[[Any], bool]
    cleanup: Callable[[Any], None] = lambda client: None


def _openai(url: str, cls: Any = openai.OpenAI, http: Any = openai.DefaultHttpxClient) -> Any:
    return cls(base_url=url, api_key="test", max_retries=0, http_client=http(verify=TLS))


def _anthropic(url: str, cls: Any = anthropic.Anthropic, http: Any = None) -> Any:
    http = http or anthropic.DefaultHttpxClient
    return cls(base_url=url, api_key="sk-test", max_retries=0, http_client=http(verify=TLS))


def _gemini(url: str) -> Any:
    options = genai_types.HttpOptions(
        base_url=url, timeout=10_000, client_args={"verify": TLS}, async_client_args={"ssl": TLS}
    )
    return genai.Client(api_key="test-key", http_options=options)


def _ollama(url: str, name: str = "Client") -> Any:
    ollama = importlib.import_module("ollama")
    return getattr(ollama, name)(host=url, verify=TLS)


def _close_async(client: Any) -> None:
    """An async client made outside a loop and never entered: closed on a loop of its own."""
    asyncio.run(client.close())


CHAT = {"model": "m", "messages": MESSAGES, "response_model": Person}
ANTHROPIC = {**CHAT, "max_tokens": 100}
GEMINI = {"model": "gemini-test", "contents": "Ann is 31.", "response_model": Person}
OLLAMA = {**CHAT, "model": "llama3.2"}

SYNC = {
    "OpenAI": Kind(
        lambda server: _openai(server.base_url),
        lambda c: c.chat.completions.create(**CHAT),
        lambda bare: bare.is_closed(),
    ),
    "Anthropic": Kind(
        lambda server: _anthropic(server.anthropic_base_url),
        lambda c: c.messages.create(**ANTHROPIC),
        lambda bare: bare.is_closed(),
    ),
    "genai.Client": Kind(
        lambda server: _gemini(server.gemini_base_url),
        lambda c: c.models.generate_content(**GEMINI),
        lambda bare: bare._api_client._httpx_client.is_closed,
        lambda bare: asyncio.run(bare.aio.aclose()),  # its async side: `with` leaves it open
    ),
    "ollama.Client": Kind(
        lambda server: _ollama(server.ollama_host),
        lambda c: c.chat(**OLLAMA),
        lambda bare: bare._client.is_closed,
    ),
}
ASYNC = {
    "AsyncOpenAI": Kind(
        lambda server: _openai(server.base_url, openai.AsyncOpenAI, openai.DefaultAsyncHttpxClient),
        lambda c: c.chat.completions.create(**CHAT),
        lambda bare: bare.is_closed(),
    ),
    "AsyncAnthropic": Kind(
        lambda server: _anthropic(
            server.anthropic_base_url, anthropic.AsyncAnthropic, anthropic.DefaultAsyncHttpxClient
        ),
        lambda c: c.messages.create(**ANTHROPIC),
        lambda bare: bare.is_closed(),
    ),
    "ollama.AsyncClient": Kind(
        lambda server: _ollama(server.ollama_host, "AsyncClient"),
        lambda c: c.chat(**OLLAMA),
        lambda bare: bare._client.is_closed,
    ),
}


def test_async_with_on_the_wrapped_gemini_aio_binds_it_and_closes_the_sdk_aio(
    scripted_server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`async with wrap(genai.Client()).aio as aio:` binds the healing `aio`, which heals inside
    the block, and exits as a bare `async with client.aio` does (its `aclose`)."""
    from google.genai.client import AsyncClient

    closed: list[Any] = []

    async def aclose(self: Any) -> None:
        closed.append(self)

    monkeypatch.setattr(AsyncClient, "aclose", aclose)

    async def main() -> tuple[Any, Any]:
        async with aiohttp.ClientSession() as session:
            options = genai_types.HttpOptions(
                base_url=scripted_server.gemini_base_url, aiohttp_client=session
            )
            bare = genai.Client(api_key="test-key", http_options=options)
            wrapped = healjson.wrap(bare)
            async with wrapped.aio as aio:
                assert aio is wrapped.aio
                assert not closed
                outcome = await aio.models.generate_content(**GEMINI)
            bare.close()
            return outcome, bare.aio

    scripted_server.push(PROSE)
    outcome, bare_aio = asyncio.run(main())
    assert [bare_aio] == closed
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value


def _kinds(kinds: dict[str, Kind]) -> list[Any]:
    return [
        pytest.param(kind, id=name, marks=[no_ollama] if name.startswith("ollama") else [])
        for name, kind in kinds.items()
    ]


@pytest.mark.parametrize("kind", _kinds(SYNC))
def test_with_binds_the_healing_client_and_closes_the_sdk_client(
    scripted_server: ScriptedServer, kind: Kind
) -> None:
    """`with wrap(client) as c:` binds the wrapped client itself, which heals inside the block,
    and closes the SDK client on exit as a bare `with` closes it."""
    twin = kind.make(scripted_server)
    with twin as entered:
        assert entered is twin
    bare = kind.make(scripted_server)
    wrapped = healjson.wrap(bare)
    scripted_server.push(PROSE)
    try:
        with wrapped as client:
            assert client is wrapped
            assert not kind.closed(bare)
            outcome = kind.heal(client)
        assert (True, True) == (kind.closed(twin), kind.closed(bare))
    finally:
        kind.cleanup(twin)
        kind.cleanup(bare)
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value


@pytest.mark.parametrize("kind", _kinds(ASYNC))
def test_async_with_binds_the_healing_client_and_closes_the_sdk_client(
    scripted_server: ScriptedServer, kind: Kind
) -> None:
    """`async with wrap(client) as c:` binds the wrapped client itself, which heals inside the
    block, and closes the SDK client on exit as a bare `async with` closes it."""

    async def main() -> tuple[Any, bool, bool]:
        twin = kind.make(scripted_server)
        async with twin as entered:
            assert entered is twin
        bare = kind.make(scripted_server)
        wrapped = healjson.wrap(bare)
        async with wrapped as client:
            assert client is wrapped
            assert not kind.closed(bare)
            outcome = await kind.heal(client)
        return outcome, kind.closed(twin), kind.closed(bare)

    scripted_server.push(PROSE)
    outcome, twin_closed, closed = asyncio.run(main())
    assert (True, True) == (twin_closed, closed)
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value


def _with(client: Any) -> None:
    with client:
        pass


def _async_with(client: Any) -> None:
    async def main() -> None:
        async with client:
            pass

    asyncio.run(main())


def _raised(statement: Callable[[Any], None], client: Any) -> str:
    with pytest.raises(TypeError) as info:
        statement(client)
    return str(info.value)


LACKING = [
    pytest.param(
        lambda: openai.AsyncOpenAI(base_url=NOWHERE, api_key="k"), _with, _close_async,
        id="AsyncOpenAI-with",
    ),
    pytest.param(
        lambda: anthropic.AsyncAnthropic(base_url=NOWHERE, api_key="k"), _with, _close_async,
        id="AsyncAnthropic-with",
    ),
    pytest.param(
        lambda: openai.OpenAI(base_url=NOWHERE, api_key="k"), _async_with,
        lambda client: client.close(), id="OpenAI-async-with",
    ),
    pytest.param(
        lambda: anthropic.Anthropic(base_url=NOWHERE, api_key="k"), _async_with,
        lambda client: client.close(), id="Anthropic-async-with",
    ),
    pytest.param(
        lambda: genai.Client(api_key="k"), _async_with, close_gemini, id="genai.Client-async-with"
    ),
]  # fmt: skip


@pytest.mark.parametrize(("make", "statement", "close"), LACKING)
def test_a_protocol_the_sdk_client_lacks_raises_what_the_bare_client_raises(
    make: Callable[[], Any], statement: Callable[[Any], None], close: Callable[[Any], None]
) -> None:
    """Where the SDK client is no (async) context manager, the wrapped one raises the same
    TypeError with the same message, and `hasattr` probes see what they see on the bare one."""
    bare, other = make(), make()
    wrapped = healjson.wrap(other)
    try:
        assert _raised(statement, bare) == _raised(statement, wrapped)
        assert [hasattr(bare, name) for name in DUNDERS] == [
            hasattr(wrapped, name) for name in DUNDERS
        ]
        assert [getattr(wrapped, name, None) is None for name in DUNDERS].count(True) == 2
    finally:
        close(bare)
        close(other)


def test_exit_stacks_enter_the_wrapped_client_and_close_the_sdk_client() -> None:
    """`ExitStack.enter_context` / `AsyncExitStack.enter_async_context` (which read the
    methods on the type) bind the wrapped client and close the SDK client, as `with` does."""
    bare = openai.OpenAI(base_url=NOWHERE, api_key="k")
    wrapped = healjson.wrap(bare)
    with contextlib.ExitStack() as stack:
        assert stack.enter_context(wrapped) is wrapped
    assert bare.is_closed()

    async def main() -> tuple[Any, Any, bool]:
        bare = openai.AsyncOpenAI(base_url=NOWHERE, api_key="k")
        wrapped = healjson.wrap(bare)
        async with contextlib.AsyncExitStack() as stack:
            entered = await stack.enter_async_context(wrapped)
        return entered, wrapped, bare.is_closed()

    entered, wrapped_async, closed = asyncio.run(main())
    assert (entered, closed) == (wrapped_async, True)


def test_calling_enter_by_hand_returns_the_wrapped_client() -> None:
    """`wrapped.__enter__()` (what a hand-written `with` does) is the healing client, not the
    bare one it wraps, and `__exit__` closes the bare one."""
    bare = openai.OpenAI(base_url=NOWHERE, api_key="k")
    wrapped = healjson.wrap(bare)
    assert wrapped.__enter__() is wrapped
    wrapped.__exit__(None, None, None)
    assert bare.is_closed()


class _Completions:
    def create(self, **kwargs: Any) -> Any:
        raise AssertionError("no call is made")


class _Resource:
    """A chat-completions client whose `with` records its exit's arguments and returns `swallow`
    (and whose `__enter__` returns `entered`, itself when None)."""

    def __init__(self, swallow: bool, entered: Any = None) -> None:
        self.chat = SimpleNamespace(completions=_Completions())
        self.swallow = swallow
        self.entered = entered
        self.exits: list[tuple[Any, ...]] = []

    def __enter__(self) -> Any:
        return self if self.entered is None else self.entered

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        self.exits.append((kind, exc, tb))
        return self.swallow


class _AsyncResource(_Resource):
    async def __aenter__(self) -> Any:
        return self.__enter__()

    async def __aexit__(self, *exc: Any) -> bool:
        return self.__exit__(*exc)


@pytest.mark.parametrize("swallow", [True, False])
def test_exit_gets_the_blocks_exception_and_its_answer_is_the_sdk_clients(swallow: bool) -> None:
    """The wrapped client's exit is the SDK client's, given the block's exception as Python
    gives it, and its answer decides whether the exception is swallowed, sync and async."""
    boom = ValueError("in the block")
    sync = _Resource(swallow)
    with contextlib.suppress(ValueError), HealingClient(sync):
        raise boom

    asynchronous = _AsyncResource(swallow)

    async def main() -> None:
        with contextlib.suppress(ValueError):
            async with HealingClient(asynchronous):
                raise boom

    asyncio.run(main())
    for resource in (sync, asynchronous):
        [(kind, exc, tb)] = resource.exits
        assert (kind, exc, type(tb)) == (ValueError, boom, TracebackType)
    swallowed: list[bool] = []
    with contextlib.suppress(ValueError):
        with HealingClient(_Resource(swallow)):
            raise boom
        swallowed.append(True)  # reached only when the SDK client's exit swallowed it
    assert swallowed == ([True] if swallow else [])


def test_with_binds_what_the_sdk_clients_enter_returns_when_it_is_not_the_client() -> None:
    """An `__enter__` that returns another object (a session, say) binds that object, as the
    bare `with` does; only the client itself is replaced by its healing wrapper."""
    session = object()
    with HealingClient(_Resource(swallow=False, entered=session)) as entered:
        assert entered is session


def _sdk_class(path: str) -> Any:
    module, _, name = path.rpartition(".")
    if find_spec(module.partition(".")[0]) is None:
        return None
    return getattr(importlib.import_module(module), name)


def test_the_typed_face_is_a_context_manager_where_the_sdk_client_is_one() -> None:
    """Each provider's typing row names its SDK client types' context-manager protocols as the
    installed SDK has them, and each client protocol of the face declares exactly those."""
    text = generate.face()
    for provider in PROVIDERS:
        if provider.typing is None:
            continue
        row = resolve(provider.typing)
        for side, prefix in (("sync", "Healing"), ("async_", "AsyncHealing")):
            path = row.get(side)
            if path is None:
                continue
            block = text.split(f"class {prefix}{row['name']}(Protocol):")[1].split("\nclass ")[0]
            named = row.get("contexts", {}).get(side, ())
            assert ("def __enter__(self) -> Self" in block) == ("with" in named), path
            assert ("def __aenter__(self) -> Self" in block) == ("async with" in named), path
            cls = _sdk_class(path)
            if cls is not None:  # the lane has this SDK
                has = [kw for kw, d in (("with", "__enter__"), ("async with", "__aenter__"))
                       if hasattr(cls, d)]  # fmt: skip
                assert tuple(has) == named, path
