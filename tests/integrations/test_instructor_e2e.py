"""`healjson.wrap(instructor_client)` end to end: the real openai SDK and instructor 1.17 over HTTP.

Every test drives `instructor.from_openai(openai.OpenAI | openai.AsyncOpenAI)` against the
scripted server on 127.0.0.1, in instructor's `Mode.JSON` (the answer is the message content)
and `Mode.TOOLS` (the answer is the forced tool call's arguments), sync and async. The openai
clients use `max_retries=0` so the server's request count is exactly healjson's model calls.
"""

from __future__ import annotations

import pytest

from lanes import INSTRUCTOR_ONLY

pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

import asyncio
from typing import Any

import instructor
import openai
from instructor.core import Hooks
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, Reason, Violation, contract
from healjson.adapters._instructor import InstructorClient
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

USER = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
GOOD = '{"name": "Ann", "age": 31}'
JSON, TOOLS = instructor.Mode.JSON, instructor.Mode.TOOLS


class Person(BaseModel):
    name: str
    age: int


class Trip(BaseModel):
    start_day: int
    end_day: int


@contract(fields=("start_day", "end_day"))
def ends_after_start(trip: Trip) -> Violation | None:
    """A trip cannot end before it starts."""
    if trip.end_day < trip.start_day:
        return Violation("end_day must not be before start_day")
    return None


