"""What durable steps share (`healjson.dbos`, `healjson.temporal`): one model call as a durable
unit whose result is plain data, and the line between a failure worth retrying and one that is
an answer.

A healed call inside a workflow is driven by the ordinary drivers (`Healer.run` / `arun`); only
its `call` changes: each model call runs as its own durable unit (a DBOS step; a Temporal
activity's recorded progress), and what the unit returns is data — the `Reply` the wire readers
made of the SDK's response, or a terminal failure — so a workflow that resumes gets each
finished call's result back and calls the model only for what never finished. The engine is
deterministic given its calls' results (what `Healer.replay` relies on): the healing itself runs
again, not the calls.

Failures, decided once here:

- **transient** (HTTP 408, 409, 429 or 5xx; a connection failure or a timeout with no HTTP
  answer): the unit raises `RetryableError`, so the durable framework retries it (a DBOS step's
  retries, a Temporal activity's retry policy);
- **terminal** (any other HTTP answer: 400, 401, 403, 404, ...; a body no wire format reads): the
  unit returns it as data, and the run degrades with it (`api_error`) like any run: a value,
  never a retry;
- an exception from the caller's own code (a bug) is raised unchanged.

A `Degraded` outcome (a refusal, a content filter, a spent budget, an answer still invalid after
the last attempt) is the healed step's return value, or with `on_degraded="raise"` a
`healjson.DegradedError` the framework does not retry.

What a unit records, the framework keeps (DBOS's system database, Temporal's heartbeats and
history), so it passes the redactor first, and the run is given the recorded data, never what
the call returned before it was recorded: the first run and a recovery see the same thing.

- A failure's message and a `RetryableError`'s text are diagnostics: redacted (the provider's
  exception is not chained to the `RetryableError`: a framework records the chain).
- A reply's reasoning, refusal and model are recorded redacted (the run's value depends on none
  of their text).
- A reply's answer (its content, its tool calls) is the value's source: redacting it would hand
  the run an answer the model did not give. An answer the redactor would change (the client's
  key, a credential name or shape in it) is recorded redacted and marked, and the run degrades
  with `api_error` saying why — on the first run and on a recovery alike — rather than return a
  value altered by the redaction (or keep the secret in the record).
- A response-cache lookup (`lookup_as_data`) is recorded as the entry found, or a miss: the
  recovered run is served from the cache exactly when the first run was. An entry the redactor
  would change is recorded as a miss.

`request_id` names a healed request in the units' names, so that a recovery which would hand
one request another's recorded results is refused by the framework (DBOS checks a step's
recorded name), never served.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import weakref
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic_core import to_json

from ._core.diagnostic import describe_exception
from ._core.redact import redact_text, redact_with, run_secrets, secrets_scope
from ._core.run.cache import spec_fingerprint
from ._core.run.drive import exception_kind, is_provider_error, settled
from ._core.run.owner import call_client
from ._core.wire.effects import DeadlineExceeded, ProviderError
from ._core.wire.fault import fault_from_exception
from ._core.wire.reply import FUNCTION, Reply, ToolCall, Usage, to_reply

if TYPE_CHECKING:
    from ._core.run.healer import Healer

__all__ = [
    "CacheLookupFailed",
    "OnDegraded",
    "RetryableError",
    "acall_as_data",
    "call_as_data",
    "check_on_degraded",
    "durable_scope",
    "entry_from_data",
    "is_transient",
    "lookup_as_data",
    "reply_from_data",
    "request_id",
]

OnDegraded = Literal["value", "raise"]

TRANSIENT_STATUS: Final = frozenset({408, 409, 429})


class RetryableError(Exception):
    """A transient provider failure in a durable step or activity (HTTP 408, 409, 429, 5xx, a
    connection failure, a timeout): raised so that the durable framework retries the unit. A
    plain run never raises it (its failures degrade); `status` is the HTTP status, if any. Its
    message is redacted (a framework records it)."""

    def __init__(self, message: str, status: int | None = None, kind: str = "api_error") -> None:
        message = redact_text(str(message))
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        """The failure's kind, as a run would degrade with it (`timeout`, `api_error`)."""

    def __reduce__(
        self,
    ) -> tuple[Any, ...]:  # recorded by a framework, read back in another process
        return (type(self), (self.message, self.status, self.kind))


class RecordedFailure(ProviderError):
    """A terminal failure read back from a durable unit's data: the run degrades with it."""


class RecordedTimeout(RecordedFailure, TimeoutError):
    """A terminal timeout read back (the run degrades with `timeout`)."""


class CacheLookupFailed(Exception):
    """A recorded response-cache lookup whose store failed (a miss, reported as
    `healjson.cache_error`)."""


