"""A streamed tool-call run (`heal_tools=True`) keeps the model's reasoning as the whole reply's
reader keeps it: each provider's stream collector gathers the reasoning pieces (OpenAI chat's
`reasoning_content` / `reasoning`, Anthropic's `thinking` blocks, Ollama's `thinking`) and its
attempt and trace show them, streamed or not. Over real HTTP (`ScriptedServer`)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import ollama
import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import HealPolicy
from healjson.testing import ScriptedReply, ScriptedServer

THOUGHT = "The user wants shoes: I should search for them first."
CALL = {"id": "call_1", "type": "function", "function": {"name": "Search", "arguments": "{}"}}
ONE = HealPolicy(max_attempts=1)
SAID = [{"role": "user", "content": "shoes"}]


class Search(BaseModel):
    query: str = "shoes"


def _outcome(answer: Any, stream: bool) -> Any:
    if not stream:
        return answer
    for _ in answer:
        pass
    return answer.outcome


def _ollama_reply(stream: bool) -> ScriptedReply:
    """Ollama's answer, its thinking and its call in separate chunks when streamed."""
    head = {"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "done": False}
    last = {**head, "done": True, "done_reason": "stop", "prompt_eval_count": 9, "eval_count": 4}
    call = {"function": {"name": "Search", "arguments": {"query": "shoes"}}}
    if not stream:
        message = {"role": "assistant", "content": "", "thinking": THOUGHT, "tool_calls": [call]}
        return ScriptedReply(body=json.dumps({**last, "message": message}))
    half = len(THOUGHT) // 2
    lines = [
        {**head, "message": {"role": "assistant", "content": "", "thinking": THOUGHT[:half]}},
        {**head, "message": {"role": "assistant", "content": "", "thinking": THOUGHT[half:]}},
        {**head, "message": {"role": "assistant", "content": "", "tool_calls": [call]}},
        {**last, "message": {"role": "assistant", "content": ""}},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    return ScriptedReply(body=body, content_type="application/x-ndjson")


def _heal_tools(server: ScriptedServer, provider: str, stream: bool) -> Any:
    """One `heal_tools=True` call of `provider`'s wrapped sync client: its outcome."""
    keywords: dict[str, Any] = {"tools": [Search], "heal_tools": True, "policy": ONE}
    keywords["stream"] = stream
    if provider == "anthropic":
        base = server.anthropic_base_url
        with anthropic.Anthropic(base_url=base, api_key="k", max_retries=0) as sdk:
            messages = healjson.wrap(sdk).messages
            answer = messages.create(model="c", max_tokens=64, messages=SAID, **keywords)
            return _outcome(answer, stream)
    if provider == "ollama":
        sdk = ollama.Client(host=server.ollama_host)
        try:
            answer = healjson.wrap(sdk).chat(model="llama3.2", messages=SAID, **keywords)
            return _outcome(answer, stream)
        finally:
            sdk.close()
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
        client = healjson.wrap(sdk)
        if provider == "responses":
            return _outcome(client.responses.create(model="g", input="shoes", **keywords), stream)
        answer = client.chat.completions.create(model="g", messages=SAID, **keywords)
        return _outcome(answer, stream)


def _script(provider: str, stream: bool) -> ScriptedReply:
    if provider == "ollama":
        return _ollama_reply(stream)
    field = {"reasoning_field": "reasoning_content"} if provider == "chat-deepseek" else {}
    return ScriptedReply(tool_calls=[CALL], reasoning=THOUGHT, **field)


PROVIDERS = ["chat", "chat-deepseek", "responses", "anthropic", "ollama"]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_tool_call_attempt_keeps_the_reasoning_streamed_or_not(
    shared_server: ScriptedServer, provider: str, stream: bool
) -> None:
    """A tool-call reply with reasoning keeps that reasoning on its attempt and in its trace,
    streamed exactly as whole."""
    shared_server.extend([_script(provider, stream)])
    api = "chat" if provider == "chat-deepseek" else provider

    outcome = _heal_tools(shared_server, api, stream)

    assert outcome.ok, outcome
    assert ["Search"] == [call.name for call in outcome.value.calls]
    assert THOUGHT == outcome.attempts[0].reasoning
    assert THOUGHT in outcome.trace()


def test_an_ollama_stream_without_thinking_keeps_no_reasoning(
    shared_server: ScriptedServer,
) -> None:
    """An Ollama tool-call stream that thinks nothing has no reasoning (None, not an empty
    text), as its whole reply has none."""
    head = {"model": "llama3.2", "created_at": "2026-01-01T00:00:00Z", "done": False}
    call = {"function": {"name": "Search", "arguments": {"query": "shoes"}}}
    lines = [
        {**head, "message": {"role": "assistant", "content": "", "tool_calls": [call]}},
        {**head, "done": True, "done_reason": "stop", "message": {"role": "assistant"}},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines)
    shared_server.extend([ScriptedReply(body=body, content_type="application/x-ndjson")])

    outcome = _heal_tools(shared_server, "ollama", True)

    assert outcome.ok, outcome
    assert outcome.attempts[0].reasoning is None
