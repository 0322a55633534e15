"""The `healjson eval` report: per-configuration totals, the paired table, Markdown and JSON.

Pass rates come with Wilson 95% intervals; the paired 2x2 table of (A passed, B passed) with the
exact McNemar p-value; plus model calls, tokens (the endpoint's reported usage) and wall latency
per request.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from .stats import PairedTable, wilson_interval

if TYPE_CHECKING:
    from .eval_config import EvalConfig
    from .eval_run import UnitResult
    from .scenarios import EvalScenario

__all__ = ["ConfigSummary", "EvalReport"]

_MAX_LISTED = 40  # discordant pairs listed in the Markdown report (all are in the JSON one)


@dataclass(frozen=True, slots=True)
class ConfigSummary:
    """One configuration's totals over every run."""

    name: str
    runs: int
    passed: int
    low: float
    high: float
    calls: int
    prompt_tokens: int
    completion_tokens: int
    latency_median_s: float
    latency_p95_s: float
    exceptions: int
    reasons: Mapping[str, int]
    cost: float | None = None
    """USD over every run; None when any run's cost could not be known."""

    @property
    def rate(self) -> float:
        """The pass rate."""
        return self.passed / self.runs if self.runs else 0.0


def _total_cost(units: Sequence[UnitResult]) -> float | None:
    costs = [u.cost for u in units if u.calls]
    if not costs or any(cost is None for cost in costs):
        return None
    return sum(cost for cost in costs if cost is not None)


def _p95(values: Sequence[float]) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


