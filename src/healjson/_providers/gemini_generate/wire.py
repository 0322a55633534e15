"""Gemini `generateContent` (`POST /v1beta/models/<model>:generateContent`, and its streamed
form): everything this wire format means to healjson.

- Reading: a `GenerateContentResponse` (the google-genai object, or the REST API's dict) as a
  `Reply` — the first candidate's text parts as the content, its function calls as tool calls,
  its thought parts as the reasoning; a blocked prompt or a safety stop is a content filter;
  finish reasons mapped onto OpenAI's. Fields are read in the SDK's snake_case or the REST API's
  camelCase (`finishReason`, `usageMetadata`, ...). A stream piece reads like a whole response.
- Requests: chat messages and parameters as `generate_content_stream` keywords: `contents`
  (`assistant` is `model`), the system messages the `system_instruction`, OpenAI's parameter
  names mapped (`max_tokens` to `max_output_tokens`, `stop` to `stop_sequences`).
- Where the google-genai client keeps its credentials, and that `google`'s exceptions
  (`google.genai.errors`, `google.api_core.exceptions`) are the provider's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel

from healjson._core.wire.delta import Delta
from healjson._core.wire.formats import WireFormat
from healjson._core.wire.reply import (
    Reply,
    ToolCall,
    Usage,
    new_reply,
    new_usage,
    remember_reader,
)
from healjson._providers._fields import (
    MAX_COUNT,
    as_int,
    as_list,
    counts,
    first_item,
    get_field,
    get_field_either,
    is_record,
    json_text,
    message_text,
    opt_str,
    output_token_limit,
    with_output_token_limit,
)
from healjson._providers._unreadable import (
    not_a_reply,
    unreadable_as_failure,
    unreadable_reply,
    wrong_chunk_text,
    wrong_text,
)
from healjson._providers.tiers import JsonMode, Shapeable, prompted

from .schema import GeminiSchemaUnsupported
from .schema import shared_gemini_schema as gemini_schema  # one per target
from .system import with_instruction

__all__ = [
    "FORMAT",
    "chooses_format",
    "content_messages",
    "content_text",
    "enforced_schema",
    "gemini_request",
    "is_tier_rejection",
    "read_response",
    "tier_request",
]

# a Gemini response without `candidates` (a blocked prompt); not `usage_metadata`, which
# LangChain's message dicts have too
_GEMINI_KEYS = ("candidates", "promptFeedback", "prompt_feedback", "usageMetadata")
_GEMINI_FILTERED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)


_MODEL: Final = ("model_version", "modelVersion")


@unreadable_reply(lambda obj: _usage(obj, opt_str(get_field_either(obj, *_MODEL))))
def _gemini(obj: Any) -> Reply:
    """A Gemini `GenerateContentResponse`: the first candidate's text parts as the content, its
    function calls as tool calls, its thought parts as the reasoning; a blocked prompt or a
    safety stop is a content filter. google-genai's own class is read by `read_response` from
    now on. A response with no `candidates` list and no blocked prompt (an error body, `{}`:
    google-genai builds an empty response of it), or a part whose text is not a string, is no
    response (`UnreadableReply`); an empty list is a response with no answer."""
    return _read(obj, True)


def _read(obj: Any, whole: bool) -> Reply:
    """`_gemini`; not `whole` (a stream piece): a piece without a candidate is one (its usage,
    or nothing at all)."""
    if type(obj).__module__.startswith("google.genai.") and isinstance(obj, BaseModel):
        remember_reader(type(obj), read_response)
    model = opt_str(get_field_either(obj, *_MODEL))
    usage = _usage(obj, model)
    candidates = get_field(obj, "candidates")
    candidate = first_item(candidates)
    if candidate is None:
        feedback = get_field_either(obj, "prompt_feedback", "promptFeedback") or {}
        blocked = get_field_either(feedback, "block_reason", "blockReason")
        if whole and not blocked and not isinstance(candidates, list | tuple):
            raise not_a_reply("a Gemini response", "no `candidates` and no blocked prompt", obj)
        return new_reply(None, "content_filter" if blocked else None, None, usage, model)
    if not is_record(candidate):
        raise not_a_reply("a Gemini response", "its first candidate is no object", obj)
    parts = as_list(get_field(get_field(candidate, "content") or {}, "parts"))
    texts: list[str] = []
    thoughts: list[str] = []
    for index, part in enumerate(parts):
        text = get_field(part, "text")
        if text is None or text == "":
            continue
        if not isinstance(text, str):  # a stream piece's: no chunk of a reply, the part named
            at = f"candidates[0].content.parts[{index}].text"
            raise wrong_text(text) if whole else wrong_chunk_text(at, text)
        (thoughts if get_field(part, "thought") else texts).append(text)
    content: str | None = "".join(texts) if texts else None
    functions = [f for p in parts if (f := get_field_either(p, "function_call", "functionCall"))]
    calls = tuple(  # Gemini's calls have no ids (or only some do): each gets its position's
        ToolCall(
            str(get_field(f, "name") or ""),
            json_text(get_field(f, "args")),
            opt_str(get_field(f, "id")) or f"call_{index}",
            as_object=True,  # the provider's object: a cut reply's may have been closed
        )
        for index, f in enumerate(functions)
    )
    finish = _finish(get_field_either(candidate, "finish_reason", "finishReason"))
    reasoning = "\n\n".join(thoughts) or None
    return new_reply(content, finish, None, usage, model, reasoning, calls)


def _usage(obj: Any, model: str | None) -> Usage | None:
    """A response's `usageMetadata` (also a stream piece's), None without counts; a count that
    is no count is unreported (`_fields.counts`)."""
    meta = get_field_either(obj, "usage_metadata", "usageMetadata")
    if meta is None:
        return None
    prompt = get_field_either(meta, "prompt_token_count", "promptTokenCount")
    completion = get_field_either(meta, "candidates_token_count", "candidatesTokenCount")
    found = counts(prompt, completion)
    if found is None:
        return None
    prompt, completion, estimated = found
    thinking = as_int(get_field_either(meta, "thoughts_token_count", "thoughtsTokenCount"))
    cached = as_int(get_field_either(meta, "cached_content_token_count", "cachedContentTokenCount"))
    # Gemini counts thoughts apart from the candidates; both are output tokens
    return new_usage(
        prompt,
        completion + thinking,
        estimated,
        reasoning_tokens=thinking,
        cache_read_tokens=cached,
        requests=1,
        model=model,
    )


def _finish(raw_finish: Any) -> str | None:
    """A candidate's finish reason (an SDK enum, or its name) as OpenAI's finish reason."""
    name = getattr(raw_finish, "name", None)
    if not isinstance(name, str) or not name:
        name = None if raw_finish is None else str(raw_finish)
    if name is None:
        return None
    name = name.rsplit(".", 1)[-1].upper()
    if name == "MAX_TOKENS":
        return "length"
    if name in _GEMINI_FILTERED:
        return "content_filter"
    return "stop" if name == "STOP" else name.lower()


def read_response(obj: Any) -> Reply:
    """google-genai's `GenerateContentResponse` whose first candidate holds one text part (a
    JSON answer's), read by plain attribute access; anything else goes to the generic reader
    (`_gemini`), with which it agrees on every response."""
    try:
        candidates, meta, model = obj.candidates, obj.usage_metadata, obj.model_version
        if type(candidates) is not list or not candidates or meta is None:
            return _gemini(obj)
        candidate = candidates[0]
        parts = candidate.content.parts
        if type(parts) is not list or len(parts) != 1:
            return _gemini(obj)
        part = parts[0]
        text, thought, function = part.text, part.thought, part.function_call
        prompt, completion = meta.prompt_token_count, meta.candidates_token_count
        thinking, cached = meta.thoughts_token_count, meta.cached_content_token_count
        raw_finish = candidate.finish_reason
    except AttributeError:
        return _gemini(obj)
    if (
        type(text) is not str
        or not text
        or thought
        or function is not None
        or type(model) is not str
        or type(prompt) is not int
        or type(completion) is not int
        or not 0 <= prompt <= MAX_COUNT  # no count: read (and estimated) by `_gemini`
        or not 0 <= completion <= MAX_COUNT
    ):
        return _gemini(obj)
    if thinking is None:
        thinking = 0
    elif type(thinking) is not int or not 0 <= thinking <= MAX_COUNT:
        return _gemini(obj)
    if cached is None:
        cached = 0
    elif type(cached) is not int or not 0 <= cached <= MAX_COUNT:
        return _gemini(obj)
    key = (type(raw_finish), raw_finish)
    finish = _FINISHES.get(key, _UNSEEN)
    if finish is _UNSEEN:
        finish = _finish(raw_finish)
        if len(_FINISHES) < 64:  # the SDK's enum members, a few strings: bounded
            _FINISHES[key] = finish
    usage = new_usage(prompt, completion + thinking, False, thinking, cached, 0, 1, model)
    return new_reply(text, finish, None, usage, model)


# finish reasons already mapped, by exact class and value (`_finish` reads an enum's name)
_FINISHES: dict[tuple[type, Any], str | None] = {}
_UNSEEN: Any = object()


# what marks a Gemini stream piece without candidates: its usage, a blocked prompt's feedback,
# or only its metadata (google-genai's object has each as an attribute, the wire in camelCase)
_GEMINI_PIECE = (
    "usage_metadata",
    "usageMetadata",
    "prompt_feedback",
    "promptFeedback",
    "model_version",
    "modelVersion",
    "response_id",
    "responseId",
)


@unreadable_as_failure
def _gemini_piece(chunk: Any) -> Delta:
    reply = _read(chunk, False)  # one piece reads like a whole response
    usage = reply.usage
    if usage is not None and reply.finish_reason is None and _candidate(chunk):
        # a piece of the answer before its end: a running count (the last piece's is final)
        usage = dataclasses.replace(usage, estimated=True)
    return Delta(
        text=reply.content or "",
        reasoning=reply.reasoning or "",
        tool_calls=reply.tool_calls,  # each call comes whole
        finish_reason=reply.finish_reason,
        usage=usage,
        model=reply.model,
    )


def _candidate(chunk: Any) -> bool:
    """Whether a stream piece carries a candidate (a piece of the answer, not only metadata)."""
    return first_item(get_field(chunk, "candidates")) is not None


# --- requests -----------------------------------------------------------------------------

# OpenAI's parameter names as Gemini's (any other goes into the config as given)
_RENAMED: Final = {
    "max_tokens": "max_output_tokens",
    "max_completion_tokens": "max_output_tokens",
    "stop": "stop_sequences",
}


def gemini_request(
    messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Chat messages and parameters as `generate_content_stream` keywords."""
    system = [message_text(m.get("content")) for m in messages if m.get("role") == "system"]
    contents = [
        {
            "role": "model" if m.get("role") == "assistant" else "user",
            "parts": [{"text": message_text(m.get("content"))}],
        }
        for m in messages
        if m.get("role") != "system"
    ]
    config: dict[str, Any] = {}
    model = None
    for name, value in params.items():
        if name == "model":
            model = value
        elif name not in ("stream", "response_format", "stream_options"):
            config[_RENAMED.get(name, name)] = value
    if system:
        config["system_instruction"] = "\n\n".join(system)
    return {"model": model, "contents": contents, "config": config or None}


