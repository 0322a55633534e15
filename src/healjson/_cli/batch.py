"""`healjson batch`: heal many prompts through an OpenAI-compatible endpoint and lose nothing.

The command reads INPUT.jsonl (`healjson._batch.input_file`), heals each row through the
endpoint (`healjson._batch.run`) and appends exactly one JSON line per distinct id to OUT
(`output_file`, rows as in `rows`), fsync'd as it finishes; a re-run skips the ids OUT already
has, so an interrupted batch resumes where it stopped, and `--retry-failed` / `--retry REASON`
run again the rows OUT holds for those reasons. Unreadable lines never stop a run: each gets the
id `#line-N`; a line without an id is known by its line number; both are compared by their line,
apart from every id an input row can give (see `healjson._batch.rows`). With `--batch-api` the
same rows go through the provider's Batch API in rounds (`batch_api`).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from healjson._batch.rows import INVALID_INPUT
from healjson._batch.run import ENDPOINT_FAILURES, most_common_provider_error
from healjson._core.outcome.outcome import Reason

from .batch_api import BatchApiOptions, batch_api_command
from .endpoint import endpoint_from_options
from .loading import load_setup
from .options import (
    EndpointChoice,
    JsonModeChoice,
    api_key_option,
    base_url_option,
    cache_option,
    choice,
    concurrency_option,
    contracts_option,
    endpoint_model_option,
    json_mode_option,
    max_tokens_help,
    progress_option,
    provider_option,
    response_model_option,
    timeout_option,
)
from .progress import batch_counts, batch_progress

if TYPE_CHECKING:
    from healjson._batch.run import BatchStats
    from healjson._response_cache import ResponseCache

__all__ = ["RETRY_FAILED", "batch"]

RETRY_FAILED = ENDPOINT_FAILURES  # `batch --retry-failed`: the rows the endpoint failed


def batch(
    ctx: typer.Context,
    input_path: Annotated[
        Path,
        typer.Argument(
            metavar="INPUT.jsonl",
            exists=True,
            dir_okay=False,
            help="One JSON object per line: optional `id`, `messages` or `prompt`, optional "
            "`system`, a `context` object (contracts' ctx.extra, pydantic's validation "
            "context) and the row's own `temperature`, `top_p`, `max_tokens`.",
        ),
    ],
    *,
    out: Annotated[
        Path,
        typer.Option("--out", "-o", dir_okay=False, help="Output JSON Lines (appended to)."),
    ],
    model: Annotated[str, endpoint_model_option()],
    response_model: Annotated[
        str | None,
        response_model_option(
            "The target type: pkg.mod:Model or file.py:Model (default: the pack's model)."
        ),
    ] = None,
    contracts: Annotated[
        str | None, contracts_option("A contract pack (as for `healjson heal`).")
    ] = None,
    concurrency: Annotated[int, concurrency_option("Requests in flight at once.")] = 8,
    base_url: Annotated[str | None, base_url_option()] = None,
    api_key: Annotated[str | None, api_key_option()] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Model calls per row, the first included.")
    ] = 3,
    full: Annotated[
        bool,
        typer.Option("--full", help="Store each row's whole outcome (for `healjson trace`)."),
    ] = False,
    json_mode: Annotated[JsonModeChoice, json_mode_option()] = JsonModeChoice.JSON_SCHEMA,
    timeout: Annotated[float | None, timeout_option()] = None,
    progress: Annotated[bool | None, progress_option()] = None,
    cache: Annotated[Path | None, cache_option()] = None,
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
    stop_after: Annotated[
        int | None,
        typer.Option(
            "--stop-after",
            metavar="N",
            min=1,
            help="Stop after N rows in a row failed on the endpoint (api_error, timeout); "
            "the rows not run yet are not written, so a re-run resumes them.",
        ),
    ] = None,
    batch_api: Annotated[
        bool,
        typer.Option(
            "--batch-api",
            help="Run through the provider's Batch API in rounds (half price): heal each "
            "result locally, resubmit only the rows that need a repair. Resumable: re-run "
            "the same command after an interruption.",
            rich_help_panel="Batch API",
        ),
    ] = False,
    provider: Annotated[str, provider_option()] = "openai",
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            dir_okay=False,
            help="--batch-api: the run's SQLite ledger (default: OUT.batch-api.sqlite).",
            rich_help_panel="Batch API",
        ),
    ] = None,
    status: Annotated[
        bool,
        typer.Option(
            "--status",
            help="--batch-api: show where the run stands (from the ledger) and exit.",
            rich_help_panel="Batch API",
        ),
    ] = False,
    cancel: Annotated[
        bool,
        typer.Option(
            "--cancel",
            help="--batch-api: cancel the batches in flight, keep what they answered.",
            rich_help_panel="Batch API",
        ),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="--batch-api: poll until every row is written, or submit and exit.",
            rich_help_panel="Batch API",
        ),
    ] = True,
    poll_interval: Annotated[
        float,
        typer.Option(
            "--poll-interval",
            min=0.0,
            metavar="SECONDS",
            help="--batch-api: seconds between two status checks.",
            rich_help_panel="Batch API",
        ),
    ] = 15.0,
    max_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-tokens",
            min=1,
            help=max_tokens_help(),
            rich_help_panel="Batch API",
        ),
    ] = None,
    max_requests_per_batch: Annotated[
        int | None,
        typer.Option(
            "--max-requests-per-batch",
            min=1,
            help="--batch-api: split rounds into batches of at most N requests (below the "
            "provider's own limit).",
            rich_help_panel="Batch API",
        ),
    ] = None,
    resubmits: Annotated[
        int,
        typer.Option(
            "--resubmits",
            min=0,
            metavar="N",
            help="--batch-api: send a row's request again at most N times when it expired or "
            "failed transiently (HTTP 408, 409, 429, 5xx), then degrade it.",
            rich_help_panel="Batch API",
        ),
    ] = 3,
    batch_endpoint: Annotated[
        EndpointChoice,
        choice(
            ("--endpoint",),
            EndpointChoice,
            "--batch-api (openai): the endpoint the batch's lines name: chat "
            "(/v1/chat/completions) or responses (/v1/responses).",
            rich_help_panel="Batch API",
        ),
    ] = EndpointChoice.CHAT,
    resubmit_lost: Annotated[
        bool,
        typer.Option(
            "--resubmit-lost",
            help="--batch-api: send again the rows whose batch the provider no longer knows "
            "(or whose results it cannot give): they may have run already and be billed twice.",
            rich_help_panel="Batch API",
        ),
    ] = False,
) -> None:
    """Heal every prompt of INPUT.jsonl through an OpenAI-compatible endpoint into OUT.

    Every distinct id gets exactly one output line, written and fsync'd as it finishes; a
    re-run skips the ids OUT already has, so an interrupted batch resumes where it stopped.
    A line that cannot be read gets an `invalid_input` row with the id `#line-N`; a line
    without an id gets its line number. An input where such an id equals another line's
    explicit id is refused (exit 2), naming both lines.

    Exit code 0 when every row was written (degraded rows included); 1 when some were not,
    when every row sent failed on the endpoint, or when --stop-after stopped the run, or the
    provider refused the key or did not find the model (no more rows are sent then: re-run
    after the fix to resume); 2 on usage errors.
    """
    from healjson._batch.input_file import id_clash, not_json_lines
    from healjson._batch.output_file import not_regular
    from healjson._batch.rows import BatchError
    from healjson._batch.run import Batch, openai_healer
    from healjson._core.run.healer import Healer
    from healjson._core.run.policy import HealPolicy

    if not input_path.is_file():  # a pipe (/dev/stdin) or a device: it can be read only once
        raise typer.BadParameter(
            f"{input_path} is not a regular file: batch reads its input more than once (and "
            "again to resume), so save it to a file first",
            param_hint="'INPUT.jsonl'",
        )
    if _same_file(input_path, out):  # before anything is read or written
        raise typer.BadParameter(
            f"{out} is the input file itself ({input_path}): the rows would be appended to it "
            "and its lines taken for finished rows; give --out another file",
            param_hint="'--out'",
        )
    problem = not_regular(out)  # a pipe or a device: never read back, never made durable
    if problem is not None:
        raise typer.BadParameter(problem, param_hint="'--out'")
    setup = load_setup(contracts, response_model, option="'--response-model'")
    policy = HealPolicy(max_attempts=max_attempts)
    try:
        Healer(setup.target, contracts=setup.contracts, policy=policy, examples=setup.examples)
    except Exception as exc:
        raise typer.BadParameter(
            f"{type(exc).__name__}: {exc}", param_hint="'--contracts'"
        ) from exc
    _check_mode(ctx, batch_api)
    try:
        problem = not_json_lines(input_path) or id_clash(input_path)
    except BatchError as exc:
        raise typer.BadParameter(str(exc), param_hint="'INPUT.jsonl'") from exc
    if problem is not None:
        raise typer.BadParameter(problem, param_hint="'INPUT.jsonl'")
    if batch_api:
        options = BatchApiOptions(
            provider=provider,
            model=model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            ledger=ledger,
            json_mode=str(json_mode),
            max_tokens=max_tokens,
            max_requests=max_requests_per_batch,
            resubmits=resubmits,
            poll_interval_s=poll_interval,
            wait=wait,
            full=full,
            status=status,
            cancel=cancel,
            endpoint=batch_endpoint.value,
            progress=progress,
            resubmit_lost=resubmit_lost,
        )
        batch_api_command(input_path, out, setup, policy, options)
        return
    reasons = frozenset(retry or ()) | (RETRY_FAILED if retry_failed else frozenset())
    known = {str(reason) for reason in Reason} | {INVALID_INPUT}
    unknown = sorted(reasons - known)
    if unknown:
        raise typer.BadParameter(
            f"unknown reason(s) {', '.join(unknown)}; one of: " + ", ".join(sorted(known)),
            param_hint="'--retry'",
        )
    store = None if cache is None else _opened_cache(cache)
    try:
        runner = Batch.open(input_path, out, retry=reasons)
    except BatchError as exc:
        hint = f"'{exc.option}'" if exc.option else "'INPUT.jsonl'"
        raise typer.BadParameter(str(exc), param_hint=hint) from exc
    if runner.stats.total == 0:  # every row is in OUT already: no endpoint, no client needed
        runner.close()
        typer.echo(_summary(runner.stats, out), err=True)
        return
    try:
        endpoint = endpoint_from_options(base_url, api_key, timeout)
    except BaseException:
        runner.close()
        raise
    show = sys.stderr.isatty() if progress is None else progress

    async def run(on_row: Callable[[BatchStats], None] | None) -> BatchStats:
        import healjson
        from healjson.adapters._format import check_mode

        async with endpoint.async_client() as raw:
            client = healjson.wrap(raw, json_mode=check_mode(str(json_mode)), cache=store)
            healer = openai_healer(
                client,
                model=model,
                response_model=setup.target,
                contracts=setup.contracts,
                examples=setup.examples,
                policy=policy,
            )
            try:
                return await runner.run(
                    healer, concurrency=concurrency, full=full, on_row=on_row, stop_after=stop_after
                )
            finally:
                if store is not None:
                    store.close()  # the answers committed before the command ends

    with runner:
        try:
            with batch_progress(show, runner.stats.total) as on_row:
                stats = asyncio.run(run(on_row))
        except KeyboardInterrupt:
            typer.echo(_summary(runner.stats, out), err=True)
            typer.echo("interrupted: re-run the same command to resume", err=True)
            raise typer.Exit(130) from None
        except (OSError, ExceptionGroup) as exc:
            failure = _os_error(exc)
            if failure is None:
                raise
            typer.echo(_summary(runner.stats, out), err=True)
            typer.echo(f"batch stopped: {failure}", err=True)
            raise typer.Exit(1) from None
    _finish(stats, out, stop_after)


def _finish(stats: BatchStats, out: Path, stop_after: int | None) -> None:
    """The run's summary on stderr, and exit code 1 when it stopped, when every row sent
    failed on the endpoint, or when some rows were not written. A function of its own:
    coverage.py does not record the lines that follow the run in `batch`'s own frame."""
    typer.echo(_summary(stats, out), err=True)
    if stats.stopped_by is not None:
        left = stats.total - stats.written
        typer.echo(
            f"batch stopped: the provider answered {stats.stopped_by}. Every row would get "
            f"the same answer, so {left} row(s) were not sent or not written; fix it and "
            "re-run the same command to resume",
            err=True,
        )
        raise typer.Exit(1)
    if stats.stopped:
        typer.echo(
            f"batch stopped: {stats.failing_in_a_row} row(s) in a row failed on the endpoint "
            f"(--stop-after {stop_after}); re-run the same command to resume "
            "(add --retry-failed to run the failed rows again)",
            err=True,
        )
        raise typer.Exit(1)
    if stats.endpoint_down:
        advice = (
            "fix what the provider said (above)"
            if stats.provider_errors
            else "check --base-url, --api-key and the endpoint"
        )
        typer.echo(
            f"every row sent failed on the endpoint (api_error, timeout): {advice}, then "
            "re-run with --retry-failed",
            err=True,
        )
        raise typer.Exit(1)
    if not stats.complete:
        raise typer.Exit(1)


