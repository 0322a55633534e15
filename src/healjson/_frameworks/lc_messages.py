"""LangChain messages as healjson reads them, and healjson's repair turns as LangChain messages;
an agent's response format as the structured response's runs read it (`StructuredFormat`).

Needs `langchain` and `langchain-core` (the `langchain` extra); imported by `healjson.langchain`
only.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain.agents.structured_output import AutoStrategy, ProviderStrategy, ToolStrategy
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call

from healjson import Flag, Healed, Outcome, Reply, ToolCall, Usage
from healjson._providers._fields import as_int, counts

from .core import target_for

__all__ = ["StructuredFormat", "as_dicts", "call_text", "reply_of", "turns"]


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
    found = tuple(  # parsed args: LangChain's parser (a partial one for a stream) made them
        ToolCall(
            str(c.get("name") or ""),
            call_text(c),
            c.get("id"),
            as_object=not isinstance(c.get("args"), str),
        )
        for c in calls
    )
    return Reply(
        content,
        metadata.get("finish_reason"),
        refusal=refusal if isinstance(refusal, str) and refusal else None,
        usage=_usage(ai),
        model=metadata.get("model_name") or metadata.get("model"),
        tool_calls=found,
    )


def _usage(ai: AIMessage) -> Usage:
    """The message's `usage_metadata`, read by the rule every provider's reader follows
    (`counts`): a count that is no count (absent, negative, a bool, no int) is unreported, 0
    with the usage marked `estimated` (the loop estimates it)."""
    found = ai.usage_metadata
    if not found:
        return Usage(requests=1, estimated=True)
    given: Mapping[str, Any] = found
    read = given.get("input_token_details") or {}
    wrote = given.get("output_token_details") or {}
    pair = (given.get("input_tokens"), given.get("output_tokens"))
    # neither a count: both unreported (0, estimated)
    prompt, completion, estimated = counts(*pair) or (0, 0, True)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        reasoning_tokens=as_int(wrote.get("reasoning")),
        cache_read_tokens=as_int(read.get("cache_read")),
        cache_write_tokens=as_int(read.get("cache_creation")),
        requests=1,
        estimated=estimated,
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


class StructuredFormat:
    """A response format as the step reads it: the schema a text answer is judged by, the
    structured tools by name (each its own member of a union), the response format that
    offers one member's tool alone (a union's), and the tool message of a structured call."""

    __slots__ = ("calls_only", "members", "narrowed", "schema", "sole", "tool_message")

    def __init__(self, response_format: Any) -> None:
        self.tool_message: str | None = None
        # a `ToolStrategy` asks for a call of its tool: an answer in the text is a recovery
        self.calls_only = isinstance(response_format, ToolStrategy)
        self.schema: Any
        self.narrowed: dict[str | None, ToolStrategy[Any]] = {}
        if response_format is None or isinstance(response_format, ProviderStrategy):
            specs = []
            self.schema = None if response_format is None else response_format.schema
        elif isinstance(response_format, ToolStrategy):
            specs = response_format.schema_specs
            self.schema = response_format.schema
            self.tool_message = response_format.tool_message_content
        else:  # a bare schema (LangChain's `AutoStrategy`): a tool, or the provider's format
            auto = isinstance(response_format, AutoStrategy)
            self.schema = response_format.schema if auto else response_format
            specs = ToolStrategy(self.schema).schema_specs
        self.members: dict[str | None, Any] = {spec.name: spec.schema for spec in specs}
        # a text answer is judged by the whole schema, which is the member's when there is one
        self.sole = specs[0].name if len(specs) == 1 else None
        if len(specs) > 1 and isinstance(response_format, ToolStrategy):
            for spec in specs:
                self.narrowed[spec.name] = ToolStrategy(
                    spec.schema,
                    tool_message_content=response_format.tool_message_content,
                    handle_errors=response_format.handle_errors,
                )

    def marked(self, outcome: Outcome[Any], calls: Sequence[Any]) -> Outcome[Any]:
        """`outcome` of a turn whose structured calls were `calls`: flagged
        `structured_from_text` when it healed from the message's text where the format asks
        for a call of its tool."""
        if not self.calls_only or calls or not isinstance(outcome, Healed):
            return outcome
        return dataclasses.replace(outcome, flags=(*outcome.flags, Flag.STRUCTURED_FROM_TEXT))

    def rules_by_member(self, rules: tuple[Any, ...]) -> dict[Any, tuple[Any, ...]]:
        """A union's contracts, member by member: those whose fields the member has (a rule
        naming no field is every member's); a rule no member can take is a mistake."""
        found: dict[Any, tuple[Any, ...]] = {}
        taken: set[int] = set()
        for schema in self.members.values():
            names = target_for(schema).field_names
            fits = tuple(rule for rule in rules if names is None or _fits(rule, names))
            taken.update(map(id, fits))
            found[schema] = fits
        for rule in rules:
            if id(rule) not in taken:
                raise ValueError(
                    f"contract {rule.name!r} names fields no member of the response format has: "
                    f"{', '.join(rule.fields)}"
                )
        return found


def _fits(rule: Any, names: Iterable[str]) -> bool:
    return all(name.split(".", 1)[0].split("[", 1)[0] in names for name in rule.fields)