@pytest.fixture(params=[JSON, TOOLS], ids=["json", "tools"])
def mode(request: pytest.FixtureRequest) -> instructor.Mode:
    """instructor's request mode: JSON content or a forced tool call."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    """Whether the wrapped instructor client is built on `OpenAI` or `AsyncOpenAI`."""
    return request.param  # type: ignore[no-any-return]


def reply(
    mode: instructor.Mode, text: str | None, finish_reason: str | None = None, **kw: Any
) -> ScriptedReply:
    """A scripted answer shaped as `mode` expects: content (JSON) or tool-call arguments (TOOLS)."""
    if mode is TOOLS and text is not None:
        name = kw.pop("name", "Person")
        call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": text}}
        return ScriptedReply(tool_calls=[call], finish_reason=finish_reason or "tool_calls", **kw)
    kw.pop("name", None)
    return ScriptedReply(text, finish_reason=finish_reason or "stop", **kw)


def sync_sdk(server: ScriptedServer, timeout: float = 10.0) -> openai.OpenAI:
    """A real sync openai client on `server`, without SDK retries."""
    http = openai.DefaultHttpxClient(verify=TLS)
    return openai.OpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=timeout, http_client=http
    )


def async_sdk(server: ScriptedServer, timeout: float = 10.0) -> openai.AsyncOpenAI:
    """A real async openai client on `server`, without SDK retries."""
    http = openai.DefaultAsyncHttpxClient(verify=TLS)
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, timeout=timeout, http_client=http
    )


def ask(
    server: ScriptedServer,
    mode: instructor.Mode,
    runner: str,
    *,
    timeout: float = 10.0,
    heal: bool = True,
    **kwargs: Any,
) -> Any:
    """Make one `chat.completions.create` call on a fresh (wrapped unless `heal=False`) client."""
    kwargs.setdefault("model", "gpt-test")
    kwargs.setdefault("messages", USER)
    if runner == "async":

        async def go() -> Any:
            async with async_sdk(server, timeout) as sdk:
                client = instructor.from_openai(sdk, mode=mode)
                client = healjson.wrap(client) if heal else client
                return await client.chat.completions.create(**kwargs)

        return asyncio.run(go())
    with sync_sdk(server, timeout) as sdk:
        client = instructor.from_openai(sdk, mode=mode)
        client = healjson.wrap(client) if heal else client
        return client.chat.completions.create(**kwargs)


# ---------------------------------------------------------------------------------------------
# L1: answers instructor rejects, healed locally in one request
# ---------------------------------------------------------------------------------------------

MALFORMED = {
    "fenced": f"```json\n{GOOD}\n```",
    "prose": f"Sure! Here is the person: {GOOD} Let me know if you need more.",
    "trailing_comma": '{"name": "Ann", "age": 31,}',
    "single_quoted": "{'name': 'Ann', 'age': 31}",
    "python_literal": "{'name': 'Ann', 'age': 31, 'nickname': None, 'active': True}",
    "string_for_int": '{"name": "Ann", "age": "31"}',
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_answer_heals_in_one_request(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str, text: str
) -> None:
    """An answer instructor's strict parsing rejects is healed by L1 without a second request."""
    scripted_server.push(reply(mode, text))

    outcome = ask(scripted_server, mode, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert text == outcome.raw_text
    assert 1 == outcome.calls
    assert 1 == len(scripted_server.requests)


def test_second_json_candidate_that_validates_is_chosen(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """Of two JSON values in one answer, the one that validates is taken, in one request."""
    scripted_server.push(reply(mode, f'For example {{"id": 7}}. The answer: {GOOD}'))

    outcome = ask(scripted_server, mode, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 1 == len(scripted_server.requests)


WRAPPED = {
    "int": (int, '{"content": 31}', 31),
    "list_of_models": (
        list[Person],
        '{"tasks": [{"name": "Ann", "age": 31}]}',
        [Person(name="Ann", age=31)],
    ),
}


@pytest.mark.parametrize(("model", "text", "expected"), WRAPPED.values(), ids=WRAPPED.keys())
def test_instructor_wrapper_object_is_unwrapped(
    scripted_server: ScriptedServer,
    mode: instructor.Mode,
    runner: str,
    model: Any,
    text: str,
    expected: Any,
) -> None:
    """instructor's wrapper object for a non-model response_model is unwrapped in one request."""
    scripted_server.push(reply(mode, text))

    outcome = ask(scripted_server, mode, runner, response_model=model)

    assert isinstance(outcome, Healed)
    assert expected == outcome.value
    assert 1 == len(scripted_server.requests)


def test_instructor_shapes_the_single_request(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """instructor builds the request (tools or JSON mode plus its schema prompt), exactly once."""
    scripted_server.push(reply(mode, GOOD))

    outcome = ask(scripted_server, mode, runner, response_model=Person, temperature=0)

    assert isinstance(outcome, Healed)
    [request] = scripted_server.requests
    body = request.body or {}
    assert ("gpt-test", 0) == (body["model"], body["temperature"])
    assert USER[0] == request.messages[-1]
    if mode is TOOLS:
        assert {"type": "function", "function": {"name": "Person"}} == body["tool_choice"]
        assert "Person" == body["tools"][0]["function"]["name"]
    else:
        assert {"type": "json_object"} == body["response_format"]
        assert "system" == request.messages[0]["role"]


# ---------------------------------------------------------------------------------------------
# L3: repairs that need another request
# ---------------------------------------------------------------------------------------------


def test_truncated_answer_then_good_takes_two_requests(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """A finish_reason=length answer (instructor's IncompleteOutputException) is re-asked once."""
    scripted_server.push(reply(mode, '{"name": "Ann", "a', finish_reason="length"))
    scripted_server.push(reply(mode, GOOD))

    outcome = ask(scripted_server, mode, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 2 == outcome.calls
    assert 2 == len(scripted_server.requests)
    assert "cut off" in scripted_server.requests[1].last_user_text


def test_contract_violation_then_good_takes_two_requests(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """A cross-field contract violation is repaired with the original request and the answer."""
    first = '{"start_day": 9, "end_day": 3}'
    scripted_server.push(reply(mode, first, name="Trip"))
    scripted_server.push(reply(mode, '{"start_day": 3, "end_day": 9}', name="Trip"))

    outcome = ask(scripted_server, mode, runner, response_model=Trip, contracts=[ends_after_start])

    assert isinstance(outcome, Healed)
    assert Trip(start_day=3, end_day=9) == outcome.value
    assert 2 == len(scripted_server.requests)
    repair = scripted_server.requests[1]
    assert USER[0] == repair.messages[-3]
    assert {"role": "assistant", "content": first} == repair.messages[-2]
    assert "start_day" in repair.last_user_text
    assert "end_day" in repair.last_user_text


def test_always_invalid_degrades_after_max_attempts(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """An answer that never validates spends exactly max_attempts requests, then degrades."""
    scripted_server.extend([reply(mode, '{"name": "Ann", "age": "old"}')] * 3)

    outcome = ask(scripted_server, mode, runner, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert 3 == outcome.calls
    assert 3 == len(scripted_server.requests)


def test_call_site_max_retries_is_healjsons_attempt_budget(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """An instructor call site's `max_retries=1` means two calls in all, made by healjson's
    repair loop (instructor itself always gets `max_retries=0`)."""
    scripted_server.extend([reply(JSON, "no JSON here")] * 3)

    outcome = ask(scripted_server, JSON, runner, response_model=Person, max_retries=1)

    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert 2 == outcome.max_attempts
    assert 2 == len(scripted_server.requests)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_retries": 2, "policy": HealPolicy(max_attempts=2)}, "not both"),
        ({"max_retries": -1}, "whole number"),
        ({"max_retries": 2.5}, "whole number"),
        ({"validation_context": {"a": 1}, "context": {"b": 2}}, "not both"),
        ({"validation_context": ["not", "a", "mapping"]}, "mapping"),
    ],
)
def test_instructor_keywords_healjson_cannot_honour_raise_at_call_time(
    scripted_server: ScriptedServer, kwargs: dict[str, Any], message: str
) -> None:
    """instructor keywords healjson cannot honour (retries beside a policy, a bad retry count,
    two contexts, a context that is no mapping) raise when called."""
    with pytest.raises(TypeError, match=message):
        ask(scripted_server, JSON, "sync", response_model=Person, **kwargs)
    assert 0 == len(scripted_server.requests)


def test_validation_context_reaches_the_contracts(scripted_server: ScriptedServer) -> None:
    """instructor's `validation_context=` is the contracts' context (`ctx.extra`)."""
    seen: list[Any] = []

    @contract(fields=("name",))
    def known_name(person: Person, ctx: healjson.ContractContext) -> Violation | None:
        seen.append(dict(ctx.extra))
        return None

    scripted_server.push(reply(JSON, GOOD))
    outcome = ask(
        scripted_server,
        JSON,
        "sync",
        response_model=Person,
        contracts=[known_name],
        validation_context={"names": ["Ann"]},
    )
    assert isinstance(outcome, Healed)
    assert {"names": ["Ann"]} in seen


@pytest.mark.parametrize("via", ["client", "chat.completions"])
def test_create_with_completion_is_healed_and_returns_the_raw_completion(
    scripted_server: ScriptedServer, runner: str, via: str
) -> None:
    """A fenced answer instructor would reject heals in one call; the completion comes too.
    `chat.completions.create_with_completion` is healed as the client's own."""
    scripted_server.push(reply(JSON, f"```json\n{GOOD}\n```"))

    def method(client: Any) -> Any:
        owner = client if via == "client" else client.chat.completions
        return owner.create_with_completion

    async def go_async() -> Any:
        async with async_sdk(scripted_server) as sdk:
            client = healjson.wrap(instructor.from_openai(sdk, mode=JSON))
            return await method(client)(model="gpt-test", messages=USER, response_model=Person)

    if runner == "async":
        outcome, completion = asyncio.run(go_async())
    else:
        with sync_sdk(scripted_server) as sdk:
            client = healjson.wrap(instructor.from_openai(sdk, mode=JSON))
            outcome, completion = method(client)(
                model="gpt-test", messages=USER, response_model=Person
            )
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert f"```json\n{GOOD}\n```" == completion.choices[0].message.content
    assert 1 == len(scripted_server.requests)


def test_create_generator_is_refused_with_the_healed_alternative(
    scripted_server: ScriptedServer,
) -> None:
    """instructor's `create_generator` on a wrapped client is refused before any request, naming
    the healed alternative."""
    with sync_sdk(scripted_server) as sdk:
        client = healjson.wrap(instructor.from_openai(sdk, mode=JSON))
        with pytest.raises(AttributeError, match=r"chat\.completions\.create\(response_model"):
            _ = client.create_generator
    assert 0 == len(scripted_server.requests)


# ---------------------------------------------------------------------------------------------
# L4: provider stops and failed calls degrade with the right reason
# ---------------------------------------------------------------------------------------------


def test_refusal_degrades_with_refusal(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """A refusal degrades as `refusal` (in TOOLS mode instructor raises a bare AssertionError)."""
    scripted_server.push(ScriptedReply(refusal="I can't help with that."))

    outcome = ask(scripted_server, mode, runner, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.REFUSAL == outcome.reason
    assert 1 == len(scripted_server.requests)


def test_content_filter_degrades_with_content_filter(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """A content_filter stop degrades as `content_filter` without a repair request."""
    scripted_server.push(ScriptedReply('{"name": "An', finish_reason="content_filter"))

    outcome = ask(scripted_server, mode, runner, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.CONTENT_FILTER == outcome.reason
    assert 1 == len(scripted_server.requests)


FAILED_CALLS = {
    "http_500": ScriptedReply.error(500, "upstream exploded"),
    "http_429": ScriptedReply.error(429, "slow down"),
    "non_json_body": ScriptedReply.non_json("<html>bad gateway</html>"),
}


@pytest.mark.parametrize("item", FAILED_CALLS.values(), ids=FAILED_CALLS.keys())
def test_failed_call_degrades_with_api_error(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str, item: ScriptedReply
) -> None:
    """HTTP errors and a non-JSON body are `api_error` after one request (no retries anywhere)."""
    scripted_server.push(item)

    outcome = ask(scripted_server, mode, runner, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == len(scripted_server.requests)
    assert "InstructorRetryException" not in (outcome.attempts[0].error or "")


def test_slow_reply_degrades_with_timeout(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """A reply slower than the client timeout is `timeout`, not instructor's wrapper exception."""
    scripted_server.push(ScriptedReply.slow(GOOD, 5.0))

    outcome = ask(scripted_server, mode, runner, timeout=0.2, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert 1 == len(scripted_server.requests)


def test_instructor_raising_before_any_request_propagates(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """An error instructor raises before sending (an invalid token_budget) is a bug in the
    call, not the provider's failure: it propagates unchanged, and nothing is sent."""
    with pytest.raises(ValueError, match="token_budget"):
        ask(scripted_server, TOOLS, runner, response_model=Person, token_budget=0)

    assert 0 == len(scripted_server.requests)


NEVER_RAISES = [
    ScriptedReply.error(500),
    ScriptedReply.error(400, "bad request"),
    ScriptedReply.non_json(),
    ScriptedReply(refusal="no"),
    ScriptedReply(None),
    ScriptedReply("", finish_reason="length"),
    ScriptedReply("[1, 2", finish_reason="content_filter"),
    ScriptedReply(body=b"\xff\xfe not json at all"),
    ScriptedReply(body='{"choices": []}'),
]


@pytest.mark.parametrize("item", NEVER_RAISES)
def test_no_exception_escapes(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str, item: ScriptedReply
) -> None:
    """Whatever the endpoint answers, `create(response_model=...)` returns an Outcome."""
    scripted_server.push(item)

    outcome = ask(
        scripted_server, mode, runner, response_model=Person, policy=HealPolicy(max_attempts=1)
    )

    assert isinstance(outcome, Healed | Degraded)
    assert 1 == len(scripted_server.requests)


# ---------------------------------------------------------------------------------------------
# passthrough and delegation
# ---------------------------------------------------------------------------------------------


def test_wrap_recognises_an_instructor_client(scripted_server: ScriptedServer) -> None:
    """`healjson.wrap` builds the instructor adapter and delegates other attributes to it."""
    with sync_sdk(scripted_server) as sdk:
        bare = instructor.from_openai(sdk, mode=JSON)
        client = healjson.wrap(bare)

        assert isinstance(client, InstructorClient)
        assert JSON == client.mode
        assert sdk is client.client
        assert bare.handle_kwargs == client.chat.completions.handle_kwargs
        assert bare.on == client.chat.on
        assert bare is InstructorClient(client).wrapped


def test_passthrough_without_response_model_matches_bare_instructor(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """`response_model=None` sends and returns exactly what the bare instructor client does."""
    scripted_server.extend([reply(mode, GOOD)] * 2)

    wrapped = ask(scripted_server, mode, runner, response_model=None)
    bare = ask(scripted_server, mode, runner, heal=False, response_model=None)

    assert isinstance(wrapped, openai.types.chat.ChatCompletion)
    assert type(bare) is type(wrapped)
    volatile = {"id", "created"}
    assert bare.model_dump(exclude=volatile) == wrapped.model_dump(exclude=volatile)
    first, second = scripted_server.requests
    assert second.body == first.body
    assert "tools" not in (first.body or {})


def test_passthrough_positional_call_is_instructor_unchanged(
    scripted_server: ScriptedServer,
) -> None:
    """A positional `create(Model, messages)` is not healjson's: instructor returns the model."""
    scripted_server.push(reply(TOOLS, GOOD))
    with sync_sdk(scripted_server) as sdk:
        client = healjson.wrap(instructor.from_openai(sdk, mode=TOOLS))

        person = client.chat.completions.create(Person, USER, model="gpt-test")

    assert {"name": "Ann", "age": 31} == person.model_dump()
    assert isinstance(person, Person)


def test_missing_response_model_raises_like_bare_instructor(
    scripted_server: ScriptedServer,
) -> None:
    """Without `response_model` the call is instructor's, so its own TypeError is unchanged."""
    with sync_sdk(scripted_server) as sdk:
        client = healjson.wrap(instructor.from_openai(sdk))

        with pytest.raises(TypeError, match="response_model"):
            client.chat.completions.create(model="gpt-test", messages=USER)

    assert 0 == len(scripted_server.requests)


def test_create_alias_heals_too(scripted_server: ScriptedServer) -> None:
    """instructor's `client.create` alias of `chat.completions.create` heals the same way."""
    scripted_server.push(reply(TOOLS, f"```json\n{GOOD}\n```"))
    with sync_sdk(scripted_server) as sdk:
        client = healjson.wrap(instructor.from_openai(sdk))

        outcome = client.create(model="gpt-test", messages=USER, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value


def test_call_site_hooks_still_fire(scripted_server: ScriptedServer, runner: str) -> None:
    """Per-call instructor `hooks=` see every completion healjson requests."""
    scripted_server.extend([reply(JSON, "not json"), reply(JSON, GOOD)])
    seen: list[Any] = []
    hooks = Hooks()
    hooks.on("completion:response", seen.append)

    outcome = ask(scripted_server, JSON, runner, response_model=Person, hooks=hooks)

    assert isinstance(outcome, Healed)
    assert 2 == len(seen)
    assert GOOD == seen[-1].choices[0].message.content


def test_healer_is_built_once_per_configuration(scripted_server: ScriptedServer) -> None:
    """Calls with the same response_model and options reuse one cached Healer."""
    scripted_server.extend([reply(TOOLS, GOOD)] * 2)
    with sync_sdk(scripted_server) as sdk:
        client = healjson.wrap(instructor.from_openai(sdk))
        strict = HealPolicy(max_attempts=1)

        first = client.create(model="gpt-test", messages=USER, response_model=Person)
        second = client.create(model="gpt-test", messages=USER, response_model=Person)

        assert client.healer(Person, (), None, None, ()) is client.healer(
            Person, [], None, None, []
        )
        assert client.healer(Person, (), strict, None, ()) is not client.healer(
            Person, (), None, None, ()
        )
    assert (True, True) == (first.ok, second.ok)
    assert "healjson.wrap(" in repr(client)


def test_misuse_raises_before_any_request(scripted_server: ScriptedServer) -> None:
    """Programming errors (positional args, no messages, no client) raise at once."""
    with sync_sdk(scripted_server) as sdk:
        create = healjson.wrap(instructor.from_openai(sdk)).chat.completions.create

        with pytest.raises(TypeError, match="keyword arguments only"):
            create(USER, model="gpt-test", response_model=Person)
        with pytest.raises(TypeError, match="messages"):
            create(model="gpt-test", response_model=Person)
    with pytest.raises(TypeError, match="instructor client"):
        InstructorClient(object())
    assert 0 == len(scripted_server.requests)
