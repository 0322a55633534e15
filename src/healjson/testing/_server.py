"""`ScriptedServer`: an HTTP server on 127.0.0.1 that answers model requests from a script.

It exists so tests can drive the *real* provider SDKs (their HTTP clients, retries, error mapping,
response parsers) against canned replies, over real sockets. One script is served in three wire
formats, whichever route a request arrives on:

* OpenAI chat completions: `POST /v1/chat/completions` (also `/chat/completions`), streaming
  included, plus `GET /v1/models`;
* Anthropic Messages: `POST /v1/messages` (also `/messages`), not streamed;
* Gemini (google-genai): `POST /{v1,v1beta,v1alpha}/models/{model}:generateContent` (the version
  prefix is optional), not streamed.

Why the standard library (`http.server.ThreadingHTTPServer`) and not an ASGI stack:

* no extra dependency for users' tests: an ASGI server would add uvicorn and starlette (or
  similar) to the `testing` extra, for something a few hundred lines of stdlib already do;
* it is real HTTP/1.1 (Content-Length on every reply, keep-alive, Nagle disabled), so the SDK's
  connection pool reuses one connection per client and requests cost well under a millisecond;
* one thread per connection is plenty for tests and benchmarks: the SDK keeps a handful of
  pooled connections, and the handler does no real work.

Slow replies sleep on an event that `stop()` sets, and handler threads are daemons whose sockets
`stop()` shuts down, so a client that timed out (or a forgotten keep-alive connection) never
makes `stop()` hang.

Run it in a separate process (for benchmarks) with::

    python -m healjson.testing._server --replies FILE.json [--repeat] [--port 0]

FILE.json is a JSON list of strings (assistant contents) or objects with `ScriptedReply` fields.
The process prints exactly one line, `READY <base_url>`, once it listens, and serves until
SIGTERM or SIGINT. `<base_url>` is the openai SDK's; without its trailing `/v1` it is the
anthropic and google-genai SDKs' base URL.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import math
import re
import signal
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Final, Literal
from urllib.parse import unquote, urlsplit

__all__ = ["RecordedRequest", "ScriptedReply", "ScriptedServer"]

if sys.argv[:1] == ["-m"]:  # pragma: no cover - only while `python -m` locates a module
    # `healjson.testing` imports this module, so `python -m healjson.testing._server` finds it
    # already loaded and runpy warns about it; the re-execution is harmless, keep stderr clean.
    warnings.filterwarnings(
        "ignore",
        message=r"'healjson\.testing\._server' found in sys\.modules",
        category=RuntimeWarning,
    )

HOST: Final = "127.0.0.1"
_JSON: Final = "application/json"
_SSE: Final = "text/event-stream; charset=utf-8"
_CHAT_PATHS: Final = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS: Final = frozenset({"/v1/models", "/models"})
_ANTHROPIC_PATHS: Final = frozenset({"/v1/messages", "/messages"})
_GEMINI_PATH: Final = re.compile(
    r"(?:/v1(?:alpha|beta)?)?/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)"
)
_STREAM_PIECES: Final = 4  # streamed content is split into at most this many deltas
_REASONING_FIELDS: Final = frozenset({"reasoning_content", "reasoning"})
# Failures that signal a broken test, not a flaky provider: tell the SDK not to retry them.
_NO_RETRY: Final = {"x-should-retry": "false"}


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
      refusal text (and a text block only if `content` is set too).
    * Gemini: one candidate whose parts are a thought part (`thought: true`) for `reasoning`,
      a text part for `content` and a `functionCall` per tool call (`args` = the parsed
      `arguments`), in that order. `stop` and `tool_calls` -> `STOP`,
      `length` -> `MAX_TOKENS`, `content_filter` -> `SAFETY`; any other value is upper-cased
      (google-genai warns about a value its `FinishReason` enum does not know).
      Gemini has no refusal: a `refusal` is served as a `SAFETY` stop without any content (it
      reads as a content filter, reasoning included).

    `redacted_thinking` is Anthropic's alone: the OpenAI and Gemini routes do not send it.

    `usage` uses OpenAI's names (`prompt_tokens`, `completion_tokens`, `reasoning_tokens`) on
    every route and defaults to characters / 4: prompt = the text of all messages (with
    Anthropic's top-level `system` and Gemini's `systemInstruction`), reasoning = `reasoning`
    (only when set; `redacted_thinking` is opaque and not counted), completion = `content` plus
    the reasoning tokens. As in OpenAI's usage, `completion_tokens` includes the reasoning
    tokens (when an explicit `usage` omits it, it defaults to `reasoning_tokens`). Each route
    sends them in its own fields: OpenAI `completion_tokens_details.reasoning_tokens`;
    Anthropic `output_tokens` (which includes them) and `output_tokens_details.thinking_tokens`;
    Gemini `thoughtsTokenCount`, with `candidatesTokenCount` = completion - reasoning.
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

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status code, got {self.status}")
        if not (self.delay_s >= 0 and math.isfinite(self.delay_s)):
            raise ValueError(f"delay_s must be a finite number >= 0, got {self.delay_s}")
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


Item = str | ScriptedReply | Callable[[dict[str, Any]], str | ScriptedReply]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One HTTP request as the server received it; `body` is the parsed JSON object, if any."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's `messages` (OpenAI, Anthropic), or a Gemini request's `contents` as
        `{"role": "user" | "assistant", "content": text}` messages, or `[]` when it has none."""
        body = self.body or {}
        messages = body.get("messages")
        if isinstance(messages, list):
            return list(messages)
        contents = body.get("contents")
        if not isinstance(contents, list):
            return []
        return [
            {
                "role": "assistant" if content.get("role") == "model" else content.get("role"),
                "content": _gemini_text(content),
            }
            for content in contents
            if isinstance(content, dict)
        ]

    @property
    def system(self) -> str:
        """The system prompt: OpenAI's system messages, Anthropic's top-level `system` or
        Gemini's `systemInstruction`, as text (`""` when there is none)."""
        body = self.body or {}
        if "system" in body:
            return _content_text(body["system"])
        instruction = body.get("systemInstruction", body.get("system_instruction"))
        if isinstance(instruction, dict):
            return _gemini_text(instruction)
        return "\n".join(
            _content_text(message.get("content"))
            for message in self.messages
            if isinstance(message, dict) and message.get("role") in ("system", "developer")
        )

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (text parts joined when the content is a list)."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""


