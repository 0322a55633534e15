"""What a provider said when it refused a call: its HTTP status, error code and message, and the
fix that status calls for.

Read from any SDK's exception or any provider's error body without importing an SDK: the status
is the first integer among the exception's `status_code`, `code` and `status`; the body (its
`body` or `details`) is a mapping whose `error` member, when it is one, holds the error
(the providers healjson reads all nest it there); in it `message`, `code` (a
string; else `type`, else `status`) and `param` are read. Nothing here is redacted: the engine
redacts what it stores.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ProviderFault", "fault_from_body", "fault_from_exception", "never_sent"]

_MESSAGE_CHARS: Final = 300  # the most of a provider's message quoted


@dataclass(frozen=True, slots=True)
class ProviderFault:
    """An HTTP error answer: `status`, and from its body the error `code` (or type), `message`
    and the request `param` it names, each None when the provider gave none."""

    status: int
    code: str | None = None
    message: str | None = None
    param: str | None = None

    @property
    def label(self) -> str:
        """`HTTP 404 (model_not_found)`: the status and the code, what a summary counts by."""
        return f"HTTP {self.status}" + (f" ({self.code})" if self.code else "")

    def said(self) -> str:
        """What the provider said: the label, then its message (bounded)."""
        message = (self.message or "").strip()
        if len(message) > _MESSAGE_CHARS:
            message = message[: _MESSAGE_CHARS - 1] + "…"
        return f"{self.label}: {message}" if message else self.label

    def advice(self) -> str:
        """The fix this status calls for."""
        status, words = self.status, f"{self.code or ''} {self.message or ''}".lower()
        if status == 401:
            return "Check the API key: the provider did not accept it (missing, mistyped, revoked)."
        if status == 403:
            return "Check what the API key may use: the provider refused it this model or project."
        if status == 404 and "model" in words:
            return "Check the model name: the provider has no model by that name for this key."
        if status == 404:
            return "Check the base URL and the model name: the provider found nothing there."
        if status in (400, 422) and self.param:
            return f"Fix the request parameter `{self.param}`: the provider rejected it."
        if status in (400, 422):
            return "Fix the request the provider rejected (its message says what is wrong)."
        if status == 429:
            return "Lower the request rate or raise the quota: the provider is limiting requests."
        if status >= 500:
            return "The provider failed on its side: try again later."
        return "Check the request and the provider's message."


def fault_from_exception(exc: BaseException) -> ProviderFault | None:
    """The HTTP error an SDK exception carries, or None (no status: a connection failure,
    a timeout, an exception of another kind)."""
    status = _status(exc)
    if status is None:
        return None
    fault = fault_from_body(status, getattr(exc, "body", None) or getattr(exc, "details", None))
    if fault.message is None:
        said = getattr(exc, "message", None)
        if isinstance(said, str) and said:
            fault = ProviderFault(fault.status, fault.code, said, fault.param)
    return fault


# the HTTP stacks' errors for a connection that was never made (httpx, urllib3, aiohttp): matched
# by class name through the MRO, so no HTTP package is imported
_CONNECT_ERRORS: Final = frozenset(
    {"ConnectError", "ConnectTimeout", "NewConnectionError", "ClientConnectorError"}
)


def never_sent(exc: BaseException) -> bool:
    """True when the call failed before its request reached the provider: a refused
    connection, a name that did not resolve, or an HTTP stack's connect error, found on the
    exception or anywhere in its cause and context chain (an SDK wraps its transport's error).
    Such a call was billed nothing."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen and len(seen) < 32:
        seen.add(id(found))
        if isinstance(found, ConnectionRefusedError | socket.gaierror):
            return True
        for cls in type(found).__mro__:
            if cls.__name__ in _CONNECT_ERRORS:
                return True
        found = found.__cause__ or found.__context__
    return False


def fault_from_body(status: int, body: Any) -> ProviderFault:
    """An HTTP error answer with `status` and `body` (any provider's error JSON, or None)."""
    error = body.get("error", body) if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        error = body if isinstance(body, Mapping) else {}
    code = next((v for k in ("code", "type", "status") if _text(v := error.get(k))), None)
    message = error.get("message")
    param = error.get("param")
    return ProviderFault(
        status,
        code,
        message if _text(message) else None,
        param if _text(param) else None,
    )


def _status(exc: BaseException) -> int | None:
    for name in ("status_code", "code", "status"):
        value = getattr(exc, name, None)
        if type(value) is int and 400 <= value <= 599:
            return value
    return None


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)
