"""Every place a wrapped SDK's HTTP client holds a credential is a credential place: its default
query (`params=`), its `auth=` (a `(user, password)` pair, `BasicAuth`, `DigestAuth`) and the
password in its base URL's userinfo, besides its API key and default headers. A gateway's error
body or a model's answer echoing one of them leaves it in no record: not the outcome's `repr`,
`to_dict()`, traces or errors, not the events. Each provider's SDK (openai, anthropic,
google-genai, ollama) over real HTTP against `ScriptedServer`.

Ollama's SDK drops a host's userinfo (it never sends it, nor keeps it): there is no password in
its client to know, so it has no userinfo case here."""

from __future__ import annotations

import base64
import json
from typing import Any

import anthropic
import httpx
import httpx2
import ollama
import openai
import pytest
from google import genai
from google.genai import types as gt
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import HealPolicy
from healjson._core.redact import known_secrets, secrets_scope
from healjson.testing import ScriptedReply, ScriptedServer, capture_events
from pinned import pinned
from sdk_calls import close_gemini

ONE = HealPolicy(max_attempts=1)
SAID = [{"role": "user", "content": "Ann is 31"}]
USER = "alice"
# a password, a default query's key or token: the characters a URL's userinfo takes unescaped
credentials_st = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9\-_.~]{9,29}", fullmatch=True)


class Person(BaseModel):
    name: str
    age: int


def _userinfo(url: str, secret: str) -> str:
    return url.replace("http://", f"http://{USER}:{secret}@", 1)


def _client(provider: str, server: ScriptedServer, place: str, secret: str) -> Any:
    """`provider`'s SDK client, holding `secret` in `place` (`query`: the HTTP client's default
    query; `auth`: its `auth=` pair; `digest`: a `DigestAuth`; `userinfo`: the base URL's)."""
    auth: Any = None
    params: dict[str, str] = {}
    if place == "query":
        params = {"api_key": secret}
    elif place == "auth":
        auth = (USER, secret)
    if provider == "gemini":
        base = server.gemini_base_url
        base = _userinfo(base, secret) if place == "userinfo" else base
        args: dict[str, Any] = {"params": params}
        if place == "digest":
            args["auth"] = httpx2.DigestAuth(USER, secret)
        elif auth is not None:
            args["auth"] = auth
        options = gt.HttpOptions(base_url=base, timeout=10_000, client_args=args)
        return genai.Client(api_key="gemini-test-key", http_options=options)
    if provider == "ollama":
        digest = httpx.DigestAuth(USER, secret) if place == "digest" else None
        return ollama.Client(host=server.ollama_host, params=params, auth=auth or digest)
    if provider == "anthropic":
        auth = httpx2.DigestAuth(USER, secret) if place == "digest" else auth
        http2 = httpx2.Client(params=params, auth=auth)
        base = server.anthropic_base_url
        base = _userinfo(base, secret) if place == "userinfo" else base
        return anthropic.Anthropic(base_url=base, api_key="k", max_retries=0, http_client=http2)
    auth = httpx.DigestAuth(USER, secret) if place == "digest" else auth
    http = httpx.Client(params=params, auth=auth)
    base = _userinfo(server.base_url, secret) if place == "userinfo" else server.base_url
    return openai.OpenAI(base_url=base, api_key="k", max_retries=0, http_client=http)


def _ask(provider: str, client: Any) -> Any:
    """One healed call of the wrapped `client`: its outcome."""
    wrapped = healjson.wrap(client)
    keywords: dict[str, Any] = {"response_model": Person, "policy": ONE}
    if provider == "gemini":
        return wrapped.models.generate_content(model="g", contents="Ann is 31", **keywords)
    if provider == "ollama":
        return wrapped.chat(model="llama3.2", messages=SAID, **keywords)
    if provider == "anthropic":
        return wrapped.messages.create(model="c", max_tokens=64, messages=SAID, **keywords)
    return wrapped.chat.completions.create(model="m", messages=SAID, **keywords)


def _close(provider: str, client: Any) -> None:
    if provider == "gemini":
        close_gemini(client)
    else:
        client.close()


