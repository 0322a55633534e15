"""The provider boundary: one module (or small package) per provider, each owning everything its
provider means (requests and their JSON tiers, replies and stream chunks, finish reasons,
refusals and filters, reasoning, usage buckets, tool dialect, batch lines, its client adapter),
and one registry of them, `PROVIDERS`, which `healjson.wrap`, the Batch API runner, the command
line and the instructor adapter read. The core knows none of them: it reads through the wire
formats they register (`healjson._core.wire.formats`). No provider SDK is imported here.

A provider module is imported when it is first needed: when its client is wrapped, or when a
reply or stream chunk of its SDK is first read (the registry line says how one is recognised:
the module prefix of its SDK's classes, the keys of its dicts). OpenAI chat completions, the
core's default reading (a `ChatCompletion` from any call, OpenAI-compatible servers), is loaded
with `healjson`: the drivers bind its fast reader when they are imported.

A new provider is one module exporting a `Provider` value and one line here.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Iterator
from typing import Any, Final, NamedTuple

from healjson._core.wire.formats import Pending, expect, pending
from healjson._core.wire.registry import register

from .provider import BatchLines, Provider, resolve

__all__ = ["PROVIDERS", "BatchLines", "Line", "Provider", "Registry", "batch_lines", "resolve"]


class Line(NamedTuple):
    """A provider's line in the registry: its module (in this package) and what must be known
    before the module is imported: the module prefixes of its SDK's client classes (`wrap`) and
    of its replies' and chunks' classes, the key sets of its replies and chunks as dicts, the
    packages whose exceptions are its own, the client attributes holding credentials (or
    another client), and where its SDK defines the `create` an instrumentation wraps."""

    module: str
    clients: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    keys: tuple[frozenset[str], ...] = ()
    errors: frozenset[str] = frozenset()
    credentials: tuple[str, ...] = ()
    nested: tuple[str, ...] = ()
    creates: tuple[tuple[str, tuple[str, ...]], ...] = ()


_RANKS_PER_LINE: Final = 10  # a provider's formats dispatch in its line's place, in its order
_CATCH_ALL: Final = 1_000_000.0  # shapes any provider's object may have: after every format


class Registry:
    """The providers, in dispatch order (a format whose test catches more comes after those it
    would shadow). The first line is the default: the provider of clients no line claims."""

    def __init__(self, *lines: Line) -> None:
        self.lines: tuple[Line, ...] = lines
        self._loading = threading.RLock()
        self._loaded: dict[str, Provider] = {}
        self._pending: dict[str, Pending] = {}
        for line in lines:
            waiting = Pending(
                functools.partial(self._load, line),
                classes=line.classes,
                keys=line.keys,
                credential_attributes=line.credentials,
                nested_clients=line.nested,
                sdk_creates=line.creates,
                error_packages=line.errors,
            )
            self._pending[line.module] = waiting
            expect(waiting)

    def _load(self, line: Line) -> Provider:
        found = self._loaded.get(line.module)
        if found is not None:
            return found
        with self._loading:
            found = self._loaded.get(line.module)
            if found is None:
                module = importlib.import_module(f"{__name__}.{line.module}")
                found = module.PROVIDER
                assert isinstance(found, Provider), f"{line.module}.PROVIDER is not a Provider"
                base = self.lines.index(line) * _RANKS_PER_LINE
                for offset, fmt in enumerate(found.formats):
                    register(fmt, base + offset)
                for offset, fmt in enumerate(found.catch_all):
                    register(fmt, _CATCH_ALL + base + offset)
                self._loaded[line.module] = found
                waiting = self._pending.pop(line.module, None)
                if waiting in pending():
                    pending().remove(waiting)
        return found

    def load(self, module: str) -> Provider:
        """The provider of `module` (its line's; imported and registered on first use)."""
        for line in self.lines:
            if line.module == module:
                return self._load(line)
        raise KeyError(f"no provider module {module!r}; known: {self.modules()}")

    @property
    def default(self) -> Provider:
        """The first line's provider: that of clients no line claims (OpenAI-compatible ones)."""
        return self._load(self.lines[0])

    def modules(self) -> list[str]:
        """The providers' modules, in dispatch order."""
        return [line.module for line in self.lines]

    def named(self, name: str) -> Provider:
        """The provider called `name` (each module is imported to read its name)."""
        for provider in self:
            if provider.name == name:
                return provider
        raise KeyError(f"no provider named {name!r}; known: {[p.name for p in self]}")

    def for_client(self, client: Any) -> Provider:
        """The provider of an SDK client, by the module its class is defined in; the default
        provider (the first line: OpenAI-compatible clients) when no line claims it."""
        module = type(client).__module__
        for line in self.lines:
            if line.clients and module.startswith(line.clients):
                return self._load(line)
        return self.default

    def claims(self, client: Any) -> bool:
        """True when a line names the SDK `client`'s class is defined in."""
        module = type(client).__module__
        return any(line.clients and module.startswith(line.clients) for line in self.lines)

    def __iter__(self) -> Iterator[Provider]:
        """Every provider, in dispatch order (each module imported)."""
        return (self._load(line) for line in self.lines)


def _keys(*sets: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    return tuple(frozenset(keys) for keys in sets)


# where an SDK's httpx client (`_client`) holds a credential: its default headers and query,
# its `auth` (a `BasicAuth`, `DigestAuth`...) and its base URL's userinfo
_HTTP_PLACES: Final = ("headers", "params", "auth", "base_url")
_HTTP_CLIENT: Final = tuple(f"_client.{place}" for place in _HTTP_PLACES)
_GENAI_HTTP: Final = ("_httpx_client", "_async_httpx_client")

# dispatch order: the first format whose test matches an object reads it
PROVIDERS: Final = Registry(
    Line(
        "openai_chat",
        clients=("openai",),
        # `api_key`, `admin_api_key`, Azure's `_azure_ad_token`, the webhook secret; the
        # caller's default headers and query parameters; the base URLs' userinfo and query;
        # the HTTP client's own headers, query, auth (`http_client=httpx.Client(auth=...)`)
        credentials=(
            "api_key",
            "admin_api_key",
            "_azure_ad_token",
            "webhook_secret",
            "_custom_headers",
            "_custom_query",
            "_base_url",
            "websocket_base_url",
            *_HTTP_CLIENT,
        ),
        creates=(
            ("openai.resources.chat.completions.completions", ("Completions", "AsyncCompletions")),
        ),
        errors=frozenset({"openai"}),
    ),
    # before Anthropic's: its events have a string `type` too
    Line(
        "openai_responses",
        classes=("openai.types.responses",),
        keys=_keys(("output",), ("type",)),
        creates=(("openai.resources.responses.responses", ("Responses", "AsyncResponses")),),
    ),
    Line(
        "anthropic_messages",
        clients=("anthropic",),
        classes=("anthropic.",),
        keys=_keys(("stop_reason", "content"), ("type",)),
        # its key and token, the webhook key, a credentials profile's headers, the caller's
        # default headers and query, the base URL's userinfo and query, the HTTP client's own
        credentials=(
            "api_key",
            "auth_token",
            "webhook_key",
            "_credential_headers",
            "_custom_headers",
            "_custom_query",
            "_base_url",
            *_HTTP_CLIENT,
        ),
        creates=(("anthropic.resources.messages.messages", ("Messages", "AsyncMessages")),),
        errors=frozenset({"anthropic"}),
    ),
    Line(
        "gemini_generate",
        clients=("google.genai",),
        classes=("google.genai.",),
        keys=_keys(
            ("candidates",),
            ("promptFeedback",),
            ("prompt_feedback",),
            ("usageMetadata",),
            ("usage_metadata",),
        ),
        # the API client's `api_key`; `_http_options.headers` carries `x-goog-api-key`; Vertex
        # credentials a token; the base URL's userinfo and query; the HTTP clients' arguments
        # (`client_args`: auth, params, headers) and the HTTP clients themselves
        credentials=(
            "api_key",
            "_http_options.headers",
            "_credentials.token",
            "custom_base_url",
            "_http_options.base_url",
            "_http_options.client_args",
            "_http_options.async_client_args",
            *(f"{client}.{place}" for client in _GENAI_HTTP for place in _HTTP_PLACES),
        ),
        nested=("_api_client",),
        errors=frozenset({"google"}),
    ),
    Line(
        "ollama_chat",
        clients=("ollama",),
        classes=("ollama.",),
        keys=_keys(("message", "done")),
        # its httpx client: headers (an `OLLAMA_API_KEY` as `authorization`), the default
        # query (`params=`), `auth=` and the base URL (the SDK drops a host's userinfo)
        credentials=_HTTP_CLIENT,
        errors=frozenset({"ollama"}),
    ),
)

# the default provider: loaded with `healjson` (the core's fast readers are its)
PROVIDERS.load("openai_chat")


def batch_lines(provider: str, endpoint: str | None = None) -> BatchLines:
    """The batch lines of `provider` (a provider's name); `endpoint`, one of its Batch API's
    endpoints (`BatchApi.endpoints`), names the provider whose lines that endpoint takes."""
    owner = PROVIDERS.named(provider)
    api = owner.batch_api
    if endpoint is not None and api is not None and endpoint in api.endpoints:
        owner = PROVIDERS.named(api.endpoints[endpoint])
    if owner.batch is None:
        raise KeyError(f"provider {owner.name!r} has no batch lines")
    return owner.batch
