"""Credentials never reach what healjson stores or emits, even when an endpoint echoes them.

The end-to-end tests drive the real openai SDK (and instructor over it) through `healjson.wrap`
against a loopback server of this file that answers 401 with a body echoing the request's
`Authorization` header, its other credential headers, its query string and its body, the way
some gateways do. The unit tests pin the redactor's three rules down one by one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import string
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any, Literal
from urllib.parse import quote

import anthropic
import openai
import pytest
from google import genai
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, DegradedError, Healer, Reason
from healjson._batch.rows import Job, outcome_row
from healjson._core.outcome.record import public_params
from healjson._core.redact import (
    MARKER,
    is_credential_name,
    known_secrets,
    redact_data,
    redact_params,
    redact_text,
    secrets_scope,
)
from healjson._core.run.drive import drive_sync
from healjson.testing import ScriptedModel, capture_events
from lanes import INSTRUCTOR_ONLY, needs_instructor
from paths import CLI_FIXTURES
from sdk_calls import TLS as _SSL
from sdk_calls import close_gemini

Mode = Literal["sync", "async"]

CLIENT_KEY = "sk-client-KEY-0123456789abcdef"
HEADER_KEY = "hdr-default-SECRET-5566778899"
CALL_TOKEN = "call-header-TOKEN-4433221100"
QUERY_KEY = "query-param-KEY-1122334455"
BODY_SECRET = "body-field-SECRET-9988776655"
ALL_SECRETS = (CLIENT_KEY, HEADER_KEY, CALL_TOKEN, QUERY_KEY, BODY_SECRET)
ECHOED_HEADERS = ("authorization", "x-api-key", "x-request-token")


class Ticket(BaseModel):
    urgency: int
    summary: str


USER = [{"role": "user", "content": "Triage: the parcel is lost."}]


# ---------------------------------------------------------------------------------------------
# A gateway that echoes credentials in its 401 body
# ---------------------------------------------------------------------------------------------


class _EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace")
        _, _, query = self.path.partition("?")
        echoed = {name: self.headers.get(name) for name in ECHOED_HEADERS}
        self.server.seen.append(echoed)  # type: ignore[attr-defined]
        message = (
            f"invalid credentials. Authorization: {echoed['authorization']}; "
            f"headers={echoed}; query={query}; body={body}"
        )
        payload = json.dumps({"error": {"message": message, "type": "invalid_request_error"}})
        data = payload.encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


class EchoServer:
    """An HTTP server on 127.0.0.1 (port 0) whose every answer is a 401 echoing credentials."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
        self._server.daemon_threads = True
        self._server.seen = []  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def seen(self) -> list[dict[str, str | None]]:
        return self._server.seen  # type: ignore[attr-defined, no-any-return]

    def __enter__(self) -> EchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture(scope="module")
def echo_server() -> Iterator[EchoServer]:
    """One echoing gateway for the whole module."""
    with EchoServer() as server:
        yield server


def _call_kwargs(
    token: str = CALL_TOKEN, query_key: str = QUERY_KEY, body_secret: str = BODY_SECRET
) -> dict[str, Any]:
    return {
        "model": "gpt-test",
        "messages": USER,
        "response_model": Ticket,
        "extra_headers": {"X-Request-Token": token},
        "extra_query": {"api_key": query_key},
        "extra_body": {"metadata": {"client_secret": body_secret}},
    }


def _ask(
    mode: Mode,
    server: EchoServer,
    *,
    api_key: str = CLIENT_KEY,
    header_key: str = HEADER_KEY,
    through_instructor: bool = False,
    **call: Any,
) -> Any:
    """One healing `create` through the real SDK (sync or async) against `server`."""
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "api_key": api_key,
        "max_retries": 0,
        "default_headers": {"X-Api-Key": header_key},
    }

    def wrapped(sdk: Any) -> Any:
        if not through_instructor:
            return healjson.wrap(sdk)
        import instructor

        return healjson.wrap(instructor.from_openai(sdk))

    if mode == "sync":
        with openai.OpenAI(**options, http_client=openai.DefaultHttpxClient(verify=_SSL)) as sdk:
            return wrapped(sdk).chat.completions.create(**call)

    async def main() -> Any:
        http = openai.DefaultAsyncHttpxClient(verify=_SSL)
        async with openai.AsyncOpenAI(**options, http_client=http) as sdk:
            return await wrapped(sdk).chat.completions.create(**call)

    return asyncio.run(main())


def _everything_emitted(outcome: Any, logs: list[Any]) -> dict[str, str]:
    """Every place a secret could surface, rendered as text."""
    return {
        "repr": repr(outcome),
        "to_dict": json.dumps(outcome.to_dict()),
        "trace_json": outcome.trace("json"),
        "trace_markdown": outcome.trace("markdown"),
        "events": json.dumps(logs, default=str),
        "params": repr([attempt.params for attempt in outcome.attempts]),
        "errors": repr(outcome.errors),
        "batch_row": json.dumps(outcome_row(Job(id=1, line=1), outcome, full=True)),
        "unwrap": str(DegradedError(outcome)),
    }


