"""`ScriptedServer`: an HTTP server on 127.0.0.1 that answers model requests from a script.

It exists so tests can drive the *real* provider SDKs (their HTTP clients, retries, error mapping,
response parsers) against canned replies, over real sockets. One script is served in five wire
formats (`healjson.testing._wire`), whichever route a request arrives on:

* OpenAI chat completions: `POST /v1/chat/completions` (also `/chat/completions`), streamed
  with `stream: true` (`chat.completion.chunk` events, then `data: [DONE]`), plus
  `GET /v1/models`;
* OpenAI's Responses API: `POST /v1/responses` (also `/responses`), streamed with
  `stream: true` (typed events from `response.created` to `response.completed`,
  `response.incomplete` or `response.failed`);
* Anthropic Messages: `POST /v1/messages` (also `/messages`), streamed with `stream: true`
  (`message_start`, `content_block_*`, `message_delta`, `message_stop` events);
* Gemini (google-genai): `POST /{v1,v1beta,v1alpha}/models/{model}:generateContent` (the version
  prefix is optional), and `:streamGenerateContent` streamed (`data: {GenerateContentResponse}`
  events, SSE whatever `alt` says);
* Ollama (the `ollama` client): `POST /api/chat`, streamed unless `stream: false` (one
  `ChatResponse` JSON object per line, `application/x-ndjson`).

The same script answers the providers' batch APIs (routes in `_batch_routes`, the store and
its lifecycle in `_batches`):

* OpenAI's Batch API: `POST /v1/files` (multipart), `GET /v1/files[/{id}[/content]]`,
  `DELETE /v1/files/{id}`, `POST /v1/batches`, `GET /v1/batches[/{id}]`,
  `POST /v1/batches/{id}/cancel` (the `/v1` prefix optional);
* Anthropic's Message Batches: `POST /v1/messages/batches`, `GET /v1/messages/batches[/{id}]`,
  `POST .../{id}/cancel`, `GET .../{id}/results` (JSONL), `DELETE .../{id}`.

A streamed reply is written event by event, each event one chunk of a `Transfer-Encoding:
chunked` body sent at once (Nagle disabled), so a client reads the first events before the last
are written; `ScriptedReply` scripts its chunking, delays between events, a dropped connection
or an in-stream error. The server stops writing when the client closes the connection, and
records what it sent (`RecordedRequest.streamed`, `events_sent`, `stream_completed`);
`ScriptedServer.wait_idle` waits for that record. Other replies carry a Content-Length.

Why the standard library (`http.server.ThreadingHTTPServer`) and not an ASGI stack:

* no extra dependency for users' tests: an ASGI server would add uvicorn and starlette (or
  similar) to the `testing` extra, for something a few hundred lines of stdlib already do;
* it is real HTTP/1.1 (Content-Length or chunked bodies, keep-alive, Nagle disabled), so the SDK's
  connection pool reuses one connection per client and requests cost well under a millisecond;
* one thread per connection is plenty for tests and benchmarks: the SDK keeps a handful of
  pooled connections, and the handler does no real work.

Slow replies, and the delays between streamed events, wait on the client's socket (a client
that closes the connection is noticed at once) and on an event that `stop()` sets, and handler
threads are daemons whose sockets `stop()` shuts down, so a client that timed out (or a
forgotten keep-alive connection) never makes `stop()` hang. The accepting thread waits on its
listening socket and on a wake-up socket `stop()` writes to, so `stop()` returns at once (where
`serve_forever` would look for its shutdown request only every poll interval).

Run it in a separate process (for a program that is not Python, a test in another process, a
demo or a benchmark) with `python -m healjson.testing --replies FILE.json [--repeat] [--port 0]`.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any, Final
from urllib.parse import urlsplit

from ._batch_routes import ROUTES as BATCH_ROUTES
from ._batch_routes import Answer as BatchAnswer
from ._batch_routes import BatchRoute
from ._batches import BatchReplies, BatchStore, ScriptedBatch, ScriptedFile
from ._http import LoopbackHTTPServer, QuietHandler
from ._pacing import Pacer
from ._replies import RecordedRequest, ScriptedReply, ScriptFailure, ScriptItem, resolve_item
from ._wire import JSON_TYPE, WIRE_FORMATS, WireFormat, openai_chat, usage
from ._wire._common import reply_error_message, unservable
from ._wire._sse import Planned, plan

__all__ = ["RecordedRequest", "ScriptedBatch", "ScriptedFile", "ScriptedReply", "ScriptedServer"]

HOST: Final = "127.0.0.1"
_POLL_S: Final = 0.05  # how often a waiting handler looks whether the server is stopping
_STOP_WAIT_S: Final = 5.0  # how long `stop()` waits for the replies it cut short to end
# Failures that signal a broken test, not a flaky provider: tell the SDK not to retry them.
_NO_RETRY: Final = {"x-should-retry": "false"}


class ScriptedServer:
    """A model server on 127.0.0.1 that replays `items` in order, in the wire format of the route
    each request arrives on: OpenAI chat completions or the Responses API (`base_url`),
    Anthropic Messages (`anthropic_base_url`), Gemini `generateContent` (`gemini_base_url`) or
    Ollama's chat (`ollama_host`).

    Each item is a `str` (assistant content, finish_reason "stop"), a `ScriptedReply`, or a
    callable `(request_json) -> str | ScriptedReply`. Every model request, on any of the five
    routes, takes the next item (so one script can be replayed through any SDK); with
    `repeat=True` the script cycles forever. A model request arriving after the script is
    exhausted gets HTTP 500 whose message says so (a test-failure signal, with
    `x-should-retry: false` so the SDK fails fast instead of retrying). Every request is recorded
    as a `RecordedRequest`. A model request asking for a stream (`stream: true` on OpenAI's and
    Anthropic's routes, Gemini's `streamGenerateContent`) gets its item streamed in the route's
    format, unless the item is an error or a raw `body` (sent as for any request).

    Batches (OpenAI's Batch API on `base_url`, Anthropic's Message Batches on
    `anthropic_base_url`) are answered when they are created, line by line in order: with
    `batch_replies=None` each line takes the next script item (a callable item gets the line's
    `body` / `params`), else `batch_replies` answers batch lines only: a mapping by custom_id,
    or a callable `(custom_id, body) -> item`; an item that is bytes is the line's result as is
    (a broken provider's line). A line the script cannot answer (exhausted, a broken item, a
    custom_id the mapping lacks) is an errored line saying why. The lines are rendered exactly
    as the line's route would send them (an OpenAI batch's endpoint: chat completions or
    Responses, `/v1/chat/completions` or `/v1/responses`, as every line's `url` says); a reply
    with status >= 400 is an
    errored line, one with `batch_expired` expires, and a reply's `delay_s` is the time after
    creation when its line is done. A batch is `in_progress` until `batch_delay_s` seconds
    have passed and every line is done; the first request reading it after that finds it ended
    (OpenAI `completed`, or `expired` when a line expired; Anthropic `ended`). A cancel leaves
    it `cancelling` / `canceling` until the next request reading it, which finds it cancelled:
    the lines done before the cancel answered, the others not (OpenAI: in neither file;
    Anthropic: `canceled`); cancelling an ended batch is refused (OpenAI HTTP 409, Anthropic
    400). A batch over `batch_max_requests` lines or `batch_max_bytes` bytes (OpenAI: of its
    input file; Anthropic: of the create request's body) fails (OpenAI: status `failed` with
    the error in `errors`) or is refused (Anthropic: HTTP 400 / 413). Batch lines do not count
    as requests (`requests` holds the HTTP requests); `batches` and `files` show the store;
    `fail_batch_reads` makes the next reads fail as a provider's transient failure,
    `refuse_batch_requests` every request fail for good.
    """

    def __init__(
        self,
        items: Iterable[ScriptItem] = (),
        *,
        repeat: bool = False,
        model: str = "scripted-model",
        port: int = 0,
        batch_delay_s: float = 0.0,
        batch_replies: BatchReplies | None = None,
        batch_max_requests: int | None = None,
        batch_max_bytes: int | None = None,
    ) -> None:
        self.model = model
        self.repeat = repeat
        self._port = port
        self._items: list[ScriptItem] = list(items)
        self._used = 0
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._active = 0  # requests being answered
        self._stopping = threading.Event()
        self._httpd: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._batches = BatchStore(
            self._lock,
            self._next_reply,
            lambda: self.model,
            lambda: self.anthropic_base_url,
            delay_s=batch_delay_s,
            replies=batch_replies,
            max_requests=batch_max_requests,
            max_bytes=batch_max_bytes,
        )

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        """Bind a port (random free one by default) and serve in a background thread."""
        if self._stopping.is_set():
            raise RuntimeError("a stopped ScriptedServer cannot be restarted; create a new one")
        if self._httpd is not None:
            return self
        httpd = LoopbackHTTPServer((HOST, self._port), _Handler, self)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_until_stopped,
            name=f"ScriptedServer:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections, join the server thread and wait (up to 5 s) for
        the replies being answered to end; idempotent."""
        self._stopping.set()
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        httpd.stop_serving()
        thread.join()
        httpd.server_close()
        httpd.close_connections()
        # the replies cut short end now (their waits see the stop): let them record how far
        # they got, so `requests` is final once `stop()` returns
        with self._idle:
            self._idle.wait_for(lambda: self._active == 0, _STOP_WAIT_S)

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
    def ollama_host(self) -> str:
        """`http://127.0.0.1:PORT`, for `ollama.Client(host=...)` (which posts to `/api/chat`
        itself)."""
        return f"http://{HOST}:{self.port}"

    @property
    def stopping(self) -> threading.Event:
        """Set once `stop()` has begun: a reply waiting or writing slowly ends at once."""
        return self._stopping

    @property
    def requests(self) -> list[RecordedRequest]:
        """Snapshot of all requests so far (model requests on every route, models, 404s,
        malformed), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def batches(self) -> list[ScriptedBatch]:
        """Snapshot of every batch (OpenAI's and Anthropic's), in creation order, as the
        clients were last shown it (reading it does not move a batch on)."""
        return self._batches.snapshots()

    @property
    def files(self) -> list[ScriptedFile]:
        """Snapshot of the OpenAI files held: uploads and batches' output and error files."""
        return self._batches.file_snapshots()

    def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until no request is being answered (a streamed reply is being written until it
        ends, or until the server notices that the client closed the connection), so that
        `requests` holds the final `RecordedRequest` of every reply; `TimeoutError` after
        `timeout` seconds."""
        with self._idle:
            if not self._idle.wait_for(lambda: self._active == 0, timeout):
                raise TimeoutError(
                    f"ScriptedServer is still answering {self._active} request(s) after {timeout} s"
                )

    @property
    def remaining(self) -> int:
        """Items not yet used (with `repeat=True`: items left before the script starts over)."""
        with self._lock:
            if self.repeat:
                return len(self._items) - self._used % len(self._items) if self._items else 0
            return len(self._items) - self._used

    # -- scripting -------------------------------------------------------------------------

    def push(self, item: ScriptItem) -> None:
        """Append one scripted item."""
        with self._lock:
            self._items.append(item)

    def extend(self, items: Iterable[ScriptItem]) -> None:
        """Append scripted items."""
        new = list(items)
        with self._lock:
            self._items.extend(new)

    def fail_batch_reads(self, count: int, status: int = 503) -> None:
        """Answer the next `count` GET requests on the batch routes (a batch's status, a list,
        a file's content, Anthropic's results) with HTTP `status`, as a provider's transient
        failure: the error body of the route's provider, `retry-after-ms: 1` (an SDK retries
        at once). Replaces the failures still pending (`count=0`: none)."""
        self._batches.fail_reads(count, status)

    def refuse_batch_requests(self, status: int | None) -> None:
        """Answer every batch route request with HTTP `status` (a 4xx: 404 is an endpoint with
        no Batch API, 401 a refused key), not retried, until called with None."""
        self._batches.refuse(status)

    # -- used by the handler ---------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _update(self, old: RecordedRequest, new: RecordedRequest) -> None:
        """Replace the record `old` (the very object) with `new`."""
        with self._lock:
            for index, request in enumerate(self._requests):
                if request is old:
                    self._requests[index] = new
                    return

    @contextlib.contextmanager
    def _answering(self) -> Iterator[None]:
        """Count one request as being answered while the block runs (for `wait_idle`)."""
        with self._idle:
            self._active += 1
        try:
            yield
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def _next_reply(
        self, request_body: dict[str, Any], asker: str = "model request"
    ) -> tuple[ScriptedReply, int]:
        """The next script item as a reply, and its number (1-based); `ScriptFailure` when the
        script is exhausted or the item does not make a reply. `asker` names what wants it in
        the exhaustion message (a batch line names itself)."""
        with self._lock:
            number = self._used + 1
            if self.repeat and self._items:
                item = self._items[self._used % len(self._items)]
            elif self._used < len(self._items):
                item = self._items[self._used]
            else:
                raise ScriptFailure(
                    f"ScriptedServer script exhausted: {asker} #{number} arrived but the "
                    f"script has {len(self._items)} item(s) and repeat is off.",
                    code="script_exhausted",
                )
            self._used += 1
        # a callable item is called outside the lock
        return resolve_item(item, request_body, f"script item #{number}"), number


class _Handler(QuietHandler):
    """One connection's requests: each is recorded, then answered by the route it matches."""

    server: LoopbackHTTPServer

    # -- routing ---------------------------------------------------------------------------

    def dispatch(self) -> None:
        """Record the request, then answer it with the first route of `_ROUTES` it matches."""
        with self.server.scripted._answering():
            self._answer()

    def _answer(self) -> None:
        request = self._receive()
        if request is None:
            return
        path = urlsplit(self.path).path.rstrip("/")
        for method, pattern, answer in _ROUTES:
            if self.command == method and (match := pattern.fullmatch(path)):
                answer(self, request, match)
                return
        self._send_error(
            openai_chat.FORMAT,
            404,
            f"Unknown request URL: {self.command} {self.path}. Please check the URL for "
            "typos, or see the docs at https://platform.openai.com/docs/api-reference/.",
            _NO_RETRY,
            code="unknown_url",
        )

    def _receive(self) -> RecordedRequest | None:
        """Read, parse and record the request (`None`, after answering 400, if unreadable)."""
        try:
            raw = self._read_body()
        except ValueError as exc:
            self.close_connection = True
            message = f"Could not read the request body: {exc}"
            self._send_error(openai_chat.FORMAT, 400, message, _NO_RETRY)
            return None
        body: dict[str, Any] | None = None
        if raw:
            with contextlib.suppress(ValueError, UnicodeDecodeError):  # not JSON: no body
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else None
        headers = {key.lower(): value for key, value in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body, raw)
        self.server.scripted._record(request)
        return request

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

    # -- answers ---------------------------------------------------------------------------

    def _model_request(
        self, wire: WireFormat, request: RecordedRequest, match: re.Match[str]
    ) -> None:
        """Answer one model request with the next script item, in `wire`'s format."""
        body = request.body
        if body is None:
            self._send_error(wire, 400, wire.malformed, _NO_RETRY)
            return
        problem = wire.unsupported(body, match)
        if problem is not None:
            self._send_error(wire, 400, problem, _NO_RETRY)
            return
        scripted = self.server.scripted
        try:
            reply, number = scripted._next_reply(body)
        except ScriptFailure as failure:
            self._send_error(wire, 500, str(failure), _NO_RETRY, code=failure.code)
            return
        if reply.delay_s and self._pacer().pause(reply.delay_s):
            self.close_connection = True  # stopping, or the client left: drop the request
            return
        self._send_reply(wire, reply, number, request, match)

    def _send_reply(
        self,
        wire: WireFormat,
        reply: ScriptedReply,
        number: int,
        request: RecordedRequest,
        match: re.Match[str],
    ) -> None:
        """Send `reply`: its raw body, its HTTP error, or a reply in `wire`'s format (streamed
        when the request asks for a stream)."""
        body = request.body or {}
        extra = reply.headers or {}
        if reply.body is not None:
            raw = reply.body.encode() if isinstance(reply.body, str) else reply.body
            self._send(reply.status, raw, reply.content_type or JSON_TYPE, extra)
            return
        if reply.status >= 400:
            self._send_error(
                wire,
                reply.status,
                reply_error_message(reply),
                extra,
                type=reply.error_type,
                param=reply.error_param,
                code=reply.error_code,
            )
            return
        model = wire.requested_model(body, match)
        model = model if isinstance(model, str) and model else self.server.scripted.model
        streamed = wire.streams(body, match)
        try:
            counts = usage(reply, wire.prompt_chars(body))
            if streamed:
                planned = plan(wire.stream(number, model, reply, counts, body), reply)
            else:
                payload, content_type = wire.reply_body(number, model, reply, counts, body)
        except Exception as exc:  # a reply the route cannot render: the client is told why
            problem = f"ScriptedServer script item #{number}: {unservable(exc)}"
            self._send_error(wire, 500, problem, _NO_RETRY, code="script_error")
            return
        if streamed:
            self._send_stream(reply, planned, request, extra)
        else:
            self._send(reply.status, payload, content_type, extra)

    def _send_stream(
        self,
        reply: ScriptedReply,
        planned: Planned,
        request: RecordedRequest,
        headers: Mapping[str, str],
    ) -> None:
        """Write `planned` as a chunked SSE body, one chunk per event (waiting `chunk_delay_s`
        between two), then end the body or cut the connection; stop early when the client has
        closed the connection or the server stops. The request's record is then updated."""
        chunked = self.request_version != "HTTP/1.0"  # 1.0: the body ends with the connection
        self.send_response(reply.status)
        self.send_header("Content-Type", planned.content_type)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", self._request_id())
        for name, value in headers.items():
            self.send_header(name, value)
        sent, completed = 0, False
        pacer = self._pacer()
        try:
            self.end_headers()
            sent, completed = pacer.write_events(reply, planned, chunked=chunked)
            # every event written (and waited for): the script is played, even if the client,
            # done reading, closes the connection before the end of the body
            if completed and planned.cut:
                self.connection.shutdown(socket.SHUT_RDWR)  # no end of the chunked body
            elif completed and chunked and not pacer.client_gone():
                self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away (BrokenPipeError, ConnectionResetError, ...)
            pass
        finally:
            if planned.cut or not completed or not chunked:
                self.close_connection = True
            update = replace(request, streamed=True, events_sent=sent, stream_completed=completed)
            self.server.scripted._update(request, update)

    def _pacer(self) -> Pacer:
        """Paced writes and waits on this connection, watching the server's stop."""
        return Pacer(self.connection, self.wfile, self.server.scripted.stopping)

    def _batch_request(
        self, answer: BatchAnswer, request: RecordedRequest, match: re.Match[str]
    ) -> None:
        """Answer a batch API request from the server's batch store."""
        response = answer(self.server.scripted._batches, request, match)
        self._send(response.status, response.body, response.content_type, response.headers)

    def _list_models(self, request: RecordedRequest, match: re.Match[str]) -> None:
        self._send_json(200, openai_chat.model_list(self.server.scripted.model))

    def _describe_model(self, request: RecordedRequest, match: re.Match[str]) -> None:
        self._send_json(200, openai_chat.model_object(match["model"]))

    # -- responses -------------------------------------------------------------------------

    def _send_error(
        self,
        wire: WireFormat,
        status: int,
        message: str,
        headers: Mapping[str, str],
        *,
        type: str | None = None,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        body = wire.error_body(status, message, type, param, code)
        self._send(status, body, JSON_TYPE, headers)


# (HTTP method, path pattern matched in full, answer): the first match answers, else a 404
_Route = tuple[str, re.Pattern[str], Callable[[_Handler, RecordedRequest, re.Match[str]], None]]


def _model_route(wire: WireFormat) -> _Route:
    """The POST route of `wire`'s model requests."""

    def answer(handler: _Handler, request: RecordedRequest, match: re.Match[str]) -> None:
        handler._model_request(wire, request, match)

    return "POST", wire.path, answer


def _batch_route(route: BatchRoute) -> _Route:
    """A batch API route, answered by `_Handler._batch_request`."""
    method, path, batch_answer = route

    def answer(handler: _Handler, request: RecordedRequest, match: re.Match[str]) -> None:
        handler._batch_request(batch_answer, request, match)

    return method, path, answer


_ROUTES: Final[tuple[_Route, ...]] = (
    *(_model_route(wire) for wire in WIRE_FORMATS),
    ("GET", openai_chat.MODELS_PATH, _Handler._list_models),
    ("GET", openai_chat.MODEL_PATH, _Handler._describe_model),
    *(_batch_route(route) for route in BATCH_ROUTES),
)


if __name__ == "__main__":  # the entry point moved to `_serve` (which imports this module)
    raise SystemExit("run the scripted server with: python -m healjson.testing._serve --help")
