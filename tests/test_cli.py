"""The command line: the offline demo runs and shows every layer."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from healjson._cli import app
from healjson._demo import run_demo


def test_demo_outcomes_cover_the_four_layers() -> None:
    """The demo heals locally in one call, repairs Case #7 and a truncation in two, and degrades."""
    outcomes = [outcome for _, outcome in run_demo()]
    assert [True, True, True, False] == [o.ok for o in outcomes]
    assert [1, 2, 2, 3] == [o.calls for o in outcomes]
    assert "max_retries_exceeded" == outcomes[3].reason  # type: ignore[union-attr]


def test_demo_command_prints_traces_in_process() -> None:
    """`healjson demo` exits 0 and prints the repair prompt and the degradation reason."""
    result = CliRunner().invoke(app, ["demo"])
    assert 0 == result.exit_code
    assert "Repair prompt sent" in result.output
    assert "max_retries_exceeded" in result.output
    assert "code_fence" in result.output


def test_demo_runs_as_a_subprocess_offline() -> None:
    """`python -m healjson demo` works as a real process."""
    done = subprocess.run(
        [sys.executable, "-m", "healjson", "demo"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 0 == done.returncode
    assert "Case #7" in done.stdout
