"""The batch APIs' HTTP routes: each reads one request and answers it from the `BatchStore`.

OpenAI (under `/v1`, the prefix optional as on the chat route): `POST /files` (multipart:
`purpose`, `file`), `GET /files` (`purpose`, `limit`, `after`), `GET /files/{id}`,
`GET /files/{id}/content`, `DELETE /files/{id}`; `POST /batches`, `GET /batches` (`limit`,
`after`), `GET /batches/{id}`, `POST /batches/{id}/cancel`.

Anthropic: `POST /v1/messages/batches`, `GET /v1/messages/batches` (`limit`, `after_id`,
`before_id`), `GET /v1/messages/batches/{id}`, `DELETE /v1/messages/batches/{id}`,
`POST /v1/messages/batches/{id}/cancel`, `GET /v1/messages/batches/{id}/results` (JSONL).

A refused request gets the provider's error body with `x-should-retry: false`: every refusal
here is deterministic (a missing batch, a cancel after the end, a request over a limit), so
the SDK fails at once instead of retrying a 409 twice. A read the store was told to fail
(`BatchStore.fail_reads`) gets its status and the provider's error body with `retry-after-ms:
1`, as a transient failure an SDK retries (at once). A store told to refuse (`BatchStore.refuse`)
answers every request with its status (no Batch API: 404; the key refused: 401).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qs, unquote, urlsplit

from ._batches import BatchStore
from ._replies import RecordedRequest
from ._wire import JSON_TYPE, anthropic_messages, openai_chat
from ._wire import batches as wire
from ._wire._common import WireFormat

__all__ = ["ROUTES", "BatchRoute", "Response"]

_NO_RETRY: Final = {"x-should-retry": "false"}
_RETRY_NOW: Final = {"retry-after-ms": "1"}
_BINARY: Final = "application/octet-stream"


@dataclass(frozen=True, slots=True)
class Response:
    """What the handler sends: status, body, content type and extra headers."""

    status: int
    body: bytes
    content_type: str = JSON_TYPE
    headers: Mapping[str, str] = field(default_factory=dict)


Answer = Callable[[BatchStore, RecordedRequest, re.Match[str]], Response]
# (HTTP method, path pattern matched in full, answer)
BatchRoute = tuple[str, re.Pattern[str], Answer]
_Reader = Callable[[BatchStore, RecordedRequest, re.Match[str]], "Mapping[str, Any] | Response"]


def _route(format_: WireFormat, method: str, path: str, read: _Reader) -> BatchRoute:
    """A route answering with `read`'s JSON object (HTTP 200) or response; a `Refused` is sent
    as `format_`'s error body."""

    def answer(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Response:
        if store.refusing is not None:  # `refuse`: no Batch API here, or the key refused
            said = f"{method} {urlsplit(request.path).path}: refused (HTTP {store.refusing})."
            body = format_.error_body(store.refusing, said, None, None, None)
            return Response(store.refusing, body, JSON_TYPE, _NO_RETRY)
        failing = store.failing_read() if method == "GET" else None
        if failing is not None:
            body = format_.error_body(
                failing, "The service is briefly unavailable.", None, None, None
            )
            return Response(failing, body, JSON_TYPE, _RETRY_NOW)
        try:
            result = read(store, request, match)
        except wire.Refused as refused:
            body = format_.error_body(
                refused.status, refused.message, refused.type, refused.param, refused.code
            )
            return Response(refused.status, body, JSON_TYPE, _NO_RETRY)
        if isinstance(result, Response):
            return result
        return Response(200, _json(result))

    return method, re.compile(path), answer


def _json(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def _body(format_: WireFormat, request: RecordedRequest) -> dict[str, Any]:
    if request.body is None:
        raise wire.Refused(400, format_.malformed)
    return request.body


def _query(request: RecordedRequest) -> dict[str, str]:
    """The query parameters (the last value of each)."""
    return {key: values[-1] for key, values in parse_qs(urlsplit(request.path).query).items()}


def _limit(query: Mapping[str, str], default: int, most: int) -> int:
    raw = query.get("limit")
    if raw is None:
        return default
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= most:
        raise wire.Refused(400, f"limit must be an integer from 1 to {most}, got {raw!r}.", "limit")
    return limit


def _by_id(operation: Callable[[BatchStore, str], Mapping[str, Any]]) -> _Reader:
    """A reader calling the store's `operation` with the path's (unquoted) id."""
    return lambda store, request, match: operation(store, _id(match))


def _id(match: re.Match[str]) -> str:
    return unquote(match["id"])


# -- OpenAI ----------------------------------------------------------------------------------

_OPENAI = openai_chat.FORMAT
_V1: Final = r"(?:/v1)?"
_FILES: Final = _V1 + r"/files"
_FILE: Final = _FILES + r"/(?P<id>[^/]+)"
_BATCHES: Final = _V1 + r"/batches"
_BATCH: Final = _BATCHES + r"/(?P<id>[^/]+)"


def _upload(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    fields = wire.multipart_fields(request.headers.get("content-type", ""), request.raw)
    purpose, upload = fields.get("purpose"), fields.get("file")
    if purpose is None or upload is None:
        missing = "purpose" if purpose is None else "file"
        raise wire.Refused(400, f"Missing required parameter: '{missing}'.", missing)
    filename, content = upload
    return store.upload(filename or "upload", purpose[1].decode(errors="replace"), content)


def _list_files(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    query = _query(request)
    return store.list_files(query.get("purpose"), _limit(query, 10_000, 10_000), query.get("after"))


def _file_content(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    return Response(200, store.file_content(_id(match)), _BINARY)


def _create_batch(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    return store.create_openai(_body(_OPENAI, request))


def _list_batches(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    query = _query(request)
    return store.list_openai(_limit(query, 20, 100), query.get("after"))


_OPENAI_ROUTES: Final = (
    _route(_OPENAI, "POST", _FILES, _upload),
    _route(_OPENAI, "GET", _FILES, _list_files),
    _route(_OPENAI, "GET", _FILE, _by_id(BatchStore.file)),
    _route(_OPENAI, "DELETE", _FILE, _by_id(BatchStore.delete_file)),
    _route(_OPENAI, "GET", _FILE + "/content", _file_content),
    _route(_OPENAI, "POST", _BATCHES, _create_batch),
    _route(_OPENAI, "GET", _BATCHES, _list_batches),
    _route(_OPENAI, "GET", _BATCH, _by_id(BatchStore.retrieve_openai)),
    _route(_OPENAI, "POST", _BATCH + "/cancel", _by_id(BatchStore.cancel_openai)),
)

# -- Anthropic -------------------------------------------------------------------------------

_ANTHROPIC = anthropic_messages.FORMAT
_MESSAGE_BATCHES: Final = _V1 + r"/messages/batches"
_MESSAGE_BATCH: Final = _MESSAGE_BATCHES + r"/(?P<id>[^/]+)"


def _create_message_batch(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    return store.create_anthropic(_body(_ANTHROPIC, request), len(request.raw))


def _list_message_batches(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    query = _query(request)
    limit = _limit(query, 20, 1000)
    return store.list_anthropic(limit, query.get("after_id"), query.get("before_id"))


def _results(store: BatchStore, request: RecordedRequest, match: re.Match[str]) -> Any:
    return Response(200, store.results_anthropic(_id(match)), "application/binary")


_ANTHROPIC_ROUTES: Final = (
    _route(_ANTHROPIC, "POST", _MESSAGE_BATCHES, _create_message_batch),
    _route(_ANTHROPIC, "GET", _MESSAGE_BATCHES, _list_message_batches),
    _route(_ANTHROPIC, "GET", _MESSAGE_BATCH, _by_id(BatchStore.retrieve_anthropic)),
    _route(_ANTHROPIC, "DELETE", _MESSAGE_BATCH, _by_id(BatchStore.delete_anthropic)),
    _route(_ANTHROPIC, "POST", _MESSAGE_BATCH + "/cancel", _by_id(BatchStore.cancel_anthropic)),
    _route(_ANTHROPIC, "GET", _MESSAGE_BATCH + "/results", _results),
)

ROUTES: Final[tuple[BatchRoute, ...]] = (*_OPENAI_ROUTES, *_ANTHROPIC_ROUTES)
"""Every batch route, OpenAI's then Anthropic's; no two match the same method and path."""
