"""Provider batch APIs on the wire: OpenAI's Batch API (file objects, batch objects, the JSONL
output and error lines) and Anthropic's Message Batches (`message_batch` objects, the JSONL
results), the checks each service runs on what it is sent, and a multipart/form-data reader for
OpenAI's file uploads. Pure functions, no sockets and no state: `healjson.testing._batches`
keeps the store and the lifecycle.

A line's answer is rendered by the route its request names (`answer`): the very body the chat
completions, Responses or Messages route would send for that reply, so a refusal, a `length`
finish, tool calls or reasoning read the same in a batch as in a synchronous call.
"""

from __future__ import annotations

import email.message
import email.parser
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from . import openai_chat, openai_responses
from ._common import UnservableReply, WireFormat, reply_error_message, usage

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

OPENAI_ENDPOINT: Final = "/v1/chat/completions"
# the batch endpoints the server answers, and the route each one's lines are answered by
OPENAI_FORMATS: Final[Mapping[str, WireFormat]] = {
    OPENAI_ENDPOINT: openai_chat.FORMAT,
    "/v1/responses": openai_responses.FORMAT,
}
COMPLETION_WINDOW: Final = "24h"
WINDOW_S: Final = 24 * 3600
ANTHROPIC_CUSTOM_ID: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
METADATA_KEYS: Final = 16
EXPIRED_MESSAGE: Final = "This request could not be executed before the completion window expired."


class Refused(ValueError):
    """A request the service refuses with an HTTP error: its status, message and (OpenAI's)
    `param` and `code`; `type` overrides the status's default error type."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.type = type


@dataclass(frozen=True, slots=True)
class Answer:
    """What a route would send for a reply: its HTTP status, its JSON body as sent (kept as
    bytes, spliced into the line as is), and the usage of a model reply (`None` for an error
    or a raw body)."""

    status: int
    body: bytes
    usage: dict[str, int] | None = None

    @property
    def ok(self) -> bool:
        return self.status < 400


def answer(
    wire: WireFormat, reply: ScriptedReply, number: int, model: str, request: Mapping[str, Any]
) -> Answer:
    """`reply` as `wire`'s route would send it, not streamed: a raw `body` as given (on one
    line; a JSON string of its text when it is not JSON), an HTTP error as the route's error
    body, else the route's reply body (`UnservableReply`: a 500 script error, as the route
    sends it)."""
    if reply.body is not None:
        raw = reply.body.encode() if isinstance(reply.body, str) else reply.body
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw.decode(errors="replace")
        return Answer(reply.status, json.dumps(parsed).encode())
    if reply.status >= 400:
        body = wire.error_body(
            reply.status,
            reply_error_message(reply),
            reply.error_type,
            reply.error_param,
            reply.error_code,
        )
        return Answer(reply.status, body)
    requested = request.get("model")
    model = requested if isinstance(requested, str) and requested else model
    try:
        counts = usage(reply, wire.prompt_chars(request))  # a reply of the wrong types: raises
        payload, _ = wire.reply_body(number, model, reply, counts, request)
    except UnservableReply as exc:
        return failure(wire, f"ScriptedServer script item #{number}: {exc}", "script_error")
    return Answer(reply.status, payload, counts)


def failure(wire: WireFormat, message: str, code: str) -> Answer:
    """A script failure (exhausted, a broken item) as the route's HTTP 500 error body."""
    return Answer(500, wire.error_body(500, message, None, None, code))


# a stand-in for a JSON body in a line, replaced by the body's bytes (no parse, no re-encode)
_BODY: Final = "\x00body\x00"
_BODY_JSON: Final = json.dumps(_BODY).encode()


def _spliced(payload: Mapping[str, Any], body: bytes) -> bytes:
    """`payload` as JSON, its last `_BODY` replaced by the JSON text `body`."""
    head, _, tail = json.dumps(payload).encode().rpartition(_BODY_JSON)
    return head + body + tail


