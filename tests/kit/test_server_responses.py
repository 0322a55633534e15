"""The scripted server's OpenAI Responses API route, driven by the real openai SDK over HTTP:
`responses.create` (plain and streamed), `responses.stream`, `responses.parse`, the async
client, and Responses lines in an OpenAI batch."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from healjson.testing import ScriptedReply, ScriptedServer
from healjson.testing._serve import load_replies
from healjson.testing._wire import openai_responses, usage
from healjson.testing._wire._sse import Text, plan
from sdk_calls import DROPPED, dropped_cause

CALL = {"id": "call_7", "type": "function", "function": {"name": "put", "arguments": '{"a": 1}'}}
INPUT = "Extract the invoice as JSON."


class Invoice(pydantic.BaseModel):
    number: str
    total: int


@pytest.fixture
def sdk(scripted_server: ScriptedServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test", max_retries=0) as sdk:
        yield sdk


def _create(sdk: openai.OpenAI, **params: Any) -> Any:
    return sdk.responses.create(model="gpt-test", input=INPUT, **params)


# ---------------------------------------------------------------------------------------------
# a response, not streamed
# ---------------------------------------------------------------------------------------------


def test_create_returns_the_scripted_text(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """The Responses route answers `responses.create` with the scripted text as a completed
    response echoing the model and instructions."""
    scripted_server.push('{"number": "INV-1", "total": 3}')

    response = _create(sdk, instructions="Answer in JSON.")

    assert '{"number": "INV-1", "total": 3}' == response.output_text
    assert ("completed", "gpt-test", "Answer in JSON.") == (
        response.status,
        response.model,
        response.instructions,
    )
    assert response.incomplete_details is None
    assert response.error is None
    assert ["message"] == [item.type for item in response.output]
    assert response.output[0].phase is None
    assert "/v1/responses" == scripted_server.requests[0].path


def test_the_route_answers_without_the_v1_prefix(scripted_server: ScriptedServer) -> None:
    """`/responses` is the same route, taking the same script items."""
    scripted_server.extend(["first", "second"])
    base = scripted_server.base_url.removesuffix("/v1")
    with openai.OpenAI(base_url=base, api_key="test", max_retries=0) as sdk:
        assert "first" == _create(sdk).output_text
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test", max_retries=0) as sdk:
        assert "second" == _create(sdk).output_text
    assert ["/responses", "/v1/responses"] == [r.path for r in scripted_server.requests]


def test_output_items_come_in_order(scripted_server: ScriptedServer, sdk: openai.OpenAI) -> None:
    """Reasoning, commentary, the final answer (text then refusal) and the function calls."""
    reply = ScriptedReply(
        "{}",
        reasoning="Look at the total.",
        commentary=["Reading the invoice.", "Checking the total."],
        refusal="I will not add the tip.",
        tool_calls=[CALL, {"function": {"name": "get", "arguments": {"id": 2}}}],
        finish_reason="tool_calls",
    )
    scripted_server.push(reply)

    response = _create(sdk)

    reasoning, first, second, answer, put, get = response.output
    assert ("reasoning", ["Look at the total."]) == (
        reasoning.type,
        [part.text for part in reasoning.summary],
    )
    assert [("commentary", "Reading the invoice."), ("commentary", "Checking the total.")] == [
        (message.phase, message.content[0].text) for message in (first, second)
    ]
    assert "final_answer" == answer.phase
    assert ["output_text", "refusal"] == [part.type for part in answer.content]
    assert "I will not add the tip." == answer.content[1].refusal
    assert ("call_7", "put", '{"a": 1}') == (put.call_id, put.name, put.arguments)
    assert ("get", {"id": 2}) == (get.name, json.loads(get.arguments))
    assert get.call_id != put.call_id
    assert "completed" == response.status
    # the SDK's output_text joins every message, commentary included
    assert "Reading the invoice.Checking the total.{}" == response.output_text


def test_a_reply_without_content_has_no_message(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """A scripted reply with only tool calls gives a response of function calls and no message."""
    scripted_server.push(ScriptedReply(tool_calls=[CALL], finish_reason="tool_calls"))

    response = _create(sdk)

    assert ["function_call"] == [item.type for item in response.output]
    assert "" == response.output_text


@pytest.mark.parametrize(
    ("finish_reason", "status", "reason"),
    [
        ("stop", "completed", None),
        ("tool_calls", "completed", None),
        ("length", "incomplete", "max_output_tokens"),
        ("content_filter", "incomplete", "content_filter"),
    ],
)
def test_the_finish_reason_sets_the_status(
    scripted_server: ScriptedServer,
    sdk: openai.OpenAI,
    finish_reason: str,
    status: str,
    reason: str | None,
) -> None:
    """The scripted finish reason sets the response's status and incomplete reason."""
    scripted_server.push(ScriptedReply('{"number": "INV', finish_reason=finish_reason))

    response = _create(sdk, max_output_tokens=16)

    assert status == response.status
    details = response.incomplete_details
    assert reason == (details.reason if details is not None else None)
    assert (status == "completed") == (response.completed_at is not None)
    assert {"completed": "completed"}.get(status, "incomplete") == response.output[0].status
    assert '{"number": "INV' == response.output_text
    assert 16 == response.max_output_tokens


