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

pytestmark = pytest.mark.slow  # a real DBOS launched per test (about 2 s each): the slow lane

WORKER = TESTS / "dbos_worker.py"
CACHE_WORKER = TESTS / "dbos_cache_worker.py"
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


def test_a_step_that_fails_on_every_retry_degrades_the_row_not_the_workflow(
    tmp_path: Path,
) -> None:
    """A provider failing on every attempt DBOS makes (HTTP 503; a timeout) degrades that row
    with the last failure's kind and message (`api_error`, `timeout`), the workflow goes on to
    the next row, and running the workflow again under its id makes no call."""
    import openai
    from dbos import SetWorkflowID

    from healjson.dbos import healed_step

    calls: list[str] = []

    def slow(messages: Any, **params: Any) -> Any:
        calls.append("slow")
        raise TimeoutError("the model did not answer in time")

    with ScriptedServer([ScriptedReply.error(503, "overloaded")], repeat=True) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)

        def busy(messages: Any, **params: Any) -> Any:
            calls.append("busy")
            return sdk.chat.completions.create(messages=messages, model="m")

        healer = healjson.Healer(Invoice)
        dbos = _launch(tmp_path, "healjson-retries-test")
        try:

            @dbos.workflow(name="healjson-test-retries")
            def rows() -> list[Any]:
                out = []
                for call in (busy, slow):
                    outcome = healed_step(healer, call, "invoice", retries=2, retry_interval_s=0)
                    out.append(outcome)
                return out

            with SetWorkflowID("retries-1"):
                first = rows()
            made = len(calls)
            with SetWorkflowID("retries-1"):
                again = rows()
        finally:
            dbos.destroy()

    assert ["api_error", "timeout"] == [str(outcome.reason) for outcome in first]
    assert all("still failed after 2 attempts" in o.errors[0].value for o in first)
    assert ["busy", "busy", "slow", "slow"] == calls[:made]
    assert made == len(calls)  # the second run read the recorded steps back
    assert [str(o.reason) for o in first] == [str(o.reason) for o in again]


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


class Row(BaseModel):
    row: str
    value: int


def _launch(tmp_path: Path, name: str) -> Any:
    """DBOS on a SQLite system database in `tmp_path`, launched (the caller destroys it)."""
    from dbos import DBOS

    DBOS(
        config={
            "name": name,
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "log_level": "ERROR",
        }
    )
    DBOS.launch()
    return DBOS