class ScriptedServer:
    """A model server on 127.0.0.1 that replays `items` in order, in the wire format of the route
    each request arrives on: OpenAI chat completions (`base_url`), Anthropic Messages
    (`anthropic_base_url`) or Gemini `generateContent` (`gemini_base_url`).

    Each item is a `str` (assistant content, finish_reason "stop"), a `ScriptedReply`, or a
    callable `(request_json) -> str | ScriptedReply`. Every model request, on any of the three
    routes, takes the next item (so one script can be replayed through any SDK); with
    `repeat=True` the script cycles forever. A model request arriving after the script is
    exhausted gets HTTP 500 whose message says so (a test-failure signal, with
    `x-should-retry: false` so the SDK fails fast instead of retrying). Every request is recorded
    as a `RecordedRequest`. Only OpenAI's route streams: `stream: true` on Anthropic's, or
    Gemini's `streamGenerateContent`, is answered with HTTP 400 (without taking an item).
    """

    def __init__(
        self,
        items: Iterable[Item] = (),
        *,
        repeat: bool = False,
        model: str = "scripted-model",
        port: int = 0,
    ) -> None:
        self.model = model
        self.repeat = repeat
        self._port = port
        self._items: list[Item] = list(items)
        self._used = 0
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        """Bind a port (random free one by default) and serve in a background thread."""
        if self._stopping.is_set():
            raise RuntimeError("a stopped ScriptedServer cannot be restarted; create a new one")
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((HOST, self._port), _Handler, self)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"ScriptedServer:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections and join the server thread; idempotent."""
        self._stopping.set()
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        if thread.is_alive():
            httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        thread.join()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- inspection ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only once started)."""
        if self._httpd is None:
            raise RuntimeError("ScriptedServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, to pass as the openai SDK's `base_url`."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """`http://127.0.0.1:PORT`, for `anthropic.Anthropic(base_url=...)` (which appends
        `/v1/messages` itself)."""
        return f"http://{HOST}:{self.port}"

    @property
    def gemini_base_url(self) -> str:
        """`http://127.0.0.1:PORT`, for google-genai's
        `genai.Client(http_options=types.HttpOptions(base_url=...))` (which appends
        `/{api_version}/models/{model}:generateContent` itself)."""
        return f"http://{HOST}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of all requests so far (model requests on every route, models, 404s,
        malformed), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """Items not yet used (with `repeat=True`: items left before the script starts over)."""
        with self._lock:
            if self.repeat:
                return len(self._items) - self._used % len(self._items) if self._items else 0
            return len(self._items) - self._used

    # -- scripting -------------------------------------------------------------------------

    def push(self, item: Item) -> None:
        """Append one scripted item."""
        with self._lock:
            self._items.append(item)

    def extend(self, items: Iterable[Item]) -> None:
        """Append scripted items."""
        new = list(items)
        with self._lock:
            self._items.extend(new)

    # -- used by the handler ---------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _take(self) -> tuple[Item | None, int]:
        """The next item (None when exhausted) and how many items were used before it."""
        with self._lock:
            used = self._used
            if self.repeat and self._items:
                item: Item | None = self._items[used % len(self._items)]
            elif used < len(self._items):
                item = self._items[used]
            else:
                return None, used
            self._used += 1
            return item, used

    def _script_length(self) -> int:
        with self._lock:
            return len(self._items)


class _HTTPServer(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 drops connections at concurrency 50
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        scripted: ScriptedServer,
    ) -> None:
        self.scripted = scripted
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._connections_lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        """Shut down open keep-alive connections so their handler threads end now."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client went away mid-reply (e.g. after its own timeout)."""
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)  # a bug in the handler: show it


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "healjson-scripted/1"
    sys_version = ""
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, open_=True)

    def finish(self) -> None:
        self.server.track(self.connection, open_=False)
        with contextlib.suppress(OSError):  # the client may already be gone
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: tests and benchmarks want a quiet stderr."""

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # -- routing ---------------------------------------------------------------------------

    def _dispatch(self) -> None:
        scripted = self.server.scripted
        try:
            raw = self._read_body()
        except ValueError as exc:
            self.close_connection = True
            self._send_error("openai", 400, f"Could not read the request body: {exc}", _NO_RETRY)
            return
        body: dict[str, Any] | None = None
        malformed = False
        if raw:
            try:
                parsed = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                malformed = True
            else:
                body, malformed = (parsed, False) if isinstance(parsed, dict) else (None, True)
        headers = {key.lower(): value for key, value in self.headers.items()}
        scripted._record(RecordedRequest(self.command, self.path, headers, body, raw))

        path = urlsplit(self.path).path.rstrip("/")
        gemini = _GEMINI_PATH.fullmatch(path) if self.command == "POST" else None
        api: _Api | None = None
        if self.command == "POST" and path in _CHAT_PATHS:
            api = "openai"
        elif self.command == "POST" and path in _ANTHROPIC_PATHS:
            api = "anthropic"
        elif gemini is not None:
            api = "gemini"
        if api is not None:
            if malformed or body is None:
                self._send_error(api, 400, _MALFORMED[api], _NO_RETRY)
            elif api == "anthropic" and body.get("stream") is True:
                message = "ScriptedServer does not stream Anthropic messages; send stream=false."
                self._send_error(api, 400, message, _NO_RETRY)
            elif gemini is not None and gemini["method"] == "streamGenerateContent":
                message = "ScriptedServer does not stream Gemini replies; use generateContent."
                self._send_error(api, 400, message, _NO_RETRY)
            else:
                self._reply(api, body, unquote(gemini["model"]) if gemini else None)
        elif self.command == "GET" and path in _MODELS_PATHS:
            self._send_json(200, {"object": "list", "data": [self._model_object(scripted.model)]})
        elif self.command == "GET" and path.rsplit("/", 1)[0] in _MODELS_PATHS:
            self._send_json(200, self._model_object(path.rsplit("/", 1)[1]))
        else:
            self._send_error(
                "openai",
                404,
                f"Unknown request URL: {self.command} {self.path}. Please check the URL for "
                "typos, or see the docs at https://platform.openai.com/docs/api-reference/.",
                _NO_RETRY,
                code="unknown_url",
            )

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError("negative Content-Length")
        return self.rfile.read(length) if length else b""

    # -- model replies -----------------------------------------------------------------------

    def _reply(self, api: _Api, body: dict[str, Any], path_model: str | None) -> None:
        """Answer one model request with the next script item, in `api`'s wire format."""
        scripted = self.server.scripted
        item, index = scripted._take()
        if item is None:
            length = scripted._script_length()
            self._send_error(
                api,
                500,
                f"ScriptedServer script exhausted: model request #{index + 1} arrived but the "
                f"script has {length} item(s) and repeat is off.",
                _NO_RETRY,
                code="script_exhausted",
            )
            return
        if callable(item):
            try:
                item = item(body)
            except Exception as exc:
                self._script_error(api, f"script item #{index + 1} raised {exc!r}")
                return
        if isinstance(item, str):
            item = ScriptedReply(content=item)
        if not isinstance(item, ScriptedReply):
            self._script_error(
                api,
                f"script item #{index + 1} produced {type(item).__name__}, "
                "expected str or ScriptedReply",
            )
            return
        reply = item
        if reply.delay_s and scripted._stopping.wait(reply.delay_s):
            self.close_connection = True  # stopping: drop the request instead of answering
            return
        extra = reply.headers or {}
        if reply.body is not None:
            raw = reply.body.encode() if isinstance(reply.body, str) else reply.body
            self._send(reply.status, raw, reply.content_type or _JSON, extra)
            return
        if reply.status >= 400:
            message = reply.content or f"Scripted HTTP {reply.status} error."  # content = message
            self._send_error(
                api,
                reply.status,
                message,
                extra,
                type=reply.error_type,
                param=reply.error_param,
                code=reply.error_code,
            )
            return
        model = path_model.removeprefix("models/") if path_model else body.get("model")
        model = model if isinstance(model, str) and model else scripted.model
        usage = _usage(reply, _prompt_chars(api, body))
        if api == "anthropic":
            try:
                message_body = _anthropic_message(f"msg_scripted_{index + 1}", model, reply, usage)
            except ValueError as exc:
                self._script_error(api, f"script item #{index + 1}: {exc}")
                return
            self._send_json(reply.status, message_body, extra)
        elif api == "gemini":
            try:
                response = _gemini_response(f"scripted-{index + 1}", model, reply, usage)
            except ValueError as exc:
                self._script_error(api, f"script item #{index + 1}: {exc}")
                return
            self._send_json(reply.status, response, extra)
        elif body.get("stream") is True:
            completion_id = f"chatcmpl-scripted-{index + 1}"
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            events = _stream_events(completion_id, model, reply, usage if include_usage else None)
            payload = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
            self._send(reply.status, (payload + "data: [DONE]\n\n").encode(), _SSE, extra)
        else:
            completion_id = f"chatcmpl-scripted-{index + 1}"
            self._send_json(reply.status, _completion(completion_id, model, reply, usage), extra)

    # -- responses -------------------------------------------------------------------------

    @staticmethod
    def _model_object(model: str) -> dict[str, Any]:
        return {"id": model, "object": "model", "created": 0, "owned_by": "healjson"}

    def _script_error(self, api: _Api, problem: str) -> None:
        self._send_error(api, 500, f"ScriptedServer {problem}", _NO_RETRY, code="script_error")

    def _send_error(
        self,
        api: _Api,
        status: int,
        message: str,
        headers: Mapping[str, str],
        *,
        type: str | None = None,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        if api == "anthropic":
            error = {"type": type or _anthropic_error_type(status), "message": message}
            body = json.dumps({"type": "error", "error": error})
        elif api == "gemini":
            status_name = type or _google_status(status)
            body = json.dumps(
                {"error": {"code": status, "message": message, "status": status_name}}
            )
        else:
            body = _error_body(message, type or _default_error_type(status), param, code)
        self._send(status, body.encode(), _JSON, headers)

    def _send_json(
        self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        self._send(status, json.dumps(payload).encode(), _JSON, headers or {})

    def _send(
        self, status: int, body: bytes, content_type: str, headers: Mapping[str, str]
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", f"req_scripted_{id(self):x}_{time.monotonic_ns()}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


# -- payload builders ------------------------------------------------------------------------

_Api = Literal["openai", "anthropic", "gemini"]

_MALFORMED: Final[dict[_Api, str]] = {
    "openai": "We could not parse the JSON body of your request. (HINT: This likely means "
    "you aren't using your HTTP library correctly. The OpenAI API expects a JSON "
    "payload, but what was sent was not valid JSON.)",
    "anthropic": "The request body is not a valid JSON object.",
    "gemini": "Invalid JSON payload received. The request body is not a JSON object.",
}
_ANTHROPIC_ERRORS: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_GOOGLE_STATUS: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_ANTHROPIC_STOP: Final = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
_GEMINI_FINISH: Final = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}


def _default_error_type(status: int) -> str:
    if status >= 500:
        return "server_error"
    if status == 429:
        return "requests"
    return "invalid_request_error"


def _anthropic_error_type(status: int) -> str:
    """Anthropic's `error.type` for an HTTP status (`api_error` for other 5xx)."""
    default = "api_error" if status >= 500 else "invalid_request_error"
    return _ANTHROPIC_ERRORS.get(status, default)


def _google_status(status: int) -> str:
    """Google's canonical `status` name for an HTTP status."""
    default = "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"
    return _GOOGLE_STATUS.get(status, default)


def _error_body(message: str, type: str, param: str | None, code: str | None) -> str:
    return json.dumps({"error": {"message": message, "type": type, "param": param, "code": code}})


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def _gemini_text(content: Mapping[str, Any]) -> str:
    """The text parts of a Gemini `Content` (`{"role", "parts": [{"text": ...}, ...]}`)."""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    return "".join(
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def _prompt_chars(api: _Api, body: Mapping[str, Any]) -> int:
    """Characters of prompt text in a request, system prompt included."""
    if api == "gemini":
        contents = body.get("contents")
        contents = contents if isinstance(contents, list) else []
        instruction = body.get("systemInstruction", body.get("system_instruction"))
        chars = len(_gemini_text(instruction)) if isinstance(instruction, dict) else 0
        return chars + sum(len(_gemini_text(c)) for c in contents if isinstance(c, dict))
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    chars = sum(len(_content_text(m.get("content"))) for m in messages if isinstance(m, dict))
    if api == "anthropic":
        chars += len(_content_text(body.get("system")))
    return chars


def _usage(reply: ScriptedReply, prompt_chars: int) -> dict[str, int]:
    """The reply's usage in OpenAI's flat names, `reasoning_tokens` only when the reply has
    `reasoning` or its explicit `usage` names them; each payload builder maps it onto its
    route's fields, so a reply without reasoning is sent exactly as before."""
    if reply.usage is not None:
        usage = dict(reply.usage)
        usage.setdefault("prompt_tokens", 0)
        usage.setdefault("completion_tokens", usage.get("reasoning_tokens", 0))
        usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
        return usage
    prompt = prompt_chars // 4
    completion = len(reply.content or "") // 4
    if reply.reasoning is None:
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    reasoning = len(reply.reasoning) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion + reasoning,
        "total_tokens": prompt + completion + reasoning,
        "reasoning_tokens": reasoning,
    }


def _openai_usage(usage: Mapping[str, int]) -> dict[str, Any]:
    """OpenAI's `usage`: the flat names as given, reasoning tokens moved under
    `completion_tokens_details` (where the openai SDK reads them)."""
    payload: dict[str, Any] = dict(usage)
    if "reasoning_tokens" in payload:
        payload["completion_tokens_details"] = {"reasoning_tokens": payload.pop("reasoning_tokens")}
    return payload


def _thinking_signature(thinking: str) -> str:
    """A stand-in for the opaque `signature` of an Anthropic thinking block: base64 like the
    real one, and the same for the same text, so a scripted reply is sent identically twice."""
    digest = hashlib.sha256(thinking.encode()).digest()
    return base64.b64encode(b"healjson-scripted-thinking:" + digest).decode()


def _completion(
    completion_id: str, model: str, reply: ScriptedReply, usage: dict[str, int]
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content,
        "refusal": reply.refusal,
    }
    if reply.reasoning is not None:
        message[reply.reasoning_field] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": _openai_usage(usage),
    }


def _tool_arguments(call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """An OpenAI-shaped tool call's function name and its `arguments` parsed as a JSON object
    (Anthropic's `tool_use.input` and Gemini's `functionCall.args` cannot carry anything else)."""
    function = call.get("function") or {}
    name = str(function.get("name") or "tool")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = None
    if not isinstance(arguments, dict):
        raise ValueError(
            f"tool call {name!r}: arguments must be a JSON object to be served as Anthropic's "
            f"tool_use input or Gemini's functionCall args, got {function.get('arguments')!r}"
        )
    return name, arguments


def _anthropic_message(
    message_id: str, model: str, reply: ScriptedReply, usage: dict[str, int]
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        signature = _thinking_signature(reply.reasoning)
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature})
    if reply.redacted_thinking is not None:
        content.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
    if reply.content is not None:
        content.append({"type": "text", "text": reply.content})
    for number, call in enumerate(reply.tool_calls or [], 1):
        name, arguments = _tool_arguments(call)
        call_id = call.get("id") or f"toolu_scripted_{number}"
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
        },
    }
    if "reasoning_tokens" in usage:
        message["usage"]["output_tokens_details"] = {"thinking_tokens": usage["reasoning_tokens"]}
    if reply.refusal is not None:
        message["stop_reason"] = "refusal"
        message["stop_details"] = {
            "type": "refusal",
            "category": None,
            "explanation": reply.refusal,
        }
    elif reply.tool_calls and reply.finish_reason == "stop":
        message["stop_reason"] = "tool_use"
    else:
        message["stop_reason"] = _ANTHROPIC_STOP.get(reply.finish_reason, reply.finish_reason)
    return message


