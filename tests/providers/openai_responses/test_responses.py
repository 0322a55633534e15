"""The Responses API healed: `wrap(OpenAI()).responses` (`create`, `parse`, `stream`) with the
real openai SDK over HTTP against the scripted server, sync and async, streamed and not; the
reply and event readers; `Healer.run` on a `Response` (`parse` and `stream` with a type:
test_responses_parse.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from typing import Any, Literal

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import ParsedResponse, Response
from pydantic import BaseModel

import healjson
from healjson import Degraded, Flag, Healed, Healer, HealPolicy, Reason
from healjson._core.wire.delta import read_chunk
from healjson._core.wire.reply import to_reply
from healjson._providers.openai_responses import Conversation, ResponseFailed
from healjson.testing import ScriptedReply, ScriptedServer

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")
WAYS = [(mode, streamed) for mode in MODES for streamed in (False, True)]
GOOD = '{"number": "INV-1", "total": 3}'


class Invoice(BaseModel):
    number: str
    total: int


EXPECTED = Invoice(number="INV-1", total=3)


def heal(
    mode: Mode,
    server: ScriptedServer,
    *,
    streamed: bool = False,
    method: str = "create",
    wrap: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Any:
    """One healed Responses call (its outcome; a stream read to its end), on a wrapped sync or
    async client."""
    kwargs.setdefault("model", "gpt-test")
    kwargs.setdefault("input", "Extract the invoice.")
    if method == "create":
        kwargs.setdefault("response_model", Invoice)
        if streamed:
            kwargs["stream"] = True
    elif method == "parse":
        kwargs.setdefault("text_format", Invoice)
    if mode == "sync":
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
            result = getattr(healjson.wrap(sdk, **(wrap or {})).responses, method)(**kwargs)
            if streamed or method == "stream":
                snapshots = list(result)
                assert snapshots or result.outcome is not None
                return result.outcome
            return result

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0
        ) as sdk:
            result = getattr(healjson.wrap(sdk, **(wrap or {})).responses, method)(**kwargs)
            if streamed or method == "stream":
                async for _ in result:
                    pass
                return result.outcome
            return await result

    return asyncio.run(main())


# -- local heals: one call each ---------------------------------------------------------------

LOCAL = {
    "fence and prose": ScriptedReply(content=f"Here it is:\n```json\n{GOOD}\n```\nDone."),
    "reasoning item": ScriptedReply(content=GOOD, reasoning="The total is 3."),
    "commentary": ScriptedReply(
        content=GOOD, commentary=['Looking: {"number": "X"'], reasoning="r"
    ),
    "key case": ScriptedReply(content='{"Number": "INV-1", "TOTAL": 3}'),
}


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
@pytest.mark.parametrize("case", sorted(LOCAL))
def test_local_heals_take_one_call(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool, case: str
) -> None:
    """Every local heal of a Responses answer (fences, prose, reasoning items, commentary, ...)
    takes one call on `/v1/responses`, sync, async and streamed."""
    scripted_server.push(LOCAL[case])

    outcome = heal(mode, scripted_server, streamed=streamed)

    assert isinstance(outcome, Healed), outcome
    assert EXPECTED == outcome.value
    assert 1 == outcome.calls == len(scripted_server.requests)
    assert "/v1/responses" == scripted_server.requests[0].path
    if case in ("reasoning item", "commentary"):
        reasoning = outcome.attempts[0].reasoning or ""
        assert reasoning.startswith("The total" if case == "reasoning item" else "r")
        assert Flag.REASONING_SET_ASIDE in outcome.flags
        if case == "commentary":  # set aside with the reasoning, never read as the answer
            assert 'Looking: {"number": "X"' in reasoning


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
def test_the_first_request_keeps_the_callers_input_and_asks_strict_json(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool
) -> None:
    """The first Responses request keeps the caller's input items and instructions as written and
    asks for strict JSON with the target's schema."""
    scripted_server.push(GOOD)
    items = [{"role": "user", "content": [{"type": "input_text", "text": "Invoice INV-1: 3"}]}]

    heal(mode, scripted_server, streamed=streamed, input=items, instructions="Extract.")

    body = scripted_server.requests[0].body
    assert items == body["input"]
    assert "Extract." == body["instructions"]
    text_format = body["text"]["format"]
    assert ("json_schema", "Invoice", True) == (
        text_format["type"],
        text_format["name"],
        text_format["strict"],
    )
    assert text_format["schema"]["additionalProperties"] is False


