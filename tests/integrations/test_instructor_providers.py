"""`healjson.wrap(instructor_client)` over Anthropic's and Gemini's wire formats, end to end.

Each test drives the real `anthropic` SDK (`instructor.from_anthropic`) or the real
`google-genai` SDK (`instructor.from_genai`) over HTTP to the scripted server on 127.0.0.1, which
serves the same kind of script as for OpenAI in Anthropic's Messages or Gemini's
`generateContent` format. instructor 1.17's generic modes are used: `Mode.JSON` (the answer is
text: Anthropic's schema system prompt, Gemini's `responseSchema`) and `Mode.TOOLS` (a forced
tool / function call). The provider-specific aliases (`ANTHROPIC_JSON`, `GENAI_TOOLS`, ...) are
the same handlers but emit a DeprecationWarning. Neither SDK retries here (Anthropic:
`max_retries=0`; google-genai does not retry without `retry_options`), so the server's request
count is exactly healjson's model calls.

A tool call can only carry a JSON object on these wires (`tool_use.input`,
`functionCall.args`), so the malformed-text scenarios run in `Mode.JSON`; `Mode.TOOLS` covers the
valid answer, truncation, contract repair and the provider stops.
"""

from __future__ import annotations

import pytest

from lanes import INSTRUCTOR_ONLY

pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import anthropic
import instructor
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, Reason, Usage, Violation, contract
from healjson.testing import RecordedRequest, ScriptedReply, ScriptedServer
from sdk_calls import TLS, gemini_client

USER = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
GOOD = '{"name": "Ann", "age": 31}'
JSON, TOOLS = instructor.Mode.JSON, instructor.Mode.TOOLS
MODEL = {"anthropic": "claude-test", "gemini": "gemini-test"}
PROVIDERS = ("anthropic", "gemini")


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


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    """Which SDK instructor drives: `anthropic` or `gemini` (google-genai)."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[JSON, TOOLS], ids=["json", "tools"])
def mode(request: pytest.FixtureRequest) -> instructor.Mode:
    """instructor's request mode: the answer as text, or as a forced tool call."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    """Whether the SDK client (and so the instructor client) is sync or async."""
    return request.param  # type: ignore[no-any-return]


def reply(
    mode: instructor.Mode, text: str | None, finish_reason: str = "stop", **kw: Any
) -> ScriptedReply:
    """A scripted answer shaped as `mode` expects: text (JSON) or a tool call (TOOLS)."""
    name = kw.pop("name", "Person")
    if mode is TOOLS and text is not None:
        call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": text}}
        return ScriptedReply(tool_calls=[call], finish_reason=finish_reason, **kw)
    return ScriptedReply(text, finish_reason=finish_reason, **kw)


def _gemini_options(
    server: ScriptedServer, timeout: float, session: aiohttp.ClientSession | None = None
) -> genai_types.HttpOptions:
    return genai_types.HttpOptions(
        base_url=server.gemini_base_url,
        timeout=int(timeout * 1000),  # milliseconds
        client_args={"verify": TLS},
        async_client_args={"ssl": TLS},
        aiohttp_client=session,
    )


@contextlib.contextmanager
def sync_client(
    server: ScriptedServer, provider: str, mode: instructor.Mode, timeout: float = 10.0
) -> Iterator[Any]:
    """`healjson.wrap(instructor.from_<provider>(sync SDK client))` on `server`."""
    if provider == "anthropic":
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url,
            api_key="sk-test",
            max_retries=0,
            timeout=timeout,
            http_client=anthropic.DefaultHttpxClient(verify=TLS),
        ) as sdk:
            yield healjson.wrap(instructor.from_anthropic(sdk, mode=mode))
        return
    with gemini_client(api_key="test-key", http_options=_gemini_options(server, timeout)) as client:
        yield healjson.wrap(instructor.from_genai(client, mode=mode))


@contextlib.asynccontextmanager
async def async_client(
    server: ScriptedServer, provider: str, mode: instructor.Mode, timeout: float = 10.0
) -> AsyncIterator[Any]:
    """`healjson.wrap(instructor.from_<provider>(async SDK client))` on `server`."""
    if provider == "anthropic":
        async with anthropic.AsyncAnthropic(
            base_url=server.anthropic_base_url,
            api_key="sk-test",
            max_retries=0,
            timeout=timeout,
            http_client=anthropic.DefaultAsyncHttpxClient(verify=TLS),
        ) as sdk:
            yield healjson.wrap(instructor.from_anthropic(sdk, mode=mode))
        return
    # google-genai's own aiohttp session subclasses aiohttp.ClientSession, which aiohttp answers
    # with a DeprecationWarning (an error in this suite): give it a plain session instead.
    async with aiohttp.ClientSession() as session:
        client = genai.Client(
            api_key="test-key", http_options=_gemini_options(server, timeout, session)
        )
        try:
            yield healjson.wrap(instructor.from_genai(client, mode=mode, use_async=True))
        finally:
            await client.aio.aclose()
            client.close()


