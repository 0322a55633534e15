"""The scripted server's data types: `ScriptedReply`, `ScriptItem` and `RecordedRequest`, and
`resolve_item`, which turns a script item into a reply (`ScriptFailure` when it cannot)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ._wire import content_text, gemini_generate, openai_responses

__all__ = ["RecordedRequest", "ScriptFailure", "ScriptItem", "ScriptedReply", "resolve_item"]

_REASONING_FIELDS: Final = frozenset({"reasoning_content", "reasoning"})
_CACHE_KEYS: Final = ("cached_tokens", "cache_write_tokens")


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One scripted answer: a model reply, an HTTP error, or a raw (possibly broken) body.

    `body`, when set, is sent as-is with `status` and `content_type` (default
    `application/json`), whatever the request asked for and on every route. Otherwise a status
    >= 400 sends an error body in the route's shape (`content` is its message; `error_type`,
    `error_param` and `error_code` as for `ScriptedReply.error`), and anything else a reply in
    the route's format:

    * OpenAI: a `chat.completion` (or its SSE stream), fields as given. `reasoning` is the
      message field named by `reasoning_field`: `reasoning_content` (DeepSeek, vLLM, Qwen) or
      `reasoning` (OpenRouter, Ollama, newer vLLM); streamed, its deltas come before the
      content deltas.
    * Anthropic: a `message` with a `thinking` block for `reasoning` (with a stand-in
      `signature`), a `redacted_thinking` block for `redacted_thinking` (its opaque `data`),
      a text block for `content` and a `tool_use` block per tool call, in that order
      (`input` = the parsed `arguments`, which must be a JSON object). `finish_reason`
      `stop` -> `end_turn` (`tool_use` when there are tool calls), `length` -> `max_tokens`,
      `tool_calls` -> `tool_use`, `content_filter` -> `refusal`; any other value is sent as
      given. A `refusal` is `stop_reason: "refusal"` with `stop_details.explanation` = the
      refusal text (and a text block only if `content` is set too). To a request that
      forces a tool (`tool_choice` of type `tool`), `content` that is a JSON object is sent
      as that tool's `tool_use` block instead (as constrained decoding would answer).
    * Gemini: one candidate whose parts are a thought part (`thought: true`) for `reasoning`,
      a text part for `content` and a `functionCall` per tool call (`args` = the parsed
      `arguments`), in that order. `stop` and `tool_calls` -> `STOP`,
      `length` -> `MAX_TOKENS`, `content_filter` -> `SAFETY`; any other value is upper-cased
      (google-genai warns about a value its `FinishReason` enum does not know).
      Gemini has no refusal: a `refusal` is served as a `SAFETY` stop without any content (it
      reads as a content filter, reasoning included).
    * Ollama: a `ChatResponse` whose message has `thinking` for `reasoning`, `content`, and
      `tool_calls` (each `arguments` = the parsed arguments, an object); `stop` and
      `tool_calls` -> `done_reason: "stop"`, `length` -> `"length"`, any other value as given.
      Ollama has no refusal: a `refusal` is served as the message's text.

    Tool calls (`tool_calls`): a list of calls in OpenAI's chat shape, `{"id": ..., "type":
    "function", "function": {"name": ..., "arguments": ...}}` (`id` optional: each route makes
    one up; `arguments` text, or a JSON value sent as its JSON text). Arguments text is sent
    *verbatim*, broken JSON included (single quotes, a cut string, prose around it), on OpenAI
    chat and the Responses API, streamed or not; several calls are parallel calls, in order;
    a name no tool declares is sent as it is; `finish_reason="length"` with cut arguments is a
    reply cut by the token limit (chat `length`, Responses `incomplete`, Anthropic
    `max_tokens`). Anthropic's `tool_use.input` and Gemini's `functionCall.args` are JSON
    objects: arguments that are not one's text can only be sent on Anthropic's *stream*
    (`input_json_delta` pieces of the text as written); a reply that is not streamed, and any
    Gemini reply, with such arguments is refused when served (HTTP 500 naming the call). A
    malformed `tool_calls` list is a `ValueError` when the reply is made.

    * OpenAI Responses API: a `response` whose `output` holds a `reasoning` item (a
      `summary_text` = `reasoning`), a `message` item per `commentary` text, the message (an
      `output_text` part for `content`, a `refusal` part for `refusal`; no message when both
      are None) and a `function_call` item per tool call (`call_id` = the call's `id`, `name`,
      `arguments`), in that order. `finish_reason` `stop` and `tool_calls` -> `status:
      "completed"`; `length` -> `"incomplete"` with `incomplete_details.reason`
      `max_output_tokens`, `content_filter` -> reason `content_filter`, any other value ->
      that reason as given. `response_error` makes it `"failed"`.

    `redacted_thinking` is Anthropic's alone: the other routes do not send it. Two fields are
    the Responses API's alone (the other routes ignore them):

    * `commentary`: texts sent as `message` items with `phase: "commentary"` before the
      message, which then has `phase: "final_answer"` (also with an empty list; None: no
      `phase` on any message). The SDK's `output_text` joins every message's text.
    * `response_error`: the response has `status: "failed"` and `error: {"code": error_code
      or "server_error", "message": response_error}` (HTTP 200; streamed, it ends with
      `response.failed`); its `output` is still the one scripted (a partial answer).

    `usage` uses OpenAI's names (`prompt_tokens`, `completion_tokens`, `reasoning_tokens`) on
    every route and defaults to characters / 4: prompt = the text of all messages (with
    Anthropic's top-level `system` and Gemini's `systemInstruction`), reasoning = `reasoning`
    (only when set; `redacted_thinking` is opaque and not counted), completion = `content` plus
    the reasoning tokens. As in OpenAI's usage, `completion_tokens` includes the reasoning
    tokens (when an explicit `usage` omits it, it defaults to `reasoning_tokens`). Each route
    sends them in its own fields: OpenAI `completion_tokens_details.reasoning_tokens`
    (Responses API: `input_tokens`, `output_tokens`, `output_tokens_details.reasoning_tokens`,
    `total_tokens`);
    Anthropic `output_tokens` (which includes them) and `output_tokens_details.thinking_tokens`;
    Gemini `thoughtsTokenCount`, with `candidatesTokenCount` = completion - reasoning.

    Two more `usage` keys script prompt caching (each sent only when given, so a reply without
    them is served as before): `cached_tokens`, the prompt tokens read from the provider's
    cache, and `cache_write_tokens`, those written to it; both are part of `prompt_tokens`
    (which counts every input token, as OpenAI and Gemini do), so `cached_tokens` +
    `cache_write_tokens` <= `prompt_tokens` (0 when an explicit `usage` omits it). OpenAI sends
    `prompt_tokens_details: {"cached_tokens", "audio_tokens": 0}`; Anthropic, which counts cached
    input apart, `input_tokens` = prompt - cached - written with `cache_read_input_tokens` =
    cached and `cache_creation_input_tokens` = written (both sent when either key is given, in
    `message_start` and `message_delta` when streamed); Gemini `cachedContentTokenCount`; the
    Responses API `input_tokens_details.cached_tokens` and `.cache_write_tokens` (always sent,
    0 when not given). OpenAI's chat route and Gemini's ignore `cache_write_tokens`.

    Streamed replies (OpenAI `stream: true` on both routes, Anthropic `stream: true`, Gemini
    `streamGenerateContent`) are written event by event (chunked transfer encoding), in the
    route's streaming format (see `ScriptedServer`); these fields script them and are ignored
    by a reply that is not streamed:

    * `chunk_chars`: the streamed texts (reasoning, commentary, content, refusal, tool-call
      arguments; Gemini sends function calls whole) are split into deltas of this many
      characters, the last of each text shorter; None (default): each text in at most 4 deltas
      of equal size.
    * `chunk_delay_s`: seconds to wait between two events (on the server's stop event, so
      `ScriptedServer.stop` never waits for it). `delay_s` still delays the response itself
      (no headers, no byte: a slow first byte).
    * `first_event_delay_s`: seconds between the response's headers and its first event (a
      reasoning model that thinks before it streams).
    * `hold_open_s`: seconds the server stays silent after the last event before it ends the
      stream (before OpenAI's `data: [DONE]` and the end of the body): an answer followed by
      silence.
    * `keepalive_every_s`: during every wait inside the stream (`first_event_delay_s`,
      `chunk_delay_s`, `hold_open_s`), the route's keep-alive is sent every this many seconds:
      an SSE comment (`: keep-alive`) on the OpenAI routes, a `ping` event on Anthropic's (the
      SDKs skip both); Gemini's route has none and stays silent.
    * `byte_delay_s`: every event is written one byte at a time, this many seconds apart (a
      trickle: each read returns well within any read timeout, the stream takes long).
    * `cut_after_chars`: once this many characters of streamed text have been sent, the server
      drops the connection: no finish event, no end of the chunked body (the SDK's iteration
      raises its HTTP library's `RemoteProtocolError`; openai 3.60 raises its
      `APIConnectionError` from it).
    * `stream_error_after_chars`: once this many characters have been sent, the stream ends with
      the route's in-stream error event (OpenAI `data: {"error": {...}}`, the Responses API's
      `event: error` with the fields flat and under `error`, Anthropic `event: error`, Gemini
      `data: {"error": {...}}`), its type `stream_error` (default `server_error`: Anthropic's
      `overloaded_error`, Gemini's 500 `INTERNAL`; any other value is sent as given), OpenAI's
      `param`/`code` = `error_param`/`error_code`.

    The N characters count every streamed text in the order it is sent: the reasoning first,
    then the commentary, content, refusal and tool-call arguments (so with `reasoning`,
    N = len(reasoning) + k stops k characters into the content). The stream stops right after
    the delta reaching N (shortened to end there); at N = 0, or for a reply streaming no text,
    right after the opening events (OpenAI's role chunk, the Responses API's `response.created`
    and `response.in_progress`, Anthropic's `message_start` and `ping`; Gemini has none); a
    reply streaming fewer than N characters stops after its last delta. A cut and a stream
    error exclude each other.

    A reply answering a line of a provider batch (OpenAI's Batch API, Anthropic's Message
    Batches; see `ScriptedServer`) is rendered exactly as on the route the line names, with two
    fields of its own, ignored outside batches:

    * `batch_expired`: the line is never answered: it expires when its batch ends (OpenAI: an
      error-file line with code `batch_expired`, and the batch ends `expired`; Anthropic: an
      `expired` result). It wins over everything else in the reply.
    * `delay_s`: the line is answered this many seconds after its batch was created (no HTTP
      response waits for it); the batch ends once every line is answered. A batch cancelled
      before a line is answered leaves that line unanswered.

    The streaming fields and `headers` are ignored in a batch.
    """

    content: str | None = None
    finish_reason: str = "stop"
    refusal: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    body: str | bytes | None = None
    content_type: str | None = None
    delay_s: float = 0.0
    usage: dict[str, int] | None = None
    headers: dict[str, str] | None = None
    error_type: str | None = None
    error_param: str | None = None
    error_code: str | None = None
    reasoning: str | None = None
    reasoning_field: Literal["reasoning_content", "reasoning"] = "reasoning_content"
    redacted_thinking: str | None = None
    chunk_chars: int | None = None
    chunk_delay_s: float = 0.0
    first_event_delay_s: float = 0.0
    hold_open_s: float = 0.0
    keepalive_every_s: float | None = None
    byte_delay_s: float = 0.0
    cut_after_chars: int | None = None
    stream_error_after_chars: int | None = None
    stream_error: str = "server_error"
    batch_expired: bool = False
    commentary: list[str] | None = None
    response_error: str | None = None

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status code, got {self.status}")
        delays = ("delay_s", "chunk_delay_s", "first_event_delay_s", "hold_open_s", "byte_delay_s")
        for name in delays:
            value = getattr(self, name)
            if not (_is_number(value) and value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        every = self.keepalive_every_s
        if every is not None and not (_is_number(every) and every > 0 and math.isfinite(every)):
            raise ValueError(
                f"keepalive_every_s must be a finite number > 0 or None, got {every!r}"
            )
        chunk_chars = self.chunk_chars
        if chunk_chars is not None and not (_is_int(chunk_chars) and chunk_chars >= 1):
            raise ValueError(f"chunk_chars must be an int >= 1 or None, got {chunk_chars!r}")
        for name in ("cut_after_chars", "stream_error_after_chars"):
            value = getattr(self, name)
            if value is not None and not (_is_int(value) and value >= 0):
                raise ValueError(f"{name} must be an int >= 0 or None, got {value!r}")
        if self.cut_after_chars is not None and self.stream_error_after_chars is not None:
            raise ValueError("cut_after_chars and stream_error_after_chars exclude each other")
        if not isinstance(self.batch_expired, bool):
            raise ValueError(f"batch_expired must be a bool, got {self.batch_expired!r}")
        if not (isinstance(self.stream_error, str) and self.stream_error):
            raise ValueError(f"stream_error must be a non-empty string, got {self.stream_error!r}")
        commentary = self.commentary
        if commentary is not None and not (
            isinstance(commentary, list) and all(isinstance(text, str) for text in commentary)
        ):
            raise ValueError(f"commentary must be a list of strings or None, got {commentary!r}")
        _check_tool_calls(self.tool_calls)
        failure = self.response_error
        if failure is not None and not (isinstance(failure, str) and failure):
            raise ValueError(f"response_error must be a non-empty string or None, got {failure!r}")
        if self.reasoning_field not in _REASONING_FIELDS:  # a reply file is not type-checked
            raise ValueError(
                f"reasoning_field must be one of {sorted(_REASONING_FIELDS)}, "
                f"got {self.reasoning_field!r}"
            )
        usage = self.usage or {}
        if usage.get("reasoning_tokens", 0) > usage.get("completion_tokens", math.inf):
            raise ValueError(
                "usage: completion_tokens includes reasoning_tokens, so it cannot be smaller, "
                f"got {usage}"
            )
        for name in _CACHE_KEYS:
            value = usage.get(name, 0)
            if not (_is_int(value) and value >= 0):
                raise ValueError(f"usage: {name} must be an int >= 0, got {value!r}")
        cached, written = (usage.get(name, 0) for name in _CACHE_KEYS)
        prompt = usage.get("prompt_tokens", 0)
        if (cached or written) and not (_is_int(prompt) and cached + written <= prompt):
            raise ValueError(
                "usage: prompt_tokens includes cached_tokens and cache_write_tokens (0 when "
                f"omitted), so it cannot be smaller than their sum, got {usage}"
            )

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "Scripted error.",
        type: str | None = None,
        param: str | None = None,
        code: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> ScriptedReply:
        """An HTTP error reply, its body in the shape of the route it is served on.

        OpenAI: `{"error": {"message", "type", "param", "code"}}`, `type` defaulting to
        `server_error` for 5xx, `requests` for 429 and `invalid_request_error` otherwise.
        Anthropic: `{"type": "error", "error": {"type", "message"}}`, `type` defaulting to
        Anthropic's name for the status (`api_error`, `rate_limit_error`, ...). Gemini:
        `{"error": {"code", "message", "status"}}`, `status` = `type` or Google's name for the
        HTTP status (`INTERNAL`, `RESOURCE_EXHAUSTED`, ...). `param` and `code` are OpenAI's only.
        """
        if status < 400:
            raise ValueError(f"an error reply needs a status >= 400, got {status}")
        return cls(
            content=message,
            status=status,
            headers=dict(headers) if headers else None,
            delay_s=delay_s,
            error_type=type,
            error_param=param,
            error_code=code,
        )

    @classmethod
    def non_json(cls, text: str = "<html>bad gateway</html>", status: int = 200) -> ScriptedReply:
        """A `text/html` body, as a misconfigured proxy or gateway would send it."""
        return cls(status=status, body=text, content_type="text/html; charset=utf-8")

    @classmethod
    def slow(cls, content: str, delay_s: float) -> ScriptedReply:
        """A normal reply sent after `delay_s` seconds (interrupted by `ScriptedServer.stop`)."""
        return cls(content=content, delay_s=delay_s)


def _check_tool_calls(calls: object) -> None:
    """A scripted `tool_calls` list: OpenAI-shaped calls whose arguments are text (sent
    verbatim, broken or not) or a JSON value (sent as its JSON text)."""
    if calls is None:
        return
    if not isinstance(calls, list):
        raise ValueError(f"tool_calls must be a list of calls or None, got {calls!r}")
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise ValueError(
                f'tool_calls[{index}] must be {{"id": ..., "function": {{"name": ..., '
                f'"arguments": ...}}}}, got {call!r}'
            )
        name = function.get("name")
        if name is not None and not (isinstance(name, str) and name):
            raise ValueError(f"tool_calls[{index}]: function.name must be a string, got {name!r}")
        arguments = function.get("arguments")
        if not isinstance(arguments, str | dict | list | int | float | bool | None):
            raise ValueError(
                f"tool_calls[{index}]: function.arguments must be text or a JSON value, "
                f"got {type(arguments).__name__}"
            )
        call_id = call.get("id")
        if call_id is not None and not (isinstance(call_id, str) and call_id):
            raise ValueError(f"tool_calls[{index}]: id must be a string, got {call_id!r}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# One entry of a script: assistant content, a reply, or a callable making one from the request.
ScriptItem = str | ScriptedReply | Callable[[dict[str, Any]], str | ScriptedReply]


class ScriptFailure(Exception):
    """The script cannot answer a model request (exhausted, or a broken item): the route sends
    an HTTP 500 (a batch line: an errored line) whose message is this exception's."""

    def __init__(self, message: str, code: str = "script_error") -> None:
        super().__init__(message)
        self.code = code


def resolve_item(item: ScriptItem, request: dict[str, Any], label: str) -> ScriptedReply:
    """`item` as a reply: a string is the assistant content, a callable is called with `request`
    (the model request's JSON body, or a batch line's body / params). `ScriptFailure` when the
    callable raises or the item makes no reply; `label` names the item in the message
    (`"script item #3"`)."""
    if callable(item):
        try:
            item = item(request)
        except Exception as exc:
            raise ScriptFailure(f"ScriptedServer {label} raised {exc!r}") from exc
    if isinstance(item, str):
        return ScriptedReply(content=item)
    if not isinstance(item, ScriptedReply):
        raise ScriptFailure(
            f"ScriptedServer {label} produced {type(item).__name__}, expected str or ScriptedReply"
        )
    return item


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request as the server received it; `body` is the parsed JSON object, if any.

    The last three fields tell what was sent on a streamed reply (they stay `False, 0, False`
    for any other answer): `streamed` - a stream was started; `events_sent` - the server-sent
    events written (OpenAI's `data: [DONE]` and a scripted error event count); `stream_completed`
    - the server wrote all the reply scripted, up to a scripted cut or stream error included,
    `False` when the client closed the connection first (or `ScriptedServer.stop` interrupted
    it). The server replaces the request's record with the updated one when it is done writing
    the stream: read `ScriptedServer.requests` after `ScriptedServer.wait_idle()`, as the
    server notices a client's early close only on its next write after it.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes
    streamed: bool = False
    events_sent: int = 0
    stream_completed: bool = False

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's `messages` (OpenAI chat, Anthropic); a Responses API request's
        `instructions` (as a system message) and `input` items as chat-style messages (a
        message item as `{"role", "content": text}`, a `function_call` as an assistant message
        with `tool_calls`, a `function_call_output` as a `tool` message); a Gemini request's
        `contents` as `{"role": "user" | "assistant", "content": text}` messages; or `[]` when
        it has none."""
        body = self.body or {}
        messages = body.get("messages")
        if isinstance(messages, list):
            return list(messages)
        if "input" in body or "instructions" in body:
            return openai_responses.messages(body)
        return gemini_generate.messages(body)

    @property
    def response_format(self) -> dict[str, Any] | None:
        """The output format an OpenAI request asks for, as sent: a chat request's
        `response_format`, a Responses API request's `text.format` (`{"type": "json_schema",
        "name", "schema", "strict"}`, `{"type": "json_object"}`...); None when it names none."""
        body = self.body or {}
        found = body.get("response_format")
        if isinstance(found, dict):
            return found
        return openai_responses.text_format(body)

    @property
    def structured_output(self) -> dict[str, Any] | None:
        """What the request asks the endpoint to constrain decoding to, in vLLM's terms
        (`{"json": schema}`, `{"choice": [...]}`, `{"regex": ...}`, ...), whatever the format
        says it in: vLLM's `structured_outputs` (as sent), llama.cpp's `json_schema`, a chat
        `response_format` or Responses `text.format` of type `json_schema` (strict or not),
        Anthropic's `output_config.format` or the input schema of a forced tool, Gemini's
        `generationConfig.responseJsonSchema` (or `responseSchema`); None when it asks none.
        A script callable reads the same fields of the request body (to answer a `choice`)."""
        body = self.body or {}
        given = body.get("structured_outputs")
        if isinstance(given, dict):
            return given
        if isinstance(body.get("json_schema"), dict):
            return {"json": body["json_schema"]}
        found = self.response_format
        if isinstance(found, dict) and found.get("type") == "json_schema":
            inner = found.get("json_schema", found)
            if isinstance(inner, dict) and isinstance(inner.get("schema"), dict):
                return {"json": inner["schema"]}
        config = body.get("output_config")
        form = config.get("format") if isinstance(config, dict) else None
        if isinstance(form, dict) and isinstance(form.get("schema"), dict):
            return {"json": form["schema"]}
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "tool":
            for tool in body.get("tools") or ():
                if isinstance(tool, dict) and tool.get("name") == choice.get("name"):
                    return {"json": tool.get("input_schema")}
        generation = body.get("generationConfig")
        if isinstance(generation, dict):
            for key in ("responseJsonSchema", "responseSchema"):
                if isinstance(generation.get(key), dict):
                    return {"json": generation[key]}
        return None

    @property
    def max_tokens(self) -> int | None:
        """The output token limit the request sets: OpenAI chat's `max_completion_tokens` or
        `max_tokens`, the Responses API's `max_output_tokens`, Anthropic's `max_tokens`,
        Gemini's `generationConfig.maxOutputTokens`; None when it sets none."""
        body = self.body or {}
        config = body.get("generationConfig")
        config = config if isinstance(config, dict) else {}
        for found in (
            body.get("max_completion_tokens"),
            body.get("max_tokens"),
            body.get("max_output_tokens"),
            config.get("maxOutputTokens"),
        ):
            if isinstance(found, int) and not isinstance(found, bool):
                return found
        return None

    @property
    def system(self) -> str:
        """The system prompt: OpenAI's system (and developer) messages, the Responses API's
        `instructions` with them, Anthropic's top-level `system` or Gemini's
        `systemInstruction`, as text (`""` when there is none)."""
        body = self.body or {}
        if "system" in body:
            return content_text(body["system"])
        instruction = gemini_generate.system_text(body)
        if instruction is not None:
            return instruction
        return "\n".join(
            content_text(message.get("content"))
            for message in self.messages
            if isinstance(message, dict) and message.get("role") in ("system", "developer")
        )

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (text parts joined when the content is a list)."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return content_text(message.get("content"))
        return ""
