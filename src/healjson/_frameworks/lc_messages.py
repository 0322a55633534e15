"""LangChain messages as healjson reads them, and healjson's repair turns as LangChain messages.

Needs `langchain-core` (the `langchain` extra); imported by `healjson.langchain` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call

from healjson import Reply, ToolCall, Usage

__all__ = ["as_dicts", "call_text", "reply_of", "turns"]


def as_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The request's messages in the chat shape healjson keeps (its records, the contracts'
    `ctx.messages`); they are never sent from here: the agent's own messages are."""
    found = convert_to_openai_messages(list(messages))
    return [dict(message) for message in found] if isinstance(found, list) else [dict(found)]


def call_text(call: Mapping[str, Any]) -> str:
    """A tool call's arguments as text: an invalid call's as the model sent them, a parsed
    call's as JSON (LangChain parsed the model's text already)."""
    args = call.get("args")
    if isinstance(args, str):
        return args
    return json.dumps(args if args is not None else {}, ensure_ascii=False)


def reply_of(
    ai: AIMessage | None, content: str | None, calls: Sequence[Mapping[str, Any]] = ()
) -> Reply:
    """What healjson judges of one model turn: `content` (the answer's text) and `calls`, with
    the turn's finish reason, refusal, usage and model. None: the turn has no AI message."""
    if ai is None:
        return Reply(content, None, usage=Usage(requests=1))
    metadata = ai.response_metadata or {}
    refusal = ai.additional_kwargs.get("refusal")
    found = tuple(ToolCall(str(c.get("name") or ""), call_text(c), c.get("id")) for c in calls)
    return Reply(
        content,
        metadata.get("finish_reason"),
        refusal=refusal if isinstance(refusal, str) and refusal else None,
        usage=_usage(ai),
        model=metadata.get("model_name") or metadata.get("model"),
        tool_calls=found,
    )


def _usage(ai: AIMessage) -> Usage:
    found = ai.usage_metadata
    if not found:
        return Usage(requests=1, estimated=True)
    given: Mapping[str, Any] = found
    read = given.get("input_token_details") or {}
    wrote = given.get("output_token_details") or {}
    return Usage(
        prompt_tokens=int(given.get("input_tokens") or 0),
        completion_tokens=int(given.get("output_tokens") or 0),
        reasoning_tokens=int(wrote.get("reasoning") or 0),
        cache_read_tokens=int(read.get("cache_read") or 0),
        cache_write_tokens=int(read.get("cache_creation") or 0),
        requests=1,
    )


def turns(extra: Sequence[Mapping[str, Any]]) -> list[AnyMessage]:
    """The messages a healjson repair request adds to the agent's own (the model's answer as
    an assistant turn, tool messages answering its calls, the repair prompt as a user turn),
    as LangChain messages. A call's arguments that are not a JSON object go as an invalid call:
    the chat model sends its text as it was."""
    out: list[AnyMessage] = []
    for message in extra:
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else ""
        if role == "assistant":
            out.append(_assistant(text, message.get("tool_calls") or ()))
        elif role == "tool":
            out.append(ToolMessage(content=text, tool_call_id=str(message.get("tool_call_id"))))
        else:
            out.append(HumanMessage(content=text))
    return out


def _assistant(text: str, calls: Sequence[Mapping[str, Any]]) -> AIMessage:
    parsed, invalid = [], []
    for call in calls:
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        arguments, id_ = function.get("arguments"), call.get("id")
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else None
        except ValueError:
            args = None
        if isinstance(args, dict):
            parsed.append(tool_call(name=name, args=args, id=id_))
        else:
            invalid.append(invalid_tool_call(name=name, args=arguments, id=id_, error=None))
    return AIMessage(content=text, tool_calls=parsed, invalid_tool_calls=invalid)