def _gemini_response(
    response_id: str, model: str, reply: ScriptedReply, usage: dict[str, int]
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"index": 0}
    if reply.refusal is not None:  # Gemini has no refusal: a safety stop without any content
        candidate["finishReason"] = "SAFETY"
        candidate["safetyRatings"] = [
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
        ]
    else:
        parts: list[dict[str, Any]] = []
        if reply.reasoning is not None:
            parts.append({"text": reply.reasoning, "thought": True})
        if reply.content is not None:
            parts.append({"text": reply.content})
        for call in reply.tool_calls or []:
            name, arguments = _tool_arguments(call)
            parts.append({"functionCall": {"name": name, "args": arguments}})
        if parts:
            candidate["content"] = {"role": "model", "parts": parts}
        finish = reply.finish_reason
        candidate["finishReason"] = _GEMINI_FINISH.get(finish) or finish.upper()
    reasoning = usage.get("reasoning_tokens")
    metadata = {
        "promptTokenCount": usage["prompt_tokens"],
        "candidatesTokenCount": usage["completion_tokens"] - (reasoning or 0),
        "totalTokenCount": usage["total_tokens"],
    }
    if reasoning is not None:  # Gemini counts thoughts apart from the candidates
        metadata["thoughtsTokenCount"] = reasoning
    return {
        "candidates": [candidate],
        "usageMetadata": metadata,
        "modelVersion": model,
        "responseId": response_id,
    }


