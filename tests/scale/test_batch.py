"""`healjson batch` and `healjson trace`: many prompts against a ScriptedServer on 127.0.0.1.

The server answers from the request (a callable item), so each row's value can be checked
against its id whatever order the concurrent requests arrive in: prompt `ticket N` gets order id
`ORD-00000N`, and every tenth ticket first gets a summary that breaks the pack's cross-field
contract, so it heals on the second call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import healjson
from healjson import Healed
from healjson._batch.input_file import read_jobs
from healjson._batch.output_file import recover_output
from healjson._batch.rows import BatchError, Job
from healjson._batch.run import Batch
from healjson._cli.app import app
from healjson.testing import ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES

FIXTURES = CLI_FIXTURES
PACK = str(FIXTURES / "ticket_pack.py")
TICKET = f"{PACK}:Ticket"


class Endpoint:
    """Answers `ticket N` with ticket ORD-00000N; counts calls and the most requests in flight."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            messages = body["messages"]
            first_user = next(m["content"] for m in messages if m["role"] == "user")
            number = int(re.search(r"ticket (\d+)", first_user).group(1))  # type: ignore[union-attr]
            repairing = any(m["role"] == "assistant" for m in messages)
            summary = "Late!" if number % 10 == 0 and not repairing else "Order stuck in transit"
            ticket = {
                "urgency": 5,
                "category": "logistics",
                "summary": summary,
                "orderId": f"ORD-{number:06d}",
            }
            return ScriptedReply(content=json.dumps(ticket))
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.fixture
def endpoint() -> Iterator[tuple[Endpoint, ScriptedServer]]:
    """A ScriptedServer whose every reply comes from an `Endpoint`."""
    answer = Endpoint(delay_s=0.005)
    with ScriptedServer([answer], repeat=True) as server:
        yield answer, server


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests pass the endpoint explicitly; inherited OPENAI_* variables must not leak in."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def write_input(path: Path, numbers: Iterable[int], extra: Sequence[str] = ()) -> Path:
    """An input file with one `ticket N` prompt per number (ids `tN`), then `extra` raw lines."""
    lines = [json.dumps({"id": f"t{n}", "prompt": f"Open ticket {n}."}) for n in numbers]
    path.write_text("\n".join([*lines, *extra]) + "\n", encoding="utf-8")
    return path


def run_batch(server: ScriptedServer, source: Path, out: Path, *more: str) -> Any:
    """`healjson batch` in-process against `server`."""
    args = ["batch", str(source), "--out", str(out), "--model", "m", "--contracts", PACK]
    args += ["--base-url", server.base_url, "--api-key", "test", *more]
    return CliRunner().invoke(app, args)


def rows(out: Path) -> list[dict[str, Any]]:
    """Every line of an output file, parsed (fails on a line that is not JSON)."""
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def assert_one_row_per_id(out: Path, expected_ids: set[Any]) -> list[dict[str, Any]]:
    """Exactly one parseable line per expected id, and each healed value matches its id."""
    found = rows(out)
    ids = [row["id"] for row in found]
    assert len(ids) == len(set(ids)), "duplicate ids in the output"
    assert expected_ids == set(ids)
    for row in found:
        if row["ok"]:
            assert f"ORD-{int(str(row['id'])[1:]):06d}" == row["value"]["orderId"]
    return found


# ---------------------------------------------------------------------------------------------
# batch end to end (in-process)
# ---------------------------------------------------------------------------------------------


def test_batch_200_rows_at_concurrency_16_writes_200_unique_rows(
    tmp_path: Path, endpoint: tuple[Endpoint, ScriptedServer]
) -> None:
    """200 prompts at concurrency 16: 200 rows, one per id, repairs counted, <= 16 in flight."""
    answer, server = endpoint
    source = write_input(tmp_path / "in.jsonl", range(1, 201))
    out = tmp_path / "out.jsonl"

    result = run_batch(server, source, out, "--concurrency", "16")

    assert 0 == result.exit_code, result.output
    found = assert_one_row_per_id(out, {f"t{n}" for n in range(1, 201)})
    assert all(row["ok"] for row in found)
    assert {1: 180, 2: 20} == {n: sum(r["attempts"] == n for r in found) for n in (1, 2)}
    assert 220 == answer.calls
    assert 1 < answer.max_in_flight <= 16
    assert {"id", "ok", "value", "attempts", "usage"} == set(found[0])
    assert "wrote 200 of 200 row(s)" in result.stderr
    assert "healed 200, degraded 0, invalid input 0); 220 call(s)" in result.stderr


