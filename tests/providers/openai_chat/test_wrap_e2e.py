"""`healjson.wrap` end to end: the real openai SDK over real HTTP against `ScriptedServer`.

Every scenario runs twice: with `openai.OpenAI` and with `openai.AsyncOpenAI` (driven by
`asyncio.run`). Clients use `max_retries=0` so each HTTP request the server counts is one that
healjson made (the SDK would otherwise re-send 429/5xx and timeouts on its own).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, Reason, Usage, Violation, contract
from healjson.adapters._openai import HealingClient
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS as _SSL

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")

# ---------------------------------------------------------------------------------------------
# Models, contracts and canned answers
# ---------------------------------------------------------------------------------------------


class Invoice(BaseModel):
    number: str
    total: int
    paid: bool
    note: str | None


class Booking(BaseModel):
    guest: str
    check_in: int
    check_out: int


class Line(BaseModel):
    sku: str
    qty: int


class Order(BaseModel):
    order_id: str
    lines: list[Line]


class Item(BaseModel):
    name: str
    qty: int


@contract(fields=("check_in", "check_out"))
def leaves_after_arrival(value: Booking) -> Violation | None:
    """check_out must be after check_in."""
    if value.check_out <= value.check_in:
        return Violation("check_out must be a later day than check_in")
    return None


USER = [
    {"role": "system", "content": "You extract invoices."},
    {"role": "user", "content": "Invoice INV-1 over 5 EUR, paid, no note."},
]
GOOD = '{"number": "INV-1", "total": 5, "paid": true, "note": null}'
EXPECTED = Invoice(number="INV-1", total=5, paid=True, note=None)
INVALID = '{"number": "INV-1", "total": "lots"}'

# ---------------------------------------------------------------------------------------------
# Driving the real SDK, sync or async
# ---------------------------------------------------------------------------------------------


def sync_sdk(server: ScriptedServer, **client_kwargs: Any) -> openai.OpenAI:
    """A real sync SDK client for `server`, without SDK retries unless asked."""
    options: dict[str, Any] = {"max_retries": 0, **client_kwargs}
    return openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        http_client=openai.DefaultHttpxClient(verify=_SSL),
        **options,
    )


def async_sdk(server: ScriptedServer, **client_kwargs: Any) -> openai.AsyncOpenAI:
    """A real async SDK client for `server`, without SDK retries unless asked."""
    options: dict[str, Any] = {"max_retries": 0, **client_kwargs}
    return openai.AsyncOpenAI(
        base_url=server.base_url,
        api_key="test",
        http_client=openai.DefaultAsyncHttpxClient(verify=_SSL),
        **options,
    )


def ask_all(
    mode: Mode,
    server: ScriptedServer,
    calls: list[Mapping[str, Any]],
    *,
    client: Mapping[str, Any] | None = None,
    **wrap_kwargs: Any,
) -> tuple[Any, list[Any]]:
    """Run `create(**call)` for each call on one wrapped client; return the wrapper and results."""
    client = client or {}
    if mode == "sync":
        with sync_sdk(server, **client) as sdk:
            wrapped = healjson.wrap(sdk, **wrap_kwargs)
            return wrapped, [wrapped.chat.completions.create(**call) for call in calls]

    async def main() -> tuple[Any, list[Any]]:
        async with async_sdk(server, **client) as sdk:
            wrapped = healjson.wrap(sdk, **wrap_kwargs)
            return wrapped, [await wrapped.chat.completions.create(**call) for call in calls]

    return asyncio.run(main())


def heal_one(
    mode: Mode,
    items: list[Any],
    *,
    repeat: bool = False,
    client: Mapping[str, Any] | None = None,
    wrap_kwargs: Mapping[str, Any] | None = None,
    **create_kwargs: Any,
) -> tuple[Any, ScriptedServer]:
    """One healing `create` against a fresh server scripted with `items`."""
    call = {"model": "small-model", "messages": USER, "response_model": Invoice, **create_kwargs}
    with ScriptedServer(items, repeat=repeat) as server:
        _, [outcome] = ask_all(mode, server, [call], client=client, **(wrap_kwargs or {}))
    return outcome, server


def _objects(schema: Any) -> Iterator[dict[str, Any]]:
    """Every JSON-schema node of an object type, however deeply nested."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _objects(value)