class RowAnswers:
    """The model: row A answers at once; row B never gives its `value` (it degrades after its
    repair). `calls` records each call's row."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, messages: list[dict[str, Any]], **params: Any) -> str:
        row = messages[0]["content"]
        self.calls.append(row)
        return '{"row": "A", "value": 1}' if row == "A" else '{"row": "B"}'


def test_a_recovered_workflow_sees_the_cache_lookups_the_first_run_saw(tmp_path: Path) -> None:
    """Rows A and B through a healer with a response cache: A's answer is stored, B degrades.
    The workflow re-run from its recorded steps (a fork: what a recovery does) gets A's lookup
    back as the miss it was, so B is never handed A's recorded reply; no model call is made
    again."""
    from dbos import SetWorkflowID

    from healjson.dbos import healed_step

    model = RowAnswers()
    policy = healjson.HealPolicy(max_attempts=2)
    healer = healjson.Healer(Row, cache=healjson.ResponseCache.memory(), policy=policy)
    step = healed_step(healer, model, retries=1)

    dbos = _launch(tmp_path, "healjson-cache-fork-test")
    try:

        @dbos.workflow(name="healjson-test-cached-rows")
        def rows() -> list[list[Any]]:
            found = []
            for row in ("A", "B"):
                outcome = step([{"role": "user", "content": row}], model="m")
                value = outcome.value.model_dump() if outcome.ok else str(outcome.reason)
                found.append([row, value, outcome.calls])
            return found

        with SetWorkflowID("cached-rows-1"):
            first = rows()
        calls = len(model.calls)
        again = dbos.fork_workflow("cached-rows-1", 100).get_result()
    finally:
        dbos.destroy()

    assert [["A", {"row": "A", "value": 1}, 1], ["B", "max_retries_exceeded", 2]] == first
    assert first == again
    assert calls == len(model.calls)


def test_healing_row_by_row_with_a_cache_builds_the_step_healer_once(tmp_path: Path) -> None:
    """`healed_step(healer, call, messages)` called for each row of a healer with a response
    cache builds its copy whose lookups are steps once, not per row, sharing the healer's
    golden example: the rules run once per row's answer, never on a new example."""
    from dbos import SetWorkflowID

    from healjson.dbos import healed_step

    judged: list[str] = []

    @healjson.contract(fields=("value",))
    def counted(row: Row) -> None:
        judged.append(row.row)

    model = ScriptedModel([f'{{"row": "{n}", "value": {n}}}' for n in range(3)])
    healer = healjson.Healer(Row, contracts=[counted], cache=healjson.ResponseCache.memory())
    built = len(judged)  # the healer's own example
    dbos = _launch(tmp_path, "healjson-cache-twin-test")
    try:

        @dbos.workflow(name="healjson-test-twin-rows")
        def rows() -> list[bool]:
            return [healed_step(healer, model, f"row {n}").ok for n in range(3)]

        with SetWorkflowID("twin-rows-1"):
            healed = rows()
    finally:
        dbos.destroy()

    assert [True, True, True] == healed
    assert built + 3 == len(judged)  # the copy shares the example: each row's answer only


def test_a_step_that_would_be_handed_another_requests_reply_stops_the_workflow(
    tmp_path: Path,
) -> None:
    """Each step is named for its request: a re-run whose steps shift by one (row A skipped)
    is refused by DBOS's name check, never given row A's recorded reply for row B."""
    from dbos import SetWorkflowID
    from dbos._error import DBOSUnexpectedStepError

    from healjson.dbos import healed_step

    model = ScriptedModel(['{"row": "A", "value": 1}', '{"row": "B", "value": 2}'])
    step = healed_step(healjson.Healer(Row), model, retries=1)
    skip = {"A": False, "B": False}

    dbos = _launch(tmp_path, "healjson-step-names-test")
    try:

        @dbos.workflow(name="healjson-test-named-rows")
        def rows() -> list[Any]:
            wanted = [row for row in ("A", "B") if not skip[row]]
            return [step([{"role": "user", "content": row}]).value.row for row in wanted]

        with SetWorkflowID("named-rows-1"):
            first = rows()
        skip["A"] = True  # the code no longer makes row A's step: B's is at A's position
        with pytest.raises(DBOSUnexpectedStepError, match="healjson call 1"):
            dbos.fork_workflow("named-rows-1", 100).get_result()
    finally:
        dbos.destroy()

    assert ["A", "B"] == first
    assert 2 == len(model.calls)


