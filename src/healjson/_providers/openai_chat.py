"""OpenAI chat completions (`POST /chat/completions`), and the OpenAI-compatible servers that
speak it: everything this wire format means to healjson.

- Reading: a `ChatCompletion` (object or dict: `choices[0].message`) as a `Reply`, with the
  OpenAI-compatible reasoning fields (`reasoning_content` / `reasoning`), tool calls and usage
  (cached prompt tokens, reasoning tokens); a `ChatCompletionChunk` as a `Delta` (only choice 0
  is the answer when choices interleave, `n` > 1); a bare chat message dict (`content`,
  `refusal`, `finish_reason`, ...) as a `Reply` too (`MESSAGE`, tried after every format).
- Requests: the JSON-mode tiers (`response_format`: a strict `json_schema`, `json_object`, or
  the schema in the prompt), recognising a tier's rejection, the batch line body, and the
  output-token limit (`max_completion_tokens`, else `max_tokens`).
- The Batch API's output and error file lines (`batch_result`: a `response` with its HTTP
  status and body, or an `error`, `batch_expired` among them), for both OpenAI endpoints.
- Where the `openai` client keeps its credentials, which of its methods an instrumentation
  wraps, and that `openai`'s exceptions are the provider's.

The SDK's own classes are read by plain attribute access (`read_completion`, `read_sdk_chunk`):
the registry installs them as the core's fast readers, called for every class already seen.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from healjson._core.wire.delta import SDK_CHUNKS, Delta
from healjson._core.wire.fault import fault_from_body
from healjson._core.wire.formats import WireFormat
from healjson._core.wire.reply import SDK_COMPLETIONS, Reply, Usage, new_reply, new_usage

from ._fields import MAX_COUNT, as_int, as_list, counts, get_field, is_record, opt_str, text_content
from ._unreadable import chunk_text, not_a_reply, unreadable_as_failure, unreadable_reply
from .openai_calls import chat_calls, is_custom
from .provider import BatchApi, BatchLines, Provider

if TYPE_CHECKING:
    from ._batch_results import Result
from .tiers import ENFORCING, JsonMode, Shapeable, prompted

__all__ = [
    "FORMAT",
    "MESSAGE",
    "PROVIDER",
    "batch_body",
    "batch_line",
    "batch_result",
    "constrained_format",
    "constrains_one_value",
    "enforced_schema",
    "is_format_rejection",
    "names_format",
    "read_completion",
    "read_sdk_chunk",
    "reasoning_field",
    "shape_request",
    "structured_outputs",
    "with_extra",
]


_COMPLETION = "a chat completion"


def _reads_reply(obj: Any) -> bool:
    return hasattr(obj, "choices")


def _reads_dict(obj: Mapping[str, Any]) -> bool:
    return "choices" in obj


def _read_reply(obj: Any) -> Reply:
    """A completion: the SDK's pydantic class is read by attribute from now on."""
    if isinstance(obj, BaseModel):
        if len(SDK_COMPLETIONS) < 64:  # pydantic classes with `choices`: few, but bounded
            SDK_COMPLETIONS.add(type(obj))
        return read_completion(obj)
    return _completion(obj)


def read_completion(obj: Any) -> Reply:
    """The openai SDK's `ChatCompletion`, read by plain attribute access (the happy path runs
    once per call, right after the SDK's own work); anything unusual goes to `_completion`."""
    try:
        choices = obj.choices
        if type(choices) is not list or not choices:
            return _completion(obj)
        choice = choices[0]
        message = choice.message
        content = message.content
        if type(content) is not str or not content or message.tool_calls:
            return _completion(obj)
        usage = obj.usage
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        if (
            type(prompt) is not int
            or type(completion) is not int
            or not 0 <= prompt <= MAX_COUNT
            or not 0 <= completion <= MAX_COUNT
        ):
            return _completion(obj)  # a count that is no count: read (and estimated) there
        details = usage.completion_tokens_details
        reasoning = getattr(details, "reasoning_tokens", None) if details else None
        cached = getattr(usage.prompt_tokens_details, "cached_tokens", None)
        finish, refusal, model = choice.finish_reason, message.refusal, obj.model
        extra = message.__pydantic_extra__
    except AttributeError:
        return _completion(obj)
    name = None if model is None else str(model)
    return new_reply(
        content,
        None if finish is None else str(finish),
        None if refusal is None else str(refusal),
        new_usage(
            prompt,
            completion,
            False,
            reasoning if type(reasoning) is int and 0 <= reasoning <= MAX_COUNT else 0,
            cached if type(cached) is int and 0 <= cached <= MAX_COUNT else 0,
            0,
            1,
            name,
        ),
        name,
        reasoning_field(extra) if extra else None,
    )