# the options of one mode; given in the other mode, they are refused (whatever their value)
_BATCH_API_ONLY = (
    "provider",
    "ledger",
    "status",
    "cancel",
    "wait",
    "poll_interval",
    "max_tokens",
    "max_requests_per_batch",
    "resubmits",
    "batch_endpoint",
    "resubmit_lost",
)
_DIRECT_ONLY = ("concurrency", "retry", "retry_failed", "stop_after", "cache")
_GIVEN = frozenset({"COMMANDLINE", "ENVIRONMENT"})  # click's ParameterSource names


def _check_mode(ctx: typer.Context, batch_api: bool) -> None:
    """Refuse an option given on the command line (or from the environment) that belongs to the
    other mode, naming the mode it belongs to."""
    names = _DIRECT_ONLY if batch_api else _BATCH_API_ONLY
    given = []
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name or "")
        if param.name in names and getattr(source, "name", "DEFAULT") in _GIVEN:
            given.append("/".join([*param.opts, *param.secondary_opts]))
    if not given:
        return
    # named after the options given: `--batch-api` may not have been given at all
    named = ", ".join(given)
    if batch_api:
        said = f"{named}: only for runs without --batch-api (drop --batch-api, or {named})"
    else:
        said = f"{named}: only for --batch-api runs (add --batch-api, or drop {named})"
    # a usage error of its own (exit 2), not "Invalid value for '--batch-api'"
    typer.echo(f"{ctx.get_usage()}\nTry '{ctx.command_path} --help' for help.\n", err=True)
    typer.echo(f"Error: {said}", err=True)
    raise typer.Exit(2)