def ask(
    server: ScriptedServer,
    provider: str,
    mode: instructor.Mode = JSON,
    runner: str = "sync",
    *,
    timeout: float = 10.0,
    **kwargs: Any,
) -> Any:
    """One `chat.completions.create` call through a fresh wrapped client."""
    kwargs.setdefault("model", MODEL[provider])
    kwargs.setdefault("messages", USER)
    kwargs.setdefault("max_tokens", 256)  # the Messages API requires it
    if runner == "async":

        async def go() -> Any:
            async with async_client(server, provider, mode, timeout) as client:
                return await client.chat.completions.create(**kwargs)

        return asyncio.run(go())
    with sync_client(server, provider, mode, timeout) as client:
        return client.chat.completions.create(**kwargs)


def estimated_prompt_tokens(request: RecordedRequest) -> int:
    """The server's prompt-token estimate for a request: characters of all its text / 4."""
    text = request.system + "".join(str(m["content"]) for m in request.messages)
    return len(text) // 4


# ---------------------------------------------------------------------------------------------
# L1: answers instructor rejects, healed locally in one request
# ---------------------------------------------------------------------------------------------

MALFORMED = {
    "fenced": f"```json\n{GOOD}\n```",
    "prose": f"Sure! Here is the person: {GOOD} Let me know if you need more.",
    "trailing_comma": '{"name": "Ann", "age": 31,}',
    "single_quoted": "{'name': 'Ann', 'age': 31}",
    "string_for_int": '{"name": "Ann", "age": "31"}',
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_text_answer_heals_in_one_request(
    scripted_server: ScriptedServer, provider: str, text: str
) -> None:
    """A text answer instructor's strict parsing rejects is healed by L1 in the same request,
    and the usage healjson reports is what the server sent (characters / 4)."""
    scripted_server.push(text)

    outcome = ask(scripted_server, provider, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert text == outcome.raw_text
    assert 1 == outcome.calls
    [request] = scripted_server.requests
    assert (
        Usage(estimated_prompt_tokens(request), len(text) // 4, requests=1, model=MODEL[provider])
        == outcome.usage
    )
    assert MODEL[provider] == outcome.attempts[0].model


def test_second_json_candidate_that_validates_is_chosen(
    scripted_server: ScriptedServer, provider: str
) -> None:
    """Of two JSON values in one answer, the one that validates is taken, in one request."""
    scripted_server.push(f'For example {{"id": 7}}. The answer: {GOOD}')

    outcome = ask(scripted_server, provider, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 1 == len(scripted_server.requests)


WRAPPED = {
    "int": (int, '{"content": 31}', 31),
    "list_of_models": (list[Person], f'{{"tasks": [{GOOD}]}}', [Person(name="Ann", age=31)]),
}


@pytest.mark.parametrize(("model", "text", "expected"), WRAPPED.values(), ids=WRAPPED.keys())
def test_instructor_wrapper_object_is_unwrapped(
    scripted_server: ScriptedServer, provider: str, model: Any, text: str, expected: Any
) -> None:
    """instructor's wrapper object for a non-model response_model is unwrapped in one request."""
    scripted_server.push(text)

    outcome = ask(scripted_server, provider, response_model=model)

    assert isinstance(outcome, Healed)
    assert expected == outcome.value
    assert 1 == len(scripted_server.requests)


def test_tool_call_answer_validates_in_one_request(
    scripted_server: ScriptedServer, provider: str, runner: str
) -> None:
    """In TOOLS mode the forced tool call's arguments are the answer."""
    scripted_server.push(reply(TOOLS, GOOD, usage={"prompt_tokens": 40, "completion_tokens": 9}))

    outcome = ask(scripted_server, provider, TOOLS, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert Usage(40, 9, requests=1, model=MODEL[provider]) == outcome.usage
    assert 1 == len(scripted_server.requests)


def test_instructor_shapes_the_single_request(
    scripted_server: ScriptedServer, provider: str, mode: instructor.Mode
) -> None:
    """instructor builds the provider's request (schema prompt, response schema or a forced
    tool), once, with the call's parameters translated."""
    scripted_server.push(reply(mode, GOOD))
    # anthropic 2.x's Messages.create takes no `temperature`
    extra = {"stop_sequences": ["END"]} if provider == "anthropic" else {"temperature": 0}

    outcome = ask(scripted_server, provider, mode, response_model=Person, **extra)

    assert isinstance(outcome, Healed)
    [request] = scripted_server.requests
    body = request.body or {}
    assert USER == request.messages
    if provider == "anthropic":
        assert "/v1/messages" == request.path
        assert (MODEL[provider], 256) == (body["model"], body["max_tokens"])
        assert ["END"] == body["stop_sequences"]
        if mode is TOOLS:
            assert "Person" == body["tool_choice"]["name"]
            assert ["Person"] == [tool["name"] for tool in body["tools"]]
        else:
            assert "json_schema" in request.system
            assert "tools" not in body
    else:
        assert request.path.endswith(f"/models/{MODEL[provider]}:generateContent")
        config = body["generationConfig"]
        assert (256, 0) == (config["maxOutputTokens"], config["temperature"])
        if mode is TOOLS:
            assert "ANY" == body["toolConfig"]["functionCallingConfig"]["mode"]
            [declaration] = body["tools"][0]["functionDeclarations"]
            assert "Person" == declaration["name"]
        else:
            assert "application/json" == config["responseMimeType"]
            assert ["name", "age"] == config["responseSchema"]["required"]


# ---------------------------------------------------------------------------------------------
# L3: repairs that need another request
# ---------------------------------------------------------------------------------------------


def test_truncated_answer_then_good_takes_two_requests(
    scripted_server: ScriptedServer, provider: str, mode: instructor.Mode, runner: str
) -> None:
    """A max_tokens / MAX_TOKENS stop is re-asked once; usage adds up both replies.

    A cut tool call still arrives as a complete JSON object on these wires (`tool_use.input`,
    `functionCall.args`); healjson reads a complete value that fails L2 in a cut reply as a
    truncation, so the repair asks for a compact rewrite either way."""
    cut = '{"name": "Ann"}' if mode is TOOLS else '{"name": "Ann", "a'
    scripted_server.push(
        reply(mode, cut, "length", usage={"prompt_tokens": 30, "completion_tokens": 256})
    )
    scripted_server.push(reply(mode, GOOD, usage={"prompt_tokens": 80, "completion_tokens": 9}))

    outcome = ask(scripted_server, provider, mode, runner, response_model=Person)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 2 == outcome.calls
    assert "length" == outcome.attempts[0].finish_reason
    assert Usage(110, 265, requests=2, model=MODEL[provider]) == outcome.usage
    first, repair = scripted_server.requests
    assert USER == first.messages
    assert USER[0] == repair.messages[0]
    assert {"role": "assistant", "content": cut} == repair.messages[1]
    assert "by the output token limit" in repair.last_user_text
    assert f"cut off after {len(cut)} characters" in repair.last_user_text


def test_contract_violation_then_good_takes_two_requests(
    scripted_server: ScriptedServer, provider: str, mode: instructor.Mode, runner: str
) -> None:
    """A cross-field contract violation is repaired with the original request, the answer and
    the diagnostics (the repair request's last user turn)."""
    first = '{"start_day": 9, "end_day": 3}'
    scripted_server.push(reply(mode, first, name="Trip"))
    scripted_server.push(reply(mode, '{"start_day": 3, "end_day": 9}', name="Trip"))

    outcome = ask(
        scripted_server, provider, mode, runner, response_model=Trip, contracts=[ends_after_start]
    )

    assert isinstance(outcome, Healed)
    assert Trip(start_day=3, end_day=9) == outcome.value
    assert 2 == len(scripted_server.requests)
    repair = scripted_server.requests[1]
    assert [USER[0], {"role": "assistant", "content": first}] == repair.messages[:2]
    assert "end_day must not be before start_day" in repair.last_user_text
    assert "`start_day` = 9" in repair.last_user_text


def test_always_invalid_degrades_after_max_attempts(
    scripted_server: ScriptedServer, provider: str, mode: instructor.Mode
) -> None:
    """An answer that never validates spends exactly max_attempts requests, then degrades."""
    scripted_server.extend([reply(mode, '{"name": "Ann", "age": "old"}')] * 3)

    outcome = ask(scripted_server, provider, mode, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert 3 == outcome.calls
    assert 3 == len(scripted_server.requests)
    assert "age" in scripted_server.requests[-1].last_user_text


def test_call_site_max_retries_is_healjsons_attempt_budget(
    scripted_server: ScriptedServer, provider: str
) -> None:
    """instructor's `max_retries=1` is two calls in all, made by healjson's repair loop."""
    scripted_server.extend(["no JSON here"] * 3)

    outcome = ask(scripted_server, provider, response_model=Person, max_retries=1)

    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert 2 == len(scripted_server.requests)


# ---------------------------------------------------------------------------------------------
# L4: provider stops and failed calls degrade with the right reason
# ---------------------------------------------------------------------------------------------


def test_anthropic_refusal_degrades_with_refusal(
    scripted_server: ScriptedServer, mode: instructor.Mode, runner: str
) -> None:
    """`stop_reason: "refusal"` degrades as `refusal`, carrying `stop_details.explanation`."""
    scripted_server.push(ScriptedReply(refusal="I can't help with that."))

    outcome = ask(scripted_server, "anthropic", mode, runner, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.REFUSAL == outcome.reason
    assert "I can't help with that." == outcome.errors[0].value
    assert 1 == len(scripted_server.requests)


GEMINI_SAFETY = {
    "safety_stop_mid_answer": ScriptedReply('{"name": "An', finish_reason="content_filter"),
    "refusal_as_safety_stop": ScriptedReply(refusal="blocked"),
    "prohibited_content": ScriptedReply("", finish_reason="PROHIBITED_CONTENT"),
}


@pytest.mark.parametrize("item", GEMINI_SAFETY.values(), ids=GEMINI_SAFETY.keys())
def test_gemini_safety_stop_degrades_with_content_filter(
    scripted_server: ScriptedServer, mode: instructor.Mode, item: ScriptedReply
) -> None:
    """A SAFETY (or other policy) finishReason degrades as `content_filter`, no repair request."""
    scripted_server.push(item)

    outcome = ask(scripted_server, "gemini", mode, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.CONTENT_FILTER == outcome.reason
    assert 1 == len(scripted_server.requests)


FAILED_CALLS = {
    "http_500": (ScriptedReply.error(500, "upstream exploded"), ("api_error", "INTERNAL")),
    "http_429": (ScriptedReply.error(429, "slow down"), ("rate_limit_error", "RESOURCE_EXHAUSTED")),
}


@pytest.mark.parametrize(("item", "shown"), FAILED_CALLS.values(), ids=FAILED_CALLS.keys())
def test_http_error_degrades_with_api_error(
    scripted_server: ScriptedServer,
    provider: str,
    runner: str,
    item: ScriptedReply,
    shown: tuple[str, str],
) -> None:
    """HTTP errors, in the provider's error shape, are `api_error` after one request."""
    scripted_server.push(item)

    outcome = ask(scripted_server, provider, runner=runner, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == len(scripted_server.requests)
    error = outcome.attempts[0].error or ""
    assert shown[PROVIDERS.index(provider)] in error
    assert "InstructorRetryException" not in error


def test_slow_reply_degrades_with_timeout(scripted_server: ScriptedServer, provider: str) -> None:
    """A reply slower than the SDK's timeout is `timeout`."""
    scripted_server.push(ScriptedReply.slow(GOOD, 5.0))

    outcome = ask(scripted_server, provider, timeout=0.2, response_model=Person)

    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert 1 == len(scripted_server.requests)


def test_sdk_raising_before_any_request_propagates(scripted_server: ScriptedServer) -> None:
    """The anthropic SDK rejects a call without `max_tokens` before sending anything: a bug in
    the call, not the provider's failure, so its TypeError propagates unchanged."""
    kwargs = {"model": MODEL["anthropic"], "messages": USER, "response_model": Person}
    with (
        sync_client(scripted_server, "anthropic", JSON) as client,
        pytest.raises(TypeError, match="max_tokens"),
    ):
        client.chat.completions.create(**kwargs)

    assert 0 == len(scripted_server.requests)


NEVER_RAISES = {
    "http_500": ScriptedReply.error(500),
    "http_400": ScriptedReply.error(400, "bad request"),
    "non_json": ScriptedReply.non_json(),
    "refusal": ScriptedReply(refusal="no"),
    "no_content": ScriptedReply(None),
    "empty_cut": ScriptedReply("", finish_reason="length"),
    "filtered": ScriptedReply("[1, 2", finish_reason="content_filter"),
    "binary_body": ScriptedReply(body=b"\xff\xfe not json at all"),
    "empty_object_body": ScriptedReply(body="{}"),
}


@pytest.mark.parametrize("item", NEVER_RAISES.values(), ids=NEVER_RAISES.keys())
def test_no_exception_escapes(
    scripted_server: ScriptedServer, provider: str, mode: instructor.Mode, item: ScriptedReply
) -> None:
    """Whatever the endpoint answers, `create(response_model=...)` returns an Outcome."""
    scripted_server.push(item)

    outcome = ask(
        scripted_server, provider, mode, response_model=Person, policy=HealPolicy(max_attempts=1)
    )

    assert isinstance(outcome, Degraded)
    assert 1 == len(scripted_server.requests)