# ---------------------------------------------------------------------------------------------
# End to end: the real SDK against the echoing gateway
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("include_content", [False, True])
def test_an_echoed_api_key_appears_in_no_output(
    echo_server: EchoServer, mode: Mode, include_content: bool
) -> None:
    """A 401 body echoing every credential leaves none in the record, traces, events or rows."""
    with capture_events(include_content=include_content) as logs:
        outcome = _ask(mode, echo_server, **_call_kwargs())

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert {
        "authorization": f"Bearer {CLIENT_KEY}",
        "x-api-key": HEADER_KEY,
        "x-request-token": CALL_TOKEN,
    } == echo_server.seen[-1]  # the real call carried the real credentials
    error = outcome.attempts[0].error or ""
    assert "Error code: 401" in error
    assert MARKER in error
    for where, text in _everything_emitted(outcome, logs).items():
        for secret in ALL_SECRETS:
            assert secret not in text, f"{where} leaks {secret}"


def test_per_call_credentials_are_masked_in_the_stored_params(echo_server: EchoServer) -> None:
    """Attempt.params keeps the call's shape with every credential-named value masked."""
    outcome = _ask("sync", echo_server, **_call_kwargs())

    assert {
        "model": "gpt-test",
        "extra_headers": {"X-Request-Token": MARKER},
        "extra_query": {"api_key": MARKER},
        "extra_body": {"metadata": {"client_secret": MARKER}},
    } == outcome.attempts[0].params
    assert {
        "model": "gpt-test",
        "extra_query": {"api_key": MARKER},
        "extra_body": {"metadata": {"client_secret": MARKER}},
    } == outcome.to_dict()["attempts"][0]["params"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_instructor_adapter_redacts_the_same_way(echo_server: EchoServer, mode: Mode) -> None:
    """Through `instructor.from_openai`, the echoed credentials are redacted as well."""
    pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)
    with capture_events(include_content=True) as logs:
        outcome = _ask(mode, echo_server, through_instructor=True, **_call_kwargs())

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert MARKER in (outcome.attempts[0].error or "")
    for where, text in _everything_emitted(outcome, logs).items():
        for secret in ALL_SECRETS:
            assert secret not in text, f"{where} leaks {secret}"


_TOKEN_CHARS = string.ascii_letters + string.digits + "-_.~+/="
secrets_st = st.text(_TOKEN_CHARS, min_size=12, max_size=40).map(lambda s: f"sk-{s}")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    api_key=secrets_st,
    header_key=secrets_st,
    token=secrets_st,
    query_key=secrets_st,
    body_secret=secrets_st,
)
def test_random_secrets_in_headers_query_and_body_never_reach_any_output(
    echo_server: EchoServer,
    api_key: str,
    header_key: str,
    token: str,
    query_key: str,
    body_secret: str,
) -> None:
    """Whatever the secrets, placed in headers, query and body and echoed back, none leaks."""
    with capture_events(include_content=True) as logs:
        outcome = _ask(
            "sync",
            echo_server,
            api_key=api_key,
            header_key=header_key,
            **_call_kwargs(token, query_key, body_secret),
        )

    assert isinstance(outcome, Degraded)
    for text in _everything_emitted(outcome, logs).values():
        for secret in (api_key, header_key, token, query_key, body_secret):
            assert secret not in text


# ---------------------------------------------------------------------------------------------
# The engine stores redacted data; the model call gets the real parameters
# ---------------------------------------------------------------------------------------------


def test_a_failed_call_is_stored_redacted_but_the_call_gets_the_real_params() -> None:
    """The error text and the params are redacted in the record, never in the request."""
    token = "tok-9f8e7d6c5b4a39281706"
    model = ScriptedModel([PermissionError(f"gateway said: Authorization: Bearer {token}")])
    headers = {"Authorization": f"Bearer {token}"}

    outcome = Healer(Ticket).run(model, "triage", extra_headers=headers, temperature=0)

    assert {"extra_headers": headers, "temperature": 0} == dict(model.calls[0].params)
    assert {"extra_headers": {"Authorization": MARKER}, "temperature": 0} == dict(
        outcome.attempts[0].params
    )
    assert "PermissionError: gateway said: Authorization: [redacted]" == outcome.attempts[0].error
    assert token not in repr(outcome)


def test_public_params_masks_credentials_and_drops_header_dicts() -> None:
    """Serialised params drop header dicts and mask credential-named values at any depth."""
    params = {
        "model": "m",
        "max_tokens": 100,
        "api_key": "sk-top-level-0123456789",
        "extra_headers": {"Authorization": "Bearer x"},
        "extra_query": {"key": "AIza-query-key-123456"},
        "extra_body": {"auth": {"refresh_token": "r-0123456789"}, "n": 2},
    }

    assert {
        "model": "m",
        "max_tokens": 100,
        "extra_query": {"key": MARKER},
        "extra_body": {"auth": MARKER, "n": 2},
    } == public_params(params)


# ---------------------------------------------------------------------------------------------
# The redactor: credential-like names
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "API-KEY",
        "apiKey",
        "Authorization",
        "proxy-authorization",
        "X-Api-Key",
        "x-goog-api-key",
        "Cookie",
        "set-cookie",
        "access_token",
        "X-Auth-Token",
        "client_secret",
        "db.password",
        "credentials",
        "key",
    ],
)
def test_credential_like_names_are_recognised(name: str) -> None:
    """Names of credentials are recognised whatever their case and separators."""
    assert True is is_credential_name(name)