@unreadable_reply(lambda obj: chat_usage(get_field(obj, "usage"), opt_str(get_field(obj, "model"))))
def _completion(obj: Any) -> Reply:
    """A completion (object or dict) as a `Reply`: one without a `choices` list (an error body,
    `{}`), or whose first choice holds no `message`, is no completion (`not_a_reply`); an empty
    list is a completion with no answer."""
    choices = get_field(obj, "choices")
    if not isinstance(choices, list | tuple):
        raise not_a_reply(_COMPLETION, "no `choices` list", obj)
    model = opt_str(get_field(obj, "model"))
    usage = chat_usage(get_field(obj, "usage"), model)
    if not choices:
        return new_reply(None, None, None, usage, model)
    choice = choices[0]
    message = get_field(choice, "message") if is_record(choice) else None
    if not is_record(message):
        raise not_a_reply(_COMPLETION, "its first choice holds no `message`", obj)
    return new_reply(
        text_content(get_field(message, "content")),
        opt_str(get_field(choice, "finish_reason")),
        opt_str(get_field(message, "refusal")),
        usage,
        model,
        reasoning_field(message),
        chat_calls(get_field(message, "tool_calls")),
    )


def reasoning_field(message: Any) -> str | None:
    """OpenAI-compatible reasoning beside the content: `reasoning_content` (DeepSeek, vLLM,
    Qwen) or `reasoning` (OpenRouter, Ollama, newer vLLM). The SDK keeps unknown fields in
    `model_extra`."""
    extra = get_field(message, "model_extra") if isinstance(message, BaseModel) else None
    for source in (message, extra):
        if source is None:
            continue
        for name in ("reasoning_content", "reasoning"):
            value = get_field(source, name)
            if isinstance(value, str) and value:
                return value
    return None


def _reads_message(obj: Mapping[str, Any]) -> bool:
    return "content" in obj or "refusal" in obj


@unreadable_reply(lambda obj: chat_usage(obj.get("usage"), opt_str(obj.get("model"))))
def _message(obj: Any) -> Reply:
    """A chat message dict (a reply already taken out of its completion)."""
    return new_reply(
        text_content(obj.get("content")),
        opt_str(obj.get("finish_reason")),
        opt_str(obj.get("refusal")),
        chat_usage(obj.get("usage"), opt_str(obj.get("model"))),
        opt_str(obj.get("model")),
        reasoning_field(obj),
        chat_calls(obj.get("tool_calls")),
    )


def chat_usage(raw: Any, model: str | None = None) -> Usage | None:
    """OpenAI-style usage (also OpenAI-compatible servers): cached prompt tokens included; a
    count that is no count is unreported (`_fields.counts`)."""
    if raw is None:
        return None
    prompt = get_field(raw, "prompt_tokens")
    completion = get_field(raw, "completion_tokens")
    found = counts(prompt, completion)
    if found is None:
        return None
    prompt, completion, estimated = found
    details = get_field(raw, "completion_tokens_details")
    reasoning = get_field(details, "reasoning_tokens") if details is not None else None
    prompt_details = get_field(raw, "prompt_tokens_details")
    cached = get_field(prompt_details, "cached_tokens") if prompt_details is not None else None
    return new_usage(prompt, completion, estimated, as_int(reasoning), as_int(cached), 0, 1, model)