def test_a_failed_response_carries_its_error(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """A scripted `response_error` gives a failed response carrying the error message and code."""
    scripted_server.extend(
        [
            ScriptedReply("partial", response_error="The model crashed."),
            ScriptedReply(response_error="Slow down.", error_code="rate_limit_exceeded"),
        ]
    )

    first, second = _create(sdk), _create(sdk)

    assert ("failed", "server_error", "The model crashed.") == (
        first.status,
        first.error.code,
        first.error.message,
    )
    assert "partial" == first.output_text
    assert first.incomplete_details is None
    assert ("failed", "rate_limit_exceeded", []) == (
        second.status,
        second.error.code,
        second.output,
    )


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
def test_an_http_error_raises_the_sdks_error(
    scripted_server: ScriptedServer,
    sdk: openai.OpenAI,
    status: int,
    error: type[openai.APIStatusError],
) -> None:
    """A scripted HTTP error status raises the openai SDK's own error class for it."""
    scripted_server.push(
        ScriptedReply.error(status, "Scripted refusal.", param="text.format", code="bad_schema")
    )

    with pytest.raises(error) as caught:
        _create(sdk)

    assert (status, "text.format", "bad_schema") == (
        caught.value.status_code,
        caught.value.param,
        caught.value.code,
    )
    assert "Scripted refusal." in caught.value.message


def test_usage_is_sent_in_the_responses_fields(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """Scripted usage is sent in the Responses API's own usage fields, and estimated when not
    scripted."""
    counts = {
        "prompt_tokens": 40,
        "completion_tokens": 12,
        "reasoning_tokens": 5,
        "cached_tokens": 30,
        "cache_write_tokens": 4,
    }
    scripted_server.extend([ScriptedReply("{}", usage=counts), ScriptedReply("abcdefgh")])

    explicit, estimated = _create(sdk).usage, _create(sdk, instructions="abcd").usage

    assert (40, 30, 4, 12, 5, 52) == (
        explicit.input_tokens,
        explicit.input_tokens_details.cached_tokens,
        explicit.input_tokens_details.cache_write_tokens,
        explicit.output_tokens,
        explicit.output_tokens_details.reasoning_tokens,
        explicit.total_tokens,
    )
    # characters / 4: the instructions and the input, the output text
    prompt = (len("abcd") + len(INPUT)) // 4
    assert (prompt, 0, 2, 0, prompt + 2) == (
        estimated.input_tokens,
        estimated.input_tokens_details.cached_tokens,
        estimated.output_tokens,
        estimated.output_tokens_details.reasoning_tokens,
        estimated.total_tokens,
    )


# ---------------------------------------------------------------------------------------------
# the recorded request
# ---------------------------------------------------------------------------------------------


def test_the_request_is_recorded_as_messages_format_and_limit(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """A Responses request is recorded as messages (every input item kind), its text format and
    its output limit."""
    scripted_server.push("{}")
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    text_format = {"type": "json_schema", "name": "Invoice", "schema": schema, "strict": True}
    conversation = [
        {"role": "developer", "content": "Use EUR."},
        {"role": "user", "content": [{"type": "input_text", "text": "Extract INV-1."}]},
        {"type": "function_call", "call_id": "c1", "name": "put", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Now."}]},
    ]

    sdk.responses.create(
        model="gpt-test",
        instructions="Answer in JSON.",
        input=conversation,  # type: ignore[arg-type]
        text={"format": text_format},  # type: ignore[typeddict-item]
        max_output_tokens=256,
    )

    [request] = scripted_server.requests
    assert [
        {"role": "system", "content": "Answer in JSON."},
        {"role": "developer", "content": "Use EUR."},
        {"role": "user", "content": "Extract INV-1."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "put", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "Now."},
    ] == request.messages
    assert "Answer in JSON.\nUse EUR." == request.system
    assert "Now." == request.last_user_text
    assert text_format == request.response_format
    assert 256 == request.max_tokens


def test_the_chat_route_fills_the_same_accessors(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """The chat route fills the same recorded-request accessors as the Responses route."""
    scripted_server.extend(["{}", "{}"])
    sdk.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "user", "content": INPUT}],
        response_format={"type": "json_object"},
        max_completion_tokens=64,
    )
    _create(sdk)

    chat, plain = scripted_server.requests
    assert ({"type": "json_object"}, 64) == (chat.response_format, chat.max_tokens)
    assert (None, None) == (plain.response_format, plain.max_tokens)
    assert [{"role": "user", "content": INPUT}] == plain.messages


# ---------------------------------------------------------------------------------------------
# structured output: responses.parse
# ---------------------------------------------------------------------------------------------


def test_parse_returns_the_parsed_model(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """`responses.parse` through the scripted server returns the parsed model, and the format
    sent is echoed back."""
    scripted_server.push('{"number": "INV-1", "total": 3}')

    parsed = sdk.responses.parse(model="gpt-test", input=INPUT, text_format=Invoice)

    assert Invoice(number="INV-1", total=3) == parsed.output_parsed
    sent = scripted_server.requests[0].response_format
    assert sent is not None
    assert ("json_schema", "Invoice", True) == (sent["type"], sent["name"], sent["strict"])
    assert sent == parsed.text.format.to_dict()  # the format is echoed


# ---------------------------------------------------------------------------------------------
# streamed
# ---------------------------------------------------------------------------------------------


def test_a_stream_sends_the_typed_events_in_order(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """A streamed response sends the Responses API's typed events in their documented order."""
    scripted_server.push(ScriptedReply("abcdef", chunk_chars=2))

    events = list(_create(sdk, stream=True))

    assert [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ] == [event.type for event in events]
    assert list(range(len(events))) == [event.sequence_number for event in events]
    assert ["ab", "cd", "ef"] == [e.delta for e in events if e.type.endswith("text.delta")]
    assert ("in_progress", []) == (events[0].response.status, events[0].response.output)
    assert "abcdef" == events[-1].response.output_text
    assert events[-1].response.usage is not None
    scripted_server.wait_idle()
    record = scripted_server.requests[0]
    assert (True, len(events), True) == (
        record.streamed,
        record.events_sent,
        record.stream_completed,
    )


def test_the_stream_helper_accumulates_every_item(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """`responses.stream` rebuilds reasoning, text, refusal and function calls; its final
    response is the `response.completed` one."""
    reply = ScriptedReply(
        "Done.",
        reasoning="Sum the lines.",
        refusal="No tip.",
        commentary=["Working."],
        tool_calls=[CALL],
        chunk_chars=3,
    )
    scripted_server.push(reply)

    with sdk.responses.stream(model="gpt-test", input=INPUT) as stream:
        events = list(stream)
        final = stream.get_final_response()

    types = [event.type for event in events]
    summary = [e.delta for e in events if e.type == "response.reasoning_summary_text.delta"]
    assert "Sum the lines." == "".join(summary)
    refusal = [e.delta for e in events if e.type == "response.refusal.delta"]
    assert "No tip." == "".join(refusal)
    arguments = [e for e in events if e.type == "response.function_call_arguments.delta"]
    assert '{"a": 1}' == arguments[-1].snapshot
    texts = [e for e in events if e.type == "response.output_text.delta"]
    assert "Done." == texts[-1].snapshot
    assert 1 == types.count("response.function_call_arguments.done")
    assert "Working.Done." == final.output_text
    assert ["reasoning", "message", "message", "function_call"] == [o.type for o in final.output]
    assert list(range(len(events))) == [event.sequence_number for event in events]


def test_the_stream_helper_parses_the_final_text(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """The SDK's `responses.stream` helper parses the final text into the model."""
    scripted_server.push('{"number": "INV-2", "total": 5}')

    with sdk.responses.stream(model="gpt-test", input=INPUT, text_format=Invoice) as stream:
        done = [e for e in stream if e.type == "response.output_text.done"]
        final = stream.get_final_response()

    assert Invoice(number="INV-2", total=5) == done[0].parsed == final.output_parsed


@pytest.mark.parametrize(
    ("reply", "last", "status"),
    [
        (ScriptedReply("{", finish_reason="length"), "response.incomplete", "incomplete"),
        (ScriptedReply("{", response_error="Crashed."), "response.failed", "failed"),
    ],
    ids=["incomplete", "failed"],
)
def test_a_stream_ends_with_the_responses_status(
    scripted_server: ScriptedServer,
    sdk: openai.OpenAI,
    reply: ScriptedReply,
    last: str,
    status: str,
) -> None:
    """A stream ends with `response.incomplete` or `response.failed` as the reply's status says."""
    scripted_server.push(reply)
    scripted_server.push(reply)

    events = list(_create(sdk, stream=True))
    with sdk.responses.stream(model="gpt-test", input=INPUT) as stream:
        for _ in stream:
            pass
        with pytest.raises(RuntimeError, match=r"response\.completed"):
            stream.get_final_response()

    assert (last, status) == (events[-1].type, events[-1].response.status)
    types = [event.type for event in events]
    assert (1, 0) == (types.count(last), types.count("response.completed"))


def test_a_cut_stream_ends_without_its_final_event(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """A stream cut mid-answer ends without its final event, and the SDK sees the dropped
    connection."""
    scripted_server.push(ScriptedReply("abcdef", chunk_chars=2, cut_after_chars=3))
    seen: list[Any] = []

    with pytest.raises(DROPPED) as raised:
        seen.extend(_create(sdk, stream=True))
    dropped_cause(raised.value)

    assert ["ab", "c"] == [e.delta for e in seen if e.type == "response.output_text.delta"]
    assert "response.output_text.delta" == seen[-1].type
    scripted_server.wait_idle()
    record = scripted_server.requests[0]
    assert (len(seen), True) == (record.events_sent, record.stream_completed)


def test_a_stream_error_raises_the_sdks_error(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """An error event mid-stream raises the SDK's error with the scripted code."""
    scripted_server.push(
        ScriptedReply(
            "abcdef",
            stream_error_after_chars=4,
            stream_error="rate_limit_exceeded",
            error_code="rate_limit_exceeded",
        )
    )
    seen: list[Any] = []

    with pytest.raises(openai.APIError, match="after 4 characters") as caught:
        seen.extend(_create(sdk, stream=True))

    assert "abcd" == "".join(e.delta for e in seen if e.type == "response.output_text.delta")
    assert {"type": "rate_limit_exceeded", "code": "rate_limit_exceeded"}.items() <= dict(
        caught.value.body  # type: ignore[arg-type]
    ).items()


def test_the_async_client(scripted_server: ScriptedServer) -> None:
    """The async openai client's `create`, `stream` and `parse` all work against the Responses
    route."""
    scripted_server.extend(
        ["plain", ScriptedReply("streamed", chunk_chars=3), '{"number": "A", "total": 1}']
    )

    async def main() -> tuple[str, list[str], str, Invoice | None]:
        async with openai.AsyncOpenAI(
            base_url=scripted_server.base_url, api_key="test", max_retries=0
        ) as sdk:
            plain = await sdk.responses.create(model="gpt-test", input=INPUT)
            async with sdk.responses.stream(model="gpt-test", input=INPUT) as stream:
                deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
                final = await stream.get_final_response()
            parsed = await sdk.responses.parse(model="gpt-test", input=INPUT, text_format=Invoice)
            return plain.output_text, deltas, final.output_text, parsed.output_parsed

    plain, deltas, final, parsed = asyncio.run(main())

    assert ("plain", ["str", "eam", "ed"], "streamed") == (plain, deltas, final)
    assert Invoice(number="A", total=1) == parsed


@settings(max_examples=30, deadline=None)
@given(
    content=st.none() | st.text(max_size=30),
    reasoning=st.none() | st.text(max_size=20),
    commentary=st.none() | st.lists(st.text(max_size=10), max_size=2),
    arguments=st.none() | st.text(max_size=20),
    chunk_chars=st.none() | st.integers(min_value=1, max_value=8),
    limit=st.none() | st.integers(min_value=0, max_value=90),
    cut=st.booleans(),
)
def test_a_planned_stream_numbers_its_events_and_sends_the_first_n_characters(
    content: str | None,
    reasoning: str | None,
    commentary: list[str] | None,
    arguments: str | None,
    chunk_chars: int | None,
    limit: int | None,
    cut: bool,
) -> None:
    """Whatever the reply, the framed events are numbered 0, 1, 2... in order; the deltas carry
    the texts in output order (reasoning, commentary, content, tool arguments), the first N of
    them when the stream stops at N, ending with no final event (a cut) or one error event."""
    calls = (
        None
        if arguments is None
        else [{"id": "c", "function": {"name": "f", "arguments": arguments}}]
    )
    stop = (
        {} if limit is None else {"cut_after_chars" if cut else "stream_error_after_chars": limit}
    )
    reply = ScriptedReply(
        content,
        reasoning=reasoning,
        commentary=commentary,
        tool_calls=calls,
        chunk_chars=chunk_chars,
        **stop,
    )
    stream = openai_responses.stream(1, "m", reply, usage(reply, 0), {"stream": True})

    planned = plan(stream, reply)

    payloads = [_sse_payload(frame) for frame in planned.frames]
    assert list(range(len(payloads))) == [payload["sequence_number"] for payload in payloads]
    texts = [p["delta"] for p in payloads if p["type"].endswith(".delta")]
    whole = (reasoning or "") + "".join(commentary or []) + (content or "") + (arguments or "")
    assert whole[:limit] == "".join(texts)
    assert chunk_chars is None or all(len(text) <= chunk_chars for text in texts)
    assert ["response.created", "response.in_progress"] == [p["type"] for p in payloads[:2]]
    finals = [p for p in payloads if p["type"] in ("response.completed", "error")]
    if limit is None:
        assert [payloads[-1]] == finals
        assert not planned.cut
    else:
        assert cut == planned.cut
        assert ([] if cut else [payloads[-1]]) == finals
    assert all(isinstance(event, Text) == _is_delta(event) for event in stream.events)


def _is_delta(event: Any) -> bool:
    payload = event.make(event.text) if isinstance(event, Text) else event
    return str(payload["type"]).endswith(".delta")


def _sse_payload(frame: bytes) -> dict[str, Any]:
    """One `event: TYPE\\ndata: {...}\\n\\n` frame's payload (checking the two agree)."""
    event, data = frame.decode().removesuffix("\n\n").split("\n")
    payload: dict[str, Any] = json.loads(data.removeprefix("data: "))
    assert event == f"event: {payload['type']}"
    return payload


# ---------------------------------------------------------------------------------------------
# the reply's own fields
# ---------------------------------------------------------------------------------------------


def test_the_responses_fields_are_validated_and_load_from_a_reply_file(tmp_path: Any) -> None:
    """The Responses fields of a scripted reply are validated, and load from a reply file."""
    with pytest.raises(ValueError, match="commentary"):
        ScriptedReply("x", commentary="not a list")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="commentary"):
        ScriptedReply("x", commentary=[1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="response_error"):
        ScriptedReply("x", response_error="")
    path = tmp_path / "replies.json"
    path.write_text(json.dumps([{"content": "x", "commentary": ["a"], "response_error": "E"}]))
    [reply] = load_replies(path)
    assert isinstance(reply, ScriptedReply)
    assert (["a"], "E") == (reply.commentary, reply.response_error)


# ---------------------------------------------------------------------------------------------
# a batch of Responses requests (OpenAI's Batch API)
# ---------------------------------------------------------------------------------------------


def _line(custom_id: str, url: str = "/v1/responses") -> dict[str, Any]:
    body = {"model": "gpt-test", "input": INPUT}
    return {"custom_id": custom_id, "method": "POST", "url": url, "body": body}


def test_a_batch_of_responses_lines(scripted_server: ScriptedServer, sdk: openai.OpenAI) -> None:
    """Each `/v1/responses` line is answered with the `response` the route sends for the same
    reply (an error line for an HTTP error), in a batch whose endpoint is `/v1/responses`."""
    reply = ScriptedReply(
        '{"number": "INV-1", "total": 3}', reasoning="Add.", finish_reason="length"
    )
    scripted_server.extend([reply, reply, ScriptedReply.error(429, "Slow down.")])
    expected = sdk.responses.with_raw_response.create(
        model="gpt-test", input=INPUT
    ).http_response.json()
    lines = [_line("ok"), _line("busy")]
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    uploaded = sdk.files.create(file=("rows.jsonl", content), purpose="batch")

    created = sdk.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/responses", completion_window="24h"
    )
    batch = sdk.batches.retrieve(created.id)

    assert ("completed", "/v1/responses", 2, 1, 1) == (
        batch.status,
        batch.endpoint,
        batch.request_counts.total,
        batch.request_counts.completed,
        batch.request_counts.failed,
    )
    [line] = [json.loads(row) for row in sdk.files.content(batch.output_file_id).text.splitlines()]
    body = line["response"]["body"]
    assert _without_ids(expected) == _without_ids(body)
    parsed = openai.types.responses.Response.model_validate(body)
    assert ("incomplete", '{"number": "INV-1", "total": 3}') == (parsed.status, parsed.output_text)
    [error] = [json.loads(row) for row in sdk.files.content(batch.error_file_id).text.splitlines()]
    assert (429, "Slow down.") == (
        error["response"]["status_code"],
        error["response"]["body"]["error"]["message"],
    )
    assert batch.usage is not None
    assert body["usage"]["input_tokens"] == batch.usage.input_tokens


def _without_ids(response: dict[str, Any]) -> dict[str, Any]:
    """A `response` without what differs between two answers of one reply: its id, times
    and its items' ids."""
    kept = {k: v for k, v in response.items() if k not in ("id", "created_at", "completed_at")}
    kept["output"] = [{k: v for k, v in item.items() if k != "id"} for item in kept["output"]]
    return kept


def test_a_batch_holds_lines_of_its_own_endpoint_only(
    scripted_server: ScriptedServer, sdk: openai.OpenAI
) -> None:
    """A chat line in a Responses batch (or the reverse) fails the batch, naming the line."""
    scripted_server.push("unused")
    content = (json.dumps(_line("chat", url="/v1/chat/completions")) + "\n").encode()
    uploaded = sdk.files.create(file=("rows.jsonl", content), purpose="batch")

    batch = sdk.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/responses", completion_window="24h"
    )

    assert "failed" == batch.status
    assert batch.errors is not None
    assert batch.errors.data is not None
    assert [("invalid_url", 1)] == [(e.code, e.line) for e in batch.errors.data]
    assert 1 == scripted_server.remaining  # no line took a script item
    with pytest.raises(openai.BadRequestError, match="/v1/responses"):
        sdk.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h"
        )


def test_the_stream_on_the_wire_one_event_a_chunk_with_keepalives_in_the_waits(
    scripted_server: ScriptedServer,
) -> None:
    """Each typed event is one `event:` + `data:` frame, written as it is due (`chunk_delay_s`
    apart, SSE keep-alive comments filling the waits), and no `[DONE]` ends the stream."""
    scripted_server.push(
        ScriptedReply("abcd", chunk_chars=4, chunk_delay_s=0.08, keepalive_every_s=0.02)
    )
    url = f"{scripted_server.base_url}/responses"
    body = {"model": "gpt-test", "input": INPUT, "stream": True}

    with httpx2.Client() as client, client.stream("POST", url, json=body) as response:
        pieces = list(response.iter_raw())
        content_type = response.headers["content-type"]

    assert content_type.startswith("text/event-stream")
    frames = [frame for frame in b"".join(pieces).split(b"\n\n") if frame]
    events = [frame for frame in frames if frame != b": keep-alive"]
    assert [b"event: response.created", b"event: response.completed"] == [
        events[0].split(b"\n")[0],
        events[-1].split(b"\n")[0],
    ]
    assert all(len(event.split(b"\n")) == 2 for event in events)
    assert b"[DONE]" not in b"".join(pieces)
    assert len(frames) - len(events) >= len(events) - 1  # about 3 in each 80 ms wait
    assert frames[0].startswith(b"event: response.created")  # no wait before the first
