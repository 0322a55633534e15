"""`ScriptedServer`'s batch APIs driven by the real SDKs over real HTTP on 127.0.0.1: OpenAI's
Batch API (`client.files`, `client.batches`) and Anthropic's Message Batches
(`client.messages.batches`): lines answered from the script or `batch_replies`, rendered as the
synchronous routes render them; validation, limits, expiry, cancellation, listing, and a
property over random mixes of line fates.

Batches that must stay in progress use delays of an hour (`batch_delay_s`, a reply's `delay_s`),
so no test depends on how fast it runs.
"""

# ruff: noqa: F811 (tests take the fixtures imported from test_server as arguments)
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from healjson.testing import ScriptedBatch, ScriptedFile, ScriptedReply, ScriptedServer
from healjson.testing._serve import load_replies
from kit.test_server import TLS, USER, claude, client  # noqa: F401 (fixtures, reused)

HOUR = 3600.0
ENDPOINT = "/v1/chat/completions"
CALL = {"id": "call_1", "type": "function", "function": {"name": "put", "arguments": '{"a": 1}'}}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _openai(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def _claude(server: ScriptedServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    )


def _line(
    custom_id: str, text: str = "Extract the invoice as JSON.", **extra: Any
) -> dict[str, Any]:
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": text}]}
    return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body} | extra


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _submit(
    sdk: openai.OpenAI, lines: list[dict[str, Any]] | bytes, metadata: dict[str, str] | None = None
) -> Any:
    content = lines if isinstance(lines, bytes) else _jsonl(lines)
    uploaded = sdk.files.create(file=("rows.jsonl", content), purpose="batch")
    return sdk.batches.create(
        input_file_id=uploaded.id,
        endpoint=ENDPOINT,
        completion_window="24h",
        metadata=metadata,
    )


def _file_lines(sdk: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(line) for line in sdk.files.content(file_id).text.splitlines()]


def _requests(count: int, prefix: str = "row") -> list[dict[str, Any]]:
    params = {"model": "claude-test", "max_tokens": 64, "messages": USER}
    return [{"custom_id": f"{prefix}-{n}", "params": params} for n in range(count)]


def _counts(batch: Any) -> tuple[int, int, int]:
    """An OpenAI batch's request counts: (total, completed, failed)."""
    counts = batch.request_counts
    return counts.total, counts.completed, counts.failed


def _without(payload: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in payload.items() if key not in keys}


@pytest.fixture
def slow_server() -> Iterator[ScriptedServer]:
    """A server whose batches stay in progress for an hour (unless cancelled)."""
    with ScriptedServer(batch_delay_s=HOUR) as server:
        yield server


# ---------------------------------------------------------------------------------------------
# OpenAI: files, batches, output and error files
# ---------------------------------------------------------------------------------------------