def _reads_chunk(chunk: Any) -> bool:
    return (
        get_field(chunk, "choices") is not None
        or get_field(chunk, "object") == "chat.completion.chunk"
    )


def _read_chunk(chunk: Any) -> Delta:
    if isinstance(chunk, BaseModel) and len(SDK_CHUNKS) < 16:
        SDK_CHUNKS.add(type(chunk))  # read by attribute from now on
        return read_sdk_chunk(chunk)
    return _openai(chunk)


def read_sdk_chunk(chunk: Any) -> Delta:
    """An openai SDK `ChatCompletionChunk`, by attribute; anything unusual: the generic reader."""
    try:
        choices = chunk.choices
        usage = chunk.usage
        if type(choices) is not list:
            return _openai(chunk)
        if not choices:
            return Delta(usage=None if usage is None else chat_usage(usage), model=chunk.model)
        choice = choices[0]
        if choice.index != 0 or len(choices) > 1:
            return _openai(chunk)  # interleaved choices (`n` > 1): the full reader
        delta = choice.delta
        text, refusal, calls = delta.content, delta.refusal, delta.tool_calls
        extra = delta.__pydantic_extra__
        finish = choice.finish_reason
    except AttributeError:
        return _openai(chunk)
    if calls or extra or usage is not None:
        return _openai(chunk)  # tool calls, reasoning fields, usage: the full reader
    if type(text) is not str:  # absent; any other type: no chunk of a reply (`chunk_text`)
        text = chunk_text(text, "choices[0].delta.content", parts=True)
    if type(refusal) is not str:
        refusal = chunk_text(refusal, "choices[0].delta.refusal")
    finish = None if finish is None else str(finish)
    return Delta(text=text, refusal=refusal, finish_reason=finish, model=chunk.model)


@unreadable_as_failure
def _openai(chunk: Any) -> Delta:
    usage = chat_usage(get_field(chunk, "usage"))
    model = opt_str(get_field(chunk, "model"))
    choice = _first_choice(as_list(get_field(chunk, "choices")))
    if choice is None:
        return Delta(usage=usage, model=model)
    delta = get_field(choice, "delta") or {}
    extra = getattr(delta, "model_extra", None) or {}
    reasoning = ""
    for source in (delta, extra):
        for field in ("reasoning_content", "reasoning"):
            value = get_field(source, field)
            if isinstance(value, str) and value:
                reasoning = value
                break
        if reasoning:
            break
    pieces: list[Delta] = []  # each call's piece, with its identity (`Delta.tool_index`)
    for call in as_list(get_field(delta, "tool_calls")):
        if is_custom(call):  # a custom tool's free-text input: no function's arguments
            continue
        function, index = get_field(call, "function") or {}, get_field(call, "index")
        piece = get_field(function, "arguments")
        pieces.append(Delta(tool_arguments=chunk_text(piece, _ARGUMENTS),
                            tool_name=opt_str(get_field(function, "name")),
                            tool_index=index if type(index) is int else None,
                            tool_id=opt_str(get_field(call, "id"))))  # fmt: skip
    first = pieces[0] if pieces else _NO_CALL
    text = chunk_text(get_field(delta, "content"), "choices[0].delta.content", parts=True)
    refusal = chunk_text(get_field(delta, "refusal"), "choices[0].delta.refusal")
    finish = opt_str(get_field(choice, "finish_reason"))
    if usage is not None and finish is None:  # a running count (vLLM's continuous usage stats)
        usage = dataclasses.replace(usage, estimated=True)
    return Delta(
        text=text,
        reasoning=reasoning,
        tool_arguments=first.tool_arguments,
        tool_name=first.tool_name,
        tool_index=first.tool_index,
        tool_id=first.tool_id,
        tool_pieces=tuple(pieces[1:]),
        refusal=refusal,
        finish_reason=finish,
        usage=usage,
        model=model,
    )


_NO_CALL: Final = Delta()
_ARGUMENTS: Final = "choices[0].delta.tool_calls[].function.arguments"


