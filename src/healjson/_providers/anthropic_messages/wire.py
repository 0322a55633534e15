"""Anthropic messages (`POST /v1/messages`): everything this wire format means to healjson.

- Reading: a `Message` (object or dict: `content` blocks and `stop_reason`) as a `Reply` — text
  blocks joined as the content, `tool_use` blocks as tool calls, `thinking` blocks as the
  reasoning, a `refusal` stop as the refusal; stop reasons mapped onto OpenAI's finish reasons
  (`length` for a token cut); usage with the prompt cache's reads and writes counted in the
  prompt. A stream event as a `Delta`: `events.py` (with the stop reasons and the usage).
- Requests: chat messages and parameters as a Messages request (`anthropic_request`: system
  messages to the top-level `system`, `max_tokens` for OpenAI's `max_completion_tokens`); the
  Message Batches lines are `batch_lines.py`'s.
- Where the `anthropic` client keeps its credentials, which of its methods an instrumentation
  wraps, and that `anthropic`'s exceptions are the provider's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel

from healjson._core.judge.check import ANSWER_TOOL, caller_tools
from healjson._core.parse import read
from healjson._core.wire.formats import WireFormat
from healjson._core.wire.reply import Reply, ToolCall, new_reply, new_usage, remember_reader
from healjson._providers._fields import MAX_COUNT, get_field, json_text, message_text, opt_str
from healjson._providers._unreadable import not_a_reply, unreadable_reply, wrong_text
from healjson._providers.tiers import JsonMode, Shapeable, prompted

from .events import FINISH, anthropic_event, anthropic_usage
from .schema import AnthropicSchemaUnsupported
from .schema import shared_anthropic_schema as anthropic_schema  # one per target

__all__ = [
    "FINISH",
    "FORMAT",
    "anthropic_request",
    "anthropic_usage",
    "chooses_format",
    "enforced_schema",
    "is_tier_rejection",
    "messages_request",
    "read_message",
    "thinking_on",
    "tier_request",
    "used_tier",
]


@unreadable_reply(
    lambda obj: anthropic_usage(
        get_field(obj, "usage"), requests=1, model=opt_str(get_field(obj, "model"))
    )
)
def _anthropic(obj: Any) -> Reply:
    """An Anthropic `Message`: text blocks joined as the content, `tool_use` blocks as tool
    calls, `thinking` blocks as the reasoning; a `refusal` stop's message is
    `stop_details.explanation`, else the text. The `anthropic` SDK's own class is read by
    `read_message` from now on. A message with no `content` list (an error body, `{}`), or a
    text block whose text is not a string, is no message (`UnreadableReply`)."""
    if type(obj).__module__.startswith("anthropic.") and isinstance(obj, BaseModel):
        remember_reader(type(obj), read_message)
    blocks = get_field(obj, "content")
    if not isinstance(blocks, list | tuple):
        raise not_a_reply("an Anthropic message", "no `content` list", obj)
    texts: list[str] = []
    for block in blocks:
        if get_field(block, "type") == "text":
            text = get_field(block, "text")
            if not isinstance(text, str):
                raise wrong_text(text)
            texts.append(text)
    content: str | None = "".join(texts) if texts else None
    thoughts = [
        str(get_field(b, "thinking") or "") for b in blocks if get_field(b, "type") == "thinking"
    ]
    calls = tuple(
        ToolCall(
            str(get_field(b, "name") or ""),
            json_text(get_field(b, "input")),
            opt_str(get_field(b, "id")),
            as_object=True,  # the provider's object: a cut reply's may have been closed
        )
        for b in blocks
        if get_field(b, "type") == "tool_use"
    )
    stop = opt_str(get_field(obj, "stop_reason"))
    refusal = None
    if stop == "refusal":
        explanation = get_field(get_field(obj, "stop_details") or {}, "explanation")
        refusal = opt_str(explanation) or content or "refused"
    model = opt_str(get_field(obj, "model"))
    usage = anthropic_usage(get_field(obj, "usage"), requests=1, model=model)
    finish = None if stop is None else FINISH.get(stop, stop)
    return new_reply(
        None if refusal else content,
        finish,
        refusal,
        usage,
        model,
        "\n\n".join(t for t in thoughts if t) or None,
        calls,
    )


def read_message(obj: Any) -> Reply:
    """The `anthropic` SDK's `Message` with one text block (native structured output's answer),
    read by plain attribute access; anything else goes to the generic reader (`_anthropic`),
    with which it agrees on every message."""
    try:
        blocks, stop, usage, model = obj.content, obj.stop_reason, obj.usage, obj.model
        if type(blocks) is not list or len(blocks) != 1 or type(model) is not str:
            return _anthropic(obj)
        block = blocks[0]
        text = block.text if block.type == "text" else None
        prompt, completion = usage.input_tokens, usage.output_tokens
        read, written = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
        details = usage.output_tokens_details
    except AttributeError:
        return _anthropic(obj)
    if (
        type(text) is not str
        or type(stop) is not str
        or stop == "refusal"
        or type(prompt) is not int
        or type(completion) is not int
        or not 0 <= prompt <= MAX_COUNT  # no count: read (and estimated) by `_anthropic`
        or not 0 <= completion <= MAX_COUNT
        or details is not None
    ):
        return _anthropic(obj)
    if read is None:
        read = 0
    elif type(read) is not int or not 0 <= read <= MAX_COUNT:
        return _anthropic(obj)
    if written is None:
        written = 0
    elif type(written) is not int or not 0 <= written <= MAX_COUNT:
        return _anthropic(obj)
    return new_reply(
        text,
        FINISH.get(stop, stop),
        None,
        new_usage(prompt + read + written, completion, False, 0, read, written, 1, model),
        model,
    )


# --- requests -----------------------------------------------------------------------------


_UNKNOWN: Any = object()  # `shared` not given: found from the messages


def anthropic_request(
    messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Chat messages and parameters as an Anthropic Messages request: the system messages joined
    into the top-level `system`, OpenAI's `max_completion_tokens` named `max_tokens`."""
    return _with_messages(messages, dict(params))


