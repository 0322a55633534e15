"""`healjson.wrap`: make an existing client heal, changing one line at the call site.

What a type checker sees of `wrap` and `wrap_callable` (a protocol per client, `json_mode` a
`Literal` of its provider's tiers) is the generated stub `_typing/face.pyi`; here is what runs:
the adapter a client gets is its provider's, from the registry (`healjson._providers`), and its
provider's module is imported then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ._core.run.policy import HealPolicy

if TYPE_CHECKING:
    from ._response_cache import ResponseStore

__all__ = ["wrap", "wrap_callable"]

# libraries whose clients carry a provider's client inside: their adapters, by module prefix
_CARRIERS: Final = {"instructor": "healjson.adapters._instructor:InstructorClient"}
# clients that are no model's but whose answers heal: an MCP `ClientSession` / `Client` (or
# healjson's wrapper of one), by module prefix
_SESSIONS: Final = ("mcp.", "healjson._mcp.")


def wrap(
    client: Any,
    *,
    json_mode: str = "json_schema",
    policy: HealPolicy | None = None,
    cache: ResponseStore | None = None,
) -> Any:
    """Wrap an SDK client so that its calls heal when given a target (`response_model=M`): they
    return `Outcome[M]` (awaitable for an async client; with `stream=True` a healed stream of
    `Partial[M]` snapshots whose `.outcome` is the run's) and never raise for what the provider
    or the model does; without a target every call is the SDK's own, returning the SDK's own
    types (an OpenAI client's `chat.completions.parse` / `.stream(response_format=M)` and
    `responses.parse` / `.stream(text_format=M)` too, their parsed value healed in place and
    `healjson.outcome_of(result)` the outcome: see `adapters._parsed`). The clients
    healjson knows are its providers' (`healjson._providers.PROVIDERS`: each provider's page in
    the docs says which calls heal) and instructor's; any other client is taken for an
    OpenAI-compatible one (`chat.completions.create`).

    `json_mode` is the strongest JSON-mode tier the endpoint supports, in the names of
    `healjson._providers.tiers` (`json_schema`, the default, ... `prompt`; a provider with its
    own schema form has `json_schema`, `json_object` and `prompt`). A tier the endpoint refuses
    with HTTP 400 is stepped down once and remembered; one it accepts but does not enforce (its
    first answer breaks the schema it was sent) is flagged `schema_not_enforced` on that attempt,
    and the client logs `healjson.schema_not_enforced` once. Wrapping a wrapped client wraps
    the client beneath it (one healing layer, the new settings). `cache=` (a
    `healjson.ResponseCache`): healed answers are kept, and a request answered before is served
    with no model call once its answer passes today's checks again.

    An MCP `ClientSession` (or the SDK's `Client`) is wrapped too: its `call_tool` results are
    healed against each tool's `outputSchema` (see `healjson.mcp`).
    """
    from .adapters._base import unwrapped

    client = unwrapped(client)  # the adapter is chosen by the client beneath any healjson layer
    return _with_cache(_adapter(client, json_mode, policy), cache)


def _adapter(client: Any, json_mode: str, policy: HealPolicy | None) -> Any:
    """The adapter for `client` (the client beneath any healjson layer): a carrier's, an MCP
    session's, or its provider's from the registry."""
    from ._providers import PROVIDERS, resolve

    module = type(client).__module__
    for prefix, adapter in _CARRIERS.items():
        if module.startswith(prefix):
            return resolve(adapter)(client, json_mode=json_mode, policy=policy)
    if module.startswith(_SESSIONS) or type(client).__name__ == "HealingSession":
        from .adapters._mcp import wrap_session

        return wrap_session(client, policy=policy)
    provider = PROVIDERS.for_client(client)  # by its SDK (the default: OpenAI-compatible)
    if provider.adapter is None:
        raise TypeError(
            f"healjson cannot wrap a {type(client).__name__}: {provider.name} has no client"
        )
    return resolve(provider.adapter)(client, json_mode=json_mode, policy=policy)


def wrap_callable(
    fn: Callable[..., Any],
    *,
    async_: bool | None = None,
    json_mode: str = "json_schema",
    policy: HealPolicy | None = None,
    cache: ResponseStore | None = None,
) -> Any:
    """Wrap a chat-completion function: one that takes OpenAI-style keyword arguments
    (`model=`, `messages=`, ...) and returns an OpenAI-shaped completion, object or dict (a
    stream of chunks with `stream=True`) — LiteLLM's `completion` / `acompletion`, a gateway
    client's method, your own.

    `healed = wrap_callable(fn)`; `healed(..., response_model=M)` (or `healed.create(...)`)
    returns `Outcome[M]` — awaitable when `fn` is a coroutine function (or `async_=True`, for
    one whose decorator hides it) — and never raises for what the provider or the model does;
    with `stream=True` a `HealStream[M]` / `AsyncHealStream[M]`. Without `response_model` it
    is `fn(...)`, unchanged. `json_mode` and `policy` as for `wrap`: the function stands where
    a client's `chat.completions.create` stands; so does `cache=`.
    """
    from .adapters._callable import HealingCallable

    return _with_cache(
        HealingCallable(fn, async_=async_, json_mode=json_mode, policy=policy), cache
    )


def _with_cache(adapter: Any, cache: ResponseStore | None) -> Any:
    """`adapter` with its response cache set (when one is given)."""
    if cache is not None:
        adapter.cache = cache
    return adapter