def rfc3339(timestamp: float) -> str:
    """A Unix time as Anthropic writes its times: `2024-08-20T18:37:24.100435Z`."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


# -- multipart/form-data ---------------------------------------------------------------------


def multipart_fields(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename or None, content); split on
    the boundary in one pass. `Refused` (400) when the body is not multipart."""
    headers = email.message.Message()
    headers["content-type"] = content_type
    boundary = headers.get_param("boundary")
    if headers.get_content_type() != "multipart/form-data" or not isinstance(boundary, str):
        raise Refused(400, "Expected a multipart/form-data body with a boundary.")
    fields: dict[str, tuple[str | None, bytes]] = {}
    parser = email.parser.BytesHeaderParser()
    for part in (b"\r\n" + body).split(b"\r\n--" + boundary.encode())[1:]:
        if part.startswith(b"--"):  # the closing delimiter
            break
        head, separator, content = part.partition(b"\r\n\r\n")
        if not separator:
            raise Refused(400, "Malformed multipart/form-data body: a part has no header end.")
        part_headers = parser.parsebytes(head.lstrip(b" \t").removeprefix(b"\r\n") + b"\r\n\r\n")
        name = part_headers.get_param("name", header="content-disposition")
        if isinstance(name, str):
            fields[name] = (part_headers.get_filename(), content)
    return fields


# -- OpenAI: files and batches ---------------------------------------------------------------


def file_object(
    file_id: str, filename: str, purpose: str, size: int, created_at: float
) -> dict[str, Any]:
    """A `file` object (the deprecated `status` is always `processed`)."""
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(created_at),
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
        "expires_at": None,
        "status_details": None,
    }


def file_deleted(file_id: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "deleted": True}


