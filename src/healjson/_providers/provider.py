"""What a provider is to healjson: one `Provider` value, exported by its module.

A provider module (`openai_chat`, `anthropic_messages`, ...) describes everything its provider
means: its wire formats (the core reads replies and chunks through them), its client adapter
(what `healjson.wrap` returns for its SDK's client), its tool dialect (how `heal_tools=True`
reads the caller's tools and a streamed answer's calls), its Batch API (lines and client), its
JSON-mode tiers, and its typing row (what the generated typed face of `wrap` says of it).

The heavy parts are named as `"module:attribute"` (`resolve` imports them when first needed),
so importing a provider module imports no adapter, no SDK and no command line. What must be
known before the module itself is imported (the SDK's module prefix, the keys of its dicts,
its error packages) is its line in the registry (`healjson._providers.PROVIDERS`).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .tiers import MODES, JsonMode

if TYPE_CHECKING:
    from typing import Literal, TypedDict

    from healjson._core.wire.formats import WireFormat
    from healjson._core.wire.reply import Reply

    from ._batch_results import Result

    # the typed face's table: rows are plain dicts (declared for type checkers only, as a
    # TypedDict's class costs `import healjson` its annotations' compilation)

    MethodKind = Literal["call", "stream", "parse", "sdk_parse", "with_completion", "iterable"]

    class Method(TypedDict, total=False):
        """One healed method of a client, as the typed face of `wrap` declares it (only `path`
        is required).

        `kind`: `call` (the default) returns `Outcome[T]` (a healed stream with `stream=True`
        when `stream_kw`, the default); `stream` always a healed stream; `parse` takes its
        target as a type under its own keyword and passes everything else through;
        `with_completion` returns `(Outcome[T], completion)`; `iterable` an item stream;
        `sdk_parse` is the SDK's own structured call, its own result types (`parsed`: for the
        sync and the async client, over `T`; no `fallback=`).
        `target`: the keyword naming the target (default `response_model`); `needs`: keywords
        (and their types) a healed call must give; `schema`: a JSON Schema dict is a target too
        (default True); `tools`: `heal_tools=True` heals the caller's tool calls; `options`:
        more healjson keywords (and their types); `returns` / `stream_returns`: the SDK's own
        result types without a target (with `stream=True`), for the sync and the async client,
        each wrapped in a coroutine for the async client when `awaits` (the default);
        `positional`: the passthrough takes positional arguments too; `sdk_target`: on a
        `stream`, the keyword under which the SDK's own structured stream takes its type, that
        call returning `parsed` (an `sdk_parse` overload beside the healed streams)."""

        path: str
        kind: MethodKind
        target: str
        needs: tuple[tuple[str, str], ...]
        schema: bool
        tools: bool
        stream_kw: bool
        options: tuple[tuple[str, str], ...]
        returns: tuple[str, str]
        stream_returns: tuple[str, str]
        awaits: bool
        positional: bool
        parsed: tuple[str, str]
        sdk_target: str

    class TypingRow(TypedDict, total=False):
        """A client family in the typed face: the protocols `wrap(client)` returns (only `name`
        and `methods` are required).

        `name` makes the protocols' names (`Healing<name>`, `AsyncHealing<name>`); `sync` and
        `async_` are the SDK's client types (`module.Class`); `aio` the attribute holding a
        sync client's async side when the SDK has no async client class; `imports` the modules
        the types name;
        `completion` the SDK's response type (an instructor client over it returns one with
        its outcome); `summary` this client's paragraph of `wrap`'s docstring; `contexts` the
        context-manager protocols (`"with"`, `"async with"`) of the SDK's `sync`, `async_` and
        `aio` sides (the wrapped client is the same ones: none where a side is not named)."""

        name: str
        methods: tuple[Method, ...]
        sync: str
        async_: str
        aio: str
        imports: tuple[str, ...]
        completion: str
        summary: str
        contexts: Mapping[str, tuple[str, ...]]


__all__ = [
    "BatchApi",
    "BatchLines",
    "Collector",
    "Provider",
    "ToolDialect",
    "resolve",
]


@functools.cache
def resolve(reference: str) -> Any:
    """The object a `"package.module:attribute"` reference names (imported once)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


class BatchLines(NamedTuple):
    """A provider's batch lines: a request's body (JSON asked for in a tier, which a provider
    without tiers may ignore), the input line that carries it, and a result line (a JSON
    object) read as the request's `Result` (None: no result, the request runs again)."""

    body: Callable[[Any, Any, Sequence[dict[str, Any]], Mapping[str, Any]], dict[str, Any]]
    line: Callable[[str, Mapping[str, Any]], dict[str, Any]]
    result: Callable[[Mapping[str, Any]], Result | None]


