"""`healjson batch`'s output and ledger paths, and the rows a stopped run has finished.

- `--out` (and `--ledger`) must be a regular file or a path that does not exist yet: a pipe
  (`/dev/stdout | cat`, a FIFO) or a device (`/dev/null`) is a usage error (exit 2) before any
  model call, in both modes.
- An output another batch is writing is reported against `--out`, not `--ledger`.
- A direct run stopped by a provider error every row would get (HTTP 401) still writes the
  rows that had finished: they were paid for.

The real command line (click's runner, or a subprocess for a real pipe) against
`ScriptedServer` on loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from batch_kit import GOOD, batch_input
from healjson._batch.output_file import OutputFile
from healjson._cli.app import app
from healjson.testing import ScriptedReply, ScriptedServer

MODES = pytest.mark.parametrize(
    "mode", [[], ["--batch-api", "--poll-interval", "0"]], ids=["direct", "batch-api"]
)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """The model and the three rows' input, in the test's folder."""
    return batch_input(tmp_path)


def command(source: Path, out: Path | str, base_url: str, *more: str) -> list[str]:
    args = ["batch", str(source), "--out", str(out), "--model", "m"]
    args += ["--response-model", f"{source.with_name('m.py')}:M", "--base-url", base_url]
    return [*args, "--api-key", "sk-test-key", *more]


def healjson(args: list[str]) -> subprocess.CompletedProcess[str]:
    """`python -m healjson ARGS`, its stdout a pipe, bounded in time (a run that blocks fails)."""
    return subprocess.run(
        [sys.executable, "-m", "healjson", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def usage_error(result: Any) -> str:
    """The usage error's text (exit 2, no traceback), on one line."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    return " ".join(result.stderr.replace("│", " ").split())


@MODES
def test_out_to_a_device_is_a_usage_error_before_any_model_call(
    source: Path, mode: list[str]
) -> None:
    """`--out /dev/null` is refused (exit 2, `is not a regular file`) before any request."""
    with ScriptedServer([GOOD], repeat=True) as server:
        result = CliRunner().invoke(app, command(source, "/dev/null", server.base_url, *mode))
        sent = len(server.requests)

    said = usage_error(result)
    assert "Invalid value for '--out'" in said
    assert "/dev/null is not a regular file" in said
    assert sent == 0


@MODES
def test_out_to_a_fifo_is_a_usage_error_and_never_blocks(
    source: Path, tmp_path: Path, mode: list[str]
) -> None:
    """`--out` naming a FIFO is refused at once (opening it would block the run forever: run in
    a subprocess, bounded in time)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with ScriptedServer([GOOD], repeat=True) as server:
        done = healjson(command(source, fifo, server.base_url, *mode))
        sent = len(server.requests)

    assert done.returncode == 2, done.stderr
    assert f"{fifo} is not a regular file" in " ".join(done.stderr.replace("│", " ").split())
    assert sent == 0


def test_out_to_stdout_through_a_pipe_exits_2_without_hanging(source: Path) -> None:
    """`--out /dev/stdout | cat` (a real pipe, in a subprocess) exits 2 at once, no model call."""
    with ScriptedServer([GOOD], repeat=True) as server:
        done = healjson(command(source, "/dev/stdout", server.base_url))
        sent = len(server.requests)

    assert done.returncode == 2, done.stderr
    assert "is not a regular file" in done.stderr
    assert "Traceback" not in done.stderr
    assert sent == 0


def test_ledger_on_a_device_is_a_usage_error(source: Path, tmp_path: Path) -> None:
    """`--ledger /dev/null` is refused (exit 2) before the provider is called."""
    with ScriptedServer([GOOD], repeat=True) as server:
        args = command(source, tmp_path / "out.jsonl", server.base_url, "--batch-api")
        result = CliRunner().invoke(app, [*args, "--ledger", "/dev/null"])
        sent = len(server.requests)

    said = usage_error(result)
    assert "Invalid value for '--ledger'" in said
    assert "/dev/null is not a regular file" in said
    assert sent == 0


@MODES
def test_an_output_another_batch_writes_names_out(
    source: Path, tmp_path: Path, mode: list[str]
) -> None:
    """An output locked by another healjson batch is reported against `--out`, never
    `--ledger`."""
    out = tmp_path / "out.jsonl"
    holder = OutputFile(out)
    try:
        with ScriptedServer([GOOD], repeat=True) as server:
            result = CliRunner().invoke(app, command(source, out, server.base_url, *mode))
    finally:
        holder.close()

    said = usage_error(result)
    assert "Invalid value for '--out'" in said
    assert "is being written by another healjson batch" in said
    assert "--ledger" not in said


def test_rows_finished_before_a_stop_are_written(source: Path, tmp_path: Path) -> None:
    """A 401 on one row stops a direct batch, but the rows already finishing are written, and the
    re-run sends only the stopped row."""

    def answer(body: dict[str, Any]) -> ScriptedReply:
        if "p1" in json.dumps(body["messages"]):
            return ScriptedReply.error(401, "Incorrect API key provided.", code="invalid_api_key")
        return ScriptedReply(content=GOOD, delay_s=0.5)  # still running when the 401 arrives

    out = tmp_path / "out.jsonl"
    with ScriptedServer([answer], repeat=True) as server:
        stopped = CliRunner().invoke(app, command(source, out, server.base_url, "-j", "3"))
        first = len(server.requests)
    kept = {json.loads(line)["id"] for line in out.read_text().splitlines()}
    with ScriptedServer([GOOD], repeat=True) as server:
        resumed = CliRunner().invoke(app, command(source, out, server.base_url))
        again = len(server.requests)

    assert stopped.exit_code == 1, stopped.output
    assert "batch stopped: the provider answered HTTP 401" in stopped.stderr
    assert first == 3
    assert kept == {"t2", "t3"}
    assert resumed.exit_code == 0, resumed.output
    assert again == 1
    assert len(out.read_text().splitlines()) == 3
