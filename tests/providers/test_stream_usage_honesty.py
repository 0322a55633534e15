"""Every model call that was made counts, streamed or not, however it ended.

A call made is one request. The counts its provider reported before the call ended are kept as
reported; what it did not report is estimated from what was sent and received (characters / 4)
and the usage is then `estimated` (no `cost`; budgets count the estimate). A usage is exact
only when the provider reported its final counts: Anthropic's `message_start` counts are
running ones until `message_delta`. Each scenario drives a real provider SDK over real HTTP
against `ScriptedServer` (loopback): OpenAI chat and Responses (openai), Anthropic
(anthropic), Gemini (google-genai) and Ollama (ollama), each wrapped by `healjson.wrap`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, Outcome, Reason, Usage
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned
from sdk_calls import TLS

PROVIDERS = ("chat", "responses", "anthropic", "gemini", "ollama")
MODEL = {
    "chat": "gpt-test",
    "responses": "gpt-test",
    "anthropic": "claude-test",
    "gemini": "gemini-test",
    "ollama": "llama3.2",
}
USAGE = {"prompt_tokens": 100, "completion_tokens": 140}
# a valid answer long enough to be cut anywhere in its padding
LONG = '{"name": "Ann", "age": 31, "pad": "' + "x" * 400 + '"}'
# an answer whose second field is wrong (found at once) and whose rest is long
BAD = '{"name": "Ann", "age": "lots", "note": "' + "long text " * 50 + '"}'
GOOD = '{"name": "Ann", "age": 31}'
CUT = 200  # characters of the answer sent before the stream breaks


class Person(BaseModel):
    name: str
    age: int


@contextlib.contextmanager
def _sdk(server: ScriptedServer, provider: str) -> Iterator[Any]:
    """`provider`'s real sync SDK client against `server`, closed after use."""
    client: Any
    if provider in ("chat", "responses"):
        http = openai.DefaultHttpxClient(verify=TLS)
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0,
                               http_client=http)  # fmt: skip
    elif provider == "anthropic":
        http = anthropic.DefaultHttpxClient(verify=TLS)
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="sk-test",
                                     max_retries=0, http_client=http)  # fmt: skip
    elif provider == "gemini":
        options = genai_types.HttpOptions(
            base_url=server.gemini_base_url, client_args={"verify": TLS}, timeout=10_000
        )
        client = genai.Client(api_key="test-key", http_options=options)
    else:
        client = ollama.Client(host=server.ollama_host)
    try:
        yield client
    finally:
        client.close()


def _call(server: ScriptedServer, provider: str, policy: HealPolicy, *, stream: bool) -> Any:
    """One run of `Person` through `provider`'s real sync SDK: its outcome (a stream read to
    its end)."""
    text = [{"role": "user", "content": "Ann is 31"}]
    asked: dict[str, Any] = {"response_model": Person, "policy": policy}
    with _sdk(server, provider) as sdk:
        client = healjson.wrap(sdk)
        if provider == "chat":
            answer = client.chat.completions.create(
                model=MODEL[provider], messages=text, stream=stream, **asked
            )
        elif provider == "responses":
            answer = client.responses.create(
                model=MODEL[provider], input="Ann is 31", stream=stream, **asked
            )
        elif provider == "anthropic":
            answer = client.messages.create(
                model=MODEL[provider], max_tokens=512, messages=text, stream=stream, **asked
            )
        elif provider == "gemini":
            models = client.models
            call = models.generate_content_stream if stream else models.generate_content
            answer = call(model=MODEL[provider], contents="Ann is 31", **asked)
        else:
            answer = client.chat(model=MODEL[provider], messages=text, stream=stream, **asked)
        if stream:
            with answer:
                for _ in answer:
                    pass
            return answer.outcome
    outcome = answer if isinstance(answer, Healed | Degraded) else healjson.outcome_of(answer)
    assert outcome is not None
    return outcome


def _stream(server: ScriptedServer, provider: str, policy: HealPolicy) -> Outcome[Any]:
    """One streamed run of `Person` through `provider`'s real sync SDK, read to its end."""
    outcome: Outcome[Any] = _call(server, provider, policy, stream=True)
    return outcome


def _whole(server: ScriptedServer, provider: str) -> Outcome[Any]:
    """One run of `Person` through `provider`'s real sync SDK, its answer read whole."""
    outcome: Outcome[Any] = _call(server, provider, HealPolicy(max_attempts=1), stream=False)
    return outcome


def _estimate(messages: Any) -> int:
    """The project's estimate of a request's tokens: characters / 4, and 4 per message."""
    return sum(len(str(m.get("content") or "")) for m in messages) // 4 + 4 * len(messages)


