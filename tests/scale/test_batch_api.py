"""`healjson batch --batch-api` / `healjson.batch_api`: rounds through a provider's Batch API.

Everything runs over real HTTP: the real openai and anthropic SDKs against a `ScriptedServer`
that implements `/v1/files`, `/v1/batches` and Anthropic's message batches. The server answers
each batch line from its request (`Tickets`): prompt `ticket N` gets a reply chosen by N and by
the round (the `_rK` of the line's `custom_id`), so each row's fate is known in advance.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from healjson import HealPolicy
from healjson._cli.app import app
from healjson.batch_api import (
    LedgerError,
    batch_api_status,
    cancel_batch_api,
    default_ledger,
    run_batch_api,
)
from healjson.testing import ScriptedReply, ScriptedServer
from lanes import INSTRUCTOR_ONLY
from paths import CLI_FIXTURES

FIXTURES = CLI_FIXTURES
sys.path.insert(0, str(FIXTURES))
from ticket_pack import Ticket, urgent_summary_explains  # noqa: E402

KEY = "sk-batch-secret-0123456789abcdef"


def ticket(number: int, summary: str = "Order stuck in transit", urgency: int = 5) -> str:
    return json.dumps(
        {
            "urgency": urgency,
            "category": "logistics",
            "summary": summary,
            "orderId": f"ORD-{number:06d}",
        }
    )


class Tickets:
    """Answers a batch line by its ticket number and round:

    1 valid; 2 fenced (L1 heals it); 3 cut by the token limit in round 0, valid after;
    4 breaks the contract in rounds 0 and 1, valid in round 2; 5 refused; 6 expired;
    7 an HTTP 500 line (echoing the API key); 8 never valid (attempts run out); 9+ valid.
    """

    def __call__(self, custom_id: str, body: dict[str, Any]) -> ScriptedReply:
        found = re.search(r"_r(\d+)$", custom_id)
        round_ = int(found.group(1)) if found else 0
        messages = body["messages"]
        user = next(m["content"] for m in messages if m["role"] == "user")
        number = int(re.search(r"ticket (\d+)", user).group(1))  # type: ignore[union-attr]
        if number == 2:
            return ScriptedReply(content=f"Here it is:\n```json\n{ticket(2)}\n```")
        if number == 3 and round_ == 0:
            return ScriptedReply(content=ticket(3)[:40], finish_reason="length")
        if number == 4 and round_ < 2:
            return ScriptedReply(content=ticket(4, summary="Late!"))
        if number == 5:
            return ScriptedReply(refusal="I can't help with that.")
        if number == 6:
            return ScriptedReply(batch_expired=True)
        if number == 7:
            return ScriptedReply(status=500, content=f"upstream said: Bearer {KEY}")
        if number == 8:
            return ScriptedReply(content=ticket(8, urgency=9))
        return ScriptedReply(content=ticket(number))


def write_input(path: Path, numbers: range | list[int], *, broken: bool = False) -> Path:
    lines = [json.dumps({"id": f"t{n}", "prompt": f"ticket {n}"}) for n in numbers]
    if broken:
        lines.append("{not json")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(path: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        assert row["id"] not in found, f"row {row['id']} written twice"
        found[row["id"]] = row
    return found


def round_ids(server: ScriptedServer) -> list[list[str]]:
    """The custom_ids of each batch the server received, in order."""
    return [list(batch.custom_ids) for batch in server.batches]


@pytest.fixture
def server() -> Any:
    with ScriptedServer(batch_replies=Tickets()) as running:
        yield running


def openai_client(server: ScriptedServer, closing: contextlib.ExitStack) -> openai.OpenAI:
    """An openai client on `server`, closed when the test ends."""
    return closing.enter_context(
        openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    )


POLICY = HealPolicy(max_attempts=3)


def test_three_rounds_heal_repair_and_degrade_every_row(
    server: Any, tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """Three Batch API rounds heal, repair and degrade every row, each row written once with its
    verdict, and the report counts them."""
    source = write_input(tmp_path / "in.jsonl", range(1, 11), broken=True)
    out = tmp_path / "out.jsonl"
    report = run_batch_api(
        source,
        out,
        client=openai_client(server, closing),
        model="gpt-4o-mini",
        response_model=Ticket,
        contracts=[urgent_summary_explains],
        policy=POLICY,
        poll_interval_s=0.0,
    )
    written = rows(out)
    assert set(written) == {f"t{n}" for n in range(1, 11)} | {"#line-11"}
    assert report.complete
    assert report.pending == 0
    assert report.done == 10

    healed = {key for key, row in written.items() if row["ok"]}
    assert healed == {"t1", "t2", "t3", "t4", "t9", "t10"}
    assert written["t4"]["attempts"] == 3
    assert written["t3"]["attempts"] == 2
    assert written["t2"]["attempts"] == 1  # healed locally: no re-ask
    reasons = {key: row["reason"] for key, row in written.items() if not row["ok"]}
    assert reasons == {
        "t5": "refusal",
        "t6": "timeout",
        "t7": "api_error",
        "t8": "max_retries_exceeded",
        "#line-11": "invalid_input",
    }

    # round 1 holds exactly the repairable rows and the expired / HTTP 500 ones (sent again
    # as they were, three times at most: not model attempts), round 2 those still failing
    batches = server.batches
    assert len(batches) == 4
    by_round = [sorted(_numbers(batch.requests)) for batch in batches]
    assert by_round == [list(range(1, 11)), [3, 4, 6, 7, 8], [4, 6, 7, 8], [6, 7]]
    assert written["t6"]["attempts"] == written["t7"]["attempts"] == 1
    assert "resubmitted 3 time(s)" in written["t6"]["errors"][0]["value"]
    resent = [r for b in batches for r in b.requests if _numbers([r]) == [6]]
    assert all(request == resent[0] for request in resent)  # the same request, not a repair
    assert all(re.fullmatch(r"row-\d+_r1", c) for c in batches[1].custom_ids)
    # a repair request carries the full context: the original request, the answer, the fix
    repair = batches[1].requests[_numbers(batches[1].requests).index(4)]
    roles = [m["role"] for m in repair["messages"]]
    assert roles[0] == "user"
    assert "assistant" in roles
    assert roles[-1] == "user"
    assert "ticket 4" in repair["messages"][0]["content"]
    assert repair["response_format"]["type"] == "json_schema"

    assert [r.requests for r in report.rounds] == [10, 5, 4, 2]
    assert report.calls == 21
    assert report.resubmitted == 6
    assert report.tokens > 0
    assert report.cost is not None
    assert report.cost > 0
    # nothing stored or written holds the key the error body echoed
    assert KEY not in out.read_text(encoding="utf-8")
    assert KEY.encode() not in default_ledger(out).read_bytes()


def test_each_result_is_read_once_per_round(
    server: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    closing: contextlib.ExitStack,
) -> None:
    """A result is read as a reply once in the round it arrives (its usage and the row's replay
    share that reading), and once in each later round the row is replayed: a row with k results
    costs 1 + 2 + ... + k readings. Rows: 1 and 9 answered at once, 2 healed locally, 3 cut then
    repaired (2 results), 4 repaired twice (3 results)."""
    from healjson._core.run import replay

    readings = 0
    read = replay.to_reply

    def counted(value: Any) -> Any:
        nonlocal readings
        readings += 1
        return read(value)

    monkeypatch.setattr(replay, "to_reply", counted)
    source = write_input(tmp_path / "in.jsonl", [1, 2, 3, 4, 9])
    out = tmp_path / "out.jsonl"
    report = run_batch_api(
        source,
        out,
        client=openai_client(server, closing),
        model="gpt-4o-mini",
        response_model=Ticket,
        contracts=[urgent_summary_explains],
        policy=POLICY,
        poll_interval_s=0.0,
    )
    written = rows(out)
    assert report.complete
    results = {key: row["attempts"] for key, row in written.items()}
    assert {"t1": 1, "t2": 1, "t3": 2, "t4": 3, "t9": 1} == results
    assert sum(k * (k + 1) // 2 for k in results.values()) == readings  # 12 (20 read twice)
    # the usage read from the same readings: the rounds' tokens are the rows' tokens
    assert report.tokens == sum(row["usage"]["total_tokens"] for row in written.values())
    assert report.tokens > 0


def test_a_line_without_an_id_is_known_by_its_line(
    server: Any, tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """Lines 1 and 2 give no id (or `null`) and get their line numbers; the string id `"1"`
    is another id and runs apart; only the true repeat of id 7 is skipped."""
    lines = [
        {"prompt": "ticket 1"},
        {"id": None, "prompt": "ticket 9"},
        {"id": "1", "prompt": "ticket 10"},
        {"id": 7, "prompt": "ticket 11"},
        {"id": 7, "prompt": "ticket 12"},  # a true repeat: skipped
    ]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    common: dict[str, Any] = {"model": "m", "response_model": Ticket, "poll_interval_s": 0.0}

    report = run_batch_api(source, out, client=openai_client(server, closing), **common)
    again = run_batch_api(source, out, client=openai_client(server, closing), **common)

    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    found = {(row["id"], row.get("input_line")): row["value"]["orderId"] for row in written}
    assert found == {
        (1, 1): "ORD-000001",
        (2, 2): "ORD-000009",
        ("1", None): "ORD-000010",
        (7, None): "ORD-000011",
    }
    assert (report.complete, report.duplicates, report.written) == (True, 1, 4)
    assert (again.written, len(server.batches)) == (0, 1)


def test_an_older_ledger_of_lines_without_an_id_still_resumes(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """A ledger written before lines without an id had their own key holds line 1 under the
    key `1`: a run after the input grew takes the new line in, and line 1 runs once."""
    import sqlite3

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"prompt": "ticket 1"}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Tickets(), batch_delay_s=30.0) as server:
        common: dict[str, Any] = {"model": "m", "response_model": Ticket, "poll_interval_s": 0.0}
        run_batch_api(source, out, client=openai_client(server, closing), wait=False, **common)
        with sqlite3.connect(default_ledger(out)) as db:  # as the older version keyed it
            db.execute("UPDATE rows SET key = '1' WHERE key = '#line-1'")
        with source.open("a", encoding="utf-8") as more:
            more.write(json.dumps({"id": "t9", "prompt": "ticket 9"}) + "\n")
        run_batch_api(source, out, client=openai_client(server, closing), wait=False, **common)

        assert [len(batch.custom_ids) for batch in server.batches] == [1, 1]
        assert sorted(_numbers(r for b in server.batches for r in b.requests)) == [1, 9]


def _numbers(requests: Any) -> list[int]:
    numbers = []
    for body in requests:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        numbers.append(int(re.search(r"ticket (\d+)", user).group(1)))  # type: ignore[union-attr]
    return numbers


class Crash(Exception):
    """Stands for a process that dies at one step (the ledger is left as the step left it)."""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_whose_create_answer_was_lost_is_found_not_sent_again(
    server: Any,
    tmp_path: Path,
    provider: str,
    closing: contextlib.ExitStack,
) -> None:
    """A batch whose create answer was lost to a crash is found at the provider on the next run,
    never sent again, for OpenAI and Anthropic."""
    source = write_input(tmp_path / "in.jsonl", [1, 3, 9])
    out = tmp_path / "out.jsonl"
    if provider == "openai":
        client: Any = openai_client(server, closing)
    else:
        client = closing.enter_context(
            anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=KEY)
        )

    def crash_after_create(name: str, info: Any) -> None:
        if name == "created":
            raise Crash(info["batch_id"])

    common: dict[str, Any] = {"client": client, "model": "m", "response_model": Ticket}
    for _ in range(2):  # round 0's create, then round 1's: each answer lost once
        with pytest.raises(Crash):
            run_batch_api(source, out, on_event=crash_after_create, poll_interval_s=0, **common)
    report = run_batch_api(source, out, poll_interval_s=0, **common)
    assert report.complete
    assert set(rows(out)) == {"t1", "t3", "t9"}
    assert [len(batch.custom_ids) for batch in server.batches] == [3, 1]


def test_a_batch_the_provider_refuses_degrades_its_rows_with_the_reason(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """A batch the provider refuses degrades its rows with `api_error` and the provider's reason,
    without sending it again."""
    with ScriptedServer(batch_replies=Tickets(), batch_max_requests=2) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 9, 10])
        out = tmp_path / "out.jsonl"
        report = run_batch_api(
            source, out, client=openai_client(server, closing), model="m", response_model=Ticket
        )
        assert report.complete
        written = rows(out)
        assert {row["reason"] for row in written.values()} == {"api_error"}
        assert len(server.batches) == 1  # not sent again: the same file would fail again
        message = written["t1"]["errors"][0]["value"]
        assert "3 requests" in message  # the provider's own words about its limit


def test_rows_added_to_the_input_later_are_taken_in(
    server: Any, tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """Rows added to the input after a finished run are taken in by the next run, and the old
    rows are not sent again."""
    source = write_input(tmp_path / "in.jsonl", [1, 9])
    out = tmp_path / "out.jsonl"
    common: dict[str, Any] = {
        "client": openai_client(server, closing),
        "model": "m",
        "response_model": Ticket,
        "poll_interval_s": 0,
    }
    run_batch_api(source, out, **common)
    write_input(source, [1, 9, 10, 11])
    report = run_batch_api(source, out, **common)
    assert report.done == 4
    assert set(rows(out)) == {"t1", "t9", "t10", "t11"}
    assert [len(batch.custom_ids) for batch in server.batches] == [2, 2]


def test_full_rows_render_with_healjson_trace(
    server: Any, tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """`full=True` rows hold the whole outcome, and `healjson trace` renders them."""
    source = write_input(tmp_path / "in.jsonl", [3, 5])
    out = tmp_path / "out.jsonl"
    run_batch_api(
        source,
        out,
        client=openai_client(server, closing),
        model="m",
        response_model=Ticket,
        full=True,
        poll_interval_s=0,
    )
    result = CliRunner().invoke(app, ["trace", str(out), "--id", "t3"])
    assert result.exit_code == 0, result.output
    assert "Round 2 (truncation)" in result.output
    assert "ticket 3" in result.output
    assert "**Latency**: 0.0 ms" not in result.output  # a batch's turnaround, not zero


def test_a_round_is_split_under_the_batch_limits(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """A round with more rows than the request limit is split into several batches within it."""
    with ScriptedServer(batch_replies=Tickets(), batch_max_requests=4) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 9, 10, 11, 12, 13, 14, 15, 16, 17])
        out = tmp_path / "out.jsonl"
        report = run_batch_api(
            source,
            out,
            client=openai_client(server, closing),
            model="m",
            response_model=Ticket,
            poll_interval_s=0.0,
            max_requests_per_batch=4,
        )
        assert report.complete
        assert [len(batch.custom_ids) for batch in server.batches] == [4, 4, 2]
        assert len(rows(out)) == 10


def test_a_round_is_split_under_a_byte_limit_too(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """A round is split into batches within a byte limit too."""
    with ScriptedServer(batch_replies=Tickets()) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 9, 10, 11, 12])
        out = tmp_path / "out.jsonl"
        limit = 2_500  # a request line of this target is ~1 KB (most of it its strict schema)
        report = run_batch_api(
            source,
            out,
            client=openai_client(server, closing),
            model="m",
            response_model=Ticket,
            poll_interval_s=0.0,
            max_bytes_per_batch=limit,
        )
        assert report.complete
        assert len(server.batches) > 1
        for batch in server.batches:
            lines = [
                {"custom_id": c, "method": "POST", "url": "/v1/chat/completions", "body": body}
                for c, body in zip(batch.custom_ids, batch.requests, strict=True)
            ]
            assert sum(len(json.dumps(line)) + 1 for line in lines) <= limit
        assert sum(len(batch.custom_ids) for batch in server.batches) == 5


def test_wrapped_and_instructor_clients_reach_their_batch_api(
    server: Any, closing: contextlib.ExitStack
) -> None:
    """Wrapped and instructor clients reach the Batch API of the SDK client inside them, and
    anything else is refused naming what is taken."""
    instructor = pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

    import healjson
    from healjson.batch_api import provider_for

    assert provider_for(healjson.wrap(openai_client(server, closing))).name == "openai"
    raw = closing.enter_context(
        anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=KEY)
    )
    assert provider_for(instructor.from_anthropic(raw)).name == "anthropic"
    assert provider_for(instructor.from_openai(openai_client(server, closing))).name == "openai"
    with pytest.raises(TypeError, match=r"openai\.OpenAI or anthropic\.Anthropic"):
        provider_for(object())


def test_no_wait_submits_then_a_later_run_collects(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """`wait=False` submits the batch and returns with the rows pending, and a later run collects
    them."""
    with ScriptedServer(batch_replies=Tickets(), batch_delay_s=0.3) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 3, 9])
        out = tmp_path / "out.jsonl"
        common: dict[str, Any] = {
            "client": openai_client(server, closing),
            "model": "m",
            "response_model": Ticket,
        }
        first = run_batch_api(source, out, wait=False, **common)
        assert first.pending == 3
        assert len(first.batch_ids) == 1
        assert not out.exists() or rows(out) == {}
        status = batch_api_status(default_ledger(out))
        assert status.pending == 3
        assert status.rounds[0].in_flight == 1
        again = run_batch_api(source, out, wait=False, **common)  # still running: no new batch
        assert len(server.batches) == 1
        assert again.pending == 3
        done = run_batch_api(source, out, poll_interval_s=0.05, **common)
        assert done.complete
        assert set(rows(out)) == {"t1", "t3", "t9"}
        assert len(server.batches) == 2  # round 0, and round 1 for the cut row


def test_cancel_keeps_nothing_lost_and_the_next_run_finishes(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """`cancel_batch_api` cancels the pending batch losing nothing, and the next run finishes the
    rows."""
    with ScriptedServer(batch_replies=Tickets(), batch_delay_s=30.0) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 9])
        out = tmp_path / "out.jsonl"
        common: dict[str, Any] = {
            "client": openai_client(server, closing),
            "model": "m",
            "response_model": Ticket,
        }
        run_batch_api(source, out, wait=False, **common)
        cancelled = cancel_batch_api(source, out, poll_interval_s=0.01, **common)
        assert cancelled.pending == 2
        assert not cancelled.batch_ids
        assert server.batches[0].cancelled
    with ScriptedServer(batch_replies=Tickets()) as fresh:
        common["client"] = openai_client(fresh, closing)
        with pytest.raises(LedgerError):  # another server is fine; another model is not
            run_batch_api(source, out, **{**common, "model": "other"})
        done = run_batch_api(source, out, poll_interval_s=0.0, **common)
        assert done.complete
        assert set(rows(out)) == {"t1", "t9"}


def test_anthropic_message_batches_through_the_same_runner(
    server: Any, tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """Anthropic Message Batches go through the same rounds, with Anthropic's request lines."""
    source = write_input(tmp_path / "in.jsonl", [1, 2, 3, 4, 5, 6])
    out = tmp_path / "out.jsonl"
    client = closing.enter_context(
        anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=KEY, max_retries=0)
    )
    report = run_batch_api(
        source,
        out,
        client=client,
        model="claude-sonnet-4-5",
        response_model=Ticket,
        contracts=[urgent_summary_explains],
        policy=POLICY,
        poll_interval_s=0.0,
    )
    written = rows(out)
    assert report.complete
    assert {k for k, r in written.items() if r["ok"]} == {"t1", "t2", "t3", "t4"}
    assert written["t5"]["reason"] == "refusal"
    assert written["t6"]["reason"] == "timeout"  # expired: resubmitted 3 times, then degraded
    assert "resubmitted 3 time(s)" in written["t6"]["errors"][0]["value"]
    batches = server.batches
    assert [b.provider for b in batches] == ["anthropic"] * 4
    first = batches[0].requests[0]
    assert first["max_tokens"] == 4096
    assert "JSON schema" in first["system"]
    assert all(m["role"] != "system" for m in first["messages"])