def _same_file(input_path: Path, out: Path) -> bool:
    """True when OUT is INPUT: the same file (through any path, a symlink, a hard link) when
    OUT exists, else the same resolved path."""
    try:
        if out.exists():
            return os.path.samefile(input_path, out)
        return input_path.resolve() == out.resolve()
    except (OSError, RuntimeError):  # unreadable, or a symlink loop: the run reports it
        return False


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


def _opened_cache(path: Path) -> ResponseCache:
    """`--cache`'s store; a file that cannot be one (not a SQLite database, a directory, not
    readable) is a usage error."""
    import sqlite3

    import healjson

    try:
        return healjson.ResponseCache(path)
    except (OSError, sqlite3.Error) as exc:
        raise typer.BadParameter(
            f"{path} cannot be a response cache: {exc}", param_hint="'--cache'"
        ) from exc


def _summary(stats: BatchStats, out: Path) -> str:
    """What the run did, for stderr: the counts, then one line per thing worth knowing."""
    parts = [
        f"healjson batch: wrote {stats.written} of {stats.total} row(s) to {out} "
        f"({batch_counts(stats)}); {stats.calls} call(s), {stats.tokens} token(s)"
        + (f", ${stats.cost:.4f}" if stats.cost is not None and stats.calls else "")
    ]
    if stats.endpoint_failed:
        parts.append(f"{stats.endpoint_failed} row(s) failed on the endpoint (api_error, timeout)")
    said = most_common_provider_error(stats.provider_errors)
    if said is not None:
        parts.append(said)
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
