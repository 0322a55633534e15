"""`healjson eval`: two configurations on the same scenarios, compared the way a sceptic would.

Every scenario runs under configuration A and under configuration B (and `repeat` times each),
so each (scenario, repeat) is a *pair*. The configurations come from `eval_config`, the
scenarios from a scenario file (`scenario_file`) or the built-in set (`scenarios`); `eval_run`
runs and scores them and `eval_report` gives the pass rates with Wilson 95% intervals, the
paired 2x2 table and the exact McNemar p-value, plus model calls, tokens and latency.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .endpoint import endpoint_from_options, import_openai
from .loading import Setup, load_pack, load_target
from .options import (
    JsonModeChoice,
    api_key_option,
    base_url_option,
    concurrency_option,
    contracts_option,
    endpoint_model_option,
    json_mode_option,
    live_option,
    progress_option,
    response_model_option,
    timeout_option,
)
from .progress import eval_progress

if TYPE_CHECKING:
    from healjson._packs import ContractPack

    from .scenarios import EvalScenario

__all__ = ["eval_command"]


def eval_command(
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
    contracts: Annotated[str | None, contracts_option("The pack for rows that name none.")] = None,
    response_model: Annotated[
        str | None,
        response_model_option("The target type for rows that name none (default: the pack's)."),
    ] = None,
    model: Annotated[str, endpoint_model_option()] = "gpt-4o-mini",
    live: Annotated[
        bool,
        live_option("Send the scenarios to a real endpoint (OPENAI_BASE_URL, or OpenAI's)."),
    ] = False,
    base_url: Annotated[
        str | None, base_url_option("OpenAI-compatible endpoint (implies --live).")
    ] = None,
    api_key: Annotated[
        str | None, api_key_option("API key for --live (default: OPENAI_API_KEY).")
    ] = None,
    timeout: Annotated[float | None, timeout_option()] = None,
    json_mode: Annotated[
        JsonModeChoice,
        json_mode_option("Strongest JSON mode the endpoint supports (--live)."),
    ] = JsonModeChoice.JSON_SCHEMA,
    repeat: Annotated[
        int, typer.Option("--repeat", "-n", min=1, help="Runs of every scenario per configuration.")
    ] = 1,
    concurrency: Annotated[
        int | None,
        concurrency_option(
            "Requests in flight at once (default: 1 offline, so latencies are comparable; 4 live)."
        ),
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json", dir_okay=False, help="Also write the whole report (every run) here."
        ),
    ] = None,
    progress: Annotated[bool | None, progress_option()] = None,
) -> None:
    """Compare two configurations on the same scenarios: pass rates with Wilson 95% intervals,
    the paired 2x2 table and an exact McNemar p-value, plus calls, tokens and latency.

    Offline by default: each scenario's scripted `replies` are served on 127.0.0.1 (no network,
    no API key). --live or --base-url sends the scenarios' messages to a real model.
    Exit code 0 when the comparison ran, 2 on usage errors.
    """
    from .eval_config import parse_config
    from .eval_run import run_eval
    from .scenario_file import load_scenarios
    from .scenarios import ScenarioError

    try:
        configs = (parse_config(a), parse_config(b))
    except ScenarioError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--a' / '--b'") from exc
    if configs[0].name == configs[1].name:
        configs = (configs[0], dataclasses.replace(configs[1], name=f"{configs[1].name}-b"))
    if scenarios_path is None:
        if contracts is not None or response_model is not None:
            raise typer.BadParameter(
                "they are for the rows of a scenario file that name none: the built-in "
                "scripted set brings its own pack and target",
                param_hint="'--contracts' / '--response-model'",
            )
        scenarios, setup_for = _builtin_eval()
    else:
        try:
            scenarios = load_scenarios(scenarios_path)
        except ScenarioError as exc:
            raise typer.BadParameter(str(exc), param_hint="SCENARIOS.jsonl") from exc
        setup_for = _eval_setups(scenarios, contracts, response_model)
    endpoint = None
    if live or base_url is not None:
        endpoint = endpoint_from_options(base_url, api_key, timeout)
    else:
        import_openai()  # the scripted server is driven through the real openai SDK
    runs = len(scenarios) * repeat * 2
    show = sys.stderr.isatty() if progress is None else progress
    if not show:
        typer.echo(f"healjson eval: {runs} run(s) ...", err=True)
    try:
        with eval_progress(show, runs, configs) as on_unit:
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
        text = json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
        json_out.write_text(text + "\n", encoding="utf-8")
        typer.echo(f"report written to {json_out}", err=True)


def _builtin_eval() -> tuple[list[EvalScenario], Callable[[EvalScenario], Setup]]:
    """The built-in scripted set, all checked against the demo's ticket and contract."""
    from .scenarios import builtin_scenarios

    scenarios, target, rules = builtin_scenarios()
    setup = Setup(target, tuple(rules))
    return scenarios, lambda _scenario: setup


def _eval_setups(
    scenarios: Sequence[EvalScenario], contracts: str | None, response_model: str | None
) -> Callable[[EvalScenario], Setup]:
    """Resolve every row's pack and target up front, so a bad one is a usage error (and so is
    an option no row uses: every row names its own)."""
    for option, given, named in (
        ("'--contracts'", contracts, [row.contracts for row in scenarios]),
        ("'--response-model'", response_model, [row.response_model for row in scenarios]),
    ):
        if given is not None and all(name is not None for name in named):
            raise typer.BadParameter(
                "no row uses it: every row of the scenario file names its own", param_hint=option
            )
    packs: dict[str | None, ContractPack | None] = {}
    setups: dict[str, Setup] = {}
    for scenario in scenarios:
        spec = scenario.contracts or contracts
        if spec not in packs:
            packs[spec] = load_pack(spec)
        pack = packs[spec]
        option = "'--response-model'" if scenario.response_model is None else f"row {scenario.id}"
        target = load_target(scenario.response_model or response_model, pack, option=option)
        setups[scenario.id] = Setup.of(target, pack)
    return lambda scenario: setups[scenario.id]
