"""Anthropic's Message Batches lines: a request as a line's `params` (`batch_body`, the prompt
tier: Anthropic has no JSON response format), one request of a `create` (`batch_line`), and a
result line (`succeeded`, `errored`, `expired`, `canceled`) as a `Result` (`batch_result`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from healjson._core.wire.fault import fault_from_body
from healjson._providers._batch_results import EXPIRED_MESSAGE, Result, unreadable
from healjson._providers.tiers import prompted

from .wire import anthropic_request

__all__ = ["batch_body", "batch_line", "batch_result"]


def batch_body(
    mode: Any, target: Any, messages: Sequence[dict[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """A request as a Message Batches line's `params`: the schema in the system prompt whatever
    the `mode` (the prompt tier: Anthropic has no JSON response format), system messages moved
    to `system`."""
    return anthropic_request(prompted(target, messages), params)


def batch_line(custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One request of a Message Batches `create`."""
    return {"custom_id": custom_id, "params": body}


_TRANSIENT: Final = frozenset(
    {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
)
"""The error types of an `errored` Message Batches result worth sending again."""
# a Message Batch names an errored request's HTTP status by its error type
_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
    "conflict_error": 409,
    "memory_path_conflict_error": 409,
    "memory_precondition_failed_error": 412,
}


def batch_result(line: Mapping[str, Any]) -> Result | None:
    """One line of a Message Batch's results as a `Result` (None: `canceled`, no result)."""
    result = line.get("result")
    kind = result.get("type") if isinstance(result, dict) else None
    if kind == "succeeded":
        assert isinstance(result, dict)
        message = result.get("message")
        if isinstance(message, dict):
            return Result(body=message)
        return unreadable("holds no message")
    if kind == "errored":
        assert isinstance(result, dict)
        error = result.get("error")
        inner = error.get("error", error) if isinstance(error, dict) else error
        if not isinstance(inner, dict):
            return Result(failure="api_error", message=str(inner))
        said = inner.get("message")
        text = str(said) if said else json.dumps(inner, ensure_ascii=False)[:500]
        retry = inner.get("type") in _TRANSIENT
        status = _STATUS.get(str(inner.get("type")))
        fault = fault_from_body(status, inner) if status is not None else None
        return Result(failure="api_error", message=text, retry=retry, fault=fault)
    if kind == "expired":
        return Result(failure="timeout", message=EXPIRED_MESSAGE, retry=True)
    if kind == "canceled":
        return None  # the row runs again in a later batch
    return unreadable(f"has an unknown result type {str(kind)[:100]!r}")
