"""The provider boundary, core side: what a wire format tells the core, and the registry.

The core knows no provider. A wire format (a provider's replies, stream chunks and requests) is
described by a module of `healjson._providers` as a `WireFormat`, which registers it
(`registry.register`). The core asks the registry, in dispatch order (the first format whose
test matches reads the object): to read a reply (`reply.to_reply`) or a stream chunk
(`delta.read_chunk`), to find and raise a request's token limit (the truncation strategy),
where a client keeps its credentials (redaction), which SDK methods an instrumentation wraps
(telemetry) and which packages raise provider errors (`drive.PROVIDER_PACKAGES`).

A provider module need not be imported before its first object is met: `expect(Pending(...))`
registers it by what the core must know beforehand (its error packages, SDK methods and
credential places) and how its objects are recognised cheaply (the module prefix of its SDK's
classes, the keys of its dicts); the first reply or chunk that looks like one of its objects
imports it (`load_for`), which registers its formats in their place in the dispatch order.

A format may also name a fast reader for its SDK's own classes: the drivers call it directly
for an object whose exact class it has read before (`reply.SDK_COMPLETIONS`,
`delta.SDK_CHUNKS`), with no lookup in between: the happy path stays one call.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from healjson._core.redact import add_credential_places

if TYPE_CHECKING:
    from .delta import Delta
    from .reply import Reply

__all__ = [
    "Pending",
    "WireFormat",
    "add",
    "checked",
    "error_packages",
    "expect",
    "formats",
    "load_for",
    "pending",
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


@dataclass(frozen=True, slots=True, eq=False)
class Pending:
    """A provider module registered but not imported yet: what the core must know of it before
    it is (the `WireFormat` fields of the same names), how its objects are recognised without
    it, and `load`, which imports it (and so registers its formats)."""

    load: Callable[[], object]
    classes: tuple[str, ...] = ()
    """Module prefixes of its SDK's classes (`"sdkname."`): a reply or chunk of one loads it."""
    keys: tuple[frozenset[str], ...] = ()
    """Key sets of its dicts: a dict holding every key of one of them loads it (a reply or a
    chunk as JSON data)."""
    credential_attributes: tuple[str, ...] = ()
    nested_clients: tuple[str, ...] = ()
    sdk_creates: tuple[tuple[str, tuple[str, ...]], ...] = ()
    error_packages: frozenset[str] = frozenset()


_FORMATS: Final[list[WireFormat]] = []
_RANKS: Final[dict[int, float]] = {}  # id(format) -> its place in the dispatch order
_PENDING: Final[list[Pending]] = []
_CHECKED: Final[set[type]] = set()  # classes already looked up among the pending providers
_MAX_CHECKED: Final = 256  # a program meets few classes: bounded all the same
_LOADING: Final = threading.Lock()


def add(fmt: WireFormat, rank: float = math.inf) -> None:
    """Add a format at `rank` in the dispatch order (after the formats of a lower or equal
    rank; by default after every format known); `registry.register` calls this and installs the
    format's fast readers."""
    at = len(_FORMATS)
    while at and _RANKS.get(id(_FORMATS[at - 1]), math.inf) > rank:
        at -= 1
    _RANKS[id(fmt)] = rank
    _FORMATS.insert(at, fmt)
    _ERROR_PACKAGES.update(fmt.error_packages)
    _CREATES.extend(fmt.sdk_creates)
    add_credential_places(fmt.credential_attributes, fmt.nested_clients)


def expect(provider: Pending) -> None:
    """Register a provider module without importing it: its error packages, SDK methods and
    credential places count from now on; its first object met imports it (`load_for`)."""
    _PENDING.append(provider)
    _CHECKED.clear()  # a class looked up before may be this provider's
    _ERROR_PACKAGES.update(provider.error_packages)
    _CREATES.extend(provider.sdk_creates)
    add_credential_places(provider.credential_attributes, provider.nested_clients)


def pending() -> list[Pending]:
    """The providers registered but not imported yet (the list itself: read, don't change it)."""
    return _PENDING


def checked() -> set[type]:
    """The classes already looked up among the pending providers (the set itself: a reader
    tests it before calling `load_for`, the common case being a class seen before)."""
    return _CHECKED


def load_for(obj: Any) -> bool:
    """Import the pending providers `obj` may belong to (a dict: by its keys; an object: by its
    class's module, each class looked up once); True when any was imported."""
    kind = type(obj)
    if not _PENDING or kind in _CHECKED:
        return False
    if isinstance(obj, Mapping):
        keys = obj.keys()
        found = [p for p in _PENDING if any(wanted <= keys for wanted in p.keys)]
    else:
        module = kind.__module__
        found = [p for p in _PENDING if module.startswith(p.classes)]
        if len(_CHECKED) < _MAX_CHECKED:
            _CHECKED.add(kind)
    for provider in found:
        with _LOADING:
            if provider not in _PENDING:
                continue  # loaded meanwhile
            _PENDING.remove(provider)
            try:
                provider.load()
            except BaseException:
                _PENDING.append(provider)
                raise
    return bool(found)


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