def openai_list(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """A cursor page: `{"object": "list", "data", "first_id", "last_id", "has_more"}`."""
    return {
        "object": "list",
        "data": data,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
        "has_more": has_more,
    }


def check_batch_params(body: Mapping[str, Any]) -> dict[str, str] | None:
    """Refuse a `POST /v1/batches` body as OpenAI does (HTTP 400); its metadata, if any."""
    for name in ("input_file_id", "endpoint", "completion_window"):
        if not isinstance(body.get(name), str) or not body[name]:
            raise Refused(
                400,
                f"Missing required parameter: '{name}'.",
                name,
                "missing_required_parameter",
            )
    if body["endpoint"] not in OPENAI_FORMATS:
        raise Refused(
            400,
            f"ScriptedServer answers batches for {' and '.join(OPENAI_FORMATS)} only, got "
            f"endpoint {body['endpoint']!r}.",
            "endpoint",
            "invalid_value",
        )
    if body["completion_window"] != COMPLETION_WINDOW:
        raise Refused(
            400,
            f"Invalid value for 'completion_window': {body['completion_window']!r}; only "
            f"{COMPLETION_WINDOW!r} is supported.",
            "completion_window",
            "invalid_value",
        )
    return check_metadata(body.get("metadata"))


def check_metadata(metadata: object) -> dict[str, str] | None:
    """At most 16 string pairs, keys up to 64 characters, values up to 512 (else HTTP 400)."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in metadata.items()
    ):
        raise Refused(400, "metadata must be an object of string values.", "metadata")
    if len(metadata) > METADATA_KEYS:
        raise Refused(400, f"metadata holds at most {METADATA_KEYS} keys.", "metadata")
    for key, value in metadata.items():
        if len(key) > 64 or len(value) > 512:
            raise Refused(
                400,
                f"metadata key {key[:64]!r}: keys hold at most 64 characters, values 512.",
                "metadata",
            )
    return dict(metadata)


def batch_error(code: str, message: str, line: int | None, param: str | None) -> dict[str, Any]:
    return {"code": code, "message": message, "line": line, "param": param}


def read_input_file(
    content: bytes, endpoint: str
) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
    """A batch input file's requests, `(custom_id, body)` in line order, and the errors that
    fail the batch (`batch_error` objects, lines numbered from 1; blank lines are skipped):
    each line a JSON object with a unique string `custom_id`, `method` POST, `url` = the batch's
    endpoint and an object `body`, every body naming the same `model` (when it names one)."""
    requests: list[tuple[str, dict[str, Any]]] = []
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()
    for number, raw in enumerate(content.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if not isinstance(line, dict):
            message = "This line is not parseable as valid JSON."
            errors.append(batch_error("invalid_json_line", message, number, None))
            continue
        problem = _line_problem(line, endpoint, seen)
        if problem is not None:
            errors.append(batch_error(*problem[:2], number, problem[2]))
            continue
        model = line["body"].get("model")
        if isinstance(model, str):
            models.add(model)
            if len(models) > 1:
                message = (
                    "The model in this request differs from the batch's others: a batch "
                    "holds requests to a single model."
                )
                errors.append(batch_error("mismatched_model", message, number, "body.model"))
                models.discard(model)
                continue
        seen.add(line["custom_id"])
        requests.append((line["custom_id"], line["body"]))
    if not requests and not errors:
        errors.append(batch_error("empty_file", "The batch input file is empty.", None, None))
    return requests, errors


def _line_problem(
    line: dict[str, Any], endpoint: str, seen: set[str]
) -> tuple[str, str, str] | None:
    """Why one parsed input line is refused, as (code, message, param), or None."""
    for name in ("custom_id", "method", "url", "body"):
        if name not in line:
            return "missing_required_parameter", f"Missing required parameter: '{name}'.", name
    custom_id = line["custom_id"]
    if not isinstance(custom_id, str) or not custom_id:
        return "invalid_value", "custom_id must be a non-empty string.", "custom_id"
    if custom_id in seen:
        message = (
            "The custom_id for this request is a duplicate of another request. The custom_id "
            "parameter must be unique for each request in a batch."
        )
        return "duplicate_custom_id", message, "custom_id"
    if line["method"] != "POST":
        return "invalid_method", f"Invalid method {line['method']!r}: only POST.", "method"
    if line["url"] != endpoint:
        message = f"The url {line['url']!r} does not match the batch's endpoint {endpoint!r}."
        return "invalid_url", message, "url"
    if not isinstance(line["body"], dict):
        return "invalid_value", "body must be a JSON object.", "body"
    return None


def too_large(what: str, size: int, limit: int) -> dict[str, Any]:
    """The error of a batch over a scripted limit (`what`: "requests" or "bytes")."""
    code = "too_many_requests" if what == "requests" else "file_too_large"
    message = (
        f"The batch input file holds {size} {what}, over this server's limit of {limit} "
        f"{what} (ScriptedServer batch_max_{what}): split it into smaller batches."
    )
    return batch_error(code, message, None, None)


def output_line(line_id: str, custom_id: str, request_id: str, answered: Answer) -> bytes:
    """A line of the output file (a status < 400) or of the error file (an HTTP error)."""
    response = {"status_code": answered.status, "request_id": request_id, "body": _BODY}
    line = {"id": line_id, "custom_id": custom_id, "response": response, "error": None}
    return _spliced(line, answered.body)


def expired_line(line_id: str, custom_id: str) -> bytes:
    """The error-file line of a request the completion window closed on."""
    error = {"code": "batch_expired", "message": EXPIRED_MESSAGE}
    line = {"id": line_id, "custom_id": custom_id, "response": None, "error": error}
    return json.dumps(line).encode()


def batch_usage(usages: Iterable[Mapping[str, int]]) -> dict[str, Any]:
    """A batch's `usage`: the answered lines' usage summed, in the Responses-style names."""
    totals = dict.fromkeys(("prompt", "completion", "cached", "reasoning"), 0)
    for counts in usages:
        totals["prompt"] += counts.get("prompt_tokens", 0)
        totals["completion"] += counts.get("completion_tokens", 0)
        totals["cached"] += counts.get("cached_tokens", 0)
        totals["reasoning"] += counts.get("reasoning_tokens", 0)
    return {
        "input_tokens": totals["prompt"],
        "input_tokens_details": {"cached_tokens": totals["cached"]},
        "output_tokens": totals["completion"],
        "output_tokens_details": {"reasoning_tokens": totals["reasoning"]},
        "total_tokens": totals["prompt"] + totals["completion"],
    }


OPENAI_STAMPS: Final = (
    "in_progress_at",
    "finalizing_at",
    "completed_at",
    "failed_at",
    "expired_at",
    "cancelling_at",
    "cancelled_at",
)


def openai_batch(
    batch_id: str,
    *,
    status: str,
    input_file_id: str,
    model: str | None,
    created_at: float,
    stamps: Mapping[str, float],
    counts: tuple[int, int, int],
    metadata: Mapping[str, str] | None,
    errors: Sequence[Mapping[str, Any]] | None,
    output_file_id: str | None,
    error_file_id: str | None,
    usage: Mapping[str, Any] | None,
    endpoint: str = OPENAI_ENDPOINT,
) -> dict[str, Any]:
    """A `batch` object, every field of the SDK's `Batch` present; `counts` = (total,
    completed, failed); `stamps` = the `*_at` times reached so far."""
    payload: dict[str, Any] = {
        "id": batch_id,
        "object": "batch",
        "endpoint": endpoint,
        "model": model,
        "errors": {"object": "list", "data": list(errors)} if errors else None,
        "input_file_id": input_file_id,
        "completion_window": COMPLETION_WINDOW,
        "status": status,
        "output_file_id": output_file_id,
        "error_file_id": error_file_id,
        "created_at": int(created_at),
        "expires_at": int(created_at) + WINDOW_S,
    }
    payload |= {name: int(stamps[name]) if name in stamps else None for name in OPENAI_STAMPS}
    total, completed, failed = counts
    payload["request_counts"] = {"total": total, "completed": completed, "failed": failed}
    payload["metadata"] = dict(metadata) if metadata is not None else None
    payload["usage"] = dict(usage) if usage is not None else None
    return payload


# -- Anthropic: Message Batches --------------------------------------------------------------


def check_message_requests(body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A `POST /v1/messages/batches` body's requests, `(custom_id, params)` in order; `Refused`
    (400) as Anthropic refuses a batch: `requests` a non-empty list, each `custom_id` matching
    `^[a-zA-Z0-9_-]{1,64}$` and unique, each `params` an object with `model`, `max_tokens` and
    `messages`."""
    requests = body.get("requests")
    if not isinstance(requests, list) or not requests:
        raise Refused(400, "requests: Field required: a non-empty list of requests.")
    checked: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for index, request in enumerate(requests):
        where = f"requests.{index}"
        if not isinstance(request, dict):
            raise Refused(400, f"{where}: Input should be an object.")
        custom_id, params = request.get("custom_id"), request.get("params")
        if not isinstance(custom_id, str) or not ANTHROPIC_CUSTOM_ID.fullmatch(custom_id):
            raise Refused(
                400,
                f"{where}.custom_id: String should match pattern "
                f"'^{ANTHROPIC_CUSTOM_ID.pattern}$', got {custom_id!r}.",
            )
        if custom_id in seen:
            raise Refused(
                400,
                f"{where}.custom_id: {custom_id!r} is not unique: each request in a Message "
                "Batch needs its own custom_id.",
            )
        if not isinstance(params, dict):
            raise Refused(400, f"{where}.params: Field required: an object.")
        for name, kind in (("model", str), ("max_tokens", int), ("messages", list)):
            if not isinstance(params.get(name), kind):
                raise Refused(400, f"{where}.params.{name}: Field required.")
        seen.add(custom_id)
        checked.append((custom_id, params))
    return checked