@pytest.mark.parametrize(
    "name", ["model", "temperature", "messages", "keywords", "monkey", "author", "user"]
)
def test_ordinary_names_are_not_credentials(name: str) -> None:
    """Ordinary parameter names are left alone."""
    assert False is is_credential_name(name)


def test_values_under_credential_names_are_masked_at_any_depth() -> None:
    """A credential-named value is masked however deep; its siblings are only text-redacted."""
    data = {
        "outer": [{"inner": {"X-Goog-Api-Key": "AIza0123456789", "name": "kept"}}],
        "Cookie": "sid=abc0123",
        "tuple": ({"password": "pw"},),
    }

    assert {
        "outer": [{"inner": {"X-Goog-Api-Key": MARKER, "name": "kept"}}],
        "Cookie": MARKER,
        "tuple": ({"password": MARKER},),
    } == redact_data(data)


def test_counts_under_token_names_are_kept() -> None:
    """Numbers and booleans under `*token*` names are counts, not credentials."""
    params = {"max_tokens": 100, "prompt_tokens": 7, "tokens_estimated": True, "token": None}

    assert params == redact_params(params)


def test_by_name_false_leaves_keys_alone() -> None:
    """`by_name=False` redacts strings only, so a value's own fields survive."""
    record = {"value": {"password_hint": "first pet"}, "raw": "Bearer abcdefghijklmnop"}

    assert {
        "value": {"password_hint": "first pet"},
        "raw": f"Bearer {MARKER}",
    } == redact_data(record, by_name=False)


def test_non_string_keys_and_other_objects_pass_through() -> None:
    """Non-string keys still have their values walked; opaque objects are kept as they are."""
    marker = object()
    data = {1: "Authorization: Basic dXNlcjpwYXNz", "obj": marker}

    redacted = redact_data(data)

    assert "Authorization: [redacted]" == redacted[1]
    assert redacted["obj"] is marker


# ---------------------------------------------------------------------------------------------
# The redactor: credential shapes in free text
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Bearer sk-abcdef0123456789", "Bearer [redacted]"),
        ("header was bearer eyJhbGciOi.J9.x_y", "header was bearer [redacted]"),
        ("Authorization: Bearer sk-abc", "Authorization: [redacted]"),
        ("{'authorization': 'Basic dXNlcg=='}", "{'authorization': '[redacted]'}"),
        ('"Proxy-Authorization": "abc"', '"Proxy-Authorization": "[redacted]"'),
        ("GET /v1?api_key=sk-123%2B456&x=1", "GET /v1?api_key=[redacted]&x=1"),
        ("x-goog-api-key: AIza0123", "x-goog-api-key: [redacted]"),
        ("client_secret=abc def", "client_secret=[redacted] def"),
    ],
)
def test_credential_shapes_in_text_are_redacted(text: str, expected: str) -> None:
    """Bearer tokens, Authorization values and key=value credentials are replaced."""
    assert expected == redact_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "the bearer of bad news",
        "authorization failed",
        "max_tokens: 100",
        "Check the provider, network and credentials.",
        '{"urgency": 5, "summary": "Parcel lost"}',
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    """Prose that merely mentions credentials is not mangled."""
    assert text == redact_text(text)


def test_short_strings_are_never_secret_values() -> None:
    """A known value shorter than 8 characters is not removed from text."""
    client = SimpleNamespace(api_key="short", auth_token="longer-token-value")
    with secrets_scope(client, {"password": "pw123"}):
        assert "short pw123 [redacted]" == redact_text("short pw123 longer-token-value")
        assert "sk" == redact_text("sk")


# ---------------------------------------------------------------------------------------------
# The redactor: known secrets and their scope
# ---------------------------------------------------------------------------------------------


def test_known_secrets_are_removed_in_their_escaped_forms_too() -> None:
    """Inside a scope a secret is removed raw, URL-encoded and JSON- or repr-escaped."""
    secret = "sk-with/slash+plus=eq"
    with secrets_scope(SimpleNamespace(api_key=secret)):
        text = f"raw {secret} url {quote(secret, safe='')} json {json.dumps(secret)}"
        assert f'raw {MARKER} url {MARKER} json "{MARKER}"' == redact_text(text)
    assert secret in redact_text(f"raw {secret}")  # outside the scope it is not known


def test_secrets_found_in_call_params_are_known_in_the_scope() -> None:
    """Strings under credential names of the call's params join the known secrets."""
    params = {"extra_headers": {"Authorization": "Bearer tok-0123456789"}, "model": "gpt-4o-mini"}
    with secrets_scope(None, params):
        assert "echo [redacted], model gpt-4o-mini" == redact_text(
            "echo tok-0123456789, model gpt-4o-mini"
        )


