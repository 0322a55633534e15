"""`healjson heal`: L1 + L2 on a saved raw output: its trace (the one `outcome.trace()` prints),
and the repair request that would follow."""

from __future__ import annotations

import enum
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from healjson._core.outcome.json_text import strict_dumps
from healjson._core.outcome.outcome import Degraded, Outcome
from healjson._core.outcome.trace import render_messages
from healjson._core.redact import redact_text
from healjson._core.repair.prompt import RepairPrompt, Strategy

from .loading import load_setup
from .markdown_out import echo_markdown, echo_text
from .options import choice, contracts_option
from .text_in import NotUtf8, decode_utf8

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
        OutputFormat,
        choice(("--format", "-f"), OutputFormat, "md: the trace; json: the outcome."),
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

    Prints the trace (the one `outcome.trace()` gives: the recovered value, or the diagnostics),
    then the exact repair request healjson would send next. The reply must be UTF-8 (from a file
    or stdin alike); a character the output cannot encode is written as its `\\uXXXX` escape.
    Exit code 0 healed, 1 degraded, 2 usage error (a reply that is not UTF-8 included).
    """
    from healjson._core.run.answers import next_prompt
    from healjson._core.run.healer import validate

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
        echo_text(strict_dumps(data, ensure_ascii=False, indent=2))
    else:
        echo_markdown(heal_report(outcome, prompt, original), nl=False)
    if not outcome.ok:
        raise typer.Exit(1)


def heal_report(
    outcome: Outcome[Any],
    prompt: RepairPrompt | None,
    original: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The `heal --format md` report: a one-line summary, the trace (`outcome.trace()`, the one
    renderer, so the two never disagree) and, when degraded, the request healjson would send
    next."""
    if outcome.ok:
        summary = "healed locally (no model call)"
    else:
        summary = f"degraded (`{outcome.reason}`); the next request follows the trace"
    report = f"`healjson heal`: {summary}.\n\n{outcome.trace()}"
    if isinstance(outcome, Degraded):
        report += f"\n{_next_request(prompt, original)}"
    return report


def _next_request(prompt: RepairPrompt | None, original: Sequence[Mapping[str, Any]]) -> str:
    """The repair request healjson would send after this reply, rendered as the trace renders
    messages (its original messages are the trace's Request)."""
    if prompt is None:
        lines = [
            "#### No repair request",
            "",
            "A contract raised: that is a bug in the contract, which another model call",
            "cannot fix, so healjson degrades at once.",
        ]
        return "\n".join(lines) + "\n"
    lines = [f"#### Repair request healjson would send next (`{prompt.strategy}`)", ""]
    if prompt.strategy in (Strategy.EMPTY_RETRY, Strategy.RESEND):
        lines.append("The original request, resent unchanged.")
        return "\n".join(lines) + "\n"
    if original:
        count = f"{len(original)} message{'s' if len(original) != 1 else ''}"
        lines.append(f"The original request ({count}, under Request above), then:")
    else:
        lines.append("_The original request comes first (pass --messages FILE to show it)._")
    lines.append("")
    added = prompt.messages(())  # the raw output quoted back, then the repair prompt
    lines += render_messages(added, limit=None, notes={"assistant": "the raw output, verbatim"})
    return redact_text("\n".join(lines).rstrip("\n") + "\n")


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


def _read_text(file: str, param_hint: str = "FILE") -> str:
    """FILE's text (`-`: stdin), read as bytes and decoded as UTF-8 the same way from either;
    an unreadable file, or bytes that are not UTF-8, are a usage error (saying where the first
    bad byte is): no character of a reply is ever replaced or guessed."""
    name = "stdin" if file == "-" else file
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot read {name}: {exc.strerror or exc}", param_hint=param_hint
        ) from exc
    try:
        return decode_utf8(data, name)
    except NotUtf8 as exc:
        raise typer.BadParameter(str(exc), param_hint=param_hint) from exc


def _read_messages(file: str) -> tuple[dict[str, Any], ...]:
    """`--messages` as chat messages: a file's text (`-`: stdin) or, when no such file exists,
    the option's own text; a JSON list of messages, one message object, an object with
    `messages` or `prompt`, or plain text for one user turn."""
    from healjson._core.run.messages import normalise_messages

    from_file = file == "-" or Path(file).is_file()
    text = _read_text(file, "'--messages'") if from_file else file
    try:
        data: Any = json.loads(text)
    except RecursionError as exc:
        raise typer.BadParameter(
            "the request is JSON nested too deeply to read", param_hint="'--messages'"
        ) from exc
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
