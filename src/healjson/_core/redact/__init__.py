"""One redactor for everything healjson stores or emits, so credentials never leave a run.

An endpoint or gateway that echoes the `Authorization` header in its error body, or a key passed
per call in `extra_query`, would otherwise reach the attempt record, the diagnostic, the events,
both traces and batch rows. Every one of those passes through this module, by construction:

1. **Known secret values.** Inside `secrets_scope(client, params)` (around each healing call)
   the credential values healjson can see are removed wherever they occur, a mapping's keys
   included: the client's API key or token (where its wire format says:
   `add_credential_places`), its default headers' and query's credentials, its HTTP client's
   auth and its base URL's userinfo (what each place holds: `places`), every string under
   a credential-like name in the call's parameters, and their URL-, JSON- and repr-escaped
   forms, and their first 8 or more characters where a text or a string in it ends (a
   stream stopped inside a secret: `spelled`). Strings shorter than 8 characters are never
   secret values (ordinary text).
2. **Credential-like names.** In mappings, at any depth, the value under a name such as
   `api_key`, `Authorization`, `x-goog-api-key`, `cookie`, or any name containing `token`,
   `secret`, `password` or `credential` (case and separators ignored) is replaced; numbers,
   booleans and None are kept (`max_tokens`: counts, not credentials).
3. **Credential shapes in free text**: `Bearer <token>`, `Authorization: <value>` and
   `api_key=<value>`-style pairs.

Each match becomes `[redacted]`. Redaction is idempotent, and every pattern is linear.

Model text included: a model can echo a key (a proxy that reflects headers, a prompt-injected
reply). When a run ends inside a scope, `seal` removes the known secrets from what its outcome
stores and remembers those the caller's own objects show (the value is never altered), so that
every rendering of the outcome, after the scope is gone, removes them too (`trace.revealing`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, Final
from urllib.parse import quote, quote_plus

from .places import (
    add_credential_places,
    client_holders,
    client_secrets,
    credential_places,
    is_credential_name,
    named_strings,
    read_attribute,
)
from .spelled import SPELLING_ESCAPES, cut_in, cut_spans, escaped_in, unspelled

__all__ = [
    "MARKER",
    "SPELLING_ESCAPES",
    "add_credential_places",
    "credential_places",
    "credential_words",
    "cut_in",
    "cut_spans",
    "escaped_in",
    "is_credential_field",
    "is_credential_name",
    "redact_data",
    "redact_params",
    "redact_text",
    "redact_with",
    "redacted_repr",
    "run_params",
    "run_secrets",
    "secrets_scope",
    "unspelled",
]

MARKER: Final = "[redacted]"
MIN_SECRET_CHARS: Final = 8
_MAX_DEPTH: Final = 64  # deeper than this, data is replaced rather than walked

# `Authorization: Bearer x`, `"authorization": "Basic x"`, `'Proxy-Authorization': 'x'`: the
# optional scheme word, then one value (or a marker left by an earlier pass, for idempotence).
_AUTH_FIELD: Final = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
    r"(?:[a-z][\w-]*[ \t]+)?(?:\[redacted\]|[^\s\"',;{}\[\]]+)"
)
# `api_key=x` in an echoed URL, `"x-api-key": "x"`, `client_secret: x` in an echoed body
_FIELDS: Final = (
    r"(?:api|access|refresh|auth|id)[-_]?(?:key|token)|(?:client|api)[-_]?secret"
    r"|secret[-_]?key|password|passwd"
)
_KEY_FIELD: Final = re.compile(rf"(?i)({_FIELDS})([\"']?\s*[:=]\s*[\"']?)[^\s\"'&,;{{}}\[\]]+")
_FIELD_NAME: Final = re.compile(rf"(?i)(?:(?:proxy-)?authorization|{_FIELDS})$")  # a key, whole
# `"github_token": "ghp_x"`, `sessionToken=x`, `webhook-secret: x`: a name one of whose words
# is a credential's (`credential_words`), its value masked when it could be one (8+ characters,
# not a number); `max_tokens`, `tokenizer`, `token_count: 12` are other words or no secret
_WORDED: Final = re.compile(
    r"(?<![A-Za-z0-9_-])([A-Za-z0-9_-]{0,48}?(?i:token|secret|passw(?:or)?d|credential)"
    r"[A-Za-z0-9_-]{0,48})([\"']?\s*[:=]\s*[\"']?)([^\s\"'&,;{}\[\]]+)"
)
_WORDS: Final = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_CREDENTIAL_WORDS: Final = frozenset(
    {"token", "secret", "password", "passwd", "credential", "credentials"}
)
_NUMBER: Final = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_Named = Callable[[str], bool] | None  # which keys' string values are masked
_BEARER: Final = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/=]{8,}")
_SCHEME: Final = re.compile(r"(?i)^(?:bearer|basic|token|apikey)\s+(\S+)$")


def redact_text(text: str) -> str:
    """`text` with known secret values and credential shapes replaced by the marker."""
    return _redact_text(text, _known_forms())


def redact_with(text: str, forms: tuple[str, ...]) -> str:
    """`redact_text` with the secret forms known already (`run_secrets()`): for code that
    redacts several texts of one run."""
    return _redact_text(text, forms)


def redacted_repr(record: Any) -> str:
    """A dataclass record's `repr` as the generated one writes it (its fields shown in `repr`),
    through the redactor: for records an integration keeps of model text."""
    shown = ", ".join(
        f"{field.name}={getattr(record, field.name)!r}"
        for field in dataclasses.fields(record)
        if field.repr
    )
    return redact_text(f"{type(record).__qualname__}({shown})")


def redact_data(value: Any, *, by_name: bool = True, fields: bool = False) -> Any:
    """A copy of `value` with every string redacted, keys too; mappings become dicts, lists
    and tuples keep their type. With `by_name` (the default) values under credential-like keys
    are masked; with `fields`, only those under a credential field's name (a record of the
    caller's data, as the text redactor leaves its JSON text)."""
    named = is_credential_name if by_name else is_credential_field if fields else None
    return _walk(value, _known_forms(), named, 0)


