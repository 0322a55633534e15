"""A streamed answer that ended early keeps as its partial data only what the model finished.

The rule is L1's for a reply cut by the token limit (`healjson.parse(text, finish_reason=
"length")`): complete members only, never a string, number or literal the end may have cut
short. A stream cut by a dropped connection or an error event keeps, as the Degraded outcome's
partial, the same data as that text cut by the token limit; so does the session's data a stream
stopped early by an unknown ending or by healjson itself is judged with.

And whatever partial an outcome keeps is sealed like the rest of it: a secret cut at the end of
a string (a stream that failed inside an echoed key) shows in no rendering of the outcome
(`repr`, both traces, `to_dict`), nor in the `repr` of a snapshot handed out during the stream.

The real openai, anthropic and google-genai SDKs over real HTTP against the scripted server,
sync and async.
"""

from __future__ import annotations

import asyncio
import json
import string
from collections.abc import Iterator
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, HealPolicy, Reason
from healjson._core.outcome.seal import seal
from healjson._core.redact import MARKER, MIN_SECRET_CHARS, redact_with
from healjson._core.stream.session import StreamSession
from healjson._core.target.target import target_for
from healjson._core.wire.delta import Delta
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned
from sdk_calls import TLS

USER = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
GOOD = '{"name": "Ann", "age": 31}'
ONE = HealPolicy(max_attempts=1)
OPENAI_KEY = "sk-proj-SECREToai1234567890abcd"
ANTHROPIC_KEY = "sk-ant-api03-SECRETabcdef1234567890"
GEMINI_KEY = "AIzaSyD-SECRETgoogle1234567890"
PATHS = [
    ("openai", "sync"),
    ("openai", "async"),
    ("anthropic", "sync"),
    ("anthropic", "async"),
    ("gemini", "sync"),
    ("gemini", "async"),
]
ENDINGS = ["cut_after_chars", "stream_error_after_chars"]


class Person(BaseModel):
    name: str
    age: int


# -- the providers' streams -------------------------------------------------------------------


def streamed(server: ScriptedServer, provider: str, mode: str, key: str = "k") -> Any:
    """`(outcome, snapshots)` of one healed stream of `Person` through the provider's real SDK
    (api key `key`), one attempt."""
    if provider == "openai":
        return _openai(server, mode, key, Person)
    if provider == "anthropic":
        return _anthropic(server, mode, key)
    return _gemini(server, mode, key)


def _openai(server: ScriptedServer, mode: str, key: str, target: Any) -> Any:
    params: dict[str, Any] = {
        "model": "m",
        "messages": USER,
        "response_model": target,
        "stream": True,
        "policy": ONE,
    }
    if mode == "sync":
        http = openai.DefaultHttpxClient(verify=TLS)
        with openai.OpenAI(
            base_url=server.base_url, api_key=key, max_retries=0, http_client=http
        ) as sdk:
            stream = healjson.wrap(sdk).chat.completions.create(**params)
            snapshots = list(stream)
            return stream.outcome, snapshots

    async def main() -> Any:
        http = openai.DefaultAsyncHttpxClient(verify=TLS)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key=key, max_retries=0, http_client=http
        ) as sdk:
            stream = healjson.wrap(sdk).chat.completions.create(**params)
            if asyncio.iscoroutine(stream):
                stream = await stream
            snapshots = [snapshot async for snapshot in stream]
            return stream.outcome, snapshots

    return asyncio.run(main())


def _anthropic(server: ScriptedServer, mode: str, key: str) -> Any:
    params: dict[str, Any] = {
        "model": "m",
        "max_tokens": 100,
        "messages": USER,
        "response_model": Person,
        "policy": ONE,
    }
    base = server.anthropic_base_url
    if mode == "sync":
        http = anthropic.DefaultHttpxClient(verify=TLS)
        with anthropic.Anthropic(
            base_url=base, api_key=key, max_retries=0, http_client=http
        ) as sdk:
            stream = healjson.wrap(sdk).messages.create(stream=True, **params)
            snapshots = list(stream)
            return stream.outcome, snapshots

    async def main() -> Any:
        http = anthropic.DefaultAsyncHttpxClient(verify=TLS)
        async with anthropic.AsyncAnthropic(
            base_url=base, api_key=key, max_retries=0, http_client=http
        ) as sdk:
            async with healjson.wrap(sdk).messages.stream(**params) as stream:
                snapshots = [snapshot async for snapshot in stream]
            return stream.outcome, snapshots

    return asyncio.run(main())


