"""A Batch API result as the providers' readers make it: one request's `Result` (the provider's
response body, or a failure kind and message, and whether it is transient), shared by the wire
formats' batch result readers (`openai_chat.batch_result`, `anthropic_messages.batch_result`)
and the rounds runner, which keeps it in its ledger."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from healjson._core.wire.fault import ProviderFault

__all__ = [
    "EXPIRED_MESSAGE",
    "TRANSIENT_STATUSES",
    "Result",
    "is_transient_status",
    "unreadable",
]

TRANSIENT_STATUSES: Final = frozenset({408, 409, 429})
"""HTTP statuses besides 5xx that say "try again later"."""
EXPIRED_MESSAGE: Final = (
    "the provider's batch completion window ended before this request ran (batch_expired)"
)


@dataclass(frozen=True, slots=True)
class Result:
    """One request's result as the ledger keeps it: `body` (the provider's response: a chat
    completion or a message, as JSON data) or `failure` (`api_error`, `timeout`) with a
    message; `retry`: the failure is transient (the request may be sent again as it was)."""

    body: Mapping[str, Any] | None = None
    failure: str | None = None
    message: str = ""
    elapsed_s: float = 0.0
    """The batch's turnaround: from its submission to the moment its results were read."""
    retry: bool = False
    fault: ProviderFault | None = None
    """The provider's HTTP error answer for this request (status, code, message, param)."""

    def to_json(self) -> Any:
        data: dict[str, Any]
        if self.body is not None:
            data = {"body": self.body}
        else:
            data = {"failure": self.failure, "message": self.message}
            if self.retry:
                data["retry"] = True
            if self.fault is not None:
                data["fault"] = _fault_json(self.fault)
        return data | {"elapsed_s": self.elapsed_s}

    @classmethod
    def from_json(cls, data: Any) -> Result:
        elapsed = data.get("elapsed_s") if isinstance(data, dict) else None
        took = float(elapsed) if isinstance(elapsed, int | float) else 0.0
        if isinstance(data, dict) and isinstance(data.get("body"), dict):
            return cls(body=data["body"], elapsed_s=took)
        if isinstance(data, dict):
            failure = str(data.get("failure") or "api_error")
            retry = data.get("retry") is True
            return cls(
                failure=failure,
                message=str(data.get("message")),
                elapsed_s=took,
                retry=retry,
                fault=_fault_of_json(data.get("fault")),
            )
        return cls(failure="api_error", message=f"the ledger holds no result here: {data!r}")


def is_transient_status(status: object) -> bool:
    """True for an HTTP status worth trying again: 408, 409, 429 and 5xx."""
    return type(status) is int and (status in TRANSIENT_STATUSES or 500 <= status <= 599)


def unreadable(problem: str) -> Result:
    """The result of a request whose result line cannot be read."""
    return Result(
        failure="api_error",
        message=f"the provider's result line for this request {problem}: it cannot be used",
    )


def _fault_json(fault: ProviderFault) -> dict[str, Any]:
    return {"status": fault.status, "code": fault.code, "message": fault.message,
            "param": fault.param}  # fmt: skip


def _fault_of_json(data: Any) -> ProviderFault | None:
    """A stored fault read back (None when absent or not one: a ledger from before faults)."""
    if not isinstance(data, dict) or type(data.get("status")) is not int:
        return None
    said = {
        k: v if isinstance(v := data.get(k), str) else None for k in ("code", "message", "param")
    }
    return ProviderFault(data["status"], said["code"], said["message"], said["param"])