def _assert_counted(usage: Usage, provider: str, messages: Any, received: str) -> None:
    """`usage` is one call's that ended before its final counts: one request, the prompt as
    reported (Anthropic's `message_start`) or estimated, the answer received estimated."""
    assert 1 == usage.requests
    assert usage.estimated
    assert usage.cost is None
    prompt = USAGE["prompt_tokens"] if provider == "anthropic" else _estimate(messages)
    assert prompt == usage.prompt_tokens
    assert len(received) // 4 == usage.completion_tokens
    assert usage.completion_tokens > 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stream_aborted_by_healjson_counts_its_request_and_estimates_what_arrived(
    provider: str,
) -> None:
    """A stream healjson closes early (`stream_abort`) is one request, its reported counts
    kept and the rest estimated from what arrived, marked estimated; the repair's stays exact."""
    replies = [ScriptedReply(BAD, usage=USAGE), ScriptedReply(GOOD, usage=USAGE)]
    with ScriptedServer(replies) as server:
        outcome = _stream(server, provider, HealPolicy(stream_abort=True))

    assert isinstance(outcome, Healed)
    first, second = outcome.attempts
    assert first.raw_text is not None
    assert 0 < len(first.raw_text) < len(BAD)  # the stream was cut short
    _assert_counted(first.usage, provider, first.messages, first.raw_text)
    assert (100, 140, False, 1) == (
        second.usage.prompt_tokens,
        second.usage.completion_tokens,
        second.usage.estimated,
        second.usage.requests,
    )
    assert 2 == outcome.usage.requests
    assert outcome.usage.estimated


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("ending", ["whole", "cut_after_chars", "stream_error_after_chars"])
def test_a_stream_counts_its_request_exact_only_when_it_ran_to_its_end(
    provider: str, ending: str
) -> None:
    """A stream read to its end keeps the provider's final counts, exact; one that breaks after
    200 characters (a dropped connection, an SSE error event) counts one request, keeps the
    counts reported before the break and estimates the rest."""
    stop = {} if ending == "whole" else {ending: CUT}
    with ScriptedServer([ScriptedReply(LONG, usage=USAGE, **stop)]) as server:
        outcome = _stream(server, provider, HealPolicy(max_attempts=1))

    (attempt,) = outcome.attempts
    assert attempt.usage == outcome.usage
    if ending == "whole":
        assert isinstance(outcome, Healed)
        usage = attempt.usage
        assert (100, 140, False, 1) == (
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.estimated,
            usage.requests,
        )
        return
    assert isinstance(outcome, Degraded)
    assert outcome.reason in (Reason.API_ERROR, Reason.TIMEOUT)
    assert LONG[:CUT] == attempt.raw_text
    _assert_counted(attempt.usage, provider, attempt.messages, LONG[:CUT])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_whole_call_answered_with_an_error_counts_its_request_and_no_token(
    provider: str,
) -> None:
    """A call answered with an HTTP error was made but billed nothing: one request, no token,
    an exact count (a run's cost stays known)."""
    with ScriptedServer([ScriptedReply("overloaded", status=500)]) as server:
        outcome = _whole(server, provider)

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    (attempt,) = outcome.attempts
    usage = attempt.usage
    assert (1, False, 0, 0) == (
        usage.requests,
        usage.estimated,
        usage.prompt_tokens,
        usage.completion_tokens,
    )
    assert usage == outcome.usage


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_whole_call_whose_connection_was_refused_counts_its_request_and_no_token(
    provider: str,
) -> None:
    """A call whose connection was refused never reached the provider: one request, no token,
    an exact count, as for an HTTP error (a call that may have been read, a timeout after it
    was sent, keeps an estimated prompt: `tests/core/run/test_never_sent.py`)."""
    with ScriptedServer([]) as server:
        pass
    outcome = _whole(server, provider)  # the server is gone: the connection is refused

    assert isinstance(outcome, Degraded)
    (attempt,) = outcome.attempts
    usage = attempt.usage
    assert (1, False, 0, 0) == (
        usage.requests,
        usage.estimated,
        usage.prompt_tokens,
        usage.completion_tokens,
    )
    assert usage == outcome.usage


def _cut_usage(server: ScriptedServer, provider: str, cut: int) -> tuple[Usage, str]:
    """The usage and the text received of one stream of `LONG` dropped after `cut` chars."""
    server.push(ScriptedReply(LONG, usage=USAGE, chunk_chars=7, cut_after_chars=cut))
    outcome = _stream(server, provider, HealPolicy(max_attempts=1))
    (attempt,) = outcome.attempts
    return attempt.usage, attempt.raw_text or ""


@pinned(max_examples=10)
@given(
    provider=st.sampled_from(PROVIDERS),
    cuts=st.tuples(
        st.integers(min_value=0, max_value=len(LONG) - 1),
        st.integers(min_value=0, max_value=len(LONG) - 1),
    ).map(sorted),
)
def test_a_cut_stream_is_never_exact_and_its_estimate_grows_with_what_arrived(
    shared_server: ScriptedServer, provider: str, cuts: list[int]
) -> None:
    """Wherever a stream is cut, its usage is one request, never exact (the final counts never
    came), and its completion estimate never shrinks as more characters arrive."""
    fewer, more = (_cut_usage(shared_server, provider, cut) for cut in cuts)
    for usage, received in (fewer, more):
        assert (1, True) == (usage.requests, usage.estimated)
        assert len(received) // 4 == usage.completion_tokens
        if provider == "anthropic":
            assert USAGE["prompt_tokens"] == usage.prompt_tokens  # reported, kept
    assert len(fewer[1]) <= len(more[1])
    assert fewer[0].completion_tokens <= more[0].completion_tokens
