"""What a call whose 200 body is no reply cost: the usage the body reported, else an estimate.

A body that is no reply of its format (see `test_no_reply.py`) fails the call (`api_error`);
when it carries the provider's usage in its format's usage member (chat and Responses: `usage`,
Anthropic: `usage`, Gemini: `usageMetadata`, Ollama: `prompt_eval_count` / `eval_count`), the
failed attempt's usage is that usage (one request, not estimated), read by the format's own
usage reader; a body with no readable usage keeps the estimate from the request. Over real
HTTP with the real SDKs where the SDK hands the body on (the ollama SDK refuses such a body
itself, so no usage of it is readable: the estimate), and as a property over the readers.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import types as gt
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healer, HealPolicy, Reason
from healjson._core.wire.reply import Usage, estimate_tokens
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

ONE = HealPolicy(max_attempts=1)
SAID = [{"role": "user", "content": "Ann is 31"}]
TLS = ssl.create_default_context()


class Person(BaseModel):
    name: str
    age: int


class Search(BaseModel):
    query: str


# --- the bodies: no reply of each format, with and without its usage member -------------------

USAGES = {
    "chat": {"usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17}},
    "responses": {"usage": {"input_tokens": 10, "output_tokens": 7, "total_tokens": 17}},
    "anthropic": {"usage": {"input_tokens": 10, "output_tokens": 7}},
    "gemini": {"usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 7}},
    "ollama": {"prompt_eval_count": 10, "eval_count": 7},
}
NO_REPLIES = {
    "chat": {"id": "c", "object": "chat.completion", "model": "m", "choices": None},
    "responses": {"id": "r", "object": "response", "status": "completed", "model": "m"},
    "anthropic": {
        "id": "m", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": 5}], "stop_reason": "end_turn",
    },
    "gemini": {"modelVersion": "m", "promptFeedback": {}},
    "ollama": {"model": "m", "message": {"role": "assistant", "content": 5}, "done": True},
}  # fmt: skip


def no_reply(provider: str, reported: bool) -> dict[str, Any]:
    """`provider`'s body that is no reply, carrying its usage member when `reported`."""
    return {**NO_REPLIES[provider], **(USAGES[provider] if reported else {})}


def call(server: ScriptedServer, provider: str, stream: bool = False, **more: Any) -> Any:
    """One wrapped sync SDK call of `provider` (a `Person` asked for): its outcome."""
    more = {"policy": ONE, **more}
    if not more.get("heal_tools"):
        more.setdefault("response_model", Person)
    if provider in ("chat", "responses"):
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            client = healjson.wrap(sdk)
            if provider == "chat":
                answer = client.chat.completions.create(
                    model="m", messages=SAID, stream=stream, **more
                )
            else:
                answer = client.responses.create(
                    model="m", input="Ann is 31", stream=stream, **more
                )
            return drained(answer, stream)
    if provider == "anthropic":
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        ) as sdk:
            messages = healjson.wrap(sdk).messages
            answer = messages.create(model="m", max_tokens=64, messages=SAID, stream=stream, **more)
            return drained(answer, stream)
    if provider == "gemini":
        options = gt.HttpOptions(
            base_url=server.gemini_base_url, timeout=10_000, client_args={"verify": TLS}
        )
        client = genai.Client(api_key="k", http_options=options)
        try:
            return healjson.wrap(client).models.generate_content(
                model="m", contents="Ann is 31", **more
            )
        finally:
            client.close()
    raw = ollama.Client(host=server.ollama_host, verify=TLS)
    try:
        return healjson.wrap(raw).chat(model="m", messages=SAID, **more)
    finally:
        raw.close()


def drained(answer: Any, stream: bool) -> Any:
    if not stream:
        return answer
    for _ in answer:
        pass
    return answer.outcome


def assert_reported(outcome: Any) -> None:
    """The run failed with `api_error`, its one attempt costing the 10/7 tokens reported."""
    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)
    usage = outcome.usage
    assert (usage.requests, usage.prompt_tokens, usage.completion_tokens) == (1, 10, 7)
    assert not usage.estimated


def assert_estimated(outcome: Any) -> None:
    """The run failed with `api_error`, its one attempt's request estimated, nothing received."""
    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)
    usage = outcome.usage
    assert (usage.requests, usage.completion_tokens, usage.estimated) == (1, 0, True)
    assert usage.prompt_tokens > 0


# --- over HTTP, with the real SDKs ------------------------------------------------------------

SDK_READ = ("chat", "responses", "anthropic", "gemini")


@pytest.mark.parametrize("provider", SDK_READ)
def test_a_whole_body_that_is_no_reply_costs_the_usage_it_reported(
    shared_server: ScriptedServer, provider: str
) -> None:
    """A 200 body that is no reply but carries its format's usage costs exactly that usage."""
    shared_server.extend([ScriptedReply(body=json.dumps(no_reply(provider, True)))])

    assert_reported(call(shared_server, provider))


@pytest.mark.parametrize("provider", [*SDK_READ, "ollama"])
def test_a_whole_body_that_is_no_reply_without_usage_is_estimated(
    shared_server: ScriptedServer, provider: str
) -> None:
    """A 200 body that is no reply and carries no usage keeps the estimate from the request."""
    shared_server.extend([ScriptedReply(body=json.dumps(no_reply(provider, False)))])

    assert_estimated(call(shared_server, provider))


