"""How long `healjson.testing.check_pack` takes on small packs, in fresh interpreters.

Run from the repository root:

    .venv/bin/python benchmarks/bench_check_pack.py [--baseline REV] [--runs N]

The packs: the three example packs (`support_ticket`, `invoice`, `itinerary`, each with its own
strategies) and the packs a user writes on the first day (defined below, no strategies): four
ordinary rules over a plan with a list of tasks, once with one golden example and once with
none; and once more with one rule that raises on a plan without tasks (a ZeroDivisionError:
the time to the report, and how many problems it lists). Each pack is checked in a new
interpreter (`--one NAME`), as a user calls it, `check_pack(pack)` under hypothesis' default
settings, and with `max_examples=100`; the times are the `check_pack` call's wall time and
CPU time (importing healjson and hypothesis is not in them; CPU time moves less with the load
of a shared machine), the medians over `--runs` runs, and what the call said (passed, or its
problem count).

`--baseline REV` measures that commit too, from its `src/` and `contracts/` extracted into a
temporary directory put first on `PYTHONPATH`, so the table shows before and after on the same
machine and load.

Results are printed and written to `benchmarks/results/check_pack.md`. There is no target
assert here or in the tests; the goal (a small pack checked in under 3 s) is read off the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from _machine import machine, publish, stamp, table

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "check_pack.md"
PACK_NAMES = ("support_ticket", "invoice", "itinerary", "plan", "plan_no_examples", "plan_raising")
GOAL_S = 3.0  # a small pack, as a user checks it
EXAMPLE_COUNTS = (None, 100)  # None: `check_pack(pack)` as a user calls it


# --- the first-day pack: four ordinary rules over a model with a list ------------------------


class Task(BaseModel):
    title: str = Field(min_length=1, max_length=60)
    hours: float = Field(ge=0, le=40)
    due: dt.date | None = None
    done: bool = False


class Plan(BaseModel):
    owner: str
    status: Literal["draft", "active", "closed"]
    tasks: list[Task] = Field(max_length=8)
    budget_hours: int = Field(ge=0, le=200)
    tags: list[str] = []


def _plan_pack(examples: tuple[dict[str, Any], ...], name: str, *, raising: bool = False) -> Any:
    from healjson import ContractPack, Violation, contract

    @contract(fields=("tasks", "budget_hours"))
    def within_budget(plan: Plan) -> Violation | None:
        spent = sum(task.hours for task in plan.tasks)
        over = spent > plan.budget_hours
        return Violation(f"the tasks take {spent} h, over the budget") if over else None

    @contract(fields=("status", "tasks"))
    def active_has_tasks(plan: Plan) -> Violation | None:
        empty = plan.status == "active" and not plan.tasks
        return Violation("an active plan lists a task") if empty else None

    @contract(fields=("tasks",))
    def unique_titles(plan: Plan) -> Violation | None:
        titles = [task.title for task in plan.tasks]
        return Violation("task titles are unique") if len(set(titles)) != len(titles) else None

    @contract(fields=("status", "tasks"))
    def closed_is_done(plan: Plan) -> Violation | None:
        if plan.status == "closed" and any(not task.done for task in plan.tasks):
            return Violation("a closed plan has every task done")
        return None

    @contract(fields=("tasks",))
    def short_tasks_on_average(plan: Plan) -> Violation | None:
        average = sum(task.hours for task in plan.tasks) / len(plan.tasks)  # a plan may have none
        return Violation("tasks take 20 h on average at most") if average > 20 else None

    last = short_tasks_on_average if raising else closed_is_done
    rules = (within_budget, active_has_tasks, unique_titles, last)
    return ContractPack(Plan, rules, examples, name=name)


PLAN_EXAMPLE = {
    "owner": "ana",
    "status": "active",
    "tasks": [{"title": "write", "hours": 3}, {"title": "review", "hours": 1, "due": "2024-05-02"}],
    "budget_hours": 10,
}


def load(name: str) -> Any:
    if name == "plan":
        return _plan_pack((PLAN_EXAMPLE,), "plan")
    if name == "plan_no_examples":
        return _plan_pack((), "plan_no_examples")
    if name == "plan_raising":
        return _plan_pack((PLAN_EXAMPLE,), "plan_raising", raising=True)
    from healjson import load_contracts

    return load_contracts(name)


# --- one measurement, in this process --------------------------------------------------------


def one(name: str, examples: int | None) -> dict[str, Any]:
    """Check one pack once; what it said and how long the call took."""
    from healjson.testing import check_pack

    pack = load(name)
    started, cpu = time.perf_counter(), time.process_time()
    try:
        check_pack(pack, max_examples=examples)
        said = "passed"
    except AssertionError as failure:
        first = str(failure).splitlines()[0]
        said = "failed: " + first.split(") found ", 1)[-1].replace(":", "")
    return {
        "seconds": time.perf_counter() - started,
        "cpu": time.process_time() - cpu,
        "said": said,
    }


# --- the table -------------------------------------------------------------------------------


def measure(
    src: Path | None, name: str, examples: int | None, runs: int
) -> tuple[float, float, str]:
    """(median wall seconds, median CPU seconds, what the last run said) over `runs` fresh
    interpreters."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            [str(src / "src"), str(src / "contracts"), env.get("PYTHONPATH", "")]
        )
    seconds: list[float] = []
    cpu: list[float] = []
    said = ""
    for _ in range(runs):
        command = [sys.executable, __file__, "--one", name]
        if examples is not None:
            command += ["--examples", str(examples)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        seconds.append(result["seconds"])
        cpu.append(result["cpu"])
        said = result["said"]
    return statistics.median(seconds), statistics.median(cpu), said


def baseline_tree(rev: str, where: Path) -> Path:
    """The source tree of commit `rev`, extracted into `where` (`git archive`: no worktree)."""
    tree = where / "baseline"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src", "contracts"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--examples", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--baseline", help="a commit to measure too (before)")
    parser.add_argument("--runs", type=int, default=3, help="fresh interpreters per cell")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.examples)))
        return 0

    started = time.perf_counter()
    lines = [
        "# `check_pack` wall time on small packs",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, hypothesis {version('hypothesis')}, "
        f"pydantic {version('pydantic')}",
        *machine(),
        f"- each cell: the median of {args.runs} fresh interpreters, the `check_pack` call only; "
        "`default` is `check_pack(pack)` under hypothesis' own settings (before: 100 examples "
        "per property, a new seed each run; now: 25, a fixed seed)",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        trees: list[tuple[str, Path | None]] = []
        if args.baseline:
            rev = subprocess.run(
                ["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            trees.append((f"before ({rev})", baseline_tree(args.baseline, Path(tmp))))
        trees.append(("now", None))
        rows: list[list[str]] = []
        slowest: dict[str, tuple[float, float, str]] = {}  # tree -> the slowest `default` cell
        for name in PACK_NAMES:
            for examples in EXAMPLE_COUNTS:
                row = [f"`{name}`", "default" if examples is None else str(examples)]
                for label, tree in trees:
                    seconds, cpu, said = measure(tree, name, examples, args.runs)
                    row += [f"{seconds:.2f} s", f"{cpu:.2f} s", said]
                    if examples is None and seconds > slowest.get(label, (0.0, 0.0, ""))[0]:
                        slowest[label] = (seconds, cpu, name)
                    shown = f"{name} {examples} {label}: {seconds:.2f} s ({cpu:.2f} s CPU), {said}"
                    print(shown, file=sys.stderr)
                rows.append(row)
    header = ["pack", "examples per property"]
    for label, _ in trees:
        header += [f"{label}: wall", f"{label}: CPU", f"{label}: result"]
    lines += ["## Verdict", ""]
    for label, (seconds, cpu, name) in slowest.items():
        met = "met" if seconds < GOAL_S else "**missed**"
        lines.append(
            f"- {label}: the slowest pack as a user calls it (`default`), `{name}`, took "
            f"{seconds:.2f} s ({cpu:.2f} s CPU); goal under {GOAL_S:.0f} s: {met}"
        )
    lines += ["", "## Each pack", ""]
    lines += table(header, rows)
    lines += ["", f"Run time: {time.perf_counter() - started:.0f} s."]
    publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