# --- native requests: the JSON tiers, in the chat tiers' places -----------------------------
#
# - `json_schema`: `response_mime_type="application/json"` and `response_json_schema`, the
#   schema in Gemini's dialect (`gemini_schema`: what it cannot say moves into descriptions,
#   and pydantic checks it locally);
# - `json_object`: `response_mime_type="application/json"`, the schema in the instruction;
# - `prompt`: the schema in the system instruction only.

_FORMAT_KEYS: Final = ("response_mime_type", "response_schema", "response_json_schema")
_SCHEMA_KEYS: Final = ("response_schema", "response_json_schema")


def chooses_format(params: Mapping[str, Any]) -> bool:
    """True when the caller's config chooses the output format itself."""
    return any(params.get(key) is not None for key in _FORMAT_KEYS)


def content_messages(contents: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """`generate_content`'s `contents` as the `Content`s to send as given, and their text as chat
    messages, one per content (`model` is `assistant`). A text, or a list of texts and parts,
    is one user content (as google-genai reads it); a list of `Content`s (objects or dicts with
    `role` / `parts`) is those contents."""
    if type(contents) is str:  # the common call: one text, one user content
        return [{"role": "user", "parts": [{"text": contents}]}], [
            {"role": "user", "content": contents}
        ]
    items = list(contents) if isinstance(contents, list | tuple) else [contents]
    if not items or not all(_is_content(item) for item in items):
        parts = [{"text": item} if isinstance(item, str) else item for item in items]
        items = [{"role": "user", "parts": parts}]
    messages = [
        {
            "role": "assistant" if get_field(item, "role") == "model" else "user",
            "content": content_text(item),
        }
        for item in items
    ]
    return items, messages


def _is_content(item: Any) -> bool:
    return not isinstance(item, str) and get_field(item, "parts") is not None


def content_text(item: Any) -> str:
    """The text parts of a `Content` (object or dict) joined, or a text as it is."""
    if isinstance(item, str):
        return item
    parts = get_field(item, "parts") or []
    return "".join(str(get_field(part, "text") or "") for part in parts)


def tier_request(
    mode: JsonMode | None,
    target: Shapeable,
    messages: Sequence[dict[str, Any]],
    params: Mapping[str, Any],
    originals: Sequence[Any] = (),
    *,
    text: str | None = None,
    system: Any = None,
) -> tuple[JsonMode | None, dict[str, Any]]:
    """`generate_content` keywords asking for `target` in tier `mode` (`json_schema`,
    `json_object`, `prompt`), and the tier used. `originals`: the caller's own contents, sent
    as given in place of the first messages (their text renditions), so no part is lost.
    `text`: the caller's `contents` when they are one text (`originals` its user content), sent
    as it is when the request holds nothing more (google-genai reads a text as that content).
    `system`: the caller's `system_instruction` (the first message its rendering,
    `system.system_text`), sent as given; a tier's own instruction a text part beside its
    parts (`system.with_instruction`)."""
    if system is not None and messages and messages[0].get("role") == "system":
        messages = messages[1:]  # the rendering: the caller's own is sent
    extra: dict[str, Any] = {}
    if mode is None:  # the caller's own format; the schema stated when it names none
        named = any(params.get(key) is not None for key in _SCHEMA_KEYS)
        shaped = list(messages) if named else prompted(target, messages)
    elif mode == "json_schema" and (schema := _dialect(target)) is not None:
        shaped = list(messages)
        extra = {"response_mime_type": "application/json", "response_json_schema": schema}
    else:
        if mode == "json_schema":  # a structure the dialect cannot say
            mode = "json_object"
        shaped = prompted(target, messages)
        if mode == "json_object":
            extra = {"response_mime_type": "application/json"}
    body = gemini_request(shaped, {**params, **extra})
    if system is not None:
        config = body["config"] or {}
        added = config.get("system_instruction")
        config["system_instruction"] = system if added is None else with_instruction(system, added)
        body["config"] = config
    if text is not None and len(originals) == len(body["contents"]) == 1:
        body["contents"] = text
    elif originals:
        body["contents"] = [*originals, *body["contents"][len(originals) :]]
    return mode, body


def _dialect(target: Shapeable) -> dict[str, Any] | None:
    try:
        return gemini_schema(target.json_schema)
    except GeminiSchemaUnsupported:
        return None


def enforced_schema(
    mode: JsonMode | None, target: Shapeable, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The schema a request in tier `mode` asks Gemini to enforce, as sent (its
    `response_json_schema`), None when it asks none (the caller's own format included)."""
    if mode != "json_schema" or chooses_format(params):
        return None
    return _dialect(target)


_FEATURES: Final[dict[str, tuple[str, ...]]] = {
    "json_schema": ("response_json_schema", "responsejsonschema", "response_schema",
                    "responseschema", "json schema", "response_mime_type", "responsemimetype"),
    "json_object": ("response_mime_type", "responsemimetype"),
}  # fmt: skip


def is_tier_rejection(exc: BaseException, mode: JsonMode | None) -> bool:
    """True for an HTTP 400 (google-genai's `code`) whose message names tier `mode`'s feature."""
    words = _FEATURES.get(mode or "")
    status = getattr(exc, "code", None) or getattr(exc, "status_code", None)
    if not words or status != 400:
        return False
    text = str(getattr(exc, "message", "") or exc).lower()
    return any(word in text for word in words)


def _reads_reply(obj: Any) -> bool:
    return hasattr(obj, "candidates")


def _reads_dict(obj: Mapping[str, Any]) -> bool:
    return any(key in obj for key in _GEMINI_KEYS)


def _reads_chunk(chunk: Any) -> bool:
    """A Gemini stream piece: one with candidates or a field only pieces have, or
    google-genai's own response object even with no field set (an empty piece: `data: {}`)."""
    if get_field(chunk, "candidates") is not None or any(
        get_field(chunk, key) is not None for key in _GEMINI_PIECE
    ):
        return True
    return type(chunk).__module__.startswith("google.genai.") and hasattr(chunk, "candidates")


FORMAT = WireFormat(
    "gemini_generate",
    _reads_reply,
    _gemini,
    reads_dict=_reads_dict,
    reads_chunk=_reads_chunk,
    read_chunk=_gemini_piece,
    fast_reply=read_response,
    token_limit=output_token_limit,
    with_token_limit=with_output_token_limit,
)
"""(Its client's credentials and error package: its line in the registry.)"""
