"""Several calls of the answer tool are candidates, chosen as the candidates of one text are.

Calls that validate to the same value are one answer (flag `multiple_candidates`, as identical
repeats in a text); different ones are never settled silently: with the default policy
(`on_ambiguity="reask"`) there is no value (an `ambiguity` error, every candidate kept), and
`"first"` / `"last"` pick one with the flag `ambiguous_choice`. The first call that yields no
valid value is the reply's failure. Driven through real SDKs (anthropic, google-genai) over HTTP
against `ScriptedServer` on loopback, streamed and unstreamed alike.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Flag, Healed, HealPolicy, Reason, Source
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

MESSAGES = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
ANN = {"name": "Ann", "age": 31}
BOB = {"name": "Bob", "age": 5}


class Person(BaseModel):
    name: str = Field(min_length=1)
    age: int = Field(ge=0)


def message(*inputs: dict[str, Any]) -> ScriptedReply:
    """An Anthropic message whose content is one `Person` (answer tool) call per input."""
    content = [
        {"type": "tool_use", "id": f"toolu_{n}", "name": "Person", "input": given}
        for n, given in enumerate(inputs)
    ]
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": content, "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 12}}  # fmt: skip
    return ScriptedReply(body=json.dumps(body), content_type="application/json")


def anthropic_outcome(reply: ScriptedReply, policy: HealPolicy) -> Any:
    """One unstreamed healed `Person` call through the anthropic SDK (the forced answer tool)."""
    with ScriptedServer([reply]) as server:
        http = anthropic.DefaultHttpxClient(verify=TLS)
        with anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="sk-test",
                                 max_retries=0, http_client=http) as sdk:  # fmt: skip
            client = healjson.wrap(sdk, json_mode="json_object")
            return client.messages.create(model="claude-test", max_tokens=256,
                                          messages=MESSAGES, response_model=Person,
                                          policy=policy)  # fmt: skip


def gemini_chunks(*inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """Gemini stream pieces, each one `Person` function call; the last one finishes."""
    chunks: list[dict[str, Any]] = []
    for n, given in enumerate(inputs):
        part = {"functionCall": {"name": "Person", "args": given}}
        candidate: dict[str, Any] = {"index": 0, "content": {"role": "model", "parts": [part]}}
        if n == len(inputs) - 1:
            candidate["finishReason"] = "STOP"
        chunk = {"candidates": [candidate], "modelVersion": "gemini-test", "responseId": "r1"}
        if n == len(inputs) - 1:
            chunk["usageMetadata"] = {"promptTokenCount": 10, "candidatesTokenCount": 7,
                                      "totalTokenCount": 17}  # fmt: skip
        chunks.append(chunk)
    return chunks


def gemini_outcome(inputs: tuple[dict[str, Any], ...], policy: HealPolicy, *, stream: bool) -> Any:
    """One healed `Person` call through google-genai: the calls streamed piece by piece, or the
    same calls in one response."""
    chunks = gemini_chunks(*inputs)
    if stream:
        body = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)
        reply = ScriptedReply(body=body, content_type="text/event-stream")
    else:
        parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
        last = {**chunks[-1]["candidates"][0], "content": {"role": "model", "parts": parts}}
        whole = {**chunks[-1], "candidates": [last]}
        reply = ScriptedReply(body=json.dumps(whole), content_type="application/json")
    with ScriptedServer([reply]) as server:
        options = genai_types.HttpOptions(
            base_url=server.gemini_base_url, client_args={"verify": TLS}, timeout=10_000
        )
        client = genai.Client(api_key="test-key", http_options=options)
        try:
            models = healjson.wrap(client).models
            if not stream:
                return models.generate_content(model="gemini-test", contents="x",
                                               response_model=Person, policy=policy)  # fmt: skip
            found = models.generate_content_stream(
                model="gemini-test", contents="x", response_model=Person, policy=policy
            )
            with found:
                for _ in found:
                    pass
            return found.outcome
        finally:
            client.close()


ONE_TRY = HealPolicy(max_attempts=1)


def test_two_different_answer_calls_are_an_ambiguity_not_the_first() -> None:
    """Two calls of the answer tool with different valid values give no value by default: an
    ambiguity naming both, as two different answers in one text do."""
    outcome = anthropic_outcome(message(ANN, BOB), ONE_TRY)

    assert isinstance(outcome, Degraded)
    assert outcome.reason is Reason.INVALID_OUTPUT
    assert [e.source for e in outcome.errors] == [Source.AMBIGUITY]
    assert outcome.errors[0].value == [ANN, BOB]


@pytest.mark.parametrize(("mode", "chosen"), [("first", ANN), ("last", BOB)])
def test_the_ambiguity_policy_picks_among_answer_calls_with_a_flag(
    mode: Any, chosen: dict[str, Any]
) -> None:
    """`on_ambiguity="first"` / `"last"` pick one of the different answer calls, flagged."""
    outcome = anthropic_outcome(message(ANN, BOB), HealPolicy(max_attempts=1, on_ambiguity=mode))

    assert isinstance(outcome, Healed)
    assert outcome.value == Person(**chosen)
    assert Flag.AMBIGUOUS_CHOICE in outcome.flags


def test_identical_answer_calls_are_one_answer_flagged() -> None:
    """Identical calls of the answer tool are one answer, flagged as several candidates."""
    outcome = anthropic_outcome(message(ANN, ANN), ONE_TRY)

    assert isinstance(outcome, Healed)
    assert outcome.value == Person(**ANN)
    assert Flag.MULTIPLE_CANDIDATES in outcome.flags


def test_an_answer_call_that_fails_is_the_replys_failure_after_a_valid_one() -> None:
    """An answer call that fails the schema is the reply's failure, even after a valid one
    (the valid call is not settled on silently)."""
    outcome = anthropic_outcome(message(BOB, {"name": "Ann", "age": -1}), ONE_TRY)

    assert isinstance(outcome, Degraded)
    assert [e.source for e in outcome.errors] == [Source.SCHEMA]
    assert outcome.errors[0].value == -1


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_answer_calls_in_separate_pieces_are_an_ambiguity(stream: bool) -> None:
    """Gemini function calls of the answer tool with different values, whole or in separate
    stream pieces, are an ambiguity, never the first call's value."""
    outcome = gemini_outcome((ANN, BOB), ONE_TRY, stream=stream)

    assert isinstance(outcome, Degraded)
    assert [e.source for e in outcome.errors] == [Source.AMBIGUITY]
    calls = [json.loads(c.arguments) for c in outcome.attempts[0].tool_calls]
    assert calls == [ANN, BOB]


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_repeated_answer_call_is_one_answer(stream: bool) -> None:
    """The same Gemini function call of the answer tool twice is one answer, flagged."""
    outcome = gemini_outcome((ANN, ANN), ONE_TRY, stream=stream)

    assert isinstance(outcome, Healed)
    assert outcome.value == Person(**ANN)
    assert Flag.MULTIPLE_CANDIDATES in outcome.flags
