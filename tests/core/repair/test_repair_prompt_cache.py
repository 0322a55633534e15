"""Repairs keep the provider's prompt cache: every repair request opens with the first request's
messages, byte for byte, on each wire format (OpenAI chat, Responses, Anthropic, Gemini); the
cached input a repair reads is in its attempt's `Usage` and in the trace; Anthropic's repair
marks the shared prefix with `cache_control`."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import anthropic
import openai
import pytest
from google.genai import types as genai_types
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson.testing import RecordedRequest, ScriptedReply, ScriptedServer
from sdk_calls import TLS, gemini_client


class Person(BaseModel):
    name: str
    age: int


SYSTEM = "You extract people. " * 40  # a long shared prefix, as a cached one would be
QUESTION = "Ada Lovelace, born 1815, died at 36."
BAD = '{"name": "Ada Lovelace"}'  # age missing: only a repair can say it
GOOD = '{"name": "Ada Lovelace", "age": 36}'
CACHED = {"prompt_tokens": 400, "completion_tokens": 10, "cached_tokens": 320}


def _raw_array(raw: bytes, key: str) -> str:
    """The raw JSON text of the array under `key` at the top of a request body, as sent."""
    text = raw.decode()
    start = text.index(f'"{key}"')
    start = text.index("[", start)
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end]


def _opens_with(first: RecordedRequest, repair: RecordedRequest, key: str) -> bool:
    """The repair's array under `key` opens with the first request's items, byte for byte."""
    sent = _raw_array(first.raw, key)
    return _raw_array(repair.raw, key).startswith(sent[:-1].rstrip() + ",")


def _check(outcome: Any, server: ScriptedServer) -> list[RecordedRequest]:
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert 320 == outcome.attempts[1].usage.cache_read_tokens
    assert "cache read" in outcome.trace()
    return list(server.requests)


def test_an_openai_chat_repair_opens_with_the_first_messages_byte_for_byte(
    closing: contextlib.ExitStack,
) -> None:
    """OpenAI chat: the repair's `messages` array opens with the first request's, as sent."""
    replies = [BAD, ScriptedReply(content=GOOD, usage=CACHED)]
    with ScriptedServer(replies) as server:
        sdk = closing.enter_context(
            openai.OpenAI(
                base_url=server.base_url,
                api_key="test",
                max_retries=0,
                http_client=openai.DefaultHttpxClient(verify=TLS),
            )
        )
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m",
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
            response_model=Person,
        )
        first, repair = _check(outcome, server)

    assert _opens_with(first, repair, "messages")
    assert first.body is not None
    assert repair.body is not None
    assert first.body["messages"] == repair.body["messages"][:2]


def test_a_responses_repair_opens_with_the_first_input_byte_for_byte(
    closing: contextlib.ExitStack,
) -> None:
    """The Responses API: the repair's `input` opens with the first request's items, as sent,
    and its `instructions` are the same."""
    replies = [BAD, ScriptedReply(content=GOOD, usage=CACHED)]
    with ScriptedServer(replies) as server:
        sdk = closing.enter_context(
            openai.OpenAI(
                base_url=server.base_url,
                api_key="test",
                max_retries=0,
                http_client=openai.DefaultHttpxClient(verify=TLS),
            )
        )
        outcome = healjson.wrap(sdk).responses.create(
            model="m",
            instructions=SYSTEM,
            input=[{"role": "user", "content": QUESTION}],
            response_model=Person,
        )
        first, repair = _check(outcome, server)

    assert _opens_with(first, repair, "input")
    assert first.body is not None
    assert repair.body is not None
    assert first.body.get("instructions") == repair.body.get("instructions")


def test_a_gemini_repair_opens_with_the_first_contents_byte_for_byte(
    closing: contextlib.ExitStack,
) -> None:
    """Gemini: the repair's `contents` open with the first request's, as sent, and its system
    instruction is the same."""
    replies = [BAD, ScriptedReply(content=GOOD, usage=CACHED)]
    with ScriptedServer(replies) as server:
        client = closing.enter_context(
            gemini_client(
                api_key="test-key",
                http_options=genai_types.HttpOptions(
                    base_url=server.gemini_base_url, timeout=10_000, client_args={"verify": TLS}
                ),
            )
        )
        outcome = healjson.wrap(client).models.generate_content(
            model="gemini-test",
            contents=QUESTION,
            config=genai_types.GenerateContentConfig(system_instruction=SYSTEM),
            response_model=Person,
        )
        first, repair = _check(outcome, server)

    assert _opens_with(first, repair, "contents")
    assert first.body is not None
    assert repair.body is not None
    assert first.body.get("systemInstruction") == repair.body.get("systemInstruction")


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with every `cache_control` mark removed and text content as one text block
    (Anthropic reads a string content as exactly that block)."""
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = [{k: v for k, v in block.items() if k != "cache_control"} for block in content]
        out.append({**message, "content": blocks})
    return out


@pytest.mark.parametrize("json_mode", ["json_schema", "prompt"])
def test_an_anthropic_repair_opens_with_the_first_messages_and_marks_the_prefix(
    json_mode: str, closing: contextlib.ExitStack
) -> None:
    """Anthropic: the repair's system prompt is the first request's byte for byte; its messages
    open with the first request's (the same blocks), and the last of those carries the one
    `cache_control` mark, so the repair writes the shared prefix to the prompt cache and a
    later repair reads it; the first request carries no mark."""
    replies = [BAD, BAD, ScriptedReply(content=GOOD, usage=CACHED)]
    with ScriptedServer(replies) as server:
        sdk = closing.enter_context(
            anthropic.Anthropic(
                base_url=server.anthropic_base_url, api_key="sk-test", max_retries=0, timeout=10.0
            )
        )
        outcome = healjson.wrap(sdk, json_mode=json_mode).messages.create(
            model="claude-test",
            max_tokens=256,
            system=SYSTEM,
            messages=[
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": "Understood."},
                {"role": "user", "content": "Now the JSON, please."},
            ],
            response_model=Person,
        )
        first, *repairs = list(server.requests)

    assert isinstance(outcome, Healed)
    assert 3 == outcome.calls
    assert 320 == outcome.attempts[2].usage.cache_read_tokens
    assert first.body is not None
    assert b"cache_control" not in first.raw
    for repair in repairs:
        assert repair.body is not None
        assert first.body["system"] == repair.body["system"]
        shared = repair.body["messages"][:3]
        assert _plain(first.body["messages"]) == _plain(shared)
        assert {"type": "ephemeral"} == shared[-1]["content"][-1]["cache_control"]
        assert 1 == repair.raw.count(b"cache_control")