def is_credential_field(name: str) -> bool:
    """True for a key whose `"name": "value"` pair the text redactor masks whatever its value
    (`api_key`, `db_password`, `authorization`; not `key` or `tokens`, a caller's data's own
    words). A name with a credential word (`credential_words`) masks a value that could be a
    secret (`_mapping`, `_WORDED`)."""
    return _FIELD_NAME.search(name) is not None


def credential_words(name: str) -> bool:
    """True when one of `name`'s words (split at `_`, `-`, `.` and case changes) is a
    credential's: `token`, `secret`, `password`, `passwd`, `credential(s)` (`github_token`,
    `sessionToken`, `WEBHOOK_SECRET`; not `max_tokens`, `tokenizer`)."""
    return any(word.lower() in _CREDENTIAL_WORDS for word in _WORDS.findall(name))


def redact_params(
    params: Mapping[str, Any], *, client: Any = None, forms: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """Call parameters as they may be stored: credential-named values masked at any depth,
    known secrets removed from every string. Other objects are kept as they are. `client`: the
    wrapped client, for code that holds it instead of having entered its `secrets_scope`
    (the same result as inside `secrets_scope(client, params)`); `forms`: the current scope's
    secret forms, known already (`run_secrets()`)."""
    if forms is not None and client is None:  # the scope's forms, known already
        return _with_forms(params, forms)
    scope = _SCOPE.get()
    given = client is not None
    if given:
        plain = scope is None  # inside another scope its secrets count too: the general path
    else:
        plain = scope is not None and scope._outer is None
        client = scope._client if scope is not None else None
    if plain and type(params) is dict:
        # the common call: flat parameters, in one scope; only the client's own secrets can be
        # in them (the params hold none)
        flat = _flat(params, None, client)
        if flat is not None:
            return flat
    if given:  # the general path reads the scope: enter the client's
        with secrets_scope(client, params):
            return _mapping(params, _known_forms(), is_credential_name, 0)
    return _mapping(params, _known_forms(), is_credential_name, 0)


def _with_forms(params: Mapping[str, Any], forms: tuple[str, ...]) -> dict[str, Any]:
    """`redact_params(params, forms=forms)`."""
    flat = _flat(params, forms, None) if type(params) is dict else None
    return _mapping(params, forms, is_credential_name, 0) if flat is None else flat


def run_params(params: Mapping[str, Any], /) -> tuple[tuple[str, ...], dict[str, Any]]:
    """`(forms, redact_params(params, forms=forms))` with `forms = run_secrets()`: a run's
    secret forms and its call parameters as they may be stored. In one pass in the common case
    (`params` the very parameters of the one scope's call, flat and plain, none under a
    credential name: the scope's secrets are then its client's alone)."""
    scope = _SCOPE.get()
    if (
        scope is not None
        and scope._params is params
        and type(params) is dict
        and scope._outer is None
        and not scope._forms
        and scope._client is not None
    ):
        forms = _ClientForms.current(scope._client)
        flat = _flat(params, forms, None)
        if flat is not None:
            return forms, flat
    forms = _known_forms()
    return forms, _with_forms(params, forms)


def _flat(
    params: dict[str, Any], forms: tuple[str, ...] | None, client: Any
) -> dict[str, Any] | None:
    """Flat parameters of plain values, none under a credential name, redacted in one pass
    (`forms` None: the client's own, read at the first string long enough to hold one); None
    for any other parameters."""
    out: dict[str, Any] = {}
    for key, item in params.items():
        kind = type(item)
        if item is None or kind is int or kind is float or kind is bool:
            out[key] = item
        elif kind is not str or type(key) is not str or is_credential_name(key):
            return None
        elif len(item) < MIN_SECRET_CHARS:
            out[key] = item
        else:
            if forms is None:
                forms = () if client is None else _ClientForms.current(client)
            found = _VALUES.get((item, forms))
            out[key] = _redacted_value(item, forms) if found is None else found
    return out


# short parameter values already redacted against a set of secret forms: a model name or a
# user id repeats on every call of an application (bounded; emptied when full)
_VALUES: dict[tuple[str, tuple[str, ...]], str] = {}
_MAX_VALUES: Final = 1024
_MAX_VALUE_CHARS: Final = 200


def _redacted_value(text: str, forms: tuple[str, ...]) -> str:
    """`_redact_text`, remembered for a short value (`_VALUES`)."""
    redacted = _redact_text(text, forms)
    if len(text) <= _MAX_VALUE_CHARS:
        if len(_VALUES) >= _MAX_VALUES:
            _VALUES.clear()
        _VALUES[(text, forms)] = redacted
    return redacted


def _named_forms(params: Mapping[str, Any] | None) -> set[str]:
    """The escaped forms of every string under a credential-like name in `params`."""
    if not params:
        return set()
    for key, value in params.items():  # fast path: flat params, no string under a credential name
        kind = type(value)
        if value is None or kind is int or kind is float or kind is bool:
            continue  # a number is a count (`max_tokens`), never a secret: none is collected
        if kind is not str or (type(key) is str and is_credential_name(key)):
            break
    else:
        return set()
    return {form for value in named_strings(params) for form in _variants(value)}


class _ClientForms:
    """One client's credential forms (longest first) and the clients inside it, computed once
    per client and key: a wrapped client makes many calls, and escaping every secret per call
    was most of the redactor's cost. The clients are held weakly: an entry lives exactly as long
    as the client that holds the secret anyway."""

    __slots__ = ("_forms", "_holders")

    def __init__(self, client: Any) -> None:
        self._holders = tuple(_weakly(holder) for holder in client_holders(client))
        self._forms: tuple[tuple[Any, ...], tuple[str, ...]] | None = None

    @classmethod
    def of(cls, client: Any) -> _ClientForms:
        key = id(client)
        found = _CLIENTS.get(key)  # a read needs no lock: a dict lookup is atomic
        if found is not None and found._holders[0]() is client:
            return found
        try:
            ref = weakref.ref(client, functools.partial(_forget, key))
        except TypeError:  # not weakly referenceable: computed every time
            return cls(client)
        found = cls(client)
        with _CLIENTS_LOCK:
            _CLIENTS[key] = found
            _REFS[key] = ref
        return found

    def fingerprint(self) -> tuple[Any, ...]:
        return tuple([read_attribute(holder(), "api_key") for holder in self._holders])

    @classmethod
    def current(cls, client: Any) -> tuple[str, ...]:
        """`of(client).forms(...)` for the client's current key, in one step for a client seen
        before whose key is unchanged (the common call)."""
        found = _CLIENTS.get(id(client))
        if found is not None and found._forms is not None and len(found._holders) == 1:
            cached = found._forms
            try:
                key = getattr(client, "api_key", None)
            except Exception:  # a failing property: the generic path handles it
                pass
            else:
                if cached[0] == (key,) and found._holders[0]() is client:
                    return cached[1]
        found = cls.of(client)
        return found.forms(found.fingerprint())

    def forms(self, fingerprint: tuple[Any, ...]) -> tuple[str, ...]:
        cached = self._forms
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        secrets = {secret for ref in self._holders for secret in client_secrets(ref())}
        forms = _longest_first({form for value in secrets for form in _variants(value)})
        if cached is not None:  # a changed key: values checked against the old one go
            _VALUES.clear()
        self._forms = (fingerprint, forms)  # one assignment: readers see old or new, whole
        return forms


# by the client's id, checked against the entry's weak reference to it (a plain dict lookup by
# an int is far cheaper per call than a WeakKeyDictionary's); an entry goes with its client
_CLIENTS: Final[dict[int, _ClientForms]] = {}
_REFS: Final[dict[int, weakref.ref[Any]]] = {}
_CLIENTS_LOCK: Final = threading.Lock()


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    # no lock: a weak reference's callback may run inside the garbage collector, on a thread
    # that holds the lock already; a lost race costs one recomputation later, never a wrong
    # answer (`of` checks that an entry is the client's own)
    if _REFS.get(key) is ref:  # not a newer client that was given the same id
        _REFS.pop(key, None)
        _CLIENTS.pop(key, None)
        _VALUES.clear()  # its secrets are held nowhere once the client is gone


def _weakly(obj: Any) -> Callable[[], Any]:
    """A weak reference to `obj`, or (for an object that takes none) a strong one."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: obj


def _longest_first(forms: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(forms, key=lambda form: (-len(form), form)))


_SCOPE: ContextVar[secrets_scope | None] = ContextVar("healjson_known_secrets", default=None)


class secrets_scope:
    """`with secrets_scope(client, params):` registers the secrets of `client` and of the call's
    `params` for the enclosed code (sync code, or the body of a coroutine). One use each (not
    reusable, not re-entrant).

    A `contextvars` scope: correct across threads and asyncio tasks, and a nested scope adds to
    the outer one. Nothing is read on entry: the secrets are gathered at the first redaction
    inside the scope (a call that redacts nothing pays for none of it) and remembered for the
    scope, and gathered again if the client's `api_key` has changed since (openai's `api_key`
    provider refreshes it). A client's own forms are also kept per client (`_ClientForms`) for
    its next calls.
    """

    __slots__ = ("_client", "_forms", "_memo", "_named", "_outer", "_params", "_token")

    def __init__(
        self,
        client: Any = None,
        params: Mapping[str, Any] | None = None,
        *,
        forms: tuple[str, ...] = (),
    ) -> None:
        self._client = client
        self._params = params
        self._forms = forms  # secret forms known already (an outcome's, see `seal`)
        self._outer: secrets_scope | None = _SCOPE.get()  # read again on entry
        self._memo: tuple[tuple[Any, ...], tuple[str, ...]] | None = None
        self._named: set[str] | None = None  # the params' credential-named values, once read
        self._token: Token[secrets_scope | None] | None = None

    def __enter__(self) -> None:
        self._outer = _SCOPE.get()
        self._token = _SCOPE.set(self)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _SCOPE.reset(self._token)
            self._token = None

    def secrets(self) -> tuple[str, ...]:
        """The known secret values in every form they may appear in, longest first (so that a
        secret containing another is removed whole)."""
        if self._outer is None and not self._forms and self._client is not None:
            named = self._named
            if named is None:
                named = self._named = _named_forms(self._params)
            if not named:  # the client's own forms alone: its cached ones, for its current key
                return _ClientForms.current(self._client)
        client = _ClientForms.of(self._client) if self._client is not None else None
        fingerprint = client.fingerprint() if client is not None else ()
        memo = self._memo
        if memo is not None and memo[0] == fingerprint and self._outer is None:
            return memo[1]
        forms = client.forms(fingerprint) if client is not None else ()
        named = self._named if self._named is not None else _named_forms(self._params)
        if named or self._outer is not None or self._forms:
            merged = {*named, *forms, *self._forms}
            if self._outer is not None:
                merged.update(self._outer.secrets())
            forms = _longest_first(merged)
        self._memo = (fingerprint, forms)
        return forms


activate: Final = _SCOPE.set
"""`token = activate(secrets_scope(client, params))` ... `deactivate(token)`: the `with`
statement's work without its two Python-level calls (for the adapters' hot path)."""
deactivate: Final = _SCOPE.reset


def known_secrets() -> frozenset[str]:
    """Every secret value the current scope knows, with the escaped forms it may appear in."""
    known = _SCOPE.get()
    return frozenset() if known is None else frozenset(known.secrets())


def run_secrets(client: Any = None, params: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The secret forms a run knows: the current scope's, and (for code that holds the wrapped
    `client` outside its scope, the adapters' first reply) the client's and the call's."""
    forms = _known_forms()
    if client is None:
        return forms
    own = _ClientForms.current(client)
    named = _named_forms(params)
    if not forms and not named:
        return own
    return _longest_first({*forms, *own, *named})


