"""Reading call results: strings, ChatCompletions, dicts, tool calls, usage, exception kinds."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

import healjson
from healjson import Healer, Reply, Usage
from healjson._core.run.drive import exception_kind
from healjson._core.wire.reply import ToolCall, to_reply


class Point(BaseModel):
    x: int
    y: int


def _completion(content: str | None, finish: str = "stop", **message: object) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish,
                    "message": {"role": "assistant", "content": content, **message},
                }
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    )


def test_chat_completion_is_read_by_shape() -> None:
    """A real openai ChatCompletion gives content, finish reason, usage and model."""
    reply = to_reply(_completion('{"x": 1, "y": 2}'))
    usage = Usage(11, 7, requests=1, model="gpt-test")
    assert Reply('{"x": 1, "y": 2}', "stop", None, usage, "gpt-test") == reply


def test_tool_calls_are_read_apart_from_the_content() -> None:
    """A tool call's name and arguments are kept as a `ToolCall`, never folded into content."""
    call = {
        "id": "t1",
        "type": "function",
        "function": {"name": "Point", "arguments": '{"x": 3, "y": 4}'},
    }
    reply = to_reply(_completion(None, "tool_calls", tool_calls=[call]))
    assert None is reply.content
    assert (ToolCall("Point", '{"x": 3, "y": 4}', "t1"),) == reply.tool_calls


def test_refusal_and_dict_shapes_are_read() -> None:
    """Refusals on completions and plain dicts (completion-shaped or message-shaped) are read."""
    assert "no" == to_reply(_completion(None, refusal="no")).refusal
    as_dict = _completion("hi").model_dump()
    assert "hi" == to_reply(as_dict).content
    assert Reply("x", "length") == to_reply({"content": "x", "finish_reason": "length"})
    assert None is to_reply({"choices": []}).content
    assert "ab" == to_reply({"content": [{"type": "text", "text": "a"}, {"text": "b"}]}).content
    assert "bytes" == to_reply(b"bytes").content


def test_unknown_return_type_degrades_with_api_error() -> None:
    """A call returning something unreadable degrades instead of raising."""
    outcome = Healer(Point).run(lambda messages, **_: 42, "p")
    assert isinstance(outcome, healjson.Degraded)
    assert "api_error" == outcome.reason
    assert "int" in outcome.errors[0].value


def test_healer_heals_a_chat_completion_and_sums_reported_usage() -> None:
    """A fenced ChatCompletion answer heals in one call with the provider's token counts."""
    completion = _completion('```json\n{"x": 1, "y": 2}\n```')
    outcome = Healer(Point).run(lambda messages, **_: completion, "p")
    assert isinstance(outcome, healjson.Healed)
    assert Point(x=1, y=2) == outcome.value
    assert 18 == outcome.usage.total_tokens
    assert "gpt-test" == outcome.attempts[0].model


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ContentFilterFinishReasonError", "content_filter"),
        ("LengthFinishReasonError", "token_truncated"),
        ("ReadTimeout", "timeout"),
        ("APIConnectionError", "api_error"),
    ],
)
def test_exceptions_are_classified_by_class_name(name: str, kind: str) -> None:
    """SDK exceptions map to reasons by name, without importing the SDK."""
    assert kind == exception_kind(type(name, (Exception,), {})())