# -- repairs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
def test_a_cut_value_is_repaired_statelessly_by_default(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool
) -> None:
    """A cut answer (`incomplete`, `max_output_tokens`): the repair sends the caller's input,
    the answer verbatim and the repair message; `max_output_tokens` is raised."""
    scripted_server.extend(
        [ScriptedReply(content='{"number": "INV-1", "tot', finish_reason="length"), GOOD]
    )

    outcome = heal(
        mode,
        scripted_server,
        streamed=streamed,
        instructions="Extract.",
        max_output_tokens=40,
        policy=HealPolicy(on_truncation="raise_max_tokens"),
    )

    assert isinstance(outcome, Healed), outcome
    assert 2 == outcome.calls == len(scripted_server.requests)
    assert "length" == outcome.attempts[0].finish_reason
    second = scripted_server.requests[1].body
    assert 80 == second["max_output_tokens"]
    assert "Extract." == second["instructions"]
    assert "previous_response_id" not in second


def test_a_fresh_process_raises_the_responses_token_limit_after_a_cut() -> None:
    """In a fresh interpreter whose first run is a Responses one (its replies read by the
    namespace itself, so no reply registers the provider), a cut answer's repair raises
    `max_output_tokens`, not a chat completion's limit the Responses API does not take."""
    script = """
import healjson, openai
from healjson import HealPolicy
from healjson.testing import ScriptedReply, ScriptedServer
from pydantic import BaseModel
class Invoice(BaseModel):
    number: str
    total: int
cut = ScriptedReply(content='{"number": "INV-1", "tot', finish_reason="length")
with ScriptedServer([cut, '{"number": "INV-1", "total": 40}']) as server:
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    outcome = healjson.wrap(client).responses.create(
        model="m", input="Extract.", response_model=Invoice, max_output_tokens=40,
        policy=HealPolicy(on_truncation="raise_max_tokens"))
    second = server.requests[1].body
print(outcome.ok, second.get("max_output_tokens"), "max_completion_tokens" in second)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )

    assert "True 80 False" == done.stdout.strip(), done.stderr[-2000:]


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
def test_an_invalid_answer_is_repaired_statelessly(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool
) -> None:
    """An invalid Responses answer is repaired statelessly: the next request repeats the input,
    quotes the answer and adds the repair message."""
    scripted_server.extend(['{"number": "INV-1", "total": "many"}', GOOD])

    outcome = heal(mode, scripted_server, streamed=streamed, instructions="Extract.")

    assert isinstance(outcome, Healed), outcome
    assert 2 == outcome.calls
    second = scripted_server.requests[1].body
    assert "Extract." == second["instructions"]
    roles = [item["role"] for item in second["input"]]
    assert ["user", "assistant", "user"] == roles
    assert "Extract the invoice." == second["input"][0]["content"]
    assert '{"number": "INV-1", "total": "many"}' in second["input"][1]["content"]
    assert "total" in second["input"][2]["content"]
    assert "previous_response_id" not in second


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
def test_a_repair_via_previous_response_id_sends_only_the_repair_message(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool
) -> None:
    """With `repair_via="previous_response_id"` a repair chains to the stored response and sends
    only the repair message."""
    scripted_server.extend(['{"number": "INV-1", "total": "many"}', GOOD])

    outcome = heal(
        mode,
        scripted_server,
        streamed=streamed,
        instructions="Extract.",
        store=True,
        repair_via="previous_response_id",
    )

    assert isinstance(outcome, Healed), outcome
    assert 2 == outcome.calls
    first, second = (request.body for request in scripted_server.requests)
    assert "previous_response_id" not in first
    assert "resp_scripted_1" == second["previous_response_id"]
    assert "Extract." == second["instructions"]  # not carried over by the API: sent again
    assert 1 == len(second["input"])
    assert "user" == second["input"][0]["role"]
    assert "total" in second["input"][0]["content"]


def test_previous_response_id_repairs_need_stored_responses(
    scripted_server: ScriptedServer,
) -> None:
    """`repair_via="previous_response_id"` without `store=True`, or an unknown `repair_via`, is
    refused before any request."""
    with pytest.raises(ValueError, match="store=True"):
        heal("sync", scripted_server, repair_via="previous_response_id")
    with pytest.raises(ValueError, match="repair_via"):
        heal("sync", scripted_server, repair_via="chain")
    assert [] == scripted_server.requests


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
def test_a_rejected_strict_format_steps_down_to_json_object(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool
) -> None:
    """A Responses endpoint that rejects the strict text format is asked again in JSON object
    mode."""
    scripted_server.extend(
        [
            ScriptedReply.error(
                400, "Invalid schema for text.format 'Invoice'.", param="text.format"
            ),
            GOOD,
        ]
    )

    outcome = heal(mode, scripted_server, streamed=streamed)

    assert isinstance(outcome, Healed), outcome
    first, second = (request.body for request in scripted_server.requests)
    assert "json_schema" == first["text"]["format"]["type"]
    assert {"type": "json_object"} == second["text"]["format"]
    assert "system" == second["input"][0]["role"]  # the schema, in the prompt
    assert "JSON schema" in second["input"][0]["content"]
    assert {"role": "user", "content": "Extract the invoice."} == second["input"][1]


# -- what the model or the provider does: reasons -------------------------------------------

ENDS = {
    "refusal": (ScriptedReply(refusal="I cannot help with that."), Reason.REFUSAL),
    "content filter": (
        ScriptedReply(content='{"number": "IN', finish_reason="content_filter"),
        Reason.CONTENT_FILTER,
    ),
    "failed": (ScriptedReply(response_error="The model crashed."), Reason.API_ERROR),
}


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
@pytest.mark.parametrize("case", sorted(ENDS))
def test_statuses_degrade_with_their_reasons(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool, case: str
) -> None:
    """Each Responses end status (failed, incomplete for length or content filter, refusal)
    degrades with its own reason."""
    reply, reason = ENDS[case]
    scripted_server.push(reply)

    outcome = heal(mode, scripted_server, streamed=streamed)

    assert isinstance(outcome, Degraded), outcome
    assert reason == outcome.reason
    if case == "failed":
        assert "The model crashed." in (outcome.attempts[0].error or "")


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
def test_a_cut_answer_without_attempts_left_is_token_truncated(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool
) -> None:
    """A cut Responses answer with no attempt left degrades as `token_truncated`."""
    scripted_server.push(ScriptedReply(content='{"number": "INV-1", "tot', finish_reason="length"))

    outcome = heal(mode, scripted_server, streamed=streamed, policy=HealPolicy(max_attempts=1))

    assert isinstance(outcome, Degraded), outcome
    assert Reason.TOKEN_TRUNCATED == outcome.reason


@pytest.mark.parametrize(("mode", "streamed"), WAYS)
def test_usage_is_read_from_the_responses_counts(
    scripted_server: ScriptedServer, mode: Mode, streamed: bool
) -> None:
    """The Responses API's token counts (input, output, cached, reasoning) are read into `Usage`."""
    counts = {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70,
              "cached_tokens": 10, "reasoning_tokens": 5}  # fmt: skip
    scripted_server.push(ScriptedReply(content=GOOD, usage=counts, reasoning="r"))

    outcome = heal(mode, scripted_server, streamed=streamed)

    usage = outcome.usage
    assert (50, 20, 10, 5, 1) == (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cache_read_tokens,
        usage.reasoning_tokens,
        usage.requests,
    )
    assert not usage.estimated


