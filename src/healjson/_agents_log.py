"""What `healjson.agents` healed or refused in an agent run: one `AgentRepair` per value, kept
in a `HealLog` the handler, the healed tools and the guardrail share."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._core.diagnostic import ROOT, Diagnostic, Source, jsonable, safe_repr
from ._core.outcome.outcome import Healed, Outcome
from ._core.redact import redact_data, redact_text, redacted_repr
from ._core.repair.quote import render_diagnostics

__all__ = [
    "AgentRepair",
    "ContractReport",
    "HealLog",
    "Where",
    "bug_text",
    "clip",
    "entry",
    "kept",
    "kept_diagnostics",
    "kept_report",
    "refusal_text",
    "rules_broken",
    "stop_text",
]

Where = Literal["final_output", "tool_arguments"]
_MAX_REPR = 300
_MAX_SHOWN = 5  # diagnostics a stop's message shows


@dataclass(frozen=True, slots=True)
class ContractReport:
    """What `contract_guardrail` found: `ok` (no blocking rule broken), the `diagnostics` of the
    rules broken (value, rule, fix), the `warnings` of `"warn"` rules, and `fixed_value`: the
    output as `"fix"` / `"drop"` rules would settle it (None when none applied).

    The SDK keeps it (`output_info`) in the run's results and state, shown outside the run: so
    it is kept as healjson keeps every record, through the redactor with the secrets of the
    model client the run used (`kept`): a value that shows one of them is kept as its JSON
    data, redacted."""

    ok: bool
    diagnostics: tuple[Diagnostic, ...] = ()
    warnings: tuple[Diagnostic, ...] = ()
    fixed_value: Any = None

    def __str__(self) -> str:
        if self.ok:
            return "the output passed every contract"
        return "the output breaks its contracts:\n" + "\n".join(
            render_diagnostics(self.diagnostics)
        )


@dataclass(frozen=True, slots=True)
class AgentRepair:
    """One value healjson judged in an agent run and did not pass through untouched: a final
    output or a tool call's arguments, healed locally (`healed=True`, the `flags` of the local
    repairs, `value_json` = what the SDK was given: the arguments text the tool's invoker
    received, the JSON data L1 read, which the SDK validates once into the tool's values; the
    final output's JSON) or refused (`diagnostics`: what the model was told, or why the SDK
    raised as before, or why a contract's failure ended the run). `run_id` is the healjson
    run's (its events)."""

    where: Where
    name: str
    """The tool's name, or the agent's for a final output."""
    call_id: str | None
    """The tool call's id (None for a final output)."""
    healed: bool
    raw_text: str
    value_json: str | None = None
    flags: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    run_id: str = ""

    def __post_init__(self) -> None:
        # kept as healjson keeps every record of model text: through the redactor (the tool
        # and the SDK were handed the real text before the entry was made)
        object.__setattr__(self, "raw_text", redact_text(self.raw_text))
        if self.value_json is not None:
            object.__setattr__(self, "value_json", redact_text(self.value_json))
        if self.diagnostics:  # what was told holds model data too (`str(entry)` shows it)
            object.__setattr__(self, "diagnostics", kept_diagnostics(self.diagnostics))

    def __repr__(self) -> str:
        return redacted_repr(self)

    def __str__(self) -> str:
        what = (
            f"tool {self.name} call {self.call_id}"
            if self.where == "tool_arguments"
            else f"final output of {self.name}"
        )
        if self.healed:
            value = clip(self.value_json or "", _MAX_REPR)
            return f"{what}: healed locally ({', '.join(self.flags) or 'contracts'}): {value}"
        told = "; ".join(d.describe(max_value_chars=60) for d in self.diagnostics)
        return f"{what}: not healed: {told or 'no usable value'}"


class HealLog:
    """A readable record of what healjson healed or refused in agent runs, shared by the
    handler, the healed tools and the guardrail it is given to (thread-safe). Give a run its own
    log for a per-run record; `print(log)` shows one line per value."""

    def __init__(self) -> None:
        self._entries: list[AgentRepair] = []
        self._lock = threading.Lock()

    def record(self, entry: AgentRepair) -> None:
        """Add one entry (healjson's handler, tools and guardrail do)."""
        with self._lock:
            self._entries.append(entry)

    @property
    def entries(self) -> tuple[AgentRepair, ...]:
        """The entries so far, oldest first."""
        with self._lock:
            return tuple(self._entries)

    @property
    def healed(self) -> tuple[AgentRepair, ...]:
        """The values healed locally (each one a model call the run did not spend)."""
        return tuple(entry for entry in self.entries if entry.healed)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __iter__(self) -> Iterator[AgentRepair]:
        return iter(self.entries)

    def __str__(self) -> str:
        return "\n".join(str(entry) for entry in self.entries)

    def __repr__(self) -> str:
        healed = len(self.healed)
        return f"HealLog({len(self)} entries, {healed} healed)"


