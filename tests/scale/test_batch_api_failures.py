"""`healjson.batch_api` when the provider misbehaves: hostile result lines, lines that expired
or failed for a transient reason, polls that fail.

Everything runs over real HTTP: the real openai and anthropic SDKs against a `ScriptedServer`
(a `batch_replies` item that is bytes is a result line exactly as a broken provider would send
it).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from healjson._batch.api import patience, result_lines
from healjson._batch.api.result_lines import bounded_lines, read_result_line
from healjson.batch_api import run_batch_api
from healjson.testing import ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES

FIXTURES = CLI_FIXTURES
sys.path.insert(0, str(FIXTURES))
from ticket_pack import Ticket  # noqa: E402

KEY = "sk-batch-failures-0123456789"
SMALL_LIMIT = 300_000  # the result line bound while these tests run (32 MiB by default)


def ticket(number: int) -> str:
    return json.dumps(
        {"urgency": 3, "category": "logistics", "summary": "Stuck", "orderId": f"ORD-{number:06d}"}
    )


def number_of(body: dict[str, Any]) -> int:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return int(re.search(r"ticket (\d+)", user).group(1))  # type: ignore[union-attr]


def write_input(path: Path, count: int) -> Path:
    lines = [json.dumps({"id": f"t{n}", "prompt": f"ticket {n}"}) for n in range(1, count + 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(path: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        assert row["id"] not in found, f"row {row['id']} written twice"
        found[row["id"]] = row
    return found


def client_for(provider: str, server: ScriptedServer) -> Any:
    if provider == "anthropic":
        return anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=KEY, max_retries=0)
    return openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)


def run(provider: str, server: ScriptedServer, source: Path, out: Path, **more: Any) -> Any:
    with client_for(provider, server) as client:  # closed: no socket left to the collector
        return run_batch_api(
            source, out, client=client, model="m", response_model=Ticket, poll_interval_s=0.0,
            **more,
        )  # fmt: skip


# -- hostile result lines ------------------------------------------------------------------------

HOSTILE = ("ok", "deep", "invalid", "huge", "wrong_id", "not_object", "odd_body")
WHY = {
    "deep": "nested too deeply to read",
    "invalid": "is not valid JSON",
    "huge": f"is longer than {SMALL_LIMIT} bytes",
    "wrong_id": "without a result for this request",
    "not_object": "without a result for this request",
}


def hostile_line(kind: str, custom_id: str, provider: str) -> bytes:
    """A result line naming `custom_id` (or, `wrong_id` / `not_object`, none of the batch's)."""
    head = b'{"custom_id": "' + custom_id.encode() + b'", '
    member = b'"result": ' if provider == "anthropic" else b'"response": '
    if kind == "deep":
        return head + member + b"[" * 100_000 + b"]" * 100_000 + b"}"
    if kind == "invalid":
        return head + member + b'{"status_code": 200, "body": {oops'
    if kind == "huge":
        return head + member + b'{"pad": "' + b"x" * (SMALL_LIMIT + 10) + b'"}}'
    if kind == "odd_body":  # readable JSON, nothing like a response
        if provider == "anthropic":
            return (
                head + b'"result": {"type": "succeeded", "message": {"content": [5], "usage": 1}}}'
            )
        return head + b'"response": {"status_code": 200, "body": {"choices": [[1]], "usage": "x"}}}'
    if kind == "wrong_id":
        return b'{"custom_id": "row-999999_r0", ' + member + b"{}}"
    assert kind == "not_object"
    return json.dumps([custom_id, {"custom_id": custom_id}]).encode()


class Hostile:
    """Answers ticket N with the line `kinds[N - 1]` names (a valid ticket for `ok`)."""

    def __init__(self, kinds: list[str], provider: str) -> None:
        self.kinds = kinds
        self.provider = provider

    def __call__(self, custom_id: str, body: dict[str, Any]) -> ScriptedReply | bytes:
        kind = self.kinds[number_of(body) - 1]
        if kind == "ok":
            return ScriptedReply(content=ticket(number_of(body)))
        return hostile_line(kind, custom_id, self.provider)


# every kind is in the explicit examples, for both providers; the drawn mixes add orders
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kinds=st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=6),
    provider=st.sampled_from(["openai", "anthropic"]),
)
@example(kinds=["deep", "ok"], provider="openai")
@example(kinds=["deep", "ok"], provider="anthropic")
@example(kinds=["odd_body", "huge", "invalid", "wrong_id", "not_object"], provider="openai")
@example(kinds=["odd_body", "huge", "invalid", "wrong_id", "not_object"], provider="anthropic")
def test_a_hostile_result_line_is_its_rows_api_error_never_a_crash(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    kinds: list[str],
    provider: str,
) -> None:
    """Any mix of hostile result lines (nested 10^5 deep, invalid JSON, over the size bound,
    naming no request of the batch, not an object, a body like no response): the run
    finishes, each hostile line's row is degraded (`api_error` saying why when the line cannot
    be read), every other row heals."""
    monkeypatch.setattr(result_lines, "MAX_RESULT_LINE_BYTES", SMALL_LIMIT)
    work = tmp_path_factory.mktemp("hostile")
    source = write_input(work / "in.jsonl", len(kinds))
    out = work / "out.jsonl"
    with ScriptedServer(batch_replies=Hostile(kinds, provider)) as server:
        report = run(provider, server, source, out)

    assert report.complete
    written = rows(out)
    assert set(written) == {f"t{n}" for n in range(1, len(kinds) + 1)}
    for number, kind in enumerate(kinds, 1):
        row = written[f"t{number}"]
        if kind == "ok":
            assert row["ok"], row
            continue
        assert row["ok"] is False, row
        if kind == "odd_body":
            continue  # whatever the engine makes of it, one degraded row
        assert row["reason"] == "api_error", row
        assert WHY[kind] in row["errors"][0]["value"], row