def _with_messages(
    messages: Sequence[Mapping[str, Any]], body: dict[str, Any], shared: Any = _UNKNOWN
) -> dict[str, Any]:
    """`anthropic_request` into `body`, a fresh copy of the parameters. A repair's messages
    (`RequestMessages`) open with the original request's: the last of those (`shared`, found
    here when not given) gets a `cache_control` mark, so the repair writes the shared prefix to
    Anthropic's prompt cache and the next repair reads it back."""
    if shared is _UNKNOWN:
        shared = shared_end(messages)
    turns = _text_turns(messages) if shared is None else None
    system: list[str] = []
    if turns is None:
        system = [message_text(m.get("content")) for m in messages if m.get("role") == "system"]
        turns = _turns([m for m in messages if m.get("role") != "system"], shared)
    body["messages"] = turns
    if "max_completion_tokens" in body:  # OpenAI's name (the truncation strategy may set it)
        body["max_tokens"] = body.pop("max_completion_tokens")
    if system:
        ours = "\n\n".join(system)
        given = body.get("system")
        if isinstance(given, str) and given:  # the caller's own system prompt comes first
            body["system"] = f"{given}\n\n{ours}"
        elif isinstance(given, list | tuple) and given:  # text blocks (cache control kept)
            body["system"] = [*given, {"type": "text", "text": ours}]
        else:
            body["system"] = ours
    return body


def _text_turns(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The common request's turns: user and assistant text messages, kept as they are (what
    `_turns` makes of them, without its checks); None when any other message is there."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant") or type(content) is not str or "tool_calls" in message:
            return None
        turns.append({"role": role, "content": content})
    return turns


