"""`healjson heal`: L1 + L2 on a saved raw output, and the repair request that would follow."""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from healjson._core.diagnostic import short_repr
from healjson._core.outcome import Degraded, Healed, Outcome
from healjson._core.repair import RepairPrompt, Strategy

from .loading import load_setup
from .markdown_out import echo_markdown
from .options import contracts_option

__all__ = ["OutputFormat", "heal", "heal_report"]


class OutputFormat(enum.StrEnum):
    """`heal --format`."""

    MD = "md"
    JSON = "json"


def heal(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="The saved raw model output; - reads stdin.")
    ],
    *,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="The target type: pkg.mod:Model or path/to/file.py:Model "
            "(default: the --contracts pack's model).",
        ),
    ] = None,
    contracts: Annotated[
        str | None,
        contracts_option("A contract pack: file.py[:name], pkg.mod:name or an entry-point name."),
    ] = None,
    output_format: Annotated[
        OutputFormat, typer.Option("--format", "-f", help="md: a short report; json: the outcome.")
    ] = OutputFormat.MD,
    finish_reason: Annotated[
        str | None,
        typer.Option("--finish-reason", help="The reply's finish reason (length = truncated)."),
    ] = None,
    messages: Annotated[
        str | None,
        typer.Option(
            "--messages",
            metavar="FILE|TEXT",
            help="The original request: a file holding it (- reads stdin), or the text "
            "itself; a JSON list of chat messages, or plain text for one user turn. The "
            "contracts read it and the repair request starts with it.",
        ),
    ] = None,
) -> None:
    """L1 + L2 on a saved raw output, with no model call.

    Prints the recovered value, or the diagnostics and the exact repair request healjson would
    send next. Exit code 0 healed, 1 degraded, 2 usage error.
    """
    from healjson._core.engine import next_prompt
    from healjson._core.healer import validate

    setup = load_setup(contracts, model)
    original = _read_messages(messages) if messages is not None else ()
    text = _read_text(file)
    try:
        outcome = validate(
            text,
            setup.target,
            contracts=setup.contracts,
            context=list(original) if original else None,
            finish_reason=finish_reason,
        )
    except Exception as exc:  # a bad target or contract is a usage error, not a crash
        raise typer.BadParameter(f"{type(exc).__name__}: {exc}", param_hint="'--model'") from exc
    prompt = next_prompt(outcome)
    if output_format is OutputFormat.JSON:
        data = outcome.to_dict()
        if isinstance(outcome, Degraded):
            data["repair_request"] = _request_data(prompt, original)
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        name = getattr(setup.target, "__name__", None) or repr(setup.target)
        report = heal_report(outcome, name, len(setup.contracts), prompt, original)
        echo_markdown(report, nl=False)
    if not outcome.ok:
        raise typer.Exit(1)


def heal_report(
    outcome: Outcome[Any],
    target_name: str,
    contract_count: int,
    prompt: RepairPrompt | None,
    original: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The `heal --format md` report."""
    flags = ", ".join(outcome.attempts[0].flags) if outcome.attempts else ""
    checks = f"{target_name} schema + {contract_count} contract(s)"
    if isinstance(outcome, Healed):
        lines = [
            f"### healed: {target_name}",
            "",
            "- **Model calls**: none (healed locally)",
            f"- **L1 local repairs**: {flags or 'none'}",
            f"- **L2 {checks}**: passed",
            "",
            "#### Value",
            "",
        ]
        value = json.dumps(outcome.to_dict()["value"], indent=2, ensure_ascii=False)
        lines.extend(f"    {line}" for line in value.splitlines())
        return "\n".join(lines) + "\n"
    lines = [
        f"### degraded: `{outcome.reason}`",
        "",
        f"- **L1 local repairs**: {flags or 'none'}",
        f"- **L2 {checks}**: {len(outcome.errors)} problem(s)",
    ]
    for diagnostic in outcome.errors:
        lines.append(f"  - `{diagnostic.path}` = {short_repr(diagnostic.value, 120)}")
        lines.append(f"    - constraint: {diagnostic.constraint}")
        lines.append(f"    - prescription: {diagnostic.prescription}")
    if outcome.partial is not None:
        lines.append(f"- **Partial data**: {short_repr(outcome.partial, 300)}")
    lines.append("")
    if prompt is None:
        lines.append("#### No repair request")
        lines.append("")
        lines.append("A contract raised: that is a bug in the contract, which another model call")
        lines.append("cannot fix, so healjson degrades at once.")
        return "\n".join(lines) + "\n"
    lines.append(f"#### Repair request healjson would send next (`{prompt.strategy}`)")
    lines.append("")
    if prompt.strategy is Strategy.EMPTY_RETRY:
        lines.append("The original request, resent unchanged.")
        return "\n".join(lines) + "\n"
    if not original:
        lines.append("_The original request comes first (pass --messages FILE to show it)._")
        lines.append("")
    for message in prompt.messages(original):
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        note = " (the raw output, verbatim)" if message.get("role") == "assistant" else ""
        lines.append(f"**{message.get('role')}**{note}:")
        lines.append("")
        lines.extend(f"    {line}" for line in (text or "(empty)").splitlines())
        lines.append("")
    return "\n".join(lines) + "\n"


def _request_data(
    prompt: RepairPrompt | None, original: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The `repair_request` of `heal --format json` (None: nothing would be sent)."""
    if prompt is None:
        return None
    return {
        "strategy": str(prompt.strategy),
        "round": prompt.round,
        "prompt": prompt.render(),
        "messages": prompt.messages(original),
    }


def _read_text(file: str) -> str:
    """FILE's text (`-`: stdin); an unreadable file is a usage error."""
    if file == "-":
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot read {file}: {exc.strerror or exc}", param_hint="FILE"
        ) from exc


def _read_messages(file: str) -> tuple[dict[str, Any], ...]:
    """`--messages` as chat messages: a file's text (`-`: stdin) or, when no such file exists,
    the option's own text; a JSON list of messages, one message object, an object with
    `messages` or `prompt`, or plain text for one user turn."""
    from healjson._core.messages import normalise_messages

    text = _read_text(file) if file == "-" or Path(file).is_file() else file
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = text
    if isinstance(data, Mapping) and "messages" in data:
        data = data["messages"]
    elif isinstance(data, Mapping) and isinstance(data.get("prompt"), str):
        data = data["prompt"]
    try:
        return normalise_messages(data)
    except TypeError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--messages'") from exc