def test_batch_malformed_lines_become_error_rows_and_duplicates_run_once(
    tmp_path: Path, endpoint: tuple[Endpoint, ScriptedServer]
) -> None:
    """Unreadable lines get `invalid_input` rows (id `#line-N`); a repeated id runs once."""
    answer, server = endpoint
    extra = [
        "{not json",
        json.dumps({"id": "t1", "prompt": "Open ticket 1 again."}),
        json.dumps({"id": "no-prompt"}),
        "",
        json.dumps({"messages": [{"role": "user", "content": "Open ticket 7."}]}),
    ]
    source = write_input(tmp_path / "in.jsonl", [1, 2], extra)
    out = tmp_path / "out.jsonl"

    result = run_batch(server, source, out)

    assert 0 == result.exit_code, result.output
    by_id = {row["id"]: row for row in rows(out)}
    assert {"t1", "t2", "#line-3", "no-prompt", 7} == set(by_id)
    assert "invalid_input" == by_id["#line-3"]["reason"]
    assert 3 == by_id["#line-3"]["errors"][0]["line"]
    assert "not valid JSON" in by_id["#line-3"]["errors"][0]["constraint"]
    assert "invalid_input" == by_id["no-prompt"]["reason"]
    assert by_id[7]["ok"] is True  # `messages` input; the id defaults to the line number
    assert 3 == answer.calls
    assert "1 line(s) repeated an earlier id" in result.stderr


def test_batch_resume_skips_ids_already_written(
    tmp_path: Path, endpoint: tuple[Endpoint, ScriptedServer]
) -> None:
    """A re-run on a longer input only calls the model for the ids OUT does not have yet."""
    answer, server = endpoint
    out = tmp_path / "out.jsonl"
    first = run_batch(server, write_input(tmp_path / "a.jsonl", range(1, 21)), out)
    calls_before = answer.calls

    second = run_batch(server, write_input(tmp_path / "b.jsonl", range(1, 41)), out)

    assert (0, 0) == (first.exit_code, second.exit_code)
    assert_one_row_per_id(out, {f"t{n}" for n in range(1, 41)})
    assert 22 == answer.calls - calls_before  # ids 21-40, two of them repaired
    assert "skipped 20 line(s) whose id" in second.stderr