def shared_end(messages: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The last message (not a system one) of the original request a repair's messages open
    with (`RequestMessages.shared_prefix`); None for a first request."""
    if type(messages) is list or type(messages) is tuple:  # not a repair's `RequestMessages`
        return None
    count: int = getattr(messages, "shared_prefix", 0)
    found: Mapping[str, Any]
    for found in reversed(messages[:count]):
        if found.get("role") != "system":
            return found
    return None


_CACHE_MARK: Final = {"type": "ephemeral"}


def _marked(turn: dict[str, Any]) -> None:
    """`turn`'s last content block marked for the prompt cache (a text content as one block)."""
    content = turn.get("content")
    if isinstance(content, str):
        turn["content"] = [{"type": "text", "text": content, "cache_control": dict(_CACHE_MARK)}]
    elif isinstance(content, list) and content and isinstance(content[-1], Mapping):
        turn["content"] = [*content[:-1], {**content[-1], "cache_control": dict(_CACHE_MARK)}]


def _turns(
    messages: Sequence[Mapping[str, Any]], shared: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Chat messages as Messages turns. The engine's tool-call exchange (an assistant turn with
    `tool_calls`, `tool` messages answering them) becomes Anthropic's: `tool_use` blocks in the
    assistant turn (the arguments as the `input` object; `{}` for text that is none), the
    answers `tool_result` blocks of one user turn, the user message after them in that turn
    too. Any other message is kept as it is (role and content)."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        calls = message.get("tool_calls")
        if role == "assistant" and calls:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
            blocks += (_tool_use(call) for call in calls)
            turns.append({"role": "assistant", "content": blocks})
        elif role == "tool" and message.get("tool_call_id") is not None:
            result = {"type": "tool_result", "tool_use_id": message["tool_call_id"],
                      "content": message_text(content)}  # fmt: skip
            _join_user(turns, [result])
        elif role == "user" and turns and _holds_results(turns[-1]):
            _join_user(turns, [{"type": "text", "text": message_text(content)}])
        else:
            turns.append({"role": role, "content": content})
        if message is shared and turns:
            _marked(turns[-1])
    return turns


def _tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    """A chat tool call as a `tool_use` block, whose `input` must be an object: the arguments
    as JSON, else as L1 reads them (a repair quotes a broken call back as the model can read
    it: `{'days': 0}` as `{"days": 0}`), else empty (nothing of an object in them)."""
    function = get_field(call, "function") or {}
    arguments = get_field(function, "arguments")
    try:
        found = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        found = read(arguments, None, from_tool=True).value
    return {"type": "tool_use", "id": str(get_field(call, "id") or ""),
            "name": str(get_field(function, "name") or ""),
            "input": found if isinstance(found, dict) else {}}  # fmt: skip


def _holds_results(turn: Mapping[str, Any]) -> bool:
    content = turn.get("content")
    return (
        turn.get("role") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _join_user(turns: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> None:
    if turns and _holds_results(turns[-1]):
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": "user", "content": blocks})


DEFAULT_MAX_TOKENS: Final = 4096
"""Anthropic requires `max_tokens`: this when a call gives none."""


def messages_request(
    messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any], shared: Any = _UNKNOWN
) -> dict[str, Any]:
    """A call in the prompt tier as `messages.create` keywords: no `response_format` (Anthropic
    has none), `max_tokens` as given or `DEFAULT_MAX_TOKENS`."""
    body = dict(params)
    body.pop("response_format", None)
    body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    return _with_messages(messages, body, shared)


# --- requests: the structured-output tiers, strongest first ----------------------------------
#
# Anthropic's three tiers sit in the places of the chat format's (`JsonMode`), so one
# `FormatState` negotiates them:
# - `json_schema`: native structured output, `output_config={"format": {"type": "json_schema",
#   "schema": ...}}` with the schema in Anthropic's dialect (`anthropic_schema`);
# - `json_object`: a forced tool whose input is the answer (`tools=[{"name", "input_schema",
#   "strict": true}]`, `tool_choice={"type": "tool", ...}`; not strict when the dialect cannot
#   express the schema); skipped with extended thinking on (Anthropic refuses a forced tool then),
#   with the caller's own tools (forcing ours would override their tool choice) and for an
#   answer that is not an object (a tool's input is one);
# - `prompt`: the schema in the system prompt.
# An HTTP 400 naming a tier's feature steps it down (`is_tier_rejection`).


def chooses_format(params: Mapping[str, Any]) -> bool:
    """True when the caller's parameters choose the output themselves (an `output_config`
    format): healjson shapes nothing then. The caller's tools choose nothing: native structured
    output is sent beside them, and the forced tool's tier is skipped (`tier_request`)."""
    config = params.get("output_config")  # None first: an ABC check is slow
    return config is not None and isinstance(config, Mapping) and bool(config.get("format"))


def _no_answer_tool(params: Mapping[str, Any]) -> bool:
    """True when the forced answer tool cannot be sent: extended thinking is on (Anthropic
    refuses a forced tool then), or the caller gave tools of its own (forcing ours would
    override the caller's tool choice)."""
    return thinking_on(params) or caller_tools(params)


def thinking_on(params: Mapping[str, Any]) -> bool:
    """True when the request turns extended thinking on (`enabled` or `adaptive`)."""
    thinking = params.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, Mapping) else None
    return kind is not None and kind != "disabled"


def tier_request(
    mode: JsonMode | None,
    target: Shapeable,
    messages: Sequence[dict[str, Any]],
    params: Mapping[str, Any],
    *,
    text_only: bool = False,
) -> tuple[JsonMode | None, dict[str, Any]]:
    """`messages.create` keywords asking for `target` in tier `mode`, and the tier really used
    (a tier the schema or the request rules out goes one weaker; `mode` None: the caller's own
    `output_config` format, sent as given). The caller's tools are sent beside the tier's
    format. `text_only`: the answer must be a text block (the SDK's own `parse` /
    `stream(output_format=M)`, whose `ParsedMessage` carries its value on one), so the forced
    tool's tier is skipped."""
    shared = shared_end(messages)  # found before any copy of the list (a repair's mark)
    if mode is None:
        return None, messages_request(messages, params, shared)
    schema = target.json_schema
    if mode == "json_schema":
        try:
            closed = anthropic_schema(schema)
        except AnthropicSchemaUnsupported:
            mode = "json_object"
        else:
            body = messages_request(messages, params, shared)
            config = params.get("output_config")  # None first: an ABC check is slow
            kept = {} if config is None or not isinstance(config, Mapping) else config
            body["output_config"] = {**kept, "format": {"type": "json_schema", "schema": closed}}
            return mode, body
    if mode == "json_object" and not text_only:
        schema = _inline_root(schema)
        if _no_answer_tool(params) or schema.get("type") != "object":
            mode = "prompt"
        else:
            body = messages_request(messages, params, shared)
            body["tools"] = [_answer_tool(schema)]
            body["tool_choice"] = {"type": "tool", "name": body["tools"][0]["name"]}
            return mode, body
    return "prompt", messages_request(prompted(target, messages), params, shared)


def used_tier(mode: JsonMode, target: Shapeable, params: Mapping[str, Any]) -> JsonMode | None:
    """The tier a request in tier `mode` really uses for `target` (as `tier_request` shapes
    it), None for the caller's own format."""
    if chooses_format(params):
        return None
    if mode == "json_schema":
        try:
            anthropic_schema(target.json_schema)
        except AnthropicSchemaUnsupported:
            mode = "json_object"
        else:
            return mode
    if mode == "json_object":
        schema = _inline_root(target.json_schema)
        if not _no_answer_tool(params) and schema.get("type") == "object":
            return mode
    return "prompt"


def enforced_schema(
    mode: JsonMode, target: Shapeable, params: Mapping[str, Any], *, text_only: bool = False
) -> dict[str, Any] | None:
    """The schema a request in tier `mode` asks Anthropic to enforce, as sent (native structured
    output's, or the strict tool's input schema), None when it asks none: the prompt tier, a
    tool that cannot be strict, the caller's own format (`text_only` as for `tier_request`)."""
    if chooses_format(params):
        return None
    schema = target.json_schema
    if mode == "json_schema":
        try:
            return anthropic_schema(schema)
        except AnthropicSchemaUnsupported:
            mode = "json_object"
    if mode == "json_object" and not text_only:
        schema = _inline_root(schema)
        if _no_answer_tool(params) or schema.get("type") != "object":
            return None
        try:
            return anthropic_schema(schema)
        except AnthropicSchemaUnsupported:
            return None  # a tool that is not strict: nothing enforced
    return None


def _inline_root(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A root `$ref` into `$defs` (a recursive model's schema) replaced by its definition, the
    definitions kept: a tool's `input_schema` must be an object at its root."""
    ref = schema.get("$ref")
    defs = schema.get("$defs")
    if not isinstance(ref, str) or not isinstance(defs, Mapping):
        return schema
    found = defs.get(ref.removeprefix("#/$defs/"))
    return {**found, "$defs": defs} if isinstance(found, Mapping) else schema


def _answer_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    title = schema.get("title")
    name = re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64] if isinstance(title, str) else ""
    tool: dict[str, Any] = {"name": name or ANSWER_TOOL}
    description = schema.get("description")
    tool["description"] = (
        description if isinstance(description, str) and description else "Record the answer."
    )
    try:
        tool["input_schema"] = anthropic_schema(schema)
        tool["strict"] = True
    except AnthropicSchemaUnsupported:
        tool["input_schema"] = dict(schema)
    return tool


# what a 400 says when it rejects a tier's own parameter (the one the tier adds to the caller's
# request): native structured output's `output_config` (or the older `output_format`), the
# forced tool's `tools.0` / `tool_choice` / strict tools. Not any 400 that mentions a schema or
# a tool: the caller's messages hold tool results, their fields have schemas.
_FEATURES: Final[dict[str, re.Pattern[str]]] = {
    "json_schema": re.compile(r"\boutput_(?:config|format)\b|\bstructured outputs?\b"),
    "json_object": re.compile(r"\btools\.0\b|\btool_choice\b|\bstrict tools?\b"),
}


def is_tier_rejection(exc: BaseException, mode: JsonMode | None) -> bool:
    """True for an HTTP 400 that rejects tier `mode`'s own parameter (unsupported there)."""
    pattern = _FEATURES.get(mode or "")
    if pattern is None or getattr(exc, "status_code", None) != 400:
        return False
    text = str(getattr(exc, "message", "") or exc).lower()
    return pattern.search(text) is not None


def _reads_reply(obj: Any) -> bool:
    return hasattr(obj, "stop_reason") and isinstance(getattr(obj, "content", None), list)


def _reads_dict(obj: Mapping[str, Any]) -> bool:
    return "stop_reason" in obj and isinstance(obj.get("content"), list)


def _reads_chunk(chunk: Any) -> bool:
    return isinstance(get_field(chunk, "type"), str)


FORMAT = WireFormat(
    "anthropic_messages",
    _reads_reply,
    _anthropic,
    reads_dict=_reads_dict,
    reads_chunk=_reads_chunk,
    read_chunk=anthropic_event,
    fast_reply=read_message,
)
"""(Its client's credentials, SDK methods and error package: its line in the registry.)"""
