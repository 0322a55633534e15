"""`healjson.batch_api`: a row whose batch result is a failure says what that request cost, by
the rule the live path's calls follow.

An error answer from the provider (an OpenAI response line with an HTTP status of 400 or more,
an Anthropic `errored` result of a known error type) is one request and no token; a request its
batch never ran (expired, an Anthropic `canceled` result, an OpenAI batch that failed as a
whole) is no request; any other failure (an error line without a status, a line that cannot be
read, two different results, no result line) may have run: one request, its prompt estimated
from the request it answers, marked `estimated`.

Everything runs over real HTTP: the real openai and anthropic SDKs against a `ScriptedServer`
whose `batch_replies` give each request's result line exactly as a provider would write it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from healjson import HealPolicy
from healjson._core.wire.reply import estimate_tokens
from healjson.batch_api import run_batch_api
from healjson.testing import ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES

sys.path.insert(0, str(CLI_FIXTURES))
from ticket_pack import Ticket

KEY = "sk-batch-usage-0123456789abcdef"

ANSWERED = "an error answer: one request, no token"
NOT_RUN = "never run: no request"
ESTIMATED = "may have run: one request, its prompt estimated"

# the error types of an Anthropic `errored` result (`anthropic.types.shared.ErrorObject`'s, and
# `request_too_large`, its HTTP 413)
ANTHROPIC_ERRORS = (
    "invalid_request_error",
    "authentication_error",
    "billing_error",
    "permission_error",
    "not_found_error",
    "request_too_large",
    "rate_limit_error",
    "api_error",
    "timeout_error",
    "overloaded_error",
    "conflict_error",
    "memory_path_conflict_error",
    "memory_precondition_failed_error",
)
HTTP_ERRORS = (400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504)


def ticket(number: int) -> str:
    return json.dumps(
        {"urgency": 3, "category": "logistics", "summary": "Stuck", "orderId": f"ORD-{number:06d}"}
    )


def number_of(body: dict[str, Any]) -> int:
    """The ticket number a request asks about (OpenAI `messages`, Anthropic `params`)."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    text = user if isinstance(user, str) else json.dumps(user)
    return int(re.search(r"ticket (\d+)", text).group(1))  # type: ignore[union-attr]


def write_input(path: Path, count: int) -> Path:
    lines = [json.dumps({"id": f"t{n}", "prompt": f"ticket {n}"}) for n in range(1, count + 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(path: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in map(json.loads, path.read_text("utf-8").splitlines())}


def run(provider: str, server: ScriptedServer, source: Path, out: Path, **more: Any) -> Any:
    client: Any
    if provider == "anthropic":
        client = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=KEY, max_retries=0)
    else:
        client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    with client:
        return run_batch_api(
            source, out, client=client, model="m", response_model=Ticket, poll_interval_s=0.0,
            full=True, **more,
        )  # fmt: skip


# -- result lines, as each provider writes them ------------------------------------------------


def openai_line(custom_id: str, response: Any = None, error: Any = None) -> bytes:
    line = {"id": "batch_req_1", "custom_id": custom_id, "response": response, "error": error}
    return json.dumps(line).encode()


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12},
    }  # fmt: skip


def anthropic_line(custom_id: str, result: dict[str, Any]) -> bytes:
    return json.dumps({"custom_id": custom_id, "result": result}).encode()


def message(content: str) -> dict[str, Any]:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": content}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 7, "output_tokens": 5},
    }  # fmt: skip


def succeeded(provider: str, custom_id: str, content: str) -> bytes:
    if provider == "anthropic":
        return anthropic_line(custom_id, {"type": "succeeded", "message": message(content)})
    return openai_line(custom_id, {"status_code": 200, "body": completion(content)})


# Each kind of failed result: `(provider, name) -> (line maker, values, reason, what it cost)`;
# a maker takes the custom id and one of its values (a status, an error type or code, or None).
def http_error(custom_id: str, status: int) -> bytes:
    body = {"error": {"message": f"refused ({status})", "type": "invalid_request_error"}}
    return openai_line(custom_id, {"status_code": status, "body": body})