# -- internals -----------------------------------------------------------------------------------


def _known_forms() -> tuple[str, ...]:
    known = _SCOPE.get()
    return () if known is None else known.secrets()


def _redact_text(text: str, secrets: tuple[str, ...]) -> str:
    if len(text) < MIN_SECRET_CHARS:  # shorter than any secret or credential shape
        return text
    for secret in secrets:  # plain substring replacement: no regex ever holds a secret
        if secret in text:
            text = text.replace(secret, MARKER)
    if secrets:  # spelled with escapes, or cut short (a stream stopped inside one)
        text = unspelled(text, secrets, MARKER)
    # each pattern runs only when a word it needs is there: plain `in` tests are far cheaper
    # than a case-insensitive regex scan, and most text holds none of these words
    lowered = text.lower()
    if "authorization" in lowered:
        text = _AUTH_FIELD.sub(_name_then_marker, text)
    if "key" in lowered or "token" in lowered or "secret" in lowered or "passw" in lowered:
        text = _KEY_FIELD.sub(_name_then_marker, text)
    if "token" in lowered or "secret" in lowered or "passw" in lowered or "credential" in lowered:
        text = _WORDED.sub(_worded_then_marker, text)
    if "bearer" in lowered:
        text = _BEARER.sub(_scheme_then_marker, text)
    return text