def _first_choice(choices: Any) -> Any:
    """Choice 0 of a chunk (a choice without an index is choice 0); None when the chunk carries
    only other choices, as with `n` > 1, whose text is not the answer."""
    for choice in choices:
        index = get_field(choice, "index")
        if index is None or index == 0:
            return choice
    return None


# the limit the truncation strategy raises: the newer name when the request uses it
def _token_limit(params: Mapping[str, Any]) -> tuple[str, Any] | None:
    for key in ("max_completion_tokens", "max_tokens"):
        if key in params:
            return key, params[key]
    return None


def _with_token_limit(params: Mapping[str, Any], n: int) -> dict[str, Any]:
    key = "max_completion_tokens" if "max_completion_tokens" in params else "max_tokens"
    return {**params, key: n}


# --- requests: the JSON-mode tiers (`tiers`), as chat completions ask for each -----------------
#
# `json_schema`: a strict `response_format` json_schema (OpenAI's dialect); `structured_outputs`
# (vLLM >= 0.12): `extra_body={"structured_outputs": {"json": schema}}`, or `{"choice": [...]}`
# for a few literal values (each as its JSON text); `constrained`: a non-strict json_schema
# `response_format` with the full schema (maps, unions, recursion), which servers decoding under
# a grammar enforce (vLLM, SGLang, llama.cpp, Ollama's OpenAI endpoint, LM Studio);
# `json_object`: JSON mode plus the schema in a system message; `prompt`: the system message.
# `structured_outputs` with a schema asks `disable_any_whitespace` too (compact JSON: no
# whitespace loop).
# A rejected tier (HTTP 400 naming `response_format`, ...) steps down (`tiers.WEAKER`).


def shape_request(
    mode: JsonMode, target: Shapeable, messages: Sequence[dict[str, Any]]
) -> tuple[JsonMode, list[dict[str, Any]], dict[str, Any]]:
    """Messages and extra params for `mode` (falling back from `json_schema` when the target
    cannot be expressed in strict mode, e.g. a free-form map). `messages` are handed on as they
    are (the drivers pass fresh copies)."""
    shaped = list(messages)
    if mode == "json_schema":
        # loaded with the first strict request (`import healjson` stays light)
        from .openai_strict_schema import StrictSchemaUnsupported, strict_format, strict_json_schema

        try:
            try:
                response_format = strict_format(target.type_)
            except TypeError:  # an unhashable type: not cached
                response_format = strict_json_schema(target.type_).response_format()
        except StrictSchemaUnsupported:
            mode = "json_object"
        else:
            return mode, shaped, {"response_format": response_format}
    if mode == "constrained":
        return mode, shaped, {"response_format": constrained_format(target.json_schema)}
    if mode == "structured_outputs":
        return mode, shaped, {"extra_body": {"structured_outputs": structured_outputs(target)}}
    extra: dict[str, Any] = {}
    if mode == "json_object":
        extra["response_format"] = {"type": "json_object"}
    return mode, prompted(target, shaped), extra


