"""`healjson.dbos`: each model call of a healed call is a DBOS step (SQLite system database), so
a workflow killed with SIGKILL and recovered repeats no finished model call and loses no row;
transient provider failures are retried by DBOS, terminal ones and `Degraded` outcomes never."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import healjson
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from paths import TESTS

WORKER = TESTS / "dbos_worker.py"
KILL_AT = 12  # the 12th request is row 9's first repair: its first call had finished


class Script:
    """The scripted model of the 20 rows, by (row, round): valid rows, rows repaired once, a
    refusal, a content filter, a row still invalid after its last attempt, transient HTTP 503 and
    429 answers, a terminal HTTP 400; it kills the worker when request `KILL_AT` arrives."""

    def __init__(self) -> None:
        self.log: list[tuple[int, int, str]] = []  # (row, round, what was answered)
        self.pid: int | None = None
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        messages = body["messages"]
        row = int(messages[0]["content"].split()[-1])
        # a repair holds one assistant turn whatever its round (bounded); from the third
        # round on it lists the earlier attempts
        round_ = 1 + any(m["role"] == "assistant" for m in messages)
        round_ += "Earlier attempts" in str(messages[-1]["content"])
        with self.lock:
            seen = Counter((r, n) for r, n, _ in self.log)[(row, round_)]
            if len(self.log) + 1 == KILL_AT and self.pid is not None:
                os.kill(self.pid, signal.SIGKILL)
                self.log.append((row, round_, "killed"))
                return ScriptedReply(content="{}")
            reply, what = self.reply(row, round_, seen)
            self.log.append((row, round_, what))
        return reply

    @staticmethod
    def reply(row: int, round_: int, seen: int) -> tuple[ScriptedReply, str]:
        valid = ScriptedReply(content=json.dumps({"row": row, "value": row * 10}))
        if row in (3, 11, 9) and (round_ == 1 or row == 9):
            return ScriptedReply(content=json.dumps({"row": row})), "200"  # `value` missing
        if row == 5:
            return ScriptedReply(refusal="I cannot help with that."), "200"
        if row == 7:
            return ScriptedReply(content="", finish_reason="content_filter"), "200"
        if row in (13, 17) and seen == 0:
            return ScriptedReply.error(503, "overloaded"), "503"
        if row == 15 and seen < 2:
            return ScriptedReply.error(429, "slow down"), "429"
        if row == 19:
            return ScriptedReply.error(400, "bad request"), "400"
        return valid, "200"


def _worker(mode: str, database: Path, server: ScriptedServer, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), mode, str(database), server.base_url, str(out)],
        cwd=WORKER.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_workflow_killed_mid_run_resumes_repeating_no_finished_call(tmp_path: Path) -> None:
    """20 rows through a DBOS workflow; SIGKILL while row 9's repair is in flight; a new process
    recovers the workflow: every row is there, each finished model call was made once (the
    killed one, never answered, is made again), transient failures were retried, terminal ones
    never."""
    script = Script()
    database, out = tmp_path / "dbos.sqlite", tmp_path / "result.json"
    with ScriptedServer([script], repeat=True) as server:
        first = _worker("start", database, server, out)
        script.pid = first.pid
        first.communicate(timeout=180)  # reads its pipes to the end, and closes them
        killed = first.returncode
        resumed = _worker("resume", database, server, out)
        _, errors = resumed.communicate(timeout=180)
        assert 0 == resumed.returncode, errors

    assert -signal.SIGKILL == killed
    results = json.loads(out.read_text())
    rows = {row: (ok, reason, value, calls) for row, ok, reason, value, calls in results}
    assert list(range(20)) == sorted(rows)
    answered = Counter((row, round_) for row, round_, what in script.log if what == "200")
    assert all(1 == count for count in answered.values()), answered
    assert [(9, 2)] == [(row, round_) for row, round_, what in script.log if what == "killed"]
    assert 1 == answered[(9, 1)]  # the first call of the row whose repair was in flight
    # terminal: answered once, never retried
    assert (False, "refusal", None, 1) == rows[5]
    assert (False, "content_filter", None, 1) == rows[7]
    assert (False, "max_retries_exceeded", None, 3) == rows[9]
    assert (False, "api_error", None, 1) == rows[19]
    assert 1 == sum(1 for row, _, _ in script.log if row == 19)
    # transient: retried by DBOS until answered
    assert ["503", "200"] == [what for row, _, what in script.log if row == 13]
    assert ["429", "429", "200"] == [what for row, _, what in script.log if row == 15]
    for row in (0, 1, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18):
        assert (True, None, row * 10) == rows[row][:3]
    assert 2 == rows[3][3]


def test_the_extra_is_named_when_dbos_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the `dbos` package, `healed_step` says which extra to install."""
    monkeypatch.setitem(sys.modules, "dbos", None)  # `import dbos` raises ImportError
    from healjson.dbos import healed_step

    with pytest.raises(ImportError, match=r"healjson\[dbos\]"):
        healed_step(healjson.Healer(int), ScriptedModel(["1"]))