def _instructor_client(sdk: openai.OpenAI) -> Any:
    import instructor

    return instructor.from_openai(sdk)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (
            lambda: openai.OpenAI(
                api_key="sk-openai-0123456789",
                base_url="http://127.0.0.1:9/v1",
                default_headers={"X-Api-Key": "hdr-openai-0123456789", "X-Trace": "visible-id"},
                default_query={"key": "qry-openai-0123456789"},
            ),
            {"sk-openai-0123456789", "hdr-openai-0123456789", "qry-openai-0123456789"},
        ),
        (
            lambda: openai.AzureOpenAI(
                azure_ad_token="aad-token-0123456789",
                api_version="2024-06-01",
                azure_endpoint="http://127.0.0.1:9",
            ),
            {"aad-token-0123456789"},
        ),
        (lambda: anthropic.Anthropic(api_key="sk-ant-0123456789"), {"sk-ant-0123456789"}),
        (
            lambda: anthropic.Anthropic(auth_token="ant-bearer-0123456789"),
            {"ant-bearer-0123456789"},
        ),
        (lambda: genai.Client(api_key="AIza-genai-0123456789"), {"AIza-genai-0123456789"}),
        pytest.param(
            lambda: _instructor_client(
                openai.OpenAI(api_key="sk-instructor-0123456789", base_url="http://127.0.0.1:9")
            ),
            {"sk-instructor-0123456789"},
            marks=needs_instructor,
        ),
    ],
    ids=["openai", "azure", "anthropic-key", "anthropic-token", "genai", "instructor"],
)
def test_each_provider_clients_credentials_are_known(
    make: Callable[[], Any], expected: set[str]
) -> None:
    """The scope finds where openai, Azure, anthropic, google-genai and instructor keep keys."""
    client = make()
    try:
        with secrets_scope(client):
            known = known_secrets()
    finally:
        if isinstance(client, genai.Client):
            close_gemini(client)
        else:  # an SDK client, or instructor's around one
            getattr(client, "client", client).close()
    assert expected <= known
    assert "visible-id" not in known


def test_a_scope_exit_restores_the_outer_scope() -> None:
    """Nested scopes add to the outer one, and each exit restores exactly what was before."""
    outer, inner = "outer-secret-0123", "inner-secret-4567"
    assert frozenset() == known_secrets()
    with secrets_scope(SimpleNamespace(api_key=outer)):
        with secrets_scope(SimpleNamespace(api_key=inner)):
            assert {outer, inner} <= known_secrets()
        assert outer in known_secrets()
        assert inner not in known_secrets()
    assert frozenset() == known_secrets()


def test_concurrent_tasks_each_know_only_their_own_secrets() -> None:
    """Scopes entered in overlapping asyncio tasks do not see each other's secrets."""

    async def task(secret: str) -> frozenset[str]:
        with secrets_scope(SimpleNamespace(api_key=secret)):
            await asyncio.sleep(0)
            return known_secrets()

    async def main() -> list[frozenset[str]]:
        return await asyncio.gather(*(task(f"task-secret-{i:04d}") for i in range(10)))

    for index, known in enumerate(asyncio.run(main())):
        assert {f"task-secret-{index:04d}"} == set(known)


def test_a_client_whose_attributes_raise_is_read_safely() -> None:
    """Reading credentials never raises, whatever object is passed as the client."""

    class Hostile:
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("no attributes here")

    with secrets_scope(Hostile()):
        assert frozenset() == known_secrets()
        assert "plain text here" == redact_text("plain text here")


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

_NAMES = ["api_key", "Authorization", "x-goog-api-key", "X-Api-Key", "refresh_token", "Cookie"]
_FRAGMENTS = st.sampled_from(
    [
        "Bearer ",
        "bearer\t",
        "Authorization: ",
        "authorization=",
        "api_key=",
        "'x-api-key': '",
        MARKER,
        "[",
        "]",
        " ",
        "\n",
        '"',
        "'",
        ":",
        "&",
        "abcdefghij",
        "sk-0123456789",
        "Basic ",
    ]
)
text_st = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=6)), max_size=12).map("".join)


@given(
    secret=secrets_st,
    before=st.text(max_size=20),
    after=st.text(max_size=20),
    form=st.sampled_from(["raw", "url", "json", "bearer", "header"]),
)
def test_a_known_secret_never_survives_redaction(
    secret: str, before: str, after: str, form: str
) -> None:
    """Wherever and however a known secret sits in text, redaction removes it."""
    shown = {
        "raw": secret,
        "url": quote(secret, safe=""),
        "json": json.dumps(secret),
        "bearer": f"Bearer {secret}",
        "header": f"{{'authorization': 'Bearer {secret}'}}",
    }[form]
    with secrets_scope(SimpleNamespace(api_key=secret)):
        redacted = redact_text(before + shown + after)
    assert secret not in redacted
    assert quote(secret, safe="") not in redacted


@given(
    secret=secrets_st,
    name=st.sampled_from(_NAMES),
    depth=st.integers(min_value=0, max_value=4),
)
def test_a_credential_named_value_is_masked_at_every_depth(
    secret: str, name: str, depth: int
) -> None:
    """A secret under a credential-like name is masked at any nesting depth, without a scope."""
    data: Any = {name: secret}
    for level in range(depth):
        data = {f"level{level}": [data]}

    assert secret not in json.dumps(redact_data(data))
    assert secret not in json.dumps(redact_params({"extra_body": data}))


