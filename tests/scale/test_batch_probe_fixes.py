"""`healjson.batch_api`: the probe's defects, fixed and guarded.

- A row is judged on the answer the model sent, or degrades saying why: an answer the ledger
  can only keep redacted (a credential shape, the client's key) is an `api_error`, never a
  verdict on the redacted text; a healed value the redactor would change is never written `ok`.
- `cancel_batch_api` on a batch that already ended is no error, for either provider, and every
  part of the cancel is attempted.
- The report counts every row's usage as the rows do (`tokens`, `cost`).

Everything runs over real HTTP: the real openai and anthropic SDKs against a `ScriptedServer`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from healjson import HealPolicy, outcome_from_dict
from healjson.batch_api import cancel_batch_api, default_ledger, run_batch_api
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

KEY = "sk-probe-fixes-0123456789abcdef"
SECRET = "Authorization: Bearer " + "x" * 60


class Doc(BaseModel):
    snippet: str = Field(max_length=40)


class Count(BaseModel):
    n: int


def client_for(provider: str, server: ScriptedServer) -> Any:
    if provider == "anthropic":
        base = server.base_url.removesuffix("/v1")
        return anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0)
    return openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)


def model_for(provider: str) -> str:
    return "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4o-mini"


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def round_of(custom_id: str) -> int:
    return int(custom_id.rsplit("_r", 1)[1])


# -- 1. judged on what the model sent ---------------------------------------------------------


def run_answers(tmp_path: Path, provider: str, answers: list[str], **kw: Any) -> Path:
    """One row answered `answers[round]` in each round; the output's path."""
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "p"}\n')

    def replies(custom_id: str, body: Any) -> ScriptedReply:
        return ScriptedReply(content=answers[min(round_of(custom_id), len(answers) - 1)])

    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=replies) as server:
        client = client_for(provider, server)
        args = dict(client=client, model=model_for(provider), poll_interval_s=0, **kw)
        run_batch_api(tmp_path / "in.jsonl", out, **args)
    return out


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_answer_the_redactor_changes_degrades_instead_of_being_judged(
    tmp_path: Path, provider: str
) -> None:
    """An invalid answer that only its redacted copy makes valid degrades with `api_error`."""
    answers = [json.dumps({"snippet": SECRET}), json.dumps({"snippet": "short"})]
    out = run_answers(tmp_path, provider, answers, response_model=Doc)
    (row,) = rows_of(out)
    assert (row["ok"], row["reason"], row["attempts"]) == (False, "api_error", 1)
    assert "credential" in json.dumps(row["errors"])
    assert row["usage"]["requests"] == 1
    assert "x" * 60 not in out.read_text()
    assert b"x" * 60 not in default_ledger(out).read_bytes()


@pytest.mark.parametrize("kill_at", ["collected", "written"])
def test_a_resumed_run_degrades_the_altered_answer_too(tmp_path: Path, kill_at: str) -> None:
    """A run killed after the altered answer was kept resumes to the same degraded row."""
    (tmp_path / "in.jsonl").write_text('{"id": "a", "prompt": "p"}\n')
    answer = json.dumps({"snippet": SECRET})

    class Kill(BaseException):
        pass

    def on_event(name: str, info: Any) -> None:
        if name == kill_at:
            raise Kill

    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=lambda cid, body: ScriptedReply(content=answer)) as server:
        args: dict[str, Any] = {
            "client": client_for("openai", server), "model": "gpt-4o-mini",
            "response_model": Doc, "poll_interval_s": 0,
        }  # fmt: skip
        with pytest.raises(Kill):
            run_batch_api(tmp_path / "in.jsonl", out, on_event=on_event, **args)
        report = run_batch_api(tmp_path / "in.jsonl", out, **args)
    (row,) = rows_of(out)
    assert report.done == 1
    assert (row["ok"], row["reason"]) == (False, "api_error")