class Invoice(BaseModel):
    number: str
    total: int


def test_in_a_workflow_degraded_is_a_value_or_raised_and_calls_are_recorded(
    tmp_path: Path,
) -> None:
    """In one process: a workflow run twice under one id makes its model calls once (the second
    run reads the steps back); `on_degraded="raise"` raises `DegradedError`; a bad option fails
    at once."""
    from dbos import DBOS, SetWorkflowID

    from healjson.dbos import healed_step

    model = ScriptedModel(['{"number": "A"}', '{"number": "A", "total": 3}', "no JSON"])
    healer = healjson.Healer(Invoice)
    strict = healjson.Healer(Invoice, policy=healjson.HealPolicy(max_attempts=1))

    @DBOS.workflow(name="healjson-test-invoice")
    def extract() -> int:
        return int(healed_step(healer, model, "invoice A").value.total)

    @DBOS.workflow(name="healjson-test-raise")
    def refuse() -> str:
        try:
            healed_step(strict, model, "invoice B", on_degraded="raise")
        except healjson.DegradedError as exc:
            return str(exc.outcome.reason)
        return "no error"

    DBOS(
        config={
            "name": "healjson-inline-test",
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "log_level": "ERROR",
        }
    )
    DBOS.launch()
    try:
        started = time.monotonic()
        with SetWorkflowID("invoice-1"):
            first = extract()
        with SetWorkflowID("invoice-1"):
            again = extract()
        with SetWorkflowID("refuse-1"):
            reason = refuse()
        assert time.monotonic() - started < 60
    finally:
        DBOS.destroy()

    assert 3 == first == again
    assert 3 == len(model.calls)  # two for the invoice (once), one for the refusal
    assert "invalid_output" == reason
    with pytest.raises(ValueError, match="on_degraded"):
        healed_step(healer, model, on_degraded="sometimes")


def test_an_async_workflow_records_its_calls_too(tmp_path: Path) -> None:
    """`healed_step_async` in an async workflow: run twice under one id, one set of calls."""
    import asyncio

    from dbos import DBOS, SetWorkflowID

    from healjson.dbos import healed_step_async

    model = ScriptedModel(['{"number": "A"}', '{"number": "A", "total": 5}'])
    healer = healjson.Healer(Invoice)

    async def call(messages: Any, **params: Any) -> Any:
        return model(messages, **params)

    @DBOS.workflow(name="healjson-test-async")
    async def extract() -> int:
        outcome = await healed_step_async(healer, call, "invoice A")
        return int(outcome.value.total)

    async def twice() -> list[int]:
        results = []
        for _ in range(2):
            with SetWorkflowID("async-1"):
                results.append(await extract())
        return results

    DBOS(
        config={
            "name": "healjson-async-test",
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "log_level": "ERROR",
        }
    )
    DBOS.launch()
    try:
        totals = asyncio.run(twice())
    finally:
        DBOS.destroy()

    assert [5, 5] == totals
    assert 2 == len(model.calls)