class BatchApi(NamedTuple):
    """A provider's Batch API, as `healjson batch --batch-api` and `run_batch_api` reach it."""

    client: str
    """`module:attribute` of the runner's interface over an SDK client (`_batch.api`'s
    `BatchApi` protocol), called with `(client, lines)`."""
    endpoints: Mapping[str, str]
    """The endpoints a batch's lines may name (`--endpoint`), each the registry name of the
    provider whose batch lines it takes; the first is the default."""
    sdk: str
    """`module:attribute` of the SDK's client class the command line builds."""
    extra: str
    """The extra that installs the SDK (named when it is missing)."""
    api_key_env: str
    """The environment variable holding the API key."""
    base_url_env: str | None = None
    """The environment variable holding the base URL, if the SDK has one."""
    max_tokens: int | None = None
    """A completion limit the provider requires: sent when the run gives none."""


class Collector(Protocol):
    """A streamed answer read whole, call by call (what a healed tool-call stream judges)."""

    def feed(self, chunk: Any) -> str:
        """Take one chunk; the answer text it carries ("" for none)."""
        ...

    def reply(self) -> Reply:
        """The whole answer read so far."""
        ...


class ToolDialect(NamedTuple):
    """How one provider writes function tools (what `create(..., heal_tools=True)` reads).

    `read(tool)` is a function tool's name, its arguments' schema (a pydantic model class, a
    JSON Schema object, or None for any object) and the tool as sent; None for a tool that is
    not the caller's function (a provider's built-in one). `wire(model)` is a pydantic model
    class as this dialect's tool. `forced(tool_choice)` says what a `tool_choice` forces:
    nothing (False), some call (True), the named tool, or no call at all (None: a choice that
    allows none, as `"none"`). `collector` reads a streamed answer
    call by call. `custom(tool)`, for a dialect with custom tools (their calls' input free
    text: calls of kind `CUSTOM`), is a custom tool's name (None: not one); without it, every
    tool `read` leaves is passed on."""

    name: str
    read: Callable[[Any], tuple[str, Any, Any] | None]
    wire: Callable[[Any], dict[str, Any]]
    forced: Callable[[Any], bool | str | None]
    collector: Callable[[], Collector]
    custom: Callable[[Any], str | None] | None = None


@dataclass(frozen=True, slots=True)
class Provider:
    """One provider: everything healjson knows of it (its module exports one)."""

    name: str
    """Its name: the registry's key, `--provider NAME`, the Batch API ledger's."""
    formats: tuple[WireFormat, ...] = ()
    """Its wire formats, in dispatch order (registered when its module is imported)."""
    adapter: str | None = None
    """`module:attribute` of the adapter `wrap(client)` returns for its SDK's client, called
    with `(client, json_mode=, policy=)`."""
    streams: str | None = None
    """`module:attribute` of the adapter of healed streams over its client when an instructor
    client carries it, called with `(client, is_async=, json_mode=, policy=)`."""
    tools: str | None = None
    """`module:attribute` of its `ToolDialect`."""
    batch: BatchLines | None = None
    """Its Batch API lines."""
    batch_api: BatchApi | None = None
    """Its Batch API."""
    tiers: tuple[JsonMode, ...] = MODES
    """The JSON-mode tiers its requests may ask in, strongest first (`json_mode=`)."""
    assistant_role: str = "assistant"
    """The role its messages give the model's turns (what instructor's client for it takes)."""
    catch_all: tuple[WireFormat, ...] = ()
    """Formats dispatched after every other (a shape any provider's object may have)."""
    typing: str | None = None
    """`module:attribute` of its row of the typed face of `wrap` (a `TypingRow`: the
    generator, `healjson._typing.generate`, reads it; nothing at run time does)."""
    reads: tuple[str, ...] = ()
    """The functions of its SDK that read the provider's answer, as `module:qualname` patterns
    (`fnmatch`'s: `"ollama._client:*Client._request"`): what is raised beneath one of them is
    the provider's failure, the answer it could not read (`healjson._providers._unreadable`),
    unless it was raised building or sending the request (beneath the HTTP client's sending,
    or one of `builds`)."""
    builds: tuple[str, ...] = ()
    """The functions of its SDK that build a request, called by a function of `reads` (one
    that sends its own request before it reads), as `module:qualname` patterns: what they
    raise is the caller's (arguments refused), not the provider's."""