@given(text=text_st)
def test_redaction_is_idempotent(text: str) -> None:
    """Redacting redacted text changes nothing."""
    with secrets_scope(SimpleNamespace(api_key="sk-0123456789")):
        once = redact_text(text)
        assert once == redact_text(once)


@given(text=st.text(max_size=7))
def test_short_text_is_returned_unchanged(text: str) -> None:
    """Text shorter than 8 characters cannot hold a secret or a credential shape."""
    with secrets_scope(SimpleNamespace(api_key="sk-0123456789")):
        assert text == redact_text(text)


def test_a_client_the_redactor_has_seen_can_still_be_collected() -> None:
    """The per-client cache of secret forms holds clients weakly: remembering a client's key
    must not keep the client (and its connection pool) alive after the caller drops it."""
    import gc
    import weakref

    from healjson._core import redact

    # Every object alive now (the suite's modules, garbage other tests left behind) is left
    # out of the collection below, which then walks only what this test makes: milliseconds,
    # where a full collection of the suite's heap takes a second or more. Leaving objects out
    # can only keep the client alive (make the test fail), never free it.
    gc.freeze()
    try:
        client = openai.OpenAI(
            api_key="sk-collectable-0123456789", base_url="http://127.0.0.1:9/v1"
        )
        with redact.secrets_scope(client, {"model": "m"}):
            assert redact.MARKER == redact.redact_text("sk-collectable-0123456789")
        client.close()  # its connection pool, whether or not the client is then collected
        gone = weakref.ref(client)
        del client
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()


def test_params_redacted_with_a_client_match_the_clients_scope(
    closing: contextlib.ExitStack,
) -> None:
    """`redact_params(params, client=...)` (the adapters' first attempt, outside any scope) gives
    what the same call gives inside `secrets_scope(client, params)`, for flat and nested params."""
    from healjson._core import redact

    key = "sk-held-by-the-client-0123456789"
    client = closing.enter_context(openai.OpenAI(api_key=key, base_url="http://127.0.0.1:9/v1"))
    cases: list[dict[str, Any]] = [
        {"model": "gpt-4o-mini", "user": f"echo {key}"},
        {"model": "m", "extra_headers": {"X-Api-Key": "sk-per-call-secret-999"}, "note": key},
        {"model": key, "temperature": 0.5, "n": 1, "stream": False, "stop": None},
    ]
    for params in cases:
        with redact.secrets_scope(client, params):
            scoped = redact.redact_params(params)
        direct = redact.redact_params(params, client=client)
        assert scoped == direct
        assert key not in json.dumps(direct)
    # inside another scope the outer secrets count too
    with redact.secrets_scope(None, {"api_key": "sk-outer-secret-abcdef"}):
        mixed = redact.redact_params({"a": "sk-outer-secret-abcdef", "b": key}, client=client)
    assert {"a": redact.MARKER, "b": redact.MARKER} == mixed


def test_a_remembered_clean_value_is_checked_again_for_another_key(
    closing: contextlib.ExitStack,
) -> None:
    """Short values are remembered as redacted against one client's secrets: a value clean for
    one client is still redacted for a client whose key it contains, and after a key change."""
    from healjson._core import redact

    value = "sk-rotating-value-0123456789"
    first = closing.enter_context(
        openai.OpenAI(api_key="sk-first-key-aaaaaaaaaa", base_url="http://127.0.0.1:9/v1")
    )
    assert {"user": value} == redact.redact_params({"user": value}, client=first)
    second = closing.enter_context(openai.OpenAI(api_key=value, base_url="http://127.0.0.1:9/v1"))
    assert {"user": redact.MARKER} == redact.redact_params({"user": value}, client=second)
    first.api_key = value  # rotated to the very value: it is a secret now
    assert {"user": redact.MARKER} == redact.redact_params({"user": value}, client=first)


# ---------------------------------------------------------------------------------------------
# A key the model echoes (a proxy reflecting headers, a prompt-injected reply): on every path,
# in no persisted or printed form; the caller's value itself is not altered
# ---------------------------------------------------------------------------------------------

_ECHO_FORMS = ("raw", "escaped", "bearer")


def _echo(key: str, form: str) -> str:
    """The key as the model writes it inside a JSON string (`escaped`: its first character as a
    JSON `\\u` escape, so the raw text does not show it but the parsed value does)."""
    if form == "escaped":
        return f"echo \\u{ord(key[0]):04x}{key[1:]}"
    if form == "bearer":
        return f"Authorization: Bearer {key}"
    return f"the key is {key} ok"


def _good(key: str, form: str) -> str:
    return f'{{"urgency": 3, "summary": "{_echo(key, form)}"}}'


def _bad(key: str, form: str) -> str:
    return f'{{"urgency": "{_echo(key, form)}", "summary": "{_echo(key, form)}"}}'


def _scripts(key: str, form: str) -> dict[str, list[str]]:
    return {
        "healed": [_good(key, form)],
        "repaired": [_bad(key, form), _good(key, form)],
        "degraded": [_bad(key, form), _bad(key, form)],
    }