def errored(custom_id: str, kind: str) -> bytes:
    error = {"type": "error", "error": {"type": kind, "message": f"failed ({kind})"}}
    return anthropic_line(custom_id, {"type": "errored", "error": error})


def unreadable(custom_id: str, _: Any = None) -> bytes:
    return b'{"custom_id": "' + custom_id.encode() + b'", "result": {oops'


NONE = (None,)
KINDS: dict[tuple[str, str], tuple[Any, tuple[Any, ...], str, str]] = {
    ("openai", "http_error"): (http_error, HTTP_ERRORS, "api_error", ANSWERED),
    ("openai", "expired"): (
        lambda cid, _: openai_line(cid, error={"code": "batch_expired", "message": "late"}),
        NONE, "timeout", NOT_RUN,
    ),
    ("openai", "canceled"): (  # the batch was cancelled before this request ran
        lambda cid, _: openai_line(cid, error={"code": "batch_cancelled", "message": "gone"}),
        NONE, "api_error", NOT_RUN,
    ),
    ("openai", "error_without_status"): (
        lambda cid, code: openai_line(cid, error={"code": code, "message": "no answer"}),
        ("request_timeout", "server_error", None), "api_error", ESTIMATED,
    ),
    ("openai", "status_without_body"): (
        lambda cid, status: openai_line(cid, {"status_code": status, "body": None}),
        (200, None), "api_error", ESTIMATED,
    ),
    ("anthropic", "errored"): (errored, ANTHROPIC_ERRORS, "api_error", ANSWERED),
    ("anthropic", "expired"): (
        lambda cid, _: anthropic_line(cid, {"type": "expired"}), NONE, "timeout", NOT_RUN,
    ),
    ("anthropic", "canceled"): (
        lambda cid, _: anthropic_line(cid, {"type": "canceled"}), NONE, "api_error", NOT_RUN,
    ),
    ("anthropic", "succeeded_without_message"): (
        lambda cid, _: anthropic_line(cid, {"type": "succeeded"}), NONE, "api_error", ESTIMATED,
    ),
    ("anthropic", "unknown_type"): (
        lambda cid, kind: anthropic_line(cid, {"type": kind}), ("pending", None), "api_error",
        ESTIMATED,
    ),
}  # fmt: skip
for _provider in ("openai", "anthropic"):
    KINDS[(_provider, "unreadable")] = (unreadable, NONE, "api_error", ESTIMATED)
    KINDS[(_provider, "no_result_line")] = (  # its line names no request of the batch
        lambda cid, _, p=_provider: succeeded(p, "row-999999_r0", ticket(1)),
        NONE, "api_error", ESTIMATED,
    )  # fmt: skip
    KINDS[(_provider, "two_results")] = (  # two different answers: neither is taken
        lambda cid, _, p=_provider: (
            succeeded(p, cid, ticket(1)) + b"\n" + succeeded(p, cid, ticket(1001))
        ),
        NONE, "api_error", ESTIMATED,
    )  # fmt: skip


def assert_cost(row: dict[str, Any], cost: str) -> None:
    """The row's usage is what `cost` says its one failed request cost."""
    usage = row["usage"]
    [attempt] = row["outcome"]["attempts"]
    if cost == NOT_RUN:
        assert (usage["requests"], usage["total_tokens"], usage["estimated"]) == (0, 0, False)
    elif cost == ANSWERED:
        assert (usage["requests"], usage["total_tokens"], usage["estimated"]) == (1, 0, False)
    else:
        sent = estimate_tokens(attempt["messages"])
        assert (usage["requests"], usage["prompt_tokens"], usage["estimated"]) == (1, sent, True)
        assert sent > 0
        assert usage["completion_tokens"] == 0
    assert attempt["usage"] == usage  # the attempt that failed is the one that cost it


def kinds_of(provider: str) -> list[str]:
    return sorted(name for p, name in KINDS if p == provider)


def every(provider: str) -> tuple[str, list[tuple[str, Any]]]:
    """One row of each kind of failed result of `provider`."""
    return provider, [(name, KINDS[(provider, name)][1][0]) for name in kinds_of(provider)]