def constrained_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A non-strict `json_schema` `response_format` carrying `schema` whole."""
    return {
        "type": "json_schema",
        "json_schema": {"name": _schema_name(schema), "schema": schema, "strict": False},
    }


_MAX_CHOICES = 64  # more literal values than this: the JSON schema (an `enum`) says it as well


def structured_outputs(target: Shapeable) -> dict[str, Any]:
    """vLLM's `structured_outputs` for `target`: `{"choice": [...]}` when the schema is a few
    literal values (each as its JSON text: the answer is one of them, and JSON), else
    `{"json": schema}`."""
    choices = literal_values(target.json_schema)
    if choices is not None and 0 < len(choices) <= _MAX_CHOICES:
        return {"choice": [json.dumps(value, ensure_ascii=False) for value in choices]}
    # compact JSON, no whitespace between tokens: a grammar that allows any whitespace is where
    # local models loop on newlines until the token limit (vLLM's xgrammar and guidance
    # backends honour it; llama.cpp's own JSON grammar already bounds whitespace)
    return {"json": target.json_schema, "disable_any_whitespace": True}


def literal_values(schema: Mapping[str, Any]) -> list[Any] | None:
    """The values a schema allows when it is only a set of literals (`enum`, `const`, an
    `anyOf` of them, through a root `$ref`), else None."""
    node: Any = schema
    ref = node.get("$ref") if isinstance(node, Mapping) else None
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = (schema.get("$defs") or {}).get(ref.removeprefix("#/$defs/"))
    if not isinstance(node, Mapping):
        return None
    if isinstance(node.get("enum"), list):
        return list(node["enum"])
    if "const" in node:
        return [node["const"]]
    members = node.get("anyOf")
    if isinstance(members, list) and members:
        found: list[Any] = []
        for member in members:
            values = literal_values({**member, "$defs": schema.get("$defs") or {}})
            if values is None:
                return None
            found.extend(value for value in values if value not in found)
        return found
    return None


def _schema_name(schema: Mapping[str, Any]) -> str:
    title = schema.get("title")
    ref = schema.get("$ref")
    if title is None and isinstance(ref, str):  # a recursive model: its definition names it
        title = ref.rsplit("/", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64] if isinstance(title, str) else ""
    return name or "answer"


def enforced_schema(
    mode: JsonMode | None, target: Shapeable, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The JSON schema a request in tier `mode` asks the endpoint to enforce (what its answer
    must conform to when the endpoint does), None when it asks none. A strict request's schema is
    OpenAI's strict form; the caller's own `response_format` is not judged."""
    if mode is None or mode not in ENFORCING or names_format(params):
        return None
    if mode == "json_schema":
        from .openai_strict_schema import StrictSchemaUnsupported, strict_format

        try:
            return strict_format(target.type_)["json_schema"]["schema"]  # type: ignore[no-any-return]
        except (TypeError, StrictSchemaUnsupported):
            return None  # sent as `json_object`
    if mode == "structured_outputs":
        asked = structured_outputs(target)
        if "choice" in asked:
            return {"enum": [json.loads(choice) for choice in asked["choice"]]}
    return dict(target.json_schema)


# the servers' own output-format fields, sent in `extra_body`
_SERVER_FORMATS = ("structured_outputs", "guided_json", "guided_choice", "guided_regex",
                   "guided_grammar", "json_schema", "grammar")  # fmt: skip


def names_format(params: Mapping[str, Any]) -> bool:
    """True when the caller's parameters choose their own output format (`response_format`, or
    a server's own field in `extra_body`: vLLM's `structured_outputs`, llama.cpp's
    `json_schema` / `grammar`, ...)."""
    if "response_format" in params:
        return True
    extra = params.get("extra_body")
    return isinstance(extra, Mapping) and any(key in extra for key in _SERVER_FORMATS)


