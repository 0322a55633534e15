"""An outcome as a record: the JSON data that round-trips (`outcome_to_dict`, and the readers
`outcome_from_dict` uses), and `render_trace`, which gives that JSON or the Markdown log people
read (`render_markdown`, defined in `trace` with `public_params`, the call parameters as both
show them; this module re-exports the two).

Every rendering of an outcome passes every string through the redactor (`redact`) on the way
out, on top of the redaction the engine applies when it builds the outcome (`seal`), and with
the secrets the run found in the caller's own objects (`revealing`): `to_dict`, both traces,
`repr`, batch rows. A trace is pasted into issues and PRs, so a credential shape in model output
or an error body, or a key the model echoed, never reaches it; the outcome's `value` itself is
never altered. This module and
`trace` read outcomes by their fields only (`outcome.ok` tells `Healed` from `Degraded`):
`outcome` imports them, never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from healjson._core.diagnostic import (
    MISSING_MARK,
    Diagnostic,
    Source,
    jsonable,
    short_repr,
    type_name,
    value_data,
)
from healjson._core.flags import Flag
from healjson._core.judge.policies import Dropped
from healjson._core.redact import redact_data
from healjson._core.repair.calls import CallsForm, CallState
from healjson._core.repair.prompt import RepairPrompt, Strategy
from healjson._core.sentinels import MISSING
from healjson._core.wire.reply import FUNCTION, ToolCall, Usage

from .attempt import Attempt, Reason
from .json_text import strict_dumps
from .trace import public_params, render_markdown, revealing

if TYPE_CHECKING:
    from .outcome import Outcome

__all__ = [
    "outcome_data",
    "outcome_to_dict",
    "public_params",
    "read_record",
    "render_markdown",
    "render_trace",
    "revealing",
]

_FORMAT = 1  # the record layout; a reader refuses a record of another


def outcome_to_dict(outcome: Outcome[Any]) -> dict[str, Any]:
    """JSON-ready data for an outcome, every string through the redactor (credentials in call
    parameters, known secrets and credential shapes anywhere, the value's strings included)."""
    with revealing(outcome):
        # the record's keys are healjson's and its values the caller's data: every string, and
        # a string under a credential field's name (`api_key`, `password`), as the Markdown
        # trace's redactor leaves its JSON text; not every credential-like name (`key`)
        redacted: dict[str, Any] = redact_data(outcome_data(outcome), by_name=False, fields=True)
    return redacted


def outcome_data(outcome: Outcome[Any]) -> dict[str, Any]:
    """`outcome_to_dict` before the redactor (`seal` searches it)."""
    data: dict[str, Any] = {
        "format": _FORMAT,
        "ok": outcome.ok,
        "raw_text": _text(outcome.raw_text),
        "attempts": [_attempt(a) for a in outcome.attempts],
        "usage": outcome.usage.to_dict(),
        "max_attempts": outcome.max_attempts,
        "run_id": outcome.run_id,
        "target": outcome.target,
        "contracts": list(outcome.contracts),
    }
    if outcome.ok:
        data["value"] = value_data(outcome.value)
        data["flags"] = [str(f) for f in outcome.flags]
        data["changed_fields"] = list(outcome.changed_fields)
        # the policies' keys only when used: records of runs without them are unchanged
        if outcome.warnings:
            data["warnings"] = [d.to_dict() for d in outcome.warnings]
        if outcome.dropped:
            data["dropped"] = [item.to_dict() for item in outcome.dropped]
        if outcome.fixed:
            data["fixed"] = list(outcome.fixed)
    else:
        data["reason"] = str(outcome.reason)
        data["errors"] = [d.to_dict() for d in outcome.errors]
        data["fallback"] = jsonable(outcome.fallback)
        data["partial"] = jsonable(outcome.partial)
    return data


def read_record(data: Any) -> tuple[bool, dict[str, Any]]:
    """The fields of an `outcome_to_dict` record, every one checked: `(ok, the keyword arguments
    of `Healed` or `Degraded`)`. Raises (any exception) on anything that is not such a record;
    `outcome_from_dict` reports that as a ValueError."""
    data = _object(data, "the record")
    version = data.get("format", _FORMAT)
    if version != _FORMAT or type(version) is not int:
        raise TypeError(f"`format` {short_repr(version, 40)} is not {_FORMAT}, the one this reads")
    ok = data.get("ok")
    if not isinstance(ok, bool):
        raise TypeError("`ok` must be true or false")
    common: dict[str, Any] = {
        "attempts": tuple(_attempt_from(_object(a, "an attempt")) for a in _list(data, "attempts")),
        "usage": _usage_from(_object(data.get("usage") or {}, "`usage`")),
        "max_attempts": _int(data, "max_attempts"),
        "run_id": _str(data, "run_id") or "",
        "target": _str(data, "target") or "",
        "contracts": tuple(_names(data, "contracts")),
    }
    if ok:
        return True, {
            **common,
            "value": data.get("value"),
            "raw_text": _str(data, "raw_text") or "",
            "flags": _flags(data),
            "changed_fields": tuple(_names(data, "changed_fields")),
            "warnings": tuple(
                _diagnostic_from(_object(d, "a warning")) for d in _list(data, "warnings")
            ),
            "dropped": tuple(
                _dropped_from(_object(d, "a dropped item")) for d in _list(data, "dropped")
            ),
            "fixed": tuple(_names(data, "fixed")),
        }
    return False, {
        **common,
        "reason": Reason(_required_str(data, "reason")),
        "raw_text": _str(data, "raw_text"),
        "errors": tuple(_diagnostic_from(_object(d, "an error")) for d in _list(data, "errors")),
        "fallback": data.get("fallback"),
        "partial": data.get("partial"),
    }


def _attempt(attempt: Attempt) -> dict[str, Any]:
    return {
        "number": attempt.number,
        "strategy": str(attempt.strategy),
        "messages": [jsonable(dict(m)) for m in attempt.messages],
        "params": public_params(attempt.params),
        "raw_text": _text(attempt.raw_text),
        "finish_reason": attempt.finish_reason,
        "flags": [str(f) for f in attempt.flags],
        "diagnostics": [d.to_dict() for d in attempt.diagnostics],
        "usage": attempt.usage.to_dict(),
        "model": attempt.model,
        "latency_s": attempt.latency_s,
        "error": attempt.error,
        "prompt": _prompt(attempt.prompt),
        "ok": attempt.ok,
        "reasoning": _text(attempt.reasoning),
        "tool_calls": [_tool_call(c) for c in attempt.tool_calls],
        "cache_hit": attempt.cache_hit,
    }


def _text(text: Any) -> str | None:
    """A text field as a string: what a caller's bytes or other object would be (a record is
    JSON text, so a trace of any outcome renders)."""
    if text is None or isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray | memoryview):
        return bytes(text).decode("utf-8", "replace")
    return short_repr(text, 100_000)


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
        **({"items": list(prompt.items), "item_count": prompt.item_count} if prompt.items else {}),
        **({"removed_items": list(prompt.removed_items)} if prompt.removed_items else {}),
        **({"calls": _calls_form(prompt.calls)} if prompt.calls is not None else {}),
        "rendered": prompt.render(),
    }