@st.composite
def failures(draw: st.DrawFn) -> tuple[str, list[tuple[str, Any]]]:
    """A provider and, per row, a kind of failed result and the value its line is made with."""
    provider = draw(st.sampled_from(["openai", "anthropic"]))
    names = draw(st.lists(st.sampled_from(kinds_of(provider)), min_size=1, max_size=4))
    return provider, [(n, draw(st.sampled_from(KINDS[(provider, n)][1]))) for n in names]


# every kind is in the explicit examples; the drawn ones add values and mixes
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(drawn=failures())
@example(drawn=every("openai"))
@example(drawn=every("anthropic"))
@example(drawn=("openai", [("http_error", 503), ("status_without_body", None)]))
@example(drawn=("anthropic", [("errored", "overloaded_error"), ("unknown_type", None)]))
def test_a_failed_result_line_costs_what_its_kind_was_billed(
    tmp_path_factory: pytest.TempPathFactory, drawn: tuple[str, list[tuple[str, Any]]]
) -> None:
    """Each kind of failed result line degrades its row with the provider's reason and the usage
    its kind cost: an error answer one request and no token, a request never run nothing, any
    other failure one request with its prompt estimated (`estimated`)."""
    provider, plan = drawn

    def line(custom_id: str, body: dict[str, Any]) -> bytes:
        name, value = plan[number_of(body) - 1]
        made: bytes = KINDS[(provider, name)][0](custom_id, value)
        return made

    work = tmp_path_factory.mktemp("usage")
    source = write_input(work / "in.jsonl", len(plan))
    out = work / "out.jsonl"
    with ScriptedServer(batch_replies=line) as server:
        report = run(provider, server, source, out, resubmits=0)

    assert report.complete
    written = rows(out)
    for number, (name, _) in enumerate(plan, 1):
        row = written[f"t{number}"]
        _, _, reason, cost = KINDS[(provider, name)]
        assert (row["ok"], row["reason"]) == (False, reason), (name, row)
        assert_cost(row, cost)


class Rounds:
    """Answers ticket N's k-th request with `plans[N][k]` (a result line made from the custom
    id, or a reply); a valid ticket after its plan."""

    def __init__(self, provider: str, plans: dict[int, list[Any]]) -> None:
        self.provider = provider
        self.plans = plans
        self.sent: dict[int, int] = {}

    def __call__(self, custom_id: str, body: dict[str, Any]) -> ScriptedReply | bytes:
        number = number_of(body)
        index = self.sent[number] = self.sent.get(number, 0) + 1
        plan = self.plans.get(number, [])
        if index > len(plan):
            return ScriptedReply(content=ticket(number))
        item = plan[index - 1]
        return item(custom_id) if callable(item) else item  # type: ignore[no-any-return]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_repairs_failed_result_costs_its_repair_request(tmp_path: Path, provider: str) -> None:
    """A repair request whose result cannot be read is estimated from that repair request (the
    original messages, the answer quoted back, the repair prompt), added to what the first
    answer reported."""
    broken = ScriptedReply(content='{"urgency": 3}')  # a repair: fields are missing
    source = write_input(tmp_path / "in.jsonl", 1)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Rounds(provider, {1: [broken, unreadable]})) as server:
        run(provider, server, source, out)

    row = rows(out)["t1"]
    assert (row["ok"], row["reason"]) == (False, "api_error")
    first, repair = row["outcome"]["attempts"]
    assert not first["usage"]["estimated"]
    sent = estimate_tokens(repair["messages"])
    assert sent > estimate_tokens(first["messages"])  # the repair request, not the first one
    assert (repair["usage"]["requests"], repair["usage"]["prompt_tokens"]) == (1, sent)
    assert repair["usage"]["estimated"]
    usage = row["usage"]
    assert usage["requests"] == 2
    assert usage["prompt_tokens"] == first["usage"]["prompt_tokens"] + sent
    assert usage["estimated"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_resubmitted_failures_count_only_the_last_one(tmp_path: Path, provider: str) -> None:
    """A transient error answer resubmitted until `resubmits` runs out costs one request (the
    last, a model attempt), as an SDK's own retries do on the live path; an expired one none."""
    status = ScriptedReply(status=503, content="busy")
    expired = ScriptedReply(batch_expired=True)
    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    plans = {1: [status] * 3, 2: [expired] * 3}
    with ScriptedServer(batch_replies=Rounds(provider, plans)) as server:
        run(provider, server, source, out, resubmits=2)

    written = rows(out)
    assert (written["t1"]["reason"], written["t2"]["reason"]) == ("api_error", "timeout")
    assert_cost(written["t1"], ANSWERED)
    assert_cost(written["t2"], NOT_RUN)


def test_the_rows_of_a_batch_that_failed_as_a_whole_cost_nothing(tmp_path: Path) -> None:
    """An OpenAI batch that failed validation ran none of its requests: each row degrades with
    `api_error` saying why, at no request and no token."""
    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Rounds("openai", {}), batch_max_requests=1) as server:
        run("openai", server, source, out)
        assert [batch.status for batch in server.batches] == ["failed"]

    for row in rows(out).values():
        assert (row["ok"], row["reason"]) == (False, "api_error")
        assert "over this server's limit" in row["errors"][0]["value"]
        assert_cost(row, NOT_RUN)


