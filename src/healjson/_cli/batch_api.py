"""`healjson batch --batch-api`: the same batch through the provider's Batch API, in rounds.

The command line's side only: build the client, call `healjson.batch_api`, print what happened
(each round's batches, requests, tokens and cost; where the run stands) on stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from healjson._batch.run import most_common_provider_error
from healjson._core.run.policy import HealPolicy
from healjson._extras import missing_extra

from .api_progress import batch_api_progress
from .loading import Setup

__all__ = ["BatchApiOptions", "batch_api_command", "report_text"]


@dataclass(frozen=True, slots=True)
class BatchApiOptions:
    """What `healjson batch` was given for a Batch API run."""

    provider: str
    model: str
    base_url: str | None
    api_key: str | None
    timeout: float | None
    ledger: Path | None
    json_mode: str
    max_tokens: int | None
    max_requests: int | None
    resubmits: int
    poll_interval_s: float
    wait: bool
    full: bool
    status: bool
    cancel: bool
    endpoint: str = "chat"
    progress: bool | None = None
    """Progress on stderr while the run waits (None: when stderr is a terminal)."""
    resubmit_lost: bool = False
    """Send again the rows whose batch the provider no longer knows (`--resubmit-lost`)."""


def batch_api_command(
    input_path: Path, out: Path, setup: Setup, policy: HealPolicy, options: BatchApiOptions
) -> None:
    """Run (or report on, or cancel) a Batch API run; exit 1 while rows are still pending or
    lost, or when the provider kept failing or gave a final answer (the run stops cleanly);
    a cancel exits 0 once every batch in flight is cancelled (here, for one the provider does
    not know)."""
    from healjson._batch.output_file import not_regular
    from healjson._batch.rows import BatchError
    from healjson.batch_api import (
        LedgerError,
        batch_api_status,
        cancel_batch_api,
        default_ledger,
        run_batch_api,
    )

    ledger = options.ledger or default_ledger(out)
    problem = not_regular(ledger)
    if problem is not None:
        raise typer.BadParameter(problem, param_hint="'--ledger'")
    try:
        if options.status:
            typer.echo(report_text(batch_api_status(ledger), out, ledger), err=True)
            return
        client = _client(options)
        common: dict[str, Any] = {
            "client": client,
            "model": options.model,
            "response_model": setup.target,
            "contracts": setup.contracts,
            "examples": setup.examples,
            "policy": policy,
            "json_mode": options.json_mode,
            "max_tokens": options.max_tokens,
            "ledger": ledger,
            "full": options.full,
            "resubmits": options.resubmits,
            "endpoint": options.endpoint,
        }
        with client:  # its connections closed when the run ends
            if options.cancel:
                report = cancel_batch_api(input_path, out, **common)
            else:
                show = sys.stderr.isatty() if options.progress is None else options.progress
                with batch_api_progress(show) as on_event:
                    report = run_batch_api(
                        input_path,
                        out,
                        wait=options.wait,
                        poll_interval_s=options.poll_interval_s,
                        max_requests_per_batch=options.max_requests,
                        on_event=on_event,
                        resubmit_lost=options.resubmit_lost,
                        **common,
                    )
    except LedgerError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--ledger'") from exc
    except BatchError as exc:  # the input or the output, as it says
        hint = f"'{exc.option}'" if exc.option else "'INPUT.jsonl'"
        raise typer.BadParameter(str(exc), param_hint=hint) from exc
    except KeyboardInterrupt:
        typer.echo(
            "interrupted: the batches in flight keep running at the provider; re-run the same "
            "command to resume (add --cancel to stop them)",
            err=True,
        )
        raise typer.Exit(130) from None
    typer.echo(report_text(report, out, ledger), err=True)
    if report.stopped or not (report.complete or options.cancel):
        raise typer.Exit(1)


def _client(options: BatchApiOptions) -> Any:
    """The `--provider`'s client: the default provider's is the command line's endpoint (the
    OpenAI-compatible one every command talks to); another's is its SDK's client, built from
    the options or the environment its Batch API names."""
    from healjson._providers import PROVIDERS

    provider = PROVIDERS.named(options.provider)
    api = provider.batch_api
    if provider is PROVIDERS.default or api is None:
        from .endpoint import endpoint_from_options

        return endpoint_from_options(options.base_url, options.api_key, options.timeout).client()
    module, _, name = api.sdk.partition(":")
    try:
        sdk = importlib.import_module(module)
    except ImportError as exc:
        raise typer.BadParameter(
            missing_extra(module, api.extra), param_hint="'--provider'"
        ) from exc
    key = options.api_key or os.environ.get(api.api_key_env)
    if not key:
        raise typer.BadParameter(
            f"no API key: pass --api-key or set {api.api_key_env}", param_hint="'--api-key'"
        )
    base = options.base_url or (os.environ.get(api.base_url_env) if api.base_url_env else None)
    timeout: dict[str, Any] = {} if options.timeout is None else {"timeout": options.timeout}
    return getattr(sdk, name)(api_key=key, base_url=base or None, **timeout)


def _cost(cost: float | None, collected: int, prices: str) -> str:
    """A cost as the summary shows it: nothing before any result is read (a batch in flight
    has cost nothing yet that healjson could know), `unpriced` when the model has no known
    price (never `$0.0000`), else dollars."""
    if not collected:
        return ""
    if cost is None:
        return ", unpriced"
    return f", ${cost:.4f}{prices}"


def report_text(report: Any, out: Path, ledger: Path) -> str:
    """The run's summary for stderr: rows, then one line per round, then what to do next."""
    head = (
        f"healjson batch --batch-api: {report.done} of {report.total} row(s) done, "
        f"{report.pending} pending{f', {report.lost} lost' if report.lost else ''} "
        f"({out}; ledger {ledger})"
    )
    if report.written:
        head += (
            f"; this run wrote {report.written}: {report.healed} healed, "
            f"{report.degraded} degraded, {report.invalid} invalid input"
        )
    lines = [head]
    said = most_common_provider_error(getattr(report, "provider_errors", None) or Counter())
    if said is not None:
        lines.append(said)
    for summary in report.rounds:
        cost = _cost(summary.cost, summary.collected, " at batch prices")
        flying = f", {summary.in_flight} batch(es) in flight" if summary.in_flight else ""
        lines.append(
            f"  round {summary.round}: {summary.batches} batch(es), {summary.requests} "
            f"request(s), {summary.answered} answered ({summary.failed} failed), "
            f"{summary.prompt_tokens + summary.completion_tokens} token(s){cost}{flying}"
        )
    if report.rounds:
        total = _cost(report.cost, sum(r.collected for r in report.rounds), "")
        lines.append(f"  total: {report.calls} call(s), {report.tokens} token(s){total}")
    if report.batch_ids:
        lines.append("  in flight: " + ", ".join(report.batch_ids))
    lines.extend(report.notices)
    if report.resubmitted_lost:
        lines.append(
            f"resubmitted {report.resubmitted_lost} lost row(s) (--resubmit-lost): any that had "
            "run before is billed twice"
        )
    if report.lost:
        lines.append(
            f"{report.lost} row(s) lost: the provider no longer knows their batch or cannot give "
            "its results ("
            + "; ".join(report.lost_batches)
            + "); they may have run and been billed. Re-run with --resubmit-lost to send them "
            "again (they may be billed twice)"
        )
    if report.resubmitted:
        lines.append(
            f"resubmitted {report.resubmitted} request(s) that expired or failed transiently"
        )
    if report.already_done:
        lines.append(f"skipped {report.already_done} line(s) whose id {out} already has")
    if report.duplicates:
        lines.append(f"{report.duplicates} line(s) repeated an earlier id and were skipped")
    if report.stopped and report.refused:
        lines.append(
            f"batch stopped: {report.stopped}. Every step so far is in the ledger: fix what the "
            "provider said, then re-run the same command"
        )
    elif report.stopped:
        lines.append(
            f"batch stopped: {report.stopped}; every step so far is in the ledger: re-run the "
            "same command to resume"
        )
    elif report.pending:
        lines.append("rows are pending: re-run the same command to go on (--status: where it is)")
    return "\n".join(lines)