# -- parse, stream, passthrough ---------------------------------------------------------------


def test_a_healed_stream_gives_snapshots_and_items(scripted_server: ScriptedServer) -> None:
    """A healed Responses stream of a list hands out each item as it completes."""
    scripted_server.push(
        ScriptedReply(
            content='[{"number": "A", "total": 1}, {"number": "B", "total": 2}]', chunk_chars=5
        )
    )
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test", max_retries=0) as sdk:
        stream = healjson.wrap(sdk).responses.create(
            model="gpt-test", input="Invoices.", response_model=list[Invoice], stream=True
        )
        items = list(stream.items())
    assert ["A", "B"] == [item.number for item in items]
    assert isinstance(stream.outcome, Healed)


@pytest.mark.parametrize("mode", MODES)
def test_without_response_model_the_sdks_own_response_comes_back(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """Without `response_model`, a wrapped client's `responses.create` and `parse` return the
    SDK's own response."""
    scripted_server.extend([GOOD, GOOD])

    def calls(responses: Any) -> list[Any]:
        return [
            responses.create(model="gpt-test", input="x"),
            responses.parse(model="gpt-test", input="x"),
        ]

    if mode == "sync":
        with openai.OpenAI(base_url=scripted_server.base_url, api_key="test") as sdk:
            plain, parsed = calls(healjson.wrap(sdk).responses)
    else:

        async def main() -> list[Any]:
            async with openai.AsyncOpenAI(base_url=scripted_server.base_url, api_key="t") as sdk:
                return [await call for call in calls(healjson.wrap(sdk).responses)]

        plain, parsed = asyncio.run(main())
    assert type(plain) is Response
    assert GOOD == plain.output_text
    assert "text" not in scripted_server.requests[0].body
    assert isinstance(parsed, ParsedResponse)  # the SDK's own parse, untouched
    assert GOOD == parsed.output_text


def test_stream_without_text_format_is_the_sdks_own(scripted_server: ScriptedServer) -> None:
    """Without `text_format`, `responses.stream` is the SDK's own stream manager."""
    scripted_server.push(GOOD)
    with (
        openai.OpenAI(base_url=scripted_server.base_url, api_key="test") as sdk,
        healjson.wrap(sdk).responses.stream(model="gpt-test", input="x") as stream,
    ):
        final = stream.get_final_response()
    assert GOOD == final.output_text


# -- Healer.run on a Response, and the readers ------------------------------------------------


def _response(scripted_server: ScriptedServer, reply: Any) -> Response:
    scripted_server.push(reply)
    with openai.OpenAI(base_url=scripted_server.base_url, api_key="test") as sdk:
        return sdk.responses.create(model="gpt-test", input="x")


@pytest.mark.parametrize("as_dict", [False, True])
def test_healer_run_reads_a_response(scripted_server: ScriptedServer, as_dict: bool) -> None:
    """`Healer.run` and `arun` read a Responses API `Response`, or its dict dump, as a reply."""
    response = _response(scripted_server, ScriptedReply(content=f"```json\n{GOOD}\n```"))
    value = response.model_dump() if as_dict else response
    healer = Healer(Invoice)

    outcome = healer.run(lambda messages, **params: value, "Extract.")
    later = asyncio.run(healer.arun(lambda messages, **params: value, "Extract."))

    assert EXPECTED == outcome.unwrap() == later.unwrap()


def test_function_calls_are_tool_calls(scripted_server: ScriptedServer) -> None:
    """A Response's function calls are read as tool calls, and a call carrying the answer heals."""
    call = {"id": "c1", "type": "function", "function": {"name": "put", "arguments": GOOD}}
    response = _response(
        scripted_server, ScriptedReply(tool_calls=[call], finish_reason="tool_calls")
    )

    reply = to_reply(response)

    assert (None, "tool_calls") == (reply.content, reply.finish_reason)
    assert [("put", GOOD)] == [(c.name, c.arguments) for c in reply.tool_calls]
    assert EXPECTED == Healer(Invoice).run(lambda m, **p: response, "x").unwrap()


def test_a_failed_response_and_an_error_event_are_provider_failures() -> None:
    """A failed Response and a Responses stream error event are provider failures, while an
    Anthropic error event is not read as one."""
    failed = {"object": "response", "status": "failed", "output": [],
              "error": {"code": "server_error", "message": "It broke."}}  # fmt: skip
    with pytest.raises(ResponseFailed, match="It broke"):
        to_reply(failed)
    event = {"type": "error", "code": "x", "message": "Stream broke.", "sequence_number": 3}
    with pytest.raises(ResponseFailed, match="Stream broke"):
        read_chunk(event)
    # an Anthropic stream's error event is not one (read as before: nothing)
    assert "" == read_chunk({"type": "error", "error": {"type": "overloaded_error"}}).text


def test_the_text_events_read_as_deltas() -> None:
    """Each Responses stream text event (output text, refusal, function arguments, reasoning
    summary, completion) is read as its delta field."""
    cases: list[tuple[dict[str, Any], Callable[[Any], Any], Any]] = [
        ({"type": "response.output_text.delta", "delta": "ab"}, lambda d: d.text, "ab"),
        ({"type": "response.refusal.delta", "delta": "no"}, lambda d: d.refusal, "no"),
        (
            {"type": "response.function_call_arguments.delta", "delta": "{"},
            lambda d: d.tool_arguments,
            "{",
        ),
        (
            {"type": "response.reasoning_summary_text.delta", "delta": "hm"},
            lambda d: d.reasoning,
            "hm",
        ),
        (
            {
                "type": "response.incomplete",
                "response": {
                    "object": "response",
                    "status": "incomplete",
                    "output": [],
                    "incomplete_details": {"reason": "max_output_tokens"},
                },
            },
            lambda d: d.finish_reason,
            "length",
        ),
    ]
    for event, field, expected in cases:
        assert expected == field(read_chunk(event)), event


# -- the request translation, as a property ---------------------------------------------------

_texts = st.text(min_size=1, max_size=20)
_items = st.lists(
    st.builds(lambda role, text: {"role": role, "content": text},
              st.sampled_from(["user", "assistant", "developer"]), _texts),
    min_size=1, max_size=3,
)  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(
    instructions=st.none() | _texts,
    given_input=_texts | _items,
    tier=st.none() | _texts,
    rounds=st.lists(st.tuples(_texts, _texts), max_size=3),
    previous=st.booleans(),
)
def test_requests_keep_the_callers_instructions_and_input_as_written(
    instructions: str | None,
    given_input: Any,
    tier: str | None,
    rounds: list[tuple[str, str]],
    previous: bool,
) -> None:
    """The first request sends `instructions` and `input` untouched; a later one puts the
    tier's instruction before the caller's input and each answer and repair message after it,
    or (chained) only what follows the last answer, with `previous_response_id`."""
    conversation = Conversation(instructions, given_input, previous=previous)
    before = [] if tier is None else [{"role": "system", "content": tier}]
    after = [
        message
        for answer, fix in rounds
        for message in ({"role": "assistant", "content": answer}, {"role": "user", "content": fix})
    ]
    conversation.seen("resp_1")
    sent = [*before, *map(dict, conversation.messages), *after]

    request = conversation.request({"messages": sent, "model": "m", "max_tokens": 9})

    assert 9 == request["max_output_tokens"]
    assert "max_tokens" not in request
    assert instructions == request.get("instructions")
    if previous and rounds:
        assert "resp_1" == request["previous_response_id"]
        assert [{"role": "user", "content": rounds[-1][1]}] == request["input"]
        return
    assert "previous_response_id" not in request
    if not before and not after:
        assert request["input"] is given_input
        return
    own = (
        [{"role": "user", "content": given_input}] if isinstance(given_input, str) else given_input
    )
    assert [*before, *own, *after] == request["input"]


@pytest.mark.parametrize("mode", MODES)
def test_the_prompt_tier_sends_the_schema_as_an_input_message(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """The prompt tier of the Responses API sends the schema as a system input message before the
    caller's input."""
    scripted_server.push(GOOD)

    outcome = heal(mode, scripted_server, json_mode="prompt", instructions="Extract.")

    assert isinstance(outcome, Healed)
    body = scripted_server.requests[0].body
    assert "text" not in body
    assert "Extract." == body["instructions"]
    assert "system" == body["input"][0]["role"]
    assert "JSON schema" in body["input"][0]["content"]
    assert {"role": "user", "content": "Extract the invoice."} == body["input"][1]