# ---------------------------------------------------------------------------------------------
# Sync and async clients
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_wrapper_knows_whether_the_client_is_async(mode: Mode) -> None:
    """`wrap` detects `AsyncOpenAI` so that `create(response_model=...)` returns an awaitable."""
    with ScriptedServer([GOOD]) as server:
        if mode == "sync":
            with sync_sdk(server) as sdk:
                wrapped = healjson.wrap(sdk)
                result = wrapped.chat.completions.create(
                    model="small-model", messages=USER, response_model=Invoice
                )
        else:

            async def main() -> tuple[Any, Any]:
                async with async_sdk(server) as sdk:
                    wrapped = healjson.wrap(sdk)
                    pending = wrapped.chat.completions.create(
                        model="small-model", messages=USER, response_model=Invoice
                    )
                    awaitable = inspect.isawaitable(pending)
                    return wrapped, (await pending if awaitable else pending)

            wrapped, result = asyncio.run(main())

    assert (mode == "async") is wrapped.is_async
    assert isinstance(result, Healed)
    assert EXPECTED == result.value


# ---------------------------------------------------------------------------------------------
# Healed in one call
# ---------------------------------------------------------------------------------------------

ONE_CALL_ANSWERS = {
    "fenced": f"```json\n{GOOD}\n```",
    "prose_wrapped": f"Sure! Here is the invoice you asked for:\n{GOOD}\nLet me know if...",
    "trailing_comma": '{"number": "INV-1", "total": 5, "paid": true, "note": null,}',
    "single_quoted": "{'number': 'INV-1', 'total': 5, 'paid': true, 'note': null}",
    "python_literals": '{"number": "INV-1", "total": 5, "paid": True, "note": None}',
    "string_for_int": '{"number": "INV-1", "total": "5", "paid": true, "note": null}',
    "second_candidate_validates": (
        'First draft: {"number": "INV-1"}\nFinal answer: '
        '{"number": "INV-1", "total": 5, "paid": true, "note": null}'
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("answer", ONE_CALL_ANSWERS.values(), ids=ONE_CALL_ANSWERS.keys())
def test_sloppy_answer_heals_in_one_call(mode: Mode, answer: str) -> None:
    """A fixable answer heals locally: one call, one HTTP request, no repair round."""
    outcome, server = heal_one(mode, [answer])

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert answer == outcome.raw_text
    assert 1 == outcome.calls
    assert 1 == len(server.requests)


# ---------------------------------------------------------------------------------------------
# Healed in two calls
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_truncated_then_good_heals_in_two(mode: Mode) -> None:
    """A reply cut off by the token limit is re-asked once and the good answer heals."""
    cut = ScriptedReply('{"number": "INV-1", "total": 5, "pa', finish_reason="length")

    outcome, server = heal_one(mode, [cut, GOOD])

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert 2 == outcome.calls
    assert 2 == len(server.requests)
    assert ["length", "stop"] == [a.finish_reason for a in outcome.attempts]


@pytest.mark.parametrize("mode", MODES)
def test_contract_violation_then_good_heals_in_two_with_a_full_repair_turn(mode: Mode) -> None:
    """The repair request resends the original messages, the bad answer and a precise fix."""
    bad = '{"guest": "Ada", "check_in": 1712, "check_out": 1709}'
    good = '{"guest": "Ada", "check_in": 1712, "check_out": 1715}'
    messages = [
        {"role": "system", "content": "You extract bookings."},
        {"role": "user", "content": "Ada stays from day 1712 to day 1715."},
    ]
    call = {
        "model": "small-model",
        "messages": messages,
        "response_model": Booking,
        "contracts": [leaves_after_arrival],
    }
    with ScriptedServer([bad, good]) as server:
        _, [outcome] = ask_all(mode, server, [call])

    assert isinstance(outcome, Healed)
    assert Booking(guest="Ada", check_in=1712, check_out=1715) == outcome.value
    assert 2 == outcome.calls
    assert 2 == len(server.requests)
    repair = server.requests[1].messages
    assert messages == repair[: len(messages)]
    assert {"role": "assistant", "content": bad} == repair[len(messages)]
    assert len(messages) + 2 == len(repair)
    assert "user" == repair[-1]["role"]
    turn = repair[-1]["content"]
    assert "check_in" in turn
    assert "check_out" in turn
    assert "1709" in turn
    assert "1712" in turn
    assert ("check_out",) == outcome.changed_fields


# ---------------------------------------------------------------------------------------------
# Degraded
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("max_attempts", [3, 2])
def test_always_invalid_degrades_after_exactly_max_attempts(mode: Mode, max_attempts: int) -> None:
    """An answer that never validates costs exactly `max_attempts` calls, then degrades."""
    policy = HealPolicy(max_attempts=max_attempts)

    outcome, server = heal_one(mode, [INVALID], repeat=True, policy=policy)

    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert max_attempts == outcome.calls
    assert max_attempts == len(server.requests)
    assert INVALID == outcome.raw_text
    assert outcome.errors


@pytest.mark.parametrize("mode", MODES)
def test_refusal_degrades_in_one_call(mode: Mode) -> None:
    """A refusal from the provider stops at once with reason `refusal`."""
    refusal = ScriptedReply(content=None, refusal="I can't help with that.")

    outcome, server = heal_one(mode, [refusal])

    assert isinstance(outcome, Degraded)
    assert Reason.REFUSAL == outcome.reason
    assert 1 == outcome.calls
    assert 1 == len(server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_content_filter_degrades_in_one_call(mode: Mode) -> None:
    """`finish_reason="content_filter"` stops at once with reason `content_filter`."""
    filtered = ScriptedReply(content="", finish_reason="content_filter")

    outcome, server = heal_one(mode, [filtered])

    assert isinstance(outcome, Degraded)
    assert Reason.CONTENT_FILTER == outcome.reason
    assert 1 == outcome.calls
    assert 1 == len(server.requests)


API_FAILURES = {
    "http_500": ScriptedReply.error(500, "The server had an error."),
    "http_429": ScriptedReply.error(429, "Rate limit reached."),
    "non_json_200": ScriptedReply.non_json("<html>bad gateway</html>"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("failure", API_FAILURES.values(), ids=API_FAILURES.keys())
def test_api_failure_degrades_with_api_error_after_one_request(
    mode: Mode, failure: ScriptedReply
) -> None:
    """HTTP 500, 429 and a non-JSON 200 body become `api_error` without any re-send."""
    outcome, server = heal_one(mode, [failure, GOOD])

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == outcome.calls
    assert 1 == len(server.requests)
    assert outcome.attempts[0].error


@pytest.mark.parametrize("mode", MODES)
def test_reply_slower_than_the_client_timeout_degrades_with_timeout(mode: Mode) -> None:
    """A reply slower than the SDK's timeout becomes `timeout` after one request."""
    outcome, server = heal_one(
        mode, [ScriptedReply.slow(GOOD, delay_s=1.0)], client={"timeout": 0.2}
    )

    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert 1 == outcome.calls
    assert 1 == len(server.requests)


# ---------------------------------------------------------------------------------------------
# Passthrough without response_model
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_create_without_response_model_returns_what_the_bare_client_returns(mode: Mode) -> None:
    """Without `response_model` the wrapper returns the SDK's own completion, request unchanged."""
    call = {"model": "small-model", "messages": USER, "temperature": 0}
    with ScriptedServer([GOOD, GOOD]) as server:
        if mode == "sync":
            with sync_sdk(server) as sdk:
                bare = sdk.chat.completions.create(**call)
                wrapped = healjson.wrap(sdk).chat.completions.create(**call)
        else:

            async def main() -> tuple[Any, Any]:
                async with async_sdk(server) as sdk:
                    first = await sdk.chat.completions.create(**call)
                    second = await healjson.wrap(sdk).chat.completions.create(**call)
                    return first, second

            bare, wrapped = asyncio.run(main())

    assert type(bare) is type(wrapped)
    assert bare.choices == wrapped.choices
    assert bare.usage == wrapped.usage
    assert bare.model == wrapped.model
    assert GOOD == wrapped.choices[0].message.content
    assert 2 == len(server.requests)
    assert server.requests[0].body == server.requests[1].body
    assert "response_format" not in server.requests[1].body


@pytest.mark.parametrize("mode", MODES)
def test_streaming_passes_through_and_yields_chunks(mode: Mode) -> None:
    """`stream=True` without `response_model` returns the SDK's stream of chunks."""
    call = {"model": "small-model", "messages": USER, "stream": True}
    with ScriptedServer([GOOD]) as server:
        if mode == "sync":
            with sync_sdk(server) as sdk:
                stream = healjson.wrap(sdk).chat.completions.create(**call)
                kind = type(stream)
                chunks = list(stream)
        else:

            async def main() -> tuple[type, list[Any]]:
                async with async_sdk(server) as sdk:
                    stream = await healjson.wrap(sdk).chat.completions.create(**call)
                    return type(stream), [chunk async for chunk in stream]

            kind, chunks = asyncio.run(main())

    assert {"sync": openai.Stream, "async": openai.AsyncStream}[mode] is kind
    assert 1 < len(chunks)
    assert "chat.completion.chunk" == chunks[0].object
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert GOOD == text
    assert 1 == len(server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_other_attributes_delegate_to_the_wrapped_client(mode: Mode) -> None:
    """`models.list()` is the wrapped client's own; `with_options(...)` keeps healing."""
    with ScriptedServer() as server:
        if mode == "sync":
            with sync_sdk(server) as sdk:
                wrapped = healjson.wrap(sdk)
                ids = [model.id for model in wrapped.models.list()]
                tuned = wrapped.with_options(timeout=5)
        else:

            async def main() -> tuple[list[str], Any]:
                async with async_sdk(server) as sdk:
                    wrapped = healjson.wrap(sdk)
                    page = await wrapped.models.list()
                    return [model.id for model in page.data], wrapped.with_options(timeout=5)

            ids, tuned = asyncio.run(main())

    assert ["scripted-model"] == ids
    assert {"sync": openai.OpenAI, "async": openai.AsyncOpenAI}[mode] is type(tuned.wrapped)
    assert isinstance(tuned, HealingClient)
    assert 5 == tuned.timeout
    assert [("GET", "/v1/models")] == [(r.method, r.path) for r in server.requests]


# ---------------------------------------------------------------------------------------------
# Format negotiation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_first_request_asks_for_a_strict_json_schema(mode: Mode) -> None:
    """The default tier sends `json_schema` with `strict: true`, every object closed."""
    answer = '{"order_id": "A1", "lines": [{"sku": "X", "qty": 2}]}'
    call = {"model": "small-model", "messages": USER, "response_model": Order}
    with ScriptedServer([answer]) as server:
        wrapped, [outcome] = ask_all(mode, server, [call])

    assert isinstance(outcome, Healed)
    assert Order(order_id="A1", lines=[Line(sku="X", qty=2)]) == outcome.value
    assert 1 == outcome.calls
    assert 1 == len(server.requests)
    request = server.requests[0]
    assert USER == request.messages
    response_format = request.body["response_format"]
    assert "json_schema" == response_format["type"]
    assert True is response_format["json_schema"]["strict"]
    schema = response_format["json_schema"]["schema"]
    objects = list(_objects(schema))
    assert 2 <= len(objects)  # Order and Line
    assert [False] * len(objects) == [node.get("additionalProperties") for node in objects]
    assert "json_schema" == wrapped.format.mode


REJECTED = ScriptedReply.error(
    400,
    "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
    param="response_format",
)


@pytest.mark.parametrize("mode", MODES)
def test_rejected_tier_steps_down_in_the_same_attempt_and_is_remembered(mode: Mode) -> None:
    """A 400 naming response_format retries as json_object in one attempt; the wrapper keeps it."""
    call = {"model": "small-model", "messages": USER, "response_model": Invoice}
    with ScriptedServer([REJECTED, GOOD, GOOD]) as server:
        wrapped, [first, second] = ask_all(mode, server, [call, call])

    assert isinstance(first, Healed)
    assert EXPECTED == first.value
    assert 1 == first.calls
    assert isinstance(second, Healed)
    assert 1 == second.calls
    assert 3 == len(server.requests)
    kinds = [r.body.get("response_format", {}).get("type") for r in server.requests]
    assert ["json_schema", "json_object", "json_object"] == kinds
    stepped = server.requests[1].messages
    assert "system" == stepped[0]["role"]
    assert '"total"' in stepped[0]["content"]
    assert USER == stepped[1:]
    assert "json_object" == wrapped.format.mode


@pytest.mark.parametrize("mode", MODES)
def test_two_rejected_tiers_step_down_to_prompt_only(mode: Mode) -> None:
    """json_schema and json_object both rejected: the same attempt ends at the prompt tier."""
    rejected_object = ScriptedReply.error(
        400, "'response_format' of type 'json_object' is not supported.", param="response_format"
    )
    call = {"model": "small-model", "messages": USER, "response_model": Invoice}
    with ScriptedServer([REJECTED, rejected_object, GOOD]) as server:
        wrapped, [outcome] = ask_all(mode, server, [call])

    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert 3 == len(server.requests)
    kinds = [r.body.get("response_format", {}).get("type") for r in server.requests]
    assert ["json_schema", "json_object", None] == kinds
    assert "system" == server.requests[2].messages[0]["role"]
    assert "prompt" == wrapped.format.mode


@pytest.mark.parametrize("mode", MODES)
def test_a_400_that_does_not_name_response_format_is_an_api_error(mode: Mode) -> None:
    """An unrelated HTTP 400 is not a format rejection: no step-down, `api_error` at once."""
    unrelated = ScriptedReply.error(400, "The model `small-model` does not exist.", param="model")
    call = {"model": "small-model", "messages": USER, "response_model": Invoice}
    with ScriptedServer([unrelated, GOOD]) as server:
        wrapped, [outcome] = ask_all(mode, server, [call])

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == outcome.calls
    assert 1 == len(server.requests)
    assert "json_schema" == wrapped.format.mode


@pytest.mark.parametrize("mode", MODES)
def test_sdk_retries_stay_inside_one_healjson_call(mode: Mode) -> None:
    """With SDK retries on, a retried 500 costs two HTTP requests but one healjson call."""
    flaky = ScriptedReply.error(500, "Try again.", headers={"retry-after-ms": "10"})

    outcome, server = heal_one(mode, [flaky, GOOD], client={"max_retries": 1})

    assert isinstance(outcome, Healed)
    assert EXPECTED == outcome.value
    assert 1 == outcome.calls
    assert 2 == len(server.requests)


@pytest.mark.parametrize("mode", MODES)
def test_prompt_mode_per_call_sends_no_response_format_and_the_schema_in_a_system_turn(
    mode: Mode,
) -> None:
    """`json_mode="prompt"` on one call sends the schema in a system message only."""
    call = {
        "model": "small-model",
        "messages": USER,
        "response_model": Invoice,
        "json_mode": "prompt",
    }
    with ScriptedServer([GOOD]) as server:
        wrapped, [outcome] = ask_all(mode, server, [call])

    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert 1 == len(server.requests)
    request = server.requests[0]
    assert "response_format" not in request.body
    system = request.messages[0]
    assert "system" == system["role"]
    schema = json.dumps(Invoice.model_json_schema(), separators=(",", ":"))
    assert schema in system["content"]
    assert USER == request.messages[1:]
    assert "json_schema" == wrapped.format.mode  # a per-call mode is not remembered


@pytest.mark.parametrize("mode", MODES)
def test_wrap_with_json_object_mode_starts_at_json_object(mode: Mode) -> None:
    """`wrap(client, json_mode="json_object")` never tries the strict tier."""
    outcome, server = heal_one(mode, [GOOD], wrap_kwargs={"json_mode": "json_object"})

    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert 1 == len(server.requests)
    request = server.requests[0]
    assert {"type": "json_object"} == request.body["response_format"]
    assert "system" == request.messages[0]["role"]
    assert USER == request.messages[1:]


@pytest.mark.parametrize("mode", MODES)
def test_list_target_travels_in_a_value_envelope_and_heals_to_a_list(mode: Mode) -> None:
    """A `list[Item]` target is asked for as `{"value": [...]}` and healed back to a list."""
    answer = '{"value": [{"name": "apple", "qty": 2}, {"name": "pear", "qty": 1}]}'
    call = {"model": "small-model", "messages": USER, "response_model": list[Item]}
    with ScriptedServer([answer]) as server:
        _, [outcome] = ask_all(mode, server, [call])

    assert isinstance(outcome, Healed)
    assert [Item(name="apple", qty=2), Item(name="pear", qty=1)] == outcome.value
    assert 1 == outcome.calls
    assert 1 == len(server.requests)
    response_format = server.requests[0].body["response_format"]
    assert "json_schema" == response_format["type"]
    schema = response_format["json_schema"]["schema"]
    assert "object" == schema["type"]
    assert ["value"] == schema["required"]
    assert False is schema["additionalProperties"]
    assert "array" == schema["properties"]["value"]["type"]


# ---------------------------------------------------------------------------------------------
# Escalation and usage
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_last_attempt_escalates_to_the_stronger_model(mode: Mode) -> None:
    """`escalate_model` replaces the model of the final attempt only."""
    policy = HealPolicy(escalate_model="big-model")

    outcome, server = heal_one(mode, [INVALID, INVALID, GOOD], policy=policy)

    assert isinstance(outcome, Healed)
    assert 3 == outcome.calls
    assert 3 == len(server.requests)
    assert ["small-model", "small-model", "big-model"] == [r.body["model"] for r in server.requests]
    assert "big-model" == outcome.attempts[-1].model
    assert "small-model" == outcome.attempts[0].model


@pytest.mark.parametrize("mode", MODES)
def test_usage_sums_the_server_reported_usage_over_calls(mode: Mode) -> None:
    """`outcome.usage` is the sum of the usage blocks the server reported."""
    script = [
        ScriptedReply(INVALID, usage={"prompt_tokens": 11, "completion_tokens": 3}),
        ScriptedReply(GOOD, usage={"prompt_tokens": 40, "completion_tokens": 7}),
    ]

    outcome, server = heal_one(mode, script)

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert 2 == len(server.requests)
    assert Usage(51, 10, requests=2, model="small-model") == outcome.usage
    per_call = [
        Usage(11, 3, requests=1, model="small-model"),
        Usage(40, 7, requests=1, model="small-model"),
    ]
    assert per_call == [a.usage for a in outcome.attempts]


# ---------------------------------------------------------------------------------------------
# Never an exception
# ---------------------------------------------------------------------------------------------

ALL_SCRIPTS: dict[str, Callable[[], list[Any]]] = {
    "good": lambda: [GOOD],
    "invalid": lambda: [INVALID] * 3,
    "refusal": lambda: [ScriptedReply(content=None, refusal="No.")],
    "filtered": lambda: [ScriptedReply(content="", finish_reason="content_filter")],
    "truncated": lambda: [ScriptedReply("{", finish_reason="length")] * 3,
    "empty": lambda: [""] * 3,
    "exhausted": list,
    **{name: (lambda r=reply: [r]) for name, reply in API_FAILURES.items()},
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", ALL_SCRIPTS.values(), ids=ALL_SCRIPTS.keys())
def test_no_exception_escapes(mode: Mode, script: Callable[[], list[Any]]) -> None:
    """Whatever the endpoint does, `create(response_model=...)` returns an outcome."""
    outcome, server = heal_one(mode, script())

    assert isinstance(outcome, Healed | Degraded)
    assert len(server.requests) == outcome.calls


def test_a_replaced_format_and_policy_apply_to_the_next_call() -> None:
    """The sync driver is built once per target: setting `format` (or `policy`) on the wrapped
    client still changes the very next request, and a later client method patch is honoured."""
    from healjson.adapters._format import FormatState

    call = {"model": "small-model", "messages": USER, "response_model": Invoice}
    with (
        ScriptedServer([GOOD, GOOD, GOOD, "not json at all", "still not"]) as server,
        sync_sdk(server) as sdk,
    ):
        wrapped = healjson.wrap(sdk)
        first = wrapped.chat.completions.create(**call)
        wrapped.format = FormatState("prompt")
        second = wrapped.chat.completions.create(**call)
        seen: list[str] = []
        inner = wrapped.wrapped.chat.completions
        real = inner.create

        def patched(**kwargs: Any) -> Any:
            seen.append(kwargs["model"])
            return real(**kwargs)

        inner.create = patched
        third = wrapped.chat.completions.create(**call)
        wrapped.policy = healjson.HealPolicy(max_attempts=2)
        fourth = wrapped.chat.completions.create(**call)

    assert [Healed, Healed, Healed, Degraded] == [type(o) for o in (first, second, third, fourth)]
    kinds = [r.body.get("response_format", {}).get("type") for r in server.requests]
    assert ["json_schema", None, None, None, None] == kinds
    assert "system" == server.requests[1].messages[0]["role"]
    assert ["small-model"] * 3 == seen  # the third call and the fourth's two attempts
    assert 2 == fourth.calls