def _run(server: ScriptedServer, provider: str, place: str, secret: str, reply: Any) -> Any:
    """The outcome of one call whose reply is `reply`, and every record of it as text."""
    server.extend([reply])
    client = _client(provider, server, place, secret)
    try:
        with capture_events(include_content=True) as logs:
            outcome = _ask(provider, client)
    finally:
        _close(provider, client)
    shown = "\n".join(
        [
            repr(outcome),
            json.dumps(outcome.to_dict(), default=str),
            outcome.trace(),
            outcome.trace("json"),
            repr(getattr(outcome, "errors", ())),
            repr(outcome.attempts),
            json.dumps(list(logs), default=str),
        ]
    )
    return outcome, shown


PLACES = [
    (provider, place)
    for provider in ("openai", "anthropic", "gemini", "ollama")
    for place in ("query", "auth", "digest", "userinfo")
    if (provider, place) != ("ollama", "userinfo")  # the SDK keeps no userinfo
]


@pytest.mark.parametrize(("provider", "place"), PLACES, ids=[f"{p}-{w}" for p, w in PLACES])
def test_a_credential_an_error_body_echoes_is_in_no_record(
    shared_server: ScriptedServer, provider: str, place: str
) -> None:
    """A gateway's 401 body echoing the client's query key, auth password or URL password
    leaves it in no record of the outcome nor in the events."""
    secret = f"pw-{provider}-{place}-Zx81Kq03"
    echo = ScriptedReply(status=401, content=f"denied: {USER} with {secret} at /x?k={secret}")

    outcome, shown = _run(shared_server, provider, place, secret, echo)

    assert not outcome.ok
    assert "[redacted]" in str(outcome.errors[0].value)  # the echo arrived, redacted
    assert secret not in shown


@pytest.mark.parametrize(("provider", "place"), PLACES, ids=[f"{p}-{w}" for p, w in PLACES])
def test_a_credential_the_model_echoes_is_kept_in_the_value_alone(
    shared_server: ScriptedServer, provider: str, place: str
) -> None:
    """A model answer echoing the client's query key, auth password or URL password reaches
    the caller's value unaltered and no record of the outcome."""
    secret = f"pw-{provider}-{place}-Qm55Lp20"
    answer = ScriptedReply(content=json.dumps({"name": secret, "age": 31}))

    outcome, shown = _run(shared_server, provider, place, secret, answer)

    assert outcome.ok, outcome
    assert secret == outcome.value.name
    assert secret not in shown


@pinned(max_examples=20)
@given(
    secret=credentials_st,
    place=st.sampled_from(["query", "auth", "digest"]),
    echo=st.sampled_from(["error", "answer"]),
)
def test_an_ollama_clients_generated_credentials_are_in_no_record(
    secret: str, place: str, echo: str
) -> None:
    """For any credential in an Ollama client's default query or `auth=`, echoed by an error
    body or the model's answer, no record shows it (the caller's value keeps it)."""
    if echo == "error":
        echoed = f"gateway: GET /api/chat?api_key={secret} ({secret})"
        reply = ScriptedReply(status=502, content=echoed)
    else:
        reply = ScriptedReply(content=json.dumps({"name": secret, "age": 31}))
    with ScriptedServer() as server:
        outcome, shown = _run(server, "ollama", place, secret, reply)

    assert outcome.ok is (echo == "answer")
    if outcome.ok:
        assert secret == outcome.value.name
    assert secret not in shown


def test_a_basic_authorization_header_yields_its_password() -> None:
    """A default `Authorization: Basic ...` header makes its decoded password a known secret
    too, not only the header's encoded token."""
    token = base64.b64encode(b"alice:pw-basic-header-0123").decode()
    client = ollama.Client(host="http://127.0.0.1:9", headers={"Authorization": f"Basic {token}"})
    try:
        with secrets_scope(client):
            known = known_secrets()
    finally:
        client.close()
    assert {"pw-basic-header-0123", token} <= known


def test_a_base_url_without_userinfo_adds_no_secret() -> None:
    """A client's plain base URL and a query value under an ordinary name are no secrets: only
    credentials count, never the URL or the host."""
    http = httpx.Client(params={"region": "eu-west-0123"})
    base = "http://127.0.0.1:9/v1"
    client = openai.OpenAI(base_url=base, api_key="sk-0123456789", http_client=http)
    try:
        with secrets_scope(client):
            known = known_secrets()
    finally:
        client.close()
    assert "sk-0123456789" in known
    assert not {form for form in known if "127.0.0.1" in form or "eu-west" in form}
