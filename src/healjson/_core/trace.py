"""Render an outcome as the self-healing log: Markdown a person can read in a terminal or a PR.

Both renderings pass every string through the redactor (`_redact`) on the way out, on top of
the redaction the engine applies when it stores an attempt: a trace is pasted into issues and
PRs, so a credential shape in model output or an error body never reaches it.
"""

from __future__ import annotations

import json
from typing import Any

from .diagnostic import _jsonable, short_repr
from .outcome import Degraded, Healed, Outcome
from .redact import redact_data, redact_text

__all__ = ["render", "render_markdown"]


def render(outcome: Outcome[Any], format: str = "markdown") -> str:
    """`markdown` (the self-healing log) or `json` (the round-trippable record)."""
    if format == "json":
        from .serialize import outcome_to_dict

        # strings only: the record's keys are healjson's and its values the caller's data
        record = redact_data(outcome_to_dict(outcome), by_name=False)
        return json.dumps(record, ensure_ascii=False, indent=2)
    if format in ("markdown", "md"):
        return render_markdown(outcome)
    raise ValueError(f"trace format must be 'markdown' or 'json', got {format!r}")


def render_markdown(outcome: Outcome[Any], title: str = "healjson trace") -> str:
    """The whole run: result, calls used, and per round the L1 flags, L2 diagnostics, the raw
    output and the repair prompt that was sent."""
    lines = [f"### {title}", ""]
    if isinstance(outcome, Healed):
        repairs = outcome.calls - 1
        lines.append(
            f"- **Result**: healed in {outcome.calls} call(s){_budget(outcome)}, "
            f"{repairs} repair(s)"
        )
        if outcome.flags:
            lines.append(f"- **Local repairs (L1)**: {', '.join(outcome.flags)}")
        if outcome.changed_fields:
            lines.append(f"- **Fields a repair changed**: {', '.join(outcome.changed_fields)}")
    else:
        lines.append(
            f"- **Result**: degraded (`{outcome.reason}`) after {outcome.calls} call(s)"
            f"{_budget(outcome)}"
        )
    lines.append(f"- **Tokens**: {outcome.usage.total_tokens}")
    lines.append("")
    for attempt in outcome.attempts:
        lines.append(f"#### Round {attempt.number} ({attempt.strategy})")
        if attempt.prompt is not None and attempt.prompt.render():
            lines.append("- **Repair prompt sent**:")
            lines.append("")
            lines.extend(f"    {line}" for line in attempt.prompt.render().splitlines())
            lines.append("")
        lines.append(f"- **Finish reason**: `{attempt.finish_reason}`")
        if attempt.error:
            lines.append(f"- **Call failed**: {attempt.error}")
        else:
            flags = ", ".join(attempt.flags) if attempt.flags else "none"
            lines.append(f"- **L1 local repairs**: {flags}")
            verdict = "passed" if attempt.ok else f"{len(attempt.diagnostics)} problem(s)"
            lines.append(f"- **L2 schema + contracts**: {verdict}")
        for diagnostic in attempt.diagnostics:
            lines.append(f"  - `{diagnostic.path}` = {short_repr(diagnostic.value, 120)}")
            lines.append(f"    - constraint: {diagnostic.constraint}")
            lines.append(f"    - prescription: {diagnostic.prescription}")
        if attempt.reasoning:
            lines.append("- **Reasoning (set aside, never read as the answer)**:")
            lines.append("")
            lines.extend(f"    {line}" for line in attempt.reasoning.splitlines())
        lines.extend(
            f"- **Tool call** `{call.name}`: {short_repr(call.arguments, 300)}"
            for call in attempt.tool_calls
        )
        if attempt.raw_text is not None:
            lines.append("- **Raw output**:")
            lines.append("")
            lines.extend(f"    {line}" for line in (attempt.raw_text or "(empty)").splitlines())
        lines.append("")
    if isinstance(outcome, Healed):
        lines.append("#### Final value")
        lines.append("")
        lines.extend(f"    {line}" for line in _dump(outcome.value).splitlines())
    elif isinstance(outcome, Degraded):
        lines.append("#### Degradation")
        lines.append("")
        lines.append(f"- reason: `{outcome.reason}`")
        lines.append(f"- partial data: {short_repr(outcome.partial, 300)}")
        lines.append(f"- fallback: {short_repr(outcome.fallback, 300)}")
    return redact_text("\n".join(lines) + "\n")


def _budget(outcome: Outcome[Any]) -> str:
    return f" of {outcome.max_attempts} allowed" if outcome.max_attempts else ""


def _dump(value: Any) -> str:
    return json.dumps(_jsonable(value), indent=2, ensure_ascii=False)
