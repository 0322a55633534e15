"""Every tool call read from a reply has the id the next turn answers it by (chat's `id`, the
Responses API's `call_id`, Anthropic's `tool_use` id, Gemini: the call's position), and
outcome records keep it (records written before ids existed still load)."""

from __future__ import annotations

import json
from typing import Any

from healjson import Healer, HealPolicy, Reply, ToolCall, outcome_from_dict
from healjson._core.wire.reply import to_reply

ARGS = '{"city": "Oslo"}'


def test_chat_reads_each_calls_id() -> None:
    """A chat completion's tool calls are read with each call's `id`."""
    completion = {
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function",
                         "function": {"name": "weather", "arguments": ARGS}},
                        {"id": "call_2", "type": "function",
                         "function": {"name": "time", "arguments": "{}"}},
                    ],
                },
            }
        ],
    }  # fmt: skip
    calls = to_reply(completion).tool_calls
    assert [ToolCall("weather", ARGS, "call_1"), ToolCall("time", "{}", "call_2")] == list(calls)


def test_responses_reads_the_call_id_not_the_item_id() -> None:
    """A Responses function call is read with its `call_id`, not the output item's `id`."""
    response = {
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [
            {"type": "function_call", "id": "fc_9", "call_id": "call_9", "name": "weather",
             "arguments": ARGS},
        ],
    }  # fmt: skip
    assert (ToolCall("weather", ARGS, "call_9"),) == to_reply(response).tool_calls


def test_anthropic_reads_the_tool_use_id() -> None:
    """An Anthropic `tool_use` block is read with its id."""
    message = {
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_7", "name": "weather", "input": {"a": 1}}],
    }
    assert (ToolCall("weather", '{"a":1}', "toolu_7"),) == _compact(to_reply(message).tool_calls)


def test_gemini_calls_without_ids_get_their_positions() -> None:
    """Gemini function calls without ids get ids from their positions, and a call's own id is
    kept."""
    response = {
        "modelVersion": "gemini",
        "candidates": [
            {
                "finishReason": "STOP",
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "weather", "args": {"a": 1}}},
                        {"functionCall": {"name": "time", "args": {}, "id": "own"}},
                        {"functionCall": {"name": "weather", "args": {"a": 2}}},
                    ],
                },
            }
        ],
    }
    assert ["call_0", "own", "call_2"] == [c.id for c in to_reply(response).tool_calls]


def _compact(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    return tuple(
        ToolCall(c.name, json.dumps(json.loads(c.arguments), separators=(",", ":")), c.id)
        for c in calls
    )


def _outcome_with_calls() -> Any:
    healer: Healer[Any] = Healer(dict[str, int], policy=HealPolicy(max_attempts=1))
    reply = Reply(
        "Calling.",
        "tool_calls",
        tool_calls=(ToolCall("weather", ARGS, "call_1"), ToolCall("x", "{}")),
    )
    return healer.run(lambda messages, **_: reply, "hi")


def test_records_keep_the_call_ids() -> None:
    """Outcome records keep each tool call's id through JSON, and a call without an id is stored
    without one."""
    outcome = _outcome_with_calls()
    data = outcome.to_dict()
    stored = data["attempts"][0]["tool_calls"]
    assert {"name": "weather", "arguments": ARGS, "id": "call_1"} == stored[0]
    assert "id" not in stored[1]  # a call without an id is stored as before
    again = outcome_from_dict(json.loads(json.dumps(data)))
    assert outcome.attempts[0].tool_calls == again.attempts[0].tool_calls


def test_records_written_before_ids_still_load() -> None:
    """Records written before tool calls had ids still load, their calls without ids."""
    data = _outcome_with_calls().to_dict()
    for call in data["attempts"][0]["tool_calls"]:
        call.pop("id", None)
    loaded = outcome_from_dict(data)
    assert [None, None] == [c.id for c in loaded.attempts[0].tool_calls]
