"""CI and a new contributor run the same command: the README's test command is `.ci/run`'s, in
three lanes (`-m "not slow"` on the newest SDKs, the SDK floor lane in `.venv-floor`, then
`-m slow` with the coverage floor on all three), and any failing step, a lane that collects
nothing included, fails it."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from paths import ROOT

PYTEST = ".venv/bin/python -m pytest"
FLOOR_PYTEST = ".venv-floor/bin/python -m pytest"
FLOOR_TESTS = ROOT / ".ci" / "floor-tests.txt"


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert 2 == len(block)
    return block[1]


def _steps(command: str) -> list[str]:
    return [step.strip() for step in command.split(" && ")]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """CI and a new contributor run the same checks: the README's second command, linters
    first, is the last line `.ci/run` executes."""
    command = _readme_test_command()
    for check in ("ruff check src", "ruff format --check src", "mypy src contracts tests/typing"):
        assert check in command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert command == ci[-1]
    assert "set -euo pipefail" in ci


def test_the_lanes_run_the_whole_suite_and_check_coverage_on_all() -> None:
    """The default lane runs `-m "not slow"` on every core, the floor lane its list in its own
    venv, the slow lane `-m slow` on two workers, grouped (the tests that share the Ray
    instance on one); the later two append to the first's coverage, and
    only the slow lane, the last step, checks the floor."""
    steps = _steps(_readme_test_command())
    pytest_steps = [step for step in steps if step.startswith((PYTEST, FLOOR_PYTEST))]
    assert [
        f'{PYTEST} -m "not slow" --cov-report=',
        f'{FLOOR_PYTEST} @.ci/floor-tests.txt -m "not slow" --cov-append --cov-report=',
        f"{PYTEST} -m slow -n 2 --dist=loadgroup --cov-append",
    ] == [step.split(" --cov-fail-under")[0] for step in pytest_steps]
    assert pytest_steps[-1].endswith("--cov-fail-under=93")
    assert pytest_steps[-1] == steps[-1]
    # the floor's venv is installed in the background while the linters run, and waited for
    # (its exit status) before the first lane
    assert [
        "python3 -m venv .venv",
        ".venv/bin/pip install -q -e '.[dev]'",
        "python3 -m venv .venv-floor",
        "{ .venv-floor/bin/pip install -q -e '.[dev-floor]' & }",
    ] == steps[:4]
    assert "wait $!" == steps[steps.index(pytest_steps[0]) - 1]


def _floor_entries() -> list[str]:
    return [line.strip() for line in FLOOR_TESTS.read_text().splitlines() if line.strip()]


def test_every_floor_entry_names_a_test_that_exists() -> None:
    """Each line of the floor list is a test folder, module or function of the suite."""
    for entry in _floor_entries():
        path, _, name = entry.partition("::")
        assert (ROOT / path).exists(), entry
        if name:
            name = name.split("[", 1)[0]  # a parametrised case: its function
            assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), entry


def test_every_instructor_test_runs_in_the_floor_lane() -> None:
    """A test that skips without instructor (the default lane has none) is in the floor list:
    its module, a folder above it, or the test itself by name."""
    entries = _floor_entries()
    for module in sorted((ROOT / "tests").rglob("test_*.py")):
        text = module.read_text(encoding="utf-8")
        if module.name == Path(__file__).name or not any(
            mark in text for mark in ('importorskip("instructor"', "needs_instructor")
        ):
            continue
        path = module.relative_to(ROOT).as_posix()
        whole = any(path == e or path.startswith(e.rstrip("/") + "/") for e in entries)
        named = [e.split("::", 1)[1] for e in entries if e.startswith(path + "::")]
        assert whole or named, f"{path} has instructor tests the floor lane does not run"
        if not whole:
            for line in text.splitlines():
                if line.startswith("def test_") and "instructor" in line:
                    assert line[4:].split("(")[0] in named, f"{path}: {line}"


def _stubbed_run(tmp_path: Path, stub_body: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`.ci/run` with every tool it calls replaced by a script of `stub_body` (which may read
    `$LOG`, where each call's arguments are written); the run, and that log."""
    log = tmp_path / "ran.txt"
    stub = tmp_path / "stub"
    stub.write_text(f'#!/usr/bin/env bash\nLOG={log}\necho "$*" >> $LOG\n{stub_body}\nexit 0\n')
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    script = script.replace('cd "$(dirname "$0")/.."', "")
    for tool in (
        "python3",
        ".venv/bin/pip",
        ".venv/bin/ruff",
        ".venv/bin/mypy",
        ".venv/bin/python",
        ".venv-floor/bin/pip",
        ".venv-floor/bin/python",
    ):
        script = script.replace(f"{tool} ", f"{stub} ")
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        check=False,
        text=True,
    )
    return result, log


def test_a_failed_floor_install_in_the_background_fails_the_run(tmp_path: Path) -> None:
    """The floor venv's install runs in the background; when it fails, the run ends with its
    code before any lane runs."""
    result, log = _stubbed_run(tmp_path, 'case "$*" in *dev-floor*) sleep 0.2; exit 7 ;; esac')
    assert 7 == result.returncode
    assert "-m pytest" not in log.read_text()


@pytest.mark.parametrize("failing", [0, 1, 2])
@pytest.mark.parametrize("code", [1, 5])
def test_a_failing_lane_or_one_that_collects_nothing_fails_the_run(
    tmp_path: Path, failing: int, code: int
) -> None:
    """`.ci/run` with its tools stubbed: a lane whose pytest exits 1 (a failing test) or 5 (no
    test collected) ends the run with that code, and a failing lane skips the ones after it."""
    body = (
        'case "$*" in *"-m pytest"*) '
        f'[ "$(grep -c -- "-m pytest" $LOG)" -eq {failing + 1} ] && exit {code} ;; esac'
    )
    result, log = _stubbed_run(tmp_path, body)
    assert code == result.returncode
    lanes = [line for line in log.read_text().splitlines() if "-m pytest" in line]
    assert failing + 1 == len(lanes)  # a lane runs only after the ones before it passed
