"""The provider boundary, core side: what a wire format tells the core, and the registry.

The core knows no provider. A wire format (OpenAI chat completions, Anthropic messages, Gemini
`generateContent`, ...) is one module of `healjson._providers`, which describes itself as a
`WireFormat`; the package registers each (`registry.register`) when `healjson` is imported.
The core asks the registry, in registration order (the first format whose test matches reads
the object): to read a reply (`reply.to_reply`) or a stream chunk (`stream.chunks.read_chunk`),
to find and raise a request's token limit (the truncation strategy), where a client keeps its
credentials (redaction), which SDK methods an instrumentation wraps (telemetry) and which
packages raise provider errors (`drive.PROVIDER_PACKAGES`).

A format may also name a fast reader for its SDK's own classes: the drivers call it directly
for an object whose exact class it has read before (`reply.SDK_COMPLETIONS`,
`stream.chunks.SDK_CHUNKS`), with no lookup in between: the happy path stays one call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from healjson._core.redact import add_credential_places

if TYPE_CHECKING:
    from .delta import Delta
    from .reply import Reply

__all__ = [
    "WireFormat",
    "add",
    "error_packages",
    "formats",
    "sdk_creates",
    "token_limit",
]


def _never(obj: Any) -> bool:
    return False


@dataclass(frozen=True, slots=True, eq=False)
class WireFormat:
    """One wire format, as the core sees it. Only `name`, `reads_reply` and `read_reply` are
    required; a format without streams or requests leaves the rest at their defaults."""

    name: str
    reads_reply: Callable[[Any], bool]
    """True for a response object of this format, tested by attribute (an SDK's class)."""
    read_reply: Callable[[Any], Reply]
    """The `Reply` of a response (object or dict) this format reads."""
    reads_dict: Callable[[Mapping[str, Any]], bool] = _never
    """True for a response of this format as a dict (tested by its keys)."""
    reads_chunk: Callable[[Any], bool] = _never
    """True for a stream chunk (event) of this format, object or dict."""
    read_chunk: Callable[[Any], Delta] | None = None
    """The `Delta` of a stream chunk this format reads."""
    fast_reply: Callable[[Any], Reply] | None = None
    """A reader of the SDK's own response classes by attribute, agreeing with `read_reply` on
    each: the first format naming one reads `reply.SDK_COMPLETIONS`; the others' readers are
    remembered per class by their generic reader (`reply.remember_reader`)."""
    fast_chunk: Callable[[Any], Delta] | None = None
    """The reader of `stream.chunks.SDK_CHUNKS` (one format may name it)."""
    token_limit: Callable[[Mapping[str, Any]], tuple[str, Any] | None] | None = None
    """The request's output-token limit parameter and its value, None when it names none."""
    with_token_limit: Callable[[Mapping[str, Any], int], dict[str, Any]] | None = None
    """The request's parameters with its output-token limit set to `n`."""
    credential_attributes: tuple[str, ...] = ()
    """Client attributes (dotted: `_http_options.headers`) that hold a credential: a string, or
    a mapping of headers / query parameters whose credential-named values are secrets."""
    nested_clients: tuple[str, ...] = ()
    """Client attributes holding another client (whose credentials count too)."""
    sdk_creates: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """`(module, class names)`: where the SDK defines the `create` an instrumentation wraps."""
    error_packages: frozenset[str] = frozenset()
    """Top-level packages whose exceptions are this provider's."""


_FORMATS: Final[list[WireFormat]] = []


def add(fmt: WireFormat) -> None:
    """Add a format after those known (dispatch tries them in this order); `registry.register`
    calls this and installs the format's fast readers."""
    _FORMATS.append(fmt)
    _ERROR_PACKAGES.update(fmt.error_packages)
    _CREATES.extend(fmt.sdk_creates)
    add_credential_places(fmt.credential_attributes, fmt.nested_clients)


def formats() -> list[WireFormat]:
    """The registered formats, in dispatch order (the list itself: read, don't change it)."""
    return _FORMATS


def token_limit(params: Mapping[str, Any]) -> tuple[WireFormat | None, Any]:
    """The format whose output-token limit `params` name, and its value; without one, the
    first format that has a limit parameter (its `with_token_limit` sets one) and None."""
    first: WireFormat | None = None
    for fmt in _FORMATS:
        if fmt.token_limit is None:
            continue
        found = fmt.token_limit(params)
        if found is not None:
            return fmt, found[1]
        first = first or fmt
    return first, None


# packages whose exceptions are the transport's, or those of SDKs healjson meets without
# reading their wire (through instructor or a gateway); the formats add their own
_ERROR_PACKAGES: Final[set[str]] = {
    "aiohttp",
    "cohere",
    "groq",
    "h11",
    "h2",
    "httpcore",
    "httpx",
    "httpx2",
    "instructor",
    "litellm",
    "mistralai",
    "requests",
    "urllib3",
}
_CREATES: Final[list[tuple[str, tuple[str, ...]]]] = []


def error_packages() -> set[str]:
    """Top-level packages whose exceptions are the provider's or the transport's (the set
    itself, which registration extends: read, don't change it)."""
    return _ERROR_PACKAGES


def sdk_creates() -> list[tuple[str, tuple[str, ...]]]:
    """Where the registered SDKs define the `create` an instrumentation wraps (the list
    itself: read, don't change it)."""
    return _CREATES