def with_extra(params: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`params` with a tier's `extra`, the caller's own `extra_body` kept beside the tier's."""
    merged = {**params, **extra}
    given, ours = params.get("extra_body"), extra.get("extra_body")
    if isinstance(given, Mapping) and ours is not None:
        merged["extra_body"] = {**given, **ours}
    return merged


def constrains_one_value(params: Mapping[str, Any]) -> bool:
    """True when a request's `response_format` constrains the output to one JSON value (what a
    healed stream needs before it judges anything early)."""
    response_format = params.get("response_format")
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
    else:
        kind = getattr(response_format, "type", None)
    if kind in ("json_object", "json_schema"):
        return True
    extra = params.get("extra_body")  # vLLM's own constraint (a `choice` is one JSON value too)
    return isinstance(extra, Mapping) and isinstance(extra.get("structured_outputs"), Mapping)


def is_format_rejection(exc: BaseException) -> bool:
    """True for an HTTP 400 whose error names `response_format` (the tier is unsupported), or
    the Responses API's `text.format`."""
    if getattr(exc, "status_code", None) != 400:
        return False
    param = getattr(exc, "param", None)
    if param == "response_format" or (isinstance(param, str) and param.startswith("text.format")):
        return True
    text = str(getattr(exc, "message", "") or exc).lower()
    return any(name in text for name in ("response_format", "json_schema", "json_object",
                                         "text.format", "structured_outputs"))  # fmt: skip


# --- the Batch API's lines -------------------------------------------------------------------

BATCH_ENDPOINT = "/v1/chat/completions"


def batch_body(
    mode: JsonMode, target: Shapeable, messages: Sequence[dict[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """A request as a batch line's body (`POST /v1/chat/completions`), JSON asked for in `mode`."""
    _, shaped, extra = shape_request(mode, target, messages)
    body = with_extra(params, extra)
    server = body.pop("extra_body", None)  # the SDK's way to send more fields: a line has them
    if isinstance(server, Mapping):
        body.update(server)
    return {**body, "messages": shaped}


def batch_line(custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One line of a Batch API input file."""
    return {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT, "body": body}


def batch_result(line: Mapping[str, Any]) -> Result | None:
    """One line of an OpenAI batch's output or error file (`/v1/chat/completions` and
    `/v1/responses` lines alike) as a `Result` (None: `batch_cancelled`, the request never
    ran: it runs again in a later batch, as an Anthropic `canceled` result does)."""
    # the batch results' module: loaded with the first batch (`import healjson` stays light)
    from ._batch_results import EXPIRED_MESSAGE, Result, is_transient_status

    response = line.get("response")
    error = line.get("error")
    if isinstance(response, dict):
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return Result(body=body)
        message = _http_message(status, body)
        fault = fault_from_body(status, body) if type(status) is int else None
        retry = is_transient_status(status)
        return Result(failure="api_error", message=message, retry=retry, fault=fault)
    code = error.get("code") if isinstance(error, dict) else None
    if code == "batch_expired":
        return Result(failure="timeout", message=EXPIRED_MESSAGE, retry=True)
    if code == "batch_cancelled":
        return None
    said = error.get("message") if isinstance(error, dict) else None
    # `request_timeout`: the model call timed out (sent, no answer): worth sending again
    retry = code == "request_timeout"
    return Result(failure="api_error", message=str(said or code or "no response"), retry=retry)


def _http_message(status: Any, body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f"HTTP {status}: {message or json.dumps(body, ensure_ascii=False)[:500]}"


FORMAT = WireFormat(
    "openai_chat",
    _reads_reply,
    _read_reply,
    reads_dict=_reads_dict,
    reads_chunk=_reads_chunk,
    read_chunk=_read_chunk,
    fast_reply=read_completion,
    fast_chunk=read_sdk_chunk,
    token_limit=_token_limit,
    with_token_limit=_with_token_limit,
)
"""(Its client's credentials, SDK methods and error package: its line in the registry.)"""

# a chat message dict: tried after every format (an Anthropic message has `content` too)
MESSAGE = WireFormat("openai_chat_message", lambda obj: False, _message, reads_dict=_reads_message)

PROVIDER = Provider(
    "openai",
    formats=(FORMAT,),
    catch_all=(MESSAGE,),
    adapter="healjson.adapters._openai:HealingClient",
    streams="healjson.adapters._openai:instructor_streams",
    tools="healjson._providers.openai_tools:CHAT",
    batch=BatchLines(batch_body, batch_line, batch_result),
    batch_api=BatchApi(
        client="healjson._providers.openai_batches:OpenAIBatches",
        endpoints={"chat": "openai", "responses": "openai_responses"},
        sdk="openai:OpenAI",
        extra="openai",
        api_key_env="OPENAI_API_KEY",
        base_url_env="OPENAI_BASE_URL",
    ),
    typing="healjson._providers.openai_typing:OPENAI",
    # the SDK's stream decoding and its responses' parsing (the Responses API's too)
    reads=("openai._streaming:*", "openai._response:*._parse", "openai._legacy_response:*._parse"),
)
"""OpenAI chat completions, and every OpenAI-compatible client (the registry's default)."""
