"""The shared adapter base, with in-memory stub clients: one double-wrap check, one negotiation
for sync and async clients, and what each adapter sends to (or passes through to) its client."""

from __future__ import annotations

import pytest

from lanes import INSTRUCTOR_ONLY

pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

import asyncio
from typing import Any

from openai.types.chat import ChatCompletion
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson.adapters import _instructor
from healjson.adapters._instructor import InstructorClient
from healjson.adapters._openai import HealingClient

USER = [{"role": "user", "content": "Ann is 31."}]
GOOD = '{"name": "Ann", "age": 31}'


class Person(BaseModel):
    name: str
    age: int


def completion(content: str = GOOD) -> ChatCompletion:
    return ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    )


class FormatRejected(Exception):
    """What an endpoint without strict structured outputs answers (an HTTP 400)."""

    status_code = 400
    param = "response_format"


class _Completions:
    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []

    def create(self, *args: Any, **kwargs: Any) -> Any:
        self.requests.append(kwargs)
        answer = self.answers.pop(0) if self.answers else completion()
        if isinstance(answer, BaseException):
            raise answer
        return answer


class _AsyncCompletions(_Completions):
    async def create(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return super().create(*args, **kwargs)


class _Chat:
    def __init__(self, completions: _Completions) -> None:
        self.completions = completions


class StubClient:
    """An OpenAI-style client: `chat.completions.create` answers from a list, records requests."""

    def __init__(self, *answers: Any, is_async: bool = False) -> None:
        kind = _AsyncCompletions if is_async else _Completions
        self.chat = _Chat(kind(list(answers)))

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.chat.completions.requests


class StubInstructor:
    """An instructor-style client: `create_with_completion` returns `(obj, completion)`."""

    def __init__(self, *answers: Any) -> None:
        self.chat = _Chat(_Completions([]))
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []
        self.quiet_during_call: list[bool] = []

    def create_with_completion(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        self.quiet_during_call.append(_instructor._QUIET.get())
        answer = self.answers.pop(0) if self.answers else completion()
        if isinstance(answer, BaseException):
            raise answer
        return None, answer


def heal(client: Any, **kwargs: Any) -> Any:
    """`create(response_model=Person)` on `client`, awaited for an async client."""
    pending = client.chat.completions.create(messages=USER, response_model=Person, **kwargs)
    if client.is_async:
        return asyncio.run(pending)
    return pending


# --- one double-wrap check -------------------------------------------------------------------


def test_every_way_of_wrapping_twice_leaves_one_layer_over_the_bare_client() -> None:
    """`wrap` and both adapters' constructors see through a healjson layer, whichever it is."""
    sdk, ins = StubClient(), StubInstructor()
    assert sdk is HealingClient(HealingClient(sdk)).wrapped
    assert sdk is healjson.wrap(healjson.wrap(sdk)).wrapped
    assert ins is InstructorClient(InstructorClient(ins)).wrapped
    assert ins is HealingClient(InstructorClient(ins)).wrapped
    with pytest.raises(TypeError, match=r"instructor client .* got StubClient"):
        InstructorClient(HealingClient(sdk))  # judged by the client beneath the layer


def test_wrapping_again_takes_the_new_settings() -> None:
    """The new layer has the new `json_mode` and `policy`, not the old layer's."""
    policy = healjson.HealPolicy(max_attempts=1)
    again = healjson.wrap(healjson.wrap(StubClient()), json_mode="prompt", policy=policy)
    assert "prompt" == again.format.mode
    assert policy is again.policy


# --- one negotiation, sync and async -----------------------------------------------------------


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_sync_and_async_clients_step_down_and_remember_the_tier_alike(is_async: bool) -> None:
    """A 400 naming `response_format` retries one tier weaker in the same attempt; the next
    call starts at the tier that worked."""
    sdk = StubClient(FormatRejected("response_format json_schema unsupported"), is_async=is_async)
    wrapped = healjson.wrap(sdk)
    assert is_async is wrapped.is_async

    first, second = heal(wrapped), heal(wrapped)

    assert isinstance(first, Healed)
    assert isinstance(second, Healed)
    assert Person(name="Ann", age=31) == first.value
    assert 1 == first.calls
    formats = [request.get("response_format", {}).get("type") for request in sdk.requests]
    assert ["json_schema", "json_object", "json_object"] == formats
    assert "json_object" == wrapped.format.mode


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_forced_mode_steps_down_without_being_remembered(is_async: bool) -> None:
    """A forced JSON mode the endpoint rejects steps down for that call without changing the
    client's remembered tier."""
    sdk = StubClient(FormatRejected("no json_object here"), is_async=is_async)
    wrapped = healjson.wrap(sdk)

    outcome = heal(wrapped, json_mode="json_object")

    assert isinstance(outcome, Healed)
    assert [{"type": "json_object"}, None] == [r.get("response_format") for r in sdk.requests]
    assert "json_schema" == wrapped.format.mode


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_caller_response_format_is_sent_as_given(is_async: bool) -> None:
    """A caller's own `response_format` is sent as given, with the other parameters; one that
    names no schema (`json_object`) gets the answer's schema stated first, as the tier does."""
    sdk = StubClient(is_async=is_async)
    own = {"type": "json_object"}

    outcome = heal(healjson.wrap(sdk), response_format=own, temperature=0)

    assert isinstance(outcome, Healed)
    [request] = sdk.requests
    assert own == request["response_format"]
    assert 0 == request["temperature"]
    system, *said = request["messages"]
    assert USER == said
    assert "system" == system["role"]
    assert "JSON schema" in system["content"]


# --- what reaches the client -------------------------------------------------------------------


def test_openai_passthrough_keeps_positional_arguments_and_drops_healjson_keywords() -> None:
    """Without `response_model` the SDK's own `create` runs; healjson's keywords stay behind."""
    sdk = StubClient()
    answer = healjson.wrap(sdk).chat.completions.create(
        messages=USER, model="m", contracts=(), json_mode="prompt", context={"a": 1}
    )
    assert isinstance(answer, ChatCompletion)
    assert [{"messages": USER, "model": "m"}] == sdk.requests


def test_openai_rejects_an_unknown_per_call_json_mode() -> None:
    """An unknown per-call `json_mode` is refused, listing the modes there are."""
    with pytest.raises(ValueError, match="json_mode must be one of"):
        healjson.wrap(StubClient()).chat.completions.create(
            messages=USER, response_model=Person, json_mode="xml"
        )


def test_instructor_passthrough_sends_every_argument_response_model_none_included() -> None:
    """An instructor call without healing passes every argument through, `response_model=None`
    included."""
    ins = StubInstructor()
    InstructorClient(ins).create(messages=USER, response_model=None, max_retries=2)
    assert [
        {"messages": USER, "response_model": None, "max_retries": 2}
    ] == ins.chat.completions.requests


def test_instructor_request_has_its_retries_off_and_no_healjson_keyword() -> None:
    """One instructor request per model call: `max_retries=0`, a capture hook, the caller's
    other parameters; a per-call `json_mode` (even an unknown one) is ignored."""
    ins = StubInstructor()

    outcome = InstructorClient(ins).chat.completions.create(
        messages=USER, response_model=Person, max_retries=5, json_mode="xml", model="m"
    )

    assert isinstance(outcome, Healed)
    [call] = ins.calls
    assert {"messages", "response_model", "max_retries", "hooks", "model"} == set(call)
    assert (Person, 0, "m") == (call["response_model"], call["max_retries"], call["model"])
    assert [True] == ins.quiet_during_call
    assert not _instructor._QUIET.get()


def test_instructor_logs_are_unmuted_again_whatever_the_client_raises() -> None:
    """The exchange around each request is closed even when the client raises a BaseException."""
    ins = StubInstructor(KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        InstructorClient(ins).chat.completions.create(messages=USER, response_model=Person)
    assert [True] == ins.quiet_during_call
    assert not _instructor._QUIET.get()