@pytest.mark.slow
def test_a_workflow_with_a_cache_killed_mid_repair_gives_each_row_its_own_answer(
    tmp_path: Path,
) -> None:
    """A process heals row A (its answer committed to the response cache), then dies while row
    B's repair is in flight; a new process recovers the workflow: A's lookup is read back as
    the miss it was, so B gets its own answer (not A's recorded reply), and only the killed
    call is made again."""
    database, cache, out = tmp_path / "dbos.sqlite", tmp_path / "cache.sqlite", tmp_path / "out"
    results = []
    for mode in ("start", "resume"):
        worker = subprocess.run(
            [sys.executable, str(CACHE_WORKER), mode, str(database), str(cache), str(out)],
            cwd=CACHE_WORKER.parent,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        results.append(worker.returncode)

    assert [9, 0] == results
    rows = json.loads(out.read_text())
    assert [["A", True, {"row": "A", "value": 1}], ["B", True, {"row": "B", "value": 2}]] == rows
    calls = Path(f"{out}.calls").read_text().splitlines()
    assert ["start A first", "start B first", "start B repair", "resume B repair"] == calls


SECRET = "sk-live-0123456789abcdefSECRET"


def test_what_a_step_records_holds_no_secret_and_an_altered_answer_degrades(
    tmp_path: Path, closing: Any
) -> None:
    """A provider error body and a model answer that hold a bearer token: the steps' records
    hold neither (the error's message redacted; the answer recorded redacted), and the answer
    the redaction changed degrades the run with `api_error` rather than heal it; a re-run from
    the records ends the same, with no new call."""
    import openai
    from dbos import SetWorkflowID

    from healjson.dbos import healed_step
    from sdk_calls import TLS

    echoed = f'{{"number": "A", "total": 1, "note": "Authorization: Bearer {SECRET}"}}'
    error = ScriptedReply.error(400, f"invalid header Authorization: Bearer {SECRET}")
    with ScriptedServer([echoed, error]) as server:
        sdk = closing.enter_context(
            openai.OpenAI(
                base_url=server.base_url,
                api_key=SECRET,
                max_retries=0,
                http_client=openai.DefaultHttpxClient(verify=TLS),
            )
        )

        def call(messages: Any, **params: Any) -> Any:
            return sdk.chat.completions.create(messages=messages, **params)

        healer = healjson.Healer(Invoice)
        dbos = _launch(tmp_path, "healjson-secret-steps-test")
        try:

            @dbos.workflow(name="healjson-test-secret-steps")
            def heal() -> list[Any]:
                found = []
                for text in ("invoice A", "invoice B"):
                    outcome = healed_step(healer, call, text, model="m")
                    found.append([outcome.reason, outcome.attempts[-1].error])
                return found

            with SetWorkflowID("secret-steps-1"):
                first = heal()
            again = dbos.fork_workflow("secret-steps-1", 100).get_result()
            steps = dbos.list_workflow_steps("secret-steps-1")
        finally:
            dbos.destroy()
        requests = len(server.requests)

    assert first == again
    assert 2 == requests
    (answered, answer_error), (failed, failure) = first
    assert ("api_error", "api_error") == (answered, failed)
    assert "credential" in answer_error
    assert "invalid header Authorization: [redacted]" in failure
    recorded = repr([(step["function_name"], step["output"], step["error"]) for step in steps])
    assert SECRET not in recorded
    assert "Authorization: [redacted]" in recorded


def test_an_async_workflow_records_its_cache_lookups_too(tmp_path: Path) -> None:
    """`healed_step_async` with a response cache: a re-run from the records (a fork) sees the
    first run's lookups, so each row keeps its own outcome and no call is made again."""
    import asyncio

    from dbos import SetWorkflowID

    from healjson.dbos import healed_step_async

    model = RowAnswers()
    policy = healjson.HealPolicy(max_attempts=2)
    healer = healjson.Healer(Row, cache=healjson.ResponseCache.memory(), policy=policy)

    async def call(messages: Any, **params: Any) -> Any:
        return model(messages, **params)

    dbos = _launch(tmp_path, "healjson-async-cache-test")
    try:

        @dbos.workflow(name="healjson-test-async-cached-rows")
        async def rows() -> list[list[Any]]:
            found = []
            for row in ("A", "B"):
                outcome = await healed_step_async(healer, call, row, model="m")
                value = outcome.value.model_dump() if outcome.ok else str(outcome.reason)
                found.append([row, value, outcome.calls])
            return found

        async def first_run() -> list[list[Any]]:
            with SetWorkflowID("async-cached-rows-1"):
                return await rows()

        first = asyncio.run(first_run())
        calls = len(model.calls)
        again = dbos.fork_workflow("async-cached-rows-1", 100).get_result()
    finally:
        dbos.destroy()

    assert [["A", {"row": "A", "value": 1}, 1], ["B", "max_retries_exceeded", 2]] == first
    assert first == again
    assert calls == len(model.calls)
