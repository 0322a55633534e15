"""Where a Batch API run stands: `RunReport` (rows done, pending, written, by verdict; rounds;
batches in flight; why a run stopped early), read back from the ledger alone by
`ledger_report` (no provider call)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .ledger import LOST_MARK, Ledger

__all__ = ["RoundSummary", "RunReport", "ledger_report"]


@dataclass
class RoundSummary:
    """One round: its batches, requests, answers and spend."""

    round: int
    batches: int = 0
    requests: int = 0
    answered: int = 0
    failed: int = 0
    in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    """USD at batch prices of the parts collected so far; None when a model is not priced."""
    collected: int = 0
    """The parts whose results were read (or that were cancelled): the ones `cost` covers."""


@dataclass
class RunReport:
    """Where a Batch API run stands (after `run`, or read from the ledger by `status`)."""

    total: int = 0
    done: int = 0
    pending: int = 0
    written: int = 0
    """Rows written to the output by this call."""
    healed: int = 0
    degraded: int = 0
    invalid: int = 0
    already_done: int = 0
    duplicates: int = 0
    resubmitted: int = 0
    """Requests this call sent again because they expired or failed transiently."""
    stopped: str | None = None
    """Why this call stopped early: the provider kept failing (run it again to resume), or gave
    a final answer (`refused`)."""
    refused: bool = False
    """True when the stop was the provider's final answer (a refused key, no Batch API, a batch
    it does not know): running again gets the same answer until what it said is fixed."""
    lost: int = 0
    """Rows whose batch the provider no longer knows, or whose results it cannot give: they may
    have run and been billed; sent again only with `resubmit_lost=True` (`--resubmit-lost`)."""
    lost_batches: list[str] = field(default_factory=list)
    """`batch id: the provider's answer` for each batch whose rows are lost."""
    resubmitted_lost: int = 0
    """Lost rows this call made pending again (`resubmit_lost=True`)."""
    notices: list[str] = field(default_factory=list)
    """What this call did that the user must know (a cancel of a batch the provider does not
    know, rows marked lost)."""
    provider_errors: Counter[str] = field(default_factory=Counter)
    """The provider's error answers the rows this call degraded with (`provider_error`)."""
    rounds: list[RoundSummary] = field(default_factory=list)
    batch_ids: list[str] = field(default_factory=list)
    """The batches still in flight (submitted, not ended)."""

    @property
    def complete(self) -> bool:
        return self.pending == 0 and self.lost == 0

    @property
    def calls(self) -> int:
        return sum(r.requests for r in self.rounds)

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.rounds)

    @property
    def cost(self) -> float | None:
        costs = [r.cost for r in self.rounds]
        return None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)


def ledger_report(ledger: Ledger, report: RunReport | None = None) -> RunReport:
    """Where a run stands, from its ledger alone (no provider call); `report`: the counts of
    the current call, completed here."""
    report = RunReport() if report is None else report
    counts = ledger.counts()
    report.done, report.pending = counts.get("done", 0), counts.get("pending", 0)
    report.lost = counts.get("lost", 0)
    report.total = report.done + report.pending + report.lost
    rounds: dict[int, RoundSummary] = {}
    report.batch_ids, report.lost_batches = [], []
    for part in ledger.parts():
        summary = rounds.setdefault(part.round, RoundSummary(part.round))
        if part.batch_id is not None:
            summary.batches += 1
        sent = part.state != "cancelled" or part.lost  # a lost part's may have been billed
        summary.requests += part.requests if sent else part.answered
        summary.answered += part.answered
        summary.failed += part.failed
        summary.prompt_tokens += part.prompt_tokens
        summary.completion_tokens += part.completion_tokens
        if part.state in ("submitting", "submitted", "ended"):
            summary.in_flight += 1
            if part.batch_id:
                report.batch_ids.append(part.batch_id)
        if part.lost:  # nothing read: its spend unknown
            if report.lost:
                said = (part.status or "").removeprefix(LOST_MARK)
                report.lost_batches.append(f"{part.batch_id}: {said}")
        elif part.state in ("collected", "cancelled"):
            summary.collected += 1
            if summary.cost is not None:
                summary.cost = None if part.cost is None else summary.cost + part.cost
    report.rounds = [rounds[key] for key in sorted(rounds)]
    return report
