"""The `healjson` command line: `demo`, `heal`, `batch`, `trace` and `eval`.

Exit codes: 0 success (`heal`: healed); 1 `heal` degraded, or a run that could not finish;
2 usage errors (bad options, a spec that names nothing, a missing file).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from healjson._core.diagnostic import short_repr
from healjson._core.outcome import Degraded, Healed, Outcome, Reason
from healjson._core.repair import RepairPrompt, Strategy, strategy_for

if TYPE_CHECKING:
    from healjson._packs import ContractPack

    from .batch import BatchStats

app = typer.Typer(
    help="Self-healing middleware for structured LLM output.",
    no_args_is_help=True,
    add_completion=False,
)


RETRY_FAILED = frozenset({"api_error", "timeout"})  # `batch --retry-failed`: the endpoint failed


class OutputFormat(enum.StrEnum):
    """`heal --format`."""

    MD = "md"
    JSON = "json"


class JsonMode(enum.StrEnum):
    """`--json-mode`: the strongest JSON mode the endpoint supports (see `healjson.wrap`)."""

    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"


@app.callback()
def _root() -> None:
    """healjson: a validated value or an explicit Degraded, never an exception."""


# -- demo --------------------------------------------------------------------------------------


@app.command()
def demo(
    live: Annotated[
        bool,
        typer.Option(
            "--live",
            help="Run the four prompts against a real endpoint (OPENAI_BASE_URL, or OpenAI's).",
        ),
    ] = False,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (implies --live).",
        ),
    ] = None,
    model: Annotated[str, typer.Option("--model", help="Model name for --live.")] = "gpt-4o-mini",
    api_key: Annotated[
        str | None,
        typer.Option("--api-key", help="API key for --live (default: OPENAI_API_KEY)."),
    ] = None,
    json_mode: Annotated[
        JsonMode, typer.Option("--json-mode", help="Strongest JSON mode the endpoint supports.")
    ] = JsonMode.JSON_SCHEMA,
) -> None:
    """Show the four layers on one support ticket: an L1 local heal, the Case #7 cross-field
    repair, a truncation and a graceful degradation, each with its trace.

    Offline by default (a scripted model: no network, no API key); --live or --base-url sends
    the same four prompts to a real OpenAI-compatible endpoint through healjson.wrap.
    """
    from healjson._core.trace import render_markdown

    from .demo import run_demo

    if live or base_url is not None:
        results = _live_demo(base_url, model, api_key, json_mode)
    else:
        results = run_demo()
    for index, (scenario, outcome) in enumerate(results, 1):
        typer.echo(f"\n## {index}. {scenario.title}\n")
        typer.echo(f"_{scenario.shows}_\n")
        typer.echo(render_markdown(outcome, title=scenario.title))


def _live_demo(
    base_url: str | None, model: str, api_key: str | None, json_mode: JsonMode
) -> list[Any]:
    import healjson

    from .demo import run_live_demo

    openai = _import_openai()
    key = _api_key(api_key)
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    where = url or "OpenAI's default endpoint"
    typer.echo(
        f"Live demo: {model} at {where}. A real model answers its own way, so the layers a "
        "scenario shows may differ from the offline run.",
        err=True,
    )
    with openai.OpenAI(base_url=url, api_key=key) as raw:
        client = healjson.wrap(raw, json_mode=str(json_mode))
        return run_live_demo(client, model)


# -- heal --------------------------------------------------------------------------------------


@app.command()
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
        typer.Option(
            "--contracts",
            "-c",
            help="A contract pack: file.py[:name], pkg.mod:name or an entry-point name.",
        ),
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
            help="The original request (a JSON list of chat messages, or plain text for one "
            "user turn): the contracts read it and the repair request starts with it.",
        ),
    ] = None,
) -> None:
    """L1 + L2 on a saved raw output, with no model call.

    Prints the recovered value, or the diagnostics and the exact repair request healjson would
    send next. Exit code 0 healed, 1 degraded, 2 usage error.
    """
    from healjson._core.check import validate

    pack = _load_pack(contracts) if contracts is not None else None
    target = _target(model, pack)
    original = _read_messages(messages) if messages is not None else ()
    text = _read_text(file)
    rules = pack.contracts if pack is not None else ()
    try:
        outcome = validate(
            text,
            target,
            contracts=rules,
            context=list(original) if original else None,
            finish_reason=finish_reason,
        )
    except Exception as exc:  # a bad target or contract is a usage error, not a crash
        raise typer.BadParameter(f"{type(exc).__name__}: {exc}", param_hint="'--model'") from exc
    prompt = next_repair_prompt(outcome)
    if output_format is OutputFormat.JSON:
        data = outcome.to_dict()
        if isinstance(outcome, Degraded):
            data["repair_request"] = _request_data(prompt, original)
        typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        typer.echo(heal_report(outcome, _type_name(target), len(rules), prompt, original), nl=False)
    if not outcome.ok:
        raise typer.Exit(1)


def next_repair_prompt(outcome: Outcome[Any]) -> RepairPrompt | None:
    """The repair prompt the engine sends after this first answer (default `HealPolicy`).

    Mirrors `_engine._next_prompt` for repair round 1: the strategy follows the verdict, no
    history yet, and no golden example or schema (they join from round 2). None when there is
    nothing to send: the answer healed, or a contract raised (a code bug a call cannot fix).
    """
    if not isinstance(outcome, Degraded) or outcome.reason is Reason.CONTRACT_ERROR:
        return None
    return RepairPrompt(
        strategy=strategy_for(outcome.errors),
        round=1,
        raw_output=outcome.raw_text,
        diagnostics=outcome.errors,
    )


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
        lines.extend(f"    {line}" for line in _dump(outcome.to_dict()["value"]).splitlines())
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
    if prompt is None:
        return None
    return {
        "strategy": str(prompt.strategy),
        "round": prompt.round,
        "prompt": prompt.render(),
        "messages": prompt.messages(original),
    }


# -- batch -------------------------------------------------------------------------------------


@app.command()
def batch(
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="INPUT.jsonl",
            exists=True,
            dir_okay=False,
            help="One JSON object per line: optional `id`, and `messages` or `prompt`.",
        ),
    ],
    *,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", dir_okay=False, help="Output JSON Lines (appended to)."),
    ],
    model: Annotated[str, typer.Option("--model", help="The endpoint's model name.")],
    response_model: Annotated[
        str | None,
        typer.Option(
            "--response-model",
            help="The target type: pkg.mod:Model or file.py:Model (default: the pack's model).",
        ),
    ] = None,
    contracts: Annotated[
        str | None,
        typer.Option("--contracts", "-c", help="A contract pack (as for `healjson heal`)."),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-j", min=1, help="Requests in flight at once.")
    ] = 8,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)."),
    ] = None,
    api_key: Annotated[
        str | None, typer.Option("--api-key", help="API key (default: OPENAI_API_KEY).")
    ] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Model calls per row, the first included.")
    ] = 3,
    full: Annotated[
        bool,
        typer.Option("--full", help="Store each row's whole outcome (for `healjson trace`)."),
    ] = False,
    json_mode: Annotated[
        JsonMode, typer.Option("--json-mode", help="Strongest JSON mode the endpoint supports.")
    ] = JsonMode.JSON_SCHEMA,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Seconds per HTTP request.")
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress", help="Progress bar on stderr (default: when a TTY)."
        ),
    ] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            help="Run again the rows of OUT that failed on the endpoint (api_error, timeout).",
        ),
    ] = False,
    retry: Annotated[
        list[str] | None,
        typer.Option(
            "--retry",
            metavar="REASON",
            help="Run again the rows of OUT degraded for REASON (repeatable), e.g. "
            "max_retries_exceeded after raising --max-attempts.",
        ),
    ] = None,
) -> None:
    """Heal every prompt of INPUT.jsonl through an OpenAI-compatible endpoint into OUT.

    Every distinct id gets exactly one output line, written and fsync'd as it finishes; a
    re-run skips the ids OUT already has, so an interrupted batch resumes where it stopped.
    Exit code 0 when every row was written (degraded rows included), 1 when some were not,
    2 on usage errors.
    """
    from healjson._core.healer import Healer
    from healjson._core.policy import HealPolicy

    from .batch import Batch, BatchError, openai_healer

    pack = _load_pack(contracts) if contracts is not None else None
    target = _target(response_model, pack, option="'--response-model'")
    rules = pack.contracts if pack is not None else ()
    examples = pack.examples if pack is not None else ()
    policy = HealPolicy(max_attempts=max_attempts)
    try:
        Healer(target, contracts=rules, policy=policy, examples=examples)
    except Exception as exc:
        raise typer.BadParameter(
            f"{type(exc).__name__}: {exc}", param_hint="'--contracts'"
        ) from exc
    openai = _import_openai()
    key = _api_key(api_key)
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    reasons = frozenset(retry or ()) | (RETRY_FAILED if retry_failed else frozenset())
    unknown = sorted(reasons - {str(reason) for reason in Reason} - {"invalid_input"})
    if unknown:
        raise typer.BadParameter(
            f"unknown reason(s) {', '.join(unknown)}; one of: "
            + ", ".join(sorted({str(reason) for reason in Reason} | {"invalid_input"})),
            param_hint="'--retry'",
        )
    try:
        runner = Batch.open(input_path, out, retry=reasons)
    except BatchError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--out'") from exc
    show = sys.stderr.isatty() if progress is None else progress

    async def run(on_row: Callable[[BatchStats], None] | None) -> BatchStats:
        options: dict[str, Any] = {"base_url": url, "api_key": key}
        if timeout is not None:
            options["timeout"] = timeout
        import healjson

        async with openai.AsyncOpenAI(**options) as raw:
            client = healjson.wrap(raw, json_mode=str(json_mode))
            healer = openai_healer(
                client,
                model=model,
                response_model=target,
                contracts=rules,
                examples=examples,
                policy=policy,
            )
            return await runner.run(healer, concurrency=concurrency, full=full, on_row=on_row)

    with runner:
        try:
            with _progress_bar(show, runner.stats.total) as on_row:
                stats = asyncio.run(run(on_row))
        except KeyboardInterrupt:
            typer.echo(_batch_summary(runner.stats, out), err=True)
            typer.echo("interrupted: re-run the same command to resume", err=True)
            raise typer.Exit(130) from None
        except (OSError, ExceptionGroup) as exc:
            failure = _os_error(exc)
            if failure is None:
                raise
            typer.echo(_batch_summary(runner.stats, out), err=True)
            typer.echo(f"batch stopped: {failure}", err=True)
            raise typer.Exit(1) from None
    typer.echo(_batch_summary(stats, out), err=True)
    if not stats.complete:
        raise typer.Exit(1)


def _os_error(exc: BaseException) -> OSError | None:
    """The I/O error that stopped a run (the task group wraps it), or None."""
    if isinstance(exc, OSError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _os_error(inner)
            if found is not None:
                return found
    return None


@contextlib.contextmanager
def _progress_bar(show: bool, total: int) -> Iterator[Callable[[BatchStats], None] | None]:
    """A rich progress bar on stderr; yields the per-row callback (None when hidden)."""
    if not show:
        yield None
        return
    from rich.progress import TextColumn, TimeElapsedColumn

    progress = _stderr_progress(  # fits 80 columns: bar, done/total, the counters, elapsed time
        TextColumn(
            "healed {task.fields[healed]} · degraded {task.fields[degraded]} · "
            "calls {task.fields[calls]} · tokens {task.fields[tokens]}"
        ),
        TimeElapsedColumn(),
    )
    task = progress.add_task("batch", total=total, healed=0, degraded=0, calls=0, tokens=0)

    def on_row(stats: BatchStats) -> None:
        progress.update(
            task,
            completed=stats.written,
            healed=stats.healed,
            degraded=stats.degraded + stats.invalid,
            calls=stats.calls,
            tokens=stats.tokens,
        )

    with progress:
        yield on_row


def _stderr_progress(*columns: Any) -> Any:
    """A rich progress display on stderr: a bar and done/total, then `columns`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress

    return Progress(
        BarColumn(bar_width=16), MofNCompleteColumn(), *columns, console=Console(stderr=True)
    )


