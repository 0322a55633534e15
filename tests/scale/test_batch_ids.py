"""`healjson batch` never makes up an id that can collide, and says when the endpoint is down.

An unreadable line gets the id `#line-N`, compared apart from every id an input row can give
(`7`, `"7"`), so no valid row is ever skipped as its duplicate; resume and `--retry` still
recognise it. An input where a line's row would show the same id as an explicit id elsewhere
(line 7 without an id and a line with `"id": 7`) is refused before any row runs. A batch whose
every row failed on the endpoint exits non-zero, and `--stop-after N` stops after N endpoint
failures in a row.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from healjson._batch.input_file import id_clash, read_jobs, select
from healjson._batch.output_file import OutputFile, read_rows, recover_output
from healjson._batch.rows import BatchError, invalid_row, row_key
from healjson._batch.run import Batch
from healjson._cli import progress
from healjson._cli.app import app
from healjson.batch_api import run_batch_api
from healjson.testing import ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES

PACK = str(CLI_FIXTURES / "ticket_pack.py")


def answer(body: dict[str, Any]) -> ScriptedReply:
    """A valid ticket for whichever `ticket N` the request asks about."""
    first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    number = int(re.search(r"ticket (\d+)", first_user).group(1))  # type: ignore[union-attr]
    ticket = {"urgency": 3, "category": "logistics", "summary": "Order stuck in transit",
              "orderId": f"ORD-{number:06d}"}  # fmt: skip
    return ScriptedReply(content=json.dumps(ticket))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A ScriptedServer on 127.0.0.1 that answers every request with a valid ticket."""
    with ScriptedServer([answer], repeat=True) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def dead_url(monkeypatch: pytest.MonkeyPatch) -> str:
    """A closed port on 127.0.0.1 (connection refused); the SDK's retry pauses made tiny."""
    import openai._base_client as base_client

    monkeypatch.setattr(base_client, "INITIAL_RETRY_DELAY", 0.001)
    monkeypatch.setattr(base_client, "MAX_RETRY_DELAY", 0.002)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run_batch(base_url: str, source: Path, out: Path, *more: str) -> Any:
    args = ["batch", str(source), "--out", str(out), "--model", "m", "--contracts", PACK]
    args += ["--base-url", base_url, "--api-key", "test", "--max-attempts", "1", *more]
    return CliRunner().invoke(app, args)


def ticket(ident: Any, number: int) -> str:
    row: dict[str, Any] = {"prompt": f"Open ticket {number}."}
    if ident is not None:
        row["id"] = ident
    return json.dumps(row)


def rows(out: Path) -> list[dict[str, Any]]:
    return [row for _, row, _ in read_rows(out) if row is not None]


# Line 3 and line 7 are unreadable; later rows use ids that look like theirs.
COLLIDING = [
    ticket("t1", 1),
    ticket("t2", 2),
    "{not json",
    ticket(3, 4),
    ticket("3", 5),
    ticket("line-3", 6),
    '{"id": 7.5, "prompt": "an id that is neither a string nor an integer"}',
    ticket("#line-8", 8),
    ticket(None, 9),  # no id: identified by its line, 9
]


