"""The JSON form of an outcome: everything a trace shows, as plain data that round-trips.

`outcome_to_dict(outcome)` gives JSON-ready data (the value dumped in JSON mode);
`outcome_from_dict(data, model=None)` rebuilds `Healed` / `Degraded` — with `model`, the value is
validated back into the target type, otherwise it stays JSON data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._diagnostic import MISSING, Diagnostic, Source, _jsonable
from ._flags import Flag
from ._outcome import Attempt, Degraded, Healed, Outcome, Reason
from ._repair import RepairPrompt, Strategy
from ._reply import Usage

__all__ = ["FORMAT_VERSION", "outcome_from_dict", "outcome_to_dict"]

FORMAT_VERSION = 1
_SECRET_KEYS = frozenset(
    {"api_key", "authorization", "extra_headers", "headers", "default_headers", "organization"}
)


def outcome_to_dict(outcome: Outcome[Any]) -> dict[str, Any]:
    """JSON-ready data for an outcome (secrets in call parameters are never included)."""
    data: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "ok": outcome.ok,
        "raw_text": outcome.raw_text,
        "attempts": [_attempt(a) for a in outcome.attempts],
        "usage": outcome.usage.to_dict(),
        "max_attempts": outcome.max_attempts,
    }
    if isinstance(outcome, Healed):
        data["value"] = _jsonable(outcome.value)
        data["flags"] = [str(f) for f in outcome.flags]
        data["changed_fields"] = list(outcome.changed_fields)
    else:
        data["reason"] = str(outcome.reason)
        data["errors"] = [d.to_dict() for d in outcome.errors]
        data["fallback"] = _jsonable(outcome.fallback)
        data["partial"] = _jsonable(outcome.partial)
    return data


def outcome_from_dict(data: Mapping[str, Any], model: Any = None) -> Outcome[Any]:
    """Rebuild an outcome from `outcome_to_dict` data (raises ValueError on malformed data)."""
    try:
        if not isinstance(data.get("ok"), bool):
            raise TypeError("`ok` must be true or false")
        attempts = tuple(_attempt_from(a) for a in data.get("attempts", ()))
        usage = _usage_from(data.get("usage") or {})
        if data["ok"]:
            value = data.get("value")
            if model is not None:
                from ._target import target_for

                value = target_for(model).adapter.validate_python(value)
            return Healed(
                value=value,
                raw_text=data.get("raw_text") or "",
                attempts=attempts,
                usage=usage,
                flags=tuple(Flag(f) for f in data.get("flags", ())),
                changed_fields=tuple(data.get("changed_fields", ())),
                max_attempts=int(data.get("max_attempts") or 0),
            )
        return Degraded(
            reason=Reason(data["reason"]),
            raw_text=data.get("raw_text"),
            errors=tuple(_diagnostic_from(d) for d in data.get("errors", ())),
            fallback=data.get("fallback"),
            partial=data.get("partial"),
            attempts=attempts,
            usage=usage,
            max_attempts=int(data.get("max_attempts") or 0),
        )
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a healjson outcome record: {exc}") from exc


def public_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Call parameters without credentials or headers."""
    return {k: _jsonable(v) for k, v in params.items() if k.lower() not in _SECRET_KEYS}


def _attempt(attempt: Attempt) -> dict[str, Any]:
    return {
        "number": attempt.number,
        "strategy": str(attempt.strategy),
        "messages": [_jsonable(dict(m)) for m in attempt.messages],
        "params": public_params(attempt.params),
        "raw_text": attempt.raw_text,
        "finish_reason": attempt.finish_reason,
        "flags": [str(f) for f in attempt.flags],
        "diagnostics": [d.to_dict() for d in attempt.diagnostics],
        "usage": attempt.usage.to_dict(),
        "model": attempt.model,
        "latency_s": attempt.latency_s,
        "error": attempt.error,
        "prompt": _prompt(attempt.prompt),
        "ok": attempt.ok,
    }


def _prompt(prompt: RepairPrompt | None) -> dict[str, Any] | None:
    if prompt is None:
        return None
    return {
        "strategy": str(prompt.strategy),
        "round": prompt.round,
        "raw_output": prompt.raw_output,
        "diagnostics": [d.to_dict() for d in prompt.diagnostics],
        "history": list(prompt.history),
        "example": prompt.example,
        "schema": prompt.schema,
        "rendered": prompt.render(),
    }


def _attempt_from(data: Mapping[str, Any]) -> Attempt:
    prompt = data.get("prompt")
    return Attempt(
        number=int(data["number"]),
        strategy=Strategy(data["strategy"]),
        messages=tuple(dict(m) for m in data.get("messages", ())),
        params=dict(data.get("params") or {}),
        raw_text=data.get("raw_text"),
        finish_reason=data.get("finish_reason"),
        flags=tuple(Flag(f) for f in data.get("flags", ())),
        diagnostics=tuple(_diagnostic_from(d) for d in data.get("diagnostics", ())),
        usage=_usage_from(data.get("usage") or {}),
        model=data.get("model"),
        latency_s=float(data.get("latency_s") or 0.0),
        error=data.get("error"),
        prompt=None if prompt is None else _prompt_from(prompt),
        ok=bool(data.get("ok")),
    )


def _prompt_from(data: Mapping[str, Any]) -> RepairPrompt:
    return RepairPrompt(
        strategy=Strategy(data["strategy"]),
        round=int(data["round"]),
        raw_output=data.get("raw_output"),
        diagnostics=tuple(_diagnostic_from(d) for d in data.get("diagnostics", ())),
        history=tuple(data.get("history", ())),
        example=data.get("example"),
        schema=data.get("schema"),
    )


def _diagnostic_from(data: Mapping[str, Any]) -> Diagnostic:
    value = data.get("value")
    return Diagnostic(
        path=str(data["path"]),
        value=MISSING if value == "<missing>" else value,
        constraint=str(data["constraint"]),
        prescription=str(data["prescription"]),
        source=Source(data["source"]),
        fields=tuple(data.get("fields", ())),
        rule=data.get("rule"),
        extra={"values": dict(data["involved"])} if data.get("involved") else {},
    )


def _usage_from(data: Mapping[str, Any]) -> Usage:
    return Usage(
        int(data.get("prompt_tokens") or 0),
        int(data.get("completion_tokens") or 0),
        bool(data.get("estimated")),
    )