def test_an_answer_echoing_the_client_key_is_never_healed_redacted(tmp_path: Path) -> None:
    """A valid answer holding the client's key degrades instead of healing as `[redacted]`."""
    out = run_answers(tmp_path, "openai", [json.dumps({"snippet": KEY})], response_model=Doc)
    (row,) = rows_of(out)
    assert (row["ok"], row["reason"]) == (False, "api_error")
    assert KEY not in out.read_text()


def test_a_value_the_redactor_would_change_is_not_written_ok(tmp_path: Path) -> None:
    """A value whose key hides behind a JSON escape in the answer is written degraded, not `ok`."""
    hidden = KEY.replace("-", "\\u002d", 1)
    answer = '{"snippet": "' + hidden + '"}'
    out = run_answers(tmp_path, "openai", [answer], response_model=Doc, full=True)
    (row,) = rows_of(out)
    assert (row["ok"], row["reason"]) == (False, "api_error")
    assert "value" not in row
    # the row's `outcome` member says what the row says, and reads back as that outcome
    assert (row["outcome"]["ok"], row["outcome"]["reason"]) == (False, "api_error")
    assert row["outcome"]["errors"] == row["errors"]
    assert not outcome_from_dict(row["outcome"]).ok
    assert KEY not in out.read_text()


WORDS = st.sampled_from(["short", "ok then", "Bearer ", "x" * 24, KEY, "sk-", "password=", " "])


@given(parts=st.lists(WORDS, min_size=1, max_size=4))
@pinned(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_row_is_the_answer_as_sent_or_an_explicit_degrade(
    tmp_path_factory: pytest.TempPathFactory, parts: list[str]
) -> None:
    """Whatever the answer holds, a healed row's value is exactly the model's text."""
    text = "".join(parts)
    tmp = tmp_path_factory.mktemp("answer")
    answers = [json.dumps({"snippet": text}), json.dumps({"snippet": "short"})]
    out = run_answers(tmp, "openai", answers, response_model=Doc)
    (row,) = rows_of(out)
    if row["ok"]:
        assert row["value"]["snippet"] in (text, "short")
        assert row["attempts"] == (1 if row["value"]["snippet"] == text else 2)
    else:
        assert row["reason"] == "api_error"
        assert "credential" in json.dumps(row["errors"])


# -- 2. a cancel of a batch that already ended ------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cancelling_batches_that_already_ended_is_no_error(tmp_path: Path, provider: str) -> None:
    """Every part's cancel is attempted and a batch that ended first is collected later."""
    lines = "".join(json.dumps({"id": f"t{n}", "prompt": f"ticket {n}"}) + "\n" for n in (1, 2))
    (tmp_path / "in.jsonl").write_text(lines)
    out = tmp_path / "out.jsonl"
    reply = ScriptedReply(content='{"n": 1}')
    with ScriptedServer(batch_replies=lambda cid, b: reply, batch_delay_s=0.3) as server:
        args: dict[str, Any] = {
            "client": client_for(provider, server),
            "model": model_for(provider),
            "response_model": Count,
        }
        run_batch_api(tmp_path / "in.jsonl", out, wait=False, max_requests_per_batch=1, **args)
        time.sleep(0.6)  # both batches end, nobody polled
        cancel_batch_api(tmp_path / "in.jsonl", out, poll_interval_s=0.05, **args)
        report = run_batch_api(tmp_path / "in.jsonl", out, poll_interval_s=0, **args)
        sent = len(server.batches)
    assert (report.done, report.pending) == (2, 0)
    assert sent == 2  # the ended batches' answers were kept, not asked again
    assert all(row["ok"] for row in rows_of(out))


# -- 3. the report counts what the rows count -------------------------------------------------


def body(n: int, *, usage: bool = True, reply: bool = True) -> dict[str, Any]:
    message = {"role": "assistant", "content": json.dumps({"n": n})}
    data: dict[str, Any] = {
        "id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}] if reply else None,
    }  # fmt: skip
    if usage:
        data["usage"] = {"prompt_tokens": 100 + n, "completion_tokens": 10, "total_tokens": 0}
    return data


def line(custom_id: str, data: Any, status: int = 200) -> str:
    response = {"status_code": status, "request_id": "r", "body": data}
    return json.dumps({"id": "x", "custom_id": custom_id, "response": response, "error": None})


KINDS = ("reply", "no_usage", "no_reply_usage", "no_reply", "error", "broken", "missing", "two")


def result_lines(kind: str, custom_id: str, n: int) -> bytes:
    """The result line(s) of one request of the given kind."""
    if kind == "reply":
        text = line(custom_id, body(n))
    elif kind == "no_usage":
        text = line(custom_id, body(n, usage=False))
    elif kind == "no_reply_usage":
        text = line(custom_id, body(n, reply=False))
    elif kind == "no_reply":
        text = line(custom_id, body(n, usage=False, reply=False))
    elif kind == "error":
        text = line(custom_id, {"error": {"message": "bad", "type": "invalid_request_error"}}, 400)
    elif kind == "broken":
        text = '{"id": "x", "custom_id": "' + custom_id + '", "response": {broken'
    elif kind == "two":
        text = line(custom_id, body(n)) + "\n" + line(custom_id, body(n + 1))
    else:
        return b""
    return (text + "\n").encode()


def run_kinds(tmp_path: Path, kinds: list[str]) -> tuple[Any, list[dict[str, Any]]]:
    lines = "".join(
        json.dumps({"id": f"t{n}", "prompt": f"ticket {n}"}) + "\n" for n in range(len(kinds))
    )
    (tmp_path / "in.jsonl").write_text(lines)

    def replies(custom_id: str, request: Any) -> bytes:
        n = int(re.search(r"ticket (\d+)", request["messages"][0]["content"])[1])  # type: ignore[index]
        return result_lines(kinds[n] if round_of(custom_id) == 0 else "reply", custom_id, n)

    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=replies) as server:
        report = run_batch_api(
            tmp_path / "in.jsonl", out, client=client_for("openai", server), model="gpt-4o-mini",
            response_model=Count, poll_interval_s=0, policy=HealPolicy(max_attempts=2),
        )  # fmt: skip
    return report, rows_of(out)