def _batch_summary(stats: BatchStats, out: Path) -> str:
    parts = [
        f"healjson batch: wrote {stats.written} of {stats.total} row(s) to {out} "
        f"(healed {stats.healed}, degraded {stats.degraded}, invalid input {stats.invalid}); "
        f"{stats.calls} call(s), {stats.tokens} token(s)"
    ]
    if stats.retried:
        parts.append(f"took {stats.retried} failed row(s) out of {out} to run them again")
    if stats.already_done:
        parts.append(f"skipped {stats.already_done} line(s) whose id {out} already has")
    if stats.duplicates:
        parts.append(f"{stats.duplicates} line(s) repeated an earlier id and were skipped")
    if stats.torn_line_dropped:
        parts.append(f"dropped a half-written last line from {out}")
    if stats.unreadable_rows:
        parts.append(f"{stats.unreadable_rows} unreadable line(s) in {out} were left as they are")
    if stats.failed:
        parts.append(
            f"{stats.failed} row(s) failed unexpectedly and were not written (re-run to retry); "
            f"first: {stats.first_failure}"
        )
    return "\n".join(parts)


# -- trace -------------------------------------------------------------------------------------


@app.command()
def trace(
    out: Annotated[
        Path,
        typer.Argument(
            metavar="OUT.jsonl", exists=True, dir_okay=False, help="A `healjson batch` output."
        ),
    ],
    row_id: Annotated[str | None, typer.Option("--id", help="Only the row with this id.")] = None,
) -> None:
    """Render the rows of a batch output as Markdown traces.

    Rows written with `batch --full` show the whole self-healing log; others get one summary
    line. A line that is not a row (not UTF-8, not JSON, nested too deeply, too long, no `id`)
    is skipped with a note on stderr. Exit code 1 when --id matches no row.
    """
    from healjson._core.serialize import outcome_from_dict
    from healjson._core.trace import render_markdown

    found = False
    for row in _rows(out):
        if row_id is not None and str(row.get("id")) != row_id:
            continue
        found = True
        stored = row.get("outcome")
        if isinstance(stored, Mapping):
            try:
                outcome = outcome_from_dict(stored)
            except ValueError as exc:  # the only error it raises on bad data
                typer.echo(f"{_row_summary(row)} (stored outcome unreadable: {exc})")
                continue
            typer.echo(render_markdown(outcome, title=f"id {row.get('id')}"))
        else:
            typer.echo(_row_summary(row))
    if row_id is not None and not found:
        typer.echo(f"no row with id {row_id} in {out}", err=True)
        raise typer.Exit(1)


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of an output file; every other line is reported on stderr and skipped."""
    from .batch import read_rows

    for number, row, problem in read_rows(path):
        if row is None:
            kind = "not a JSON line" if (problem or "").startswith("is not valid JSON") else problem
            typer.echo(f"{path}:{number}: {kind}, skipped", err=True)
        else:
            yield row


def _row_summary(row: Mapping[str, Any]) -> str:
    calls = _shown(row.get("attempts", 0))
    usage = row.get("usage")
    tokens = _shown(usage.get("total_tokens", 0) if isinstance(usage, Mapping) else 0)
    spent = f"{calls} call(s), {tokens} token(s)"
    if row.get("ok"):
        return f"- id {row['id']}: healed in {spent}"
    errors = row.get("errors")
    first = ""
    if isinstance(errors, list) and errors and isinstance(errors[0], Mapping):
        path, constraint = errors[0].get("path"), errors[0].get("constraint")
        first = f": `{_shown(path)}` {_shown(constraint)}"
    return f"- id {row['id']}: degraded (`{_shown(row.get('reason'))}`) after {spent}{first}"


def _shown(value: Any) -> str:
    """A row's field as text: a string as it is, anything else (any JSON, however deep) through
    the safe renderer."""
    return value if isinstance(value, str) else short_repr(value, 120)


# -- eval --------------------------------------------------------------------------------------


@app.command("eval")
def eval_(
    scenarios_path: Annotated[
        Path | None,
        typer.Argument(
            metavar="[SCENARIOS.jsonl]",
            exists=True,
            dir_okay=False,
            help="One scenario per line: `messages` or `prompt`, optional `replies` (offline), "
            "`expected`, `contracts`, `response_model`. Default: the built-in scripted set.",
        ),
    ] = None,
    *,
    a: Annotated[
        str,
        typer.Option(
            "--a",
            help="Configuration A: plain, local, healed, a JSON object or a .json file.",
        ),
    ] = "plain",
    b: Annotated[str, typer.Option("--b", help="Configuration B (as for --a).")] = "healed",
    contracts: Annotated[
        str | None,
        typer.Option("--contracts", "-c", help="The pack for rows that name none."),
    ] = None,
    response_model: Annotated[
        str | None,
        typer.Option(
            "--response-model",
            help="The target type for rows that name none (default: the pack's).",
        ),
    ] = None,
    model: Annotated[str, typer.Option("--model", help="The endpoint's model name.")] = (
        "gpt-4o-mini"
    ),
    live: Annotated[
        bool,
        typer.Option(
            "--live", help="Send the scenarios to a real endpoint (OPENAI_BASE_URL, or OpenAI's)."
        ),
    ] = False,
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="OpenAI-compatible endpoint (implies --live)."),
    ] = None,
    api_key: Annotated[
        str | None, typer.Option("--api-key", help="API key for --live (default: OPENAI_API_KEY).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.001, help="Seconds per HTTP request.")
    ] = None,
    json_mode: Annotated[
        JsonMode,
        typer.Option("--json-mode", help="Strongest JSON mode the endpoint supports (--live)."),
    ] = JsonMode.JSON_SCHEMA,
    repeat: Annotated[
        int, typer.Option("--repeat", "-n", min=1, help="Runs of every scenario per configuration.")
    ] = 1,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            "-j",
            min=1,
            help="Requests in flight at once (default: 1 offline, so latencies are comparable; "
            "4 live).",
        ),
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json", dir_okay=False, help="Also write the whole report (every run) here."
        ),
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress", help="Progress bar on stderr (default: when a TTY)."
        ),
    ] = None,
) -> None:
    """Compare two configurations on the same scenarios: pass rates with Wilson 95% intervals,
    the paired 2x2 table and an exact McNemar p-value, plus calls, tokens and latency.

    Offline by default: each scenario's scripted `replies` are served on 127.0.0.1 (no network,
    no API key). --live or --base-url sends the scenarios' messages to a real model.
    Exit code 0 when the comparison ran, 2 on usage errors.
    """
    from .eval import Endpoint, ScenarioError, load_scenarios, parse_config, run_eval

    try:
        configs = (parse_config(a), parse_config(b))
    except ScenarioError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--a' / '--b'") from exc
    if configs[0].name == configs[1].name:
        configs = (configs[0], dataclasses.replace(configs[1], name=f"{configs[1].name}-b"))
    if scenarios_path is None:
        scenarios, setup_for = _builtin_eval()
    else:
        try:
            scenarios = load_scenarios(scenarios_path)
        except ScenarioError as exc:
            raise typer.BadParameter(str(exc), param_hint="SCENARIOS.jsonl") from exc
        setup_for = _eval_setups(scenarios, contracts, response_model)
    endpoint = None
    if live or base_url is not None:
        _import_openai()
        url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        endpoint = Endpoint(url, _api_key(api_key), timeout)
    else:
        _import_openai()  # the scripted server is driven through the real openai SDK
    runs = len(scenarios) * repeat * 2
    show = sys.stderr.isatty() if progress is None else progress
    if not show:
        typer.echo(f"healjson eval: {runs} run(s) ...", err=True)
    try:
        with _eval_progress(show, runs, configs) as on_unit:
            report = asyncio.run(
                run_eval(
                    scenarios,
                    configs,
                    setup_for,
                    model=model,
                    endpoint=endpoint,
                    repeat=repeat,
                    concurrency=concurrency or (1 if endpoint is None else 4),
                    json_mode=str(json_mode),
                    on_unit=on_unit,
                )
            )
    except ScenarioError as exc:
        raise typer.BadParameter(str(exc), param_hint="SCENARIOS.jsonl") from exc
    except KeyboardInterrupt:
        typer.echo("interrupted: no report", err=True)
        raise typer.Exit(130) from None
    typer.echo(report.markdown(), nl=False)
    if json_out is not None:
        json_out.write_text(_dump(report.to_dict()) + "\n", encoding="utf-8")
        typer.echo(f"report written to {json_out}", err=True)


@contextlib.contextmanager
def _eval_progress(show: bool, total: int, configs: Sequence[Any]) -> Iterator[Any]:
    """A rich progress bar on stderr with each configuration's passes so far (None: hidden)."""
    if not show:
        yield None
        return
    from rich.progress import TextColumn

    names = [config.name for config in configs]
    passed = dict.fromkeys(names, 0)
    done = dict.fromkeys(names, 0)

    def tally() -> str:
        return " · ".join(f"{n} {passed[n]}/{done[n]} passed" for n in names)

    bar = _stderr_progress(TextColumn("{task.fields[tally]}"))
    task = bar.add_task("eval", total=total, tally=tally())

    def on_unit(unit: Any) -> None:
        done[unit.config] += 1
        passed[unit.config] += unit.passed
        bar.update(task, advance=1, tally=tally())

    with bar:
        yield on_unit


