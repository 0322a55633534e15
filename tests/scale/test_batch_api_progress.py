"""`healjson batch --batch-api` progress on stderr: round, batches and their provider status,
rows decided by verdict, rows waiting, elapsed and an estimate, refreshed at each poll."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from healjson._cli.api_progress import PLAIN_QUIET_S, ApiProgress, batch_api_progress
from healjson._cli.app import app
from healjson.testing import ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES

FIXTURES = CLI_FIXTURES
sys.path.insert(0, str(FIXTURES))

GOOD = json.dumps(
    {"urgency": 2, "category": "logistics", "summary": "Order late", "orderId": "ORD-000001"}
)
BAD = GOOD.replace('"urgency": 2', '"urgency": 9')


def replies(custom_id: str, body: dict[str, Any]) -> ScriptedReply:
    """Row 0 needs a repair in round 0 (a second round), every other row is valid."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    first = custom_id.endswith("_r0")
    return ScriptedReply(content=BAD if user == "ticket 0" and first else GOOD)


def _run(tmp_path: Path, *more: str, batch_s: float = 0.5, poll_s: float = 0.05) -> Any:
    """Two rounds of 4 rows; each batch in progress `batch_s` seconds, polled every `poll_s`."""
    source = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"t{n}", "prompt": f"ticket {n}"}) for n in range(4)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with ScriptedServer(batch_replies=replies, batch_delay_s=batch_s) as server:
        args = [
            "batch", str(source), "--out", str(tmp_path / "out.jsonl"), "--batch-api",
            "--model", "m", "--response-model", f"{FIXTURES / 'ticket_pack.py'}:Ticket",
            "--base-url", server.base_url, "--api-key", "k", "--poll-interval", str(poll_s),
            *more,
        ]  # fmt: skip
        return CliRunner().invoke(app, args)


def test_batch_api_progress_shows_rounds_batches_counts_and_times(tmp_path: Path) -> None:
    """`--progress` shows each round, each batch and its provider status, the row counts, and the
    elapsed time."""
    result = _run(tmp_path, "--progress")
    assert result.exit_code == 0, result.output
    err = result.stderr
    heads = [line for line in err.splitlines() if line.startswith("healjson batch --batch-api: ")]
    progress = [line for line in heads if "decided" in line]
    assert any(line.startswith("healjson batch --batch-api: round 0;") for line in progress)
    assert any(line.startswith("healjson batch --batch-api: round 1;") for line in progress)
    assert re.search(r"^  round 0: batch \S+ submitted$", err, re.M)
    assert re.search(r"^  round 1: batch \S+ submitted$", err, re.M)
    # the provider's status, as a poll saw it (the batches take 0.5 s: polled in the meantime)
    assert re.search(r"^  round \d: batch \S+ in_progress$", err, re.M)
    assert re.search(r"0/4 row\(s\) decided .*, 4 waiting; \d+:\d\d:\d\d elapsed, ETA unknown", err)
    last = progress[-1]
    assert "4/4 row(s) decided (healed 4, degraded 0, invalid input 0 this run), 0 waiting" in last
    assert re.search(r"elapsed, ETA 0:00:00$", last)
    assert len(progress) < 12  # a line per change, not per poll (there are dozens)
    assert "4 of 4 row(s) done" in err  # the summary still follows


def test_no_progress_and_a_pipe_by_default_show_none(tmp_path: Path) -> None:
    """`--no-progress`, and a pipe by default, show no progress lines, only the summary."""
    for more in (("--no-progress",), ()):
        folder = tmp_path / ("quiet" if more else "default")
        folder.mkdir()
        # a few polls of each batch in progress (what --progress would show) are enough here
        result = _run(folder, *more, batch_s=0.1, poll_s=0.02)
        assert result.exit_code == 0, result.output
        assert "decided" not in result.stderr
        assert "row(s) done" in result.stderr


def test_the_estimate_is_the_rate_rows_were_decided_at() -> None:
    """The time estimate is the rate rows were decided at, and a collected batch leaves the
    display."""
    now = [0.0]
    state = ApiProgress(lambda: now[0])
    state.update("submitted", {"part": 1, "round": 0, "batch_id": "b1"})
    state.update("polled", {"part": 1, "batch_id": "b1", "status": "validating"})
    assert state.update("progress", {"done": 2, "pending": 8, "healed": 0, "degraded": 0})
    assert state.lines()[1:] == ["  round 0: batch b1 validating"]
    now[0] = 30.0
    state.update("progress", {"done": 5, "pending": 5, "healed": 3, "degraded": 0})
    assert state.lines()[0].endswith("0:00:30 elapsed, ETA 0:00:50")  # 3 rows in 30 s, 5 left
    state.update("collected", {"part": 1, "round": 0})
    assert state.lines()[1:] == []
    assert "no batch in flight" in state.lines()[0]


def test_plain_progress_prints_on_change_or_after_a_quiet_spell(capsys: Any) -> None:
    """Plain progress prints a line on a change, or after a quiet spell, never the same line
    twice in a row."""
    now = [0.0]
    with batch_api_progress(True, terminal=False, clock=lambda: now[0]) as on_event:
        assert on_event is not None
        counts = {"done": 0, "pending": 2, "healed": 0, "degraded": 0, "invalid": 0}
        on_event("progress", counts)
        on_event("progress", counts)  # nothing new: silent
        now[0] = PLAIN_QUIET_S + 1
        on_event("progress", counts)  # quiet too long: shown again
        on_event("progress", {**counts, "done": 1, "pending": 1})
        on_event("polled", {"batch_id": "b", "status": "in_progress"})  # shown at the next poll
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3
    assert "0/2 row(s) decided" in lines[0]
    assert "1/2 row(s) decided" in lines[2]


def test_on_a_terminal_a_live_display_shows_the_same(capsys: Any) -> None:
    """On a terminal, a live display shows the same rounds and counts."""
    with batch_api_progress(True, terminal=True) as on_event:
        assert on_event is not None
        on_event("submitted", {"part": 1, "round": 2, "batch_id": "b7"})
        on_event("progress", {"done": 1, "pending": 3, "healed": 1, "degraded": 0})
    err = capsys.readouterr().err
    assert "round 2; 1/4 row(s) decided (healed 1" in err
    assert "round 2: batch b7 submitted" in err
