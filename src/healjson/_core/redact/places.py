"""Where a client keeps its credentials, and the secret values each of those places holds.

Each wire format names the places of its SDK's client (`add_credential_places`): dotted
attribute paths such as `api_key`, `_custom_query` or `_client.auth`, and the attributes that
hold another client whose places count too (`_api_client`). A place may hold:

- a string: the credential itself (an API key, a token; a `Basic` header also gives its decoded
  password); a URL (`scheme://...`) gives only its userinfo's password and the values of its
  query under a credential-like name (`?api_key=...`), never the whole URL;
- a mapping (default headers, default query, an HTTP client's keyword arguments): the values
  under a credential-like name (at any depth), and the URLs and auth objects inside it;
- a `(user, password)` pair: the password;
- an HTTP client's URL object (httpx's `URL`): as its text; an auth object (httpx's
  `BasicAuth`, `DigestAuth`, or any object with an `auth_flow`): the credentials it keeps.

Read by shape, never by type: no HTTP library is imported, and any object may be passed (a
place that cannot be read holds no secret healjson can use). The redactor (`redact`) turns
these values into the forms it removes, once per client and key.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlsplit

__all__ = [
    "add_credential_places",
    "client_holders",
    "client_secrets",
    "credential_places",
    "is_credential_name",
    "named_strings",
    "read_attribute",
    "secret_parts",
]

_MAX_DEPTH: Final = 64  # deeper than this, nothing more is read

_NAMES: Final = frozenset(
    {
        "apikey",
        "auth",
        "authorization",
        "cookie",
        "key",
        "proxyauthorization",
        "setcookie",
        "xapikey",
        "xgoogapikey",
    }
)
_NAME_PARTS: Final = ("token", "secret", "password", "passwd", "credential")
_SEPARATORS: Final = str.maketrans("", "", "-_. ")

_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_BASIC: Final = re.compile(r"(?i)^basic\s+([A-Za-z0-9+/=_\-]+)$")
# what an auth object keeps its credential in (httpx's `BasicAuth`: `_auth_header`;
# `DigestAuth`: `_password`; a hand-written one: its token or password)
_AUTH_ATTRIBUTES: Final = (
    "_auth_header",
    "_password",
    "password",
    "_token",
    "token",
    "_api_key",
    "api_key",
)

# where a client keeps its credentials, and the clients inside it: each wire format names its
# SDK's (`wire.formats.WireFormat.credential_attributes`, `nested_clients`) when it is
# registered (`add_credential_places`); a wrapper's `client` (instructor's) is one too
_NESTED_ATTRIBUTES: Final = ("client",)
_CREDENTIALS: Final[list[str]] = []
_NESTED: Final[list[str]] = []
_MAX_NESTING: Final = 2


def add_credential_places(attributes: Iterable[str], nested: Iterable[str] = ()) -> None:
    """Client attributes (dotted: `_http_options.headers`) that hold a credential, and those
    holding another client (whose credentials count too): the wire formats' own, added when
    each is registered."""
    _CREDENTIALS.extend(name for name in attributes if name not in _CREDENTIALS)
    _NESTED.extend(name for name in nested if name not in _NESTED)


def credential_places() -> tuple[list[str], list[str]]:
    """The credential attributes and nested-client attributes known (the lists themselves:
    read, don't change them)."""
    return _CREDENTIALS, _NESTED


@functools.lru_cache(maxsize=2048)
def is_credential_name(name: str) -> bool:
    """True for a mapping key whose value is a credential (`X-Api-Key`, `access_token`...)."""
    flat = name.lower().translate(_SEPARATORS)
    return flat in _NAMES or any(part in flat for part in _NAME_PARTS)


def named_strings(value: Any, depth: int = 0, named: bool = False) -> Iterator[str]:
    """Strings found under credential-like names, at any depth of a call's parameters."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str | bytes):
        if named:
            yield value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            inner = named or (isinstance(key, str) and is_credential_name(key))
            yield from named_strings(item, depth + 1, inner)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from named_strings(item, depth + 1, named)


def client_secrets(client: Any) -> Iterator[str]:
    """The credentials one client holds itself, from every registered place (read defensively:
    any object may be passed, or None for a client already gone)."""
    for path in _CREDENTIALS:
        value = client
        for name in path.split("."):
            value = read_attribute(value, name)
        if value is not None:
            yield from secret_parts(value)


def client_holders(client: Any, depth: int = 0) -> Iterator[Any]:
    """The client and the clients inside it (whose `api_key` may change during a call)."""
    yield client
    if depth < _MAX_NESTING:
        for name in (*_NESTED_ATTRIBUTES, *_NESTED):
            inner = read_attribute(client, name)
            if inner is not None and inner is not client:
                yield from client_holders(inner, depth + 1)


def read_attribute(obj: Any, name: str) -> Any:
    """`obj.name`, or None (for None, a missing attribute or one whose property raises)."""
    if obj is None:
        return None
    try:
        return getattr(obj, name, None)
    except Exception:  # a property that fails (or a proxy that raises) holds no secret we can use
        return None


def secret_parts(value: Any, depth: int = 0) -> Iterator[str]:
    """The secret values one credential place holds (see the module's documentation)."""
    if value is None or depth > _MAX_DEPTH or isinstance(value, bool | int | float):
        return
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        yield from _url_parts(value) if _URL.match(value) else _string_parts(value)
    elif isinstance(value, Mapping):
        yield from _mapping_parts(value, depth)
    elif _is_pair(value):
        yield from _string_parts(_text(value[1]))
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from secret_parts(item, depth + 1)
    else:
        yield from _object_parts(value, depth)


# -- internals -----------------------------------------------------------------------------------


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _is_pair(value: Any) -> bool:
    """A `(user, password)` pair, as httpx's `auth=` takes it."""
    return (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(isinstance(item, str | bytes) for item in value)
    )


def _string_parts(text: str) -> Iterator[str]:
    """A credential string, and a `Basic` header's decoded password."""
    yield text
    basic = _BASIC.match(text.strip())
    if basic is None:
        return
    try:
        decoded = base64.b64decode(basic.group(1), validate=False).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return
    _, colon, password = decoded.partition(":")
    if colon and password:
        yield password


def _url_parts(url: str) -> Iterator[str]:
    """A URL's userinfo password and its query's credential-named values (not the URL)."""
    try:
        split = urlsplit(url)
        password = split.password
        query = parse_qsl(split.query)
    except ValueError:  # not a URL after all: nothing to read in it
        return
    if password:
        yield password
        yield unquote(password)
    for key, item in query:
        if is_credential_name(key) and item:
            yield from _string_parts(item)


def _mapping_parts(value: Mapping[Any, Any], depth: int) -> Iterator[str]:
    try:
        items = list(value.items())
    except Exception:  # a mapping that cannot be read holds no secret we can use
        return
    for key, item in items:
        if isinstance(key, str) and is_credential_name(key):
            yield from _named_parts(item, depth + 1)
        elif isinstance(item, str):
            if _URL.match(item):  # a `base_url` among an HTTP client's arguments
                yield from _url_parts(item)
        elif (
            item is not None
            and not isinstance(item, bytes | bool | int | float)
            and not _is_pair(item)  # a pair under an ordinary name is data, not a login
        ):
            yield from secret_parts(item, depth + 1)


def _named_parts(value: Any, depth: int) -> Iterator[str]:
    """What a credential-like name holds: every string under it, a pair's password."""
    if depth > _MAX_DEPTH or value is None:
        return
    if isinstance(value, str | bytes):
        yield from _string_parts(_text(value))
    elif _is_pair(value):
        yield from _string_parts(_text(value[1]))
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _named_parts(item, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _named_parts(item, depth + 1)
    elif not isinstance(value, bool | int | float):
        yield from _object_parts(value, depth)


def _object_parts(value: Any, depth: int) -> Iterator[str]:
    """An HTTP client's URL object (its text) or auth object (what it keeps)."""
    kind = type(value)
    if kind.__name__ == "URL":  # httpx's, yarl's: its text spells the userinfo and query
        try:
            text = str(value)
        except Exception:
            return
        if _URL.match(text):
            yield from _url_parts(text)
        return
    if read_attribute(value, "auth_flow") is None and read_attribute(value, "_auth_header") is None:
        return  # no auth object: nothing else is read off an unknown object
    for name in _AUTH_ATTRIBUTES:
        held = read_attribute(value, name)
        if isinstance(held, str | bytes) and held:
            yield from _string_parts(_text(held))
        elif _is_pair(held) or isinstance(held, Mapping):
            yield from _named_parts(held, depth + 1)