def _printed(outcome: Any, logs: Any = ()) -> dict[str, str]:
    """Every persisted or printed form of an outcome (the caller's value itself aside)."""
    shown = {
        "repr": repr(outcome),
        "to_dict": json.dumps(outcome.to_dict()),
        "trace_json": outcome.trace("json"),
        "trace_markdown": outcome.trace("markdown"),
        "events": json.dumps(list(logs), default=str),
        "batch_row": json.dumps(outcome_row(Job(id=1, line=1), outcome, full=True)),
        "ray_row": json.dumps(_ray_row(outcome, full=True)),
    }
    if not outcome.ok:
        shown["errors"] = repr(outcome.errors)
        shown["unwrap"] = str(DegradedError(outcome))
    return shown


def _ray_row(outcome: Any, *, full: bool) -> dict[str, Any]:
    from healjson._core.target.target import target_for
    from healjson._ray_rows import outcome_row as ray_outcome_row

    return ray_outcome_row(outcome, target_for(Ticket), full=full)


def _assert_hidden(key: str, shown: dict[str, str]) -> None:
    for where, text in shown.items():
        assert key not in text, f"{where} shows the key"
        assert key[: len(key) // 2 + 4] not in text, f"{where} shows part of the key"


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    key=secrets_st,
    form=st.sampled_from(_ECHO_FORMS),
    script=st.sampled_from(["healed", "repaired", "degraded"]),
    mode=st.sampled_from(["sync", "async"]),
)
def test_a_key_the_model_echoes_through_a_wrapped_client_is_in_no_output(
    key: str, form: str, script: str, mode: Mode
) -> None:
    """wrap(OpenAI(api_key=key)) over real HTTP; the model's replies carry the key: the value
    holds it (unaltered), and no repr, record, trace, event, row or error shows it."""
    from healjson.testing import ScriptedServer

    with (
        ScriptedServer(_scripts(key, form)[script]) as server,
        capture_events(include_content=True) as logs,
    ):
        options: dict[str, Any] = {"base_url": server.base_url, "api_key": key, "max_retries": 0}
        policy = healjson.HealPolicy(max_attempts=2)
        call = {"model": "m", "messages": USER, "response_model": Ticket}
        if mode == "sync":
            http = openai.DefaultHttpxClient(verify=_SSL)
            with openai.OpenAI(**options, http_client=http) as sdk:
                outcome = healjson.wrap(sdk, policy=policy).chat.completions.create(**call)
        else:

            async def main() -> Any:
                http = openai.DefaultAsyncHttpxClient(verify=_SSL)
                async with openai.AsyncOpenAI(**options, http_client=http) as sdk:
                    wrapped = healjson.wrap(sdk, policy=policy)
                    return await wrapped.chat.completions.create(**call)

            outcome = asyncio.run(main())

    assert outcome.ok is (script != "degraded")
    if outcome.ok:
        assert key in outcome.value.summary  # the caller gets the real value
    stored = {"raw_text": outcome.raw_text or "", "attempts": repr(outcome.attempts)}
    _assert_hidden(key, {**_printed(outcome, logs), **stored})  # stored model text: redacted


def _quoting(key: str, where: str) -> list[dict[str, Any]]:
    """The caller's messages, holding the client's key in the place `where` names."""
    if where == "part key":  # a key of a content part's mapping
        return [{"role": "user", "content": [{"type": "text", "text": "Triage:", key: 1}]}]
    if where == "system":
        return [{"role": "system", "content": f"Use key {key} for lookups."}, *USER]
    if where == "parts":
        parts = [{"type": "text", "text": "Triage:"}, {"type": "text", "text": f"key={key}"}]
        return [{"role": "user", "content": parts}]
    return [{"role": "user", "content": f"Triage: the parcel is lost. My key is {key}"}]


@settings(max_examples=10, deadline=None, derandomize=True)
@given(
    key=secrets_st,
    where=st.sampled_from(["system", "user", "parts", "part key"]),
    script=st.sampled_from(["healed", "repaired", "degraded"]),
)
def test_the_clients_key_quoted_in_the_callers_messages_is_in_no_output(
    key: str, where: str, script: str
) -> None:
    """wrap(OpenAI(api_key=key)) over real HTTP, the caller's own messages quoting the key (a
    system prompt, a user turn, a content part): the request as stored, every repr, record,
    trace and row show no key, the quick first answer included."""
    from healjson.testing import ScriptedServer

    replies = {"healed": [_good("x", "raw")], "repaired": [_bad("x", "raw"), _good("x", "raw")]}
    script_replies = replies.get(script, [_bad("x", "raw"), _bad("x", "raw")])
    with ScriptedServer(script_replies) as server:
        options: dict[str, Any] = {"base_url": server.base_url, "api_key": key, "max_retries": 0}
        with openai.OpenAI(**options) as sdk:
            wrapped = healjson.wrap(sdk, policy=healjson.HealPolicy(max_attempts=2))
            outcome = wrapped.chat.completions.create(
                model="m", messages=_quoting(key, where), response_model=Ticket
            )
        assert key in json.dumps(server.requests[0].body)  # the provider got the caller's text
    assert outcome.ok is (script != "degraded")
    stored = {"messages": json.dumps(outcome.attempts[0].messages)}
    _assert_hidden(key, {**_printed(outcome), **stored})