def test_bounded_lines_split_any_chunking_and_cut_long_lines() -> None:
    """Lines come out whole whatever the chunks; a line over the bound is cut to its head."""
    data = b'{"a": 1}\n' + b"x" * 50 + b"\n\nlast"
    for size in (1, 3, 7, 64):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        found = list(bounded_lines(chunks, limit=20))
        assert found == [(b'{"a": 1}', False), (b"x" * 50, True), (b"", False), (b"last", False)]


def test_a_result_line_names_its_request_even_when_unreadable() -> None:
    """A result line too deep to read still names its request's custom id and says why it cannot
    be read."""
    deep = b'{"custom_id": "row-7_r2", "x": ' + b"[" * 100_000 + b"}"
    assert ("row-7_r2", None, "is nested too deeply to read") == read_result_line(deep)
    assert read_result_line(b'["row-7_r2"]')[0] is None
    assert read_result_line(b"   ") == (None, None, None)
    shallow = {"custom_id": "row-1_r0", "x": json.loads("[" * 200 + "]" * 200)}
    found = read_result_line(json.dumps(shallow).encode())
    assert (found[0], found[1]) == ("row-1_r0", None)
    assert "deeper than" in str(found[2])


def completion_line(custom_id: str, content: str) -> bytes:
    """An OpenAI Batch API result line answering `custom_id` with `content`."""
    body = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip
    response = {"status_code": 200, "request_id": "req-1", "body": body}
    return json.dumps({"id": "line", "custom_id": custom_id, "response": response}).encode()


class Twice:
    """Answers ticket N with two result lines: the same ticket twice for N in `same`, else two
    different tickets."""

    def __init__(self, same: set[int]) -> None:
        self.same = same

    def __call__(self, custom_id: str, body: dict[str, Any]) -> bytes:
        number = number_of(body)
        second = number if number in self.same else number + 1000
        return (
            completion_line(custom_id, ticket(number))
            + b"\n"
            + completion_line(custom_id, ticket(second))
        )


def test_two_different_results_for_one_request_are_its_rows_api_error(tmp_path: Path) -> None:
    """A results file holding two different results for one request takes neither (the row
    degrades with `api_error` saying so); the same result twice is that result."""
    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Twice(same={1})) as server:
        report = run("openai", server, source, out)
    assert report.complete
    written = rows(out)
    assert written["t1"]["ok"]
    assert written["t1"]["value"]["orderId"] == "ORD-000001"
    assert written["t2"]["ok"] is False
    assert written["t2"]["reason"] == "api_error"
    assert "two different results" in written["t2"]["errors"][0]["value"]


# -- expired and transient lines are resubmitted -------------------------------------------------


class Plans:
    """Answers ticket N's k-th request with `plans[N][k]` (a valid ticket after the plan)."""

    def __init__(self, plans: dict[int, list[ScriptedReply]]) -> None:
        self.plans = plans
        self.sent: dict[int, list[dict[str, Any]]] = {}

    def __call__(self, custom_id: str, body: dict[str, Any]) -> ScriptedReply:
        number = number_of(body)
        sent = self.sent.setdefault(number, [])
        sent.append(body)
        plan = self.plans.get(number, [])
        return (
            plan[len(sent) - 1] if len(sent) <= len(plan) else ScriptedReply(content=ticket(number))
        )


EXPIRED = ScriptedReply(batch_expired=True)