def test_a_canceled_line_of_a_batch_healjson_cancelled_is_sent_again(tmp_path: Path) -> None:
    """An Anthropic `canceled` result of a batch `cancel_batch_api` stopped is no result: the
    row runs again and heals, its usage that of the answer it got."""
    from healjson.batch_api import cancel_batch_api

    source = write_input(tmp_path / "in.jsonl", 1)
    out = tmp_path / "out.jsonl"
    slow = ScriptedReply(content=ticket(1), delay_s=60)
    with ScriptedServer(batch_replies=Rounds("anthropic", {1: [slow]})) as server:
        run("anthropic", server, source, out, wait=False)
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key=KEY, max_retries=0
        ) as client:
            cancel_batch_api(
                source, out, client=client, model="m", response_model=Ticket, poll_interval_s=0
            )
        assert server.batches[0].outcomes == ("canceled",)
        run("anthropic", server, source, out)

    row = rows(out)["t1"]
    assert row["ok"], row
    assert row["usage"]["requests"] == 1
    assert not row["usage"]["estimated"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_result_body_that_is_no_reply_costs_the_usage_it_reported(
    tmp_path: Path, provider: str
) -> None:
    """A succeeded result line whose body is no reply of its format but carries its usage
    costs exactly that usage (one request, not estimated); one without usage is estimated."""
    if provider == "anthropic":
        body: dict[str, Any] = {**message("x"), "content": [{"type": "text", "text": 5}]}
        bare = {key: value for key, value in body.items() if key != "usage"}

        def line(custom_id: str, body: dict[str, Any]) -> bytes:
            return anthropic_line(custom_id, {"type": "succeeded", "message": body})
    else:
        body = {**completion("x"), "choices": None}
        bare = {key: value for key, value in body.items() if key != "usage"}

        def line(custom_id: str, body: dict[str, Any]) -> bytes:
            return openai_line(custom_id, {"status_code": 200, "body": body})

    plans = {1: [lambda cid: line(cid, body)], 2: [lambda cid: line(cid, bare)]}
    source = write_input(tmp_path / "in.jsonl", 2)
    out = tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=Rounds(provider, plans)) as server:
        run(provider, server, source, out, policy=HealPolicy(max_attempts=1))

    written = rows(out)
    reported, bare_row = written["t1"], written["t2"]
    assert (reported["reason"], bare_row["reason"]) == ("api_error", "api_error")
    usage = reported["usage"]
    assert (usage["requests"], usage["prompt_tokens"], usage["completion_tokens"]) == (1, 7, 5)
    assert not usage["estimated"]
    assert reported["outcome"]["attempts"][0]["usage"] == usage
    assert_cost(bare_row, ESTIMATED)