def _calls_form(form: CallsForm) -> dict[str, Any]:
    data = {
        "text": form.text,
        "calls": [_call_state(call) for call in form.calls],
        "pending": list(form.pending),
        "missing": form.missing,
        "forced": form.forced,
        "declared": list(form.declared),
    }
    if form.forbidden:
        data["forbidden"] = True
    return {**data, "custom": list(form.custom)} if form.custom else data


def _call_state(call: CallState) -> dict[str, Any]:
    """A call of a repair's form (its `kind` named when it is not a function call's, the tool it
    must be made again to when that is another)."""
    data: dict[str, Any] = {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "problems": [d.to_dict() for d in call.problems],
    }
    if call.tool is not None:
        data["tool"] = call.tool
    return data if call.kind == FUNCTION else {**data, "kind": call.kind}


def _calls_form_from(data: Mapping[str, Any]) -> CallsForm:
    forced = data.get("forced", False)
    if not isinstance(forced, bool | str):
        raise TypeError(f"`forced` must be a string or a boolean, got {type_name(forced)}")
    return CallsForm(
        text=_str(data, "text"),
        calls=tuple(
            CallState(
                _required_str(call, "id"),
                _required_str(call, "name"),
                _required_str(call, "arguments"),
                tuple(
                    _diagnostic_from(_object(d, "a diagnostic")) for d in _list(call, "problems")
                ),
                _str(call, "tool"),
                kind=_str(call, "kind") or FUNCTION,
            )
            for call in (_object(c, "a call") for c in _list(data, "calls"))
        ),
        pending=tuple(_int({"call": i}, "call", required=True) for i in _list(data, "pending")),
        missing=_bool(data, "missing"),
        forced=forced,
        declared=tuple(_names(data, "declared")),
        custom=tuple(_names(data, "custom")),
        forbidden=_bool(data, "forbidden"),
    )


