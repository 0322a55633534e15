"""`healjson eval`: two configurations on the same scenarios, compared the way a sceptic would.

Every scenario runs under configuration A and under configuration B (and `repeat` times each),
so each (scenario, repeat) is a *pair*. The report gives per-configuration pass rates with
Wilson 95% intervals, the paired 2x2 table and the exact McNemar p-value, plus model calls,
tokens (the endpoint's reported usage) and wall latency per request.

A pass is a value that passed the schema and every contract — and equals the scenario's
`expected` value when it has one. The `plain` configuration scores what an application without
healing gets from the same single reply: `model_validate_json` on the raw text (lax, as pydantic
does by default; a `{"value": ...}` envelope that strict mode puts around a list or scalar
target is opened, as the app that asked for it would) and then the contracts; no local
recovery, no re-ask.

Offline (no endpoint given) every scenario is answered by a `ScriptedServer` replaying its
`replies`; with an endpoint, the same messages go to a real OpenAI-compatible model.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from healjson._core.outcome import Outcome
from healjson._core.policy import HealPolicy
from healjson._core.target import target_for

from .scenarios import Scenario
from .stats import PairedTable, wilson_interval

__all__ = [
    "PRESETS",
    "ConfigSummary",
    "Endpoint",
    "EvalConfig",
    "EvalReport",
    "ScenarioError",
    "Setup",
    "UnitResult",
    "load_scenarios",
    "parse_config",
    "run_eval",
]


class ScenarioError(ValueError):
    """A scenario file or configuration that cannot be used (a usage error, with its line)."""


# -- configurations -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """One side of the comparison.

    `strict`: score the first reply as a plain application would (no healing; one call).
    `policy`: the `HealPolicy` otherwise. `model`, `json_mode`, `params` override the run's
    model, JSON mode and extra request parameters (e.g. `{"temperature": 0}`).
    """

    name: str
    strict: bool = False
    policy: HealPolicy = field(default_factory=HealPolicy)
    model: str | None = None
    json_mode: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.strict and self.policy.max_attempts != 1:
            raise ValueError("a strict configuration makes exactly one call (max_attempts 1)")
        if self.json_mode is not None:
            from healjson.adapters._format import check_mode

            check_mode(self.json_mode)
        if self.model is not None and not isinstance(self.model, str):
            raise ValueError(f"model must be a string, got {self.model!r}")

    def describe(self) -> str:
        """One line saying what this configuration does."""
        if self.strict:
            text = "one call, `model_validate_json` + contracts on the raw reply (no healing)"
        elif self.policy.max_attempts == 1:
            text = "healjson, one call: L1 local recovery + L2, no re-ask"
        else:
            text = f"healjson, up to {self.policy.max_attempts} calls (L1-L4)"
        extras = [f"model `{self.model}`"] if self.model else []
        extras += [f"json_mode `{self.json_mode}`"] if self.json_mode else []
        extras += [f"{k}={v!r}" for k, v in self.params.items()]
        return text + (f"; {', '.join(extras)}" if extras else "")


PRESETS: dict[str, EvalConfig] = {
    "plain": EvalConfig("plain", strict=True, policy=HealPolicy(max_attempts=1)),
    "local": EvalConfig("local", policy=HealPolicy(max_attempts=1)),
    "healed": EvalConfig("healed"),
}
_POLICY_FIELDS = {f.name for f in fields(HealPolicy)}
_MAX_LISTED = 40  # discordant pairs listed in the Markdown report (all are in the JSON one)


def parse_config(spec: str) -> EvalConfig:
    """A preset name (`plain`, `local`, `healed`), a JSON object, or a path to a .json file.

    JSON keys: `name`, `base` (a preset to start from, default `healed`), `strict`, `model`,
    `json_mode`, `params`, and any `HealPolicy` field (`max_attempts`, `history`, ...).
    Raises `ScenarioError` on anything else.
    """
    if spec in PRESETS:
        return PRESETS[spec]
    text = spec
    if not spec.lstrip().startswith(("{", "[")):
        path = Path(spec)
        if not path.is_file():
            raise ScenarioError(
                f"configuration {spec!r} is not a preset ({', '.join(PRESETS)}), a JSON object "
                "or a .json file"
            )
        text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ScenarioError(f"configuration {spec!r} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"configuration {spec!r} must be a JSON object")
    base = PRESETS.get(str(data.pop("base", "healed")))
    if base is None:
        raise ScenarioError(f"configuration `base` must be one of {', '.join(PRESETS)}")
    policy_changes = {k: data.pop(k) for k in list(data) if k in _POLICY_FIELDS}
    unknown = set(data) - {"name", "strict", "model", "json_mode", "params"}
    if unknown:
        raise ScenarioError(f"unknown configuration key(s): {', '.join(sorted(unknown))}")
    try:
        policy = replace(base.policy, **policy_changes)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"configuration {spec!r}: {exc}") from exc
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise ScenarioError("configuration `params` must be a JSON object")
    try:
        return EvalConfig(
            name=str(data.get("name") or "custom"),
            strict=bool(data.get("strict", base.strict)),
            policy=policy,
            model=data.get("model"),
            json_mode=data.get("json_mode"),
            params=params,
        )
    except ValueError as exc:
        raise ScenarioError(f"configuration {spec!r}: {exc}") from exc


# -- scenario files -------------------------------------------------------------------------------

_REPLY_KEYS = {"content", "finish_reason", "refusal", "tool_calls", "status", "body", "delay_s"}


def load_scenarios(path: Path) -> list[Scenario]:
    """Read a scenario file: one JSON object per line.

    Keys: `id` (default: the line number), `messages` (chat messages) or `prompt` (one user
    turn), optional `replies` (what the scripted model says, in order: strings, or objects with
    `content`, `finish_reason`, `refusal`, `status`, ...), `expected` (the right value),
    `kind`, and `contracts` / `response_model` for a row whose pack or target differs from the
    run's (a relative `.py` path is taken relative to the scenario file). Blank lines and lines
    starting with `//` are skipped. Raises `ScenarioError` naming the line of a bad row.
    """
    scenarios: list[Scenario] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise ScenarioError(f"{where}: not a JSON object ({exc})") from exc
        if not isinstance(row, dict):
            raise ScenarioError(f"{where}: a row must be a JSON object")
        scenario = _scenario(row, where, path.parent, number)
        if scenario.id in seen:
            raise ScenarioError(f"{where}: id {scenario.id!r} appears twice")
        seen.add(scenario.id)
        scenarios.append(scenario)
    if not scenarios:
        raise ScenarioError(f"{path}: no scenarios")
    return scenarios


def _scenario(row: dict[str, Any], where: str, folder: Path, number: int) -> Scenario:
    messages = row.get("messages")
    if messages is None and isinstance(row.get("prompt"), str):
        messages = [{"role": "user", "content": row["prompt"]}]
    if not (
        isinstance(messages, list)
        and messages
        and all(isinstance(m, dict) and "role" in m for m in messages)
    ):
        raise ScenarioError(f"{where}: needs `messages` (chat messages) or `prompt` (a string)")
    replies = row.get("replies", [])
    if not isinstance(replies, list):
        raise ScenarioError(f"{where}: `replies` must be a list")
    for reply in replies:
        if isinstance(reply, dict):
            bad = set(reply) - _REPLY_KEYS
            if bad:
                raise ScenarioError(f"{where}: unknown reply key(s) {', '.join(sorted(bad))}")
        elif not isinstance(reply, str):
            raise ScenarioError(f"{where}: a reply is a string or an object")
    return Scenario(
        id=str(row.get("id", number)),
        messages=tuple(messages),
        replies=tuple(replies),
        expected=row.get("expected"),
        has_expected="expected" in row,
        kind=str(row.get("kind", "")),
        locally_fixable=bool(row.get("locally_fixable", False)),
        contracts=_relative(row.get("contracts"), folder),
        response_model=_relative(row.get("response_model"), folder),
    )


def _relative(spec: Any, folder: Path) -> str | None:
    """A `.py` path spec made relative to the scenario file's folder (if it exists there)."""
    if spec is None:
        return None
    text = str(spec)
    file, colon, rest = text.partition(":") if ".py:" in text else (text, "", "")
    if file.endswith(".py") and not Path(file).is_absolute() and (folder / file).is_file():
        return str(folder / file) + colon + rest
    return text


