"""L4: what a healing run returns — `Healed[T]` or `Degraded[T]`, never an exception.

Exception tree (healjson's own; raised only on purpose):

    Exception
     ├── DegradedError      raised by Degraded.unwrap(); carries the outcome
     └── ProviderError      raise it in a model call for a provider failure healjson cannot
                            recognise by type: the run degrades with `api_error`

What a run raises: configuration errors (a bad target, policy or contract, at construction),
and any exception from the model call that is not the provider's or the transport's (see
`healjson._core.run.drive.is_provider_error`) — a bug in the caller's code, unchanged. Everything
the provider or the model does becomes `Degraded`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

from healjson._core.diagnostic import Diagnostic, describe_exception, short_repr
from healjson._core.flags import Flag
from healjson._core.judge.policies import Dropped
from healjson._core.redact import redact_text
from healjson._core.target.target import target_for
from healjson._core.wire.reply import Usage

from . import record
from .attempt import Attempt, Reason, model_calls

if TYPE_CHECKING:
    from pydantic import JsonValue  # its module costs `import healjson` ~15 ms

    from .calls import ToolCalls

__all__ = [
    "Attempt",
    "Degraded",
    "DegradedError",
    "Dropped",
    "Healed",
    "Outcome",
    "Reason",
    "outcome_from_dict",
]

T = TypeVar("T")
D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class Healed(Generic[T]):
    """A value that passed the schema and every contract (a rule declared `on_fail="warn"`
    may have left `warnings`; `fixed` / `dropped` say what rules settled locally).

    `changed_fields` lists the fields whose value differs from what the model's first answer
    said, so a repair that "fixed" a rule by quietly changing another field shows up here. A
    value compared as the target reads it: a coercion of the same value (`"5"` read as `5`) is
    not a change; a field the first answer left out and a repair supplied is one; a key only
    the first answer held (not a field the value keeps) is not listed. Empty when the first
    answer was accepted. (With tool calls: `calls[i]` for each call a repair replaced.)
    """

    value: T
    raw_text: str
    attempts: tuple[Attempt, ...] = ()
    usage: Usage = field(default_factory=Usage)
    flags: tuple[Flag, ...] = ()
    changed_fields: tuple[str, ...] = ()
    max_attempts: int = 0
    run_id: str = ""
    """The run's id (on its events, spans and log records too)."""
    target: str = ""
    """The target's name (`Ticket`, `list[Item]`)."""
    contracts: tuple[str, ...] = ()
    """The names of the contracts the run checked."""
    warnings: tuple[Diagnostic, ...] = ()
    """The value's violations of rules declared `on_fail="warn"`: kept, never dropped."""
    dropped: tuple[Dropped, ...] = ()
    """Items removed by item rules declared `on_fail="drop"` (index, item, diagnostics)."""
    fixed: tuple[str, ...] = ()
    """The rules declared `on_fail="fix"` whose fix made this value (flag `contract_fixed`)."""
    ok: Literal[True] = field(default=True, init=False)
    _secrets: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)
    # the run's known secrets that `value`'s rendering shows (see `seal`): every rendering
    # removes them; the value itself is the caller's, unaltered. An init field, so that
    # `dataclasses.replace` carries it: a changed copy renders as safely as the outcome

    @property
    def calls(self) -> int:
        """Model calls spent (an answer served from the response cache, or a reply handed in
        as `validate`'s, is none)."""
        return model_calls(self.attempts)

    def __repr__(self) -> str:
        # short on purpose: the whole record is `.trace()` / `.to_dict()`; redacted, as every
        # rendering of an outcome (the value's strings too; the value itself is unaltered)
        with record.revealing(self):
            parts = [f"value={short_repr(self.value, 160)}", f"calls={self.calls}"]
            if self.flags:
                parts.append(f"flags={short_repr([str(flag) for flag in self.flags], 120)}")
            if self.changed_fields:
                parts.append(f"changed_fields={short_repr(list(self.changed_fields), 120)}")
            if self.warnings:
                parts.append(f"warnings={len(self.warnings)}")
            if self.dropped:
                places = [item.where if item.list_path else item.index for item in self.dropped]
                parts.append(f"dropped={places}")
            return redact_text(f"Healed({', '.join(parts)})")

    def unwrap(self) -> T:
        """The value."""
        return self.value

    def value_or(self, default: object) -> T:
        """The value (the default is for `Degraded`)."""
        return self.value

    def trace(self, format: Literal["markdown", "json"] = "markdown") -> str:
        """The self-healing log: Markdown for people, or JSON that `outcome_from_dict` reads."""
        return record.render_trace(self, format)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data for this outcome (round-trips through `healjson.outcome_from_dict`)."""
        return record.outcome_to_dict(self)


@dataclass(frozen=True, slots=True)
class Degraded(Generic[T]):
    """The run could not produce a valid value; everything it learned is kept.

    `raw_text` is the last raw output, `errors` its diagnostics, `partial` the best-effort data
    recovered (for example the complete fields of a truncated answer), `fallback` the caller's
    safe default (or what their fallback factory returned).
    """

    reason: Reason
    raw_text: str | None
    errors: tuple[Diagnostic, ...] = ()
    fallback: object = None
    """The caller's `fallback=` as given (or what its factory returned): any value, so a type
    checker asks for a check of its type before use."""
    partial: JsonValue | ToolCalls = None
    """The best-effort JSON data the run recovered (a dict for an object target), or None; for
    a run healing tool calls (`heal_tools=True`), the `ToolCalls` as the model sent them, each
    call marked `ok` or not."""
    attempts: tuple[Attempt, ...] = ()
    usage: Usage = field(default_factory=Usage)
    max_attempts: int = 0
    run_id: str = ""
    """The run's id (on its events, spans and log records too)."""
    target: str = ""
    """The target's name (`Ticket`, `list[Item]`)."""
    contracts: tuple[str, ...] = ()
    """The names of the contracts the run checked."""
    ok: Literal[False] = field(default=False, init=False)
    _secrets: tuple[str, ...] = field(default=(), repr=False, compare=False, kw_only=True)
    # the run's known secrets that `partial`'s or `fallback`'s rendering shows (see `seal`);
    # an init field, so that `dataclasses.replace` carries it

    @property
    def calls(self) -> int:
        """Model calls spent (an answer served from the response cache, or a reply handed in
        as `validate`'s, is none)."""
        return model_calls(self.attempts)

    def __repr__(self) -> str:
        # short on purpose: the whole record is `.trace()` / `.to_dict()`; redacted
        with record.revealing(self):
            parts = [f"reason={str(self.reason)!r}", f"calls={self.calls}"]
            if self.errors:
                first = self.errors[0].describe(max_value_chars=60)
                more = f" (+{len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
                parts.append(f"errors={short_repr(first, 160)}{more}")
            if self.fallback is not None:
                parts.append(f"fallback={short_repr(self.fallback, 80)}")
            if self.partial is not None:
                parts.append(f"partial={short_repr(self.partial, 80)}")
            return redact_text(f"Degraded({', '.join(parts)})")

    def unwrap(self) -> T:
        """Raise `DegradedError` — the one deliberate way an outcome becomes an exception."""
        raise DegradedError(self)

    def value_or(self, default: D) -> D:
        """`default` (a degraded run has no value)."""
        return default

    def trace(self, format: Literal["markdown", "json"] = "markdown") -> str:
        """The self-healing log: Markdown for people, or JSON that `outcome_from_dict` reads."""
        return record.render_trace(self, format)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data for this outcome (round-trips through `healjson.outcome_from_dict`)."""
        return record.outcome_to_dict(self)


Outcome: TypeAlias = Healed[T] | Degraded[T]


class DegradedError(Exception):
    """Raised by `Degraded.unwrap()`; `.outcome` holds the whole degradation."""

    def __init__(self, outcome: Degraded[Any]) -> None:
        self.outcome = outcome
        with record.revealing(outcome):
            first = outcome.errors[0].describe(max_value_chars=80) if outcome.errors else ""
            message = redact_text(
                f"healjson degraded ({outcome.reason}) after {outcome.calls} call(s): "
                f"{first or 'no details'}"
            )
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # recorded by a framework (pickled), read back in another process: rebuilt from its
        # outcome (the message is the outcome's), with what was set on it since (`add_note`)
        return (type(self), (self.outcome,), self.__dict__ or None)


def outcome_from_dict(data: Mapping[str, Any], model: Any = None) -> Outcome[Any]:
    """Rebuild an outcome from `outcome_to_dict` data.

    Raises ValueError, and only ValueError, on anything that is not such a record (wrong types,
    unknown enum values, numbers out of range, data too deep to read): every field is checked, so
    a rebuilt outcome renders and serialises like one a run returned. With `model`, the value is
    validated into that type (a value that does not validate is a ValueError too); a `model`
    that is not a type healjson can target is a programming error and raises as in `Healer`.
    """
    adapter = None if model is None else target_for(model).adapter
    try:
        ok, fields = record.read_record(data)
        if not ok:
            return Degraded(**fields)
        if adapter is not None:
            fields["value"] = adapter.validate_python(fields["value"])
        return Healed(**fields)
    except Exception as exc:  # RecursionError, OverflowError... from hostile data, too
        raise ValueError(f"not a healjson outcome record: {describe_exception(exc)}") from exc