def _attempt_from(data: Mapping[str, Any]) -> Attempt:
    prompt = data.get("prompt")
    params = _object(data.get("params") or {}, "`params`")
    if not all(isinstance(key, str) for key in params):
        raise TypeError("`params` keys must be strings")
    return Attempt(
        number=_int(data, "number", required=True),
        strategy=Strategy(_required_str(data, "strategy")),
        messages=tuple(dict(_object(m, "a message")) for m in _list(data, "messages")),
        params=dict(params),
        raw_text=_str(data, "raw_text"),
        finish_reason=_str(data, "finish_reason"),
        flags=_flags(data),
        diagnostics=tuple(
            _diagnostic_from(_object(d, "a diagnostic")) for d in _list(data, "diagnostics")
        ),
        usage=_usage_from(_object(data.get("usage") or {}, "`usage`")),
        model=_str(data, "model"),
        latency_s=_float(data, "latency_s"),
        error=_str(data, "error"),
        prompt=None if prompt is None else _prompt_from(_object(prompt, "`prompt`")),
        ok=_bool(data, "ok"),
        reasoning=_str(data, "reasoning"),
        tool_calls=tuple(
            _tool_call_from(_object(c, "a tool call")) for c in _list(data, "tool_calls")
        ),
        cache_hit=_bool(data, "cache_hit"),
    )


def _tool_call(call: ToolCall) -> dict[str, Any]:
    data: dict[str, Any] = {"name": call.name, "arguments": call.arguments}
    if call.id is not None:
        data["id"] = call.id
    if call.as_object:
        data["as_object"] = True
    return data if call.kind == FUNCTION else {**data, "kind": call.kind}


def _tool_call_from(data: Mapping[str, Any]) -> ToolCall:
    # a record written before calls had ids has none: it loads with `id` None; one without a
    # `kind` holds function calls, one without `as_object` arguments sent as text
    name, arguments = _required_str(data, "name"), _required_str(data, "arguments")
    kind = _str(data, "kind") or FUNCTION
    return ToolCall(name, arguments, _str(data, "id"), kind, _bool(data, "as_object"))


def _prompt_from(data: Mapping[str, Any]) -> RepairPrompt:
    return RepairPrompt(
        strategy=Strategy(_required_str(data, "strategy")),
        round=_int(data, "round", required=True),
        raw_output=_str(data, "raw_output"),
        diagnostics=tuple(
            _diagnostic_from(_object(d, "a diagnostic")) for d in _list(data, "diagnostics")
        ),
        history=tuple(_names(data, "history")),
        example=_str(data, "example"),
        schema=_str(data, "schema"),
        items=tuple(_int({"item": i}, "item", required=True) for i in _list(data, "items")),
        item_count=_int(data, "item_count"),
        removed_items=tuple(
            _int({"item": i}, "item", required=True) for i in _list(data, "removed_items")
        ),
        calls=None
        if data.get("calls") is None
        else _calls_form_from(_object(data["calls"], "`calls`")),
    )