# -- running --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Setup:
    """What a scenario is checked against: the target type, contracts and golden examples."""

    target: Any
    contracts: tuple[Any, ...] = ()
    examples: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A real OpenAI-compatible endpoint (None everywhere means OpenAI's defaults)."""

    base_url: str | None = None
    api_key: str | None = None
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class UnitResult:
    """One scenario under one configuration, one repeat."""

    scenario: str
    kind: str
    config: str
    repeat: int
    passed: bool
    valid: bool  # a value passed schema + contracts (it may still differ from `expected`)
    reason: str | None  # why it did not pass: a Degraded reason, or `wrong_value`
    calls: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    exception: str | None = None  # raised to the caller: must stay None for healjson

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class _Unit:
    """One run to make: a scenario under a configuration, one repeat."""

    scenario: Scenario
    config: EvalConfig
    setup: Setup
    model: str
    repeat: int

    def failed(self, exception: str, latency: float = 0.0) -> UnitResult:
        """The result of a run that raised instead of returning an outcome."""
        return UnitResult(
            self.scenario.id, self.scenario.kind, self.config.name, self.repeat,
            passed=False, valid=False, reason="exception", calls=0, prompt_tokens=0,
            completion_tokens=0, latency_s=latency, exception=exception,
        )  # fmt: skip


async def _call(client: Any, unit: _Unit) -> UnitResult:
    config, setup = unit.config, unit.setup
    start = time.perf_counter()
    try:
        outcome = await client.chat.completions.create(
            model=config.model or unit.model,
            messages=[dict(m) for m in unit.scenario.messages],
            response_model=setup.target,
            contracts=setup.contracts,
            examples=setup.examples,
            policy=config.policy,
            **({"json_mode": config.json_mode} if config.json_mode else {}),
            **config.params,
        )
    except Exception as exc:  # the guarantee under test: counted, never hidden
        return unit.failed(f"{type(exc).__name__}: {exc}", time.perf_counter() - start)
    return _score(unit, outcome, time.perf_counter() - start)


def _same(setup: Setup, value: Any, expected: Any) -> bool:
    adapter = target_for(setup.target).adapter
    try:
        want = adapter.validate_python(expected)
    except ValidationError:
        return False
    if value == want:  # Decimal("120") == Decimal("120.0"), though they dump differently
        return True
    return bool(adapter.dump_python(value, mode="json") == adapter.dump_python(want, mode="json"))


def _strict_value(outcome: Outcome[Any], unit: _Unit) -> tuple[bool, Any, str]:
    """What a plain application gets from the first reply: (valid, value, reason if not)."""
    from healjson._core.check import validate

    first = outcome.attempts[0] if outcome.attempts else None
    raw = first.raw_text if first is not None else None
    if first is None or first.error is not None or raw is None:
        return False, None, str(getattr(outcome, "reason", "api_error"))
    setup = unit.setup
    target = target_for(setup.target)
    text = raw
    envelope = _envelope(setup.target)
    if envelope is not None:  # strict mode asked for {"value": ...} around a list or scalar
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if isinstance(data, dict) and list(data) == [envelope]:
            text = json.dumps(data[envelope])
    try:
        value = target.adapter.validate_json(text)
    except ValidationError:
        return False, None, "invalid_output"
    checked = validate(
        text, setup.target, contracts=setup.contracts, context=list(unit.scenario.messages)
    )
    if not checked.ok:
        return False, None, str(checked.reason)
    return True, value, ""


def _envelope(target: Any) -> str | None:
    """The key strict mode wraps this target's answer in (None: it is not wrapped)."""
    from healjson.adapters._strict_schema import StrictSchemaUnsupported, strict_json_schema

    try:
        return strict_json_schema(target).envelope
    except StrictSchemaUnsupported:
        return None


def _score(unit: _Unit, outcome: Outcome[Any], latency: float) -> UnitResult:
    scenario = unit.scenario
    if unit.config.strict:
        valid, value, reason = _strict_value(outcome, unit)
    else:
        valid = outcome.ok
        value = outcome.value if outcome.ok else None
        reason = "" if outcome.ok else str(getattr(outcome, "reason", ""))
    passed = valid
    if valid and scenario.has_expected and not _same(unit.setup, value, scenario.expected):
        passed, reason = False, "wrong_value"
    return UnitResult(
        scenario=scenario.id,
        kind=scenario.kind,
        config=unit.config.name,
        repeat=unit.repeat,
        passed=passed,
        valid=valid,
        reason=None if passed else reason,
        calls=len(outcome.attempts),
        prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens,
        latency_s=latency,
    )


async def _offline(unit: _Unit) -> UnitResult:
    """One run against a fresh `ScriptedServer` replaying the scenario's replies."""
    import openai

    from healjson._wrap import wrap
    from healjson.testing._server import ScriptedReply, ScriptedServer

    config = unit.config
    calls = 1 if config.strict else config.policy.max_attempts
    script = [
        item if isinstance(item, str) else ScriptedReply(**dict(item))
        for item in unit.scenario.script(calls)
    ]
    with ScriptedServer(script) as server:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="sk-offline", max_retries=0
        ) as raw:
            return await _call(wrap(raw), unit)