def test_openai_batch_answers_each_fate_and_counts_them(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """ok, HTTP error, expired, refusal and `length` lines: the answered ones in the output
    file, the error and the expired one in the error file, and the batch ends `expired`."""
    scripted_server.extend(
        [
            '{"total": 42}',
            ScriptedReply.error(429, "Rate limit reached.", code="rate_limit_exceeded"),
            ScriptedReply(batch_expired=True),
            ScriptedReply(refusal="I can't help with that."),
            ScriptedReply('{"total": 4', finish_reason="length"),
        ]
    )
    ids = ["ok", "limited", "late", "refused", "cut"]

    created = _submit(client, [_line(custom_id) for custom_id in ids], {"run": "r1"})

    assert "in_progress" == created.status
    assert 0 == scripted_server.remaining  # answered at creation, in line order
    batch = client.batches.retrieve(created.id)
    assert ("expired", "gpt-test") == (batch.status, batch.model)
    assert batch.expired_at is not None
    assert batch.completed_at is None
    assert (5, 3, 2) == _counts(batch)
    output = {line["custom_id"]: line for line in _file_lines(client, batch.output_file_id)}
    errors = {line["custom_id"]: line for line in _file_lines(client, batch.error_file_id)}
    assert ["ok", "refused", "cut"] == list(output)
    assert ["limited", "late"] == list(errors)
    assert all(line["id"].startswith("batch_req_") for line in [*output.values(), *errors.values()])
    assert all(
        line["error"] is None and 200 == line["response"]["status_code"] for line in output.values()
    )
    choices = {
        custom_id: line["response"]["body"]["choices"][0] for custom_id, line in output.items()
    }
    assert '{"total": 42}' == choices["ok"]["message"]["content"]
    assert "I can't help with that." == choices["refused"]["message"]["refusal"]
    assert "length" == choices["cut"]["finish_reason"]
    limited = errors["limited"]["response"]
    assert 429 == limited["status_code"]
    assert {
        "message": "Rate limit reached.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    } == limited["body"]["error"]
    assert {
        "id": errors["late"]["id"],
        "custom_id": "late",
        "response": None,
        "error": {
            "code": "batch_expired",
            "message": "This request could not be executed before the completion window expired.",
        },
    } == errors["late"]
    [snapshot] = scripted_server.batches
    assert isinstance(snapshot, ScriptedBatch)
    assert (batch.id, "openai", "expired", False) == (
        snapshot.id,
        snapshot.provider,
        snapshot.status,
        snapshot.cancelled,
    )
    assert tuple(ids) == snapshot.custom_ids
    assert ("succeeded", "errored", "expired", "succeeded", "succeeded") == snapshot.outcomes
    assert {"run": "r1"} == snapshot.metadata
    assert all(USER == request["messages"] for request in snapshot.requests)
    # batch lines are no chat requests: only the batch API's HTTP requests are recorded
    assert not [r for r in scripted_server.requests if "chat/completions" in r.path]


@pytest.mark.parametrize(
    "reply",
    [
        ScriptedReply('{"total": 42}'),
        ScriptedReply(refusal="No."),
        ScriptedReply('{"total": 4', finish_reason="length"),
        ScriptedReply(tool_calls=[CALL], finish_reason="tool_calls"),
        ScriptedReply('{"total": 42}', reasoning="Add the lines."),
        ScriptedReply(
            '{"total": 42}', usage={"prompt_tokens": 9, "completion_tokens": 3, "cached_tokens": 4}
        ),
    ],
    ids=["content", "refusal", "length", "tool_calls", "reasoning", "cached"],
)
def test_a_line_body_is_the_chat_routes_body(
    scripted_server: ScriptedServer, client: openai.OpenAI, reply: ScriptedReply
) -> None:
    """An output line's body is the `chat.completion` the chat route sends for the same reply
    (its id and creation time aside), and the SDK parses it as one."""
    scripted_server.extend([reply, reply])
    sync = client.chat.completions.with_raw_response.create(model="gpt-test", messages=USER)
    expected = sync.http_response.json()

    batch = client.batches.retrieve(_submit(client, [_line("only")]).id)

    [line] = _file_lines(client, batch.output_file_id)
    body = line["response"]["body"]
    assert _without(expected, "id", "created") == _without(body, "id", "created")
    assert openai.types.chat.ChatCompletion.model_validate(body).choices
    assert "completed" == batch.status
    assert batch.error_file_id is None


def test_a_completed_batch_sums_its_usage(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A completed OpenAI batch carries its timestamps and the sum of its lines' usage, cached
    and reasoning tokens included."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "reasoning_tokens": 2, "cached_tokens": 3}
    scripted_server.extend([ScriptedReply("{}", usage=usage)] * 3)

    batch = client.batches.retrieve(_submit(client, [_line(f"r{n}") for n in range(3)]).id)

    assert "completed" == batch.status
    assert batch.completed_at is not None
    assert batch.finalizing_at is not None
    assert batch.usage is not None
    assert (30, 15, 45, 9, 6) == (
        batch.usage.input_tokens,
        batch.usage.output_tokens,
        batch.usage.total_tokens,
        batch.usage.input_tokens_details.cached_tokens,
        batch.usage.output_tokens_details.reasoning_tokens,
    )


def test_files_upload_retrieve_content_list_delete(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """The Files API round trip works through the SDK: upload, retrieve, read the content, list
    and delete."""
    content = _jsonl([_line("a"), _line("b")])

    uploaded = client.files.create(file=("rows.jsonl", content), purpose="batch")

    assert ("file", "rows.jsonl", "batch", len(content), "processed") == (
        uploaded.object,
        uploaded.filename,
        uploaded.purpose,
        uploaded.bytes,
        uploaded.status,
    )
    assert uploaded.id.startswith("file-")
    assert uploaded == client.files.retrieve(uploaded.id)
    assert content == client.files.content(uploaded.id).content
    assert [uploaded.id] == [f.id for f in client.files.list(purpose="batch")]
    assert [ScriptedFile(uploaded.id, "rows.jsonl", "batch", content, uploaded.created_at)] == (
        scripted_server.files
    )
    deleted = client.files.delete(uploaded.id)
    assert (uploaded.id, True) == (deleted.id, deleted.deleted)
    with pytest.raises(openai.NotFoundError, match="No such File object"):
        client.files.retrieve(uploaded.id)
    with pytest.raises(openai.NotFoundError):
        client.files.content(uploaded.id)


def test_the_routes_answer_without_the_v1_prefix(scripted_server: ScriptedServer) -> None:
    """As the chat route does, the OpenAI batch routes accept paths without `/v1`."""
    base = scripted_server.base_url.removesuffix("/v1")
    with openai.OpenAI(base_url=base, api_key="test", max_retries=0) as sdk:
        scripted_server.push("{}")
        batch = sdk.batches.retrieve(_submit(sdk, [_line("a")]).id)
        assert "completed" == batch.status
        assert 1 == len(_file_lines(sdk, batch.output_file_id))


def test_metadata_round_trips_and_the_list_pages_newest_first(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A runner whose create response was lost finds its batch by metadata in the list."""
    scripted_server.extend(["{}"] * 5)
    created = [_submit(client, [_line("a")], {"run": "r", "round": str(n)}) for n in range(5)]
    newest_first = [batch.id for batch in reversed(created)]

    first = client.batches.list(limit=2)

    assert newest_first[:2] == [batch.id for batch in first.data]
    assert first.has_more is True
    second = client.batches.list(limit=2, after=first.data[-1].id)
    assert newest_first[2:4] == [batch.id for batch in second.data]
    last = client.batches.list(limit=2, after=second.data[-1].id)
    assert (newest_first[4:], False) == ([batch.id for batch in last.data], last.has_more)
    every = list(client.batches.list(limit=2))  # the SDK follows the `after` cursor
    assert newest_first == [batch.id for batch in every]
    found = [b for b in every if (b.metadata or {}).get("round") == "3"]
    assert [created[3].id] == [batch.id for batch in found]
    assert {"run": "r", "round": "3"} == found[0].metadata
    raw = json.loads(client.batches.with_raw_response.list(limit=2).text)
    assert ("list", newest_first[0], newest_first[1]) == (
        raw["object"],
        raw["first_id"],
        raw["last_id"],
    )


def test_a_bad_input_file_fails_the_batch_line_by_line(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """Each bad line is named in `errors` (code, line, param); no line is answered."""
    scripted_server.push("{}")
    other_model = _line("model")
    other_model["body"]["model"] = "gpt-other"
    lines = [
        json.dumps(_line("fine")),
        "not json",
        json.dumps({k: v for k, v in _line("x").items() if k != "custom_id"}),
        json.dumps(_line("fine")),
        json.dumps(_line("get", method="GET")),
        json.dumps(_line("url", url="/v1/embeddings")),
        json.dumps(_line("body", body=["not", "an", "object"])),
        json.dumps(other_model),
    ]

    batch = _submit(client, ("\n".join(lines) + "\n").encode())

    assert ("failed", None, None) == (batch.status, batch.output_file_id, batch.error_file_id)
    assert batch.failed_at is not None
    assert batch.errors is not None
    assert "list" == batch.errors.object
    got = [(e.code, e.line, e.param) for e in batch.errors.data or []]
    assert [
        ("invalid_json_line", 2, None),
        ("missing_required_parameter", 3, "custom_id"),
        ("duplicate_custom_id", 4, "custom_id"),
        ("invalid_method", 5, "method"),
        ("invalid_url", 6, "url"),
        ("invalid_value", 7, "body"),
        ("mismatched_model", 8, "body.model"),
    ] == got
    assert all(e.message for e in batch.errors.data or [])
    assert 1 == scripted_server.remaining  # nothing was answered
    assert "failed" == client.batches.retrieve(batch.id).status
    assert () == scripted_server.batches[0].custom_ids


def test_an_empty_input_file_fails(client: openai.OpenAI) -> None:
    """A batch over an input file with no lines fails with `empty_file`."""
    batch = _submit(client, b"\n\n")
    assert "failed" == batch.status
    assert ["empty_file"] == [e.code for e in batch.errors.data or []]


def test_create_refuses_what_the_service_refuses(client: openai.OpenAI) -> None:
    """An unknown file is a 404, a file of another purpose, another endpoint or too much
    metadata a 400; no batch is created."""
    uploaded = client.files.create(file=("r.jsonl", _jsonl([_line("a")])), purpose="batch")
    tuned = client.files.create(file=("t.jsonl", _jsonl([_line("a")])), purpose="fine-tune")
    with pytest.raises(openai.NotFoundError, match="No such File object"):
        client.batches.create(input_file_id="file-nope", endpoint=ENDPOINT, completion_window="24h")
    with pytest.raises(openai.BadRequestError, match="purpose 'batch'"):
        client.batches.create(input_file_id=tuned.id, endpoint=ENDPOINT, completion_window="24h")
    with pytest.raises(openai.BadRequestError, match="only"):
        client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h"
        )
    with pytest.raises(openai.BadRequestError, match="16 keys"):
        client.batches.create(
            input_file_id=uploaded.id,
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata={f"k{n}": "v" for n in range(17)},
        )
    with pytest.raises(openai.NotFoundError, match="No batch found"):
        client.batches.retrieve("batch_nope")
    assert [] == client.batches.list().data


def test_openai_limits_fail_the_batch() -> None:
    """Over `batch_max_requests` lines or `batch_max_bytes` bytes, a batch fails with an error
    naming the limit; at the limit it runs."""
    three = _jsonl([_line(f"r{n}") for n in range(3)])
    with ScriptedServer(["{}"] * 3, batch_max_requests=3) as server, _openai(server) as sdk:
        over = _submit(sdk, [_line(f"r{n}") for n in range(4)])
        assert "failed" == over.status
        [error] = over.errors.data
        assert ("too_many_requests", None) == (error.code, error.line)
        assert "batch_max_requests" in (error.message or "")
        fits = sdk.batches.retrieve(_submit(sdk, three).id)
        assert ("completed", 3) == (fits.status, fits.request_counts.completed)
    with ScriptedServer(["{}"] * 3, batch_max_bytes=len(three)) as server, _openai(server) as sdk:
        big = _submit(sdk, three + b"\n")
        assert ["file_too_large"] == [e.code for e in big.errors.data]
        assert "batch_max_bytes" in (big.errors.data[0].message or "")
        assert 3 == server.remaining
        assert "completed" == sdk.batches.retrieve(_submit(sdk, three).id).status


def test_a_batch_is_in_progress_until_its_delay_has_passed(slow_server: ScriptedServer) -> None:
    """A batch stays in progress, with no output and no usage, until its delay has passed."""
    slow_server.push("{}")
    with _openai(slow_server) as sdk:
        batch = sdk.batches.retrieve(_submit(sdk, [_line("a")]).id)
        assert ("in_progress", None) == (batch.status, batch.output_file_id)
        assert batch.in_progress_at is not None
        assert batch.usage is None
        assert (1, 1, 0) == _counts(batch)
        assert ("pending",) == slow_server.batches[0].outcomes


def test_a_batch_ends_at_the_first_retrieve_after_its_delay() -> None:
    """A batch ends at the first retrieve after its delay."""
    with ScriptedServer(["{}"], batch_delay_s=0.05) as server, _openai(server) as sdk:
        created = _submit(sdk, [_line("a")])
        time.sleep(0.1)
        assert "completed" == sdk.batches.retrieve(created.id).status


def test_cancel_keeps_the_answered_lines_and_drops_the_rest(slow_server: ScriptedServer) -> None:
    """Cancelled: `cancelling`, then `cancelled` at the next retrieve; the lines done before
    the cancel in the output / error files, the late one in neither."""
    slow_server.extend(["{}", ScriptedReply.error(500, "boom"), ScriptedReply("{}", delay_s=HOUR)])
    with _openai(slow_server) as sdk:
        created = _submit(sdk, [_line("done"), _line("failed"), _line("late")])

        cancelling = sdk.batches.cancel(created.id)

        assert "cancelling" == cancelling.status
        assert cancelling.cancelling_at is not None
        assert "cancelling" == slow_server.batches[0].status
        batch = sdk.batches.retrieve(created.id)
        assert ("cancelled", True) == (batch.status, batch.cancelled_at is not None)
        assert (3, 1, 1) == _counts(batch)
        assert ["done"] == [line["custom_id"] for line in _file_lines(sdk, batch.output_file_id)]
        assert ["failed"] == [line["custom_id"] for line in _file_lines(sdk, batch.error_file_id)]
        snapshot = slow_server.batches[0]
        assert (True, ("succeeded", "errored", "canceled")) == (
            snapshot.cancelled,
            snapshot.outcomes,
        )
        with pytest.raises(
            openai.ConflictError, match="Cannot cancel a batch with status 'cancelled'"
        ):
            sdk.batches.cancel(created.id)


def test_cancelling_an_ended_batch_is_a_conflict(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """Cancelling an ended batch is a 409 conflict the SDK must not retry, and the batch stays
    completed."""
    scripted_server.push("{}")
    created = _submit(client, [_line("a")])
    with pytest.raises(openai.ConflictError, match="status 'completed'") as raised:
        client.batches.cancel(created.id)
    assert "false" == raised.value.response.headers["x-should-retry"]
    assert "completed" == client.batches.retrieve(created.id).status


LINES = 2_000


def test_a_2000_line_batch() -> None:
    """Two thousand lines each way, answered, written and read back in order (the store does
    linear work; `benchmarks/bench_scale.py` runs 10,000-row batches through it)."""
    with ScriptedServer(["{}"], repeat=True) as server, _openai(server) as sdk:
        batch = sdk.batches.retrieve(_submit(sdk, [_line(f"r{n}") for n in range(LINES)]).id)
        assert (LINES, LINES) == (batch.request_counts.total, batch.request_counts.completed)
        lines = _file_lines(sdk, batch.output_file_id)
        assert [f"r{n}" for n in range(LINES)] == [line["custom_id"] for line in lines]
    with ScriptedServer(["{}"], repeat=True) as server, _claude(server) as sdk:
        message_batch = sdk.messages.batches.create(requests=_requests(LINES))
        url = sdk.messages.batches.retrieve(message_batch.id).results_url
        results = [json.loads(line) for line in sdk.get(url, cast_to=str).splitlines()]
        assert [f"row-{n}" for n in range(LINES)] == [result["custom_id"] for result in results]
        assert all("succeeded" == result["result"]["type"] for result in results)


# ---------------------------------------------------------------------------------------------
# the script: exhausted mid-batch, callables, batch_replies
# ---------------------------------------------------------------------------------------------


def test_a_script_exhausted_mid_batch_errors_the_remaining_lines(
    scripted_server: ScriptedServer, client: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    """A script exhausted mid-batch errors each remaining line with `script_exhausted`, on
    OpenAI's and Anthropic's batches."""
    scripted_server.extend(["{}", "{}"])
    batch = client.batches.retrieve(_submit(client, [_line(f"r{n}") for n in range(3)]).id)

    assert ("completed", 2, 1) == (
        batch.status,
        batch.request_counts.completed,
        batch.request_counts.failed,
    )
    [error] = _file_lines(client, batch.error_file_id)
    assert ("r2", 500) == (error["custom_id"], error["response"]["status_code"])
    assert "script_exhausted" == error["response"]["body"]["error"]["code"]
    assert "script exhausted" in error["response"]["body"]["error"]["message"]
    message_batch = claude.messages.batches.create(requests=_requests(1))
    [result] = list(claude.messages.batches.results(message_batch.id))
    assert "errored" == result.result.type
    assert "script exhausted" in result.result.error.error.message
    scripted_server.push("{}")  # the server still serves
    reply = client.chat.completions.create(model="gpt-test", messages=USER)
    assert "{}" == reply.choices[0].message.content


def test_raw_bodies_and_unservable_replies_in_a_batch(
    scripted_server: ScriptedServer, client: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    """A raw `body` is the line's body (a JSON string when it is not JSON); a reply the route
    cannot carry is an errored line, as the route's 500 script error."""
    bad_call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}
    scripted_server.extend(
        [
            ScriptedReply(body='{\n  "weird": true\n}'),
            ScriptedReply.non_json(),
            ScriptedReply(tool_calls=[bad_call]),
        ]
    )
    batch = client.batches.retrieve(_submit(client, [_line("json"), _line("html")]).id)
    bodies = [line["response"]["body"] for line in _file_lines(client, batch.output_file_id)]
    assert [{"weird": True}, "<html>bad gateway</html>"] == bodies
    message_batch = claude.messages.batches.create(requests=_requests(1))
    [result] = list(claude.messages.batches.results(message_batch.id))
    assert "errored" == result.result.type
    assert "arguments must be a JSON object" in result.result.error.error.message


def test_list_limits_out_of_range_are_refused(
    client: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    """Batch list limits out of range, and an unknown `after` cursor, are refused as bad
    requests."""
    with pytest.raises(openai.BadRequestError, match="limit"):
        client.batches.list(limit=101)
    with pytest.raises(anthropic.BadRequestError, match="limit"):
        claude.messages.batches.list(limit=0)
    with pytest.raises(openai.BadRequestError, match="after"):
        client.batches.list(after="batch_nope")


def test_a_callable_script_item_gets_the_line_body(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """A callable script item is given each batch line's body and answers it."""
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> str:
        seen.append(body)
        return json.dumps({"echo": body["messages"][-1]["content"]})

    scripted_server.extend([answer, answer])
    batch = client.batches.retrieve(_submit(client, [_line("a", "one"), _line("b", "two")]).id)

    contents = [
        line["response"]["body"]["choices"][0]["message"]["content"]
        for line in _file_lines(client, batch.output_file_id)
    ]
    assert ['{"echo": "one"}', '{"echo": "two"}'] == contents
    assert [_line("a", "one")["body"], _line("b", "two")["body"]] == seen


def test_batch_replies_by_custom_id_leave_the_script_alone() -> None:
    """`batch_replies` by custom id answer batch lines without using the script, and a line
    without a reply errors."""
    replies = {"b": ScriptedReply.error(400, "bad row"), "a": '{"row": "a"}'}
    with ScriptedServer(["sync"], batch_replies=replies) as server, _openai(server) as sdk:
        batch = sdk.batches.retrieve(_submit(sdk, [_line("a"), _line("b"), _line("c")]).id)
        [ok] = _file_lines(sdk, batch.output_file_id)
        assert ("a", '{"row": "a"}') == (
            ok["custom_id"],
            ok["response"]["body"]["choices"][0]["message"]["content"],
        )
        errors = _file_lines(sdk, batch.error_file_id)
        assert [("b", 400), ("c", 500)] == [
            (e["custom_id"], e["response"]["status_code"]) for e in errors
        ]
        assert (
            "no batch reply for custom_id 'c'" in errors[1]["response"]["body"]["error"]["message"]
        )
        assert 1 == server.remaining
        reply = sdk.chat.completions.create(model="gpt-test", messages=USER)
        assert "sync" == reply.choices[0].message.content


def test_batch_replies_callable_gets_the_custom_id_and_params() -> None:
    """A callable `batch_replies` gets each line's custom id and params, and an exception it
    raises errors that line."""

    def reply(custom_id: str, params: dict[str, Any]) -> str | ScriptedReply:
        if custom_id == "row-1":
            raise RuntimeError("no row 1")
        return json.dumps({"id": custom_id, "max_tokens": params["max_tokens"]})

    with ScriptedServer(batch_replies=reply) as server, _claude(server) as sdk:
        batch = sdk.messages.batches.create(requests=_requests(2))
        first, second = sdk.messages.batches.results(batch.id)
        assert "succeeded" == first.result.type
        assert '{"id": "row-0", "max_tokens": 64}' == first.result.message.content[0].text
        assert "errored" == second.result.type
        assert "no row 1" in second.result.error.error.message


def test_a_bytes_batch_reply_is_the_result_line_as_is() -> None:
    """A broken provider's line, for testing readers: spliced into the file unchecked."""
    broken = b'{"custom_id": "a", "response": [[[oops'
    with ScriptedServer(batch_replies={"a": broken, "b": "{}"}) as server, _openai(server) as sdk:
        batch = sdk.batches.retrieve(_submit(sdk, [_line("a"), _line("b")]).id)
        assert batch.output_file_id is not None
        first, second = sdk.files.content(batch.output_file_id).content.splitlines()
        assert broken == first
        assert "b" == json.loads(second)["custom_id"]
        assert (2, 0) == (batch.request_counts.completed, batch.request_counts.failed)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_failing_batch_reads_are_transient_errors_the_sdk_retries(provider: str) -> None:
    """`fail_batch_reads(n, status)`: the next n GET requests on the batch routes get that
    status and the provider's error body with `retry-after-ms`; writes are not affected, and a
    new call replaces the failures still pending."""
    with ScriptedServer(batch_replies={"row-0": "{}", "a": "{}"}) as server:
        if provider == "openai":
            sdk: Any = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=2)
            batch_id = _submit(sdk, [_line("a")]).id
            retrieve = sdk.batches.retrieve
            status_error: Any = openai.InternalServerError
        else:
            sdk = anthropic.Anthropic(
                base_url=server.anthropic_base_url, api_key="k", max_retries=2
            )
            batch_id = sdk.messages.batches.create(requests=_requests(1)).id
            retrieve = sdk.messages.batches.retrieve
            status_error = anthropic.InternalServerError
        with sdk:
            server.fail_batch_reads(2, 503)
            assert batch_id == retrieve(batch_id).id  # two failures, retried by the SDK
            server.fail_batch_reads(3, 503)
            with pytest.raises(status_error) as failed:
                retrieve(batch_id)
            assert 503 == failed.value.status_code
            assert "briefly unavailable" in str(failed.value)
            server.fail_batch_reads(5, 500)
            server.fail_batch_reads(0)
            assert batch_id == retrieve(batch_id).id
        reads = [r for r in server.requests if r.path.endswith(batch_id)]
        assert 7 == len(reads)  # 2 failed + 1; 3 failed; 1: every retrieve the SDK sent


def test_the_batch_fields_load_from_a_reply_file(tmp_path: Any) -> None:
    """A reply file's batch fields (`batch_expired`) load into `ScriptedReply`."""
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([{"content": "{}", "batch_expired": True}]))
    assert [ScriptedReply("{}", batch_expired=True)] == load_replies(str(path))


def test_bad_batch_settings_are_refused() -> None:
    """Bad batch settings of the server and of a reply are refused when built, naming the
    setting."""
    with pytest.raises(ValueError, match="batch_delay_s"):
        ScriptedServer(batch_delay_s=-1)
    with pytest.raises(ValueError, match="batch_max_requests"):
        ScriptedServer(batch_max_requests=0)
    with pytest.raises(ValueError, match="batch_replies"):
        ScriptedServer(batch_replies=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_expired"):
        ScriptedReply(batch_expired="yes")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Anthropic Message Batches
# ---------------------------------------------------------------------------------------------


def test_anthropic_batch_results_carry_each_fate(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """Anthropic batch results carry each line's fate: succeeded, errored, expired, a refusal."""
    scripted_server.extend(
        [
            ScriptedReply('{"total": 42}', reasoning="Add them."),
            ScriptedReply.error(529, "Overloaded."),
            ScriptedReply(batch_expired=True),
            ScriptedReply(refusal="No."),
        ]
    )

    created = claude.messages.batches.create(requests=_requests(4))

    assert ("in_progress", None) == (created.processing_status, created.results_url)
    assert created.id.startswith("msgbatch_")
    assert (4, 0) == (created.request_counts.processing, created.request_counts.succeeded)
    results = {r.custom_id: r.result for r in claude.messages.batches.results(created.id)}
    assert ["succeeded", "errored", "expired", "succeeded"] == [r.type for r in results.values()]
    first = results["row-0"].message
    assert ["thinking", "text"] == [block.type for block in first.content]
    assert "refusal" == results["row-3"].message.stop_reason
    error = results["row-1"].error
    assert ("error", "overloaded_error", "Overloaded.") == (
        error.type,
        error.error.type,
        error.error.message,
    )
    batch = claude.messages.batches.retrieve(created.id)
    assert "ended" == batch.processing_status
    assert batch.ended_at is not None
    assert f"{scripted_server.anthropic_base_url}/v1/messages/batches/{created.id}/results" == (
        batch.results_url
    )
    counts = batch.request_counts
    assert (0, 2, 1, 0, 1) == (
        counts.processing,
        counts.succeeded,
        counts.errored,
        counts.canceled,
        counts.expired,
    )
    assert ("anthropic", "ended") == (
        scripted_server.batches[0].provider,
        scripted_server.batches[0].status,
    )
    assert not [r for r in scripted_server.requests if r.path.rstrip("/").endswith("/messages")]


@pytest.mark.parametrize(
    "reply",
    [
        ScriptedReply('{"total": 42}'),
        ScriptedReply(refusal="No."),
        ScriptedReply('{"total": 4', finish_reason="length"),
        ScriptedReply(tool_calls=[CALL]),
        ScriptedReply('{"total": 42}', reasoning="Add the lines.", redacted_thinking="opaque"),
    ],
    ids=["content", "refusal", "length", "tool_calls", "reasoning"],
)
def test_a_result_message_is_the_messages_routes_body(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic, reply: ScriptedReply
) -> None:
    """A Message Batches result's message is exactly the body the Messages route would send for
    the same reply."""
    scripted_server.extend([reply, reply])
    params = _requests(1)[0]["params"]
    sync = claude.messages.with_raw_response.create(**params)

    batch = claude.messages.batches.create(requests=_requests(1))

    raw = claude.messages.batches.with_raw_response.retrieve(batch.id)  # ends it
    results_url = json.loads(raw.http_response.text)["results_url"]
    [line] = [json.loads(text) for text in claude.get(results_url, cast_to=str).splitlines()]
    assert "succeeded" == line["result"]["type"]
    assert _without(sync.http_response.json(), "id") == _without(line["result"]["message"], "id")


def test_anthropic_results_wait_for_the_end(slow_server: ScriptedServer) -> None:
    """The SDK refuses to fetch results without a `results_url`; fetched anyway, the results
    of a batch in progress are an HTTP 400."""
    slow_server.push("{}")
    with _claude(slow_server) as sdk:
        batch = sdk.messages.batches.create(requests=_requests(1))
        with pytest.raises(anthropic.AnthropicError, match="No `results_url`"):
            sdk.messages.batches.results(batch.id)
        url = f"/v1/messages/batches/{batch.id}/results"
        with pytest.raises(anthropic.BadRequestError, match="still in_progress"):
            sdk.get(url, cast_to=str)
        with pytest.raises(anthropic.BadRequestError, match="still in_progress"):
            sdk.messages.batches.delete(batch.id)


def test_anthropic_cancel_cancels_the_lines_not_done(slow_server: ScriptedServer) -> None:
    """Cancelling an Anthropic batch cancels the lines not done, counting succeeded, canceled and
    expired lines."""
    slow_server.extend(["{}", ScriptedReply("{}", delay_s=HOUR), ScriptedReply(batch_expired=True)])
    with _claude(slow_server) as sdk:
        created = sdk.messages.batches.create(requests=_requests(3))

        canceling = sdk.messages.batches.cancel(created.id)

        assert "canceling" == canceling.processing_status
        assert canceling.cancel_initiated_at is not None
        assert canceling.results_url is None
        batch = sdk.messages.batches.retrieve(created.id)
        assert "ended" == batch.processing_status
        counts = batch.request_counts
        assert (1, 2, 0) == (counts.succeeded, counts.canceled, counts.expired)
        kinds = [(r.custom_id, r.result.type) for r in sdk.messages.batches.results(created.id)]
        assert [("row-0", "succeeded"), ("row-1", "canceled"), ("row-2", "canceled")] == kinds
        with pytest.raises(anthropic.BadRequestError, match="already ended"):
            sdk.messages.batches.cancel(created.id)
        assert created.id == sdk.messages.batches.delete(created.id).id
        with pytest.raises(anthropic.NotFoundError):
            sdk.messages.batches.retrieve(created.id)


def test_anthropic_list_pages_newest_first(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """Anthropic batches list newest first, in pages that `before_id` moves through."""
    scripted_server.extend(["{}"] * 3)
    created = [claude.messages.batches.create(requests=_requests(1)).id for _ in range(3)]
    newest_first = created[::-1]

    page = claude.messages.batches.list(limit=2)

    assert (newest_first[:2], True) == ([b.id for b in page.data], page.has_more)
    assert (newest_first[0], newest_first[1]) == (page.first_id, page.last_id)
    assert newest_first == [b.id for b in claude.messages.batches.list(limit=2)]
    before = claude.messages.batches.list(limit=2, before_id=newest_first[2])
    assert newest_first[:2] == [b.id for b in before.data]
    assert ["ended"] * 3 == [b.processing_status for b in claude.messages.batches.list()]


@pytest.mark.parametrize(
    ("requests", "match"),
    [
        ([{"custom_id": "has space", "params": _requests(1)[0]["params"]}], "should match pattern"),
        ([{"custom_id": "x" * 65, "params": _requests(1)[0]["params"]}], "should match pattern"),
        (_requests(1) + _requests(1), "not unique"),
        ([{"custom_id": "a", "params": {"model": "claude-test", "messages": USER}}], "max_tokens"),
        ([], "non-empty"),
    ],
    ids=["space", "too-long", "duplicate", "no-max-tokens", "empty"],
)
def test_anthropic_refuses_bad_requests(
    scripted_server: ScriptedServer,
    claude: anthropic.Anthropic,
    requests: list[dict[str, Any]],
    match: str,
) -> None:
    """Anthropic batch creation refuses bad custom ids, duplicates, a missing `max_tokens` and an
    empty list, as the API does."""
    scripted_server.push("{}")
    with pytest.raises(anthropic.BadRequestError, match=match) as raised:
        claude.messages.batches.create(requests=requests)
    assert "invalid_request_error" == raised.value.body["error"]["type"]
    assert (1, []) == (scripted_server.remaining, scripted_server.batches)


def test_anthropic_limits_refuse_the_batch() -> None:
    """Anthropic batch limits refuse too many requests, and too many bytes with a 413, while a
    batch within them succeeds."""
    with (
        ScriptedServer(["{}"] * 2, batch_max_requests=2, batch_max_bytes=2_000) as server,
        _claude(server) as sdk,
    ):
        with pytest.raises(anthropic.BadRequestError, match="at most 2 requests"):
            sdk.messages.batches.create(requests=_requests(3))
        big = [{"custom_id": "big", "params": {**_requests(1)[0]["params"], "system": "x" * 3_000}}]
        with pytest.raises(anthropic.APIStatusError, match="batch_max_bytes") as raised:
            sdk.messages.batches.create(requests=big)
        assert 413 == raised.value.status_code
        assert "request_too_large" == raised.value.body["error"]["type"]
        fits = sdk.messages.batches.create(requests=_requests(2))
        assert 2 == sdk.messages.batches.retrieve(fits.id).request_counts.succeeded


# ---------------------------------------------------------------------------------------------
# property: random mixes of line fates
# ---------------------------------------------------------------------------------------------

FATES = ("ok", "refusal", "length", "error", "expired")
# each kind of line, as the provider reports it once the batch has ended
OUTCOMES = {
    "ok": "succeeded",
    "refusal": "succeeded",
    "length": "succeeded",
    "error": "errored",
    "exhausted": "errored",
    "expired": "expired",
    "canceled": "canceled",
}
STOP_REASONS = {"ok": "end_turn", "refusal": "refusal", "length": "max_tokens"}


def _fate_reply(fate: str, late: bool) -> ScriptedReply:
    delay = HOUR if late else 0.0
    if fate == "error":
        return ScriptedReply(content="scripted failure", status=503, delay_s=delay)
    if fate == "expired":
        return ScriptedReply(batch_expired=True)
    if fate == "refusal":
        return ScriptedReply(refusal="No.", delay_s=delay)
    finish_reason = "length" if fate == "length" else "stop"
    return ScriptedReply("{}", finish_reason=finish_reason, delay_s=delay)


def test_request_counts_and_outputs_agree_with_the_line_fates() -> None:
    """Whatever the mix of fates (a script running out, a cancel with lines still running),
    every custom_id is answered exactly once as its fate says (OpenAI: in one of the two files,
    in neither when cancelled unanswered), and request_counts count what the output holds."""
    with ScriptedServer() as server, _openai(server) as sdk, _claude(server) as claude_sdk:

        @settings(deadline=None)
        @given(
            fates=st.lists(
                st.tuples(st.sampled_from(FATES), st.booleans()), min_size=1, max_size=12
            ),
            provider=st.sampled_from(["openai", "anthropic"]),
            cancel=st.booleans(),
            exhausted=st.integers(min_value=0, max_value=2),
        )
        def check(
            fates: list[tuple[str, bool]], provider: str, cancel: bool, exhausted: int
        ) -> None:
            if cancel:  # a line still running when the cancel comes, answered by the script
                fates = [("ok", True), *fates]
                exhausted = min(exhausted, len(fates) - 1)
            else:
                fates = [(fate, False) for fate, _ in fates]
            scripted = fates[: len(fates) - exhausted]
            server.extend(_fate_reply(fate, late) for fate, late in scripted)
            kinds = [
                "exhausted"
                if n >= len(scripted)
                else "canceled"
                if cancel and (late or fate == "expired")
                else fate
                for n, (fate, late) in enumerate(fates)
            ]
            ids = [f"r{n}" for n in range(len(fates))]
            if provider == "openai":
                _check_openai(sdk, ids, kinds, cancel)
            else:
                _check_anthropic(claude_sdk, ids, kinds, cancel)
            assert tuple(OUTCOMES[kind] for kind in kinds) == server.batches[-1].outcomes
            assert tuple(ids) == server.batches[-1].custom_ids

        check()


def _check_openai(sdk: openai.OpenAI, ids: list[str], kinds: list[str], cancel: bool) -> None:
    created = _submit(sdk, [_line(custom_id) for custom_id in ids])
    if cancel:
        assert "cancelling" == sdk.batches.cancel(created.id).status
    batch = sdk.batches.retrieve(created.id)
    output = _file_lines(sdk, batch.output_file_id)
    errors = _file_lines(sdk, batch.error_file_id)
    kind_of = dict(zip(ids, kinds, strict=True))
    listed = [line["custom_id"] for line in [*output, *errors]]
    assert sorted(c for c in ids if kind_of[c] != "canceled") == sorted(listed)  # each once
    assert [c for c in ids if OUTCOMES[kind_of[c]] == "succeeded"] == [
        line["custom_id"] for line in output
    ]
    assert (len(ids), len(output), len(errors)) == _counts(batch)
    status = "cancelled" if cancel else "expired" if "expired" in kinds else "completed"
    assert status == batch.status
    for line in output:
        choice = line["response"]["body"]["choices"][0]
        kind = kind_of[line["custom_id"]]
        assert ("length" if kind == "length" else "stop") == choice["finish_reason"]
        assert (kind == "refusal") == (choice["message"]["refusal"] is not None)
    for line in errors:
        kind, response = kind_of[line["custom_id"]], line["response"]
        if kind == "expired":
            assert (None, "batch_expired") == (response, line["error"]["code"])
        else:
            assert (503 if kind == "error" else 500) == response["status_code"]
            assert (kind == "exhausted") == (
                "script_exhausted" == response["body"]["error"]["code"]
            )


def _check_anthropic(
    sdk: anthropic.Anthropic, ids: list[str], kinds: list[str], cancel: bool
) -> None:
    params = _requests(1)[0]["params"]
    created = sdk.messages.batches.create(
        requests=[{"custom_id": custom_id, "params": params} for custom_id in ids]
    )
    if cancel:
        assert "canceling" == sdk.messages.batches.cancel(created.id).processing_status
    results = list(sdk.messages.batches.results(created.id))
    assert ids == [result.custom_id for result in results]
    assert [OUTCOMES[kind] for kind in kinds] == [result.result.type for result in results]
    for kind, result in zip(kinds, results, strict=True):
        if result.result.type == "succeeded":
            assert STOP_REASONS[kind] == result.result.message.stop_reason
        elif result.result.type == "errored":
            error = result.result.error.error
            assert "api_error" == error.type  # 503 and the script's 500 alike
            message = "scripted failure" if kind == "error" else "script exhausted"
            assert message in error.message
    counts = sdk.messages.batches.retrieve(created.id).request_counts
    got = (counts.processing, counts.succeeded, counts.errored, counts.canceled, counts.expired)
    outcomes = [OUTCOMES[kind] for kind in kinds]
    want = (0, *(outcomes.count(name) for name in ("succeeded", "errored", "canceled", "expired")))
    assert want == got


def test_a_batch_reply_whose_text_is_not_a_string_is_an_errored_line(
    scripted_server: ScriptedServer, client: openai.OpenAI, claude: anthropic.Anthropic
) -> None:
    """A batch line whose scripted reply has text of the wrong type is errored as the route's
    500 script error naming the field, on both providers; the batch itself completes."""
    scripted_server.extend([ScriptedReply(content=5), ScriptedReply(content=[1])])  # type: ignore[arg-type]
    batch = client.batches.retrieve(_submit(client, [_line("five")]).id)
    [line] = _file_lines(client, batch.error_file_id)  # a failed request: the error file
    assert 500 == line["response"]["status_code"]
    assert "content must be a string or None" in json.dumps(line["response"]["body"])
    message_batch = claude.messages.batches.create(requests=_requests(1))
    [result] = list(claude.messages.batches.results(message_batch.id))
    assert "errored" == result.result.type
    assert "content must be a string or None" in result.result.error.error.message