def _gemini_client(server: ScriptedServer, key: str, session: Any = None) -> Any:
    options = genai_types.HttpOptions(
        base_url=server.gemini_base_url,
        timeout=10_000,
        aiohttp_client=session,
        client_args={"verify": TLS},
        async_client_args={"verify": TLS, "ssl": TLS},
    )
    return genai.Client(api_key=key, http_options=options)


def _gemini(server: ScriptedServer, mode: str, key: str) -> Any:
    params: dict[str, Any] = {
        "model": "g",
        "contents": "Extract the person.",
        "response_model": Person,
        "policy": ONE,
    }
    if mode == "sync":
        client = _gemini_client(server, key)
        try:
            stream = healjson.wrap(client).models.generate_content_stream(**params)
            snapshots = list(stream)
            return stream.outcome, snapshots
        finally:
            client.close()
            asyncio.run(client.aio.aclose())

    async def main() -> Any:
        # a plain session: google-genai's own subclass draws a DeprecationWarning
        async with aiohttp.ClientSession() as session:
            client = _gemini_client(server, key, session)
            try:
                stream = healjson.wrap(client).aio.models.generate_content_stream(**params)
                snapshots = [snapshot async for snapshot in stream]
                return stream.outcome, snapshots
            finally:
                await client.aio.aclose()
                client.close()

    return asyncio.run(main())


def ended(ending: str, at: int) -> dict[str, Any]:
    """The `ScriptedReply` option that ends its stream at `at` characters the `ending` way."""
    return {ending: at}


def token_cut(text: str, target: Any = Person) -> Any:
    """What L1 keeps of `text` read as a reply cut by the token limit (None: nothing)."""
    return healjson.parse(text, target, finish_reason="length").value


# -- the partial data: what the model finished ------------------------------------------------


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize(("provider", "mode"), PATHS)
def test_a_stream_failed_inside_a_string_keeps_no_piece_of_it(
    provider: str, mode: str, ending: str
) -> None:
    """A stream cut or failed inside a string value keeps the partial the token limit keeps for
    that text (`{}`), never the unfinished string, in every provider's SDK, sync and async."""
    reply = ScriptedReply(content=GOOD, chunk_chars=3, **ended(ending, 12))
    with ScriptedServer([reply]) as server:
        outcome, snapshots = streamed(server, provider, mode)

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert '{"name": "An' == outcome.raw_text
    assert {} == outcome.partial == token_cut('{"name": "An')
    assert snapshots  # the snapshots still show the string as it arrived


@pytest.mark.parametrize(
    ("at", "kept"),
    [(12, {}), (24, {"name": "Ann"})],  # `{"name": "An`, `{"name": "Ann", "age": 3`
    ids=["in-a-string", "in-a-number"],
)
@pytest.mark.parametrize(("provider", "mode"), PATHS)
def test_the_token_limit_the_cut_and_the_error_event_keep_the_same_partial(
    provider: str, mode: str, at: int, kept: Any
) -> None:
    """The same text ended by the token limit, a dropped connection and an error event gives
    one partial: the finished members, never the `An` of `Ann` nor the `3` of `31`."""
    replies = [
        ScriptedReply(content=GOOD[:at], finish_reason="length", chunk_chars=3),
        ScriptedReply(content=GOOD, chunk_chars=3, cut_after_chars=at),
        ScriptedReply(content=GOOD, chunk_chars=3, stream_error_after_chars=at),
    ]
    partials = []
    for reply in replies:
        with ScriptedServer([reply]) as server:
            outcome, _ = streamed(server, provider, mode)
        assert isinstance(outcome, Degraded)
        partials.append(outcome.partial)

    assert [kept] * 3 == partials


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ('{"age": 31, "name": "An', {"age": 31}),  # an open string
        ('{"name": "Ann", "age": 3', {"name": "Ann"}),  # a number the end may have cut
        ('{"name": "Ann", "ag', {"name": "Ann"}),  # an open key
        ('{"name": "Ann", "tags": ["a", "b', {"name": "Ann", "tags": ["a"]}),  # in a list
        ('Sure: {"name": "Ann", "age": 31, "x": tr', {"name": "Ann", "age": 31}),  # a literal
        ('{"name": "An\\u00', {}),  # an escape still arriving
    ],
    ids=["string", "number", "key", "list", "literal", "escape"],
)
def test_a_session_keeps_what_the_token_limit_keeps_of_its_text(text: str, kept: Any) -> None:
    """The data a streamed answer that ended early keeps (`StreamSession.data`: a cut, a
    failure, an unknown ending, a stop) is L1's for its text cut by the token limit."""
    session = StreamSession(target_for(Person))
    for at in range(0, len(text), 3):
        session.feed(Delta(text=text[at : at + 3]))

    assert kept == session.data == token_cut(text)