def status(code: int, message: str = "try later") -> ScriptedReply:
    return ScriptedReply(status=code, content=message)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_expired_and_transient_lines_are_sent_again_as_they_were(
    tmp_path: Path, provider: str
) -> None:
    """An expired line, and one failed with 408 / 409 / 429 / 5xx (Anthropic: `api_error`,
    `overloaded_error`, `rate_limit_error`, `timeout_error`), is sent again unchanged in the
    next round (not a model attempt) and heals there; a 400 degrades at once."""
    plans = {
        1: [EXPIRED],
        2: [status(429)],
        3: [status(503), EXPIRED],
        4: [status(400, "bad request")],
        5: [status(408), status(409)] if provider == "openai" else [status(504), status(429)],
        6: [status(529)],
    }
    answers = Plans(plans)
    source = write_input(tmp_path / "in.jsonl", len(plans))
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=answers) as server:
        report = run(provider, server, source, out)

    written = rows(out)
    assert report.complete
    assert {k for k, r in written.items() if r["ok"]} == {"t1", "t2", "t3", "t5", "t6"}
    assert all(written[f"t{n}"]["attempts"] == 1 for n in (1, 2, 3, 5, 6))
    assert (written["t4"]["reason"], written["t4"]["attempts"]) == ("api_error", 1)
    assert "bad request" in written["t4"]["errors"][0]["value"]
    assert {n: len(sent) for n, sent in answers.sent.items()} == {
        1: 2,
        2: 2,
        3: 3,
        4: 1,
        5: 3,
        6: 2,
    }
    assert all(sent == [sent[0]] * len(sent) for sent in answers.sent.values())
    assert report.resubmitted == 7


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_resubmits_are_bounded_then_the_row_degrades_with_the_providers_reason(
    tmp_path: Path, provider: str
) -> None:
    """Expired and failing lines are resubmitted at most `resubmits` times, then the row degrades
    with the provider's reason."""
    plans = {1: [EXPIRED] * 5, 2: [status(500, "upstream overloaded")] * 5}
    answers = Plans(plans)
    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=answers) as server:
        report = run(provider, server, source, out, resubmits=2)

    written = rows(out)
    assert report.complete
    assert {n: len(sent) for n, sent in answers.sent.items()} == {1: 3, 2: 3}
    assert (written["t1"]["reason"], written["t1"]["attempts"]) == ("timeout", 1)
    assert (written["t2"]["reason"], written["t2"]["attempts"]) == ("api_error", 1)
    said = written["t2"]["errors"][0]["value"]
    assert "upstream overloaded" in said
    assert "resubmitted 2 time(s)" in said
    assert "window ended" in written["t1"]["errors"][0]["value"]


def test_the_command_line_bounds_resubmits(tmp_path: Path) -> None:
    """`--resubmits 0` degrades an expired line at once; the default sends it again and says so."""
    from typer.testing import CliRunner

    from healjson._cli.app import app

    source = write_input(tmp_path / "in.jsonl", 1)
    results = []
    for extra in (["--resubmits", "0"], []):
        out = tmp_path / f"out{len(extra)}.jsonl"
        with ScriptedServer(batch_replies=Plans({1: [EXPIRED]})) as server:
            args = ["batch", str(source), "--out", str(out), "--batch-api", "--model", "m"]
            args += ["--response-model", f"{FIXTURES / 'ticket_pack.py'}:Ticket"]
            args += ["--base-url", server.base_url, "--api-key", KEY, "--poll-interval", "0"]
            results.append((CliRunner().invoke(app, [*args, *extra]), rows(out)["t1"]))
    (once, row_once), (again, row_again) = results
    assert (once.exit_code, again.exit_code) == (0, 0), once.output
    assert (row_once["ok"], row_once["reason"]) == (False, "timeout")
    assert row_again["ok"]
    assert "resubmitted 1 request(s) that expired or failed transiently" in again.output


# -- polling through transient failures ----------------------------------------------------------


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patience, "FIRST_DELAY_S", 0.001)
    monkeypatch.setattr(patience, "MOST_DELAY_S", 0.004)


@pytest.mark.usefixtures("quick_backoff")
@pytest.mark.parametrize(
    ("provider", "code"), [("openai", 503), ("anthropic", 529), ("openai", 429)]
)
def test_polling_and_downloads_outlast_transient_failures(
    tmp_path: Path, provider: str, code: int
) -> None:
    """More failed reads in a row than the SDK retries (here none): polls and result
    downloads are retried with backoff, and the run finishes."""
    source = write_input(tmp_path / "in.jsonl", 3)
    out = tmp_path / "out.jsonl"
    events: list[str] = []
    with ScriptedServer(batch_replies=Plans({})) as server:
        server.fail_batch_reads(7, code)
        report = run(provider, server, source, out, on_event=lambda name, _: events.append(name))

    assert report.complete
    assert report.stopped is None
    assert all(row["ok"] for row in rows(out).values())
    assert events.count("retrying") == 7


