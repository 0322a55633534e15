"""CI and a new contributor run the same command: the README's test command is `.ci/run`'s, in
two lanes (`-m "not slow"`, then `-m slow` with the coverage floor on both), and any failing
step, a lane that collects nothing included, fails it."""

from __future__ import annotations

import os
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from paths import ROOT

PYTEST = ".venv/bin/python -m pytest"


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


def test_the_two_lanes_run_the_whole_suite_and_check_coverage_on_both() -> None:
    """The default lane runs `-m "not slow"` on every core, the slow lane `-m slow` in one
    process appending to its coverage, and only the slow lane, the last step, checks the
    floor."""
    pytest_steps = [step for step in _steps(_readme_test_command()) if step.startswith(PYTEST)]
    assert [f'{PYTEST} -m "not slow" --cov-report=', f"{PYTEST} -m slow -n 0 --cov-append"] == [
        step.split(" --cov-fail-under")[0] for step in pytest_steps
    ]
    assert pytest_steps[-1].endswith("--cov-fail-under=93")
    assert pytest_steps[-1] == _steps(_readme_test_command())[-1]


@pytest.mark.parametrize("failing", [0, 1])
@pytest.mark.parametrize("code", [1, 5])
def test_a_failing_lane_or_one_that_collects_nothing_fails_the_run(
    tmp_path: Path, failing: int, code: int
) -> None:
    """`.ci/run` with its tools stubbed: a lane whose pytest exits 1 (a failing test) or 5 (no
    test collected) ends the run with that code, and a failing first lane skips the second."""
    log = tmp_path / "ran.txt"
    stub = tmp_path / "stub"
    stub.write_text(
        textwrap.dedent(
            f"""\
            #!/usr/bin/env bash
            echo "$*" >> {log}
            case "$*" in
              *"-m pytest"*)
                [ "$(grep -c -- "-m pytest" {log})" -eq {failing + 1} ] && exit {code} ;;
            esac
            exit 0
            """
        )
    )
    stub.chmod(stub.stat().st_mode | stat.S_IEXEC)
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    script = script.replace('cd "$(dirname "$0")/.."', "")
    for tool in (
        "python3",
        ".venv/bin/pip",
        ".venv/bin/ruff",
        ".venv/bin/mypy",
        ".venv/bin/python",
    ):
        script = script.replace(f"{tool} ", f"{stub} ")
    result = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=dict(os.environ), capture_output=True, check=False
    )
    assert code == result.returncode
    lanes = [line for line in log.read_text().splitlines() if "-m pytest" in line]
    assert failing + 1 == len(lanes)  # the second lane runs only after the first passed