def kept(value: Any) -> Any:
    """`value` as a record shown outside the run keeps it, redacted with the secrets known now
    (the run's scope: the record is rendered later, when they are not): plain data's strings
    through the redactor; an object of another kind (a model instance, alone or in plain data)
    kept as it is when neither its JSON data nor its `repr` shows a secret or a credential,
    else replaced by its JSON data, redacted (the SDK serializes `output_info` as data and
    falls back to `str`, which a model's fields reach)."""
    plain = redact_data(value, by_name=False)
    data = jsonable(plain)
    redacted = redact_data(data, by_name=False)
    shown = safe_repr(plain)
    if redacted == data and redact_text(shown) == shown:
        return plain
    return redacted


def kept_diagnostics(found: Sequence[Diagnostic]) -> tuple[Diagnostic, ...]:
    """`found` as a record or an error shown outside the run keeps them (`kept`)."""
    return tuple(map(_redacted, found))


def kept_report(report: ContractReport) -> ContractReport:
    """`report` as the guardrail hands it to the SDK: its diagnostics, warnings and fixed value
    kept (`kept`), in the run's secrets scope."""
    return dataclasses.replace(
        report,
        diagnostics=kept_diagnostics(report.diagnostics),
        warnings=kept_diagnostics(report.warnings),
        fixed_value=None if report.fixed_value is None else kept(report.fixed_value),
    )


def _redacted(found: Diagnostic) -> Diagnostic:
    """`found` through the redactor (its value and the values the rule involved, kept; its
    texts), as an entry or a report keeps it."""
    return dataclasses.replace(
        found,
        path=redact_text(found.path),
        value=kept(found.value),
        constraint=redact_text(found.constraint),
        prescription=redact_text(found.prescription),
        extra=kept(found.extra) if found.extra else found.extra,
    )


def entry(
    where: Where,
    name: str,
    call_id: str | None,
    raw: str,
    outcome: Outcome[Any],
    *,
    value_json: str | None = None,
    diagnostics: tuple[Diagnostic, ...] | None = None,
) -> AgentRepair:
    """A log entry: `outcome` healed (`value_json`: what the SDK was given), or refused with its
    errors (`diagnostics`, when given, say why instead)."""
    if isinstance(outcome, Healed) and diagnostics is None:
        flags = tuple(str(flag) for flag in outcome.flags)
        return AgentRepair(where, name, call_id, True, raw, value_json, flags, (), outcome.run_id)
    why = diagnostics if diagnostics is not None else getattr(outcome, "errors", ())
    return AgentRepair(where, name, call_id, False, raw, None, (), why, outcome.run_id)


def clip(text: str, limit: int) -> str:
    """`text`, cut to `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rules_broken(outcome: Healed[Any], value: Any, fix: str) -> tuple[Diagnostic, ...]:
    """The rules a value broke that `"drop"` or `"fix"` rules settled (`fix`: the prescription,
    `{rule}` standing for the rule's name), as diagnostics about `value`."""
    broken = [d for dropped in outcome.dropped for d in dropped.diagnostics]
    broken += [
        Diagnostic(
            ROOT, value, f"breaks rule `{rule}`", fix.format(rule=rule), Source.CONTRACT, rule=rule
        )
        for rule in outcome.fixed
    ]
    return tuple(broken)


def refusal_text(name: str, diagnostics: Sequence[Diagnostic]) -> str:
    """What the model reads when a call's arguments cannot be used: each diagnostic (value,
    rule, fix), then what to do."""
    lines = [f"The arguments of this `{name}` call were not used: they fail these checks."]
    lines.append("\n".join(render_diagnostics(diagnostics)) or "No JSON object could be read.")
    lines.append(f"Call `{name}` again with the arguments corrected (one JSON object).")
    return "\n".join(lines)


def stop_text(name: str, diagnostics: Sequence[Diagnostic]) -> str:
    """The message of the `ModelBehaviorError` that ends a run whose call of tool `name` broke
    a rule declared `on_fail="stop"`: the rule(s), what broke them (each value and rule), and
    that the tool was not run and the model is not asked again."""
    rules = ", ".join(dict.fromkeys(f"`{d.rule}`" for d in diagnostics if d.rule)) or "a rule"
    found = "; ".join(d.describe(max_value_chars=80) for d in diagnostics[:_MAX_SHOWN])
    more = len(diagnostics) - _MAX_SHOWN
    return redact_text(
        f'healjson: the arguments of tool `{name}` break {rules} (on_fail="stop"): {found}'
        f"{f'; and {more} more' if more > 0 else ''}. The tool was not run, and the model is "
        "not asked again."
    )


def bug_text(what: str, found: Sequence[Diagnostic]) -> str | None:
    """The message of the `UserError` that ends a run when a contract failed as code on `what`
    (the first `contract_error` of `found`: it raised, ran past its time, changed the value it
    judged); None when `found` holds none."""
    bug = next((d for d in found if d.source is Source.CONTRACT_ERROR), None)
    if bug is None:
        return None
    return redact_text(
        f"healjson: a contract on {what} failed: {bug.constraint}. {bug.prescription}"
    )