ALTERED: Final = (
    "the model's answer held what healjson never records (the client's key, or a credential "
    "name or shape); a durable step records it redacted, and the run degrades rather than "
    "heal an answer the redaction changed"
)


def is_transient(exc: BaseException) -> bool:
    """True for a failure worth retrying: HTTP 408, 409, 429 or 5xx, or (with no HTTP answer)
    a connection failure or a timeout. The run's own deadline is not one."""
    if isinstance(exc, DeadlineExceeded):
        return False
    fault = fault_from_exception(exc)
    if fault is not None:
        return fault.status in TRANSIENT_STATUS or fault.status >= 500
    return (
        isinstance(exc, OSError | TimeoutError)
        or exception_kind(exc) == "timeout"
        or any("Connection" in cls.__name__ for cls in type(exc).__mro__)
    )


def call_as_data(
    call: Callable[..., Any],
    messages: list[dict[str, Any]],
    params: Mapping[str, Any],
    provider_errors: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """One model call, as a durable unit runs it: `{"reply": ...}` (the reply as data) or
    `{"failure": ...}` (a terminal failure); `RetryableError` for a transient one; an exception
    of the caller's own code raised unchanged."""
    try:
        value = settled(call(list(map(dict, messages)), **params))
    except Exception as exc:
        return _failed(exc, provider_errors)
    return reply_as_data(value)


async def acall_as_data(
    call: Callable[..., Any],
    messages: list[dict[str, Any]],
    params: Mapping[str, Any],
    provider_errors: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """`call_as_data` for a call that may be async (awaited on the running loop)."""
    try:
        value = call(list(map(dict, messages)), **params)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return _failed(exc, provider_errors)
    return reply_as_data(value)


def _failed(exc: Exception, provider_errors: tuple[type[BaseException], ...]) -> dict[str, Any]:
    """A call's exception: a terminal failure as data, `RetryableError` for a transient one, a
    bug raised unchanged. What is recorded is redacted; the provider's exception is not chained
    to the `RetryableError` (a framework records the chain: Temporal's failure, DBOS's log)."""
    if not is_provider_error(exc, provider_errors):
        raise exc
    message = redact_text(describe_exception(exc))
    if is_transient(exc):
        fault = fault_from_exception(exc)
        kind = exception_kind(exc)
        raise RetryableError(message, fault.status if fault else None, kind) from None
    return {"failure": {"kind": exception_kind(exc), "message": message}}


def reply_as_data(value: Any) -> dict[str, Any]:
    """What a call returned, read (`to_reply`) and kept as data, redacted (see the module
    docstring: an answer the redaction changes is marked `altered`); a shape no format reads is
    a terminal failure."""
    try:
        reply = value if type(value) is Reply else to_reply(value)
    except TypeError as exc:
        return {"failure": {"kind": "api_error", "message": redact_text(str(exc))}}
    forms = run_secrets()

    def shown(text: str | None) -> str | None:
        return text if text is None else redact_with(text, forms)

    content = shown(reply.content)
    calls = [  # a custom call keeps its kind, arguments sent as an object say so
        [shown(call.name), shown(call.arguments), shown(call.id)]
        + ([call.kind, True] if call.as_object else [] if call.kind == FUNCTION else [call.kind])
        for call in reply.tool_calls
    ]
    answer = [
        reply.content,
        *(part for c in reply.tool_calls for part in (c.name, c.arguments, c.id)),
    ]
    usage = reply.usage
    data: dict[str, Any] = {
        "content": content,
        "finish_reason": shown(reply.finish_reason),
        "refusal": shown(reply.refusal),
        "model": shown(reply.model),
        "reasoning": shown(reply.reasoning),
        "tool_calls": calls,
        "usage": None
        if usage is None
        else {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "estimated": usage.estimated,
            "reasoning_tokens": usage.reasoning_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "requests": usage.requests,
            "model": shown(usage.model),
        },
    }
    if [content, *(part for call in calls for part in call[:3])] != answer:
        data["altered"] = True
    return {"reply": data}


def out_of_retries(exc: BaseException, attempts: int) -> RecordedFailure | None:
    """A durable framework's "this unit failed on every attempt" (its errors, the
    `RetryableError`s the unit raised, on it as `errors`) as the terminal failure the run
    degrades with: the last failure's kind (`timeout` or `api_error`) and message. None for
    any other exception."""
    errors = getattr(exc, "errors", None)
    if not isinstance(errors, list | tuple) or not errors:
        return None
    last = errors[-1]
    if not isinstance(last, RetryableError):
        return None
    kind = RecordedTimeout if last.kind == "timeout" else RecordedFailure
    return kind(f"the provider still failed after {attempts} attempts: {last.message}")


def reply_from_data(data: Mapping[str, Any]) -> Reply:
    """A durable unit's data back as the reply the flow is sent (a terminal failure raised as
    the provider's error, so the run degrades with it)."""
    failure = data.get("failure")
    if failure is not None:
        kind = RecordedTimeout if failure.get("kind") == "timeout" else RecordedFailure
        raise kind(str(failure.get("message", "the model call failed")))
    reply = data["reply"]
    if reply.get("altered"):
        raise RecordedFailure(ALTERED)
    usage = reply.get("usage")
    return Reply(
        reply.get("content"),
        reply.get("finish_reason"),
        reply.get("refusal"),
        None if usage is None else Usage(**usage),
        reply.get("model"),
        reply.get("reasoning"),
        # [name, arguments, id, kind?, as_object?]
        tuple(ToolCall(*call) for call in reply["tool_calls"]),
    )


def lookup_as_data(store: Any, key: str) -> dict[str, Any]:
    """One response-cache lookup as a durable unit records it: `{"entry": ...}` (None: a miss;
    an entry the redactor would change is recorded as a miss, so no secret is) or
    `{"error": ...}` (the store failed; redacted)."""
    try:
        found = store.get(key)
    except Exception as exc:
        return {"error": redact_text(describe_exception(exc))}
    if isinstance(found, bytearray | memoryview):
        found = bytes(found)
    if not isinstance(found, bytes | str):
        return {"entry": None}
    text = found.decode("utf-8", "replace") if isinstance(found, bytes) else found
    return {"entry": found if redact_with(text, run_secrets()) == text else None}


def entry_from_data(data: Mapping[str, Any]) -> bytes | str | None:
    """A recorded lookup back as what the store's `get` returned (`CacheLookupFailed` for a
    store that failed)."""
    error = data.get("error")
    if error is not None:
        raise CacheLookupFailed(str(error))
    entry: bytes | str | None = data.get("entry")
    return entry


def request_id(
    messages: Any,
    params: Mapping[str, Any],
    healer: Healer[Any] | None = None,
    context: Mapping[str, Any] | None = None,
) -> str:
    """A healed request's name in its durable units' names: 12 hex digits of a SHA-256 over
    what shapes its conversation: its messages and parameters as JSON (an object JSON cannot
    hold counts by its type's name, so the name is the same in every process), and the
    healer's fingerprint (schema, contracts, reply reader: `spec_fingerprint`) and the run's
    `context` when given, so that two healers (or two contexts) healing the same request never
    share recorded calls. One-way: it shows nothing of the request."""
    request: list[Any] = [messages, sorted(params.items(), key=lambda item: str(item[0]))]
    if healer is not None:
        request.append(_fingerprint(healer))
    if context is not None:
        request.append(context)
    try:
        text = to_json(request, fallback=_type_name, serialize_unknown=True)
    except ValueError:  # text pydantic cannot write as UTF-8 (a lone surrogate)
        text = json.dumps(request, default=_type_name, ensure_ascii=True).encode()
    return hashlib.sha256(text).hexdigest()[:12]


def durable_scope(client: Any, call: Any, params: Mapping[str, Any]) -> AbstractContextManager[Any]:
    """The secrets scope a durable run is driven in: the SDK client its call uses known (`client`
    as the caller names it, else the client `call` belongs to when it is one of the client's
    own methods: `call_client`), so that what a unit records never holds the client's key (the
    run's own scope, around the units' wrapper, cannot see the call); nothing more when
    neither names one."""
    known = client if client is not None else call_client(call)
    return nullcontext() if known is None else secrets_scope(known, params)


# a healer -> (its spec, that spec's fingerprint): computed once per healer, not per row (the
# contracts' code is hashed: ~70 µs for a pack of four)
_FINGERPRINTS: weakref.WeakKeyDictionary[Healer[Any], tuple[Any, str]] = weakref.WeakKeyDictionary()


def _fingerprint(healer: Healer[Any]) -> str:
    spec = healer.spec
    known = _FINGERPRINTS.get(healer)
    if known is not None and known[0] is spec:
        return known[1]
    found = spec_fingerprint(spec)
    _FINGERPRINTS[healer] = (spec, found)
    return found


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}"


def check_on_degraded(on_degraded: Any) -> OnDegraded:
    """`on_degraded`, checked at once (a configuration mistake)."""
    if on_degraded not in ("value", "raise"):
        raise ValueError(f'on_degraded must be "value" or "raise", got {on_degraded!r}')
    mode: OnDegraded = on_degraded
    return mode