# -- the property: any object, any cut --------------------------------------------------------

LETTERS = "abcdefg"  # no credential word (`token`, `secret`, ...) can be spelled: none redacted
KEYS = st.text(alphabet=LETTERS, min_size=1, max_size=5)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**6), max_value=10**6)
    | st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)
    | st.text(alphabet=LETTERS + ' AB"\\\né', max_size=10)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
OBJECTS = st.dictionaries(KEYS, VALUES, min_size=1, max_size=4)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    """One scripted server for a property's examples (each pushes its reply)."""
    with ScriptedServer([]) as running:
        yield running


@pinned(max_examples=30)
@given(
    OBJECTS,
    st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    st.sampled_from(ENDINGS),
    st.integers(min_value=1, max_value=7),
)
@example({"name": "Ann", "age": 31}, 0.45, "cut_after_chars", 3)
@example({"a": [1, "bcd"], "b": 2.5}, 0.6, "stream_error_after_chars", 2)
def test_any_cut_of_any_object_keeps_what_the_token_limit_keeps(
    server: ScriptedServer, data: dict[str, Any], where: float, ending: str, chunk: int
) -> None:
    """For any JSON object and any point a stream fails at (a dropped connection or an error
    event), the Degraded partial is what L1 keeps of the same text cut by the token limit."""
    text = json.dumps(data, ensure_ascii=False)
    at = 1 + int(where * (len(text) - 1))  # inside the text: never its closing brace
    server.push(ScriptedReply(content=text, chunk_chars=chunk, **ended(ending, at)))

    outcome, _ = _openai(server, "sync", "k", dict[str, Any])

    assert isinstance(outcome, Degraded)
    assert text[:at] == outcome.raw_text
    assert token_cut(text[:at], dict[str, Any]) == outcome.partial


# -- a secret cut inside: shown nowhere -------------------------------------------------------


def shown(outcome: Any, snapshots: list[Any]) -> dict[str, str]:
    """Every rendering of the outcome (and of the snapshots handed out), by name."""
    return {
        "repr": repr(outcome),
        "trace": outcome.trace(),
        "trace json": outcome.trace("json"),
        "to_dict": json.dumps(outcome.to_dict(), ensure_ascii=False, default=str),
        "partial": json.dumps(outcome.partial, ensure_ascii=False),
        "snapshots": "\n".join(repr(snapshot) for snapshot in snapshots),
    }


def prefixes_in(texts: dict[str, str], secret: str) -> dict[str, str]:
    """The renderings that show a beginning of `secret` long enough to be one, with the
    longest beginning each shows."""
    found = {}
    for name, text in texts.items():
        for size in range(len(secret), MIN_SECRET_CHARS - 1, -1):
            if secret[:size] in text:
                found[name] = secret[:size]
                break
    return found


KEYS_BY_PROVIDER = {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY, "gemini": GEMINI_KEY}


@pytest.mark.parametrize("ending", ENDINGS)
@pytest.mark.parametrize(("provider", "mode"), PATHS)
def test_a_key_the_stream_failed_inside_is_shown_nowhere(
    provider: str, mode: str, ending: str
) -> None:
    """A stream that fails inside an API key the model echoes shows no beginning of it in any
    rendering of the outcome or of its snapshots, in every provider's SDK, sync and async."""
    key = KEYS_BY_PROVIDER[provider]
    content = '{"name": "x' + key + '", "age": 31}'
    at = len('{"name": "x') + len(key) - 3  # all but the key's last three characters
    reply = ScriptedReply(content=content, chunk_chars=3, **ended(ending, at))
    with ScriptedServer([reply]) as server:
        outcome, snapshots = streamed(server, provider, mode, key)

    assert isinstance(outcome, Degraded)
    assert outcome.raw_text == '{"name": "x' + MARKER
    assert {} == prefixes_in(shown(outcome, snapshots), key)


