"""Structured extraction through a provider's Batch API, healed: `healjson batch --batch-api`
from Python.

    from openai import OpenAI
    from healjson.batch_api import run_batch_api

    report = run_batch_api(
        "prompts.jsonl", "out.jsonl", client=OpenAI(), model="gpt-4o-mini", response_model=Ticket
    )

Round 0 sends every input row (`{"id", "messages" | "prompt"}` per line, as for `healjson
batch`) as one provider batch (split under the provider's limits); when it ends, each result is
healed locally (L1 + L2), rows that need a repair go into the next round's batch with their
full-context repair request, and rows that healed or failed for good are written to the output
in `healjson batch`'s row format. A SQLite ledger beside the output (`<out>.batch-api.sqlite`,
or `ledger=`) makes the run resumable and exactly-once: call it again after a crash, a kill or
`wait=False`, and it continues. Batch prices are half the listed ones; `RunReport.cost` says
so by counting half. A line that expired (the provider's window closed before it ran) or failed
for a transient reason (HTTP 408, 409, 429, 5xx) is sent again as it was in the next round, at
most `resubmits` times per row (default 3; not a model attempt), then degraded with the
provider's reason. When the provider gives a final answer (a refused key, no Batch API at
the endpoint, a batch it no longer knows), the call stops cleanly with `RunReport.stopped`
saying what it answered and the fix; the rows of a batch it no longer knows (or whose results
it cannot give) are `lost`: they may have run and been billed, so they are sent again only
with `resubmit_lost=True`.

Providers: an `openai.OpenAI` client (`/v1/files` + `/v1/batches`), an `anthropic.Anthropic`
client (Message Batches), or either wrapped by `healjson.wrap` or instructor.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._batch.api.ledger import Ledger, LedgerError
from ._batch.api.providers import Provider, batch_api_for
from ._batch.api.runner import (
    BATCH_DISCOUNT,
    DEFAULT_RESUBMITS,
    Event,
    RoundSummary,
    Runner,
    RunReport,
    ledger_report,
)
from ._batch.rows import BatchError
from ._core.run.healer import Healer
from ._core.run.policy import HealPolicy
from ._providers import PROVIDERS
from .adapters._format import check_mode

__all__ = [
    "BATCH_DISCOUNT",
    "DEFAULT_RESUBMITS",
    "BatchError",
    "LedgerError",
    "RoundSummary",
    "RunReport",
    "batch_api_status",
    "cancel_batch_api",
    "default_ledger",
    "run_batch_api",
]


def default_ledger(out: str | os.PathLike[str]) -> Path:
    """The ledger a run writing `out` keeps by default: `<out>.batch-api.sqlite`."""
    out = Path(out)
    return out.with_name(out.name + ".batch-api.sqlite")


def run_batch_api(
    input_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    client: Any,
    model: str,
    response_model: Any,
    contracts: Iterable[Any] = (),
    examples: Iterable[Any] = (),
    policy: HealPolicy | None = None,
    json_mode: str = "json_schema",
    max_tokens: int | None = None,
    ledger: str | os.PathLike[str] | None = None,
    full: bool = False,
    wait: bool = True,
    poll_interval_s: float = 15.0,
    max_requests_per_batch: int | None = None,
    max_bytes_per_batch: int | None = None,
    resubmits: int = DEFAULT_RESUBMITS,
    on_event: Event | None = None,
    endpoint: str = "chat",
    resubmit_lost: bool = False,
) -> RunReport:
    """Heal every row of `input_path` through the provider's Batch API into `out`.

    `wait=True` polls every `poll_interval_s` seconds until every row is written; `wait=False`
    submits what can be submitted and returns (call again to collect and go on). `max_tokens`:
    the completion limit sent with each request (Anthropic requires one: default 4096).
    `max_requests_per_batch` / `max_bytes_per_batch` lower the provider's own limits.
    `resubmits`: how many times a row's request is sent again after it expired or failed
    transiently (HTTP 408, 409, 429, 5xx) before the row degrades (`timeout` / `api_error`);
    a resubmission is not a model attempt. `endpoint` (OpenAI): `chat` sends
    `/v1/chat/completions` lines, `responses` `/v1/responses` lines (the row's messages as
    `input`, the JSON tier as `text.format`), healed alike. `resubmit_lost`: send again the
    rows whose batch the provider no longer knows (`RunReport.lost`: they may be billed twice).
    The provider's final answer (a refused key, no Batch API) stops the call cleanly
    (`RunReport.stopped`, `RunReport.refused`). Raises
    `LedgerError` when the ledger belongs to a run with other settings, `BatchError` when the
    input or output cannot be used (another run holds the output); a row never raises.
    """
    runner = _runner(
        input_path, out, client=client, model=model, response_model=response_model,
        contracts=contracts, examples=examples, policy=policy, json_mode=json_mode,
        max_tokens=max_tokens, ledger=ledger, full=full, max_requests=max_requests_per_batch,
        max_bytes=max_bytes_per_batch, resubmits=resubmits, on_event=on_event, endpoint=endpoint,
        resubmit_lost=resubmit_lost,
    )  # fmt: skip
    try:
        return runner.run(wait=wait, poll_interval_s=poll_interval_s)
    finally:
        runner.ledger.close()


def cancel_batch_api(
    input_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    client: Any,
    model: str,
    response_model: Any,
    contracts: Iterable[Any] = (),
    examples: Iterable[Any] = (),
    policy: HealPolicy | None = None,
    json_mode: str = "json_schema",
    max_tokens: int | None = None,
    ledger: str | os.PathLike[str] | None = None,
    full: bool = False,
    poll_interval_s: float = 1.0,
    resubmits: int = DEFAULT_RESUBMITS,
    on_event: Event | None = None,
    endpoint: str = "chat",
) -> RunReport:
    """Cancel the run's batches in flight and keep every answer they gave: answered rows go on
    (healed, written, or repaired) at the next `run_batch_api`; the rows they did not answer
    are sent again then. Same arguments as `run_batch_api`."""
    runner = _runner(
        input_path, out, client=client, model=model, response_model=response_model,
        contracts=contracts, examples=examples, policy=policy, json_mode=json_mode,
        max_tokens=max_tokens, ledger=ledger, full=full, resubmits=resubmits, on_event=on_event,
        endpoint=endpoint,
    )  # fmt: skip
    try:
        return runner.cancel(poll_interval_s=poll_interval_s)
    finally:
        runner.ledger.close()


def batch_api_status(ledger: str | os.PathLike[str]) -> RunReport:
    """Where the run of `ledger` stands (rows done and pending, rounds, batches in flight),
    read from the ledger alone."""
    path = Path(ledger)
    if not path.is_file():
        raise LedgerError(f"no ledger at {path}")
    opened = Ledger(path, read_only=True)
    try:
        return ledger_report(opened)
    finally:
        opened.close()


def provider_for(client: Any, endpoint: str = "chat") -> Provider:
    """The Batch API behind `client`: OpenAI's or Anthropic's (also when wrapped); `endpoint`
    the OpenAI endpoint its lines name (`chat` or `responses`)."""
    return batch_api_for(client, endpoint)


def _runner(
    input_path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    client: Any,
    model: str,
    response_model: Any,
    contracts: Iterable[Any],
    examples: Iterable[Any],
    policy: HealPolicy | None,
    json_mode: str,
    max_tokens: int | None,
    ledger: str | os.PathLike[str] | None,
    full: bool,
    on_event: Event | None,
    max_requests: int | None = None,
    max_bytes: int | None = None,
    resubmits: int = DEFAULT_RESUBMITS,
    endpoint: str = "chat",
    resubmit_lost: bool = False,
) -> Runner:
    if type(resubmits) is not int or resubmits < 0:
        raise ValueError(f"resubmits must be an int >= 0, got {resubmits!r}")
    provider = provider_for(client, endpoint)
    mode = check_mode(json_mode)
    healer: Healer[Any] = Healer(
        response_model, contracts=contracts, examples=examples, policy=policy
    )
    params: dict[str, Any] = {}
    required = PROVIDERS.named(provider.name).batch_api
    default = None if required is None else required.max_tokens
    if max_tokens is not None or default is not None:
        params["max_tokens"] = default if max_tokens is None else max_tokens
    out_path = Path(out)
    ledger_path = default_ledger(out_path) if ledger is None else Path(ledger)
    opened = Ledger(ledger_path)
    try:
        opened.settle(
            {
                "endpoint": endpoint,  # a ledger from before it was kept: checked by the rest
                "provider": provider.name,
                "model": model,
                "input": str(Path(input_path).resolve()),
                "out": str(out_path.resolve()),
                "target": healer.target.name,
                "contracts": ",".join(rule.name for rule in healer.contracts),
                "json_mode": mode,
                "max_attempts": str(healer.policy.max_attempts),
                "resubmits": str(resubmits),
            }
        )
    except BaseException:
        opened.close()
        raise
    return Runner(
        input_path=Path(input_path),
        out_path=out_path,
        ledger=opened,
        provider=provider,
        healer=healer,
        model=model,
        json_mode=mode,
        params=params,
        full=full,
        secrets_of=client,
        max_requests=max_requests,
        max_bytes=max_bytes,
        resubmits=resubmits,
        on_event=on_event,
        resubmit_lost=resubmit_lost,
    )