@dataclass(frozen=True)
class EvalReport:
    """Everything one `run_eval` measured, with the statistics derived from it."""

    configs: tuple[EvalConfig, EvalConfig]
    scenarios: Sequence[EvalScenario]
    units: Sequence[UnitResult]
    offline: bool
    model: str

    def summary(self, config: EvalConfig) -> ConfigSummary:
        """Totals for one configuration."""
        mine = [u for u in self.units if u.config == config.name]
        passed = sum(u.passed for u in mine)
        low, high = wilson_interval(passed, len(mine))
        latencies = [u.latency_s for u in mine]
        return ConfigSummary(
            name=config.name,
            runs=len(mine),
            passed=passed,
            low=low,
            high=high,
            calls=sum(u.calls for u in mine),
            prompt_tokens=sum(u.prompt_tokens for u in mine),
            completion_tokens=sum(u.completion_tokens for u in mine),
            latency_median_s=statistics.median(latencies) if latencies else 0.0,
            latency_p95_s=_p95(latencies),
            exceptions=sum(1 for u in mine if u.exception is not None),
            reasons=dict(Counter(u.reason for u in mine if u.reason)),
            cost=_total_cost(mine),
        )

    def pairs(self) -> list[tuple[UnitResult, UnitResult]]:
        """(A, B) results of every scenario and repeat, in scenario order."""
        a, b = self.configs
        by_key = {(u.scenario, u.repeat, u.config): u for u in self.units}
        out = []
        for scenario in self.scenarios:
            for r in range(max((u.repeat for u in self.units), default=-1) + 1):
                left, right = (
                    by_key.get((scenario.id, r, a.name)),
                    by_key.get((scenario.id, r, b.name)),
                )
                if left is not None and right is not None:
                    out.append((left, right))
        return out

    @property
    def table(self) -> PairedTable:
        """The paired 2x2 table of (A passed, B passed)."""
        return PairedTable.from_pairs((a.passed, b.passed) for a, b in self.pairs())

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data: configurations, summaries, the table and every run."""
        table = self.table
        return {
            "mode": "offline" if self.offline else "live",
            "model": self.model,
            "configs": [
                {"name": c.name, "description": c.describe(), **_summary_dict(self.summary(c))}
                for c in self.configs
            ],
            "paired": {
                "both_pass": table.both,
                "only_a": table.only_a,
                "only_b": table.only_b,
                "neither": table.neither,
                "mcnemar_exact_p": table.p_value,
            },
            "runs": [u.to_dict() for u in self.units],
        }

    def markdown(self) -> str:
        """The report as Markdown tables."""
        a, b = self.configs
        sa, sb = self.summary(a), self.summary(b)
        table = self.table
        where = "offline, scripted replies" if self.offline else f"live, model `{self.model}`"
        repeats = len(self.pairs()) // max(len(self.scenarios), 1)
        lines = [
            f"# healjson eval: `{a.name}` (A) vs `{b.name}` (B)",
            "",
            f"{len(self.scenarios)} scenario(s) x {repeats} repeat(s) = {table.n} pairs; {where}.",
            "",
            *(
                [
                    "Scripted replies are the same on every repeat: offline repeats add no "
                    "information, and the test below counts them as if they did.",
                    "",
                ]
                if self.offline and repeats > 1
                else []
            ),
            f"- A `{a.name}`: {a.describe()}",
            f"- B `{b.name}`: {b.describe()}",
            "",
            "| configuration | passed | rate | Wilson 95% CI | calls | prompt tok | completion "
            "tok | cost | latency median | latency p95 | exceptions |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [_row(s) for s in (sa, sb)]
        lines += [
            "",
            "| | B passed | B failed |",
            "|---|---:|---:|",
            f"| **A passed** | {table.both} | {table.only_a} |",
            f"| **A failed** | {table.only_b} | {table.neither} |",
            "",
            f"Exact McNemar test (two-sided) on {table.discordant} discordant pair(s): "
            f"**p = {_p(table.p_value)}**"
            + (" (no discordant pairs: no evidence of a difference)." if not table.discordant
               else "."),
            "",
        ]  # fmt: skip
        for summary in (sa, sb):
            if summary.reasons:
                reasons = ", ".join(f"`{k}` {v}" for k, v in sorted(summary.reasons.items()))
                lines.append(f"Why `{summary.name}` failed: {reasons}.")
        discordant = [(x, y) for x, y in self.pairs() if x.passed != y.passed]
        shown = discordant[:_MAX_LISTED]
        if discordant:
            lines += ["", "Discordant pairs:", ""]
            lines += [
                f"- `{x.scenario}`" + (f" (repeat {x.repeat + 1})" if repeats > 1 else "")
                + f": {_verdict(x)} / {_verdict(y)}"
                for x, y in shown
            ]  # fmt: skip
            if len(discordant) > len(shown):
                lines.append(f"- ... and {len(discordant) - len(shown)} more (see `--json`)")
        return "\n".join(lines).rstrip() + "\n"


def _summary_dict(summary: ConfigSummary) -> dict[str, Any]:
    data = {f.name: getattr(summary, f.name) for f in fields(summary) if f.name != "name"}
    data["rate"] = summary.rate
    data["reasons"] = dict(summary.reasons)
    return data


def _row(s: ConfigSummary) -> str:
    return (
        f"| `{s.name}` | {s.passed}/{s.runs} | {s.rate:.1%} | {s.low:.1%} - {s.high:.1%} | "
        f"{s.calls} | {s.prompt_tokens:,} | {s.completion_tokens:,} | "
        f"{'-' if s.cost is None else f'${s.cost:.4f}'} | "
        f"{s.latency_median_s * 1000:.0f} ms | {s.latency_p95_s * 1000:.0f} ms | {s.exceptions} |"
    )


def _p(value: float) -> str:
    if value == 0.0:  # the exact p-value is below the smallest float (b + c > ~1070)
        return "< 1e-300"
    return f"{value:.2e}" if value < 0.001 else f"{value:.4f}"


def _verdict(unit: UnitResult) -> str:
    if unit.passed:
        return f"{unit.config} passed ({unit.calls} call(s))"
    return f"{unit.config} failed (`{unit.reason}`, {unit.calls} call(s))"