def test_unreadable_lines_never_collide_with_a_valid_row(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Every valid row is written, whatever id it has; each unreadable line is one
    `invalid_input` row marked with its line; nothing is reported as a repeated id."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(COLLIDING) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"

    result = run_batch(server.base_url, source, out)

    assert 0 == result.exit_code, result.output
    found = rows(out)
    assert 9 == len(found)
    valid = {json.dumps(row["id"]): row for row in found if "input_line" not in row}
    assert {'"t1"', '"t2"', "3", '"3"', '"line-3"', '"#line-8"'} == set(valid)
    assert all(row["ok"] for row in valid.values())
    assert valid["3"]["value"]["orderId"] == "ORD-000004"
    assert valid['"line-3"']["value"]["orderId"] == "ORD-000006"
    by_line = [row for row in found if "input_line" in row]
    (no_id,) = [row for row in by_line if row["ok"]]
    assert (9, 9, "ORD-000009") == (no_id["id"], no_id["input_line"], no_id["value"]["orderId"])
    invalid = [row for row in by_line if not row["ok"]]
    assert [("#line-3", 3), ("#line-7", 7)] == [(r["id"], r["input_line"]) for r in invalid]
    assert {"invalid_input"} == {row["reason"] for row in invalid}
    assert "repeated an earlier id" not in result.stderr
    assert "healed 7, degraded 0, invalid input 2" in result.stderr


def test_resume_and_retry_recognise_assigned_ids(tmp_path: Path, server: ScriptedServer) -> None:
    """A re-run skips every row, assigned ids included; `--retry invalid_input` takes out
    only the unreadable lines' rows (not the valid rows whose ids look like theirs)."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(COLLIDING) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert 0 == run_batch(server.base_url, source, out).exit_code
    calls = len(server.requests)

    again = run_batch(server.base_url, source, out)
    retried = run_batch(server.base_url, source, out, "--retry", "invalid_input")

    assert (0, 0) == (again.exit_code, retried.exit_code)
    assert "wrote 0 of 0 row(s)" in again.stderr
    assert "skipped 9 line(s) whose id" in again.stderr
    assert "took 2 failed row(s) out of" in retried.stderr
    assert "wrote 2 of 2 row(s)" in retried.stderr
    assert calls == len(server.requests)
    keys = [row_key(row) for row in rows(out)]
    assert 9 == len(set(keys)) == len(keys)
    assert set(recover_output(out).keys) == set(keys)


def test_assigned_keys_live_apart_from_input_ids(tmp_path: Path) -> None:
    """The key of `#line-N` is not JSON text, so no string or integer id can have it; a row
    is read back as an assigned id only with its matching `input_line` (an input holding both
    is refused before it runs, but its lines' keys stay apart all the same)."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([*COLLIDING, ticket("#line-3", 10)]) + "\n", encoding="utf-8")
    keys = [job.key for job in read_jobs(source)]

    assert len(set(keys)) == len(keys)
    assert "#line-3" in keys
    assert '"#line-3"' in keys
    assert "#line-3" == row_key({"id": "#line-3", "input_line": 3})
    assert '"#line-3"' == row_key({"id": "#line-3"})
    assert '"#line-3"' == row_key({"id": "#line-3", "input_line": 4})
    assert '"#line-3"' == row_key({"id": "#line-3", "input_line": True})
    assert "#line-3" == row_key({"id": 3, "input_line": 3})  # line 3 had no id
    assert "3" == row_key({"id": 3})
    assert "3" == row_key({"id": 3, "input_line": 4})
    assert '"3"' == row_key({"id": "3", "input_line": 3})


# --- lines without an id ---------------------------------------------------------------------

# Line 1 and line 3 give no id; the others' ids never equal a line number of theirs.
NO_IDS = [
    ticket(None, 1),
    ticket(5, 2),
    json.dumps({"id": None, "prompt": "Open ticket 3."}),
    ticket("1", 4),
    ticket(5, 5),  # a true repeat of line 2's id: skipped
]


def test_a_line_without_an_id_is_known_by_its_line(tmp_path: Path, server: ScriptedServer) -> None:
    """A line with no id (or `null`) gets its line number as id, marked by `input_line`; the
    string id `"1"` is a different id; only the true repeat of id 5 is skipped; a re-run
    skips every line."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(NO_IDS) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"

    result = run_batch(server.base_url, source, out)
    again = run_batch(server.base_url, source, out)

    assert (0, 0) == (result.exit_code, again.exit_code), result.output
    found = {(row["id"], row.get("input_line")): row["value"]["orderId"] for row in rows(out)}
    assert found == {
        (1, 1): "ORD-000001",
        (5, None): "ORD-000002",
        (3, 3): "ORD-000003",
        ("1", None): "ORD-000004",
    }
    assert "1 line(s) repeated an earlier id" in result.stderr
    assert "wrote 0 of 0 row(s)" in again.stderr
    assert "skipped 5 line(s) whose id" in again.stderr  # the repeat too


@pytest.mark.parametrize("batch_api", [False, True])
def test_a_line_without_an_id_and_a_row_with_its_number_are_refused(
    tmp_path: Path, server: ScriptedServer, batch_api: bool
) -> None:
    """Line 2 has no id (its row's id would be 2) and line 4 gives the id 2: the input is
    refused before any request, naming both lines, and no output is written."""
    source = tmp_path / "in.jsonl"
    lines = [ticket("a", 1), ticket(None, 2), ticket("b", 3), ticket(2, 4)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"

    result = run_batch(server.base_url, source, out, *(["--batch-api"] if batch_api else []))

    assert 2 == result.exit_code, result.output
    message = " ".join(result.stderr.replace("│", " ").split())
    assert "line 2 has no `id`, so its row's id is its line number, 2, and line 4" in message
    assert "Give line 2 an `id` of its own, or change line 4's." in message
    assert [] == server.requests
    assert not out.exists()


def test_an_unreadable_line_and_a_row_with_its_assigned_id_are_refused(tmp_path: Path) -> None:
    """Line 3 cannot be read (its row's id would be `#line-3`) and line 5 gives that very id:
    `Batch.open` refuses the input before the output is touched, naming both lines."""
    source = tmp_path / "in.jsonl"
    lines = [ticket("a", 1), ticket("b", 2), "{not json", ticket("c", 4), ticket("#line-3", 5)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"

    with pytest.raises(BatchError) as raised:
        Batch.open(source, out)

    assert str(raised.value).startswith(
        'line 3 cannot be read, so its row\'s id is, "#line-3", and line 5 gives the same id'
    )
    assert not out.exists()


def test_a_refused_input_leaves_the_batch_api_ledger_empty(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """`healjson.batch_api.run_batch_api` raises `BatchError` for clashing ids before anything
    is uploaded."""
    from openai import OpenAI

    source = tmp_path / "in.jsonl"
    source.write_text(ticket(None, 1) + "\n" + ticket(1, 2) + "\n", encoding="utf-8")
    with OpenAI(base_url=server.base_url, api_key="test") as client, pytest.raises(BatchError):
        run_batch_api(
            source, tmp_path / "out.jsonl", client=client, model="m",
            response_model=dict[str, Any], ledger=tmp_path / "ledger.sqlite", wait=False,
        )  # fmt: skip

    assert [] == server.requests


def test_an_older_output_of_lines_without_an_id_still_resumes(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Rows written before lines without an id carried `input_line` (`{"id": N}`) still
    count as line N's."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([ticket(None, 1), ticket(None, 2), ticket("t3", 3)]) + "\n")
    out = tmp_path / "out.jsonl"
    old = {"ok": True, "value": {}, "attempts": 1, "usage": {}}
    out.write_text("\n".join(json.dumps({"id": n} | old) for n in (1, 2)) + "\n")

    result = run_batch(server.base_url, source, out)

    assert 0 == result.exit_code, result.output
    assert "skipped 2 line(s) whose id" in result.stderr
    (new,) = rows(out)[2:]
    assert ("t3", "ORD-000003") == (new["id"], new["value"]["orderId"])


def test_retry_takes_out_an_older_outputs_row_of_a_line_without_an_id(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """`--retry-failed` replaces an older output's failed row of a line without an id, keeping
    one row per line."""
    source = tmp_path / "in.jsonl"
    source.write_text(ticket(None, 1) + "\n" + ticket("t2", 2) + "\n")
    out = tmp_path / "out.jsonl"
    failed = {"ok": False, "reason": "api_error", "raw_text": None, "errors": [], "attempts": 1}
    out.write_text(json.dumps({"id": 1} | failed) + "\n")

    result = run_batch(server.base_url, source, out, "--retry-failed")

    assert 0 == result.exit_code, result.output
    assert "took 1 failed row(s) out of" in result.stderr
    found = {(row["id"], row.get("input_line")): row["ok"] for row in rows(out)}
    assert found == {(1, 1): True, ("t2", None): True}


def _id_spec(line: int, spec: tuple[str, int]) -> str:
    kind, number = spec
    row: dict[str, Any] = {"prompt": f"Open ticket {line}."}
    if kind == "null":
        row["id"] = None
    elif kind == "int":
        row["id"] = number
    elif kind == "str":
        row["id"] = str(number)
    return json.dumps(row)


@settings(max_examples=40, deadline=None)
@given(
    specs=st.lists(
        st.tuples(st.sampled_from(["missing", "null", "int", "str"]), st.integers(1, 8)),
        min_size=1,
        max_size=8,
    )
)
@example(specs=[("missing", 1), ("int", 1)])
@example(specs=[("missing", 1), ("str", 1)])
def test_no_distinct_line_is_ever_skipped_and_resume_skips_every_one(
    tmp_path_factory: pytest.TempPathFactory, specs: list[tuple[str, int]]
) -> None:
    """For any mix of lines without an id, with `null`, and with explicit ids (integers and
    strings, often equal to line numbers): the input is refused exactly when a line without
    an id has the number another line gives as an integer id; otherwise every line without
    an id and the first line of each explicit id run; only a later line with the same
    explicit id is a repeat; the rows written make a resume skip every line, and each row's
    `id` and key are distinct."""
    work = tmp_path_factory.mktemp("ids")
    source = work / "in.jsonl"
    source.write_text("\n".join(_id_spec(n, s) for n, s in enumerate(specs, 1)) + "\n")
    no_id = {n for n, (kind, _) in enumerate(specs, 1) if kind in ("missing", "null")}
    clash = any(kind == "int" and number in no_id for kind, number in specs)
    assert clash == (id_clash(source) is not None)
    if clash:
        return
    explicit: set[str] = set()
    wanted: list[str] = []
    for kind, number in specs:
        ident = json.dumps(number if kind == "int" else str(number))
        if kind in ("missing", "null"):
            wanted.append("todo")
        else:
            wanted.append("duplicate" if ident in explicit else "todo")
            explicit.add(ident)

    selected = list(select(source, set()))
    assert wanted == [status for status, _ in selected]

    out = work / "out.jsonl"
    writer = OutputFile(out)
    writer.write_many(invalid_row(job) for status, job in selected if status == "todo")
    writer.close()
    keys = [row_key(row) for row in rows(out)]
    assert len(set(keys)) == len(keys) == wanted.count("todo")
    shown = [json.dumps(row["id"]) for row in rows(out)]
    assert len(set(shown)) == len(shown)
    again = [status for status, _ in select(source, set(recover_output(out).keys))]
    assert ["done"] * len(specs) == again  # a repeat of a written id: "already done" too


# --- the endpoint failing -------------------------------------------------------------------------


def test_a_dead_endpoint_exits_non_zero(tmp_path: Path, dead_url: str) -> None:
    """Every row failing on the endpoint (connection refused) is written as `api_error` and
    the command exits 1 with a hint; a re-run with --retry-failed tries them again."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(ticket(f"t{n}", n) for n in (1, 2, 3)) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"

    result = run_batch(dead_url, source, out, "-j", "1")

    assert 1 == result.exit_code, result.output
    assert ["api_error"] * 3 == [row["reason"] for row in rows(out)]
    assert "3 row(s) failed on the endpoint" in result.stderr
    assert "every row sent failed on the endpoint" in result.stderr


def test_a_dead_endpoint_with_only_invalid_rows_besides_still_exits_non_zero(
    tmp_path: Path, dead_url: str
) -> None:
    """Invalid input lines never reach the endpoint, so they do not hide that it is down."""
    source = tmp_path / "in.jsonl"
    source.write_text(ticket("t1", 1) + "\n{broken\n", encoding="utf-8")

    result = run_batch(dead_url, source, tmp_path / "out.jsonl")

    assert 1 == result.exit_code, result.output


def test_some_endpoint_failures_among_answers_exit_zero(tmp_path: Path) -> None:
    """One failed row among answered ones is a finished batch (exit 0, --retry-failed later)."""
    seen: list[int] = []

    def flaky(body: dict[str, Any]) -> ScriptedReply:
        seen.append(1)
        if len(seen) == 1:
            return ScriptedReply.error(500, "down", headers={"x-should-retry": "false"})
        return answer(body)

    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(ticket(f"t{n}", n) for n in (1, 2)) + "\n", encoding="utf-8")
    with ScriptedServer([flaky], repeat=True) as server:
        result = run_batch(server.base_url, source, tmp_path / "out.jsonl", "-j", "1")

    assert 0 == result.exit_code, result.output
    assert "1 row(s) failed on the endpoint" in result.stderr


@pytest.mark.parametrize(
    ("refusal", "quoted", "fix"),
    [
        (
            ScriptedReply.error(404, "The model `m` does not exist.", code="model_not_found"),
            "HTTP 404 (model_not_found): The model `m` does not exist.",
            "Check the model name",
        ),
        (
            ScriptedReply.error(401, "Incorrect API key provided.", code="invalid_api_key"),
            "HTTP 401 (invalid_api_key): Incorrect API key provided.",
            "Check the API key",
        ),
    ],
    ids=["model_not_found", "invalid_api_key"],
)
@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_a_provider_error_every_row_would_get_stops_sending_and_a_re_run_resumes(
    tmp_path: Path,
    server: ScriptedServer,
    refusal: ScriptedReply,
    quoted: str,
    fix: str,
    concurrency: str,
) -> None:
    """A 404 `model_not_found` or a 401 stops the batch at the first row that gets it: no more
    requests than were in flight, no row written, exit 1 with the provider's words and the
    fix; the same command against a working endpoint then writes every row."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(ticket(f"t{n}", n) for n in range(1, 21)) + "\n", "utf-8")
    out = tmp_path / "out.jsonl"

    with ScriptedServer([refusal], repeat=True) as refusing:
        stopped = run_batch(refusing.base_url, source, out, "-j", concurrency)
        sent = len(refusing.requests)
    resumed = run_batch(server.base_url, source, out)

    assert 1 == stopped.exit_code, stopped.output
    assert 1 <= sent <= int(concurrency)
    said = " ".join(stopped.stderr.split())
    assert f"batch stopped: the provider answered {quoted} - {fix}" in said
    assert "so 20 row(s) were not sent or not written" in said
    assert "re-run the same command to resume" in said
    assert 0 == resumed.exit_code, resumed.output
    assert 20 == len(rows(out))
    assert all(row["ok"] for row in rows(out))


def test_stop_after_stops_and_a_re_run_resumes(
    tmp_path: Path, dead_url: str, server: ScriptedServer
) -> None:
    """`--stop-after 2` stops after two endpoint failures in a row, writes only those two,
    exits 1 and says so; a re-run against a live endpoint does the rest."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(ticket(f"t{n}", n) for n in range(1, 11)) + "\n", "utf-8")
    out = tmp_path / "out.jsonl"

    stopped = run_batch(dead_url, source, out, "-j", "1", "--stop-after", "2")
    resumed = run_batch(server.base_url, source, out, "--retry-failed")

    assert 1 == stopped.exit_code, stopped.output
    assert "wrote 2 of 10 row(s)" in stopped.stderr
    assert "batch stopped: 2 row(s) in a row failed on the endpoint" in stopped.stderr
    assert 0 == resumed.exit_code, resumed.output
    assert "took 2 failed row(s) out of" in resumed.stderr
    assert "wrote 10 of 10 row(s)" in resumed.stderr
    assert all(row["ok"] for row in rows(out))
    assert 10 == len(rows(out))


def test_stop_after_does_not_stop_when_the_endpoint_answers(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """`--stop-after` does not stop a run whose endpoint answers: every row is written."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(ticket(f"t{n}", n) for n in range(1, 6)) + "\n", "utf-8")

    result = run_batch(server.base_url, source, tmp_path / "out.jsonl", "--stop-after", "1")

    assert 0 == result.exit_code, result.output
    assert "wrote 5 of 5 row(s)" in result.stderr


# --- progress -------------------------------------------------------------------------------------


def test_progress_into_a_file_writes_plain_lines_that_agree_with_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--progress` with stderr no terminal: plain lines at the interval while rows are slow,
    and a last one whose counts are the summary's (invalid input counted apart)."""
    monkeypatch.setattr(progress, "PLAIN_INTERVAL_S", 0.02)

    def slow(body: dict[str, Any]) -> ScriptedReply:
        import time

        time.sleep(0.05)
        return answer(body)

    source = tmp_path / "in.jsonl"
    lines = [ticket(f"t{n}", n) for n in range(1, 5)] + ["{broken"]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with ScriptedServer([slow], repeat=True) as server:
        result = run_batch(server.base_url, source, tmp_path / "out.jsonl", "-j", "1",
                           "--progress")  # fmt: skip

    assert 0 == result.exit_code, result.output
    plain = [line for line in result.stderr.splitlines() if "/5 row(s)" in line]
    assert len(plain) >= 3  # several while running (~0.2 s at 0.02 s), one at the end
    assert all("\x1b" not in line for line in plain)
    assert re.fullmatch(
        r"healjson batch: 5/5 row\(s\) \(healed 4, degraded 0, invalid input 1\), "
        r"[\d.]+ rows/s, ETA 0:00:00",
        plain[-1],
    )
    assert "wrote 5 of 5 row(s)" in result.stderr
    assert "(healed 4, degraded 0, invalid input 1); " in result.stderr  # the summary: the same
    assert any("ETA" in line and "rows/s" in line for line in plain[:-1])