def _diagnostic_from(data: Mapping[str, Any]) -> Diagnostic:
    value = data.get("value")
    involved = data.get("involved")
    if data.get("missing") is None:  # a record that does not say: the marker is the absence
        missing = isinstance(value, str) and value == MISSING_MARK
    else:
        missing = _bool(data, "missing")
    return Diagnostic(
        path=_required_str(data, "path"),
        value=MISSING if missing else value,
        constraint=_required_str(data, "constraint"),
        prescription=_required_str(data, "prescription"),
        source=Source(_required_str(data, "source")),
        fields=tuple(_names(data, "fields")),
        rule=_str(data, "rule"),
        extra={"values": dict(_object(involved, "`involved`"))} if involved else {},
    )


def _dropped_from(data: Mapping[str, Any]) -> Dropped:
    return Dropped(
        _int(data, "index", required=True),
        data.get("item"),
        tuple(_diagnostic_from(_object(d, "a diagnostic")) for d in _list(data, "diagnostics")),
        _str(data, "list_path") or "",
    )


def _usage_from(data: Mapping[str, Any], depth: int = 0) -> Usage:
    parts = data.get("parts") or []
    if not isinstance(parts, list) or depth > 0:
        parts = []
    return Usage(
        _int(data, "prompt_tokens"),
        _int(data, "completion_tokens"),
        _bool(data, "estimated"),
        _int(data, "reasoning_tokens"),
        _int(data, "cache_read_tokens"),
        _int(data, "cache_write_tokens"),
        _int(data, "requests"),
        _str(data, "model"),
        tuple(_usage_from(_object(part, "`usage.parts[]`"), depth + 1) for part in parts),
        _int(data, "cache_hits"),
    )


# -- checked reads: each raises TypeError / ValueError, which `outcome_from_dict` reports --------

_MAX_COUNT = 2**63 - 1


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be an object, got {type_name(value)}")
    return value


def _list(data: Mapping[str, Any], key: str) -> list[Any] | tuple[Any, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise TypeError(f"`{key}` must be a list, got {type_name(value)}")
    return value


def _str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"`{key}` must be a string or null, got {type_name(value)}")
    return value


def _required_str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise TypeError(f"`{key}` must be a string, got {type_name(value)}")
    return value


def _names(data: Mapping[str, Any], key: str) -> list[str]:
    items = list(_list(data, key))
    if not all(isinstance(item, str) for item in items):
        raise TypeError(f"`{key}` must be a list of strings")
    return items


def _flags(data: Mapping[str, Any]) -> tuple[Flag, ...]:
    return tuple(Flag(name) for name in _names(data, "flags"))


def _int(data: Mapping[str, Any], key: str, *, required: bool = False) -> int:
    value = data.get(key)
    if value is None and not required:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"`{key}` must be an integer, got {type_name(value)}")
    if not 0 <= value <= _MAX_COUNT:  # counts: a 100,000-digit one could not even be printed
        raise ValueError(f"`{key}` must be a count from 0 to {_MAX_COUNT}")
    return value


def _float(data: Mapping[str, Any], key: str) -> float:
    value = data.get(key)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"`{key}` must be a number, got {type_name(value)}")
    return float(value)  # OverflowError for a huge integer: reported as a ValueError


def _bool(data: Mapping[str, Any], key: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise TypeError(f"`{key}` must be true or false, got {type_name(value)}")
    return value


def render_trace(outcome: Outcome[Any], format: str = "markdown") -> str:
    """`markdown` (the self-healing log) or `json` (the round-trippable record)."""
    if format == "json":
        return strict_dumps(outcome_to_dict(outcome), ensure_ascii=False, indent=2)
    if format in ("markdown", "md"):
        return render_markdown(outcome)
    raise ValueError(f"trace format must be 'markdown' or 'json', got {format!r}")