def test_a_finished_batch_reruns_without_an_endpoint_or_a_key(
    tmp_path: Path, endpoint: tuple[Endpoint, ScriptedServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every id already in OUT: the re-run reports and exits, sending nothing (no key needed)."""
    answer, server = endpoint
    out = tmp_path / "out.jsonl"
    source = write_input(tmp_path / "in.jsonl", range(1, 6))
    assert 0 == run_batch(server, source, out).exit_code
    calls = answer.calls
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = ["batch", str(source), "--out", str(out), "--model", "m", "--contracts", PACK]
    again = CliRunner().invoke(app, args)  # no --base-url, no --api-key
    assert 0 == again.exit_code, again.output
    assert "wrote 0 of 0 row(s)" in again.stderr
    assert "skipped 5 line(s) whose id" in again.stderr
    assert calls == answer.calls


def test_batch_overwrites_a_torn_last_line(
    tmp_path: Path, endpoint: tuple[Endpoint, ScriptedServer]
) -> None:
    """A half-written last row (a killed run) is cut off and its id processed again."""
    _, server = endpoint
    out = tmp_path / "out.jsonl"
    source = write_input(tmp_path / "in.jsonl", range(1, 6))
    assert 0 == run_batch(server, source, out).exit_code
    whole = out.read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join(whole[:-1]) + "\n" + whole[-1][:25], encoding="utf-8")

    result = run_batch(server, source, out)

    assert 0 == result.exit_code, result.output
    assert_one_row_per_id(out, {f"t{n}" for n in range(1, 6)})
    assert "dropped a half-written last line" in result.stderr
    assert "wrote 1 of 1 row(s)" in result.stderr


def test_batch_full_rows_render_with_trace(
    tmp_path: Path, endpoint: tuple[Endpoint, ScriptedServer]
) -> None:
    """`batch --full` stores outcomes that `trace --id` renders as the Markdown self-healing log."""
    _, server = endpoint
    out = tmp_path / "out.jsonl"
    source = write_input(tmp_path / "in.jsonl", [9, 10], ["{broken"])
    assert 0 == run_batch(server, source, out, "--full", "--progress").exit_code
    stored = {row["id"]: row for row in rows(out)}
    rebuilt = healjson.outcome_from_dict(stored["t10"]["outcome"])
    assert isinstance(rebuilt, Healed)
    assert 2 == rebuilt.calls

    one = CliRunner().invoke(app, ["trace", str(out), "--id", "t10"])
    every = CliRunner().invoke(app, ["trace", str(out), "--all"])
    missing = CliRunner().invoke(app, ["trace", str(out), "--id", "t99"])

    assert 0 == one.exit_code
    assert one.stdout.startswith("### id t10\n")
    assert "**Healed** in 2 rounds of 3 allowed (1 repair)" in one.stdout
    assert "Repair prompt sent:" in one.stdout
    assert "### id t9" not in one.stdout
    assert "### id t9" in every.stdout
    assert "- id #line-3: degraded (`invalid_input`) after 0 call(s)" in every.stdout
    assert 1 == missing.exit_code


def test_trace_summarises_rows_without_a_stored_outcome(tmp_path: Path) -> None:
    """Rows written without --full get one summary line each; junk lines are skipped."""
    out = tmp_path / "out.jsonl"
    healed = {"id": "a", "ok": True, "value": {}, "attempts": 1, "usage": {"total_tokens": 9}}
    degraded = {
        "id": 2,
        "ok": False,
        "reason": "max_retries_exceeded",
        "errors": [{"path": "urgency", "constraint": "must be <= 5"}],
        "attempts": 3,
        "usage": {"total_tokens": 30},
    }
    broken = {"id": "b", "ok": True, "outcome": {"ok": True, "attempts": "x"}}
    lines = [json.dumps(healed), "junk", json.dumps(degraded), json.dumps(broken)]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = CliRunner().invoke(app, ["trace", str(out), "--all"])

    assert 0 == result.exit_code
    assert "- id a: healed in 1 call(s), 9 token(s)" in result.stdout
    assert "- id 2: degraded (`max_retries_exceeded`) after 3 call(s), 30 token(s): " in (
        result.stdout
    )
    assert "stored outcome unreadable" in result.stdout
    assert "not a JSON line, skipped" in result.stderr


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["--response-model", "no_such_module_xyz:M"], "no_such_module_xyz"),
        (["--contracts", "no_such_pack_xyz"], "could not load contract pack"),
        (["--concurrency", "0"], "--concurrency"),
        (["--no-key"], "OPENAI_API_KEY"),
        (["--no-model"], "name the target type"),
    ],
    ids=["bad-response-model", "bad-pack", "bad-concurrency", "no-api-key", "no-model"],
)
def test_batch_usage_errors_exit_2(tmp_path: Path, args: list[str], hint: str) -> None:
    """Bad specs, options or a missing API key exit 2 before anything is written."""
    source = write_input(tmp_path / "in.jsonl", [1])
    out = tmp_path / "out.jsonl"
    base = ["batch", str(source), "--out", str(out), "--model", "m"]
    if "--no-model" not in args:
        base += ["--response-model", TICKET]
    if "--no-key" not in args:
        base += ["--api-key", "test"]
    options = [a for a in args if a not in ("--no-key", "--no-model")]
    result = CliRunner().invoke(app, [*base, *options, "--base-url", "http://127.0.0.1:9/v1"])
    assert 2 == result.exit_code
    assert hint in " ".join(result.stderr.replace("│", " ").split())
    assert not out.exists() or "" == out.read_text()


def test_batch_missing_input_exits_2(tmp_path: Path) -> None:
    """A missing INPUT.jsonl is a usage error."""
    args = ["batch", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.jsonl")]
    result = CliRunner().invoke(app, [*args, "--model", "m", "--response-model", TICKET])
    assert 2 == result.exit_code


@pytest.mark.parametrize("mode", [[], ["--batch-api"]], ids=["direct", "batch-api"])
@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
def test_out_naming_the_input_file_is_a_usage_error(
    tmp_path: Path, spelling: str, mode: list[str]
) -> None:
    """`--out` that is the input file (same path, another spelling, a symlink or a hard link
    to it) exits 2 naming it, with the input left as it was."""
    source = write_input(tmp_path / "in.jsonl", [1], extra=['{"prompt": "no id line"}'])
    before = source.read_bytes()
    (tmp_path / "sub").mkdir()
    out = {"same": source, "dotted": tmp_path / "sub" / ".." / "in.jsonl"}.get(spelling)
    if out is None:
        out = tmp_path / "alias.jsonl"
        link = out.symlink_to if spelling == "symlink" else out.hardlink_to
        link(source)
    args = ["batch", str(source), "--out", str(out), "--model", "m", "--contracts", PACK]
    result = CliRunner().invoke(
        app, [*args, "--api-key", "k", "--base-url", "http://127.0.0.1:9/v1", *mode]
    )
    assert 2 == result.exit_code, result.output
    assert "is the input file itself" in " ".join(result.stderr.replace("│", " ").split())
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert before == source.read_bytes()
    assert not list(tmp_path.glob("*.sqlite"))


# ---------------------------------------------------------------------------------------------
# the kill test: SIGKILL a real batch process mid-run, re-run, nothing lost or doubled
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_killed_batch_resumes_with_one_row_per_id(tmp_path: Path, zygote: Any) -> None:
    """After SIGKILL mid-run and a re-run, OUT holds exactly one parseable row per input id.
    The victim is a real `healjson batch` process: a child forked from the session's warm
    process (`zygote`), killed from outside once 20 rows are written."""
    source = write_input(tmp_path / "in.jsonl", range(1, 201))
    out = tmp_path / "out.jsonl"
    answer = Endpoint(delay_s=0.02)  # the victim is still running when 20 rows are written
    with ScriptedServer([answer], repeat=True) as server:
        args = ["batch", str(source), "--out", str(out), "--model", "m"]
        args += ["--response-model", TICKET, "--concurrency", "4"]
        args += ["--base-url", server.base_url, "--api-key", "test", "--no-progress"]
        victim = zygote.start("victims:batch_command", tmp_path / "stderr.txt", args=args)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if out.exists() and out.read_bytes().count(b"\n") >= 20:
                    break
                time.sleep(0.005)
        finally:
            with contextlib.suppress(ProcessLookupError):  # ended already: the check says so
                victim.kill()
            ended = victim.wait()
        assert {"signal": signal.SIGKILL, "code": None} == ended, victim.errors()
        written_before = out.read_bytes().count(b"\n")
        assert 20 <= written_before < 200

        answer.delay_s = 0.0  # nothing to catch in the re-run: no need to slow it down
        rerun = CliRunner().invoke(app, args)

    assert 0 == rerun.exit_code, rerun.stderr
    found = assert_one_row_per_id(out, {f"t{n}" for n in range(1, 201)})
    assert 200 == len(found)
    rest = 200 - written_before  # rows in flight (or torn) when killed are done again
    assert f"wrote {rest} of {rest} row(s)" in rerun.stderr
    assert f"skipped {written_before} line(s)" in rerun.stderr


# ---------------------------------------------------------------------------------------------
# the pieces: input reading, output recovery, the runner
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"[1, 2]", "not a JSON object"),
        (b'{"id": true, "prompt": "x"}', "`id` must be a string or an integer"),
        (b'{"id": 1.5, "prompt": "x"}', "`id` must be a string or an integer"),
        (b'{"id": 3}', "neither `messages`"),
        (b'{"prompt": "x", "messages": []}', "`messages` must be a non-empty list"),
        (b'{"prompt": "x", "system": 5}', "`system` must be a non-empty string"),
        (b'{"prompt": "x", "max_tokens": 0}', "`max_tokens` must be a positive integer"),
        (b'{"prompt": "x", "temperature": "hot"}', "`temperature` must be a number"),
        (b'{"messages": [{"role": "user", "content": 5}]}', "must be a string or a list of parts"),
        (b'{"prompt": "  "}', "`prompt` must be a non-empty string"),
        (b'{"messages": [{"content": "x"}]}', "`messages[0]` must be an object with a `role`"),
        (b'{"prompt": "caf\xe9"}', "not UTF-8"),
    ],
)
def test_unreadable_input_lines_carry_a_problem(tmp_path: Path, line: bytes, problem: str) -> None:
    """Each kind of bad input line becomes a job with a problem, never an exception."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'\xef\xbb\xbf{"prompt": "first"}\n' + line + b"\n")
    first, second = read_jobs(source)
    assert (1, None) == (first.id, first.problem)
    assert (2, second.assigned) == (second.line, second.id == "#line-2")  # or the default id 2
    assert problem in (second.problem or "")


@pytest.mark.parametrize(
    ("content", "ids", "keep", "torn", "newline", "unreadable"),
    [
        (b"", set(), 0, False, False, 0),
        (b'{"id": 1}\n{"id": 2}\n', {"1", "2"}, 20, False, False, 0),
        (b'{"id": 1}\n{"id": 2', {"1"}, 10, True, False, 0),
        (b'{"id": 1}\n{"id": 2}', {"1", "2"}, 19, False, True, 0),
        (b'{"id": 1}\n\n', {"1"}, 11, False, False, 0),
        (b'{"id": 1}\njunk\n{"id": "x"}\n', {"1", '"x"'}, 27, False, False, 1),
    ],
    ids=["empty", "whole", "torn", "no-final-newline", "blank-tail", "junk-in-the-middle"],
)
def test_recover_output_finds_ids_and_a_torn_tail(
    tmp_path: Path,
    content: bytes,
    ids: set[str],
    keep: int,
    torn: bool,
    newline: bool,
    unreadable: int,
) -> None:
    """Whole rows count as done; only an unreadable *last* line is marked to be cut off."""
    out = tmp_path / "out.jsonl"
    out.write_bytes(content)
    found = recover_output(out)
    assert ids == set(found.keys)
    assert (keep, torn, newline, unreadable) == (
        found.keep_bytes,
        found.torn,
        found.needs_newline,
        found.unreadable,
    )


def test_batch_output_is_locked_while_a_run_holds_it(tmp_path: Path) -> None:
    """A second batch on the same OUT is refused while the first holds it."""
    source = write_input(tmp_path / "in.jsonl", [1])
    out = tmp_path / "out.jsonl"
    with Batch.open(source, out), pytest.raises(BatchError, match="another healjson batch"):
        Batch.open(source, out)
    Batch.open(source, out).close()  # released


def test_unexpected_heal_failure_writes_no_row_and_reports_it(tmp_path: Path) -> None:
    """A job that raises gets no row (a re-run retries it) and the run reports it incomplete."""
    source = write_input(tmp_path / "in.jsonl", [1, 2, 3])
    out = tmp_path / "out.jsonl"

    async def heal(job: Job) -> Any:
        if job.id == "t2":
            raise RuntimeError("boom")
        return healjson.validate("nope", dict)

    with Batch.open(source, out) as batch:
        stats = asyncio.run(batch.run(heal, concurrency=2))
    assert (3, 2, 1, False) == (stats.total, stats.written, stats.failed, stats.complete)
    assert "id 't2': RuntimeError: boom" == stats.first_failure
    assert {"t1", "t3"} == {row["id"] for row in rows(out)}


def test_rows_with_lone_surrogates_are_still_written(tmp_path: Path) -> None:
    """Text no UTF-8 can encode (a lone surrogate from an endpoint) is written escaped."""
    source = write_input(tmp_path / "in.jsonl", [1])
    out = tmp_path / "out.jsonl"

    async def heal(job: Job) -> Any:
        return healjson.validate("\ud800 no json", dict)

    with Batch.open(source, out) as batch:
        assert asyncio.run(batch.run(heal)).complete
    assert "\ud800 no json" == rows(out)[0]["raw_text"]


def test_retry_failed_runs_endpoint_failures_again_and_keeps_one_row_per_id(
    tmp_path: Path,
) -> None:
    """Rows the endpoint failed (HTTP 500 here) run again with --retry-failed; healed rows and
    rows degraded for other reasons are kept as they are, and every id still has one row."""
    source = write_input(tmp_path / "in.jsonl", [1, 2, 3])
    out = tmp_path / "out.jsonl"
    calls: list[int] = []

    def flaky(body: dict[str, Any]) -> ScriptedReply:
        first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        number = int(re.search(r"ticket (\d+)", first_user).group(1))  # type: ignore[union-attr]
        calls.append(number)
        if number == 2 and calls.count(2) == 1:
            return ScriptedReply.error(500, "upstream down", headers={"x-should-retry": "false"})
        if number == 3:
            return ScriptedReply(content="no JSON at all")  # degraded, not an endpoint failure
        ticket = {"urgency": 3, "category": "logistics", "summary": "Order stuck in transit",
                  "orderId": f"ORD-{number:06d}"}  # fmt: skip
        return ScriptedReply(content=json.dumps(ticket))

    with ScriptedServer([flaky], repeat=True) as server:
        first = run_batch(server, source, out, "--max-attempts", "1")
        by_id = {row["id"]: row for row in rows(out)}
        assert (True, "api_error", "invalid_output") == (
            by_id["t1"]["ok"],
            by_id["t2"]["reason"],
            by_id["t3"]["reason"],
        )
        plain_rerun = run_batch(server, source, out, "--max-attempts", "1")
        assert "wrote 0 of 0 row(s)" in plain_rerun.stderr  # failures count as done without it
        retried = run_batch(server, source, out, "--max-attempts", "1", "--retry-failed")

    assert (0, 0, 0) == (first.exit_code, plain_rerun.exit_code, retried.exit_code)
    assert "took 1 failed row(s) out of" in retried.stderr
    assert "wrote 1 of 1 row(s)" in retried.stderr
    found = assert_one_row_per_id(out, {"t1", "t2", "t3"})
    by_id = {row["id"]: row for row in found}
    assert by_id["t2"]["ok"] is True
    assert by_id["t3"]["reason"] == "invalid_output"
    assert [1, 2, 3, 2] == sorted(calls[:3]) + calls[3:]  # only t2 was asked again
    assert not (tmp_path / "out.jsonl.healjson-retry").exists()


def test_retry_by_reason_keeps_rows_whose_id_left_the_input(tmp_path: Path) -> None:
    """`--retry REASON` takes out only rows the run will write again: an id no longer in the
    input keeps its row (nothing is lost)."""
    out = tmp_path / "out.jsonl"
    out.write_text(
        "\n".join(
            json.dumps(row)
            for row in [
                {"id": "t1", "ok": False, "reason": "max_retries_exceeded", "raw_text": "x"},
                {"id": "gone", "ok": False, "reason": "max_retries_exceeded", "raw_text": "y"},
                {"id": "t2", "ok": False, "reason": "timeout", "raw_text": None},
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    source = write_input(tmp_path / "in.jsonl", [1, 2])
    with Batch.open(source, out, retry=frozenset({"max_retries_exceeded"})) as batch:
        assert (1, 1, 1) == (batch.stats.retried, batch.stats.total, batch.stats.already_done)
        # the rewritten output is still locked by this batch
        with pytest.raises(BatchError, match="another healjson batch"):
            Batch.open(source, out)
    assert ["gone", "t2"] == [row["id"] for row in rows(out)]


def test_retry_with_an_unknown_reason_is_a_usage_error(tmp_path: Path) -> None:
    """`--retry` with an unknown reason is a usage error naming it."""
    source = write_input(tmp_path / "in.jsonl", [1])
    result = CliRunner().invoke(
        app,
        ["batch", str(source), "--out", str(tmp_path / "o.jsonl"), "--model", "m",
         "--contracts", PACK, "--api-key", "k", "--retry", "flaky"],
    )  # fmt: skip
    assert 2 == result.exit_code
    assert "unknown reason(s) flaky" in result.output