SECRET_TAILS = st.text(alphabet=string.ascii_uppercase + string.digits, min_size=8, max_size=32)


@pinned(max_examples=30)
@given(
    SECRET_TAILS,
    st.text(alphabet=LETTERS + " ", max_size=12),
    st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    st.sampled_from(ENDINGS),
    st.integers(min_value=1, max_value=7),
)
@example("SECREToai1234567890abcd".upper(), "x", 0.9, "stream_error_after_chars", 3)
@example("ABCDEFGH", "", 0.99, "cut_after_chars", 1)
def test_any_cut_inside_an_echoed_secret_shows_none_of_it(
    server: ScriptedServer, tail: str, before: str, where: float, ending: str, chunk: int
) -> None:
    """For any secret embedded in a string value and any point inside it the stream fails at,
    no beginning of the secret as long as a secret can be shows in the outcome's renderings,
    its partial data or its snapshots."""
    secret = "sk-proj-" + tail
    content = json.dumps({"age": 31, "note": before + secret + " end"})
    start = content.index(secret)
    at = start + 1 + int(where * (len(secret) - 1))  # inside the secret
    server.push(ScriptedReply(content=content, chunk_chars=chunk, **ended(ending, at)))

    outcome, snapshots = _openai(server, "sync", secret, dict[str, Any])

    assert isinstance(outcome, Degraded)
    assert {} == prefixes_in(shown(outcome, snapshots), secret)
    assert {"age": 31} == outcome.partial


# -- defence in depth: a partial that holds a cut secret is sealed -----------------------------


def test_a_partial_string_ending_in_a_cut_secret_is_sealed_in_every_rendering() -> None:
    """An outcome whose partial data holds a string that ends inside a known secret shows no
    beginning of it in its `repr`, traces or `to_dict` once sealed (the caller's data kept)."""
    data: dict[str, Any] = {"name": "x" + OPENAI_KEY[:20]}
    outcome: Degraded[Person] = Degraded(Reason.API_ERROR, '{"name": "x' + MARKER, partial=data)

    sealed = seal(outcome, (OPENAI_KEY,))

    assert data == sealed.partial  # the caller's object as the model sent it
    renderings = shown(sealed, [])
    del renderings["partial"]
    assert {} == prefixes_in(renderings, OPENAI_KEY)
    assert MARKER in renderings["repr"]


@pytest.mark.parametrize(
    ("rendering", "redacted"),
    [
        ("{'name': 'x" + OPENAI_KEY[:12] + "'}", "{'name': 'x" + MARKER + "'}"),
        ('{"name": "x' + OPENAI_KEY[:20] + '", "age": 1}', '{"name": "x' + MARKER + '", "age": 1}'),
        ('"{\\"name\\": \\"' + OPENAI_KEY[:9] + '\\"}"', '"{\\"name\\": \\"' + MARKER + '\\"}"'),
        ('{"name": "' + OPENAI_KEY[:16] + "…(+9 chars)", '{"name": "' + MARKER + "…(+9 chars)"),
        ("ends with " + OPENAI_KEY[:8], "ends with " + MARKER),
    ],
    ids=["repr-quote", "json-quote", "escaped-quote", "shortened", "text-end"],
)
def test_a_secret_cut_where_a_string_ends_is_redacted(rendering: str, redacted: str) -> None:
    """A known secret's first 8 or more characters where a string of a rendering ends (a
    quote, escaped or not, or a shortening's `…` follows) or where the text ends are redacted."""
    assert redacted == redact_with(rendering, (OPENAI_KEY,))


@pytest.mark.parametrize(
    "text",
    [
        "the prefix " + OPENAI_KEY[:12] + " goes on",
        "'" + OPENAI_KEY[:7] + "'",
        "'" + OPENAI_KEY[:10] + "Z'",
    ],
    ids=["goes-on", "too-short", "diverges"],
)
def test_text_that_only_shares_a_secret_s_beginning_and_goes_on_is_kept(text: str) -> None:
    """Text whose secret-like beginning goes on past it, or is shorter than any secret, is kept."""
    assert text == redact_with(text, (OPENAI_KEY,))