def _builtin_eval() -> tuple[list[Any], Callable[[Any], Any]]:
    from .eval import Setup
    from .scenarios import builtin_scenarios

    scenarios, target, rules = builtin_scenarios()
    setup = Setup(target, tuple(rules))
    return scenarios, lambda _scenario: setup


def _eval_setups(
    scenarios: Sequence[Any], contracts: str | None, response_model: str | None
) -> Callable[[Any], Any]:
    """Resolve every row's pack and target up front, so a bad one is a usage error."""
    from .eval import Setup

    packs: dict[str | None, ContractPack | None] = {}
    setups: dict[str, Setup] = {}
    for scenario in scenarios:
        spec = scenario.contracts or contracts
        if spec not in packs:
            packs[spec] = _load_pack(spec) if spec is not None else None
        pack = packs[spec]
        option = "'--response-model'" if scenario.response_model is None else f"row {scenario.id}"
        target = _target(scenario.response_model or response_model, pack, option=option)
        setups[scenario.id] = Setup(
            target,
            tuple(pack.contracts) if pack is not None else (),
            tuple(pack.examples) if pack is not None else (),
        )
    return lambda scenario: setups[scenario.id]


# -- shared helpers ----------------------------------------------------------------------------


def _load_pack(spec: str) -> ContractPack:
    from healjson._packs import load_contracts

    try:
        return load_contracts(spec)
    except Exception as exc:  # LookupError, TypeError, ImportError, or the pack's own error
        raise typer.BadParameter(
            f"{type(exc).__name__}: {exc}", param_hint="'--contracts'"
        ) from exc


def _target(spec: str | None, pack: ContractPack | None, option: str = "'--model'") -> Any:
    from .loading import SpecError, load_object

    if spec is None:
        if pack is None:
            raise typer.BadParameter(
                "name the target type (pkg.mod:Model or file.py:Model), or give --contracts "
                "with a pack whose model is the default",
                param_hint=option,
            )
        return pack.model
    try:
        return load_object(spec)
    except SpecError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from exc


def _type_name(target: Any) -> str:
    return getattr(target, "__name__", None) or repr(target)


def _read_text(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot read {file}: {exc.strerror or exc}", param_hint="FILE"
        ) from exc


def _read_messages(file: str) -> tuple[dict[str, Any], ...]:
    from healjson._core.repair import normalise_messages

    text = _read_text(file)
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


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise typer.BadParameter(
            "this needs the openai package: pip install 'healjson[openai]'", param_hint="openai"
        ) from exc
    return openai


def _api_key(option: str | None) -> str:
    key = option or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise typer.BadParameter(
            "no API key: pass --api-key or set OPENAI_API_KEY (any string for an endpoint "
            "that needs none)",
            param_hint="'--api-key'",
        )
    return key


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def main() -> None:
    """Console-script entry point."""
    app()