def test_the_command_line_runs_reports_and_shows_status(server: Any, tmp_path: Path) -> None:
    """`healjson batch --batch-api` runs the rounds, reports on stderr, and `--status` shows the
    ledger."""
    source = write_input(tmp_path / "in.jsonl", [1, 3, 5])
    out = tmp_path / "out.jsonl"
    args = [
        "batch",
        str(source),
        "--out",
        str(out),
        "--batch-api",
        "--model",
        "m",
        "--response-model",
        f"{FIXTURES / 'ticket_pack.py'}:Ticket",
        "--base-url",
        server.base_url,
        "--api-key",
        KEY,
        "--poll-interval",
        "0",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "3 of 3 row(s) done" in result.output
    assert "round 0: 1 batch(es), 3 request(s)" in result.output
    assert "round 1: 1 batch(es), 1 request(s)" in result.output
    status = CliRunner().invoke(app, [*args, "--status"])
    assert status.exit_code == 0
    assert "0 pending" in status.output
    assert len(rows(out)) == 3
    misuse = CliRunner().invoke(app, [a for a in args if a != "--batch-api"] + ["--status"])
    assert misuse.exit_code == 2


def test_status_says_unpriced_for_a_model_without_a_price(server: Any, tmp_path: Path) -> None:
    """`--status` of a run on a model no price list knows never shows `$0.0000`: nothing while
    its batch is in flight, `unpriced` once results are read; a priced model shows dollars."""
    source = write_input(tmp_path / "in.jsonl", [1, 9])

    def said(model: str, *more: str) -> str:
        args = ["batch", str(source), "--out", str(tmp_path / f"{model}.jsonl"), "--batch-api"]
        args += ["--model", model, "--response-model", f"{FIXTURES / 'ticket_pack.py'}:Ticket"]
        args += ["--base-url", server.base_url, "--api-key", KEY, "--poll-interval", "0"]
        result = CliRunner().invoke(app, [*args, *more])
        assert result.exit_code in (0, 1), result.output
        return result.output

    in_flight = said("local-model", "--no-wait")
    said("local-model")
    done = said("local-model", "--status")
    priced = said("gpt-4o-mini")

    assert "$" not in in_flight
    assert "round 0: 1 batch(es), 2 request(s), 2 answered (0 failed)" in done
    assert "token(s), unpriced" in done
    assert "$" not in done
    assert ", unpriced" not in priced
    assert "at batch prices" in priced


# -- killed at every phase, then resumed --------------------------------------------------------

# each run is a child forked from the session's warm process (`zygote`), killed with SIGKILL (what
# a crash or an OOM kill looks like) the nth time the runner reports the phase


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize(
    ("phase", "nth"),
    [
        ("uploading", 1),  # before the first upload
        ("uploaded", 2),  # round 1's file uploaded, its batch not created
        ("created", 1),  # round 0's batch created, the ledger not told yet
        ("created", 3),  # round 2's batch created, the ledger not told yet
        ("polled", 2),  # while polling
        ("collected", 1),  # results stored, rows not written
        ("writing", 2),  # before writing round 1's rows
        ("written", 1),  # rows written, the ledger not told yet
    ],
)
def test_killed_at_any_phase_resumes_without_loss_or_repeats(
    server: Any, zygote: Any, tmp_path: Path, phase: str, nth: int
) -> None:
    """A Batch API run killed with SIGKILL at any phase resumes on the next run with every row
    written once and no batch sent twice."""
    source = write_input(tmp_path / "in.jsonl", range(1, 9))
    out = tmp_path / "out.jsonl"
    task = {"base_url": server.base_url, "source": str(source), "out": str(out)}
    run = "victims:tickets_batch_api"
    errors = tmp_path / "stderr.txt"
    killed = zygote.run(run, errors, phase=phase, nth=nth, **task)
    assert {"signal": signal.SIGKILL, "code": None} == killed, errors.read_text()
    assert {"signal": 0, "code": 0} == zygote.run(run, errors, phase="never", nth=1, **task)

    written = rows(out)  # raises if any id was written twice
    assert set(written) == {f"t{n}" for n in range(1, 9)}
    assert {k for k, r in written.items() if r["ok"]} == {"t1", "t2", "t3", "t4"}
    # no round was submitted twice: one batch per round (rows 6 and 7 resubmitted three
    # times), each holding its rows once
    sizes = [len(batch.custom_ids) for batch in server.batches]
    assert sizes == [8, 5, 4, 2], sizes
    every = Counter(c for batch in server.batches for c in batch.custom_ids)
    assert max(every.values()) == 1
    assert batch_api_status(default_ledger(out)).complete


# -- any mix of line fates ----------------------------------------------------------------------

FATES = ("ok", "fenced", "bad", "cut", "refused", "expired", "error")
REPAIRABLE = {"bad", "cut"}
TERMINAL = {"refused": "refusal", "expired": "timeout", "error": "api_error"}


class Fated:
    """Answers ticket N in round r with the reply `fates[N][r]` names (then valid ones)."""

    def __init__(self, fates: dict[int, list[str]]) -> None:
        self.fates = fates

    def __call__(self, custom_id: str, body: dict[str, Any]) -> ScriptedReply:
        round_ = int(custom_id.rsplit("_r", 1)[1])
        (number,) = _numbers([body])
        plan = self.fates[number]
        fate = plan[round_] if round_ < len(plan) else "ok"
        return {
            "ok": ScriptedReply(content=ticket(number)),
            "fenced": ScriptedReply(content=f"```json\n{ticket(number)}\n```"),
            "bad": ScriptedReply(content=ticket(number, summary="Late!")),
            "cut": ScriptedReply(content=ticket(number)[:30], finish_reason="length"),
            "refused": ScriptedReply(refusal="No."),
            "expired": ScriptedReply(batch_expired=True),
            "error": ScriptedReply(status=500, content="upstream failure"),
        }[fate]


def expected(plan: list[str], attempts: int, resubmits: int) -> tuple[bool, int, str | None, int]:
    """(healed?, calls, reason, requests sent) for a row answered by `plan`, one fate per
    request sent: an expired or HTTP 500 line is sent again as it was (not a model call), at
    most `resubmits` times."""
    sent = calls = spent = 0
    while True:
        fate = plan[sent] if sent < len(plan) else "ok"
        sent += 1
        if fate in ("expired", "error") and spent < resubmits:
            spent += 1
            continue
        calls += 1
        if fate in ("ok", "fenced"):
            return True, calls, None, sent
        if fate in TERMINAL:
            return False, calls, TERMINAL[fate], sent
        if calls == attempts:
            return False, calls, "spent", sent


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    plans=st.lists(st.lists(st.sampled_from(FATES), max_size=4), min_size=1, max_size=6),
    attempts=st.integers(1, 3),
    resubmits=st.integers(0, 2),
)
def test_any_mix_of_fates_ends_every_row_once_with_its_reason(
    tmp_path_factory: pytest.TempPathFactory,
    plans: list[list[str]],
    attempts: int,
    resubmits: int,
) -> None:
    """For any mix of line fates, budgets and resubmits, every row ends once, with the reason its
    fates call for."""
    fates = dict(enumerate(plans, start=1))
    work = tmp_path_factory.mktemp("fates")
    source = write_input(work / "in.jsonl", list(fates))
    out = work / "out.jsonl"
    with (
        ScriptedServer(batch_replies=Fated(fates)) as server,
        openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as client,
    ):
        report = run_batch_api(
            source,
            out,
            client=client,
            model="m",
            response_model=Ticket,
            contracts=[urgent_summary_explains],
            policy=HealPolicy(max_attempts=attempts),
            poll_interval_s=0,
            resubmits=resubmits,
        )
        written = rows(out)
        assert report.complete
        assert set(written) == {f"t{n}" for n in fates}
        rounds_needed = 0
        for number, plan in fates.items():
            healed, calls, reason, sent = expected(plan, attempts, resubmits)
            row = written[f"t{number}"]
            assert row["ok"] is healed, (plan, row)
            assert row["attempts"] == calls
            if reason == "spent":
                spent = ("max_retries_exceeded", "token_truncated", "invalid_output")
                assert row["reason"] in spent  # invalid_output: one attempt allowed
            elif reason is not None:
                assert row["reason"] == reason
            rounds_needed = max(rounds_needed, sent)
        # one batch per round, each row in as many batches as it sent requests
        assert len(server.batches) == rounds_needed
        every = Counter(_numbers(r for batch in server.batches for r in batch.requests))
        assert every == Counter({n: expected(p, attempts, resubmits)[3] for n, p in fates.items()})