@pytest.mark.parametrize("form", _ECHO_FORMS)
@pytest.mark.parametrize("script", ["healed", "repaired", "degraded"])
def test_a_healer_with_a_key_bearing_client_hides_the_echoed_key(form: str, script: str) -> None:
    """`Healer` run for a client that holds the key (the adapters' entry), over a scripted
    model: the same."""
    key = "sk-healer-held-KEY-0123456789"
    client = SimpleNamespace(api_key=key)
    healer = Healer(Ticket, policy=healjson.HealPolicy(max_attempts=2))
    model = ScriptedModel(_scripts(key, form)[script])

    outcome = drive_sync(healer.start(USER).flow, model, secrets_scope(client, {}))

    assert outcome.ok is (script != "degraded")
    stored = {"raw_text": outcome.raw_text or "", "attempts": repr(outcome.attempts)}
    _assert_hidden(key, {**_printed(outcome), **stored})  # stored model text: redacted


@pytest.mark.parametrize("form", _ECHO_FORMS)
def test_validate_hides_a_key_its_scope_knows_and_shapes_without_one(form: str) -> None:
    """`validate` inside a scope that knows the key hides it; without one, a credential shape
    in the value (`Authorization: Bearer ...`) is still redacted in every rendering."""
    key = "sk-validate-KEY-0123456789"
    with secrets_scope(SimpleNamespace(api_key=key)):
        outcome = healjson.validate(_good(key, form), Ticket)
    assert key in outcome.unwrap().summary
    _assert_hidden(key, _printed(outcome))

    bare = healjson.validate(_good(key, "bearer"), Ticket)
    assert key in bare.unwrap().summary
    _assert_hidden(key, _printed(bare))


def _numbered(key: str) -> Any:
    """A scripted batch endpoint: ticket 1 answers with the key in a valid value, ticket 2 with
    it in an invalid one (it degrades), whatever the round."""
    from healjson.testing import ScriptedReply

    def answer(body: dict[str, Any], *_: Any) -> Any:
        body = body.get("body", body)
        text = json.dumps(body.get("messages", body))
        summary = f"Customer pasted {key} in the chat"
        ticket = {"urgency": 2, "category": "logistics", "summary": summary}
        ticket["orderId"] = "ORD-000001" if "ticket 1" in text else f"not an order id {key}"
        return ScriptedReply(content=json.dumps(ticket))

    return answer


def test_healjson_batch_rows_and_trace_hide_a_key_the_model_echoes(tmp_path: Any) -> None:
    """`healjson batch --full` rows (a healed value holding the key cannot be written as it is:
    its row degrades with `api_error`) and `healjson trace` on them show no echoed key."""
    from typer.testing import CliRunner

    from healjson._cli.app import app
    from healjson.testing import ScriptedServer

    key = "sk-batch-cli-KEY-0123456789"
    pack = str(CLI_FIXTURES / "ticket_pack.py")
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "t1", "prompt": "ticket 1"}\n{"id": "t2", "prompt": "ticket 2"}\n')
    out = tmp_path / "out.jsonl"
    with ScriptedServer([_numbered(key)], repeat=True) as server:
        args = ["batch", str(source), "--out", str(out), "--model", "m", "--contracts", pack]
        args += ["--base-url", server.base_url, "--api-key", key, "--full", "--no-progress"]
        result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert result.exit_code == 0, result.output
    written = out.read_text(encoding="utf-8")
    rows = {row["id"]: row for row in map(json.loads, written.splitlines())}
    assert rows["t1"]["ok"] is False  # a value the redactor would change is never written ok
    assert "api_error" == rows["t1"]["reason"]
    assert "redaction" == rows["t1"]["errors"][0]["source"]
    assert rows["t2"]["ok"] is False
    assert "healed 0, degraded 2" in result.output  # the totals count each row as it says
    traced = CliRunner().invoke(app, ["trace", str(out), "--all"])
    assert traced.exit_code == 0, traced.output
    _assert_hidden(key, {"rows": written, "trace": traced.output, "stdout": result.output})


def test_the_batch_api_ledger_and_rows_hide_a_key_the_model_echoes(tmp_path: Any) -> None:
    """`run_batch_api`: the SQLite ledger (results as received), the output rows and the trace
    of a full row hold no echoed key."""
    import sqlite3

    from healjson.batch_api import default_ledger, run_batch_api
    from healjson.testing import ScriptedServer

    key = "sk-batch-api-KEY-0123456789"
    sys_path = CLI_FIXTURES
    __import__("sys").path.insert(0, str(sys_path))
    from ticket_pack import Ticket as PackTicket

    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "t1", "prompt": "ticket 1"}\n{"id": "t2", "prompt": "ticket 2"}\n')
    out = tmp_path / "out.jsonl"
    answer = _numbered(key)
    with (
        ScriptedServer(batch_replies=lambda custom_id, body: answer(body)) as server,
        openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0) as client,
    ):
        run_batch_api(
            source,
            out,
            client=client,
            model="m",
            response_model=PackTicket,
            policy=healjson.HealPolicy(max_attempts=2),
            full=True,
            poll_interval_s=0,
        )
    written = out.read_text(encoding="utf-8")
    rows = {row["id"]: row for row in map(json.loads, written.splitlines())}
    assert rows["t1"]["ok"] is False  # a value the redactor would change is never written ok
    assert "api_error" == rows["t1"]["reason"]
    assert rows["t2"]["ok"] is False
    with sqlite3.connect(default_ledger(out)) as db:
        ledger = "\n".join(db.iterdump())
    assert "Customer pasted" in ledger  # the results are stored
    _assert_hidden(key, {"rows": written, "ledger": ledger})