def _name_then_marker(match: re.Match[str]) -> str:
    # a function, not a `\1` template: re would parse the template on every call
    return "".join(match.groups("")) + MARKER


def _scheme_then_marker(match: re.Match[str]) -> str:
    return f"{match.group(1)} {MARKER}"


def _worded_then_marker(match: re.Match[str]) -> str:
    name, between, value = match.groups()
    if len(value) < MIN_SECRET_CHARS or _NUMBER.fullmatch(value) or not credential_words(name):
        return match.group(0)
    return f"{name}{between}{MARKER}"


def _walk(value: Any, secrets: tuple[str, ...], named: _Named, depth: int) -> Any:
    # exact types first, ABC checks (Mapping) last: they are slow, and most values are plain
    kind = type(value)
    if kind is str:
        return _redact_text(value, secrets)
    if value is None or kind is int or kind is float or kind is bool:
        return value
    container = kind is dict or kind is list or kind is tuple or isinstance(value, Mapping)
    if container and depth >= _MAX_DEPTH:
        return MARKER
    if kind is dict:
        return _mapping(value, secrets, named, depth)
    if kind is list:
        return [_walk(item, secrets, named, depth + 1) for item in value]
    if kind is tuple:
        return tuple(_walk(item, secrets, named, depth + 1) for item in value)
    if isinstance(value, Mapping):
        return _mapping(value, secrets, named, depth)
    if isinstance(value, str):  # subclasses of the types above
        return _redact_text(value, secrets)
    if isinstance(value, list):
        return [_walk(item, secrets, named, depth + 1) for item in value]
    if isinstance(value, tuple):
        return tuple(_walk(item, secrets, named, depth + 1) for item in value)
    return value


