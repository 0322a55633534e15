"""Run `healjson eval`: every scenario under both configurations, scored as a pass or not.

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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from pydantic import ValidationError

from healjson._core.outcome.outcome import Outcome
from healjson._core.target.target import target_for

from .endpoint import Endpoint
from .eval_config import EvalConfig
from .eval_report import EvalReport
from .loading import Setup
from .scenarios import EvalScenario, ScenarioError

__all__ = ["UnitResult", "run_eval"]


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
    cost: float | None = None  # USD, when the model's prices are known

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class _Unit:
    """One run to make: a scenario under a configuration, one repeat."""

    scenario: EvalScenario
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
    from healjson._core.run.healer import validate

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
    from healjson._providers.openai_strict_schema import StrictSchemaUnsupported, strict_json_schema

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
        cost=outcome.usage.cost,
    )


def _offline_client() -> Any:
    """The `AsyncOpenAI` client every offline run uses a copy of (pointed at its own server):
    one connection pool and one TLS context for all runs, where a client each cost ~50 ms of
    loading CA certificates that a plain-HTTP server on 127.0.0.1 never uses."""
    import openai

    return openai.AsyncOpenAI(base_url="http://127.0.0.1", api_key="sk-offline", max_retries=0)


async def _offline(unit: _Unit, client: Any) -> UnitResult:
    """One run against a fresh `ScriptedServer` replaying the scenario's replies."""
    from healjson._wrap import wrap
    from healjson.testing._server import ScriptedReply, ScriptedServer

    config = unit.config
    calls = 1 if config.strict else config.policy.max_attempts
    script = [
        item if isinstance(item, str) else ScriptedReply(**dict(item))
        for item in unit.scenario.script(calls)
    ]
    with ScriptedServer(script) as server:
        return await _call(wrap(client.with_options(base_url=server.base_url)), unit)


async def run_eval(
    scenarios: Sequence[EvalScenario],
    configs: tuple[EvalConfig, EvalConfig],
    setup_for: Callable[[EvalScenario], Setup],
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
    offline = endpoint is None
    gate = asyncio.Semaphore(concurrency)
    results: list[UnitResult] = []

    async def one(client: Any, unit: _Unit) -> None:
        async with gate:
            try:
                result = await (_offline(unit, client) if offline else _call(client, unit))
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
        async with _offline_client() as raw:
            await run(raw)
    else:
        from healjson._wrap import wrap

        async with endpoint.async_client() as raw:
            await run(wrap(raw, json_mode=json_mode))
    return EvalReport(configs, scenarios, results, offline=endpoint is None, model=model)