ANTHROPIC_COUNTS: Final = ("processing", "succeeded", "errored", "canceled", "expired")


def message_batch(
    batch_id: str,
    *,
    status: str,
    counts: Mapping[str, int],
    created_at: float,
    ended_at: float | None,
    cancel_initiated_at: float | None,
    results_url: str | None,
) -> dict[str, Any]:
    """A `message_batch` object (times in RFC 3339; `archived_at` always null)."""
    return {
        "id": batch_id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {name: counts.get(name, 0) for name in ANTHROPIC_COUNTS},
        "created_at": rfc3339(created_at),
        "expires_at": rfc3339(created_at + WINDOW_S),
        "ended_at": rfc3339(ended_at) if ended_at is not None else None,
        "cancel_initiated_at": (
            rfc3339(cancel_initiated_at) if cancel_initiated_at is not None else None
        ),
        "archived_at": None,
        "results_url": results_url,
    }


def anthropic_list(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """A page: `{"data", "has_more", "first_id", "last_id"}`."""
    return {
        "data": data,
        "has_more": has_more,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


def batch_deleted(batch_id: str) -> dict[str, Any]:
    return {"id": batch_id, "type": "message_batch_deleted"}


def result_line(custom_id: str, answered: Answer) -> bytes:
    """A results line: `succeeded` with the message for a status < 400, else `errored` with
    the error response."""
    if answered.ok:
        result = {"type": "succeeded", "message": _BODY}
    else:
        result = {"type": "errored", "error": _BODY}
    return _spliced({"custom_id": custom_id, "result": result}, answered.body)


def unanswered_line(custom_id: str, kind: str) -> bytes:
    """A results line for a request never answered: `kind` "expired" or "canceled"."""
    return json.dumps({"custom_id": custom_id, "result": {"type": kind}}).encode()


def jsonl(lines: Iterable[bytes]) -> bytes:
    """JSON lines (each one line of JSON) as a JSONL file, each line ended by a newline."""
    return b"".join(line + b"\n" for line in lines)