def test_a_provider_failing_for_too_long_stops_cleanly_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider failing for too long stops the run cleanly, saying which step failed, and the
    next run resumes."""
    monkeypatch.setattr(patience, "FIRST_DELAY_S", 0.01)
    monkeypatch.setattr(patience, "RETRY_FOR_S", 0.1)
    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Plans({})) as server:
        server.fail_batch_reads(10_000, 502)
        stopped = run("openai", server, source, out)
        assert stopped.stopped is not None
        assert "checking batch batch_scripted_1 failed" in stopped.stopped
        assert "HTTP 502" in stopped.stopped
        assert not stopped.complete
        assert out.read_text() == ""  # nothing written, nothing lost: the ledger has it all

        server.fail_batch_reads(0)
        resumed = run("openai", server, source, out)
        assert resumed.complete
        assert resumed.stopped is None
        assert set(rows(out)) == {"t1", "t2"}
        assert len(server.batches) == 1  # resumed the batch in flight, none sent again


def test_the_command_line_stops_without_a_traceback_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line stops on a failing provider with a message and no traceback, and resumes
    on the next run."""
    from typer.testing import CliRunner

    from healjson._cli.app import app

    monkeypatch.setattr(patience, "FIRST_DELAY_S", 0.01)
    monkeypatch.setattr(patience, "RETRY_FOR_S", 0.1)
    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Plans({})) as server:
        args = ["batch", str(source), "--out", str(out), "--batch-api", "--model", "m"]
        args += ["--response-model", f"{FIXTURES / 'ticket_pack.py'}:Ticket"]
        args += ["--base-url", server.base_url, "--api-key", KEY, "--poll-interval", "0"]
        server.fail_batch_reads(10_000, 500)
        stopped = CliRunner().invoke(app, args)
        server.fail_batch_reads(0)
        resumed = CliRunner().invoke(app, args)

    assert stopped.exit_code == 1
    assert isinstance(stopped.exception, SystemExit)  # no traceback
    assert "batch stopped: checking batch" in stopped.output
    assert "re-run the same command to resume" in stopped.output
    assert "Traceback" not in stopped.output
    assert resumed.exit_code == 0, resumed.output
    assert set(rows(out)) == {"t1", "t2"}


def test_transient_failures_are_told_from_the_others() -> None:
    """Transient failures (retryable statuses, connection errors, timeouts) are told from the
    others for both SDKs."""
    request = httpx.Request("GET", "http://127.0.0.1/v1/batches/b")

    def status(code: int) -> Any:
        response = httpx.Response(code, request=request)
        return openai.APIStatusError("failed", response=response, body=None)

    transient = [
        *(status(code) for code in (408, 409, 429, 500, 502, 503, 504, 529)),
        openai.APIConnectionError(request=request),
        openai.APITimeoutError(request=request),
        anthropic.APIConnectionError(request=request),
        ConnectionResetError(),
        TimeoutError(),
        httpx.ReadError("connection reset", request=request),
    ]
    final = [status(400), status(401), status(404), ValueError("x"), KeyError("y")]
    assert all(patience.is_transient(exc) for exc in transient)
    assert not any(patience.is_transient(exc) for exc in final)


def test_backoff_is_capped_jittered_and_bounded_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Delays double from FIRST_DELAY_S up to MOST_DELAY_S, each in the upper half of its step;
    retrying ends before RETRY_FOR_S of failures would pass; other errors are not retried."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    def failing() -> None:
        raise ConnectionResetError("reset")

    with pytest.raises(
        patience.ProviderUnavailable, match=r"polling failed .* ConnectionResetError"
    ):
        patience.patiently(failing, "polling", sleep=sleep, clock=lambda: now[0])
    assert sum(slept) <= patience.RETRY_FOR_S
    assert len(slept) >= 10
    for number, delay in enumerate(slept):
        step = min(patience.MOST_DELAY_S, patience.FIRST_DELAY_S * 2**number)
        assert step / 2 <= delay <= step
    assert max(slept) <= patience.MOST_DELAY_S

    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise TimeoutError
        return "done"

    assert "done" == patience.patiently(flaky, "x", sleep=lambda _: None)
    with pytest.raises(KeyError):
        patience.patiently(lambda: {}["k"], "x", sleep=sleep)


def test_cancelling_a_batch_that_ended_meanwhile_keeps_its_answers(tmp_path: Path) -> None:
    """The provider refuses to cancel an ended batch (HTTP 409): no failure, its results are
    collected, and the next run writes them without sending anything again."""
    from healjson.batch_api import cancel_batch_api

    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Plans({})) as server:
        run("openai", server, source, out, wait=False)
        with client_for("openai", server) as client:
            cancelled = cancel_batch_api(
                source, out, client=client, model="m", response_model=Ticket, poll_interval_s=0
            )
        finished = run("openai", server, source, out)

        assert cancelled.stopped is None
        assert finished.complete
        assert set(rows(out)) == {"t1", "t2"}
        assert len(server.batches) == 1