def assert_report_counts_rows(report: Any, rows: list[dict[str, Any]]) -> None:
    prompt = sum(row["usage"]["prompt_tokens"] for row in rows)
    completion = sum(row["usage"]["completion_tokens"] for row in rows)
    assert sum(r.prompt_tokens for r in report.rounds) == prompt
    assert sum(r.completion_tokens for r in report.rounds) == completion
    assert report.tokens == prompt + completion
    billed = [row["usage"] for row in rows if row["usage"]["total_tokens"]]
    costs = [usage.get("cost") for usage in billed]
    if any(cost is None for cost in costs):
        assert report.cost is None
    else:
        assert report.cost == pytest.approx(sum(costs) * 0.5)


def test_a_body_that_is_no_reply_but_reports_usage_is_in_the_report(tmp_path: Path) -> None:
    """The usage a 200 body without a reply reports is in the report's tokens and cost."""
    report, rows = run_kinds(tmp_path, ["reply", "no_reply_usage"])
    assert [row["ok"] for row in rows] == [True, False]
    assert report.tokens == (100 + 10) + (101 + 10)
    assert report.cost is not None
    assert_report_counts_rows(report, rows)


@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=6))
@pinned(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_report_counts_every_rows_usage(
    tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    """Whatever mix of result lines a batch gives, the report's totals are the rows' sums."""
    report, rows = run_kinds(tmp_path_factory.mktemp("kinds"), kinds)
    assert len(rows) == len(kinds)
    assert_report_counts_rows(report, rows)