def test_ray_heal_batch_columns_hide_a_key_the_model_echoes() -> None:
    """`healjson.ray.HealBatch` (called directly, no Ray start): the `errors` and `outcome`
    columns hold no echoed key, and a value holding it is not written."""
    pytest.importorskip("ray")
    import pandas as pd

    from healjson.ray import HealBatch
    from healjson.testing import ScriptedServer

    key = "sk-ray-column-KEY-0123456789"
    replies = {"1": _good(key, "raw"), "2": _bad(key, "raw")}

    def answer(request: dict[str, Any]) -> str:
        text = json.dumps(request["messages"])
        return replies["1" if "row 1" in text else "2"]

    with ScriptedServer([answer], repeat=True) as server:

        def factory() -> openai.AsyncOpenAI:
            return openai.AsyncOpenAI(api_key=key, base_url=server.base_url, max_retries=0)

        policy = healjson.HealPolicy(max_attempts=1)
        with HealBatch(
            factory, model="m", response_model=Ticket, include_outcome=True, policy=policy
        ) as heal:
            table = heal(pd.DataFrame({"id": [1, 2], "prompt": ["row 1", "row 2"]}))
    columns = table.to_pydict()
    # a healed value holding the key is never written altered as `ok`: the row degrades
    assert columns["ok"] == [False, False]
    assert (columns["reason"][0], columns["value"][0]) == ("api_error", None)
    assert "redaction" in columns["errors"][0]
    _assert_hidden(key, {name: json.dumps(columns[name]) for name in columns})


def test_the_callers_own_objects_are_kept_whole_and_rendered_redacted() -> None:
    """A contract's violation value and a fallback are the caller's objects: a run that knows
    the key keeps them as they are (the very objects) and redacts only their renderings."""
    import dataclasses

    from healjson import Violation, contract

    key = "sk-callers-object-KEY-0123456789"

    @dataclasses.dataclass(frozen=True)
    class Seen:
        note: str

        def __post_init__(self) -> None:  # a copy through its __init__ would run this again
            if not self.note:
                raise ValueError("note")

    seen = Seen(f"the model said {key}")
    fallback = {"default": f"keep {key}"}

    @contract(fields=("summary",))
    def never(ticket: Ticket) -> Violation | None:
        return Violation("never valid", value=seen)

    healer = Healer(Ticket, contracts=[never], fallback=fallback)
    model = ScriptedModel([_good(key, "raw")] * 3)
    scope = secrets_scope(SimpleNamespace(api_key=key), {})
    outcome = drive_sync(healer.start(USER).flow, model, scope)

    assert isinstance(outcome, Degraded)
    assert outcome.fallback is fallback
    assert outcome.errors[0].value is seen
    shown = _printed(outcome)
    del shown["errors"]  # `repr(outcome.errors)` prints the caller's object as it is, on its own
    _assert_hidden(key, {**shown, "raw_text": outcome.raw_text or ""})
    assert MARKER in (outcome.attempts[0].raw_text or "")  # the model's text: stored redacted


_PARAM_VALUES = st.one_of(
    st.none(),
    st.integers(),
    st.booleans(),
    st.sampled_from(["m", "gpt-4o-mini", "sk-held-by-the-client-0123456789", "Bearer abcdefghij"]),
    text_st,
    st.lists(text_st, max_size=2),
    st.dictionaries(st.sampled_from(["X-Api-Key", "note", "token"]), text_st, max_size=2),
)


@given(
    params=st.dictionaries(
        st.sampled_from(["model", "user", "api_key", "max_tokens", "note", "extra_body"]),
        _PARAM_VALUES,
        max_size=5,
    ),
    scoped=st.booleans(),
    outer=st.booleans(),
    own=st.booleans(),
)
def test_params_redacted_with_the_scopes_forms_given_match_the_scopes_own(
    params: dict[str, Any], scoped: bool, outer: bool, own: bool
) -> None:
    """`redact_params(params, forms=run_secrets())` (a run that knows its forms already) gives
    exactly what `redact_params(params)` gives, and `run_params(params)` both in one step, in a
    client's scope (with the call's own params or others, inside another scope or not) or in
    none."""
    from healjson._core import redact

    client = SimpleNamespace(api_key="sk-held-by-the-client-0123456789")
    with contextlib.ExitStack() as stack:
        if outer:
            other = SimpleNamespace(api_key="sk-outer-scope-secret-abcdefgh")
            stack.enter_context(redact.secrets_scope(other, {}))
        if scoped:
            stack.enter_context(redact.secrets_scope(client, params if own else dict(params)))
        forms = redact.run_secrets()
        given = redact.redact_params(params, forms=forms)
        assert redact.redact_params(params) == given
        assert (forms, given) == redact.run_params(params)
    if scoped:
        assert "sk-held-by-the-client-0123456789" not in json.dumps(given, default=str)