def test_an_ollama_body_its_sdk_refuses_is_estimated(shared_server: ScriptedServer) -> None:
    """The ollama SDK refuses a body that is no reply before healjson sees it (its usage is
    gone with it), so the call is estimated, as any answer that could not be read."""
    shared_server.extend([ScriptedReply(body=json.dumps(no_reply("ollama", True)))])

    assert_estimated(call(shared_server, "ollama"))


def responses_final(response: dict[str, Any]) -> str:
    """A Responses API stream that is only its `response.completed` event, holding `response`."""
    event = {"type": "response.completed", "sequence_number": 0, "response": response}
    return f"event: response.completed\ndata: {json.dumps(event)}\n\n"


@pytest.mark.parametrize("reported", [True, False], ids=["usage", "no-usage"])
def test_a_streamed_final_response_that_is_no_reply_costs_the_usage_it_reported(
    shared_server: ScriptedServer, reported: bool
) -> None:
    """A tool-call Responses stream whose final event holds a response that is no reply costs
    the usage that response reported (the estimate without one)."""
    body = responses_final(no_reply("responses", reported))
    shared_server.extend([ScriptedReply(body=body, content_type="text/event-stream")])
    tools = {"tools": [Search], "heal_tools": True}

    outcome = call(shared_server, "responses", stream=True, **tools)

    (assert_reported if reported else assert_estimated)(outcome)


@pytest.mark.parametrize("provider", ["chat", "anthropic", "gemini"])
def test_a_body_that_is_a_reply_keeps_its_usage(
    shared_server: ScriptedServer, provider: str
) -> None:
    """A well-formed answer still costs the usage it reported (the happy path is unchanged)."""
    shared_server.extend([ScriptedReply(content='{"name": "Ann", "age": 31}')])

    outcome = call(shared_server, provider)

    assert outcome.ok
    assert (outcome.usage.requests, outcome.usage.estimated) == (1, False)


# --- the rule as a property over the readers ---------------------------------------------------

counts = st.integers(min_value=0, max_value=10**6)
members = st.sampled_from([None, 5, "x", [], {}, [None], [5]])


def with_usage(provider: str, prompt: int, completion: int) -> dict[str, Any]:
    """`provider`'s usage member reporting `prompt` and `completion` tokens."""
    if provider == "chat":
        return {"usage": {"prompt_tokens": prompt, "completion_tokens": completion}}
    if provider in ("responses", "anthropic"):
        return {"usage": {"input_tokens": prompt, "output_tokens": completion}}
    if provider == "gemini":
        return {"usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": completion}}
    return {"prompt_eval_count": prompt, "eval_count": completion}


TEXT_FIVE = {
    "chat": {"choices": [{"message": {"content": 5}}]},
    "responses": {"object": "response", "status": "completed",
                  "output": [{"type": "message", "content": [{"type": "output_text", "text": 5}]}]},
    "anthropic": {"type": "message", "stop_reason": "end_turn",
                  "content": [{"type": "text", "text": 5}]},
    "gemini": {"candidates": [{"content": {"parts": [{"text": 5}]}}]},
    "ollama": {"message": {"content": 5}, "done": True},
}  # fmt: skip
DEFINING = {"chat": "choices", "responses": "output", "anthropic": "content",
            "gemini": "candidates", "ollama": "message"}  # fmt: skip


def broken(provider: str, member: Any) -> dict[str, Any]:
    """A body of `provider`'s format (as dispatched by its keys) that is no reply: its defining
    member is `member` when that is not of its type, else its answer's text is a number (an
    Anthropic message's: its dicts are told by a `content` list)."""
    body = dict(TEXT_FIVE[provider])
    if provider != "anthropic" and not isinstance(member, dict if provider == "ollama" else list):
        body[DEFINING[provider]] = member
    return body


@pinned(max_examples=75)
@given(
    provider=st.sampled_from(["chat", "responses", "anthropic", "gemini", "ollama"]),
    member=members,
    reported=st.none() | st.tuples(counts, counts),
)
@example(provider="gemini", member=None, reported=(3, 0))
@example(provider="chat", member=None, reported=None)
def test_a_no_reply_costs_exactly_what_it_reported_or_the_estimate(
    provider: str, member: Any, reported: tuple[int, int] | None
) -> None:
    """A body that is no reply fails its attempt with exactly the usage it reported (one
    request, not estimated), or, reporting none, the estimate from the request."""
    body = broken(provider, member)
    if reported is not None:
        body.update(with_usage(provider, *reported))

    outcome = Healer(Person, policy=ONE).run(lambda messages, **params: body, "Ann is 31")

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)
    [attempt] = outcome.attempts
    usage: Usage = attempt.usage
    if reported is None:
        sent = estimate_tokens(attempt.messages)
        assert (usage.requests, usage.prompt_tokens, usage.completion_tokens) == (1, sent, 0)
        assert usage.estimated
    else:
        assert (usage.requests, usage.prompt_tokens, usage.completion_tokens) == (1, *reported)
        assert not usage.estimated
    assert outcome.usage == usage