def _pieces(text: str) -> list[str]:
    size = max(1, -(-len(text) // _STREAM_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _stream_events(
    completion_id: str, model: str, reply: ScriptedReply, usage: dict[str, int] | None
) -> list[dict[str, Any]]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        event: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if usage is not None:
            event["usage"] = None
        return event

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    field = reply.reasoning_field
    events += [chunk({field: piece}) for piece in _pieces(reply.reasoning or "")]
    events += [chunk({"content": piece}) for piece in _pieces(reply.content or "")]
    events += [chunk({"refusal": piece}) for piece in _pieces(reply.refusal or "")]
    for index, call in enumerate(reply.tool_calls or []):
        function = call.get("function") or {}
        head = {
            "index": index,
            "id": call.get("id"),
            "type": call.get("type", "function"),
            "function": {"name": function.get("name"), "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _pieces(str(function.get("arguments") or ""))
        ]
    events.append(chunk({}, reply.finish_reason))
    if usage is not None:
        events.append(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": _openai_usage(usage),
            }
        )
    return events


# -- separate-process mode -------------------------------------------------------------------


class _Terminate(Exception):
    pass


def _raise_terminate(signum: int, frame: FrameType | None) -> None:
    raise _Terminate(signum)


def _load_replies(path: str) -> list[Item]:
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if not isinstance(data, list):
        raise SystemExit(f"{path}: expected a JSON list of strings or reply objects")
    known = {field.name for field in fields(ScriptedReply)}
    items: list[Item] = []
    for position, entry in enumerate(data):
        if isinstance(entry, str):
            items.append(entry)
        elif isinstance(entry, dict) and set(entry) <= known:
            items.append(ScriptedReply(**entry))
        else:
            raise SystemExit(
                f"{path}: item {position} must be a string or an object with keys among "
                f"{sorted(known)}"
            )
    return items


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a reply file until SIGTERM/SIGINT, after printing `READY <base_url>`."""
    parser = argparse.ArgumentParser(
        prog="python -m healjson.testing._server",
        description="OpenAI-compatible scripted chat-completions server (for benchmarks).",
    )
    parser.add_argument("--replies", required=True, help="JSON list of strings or reply objects")
    parser.add_argument("--repeat", action="store_true", help="cycle the script forever")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--model", default="scripted-model", help="default model name")
    args = parser.parse_args(argv)

    server = ScriptedServer(
        _load_replies(args.replies), repeat=args.repeat, model=args.model, port=args.port
    )
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        for sig in previous:
            signal.signal(sig, _raise_terminate)
        server.start()
        print(f"READY {server.base_url}", flush=True)
        while True:
            time.sleep(3600)
    except _Terminate:
        pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