async def run_eval(
    scenarios: Sequence[Scenario],
    configs: tuple[EvalConfig, EvalConfig],
    setup_for: Callable[[Scenario], Setup],
    *,
    model: str,
    endpoint: Endpoint | None = None,
    repeat: int = 1,
    concurrency: int = 4,
    json_mode: str = "json_schema",
    on_unit: Callable[[UnitResult], None] | None = None,
) -> EvalReport:
    """Run every scenario `repeat` times under both configurations; return the report.

    Offline (`endpoint` None) each run gets a fresh `ScriptedServer` replaying the scenario's
    replies; otherwise all runs share one `AsyncOpenAI` client for the endpoint, wrapped with
    `json_mode` (the strongest JSON mode it supports; a configuration may override it). The order of
    A and B alternates from pair to pair, so drift on the endpoint hits both alike. A run that
    raises is recorded (reason `exception`), never allowed to stop the others.
    """
    if repeat < 1 or concurrency < 1:
        raise ValueError("repeat and concurrency must be >= 1")
    if configs[0].name == configs[1].name:
        raise ValueError("the two configurations need different names")
    if endpoint is None:
        empty = [s.id for s in scenarios if not s.replies]
        if empty:
            raise ScenarioError(
                f"offline runs need scripted `replies`; missing in: {', '.join(empty[:5])}"
                + (" ..." if len(empty) > 5 else "")
            )
    units = [
        _Unit(scenario, config, setup_for(scenario), model, r)
        for index, scenario in enumerate(scenarios)
        for r in range(repeat)
        for config in (configs if (index + r) % 2 == 0 else configs[::-1])
    ]
    gate = asyncio.Semaphore(concurrency)
    results: list[UnitResult] = []

    async def one(client: Any, unit: _Unit) -> None:
        async with gate:
            try:
                result = await (_offline(unit) if client is None else _call(client, unit))
            except Exception as exc:  # a bad scenario must not cancel the other runs
                result = unit.failed(f"{type(exc).__name__}: {exc}")
        results.append(result)
        if on_unit is not None:
            on_unit(result)

    async def run(client: Any) -> None:
        async with asyncio.TaskGroup() as group:
            for unit in units:
                group.create_task(one(client, unit))

    if endpoint is None:
        await run(None)
    else:
        import openai

        from healjson._wrap import wrap

        options: dict[str, Any] = {"base_url": endpoint.base_url, "api_key": endpoint.api_key}
        if endpoint.timeout is not None:
            options["timeout"] = endpoint.timeout
        async with openai.AsyncOpenAI(**options) as raw:
            await run(wrap(raw, json_mode=json_mode))
    return EvalReport(configs, scenarios, results, offline=endpoint is None, model=model)


# -- the report -----------------------------------------------------------------------------------


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

    @property
    def rate(self) -> float:
        """The pass rate."""
        return self.passed / self.runs if self.runs else 0.0


def _p95(values: Sequence[float]) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


@dataclass(frozen=True)
class EvalReport:
    """Everything one `run_eval` measured, with the statistics derived from it."""

    configs: tuple[EvalConfig, EvalConfig]
    scenarios: Sequence[Scenario]
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
            "tok | latency median | latency p95 | exceptions |",
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|",
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