def found_in(text: str, forms: tuple[str, ...]) -> bool:
    """True when one of the secret `forms` occurs in `text` (none: at once). A plain loop: a
    first answer of a client that holds a key runs it on its hot path."""
    for form in forms:  # noqa: SIM110  (a loop: no generator on the hot path)
        if form in text:
            return True
    return False


def _mapping(
    value: Mapping[Any, Any], secrets: tuple[str, ...], named: _Named, depth: int
) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for given, item in value.items():
        kind, key = type(item), given
        if type(given) is str and (len(given) >= 24 or found_in(given, secrets)):
            key = _redact_text(given, secrets)  # a known secret, or a long key of its shape
        if item is None or kind is int or kind is float or kind is bool:
            out[key] = item  # a number under a credential name is a count (`max_tokens`)
        elif named is not None and isinstance(given, str) and _masked(named, given, item):
            out[key] = MARKER
        elif kind is str:
            out[key] = _redact_text(item, secrets)
        else:
            out[key] = _walk(item, secrets, named, depth + 1)
    return out


def _masked(named: Callable[[str], bool], key: str, item: Any) -> bool:
    """Whether the value `item` (no number) under `key` is masked: a credential's name masks it
    whatever it is; in a record of the caller's data (`is_credential_field`), a credential's
    word in the key (`github_token`) masks a text that could be a secret (8+ characters)."""
    if named(key):
        return True
    return (
        named is is_credential_field
        and type(item) is str
        and len(item) >= MIN_SECRET_CHARS
        and credential_words(key)
    )


def _variants(secret: str) -> frozenset[str]:
    """`secret` (and the token of a `Bearer x` value) as an error body may echo it."""
    candidates: set[str] = {secret}
    scheme = _SCHEME.match(secret.strip())
    if scheme:
        candidates.add(scheme.group(1))
    out: set[str] = set()
    for candidate in candidates:
        out.update(_escaped(candidate))
    return frozenset(form for form in out if len(form) >= MIN_SECRET_CHARS and form not in MARKER)


def _escaped(secret: str) -> Iterable[str]:
    yield secret
    yield quote(secret, safe="")
    yield quote_plus(secret, safe="")
    yield json.dumps(secret)[1:-1]
    yield json.dumps(secret, ensure_ascii=False)[1:-1]
    yield repr(secret)[1:-1]
