"""`healjson.temporal`: a healed call as a Temporal activity, run in temporalio's offline
`ActivityEnvironment`: transient provider failures raise the retryable error, a `Degraded`
outcome is data (or a non-retryable `ApplicationError`), and a retried attempt reads back the
model calls that had finished (recorded in its heartbeats) instead of making them again."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

import healjson
from healjson import RetryableError
from healjson.temporal import healed_activity
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from sdk_calls import TLS


class Invoice(BaseModel):
    number: str
    total: int


REQUEST = {"messages": [{"role": "user", "content": "invoice A"}], "params": {"model": "m"}}
GOOD = '{"number": "A", "total": 3}'


def _sdk_call(stack: Any, server: ScriptedServer) -> Any:
    sdk = stack.enter_context(
        openai.OpenAI(
            base_url=server.base_url,
            api_key="test",
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=TLS),
        )
    )
    return lambda messages, **params: sdk.chat.completions.create(messages=messages, **params)


def test_a_healed_activity_returns_the_outcome_as_data_and_heartbeats_each_call(
    closing: contextlib.ExitStack,
) -> None:
    """The activity heals (here with one repair) and returns `Outcome.to_dict()`; each finished
    model call is in a heartbeat."""
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    with ScriptedServer(['{"number": "A"}', GOOD]) as server:
        activity = healed_activity(healjson.Healer(Invoice), _sdk_call(closing, server))
        data = env.run(activity, REQUEST)

    outcome = healjson.outcome_from_dict(data, Invoice)
    assert isinstance(outcome, healjson.Healed)
    assert 3 == outcome.value.total
    assert [1, 2] == [len(beat[0]["healjson_calls"]) for beat in beats]


@pytest.mark.parametrize("status", [429, 503])
def test_a_transient_provider_failure_raises_the_retryable_error(
    status: int, closing: contextlib.ExitStack
) -> None:
    """HTTP 429 or 503: `RetryableError` (not an `ApplicationError`: Temporal retries it)."""
    with ScriptedServer([ScriptedReply.error(status, "try later")]) as server:
        activity = healed_activity(healjson.Healer(Invoice), _sdk_call(closing, server))
        with pytest.raises(RetryableError) as raised:
            ActivityEnvironment().run(activity, REQUEST)

    assert status == raised.value.status
    assert not isinstance(raised.value, ApplicationError)


def test_a_terminal_failure_or_degraded_outcome_is_a_value_never_a_retry(
    closing: contextlib.ExitStack,
) -> None:
    """HTTP 400 degrades with `api_error`; a refusal with `refusal`: returned as data."""
    with ScriptedServer(
        [ScriptedReply.error(400, "bad request"), ScriptedReply(refusal="no")]
    ) as server:
        activity = healed_activity(healjson.Healer(Invoice), _sdk_call(closing, server))
        first = ActivityEnvironment().run(activity, REQUEST)
        second = ActivityEnvironment().run(activity, REQUEST)

    assert (False, "api_error") == (first["ok"], first["reason"])
    assert (False, "refusal") == (second["ok"], second["reason"])


def test_on_degraded_raise_is_a_non_retryable_application_error(
    closing: contextlib.ExitStack,
) -> None:
    """`on_degraded="raise"`: the `Degraded` is a non-retryable `ApplicationError` carrying the
    outcome's data."""
    activity = healed_activity(
        healjson.Healer(Invoice, policy=healjson.HealPolicy(max_attempts=1)),
        ScriptedModel(["not JSON at all"]),
        on_degraded="raise",
    )
    with pytest.raises(ApplicationError) as raised:
        ActivityEnvironment().run(activity, REQUEST)

    assert raised.value.non_retryable
    assert "healjson.Degraded" == raised.value.type
    assert "invalid_output" == raised.value.details[0]["reason"]


def test_a_retried_attempt_repeats_no_finished_model_call(closing: contextlib.ExitStack) -> None:
    """Attempt 1 makes the first call, then its repair fails transiently; attempt 2 (given the
    heartbeat details) reads the first call back and makes only the repair."""
    beats: list[Any] = []
    first_env = ActivityEnvironment()
    first_env.on_heartbeat = lambda *details: beats.append(details)
    replies = ['{"number": "A"}', ScriptedReply.error(503, "busy"), GOOD]
    with ScriptedServer(replies) as server:
        activity = healed_activity(healjson.Healer(Invoice), _sdk_call(closing, server))
        with pytest.raises(RetryableError):
            first_env.run(activity, REQUEST)
        retry_env = ActivityEnvironment()
        retry_env.info = dataclasses.replace(
            ActivityEnvironment.default_info(), attempt=2, heartbeat_details=list(beats[-1])
        )
        data = retry_env.run(activity, REQUEST)
        requests = [len(request.messages) for request in server.requests]

    assert data["ok"]
    assert [1, 3, 3] == requests  # the first call once; the repair twice (503, then answered)


def test_an_async_call_makes_an_async_activity() -> None:
    """A coroutine `call` gives an async activity, run the same way."""

    async def call(messages: Any, **params: Any) -> str:
        await asyncio.sleep(0)
        return GOOD

    activity = healed_activity(healjson.Healer(Invoice), call)
    data = asyncio.run(ActivityEnvironment().run(activity, REQUEST))

    assert data["ok"]


class Row(BaseModel):
    row: str
    value: int


def test_calls_recorded_for_another_request_are_never_handed_to_this_one() -> None:
    """An activity of your own heals rows A and B, then fails; its retry heals A again: the
    heartbeat details (row B's calls, named for B) are not handed to A, so each row gets its
    own answer."""
    from temporalio import activity

    def call(messages: Any, **params: Any) -> str:
        row = messages[0]["content"]
        return json.dumps({"row": row, "value": ord(row)})

    healer = healjson.Healer(Row)
    fail = {"later": True}

    @activity.defn(name="healjson-test-rows")
    def rows() -> list[Any]:
        found = [healed_activity(healer, call, row, model="m").value.row for row in ("A", "B")]
        if fail["later"]:
            raise RuntimeError("a later step of the activity failed")
        return found

    beats: list[Any] = []
    first_env = ActivityEnvironment()
    first_env.on_heartbeat = lambda *details: beats.append(details)
    with pytest.raises(RuntimeError):
        first_env.run(rows)
    fail["later"] = False
    retry_env = ActivityEnvironment()
    retry_env.info = dataclasses.replace(
        ActivityEnvironment.default_info(), attempt=2, heartbeat_details=list(beats[-1])
    )

    assert ["A", "B"] == retry_env.run(rows)


SECRET = "sk-live-0123456789abcdefSECRET"


def test_no_secret_reaches_the_heartbeats_or_a_retryable_error(
    closing: contextlib.ExitStack,
) -> None:
    """A model answer, a terminal error body and a transient one that hold a bearer token: the
    heartbeats hold none of it, the answer the redaction changed degrades the run
    (`api_error`), and the `RetryableError` Temporal records says nothing of it, with no
    provider exception chained to it."""
    echoed = f'{{"number": "A", "total": 1, "note": "Authorization: Bearer {SECRET}"}}'
    replies = [
        echoed,
        ScriptedReply.error(400, f"bad header Authorization: Bearer {SECRET}"),
        ScriptedReply.error(503, f"bad gateway for Authorization: Bearer {SECRET}"),
    ]
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    with ScriptedServer(replies) as server:
        activity = healed_activity(healjson.Healer(Invoice), _sdk_call(closing, server))
        answered = env.run(activity, REQUEST)
        failed = env.run(activity, REQUEST)
        with pytest.raises(RetryableError) as raised:
            env.run(activity, REQUEST)

    assert ("api_error", "api_error") == (answered["reason"], failed["reason"])
    assert "credential" in answered["attempts"][0]["error"]
    recorded = json.dumps(beats)
    assert SECRET not in recorded
    assert "Authorization: [redacted]" in recorded
    assert SECRET not in str(raised.value)
    assert "Authorization: [redacted]" in str(raised.value)
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__


class Login(BaseModel):
    user: str
    password: str


def test_an_answer_the_redaction_would_change_degrades_on_a_retried_attempt_too() -> None:
    """A `password` field is a credential shape: the answer is recorded redacted, so the run
    degrades (never a value with `[redacted]` in it), and a retried attempt given the
    heartbeats ends the same with no new call."""
    model = ScriptedModel(['{"user": "alice", "password": "hunter22"}'])
    activity = healed_activity(healjson.Healer(Login), model)
    beats: list[Any] = []
    first_env = ActivityEnvironment()
    first_env.on_heartbeat = lambda *details: beats.append(details)
    first = first_env.run(activity, REQUEST)
    retry_env = ActivityEnvironment()
    retry_env.info = dataclasses.replace(
        ActivityEnvironment.default_info(), attempt=2, heartbeat_details=list(beats[-1])
    )
    again = retry_env.run(activity, REQUEST)

    assert (False, "api_error") == (first["ok"], first["reason"])
    assert (first["reason"], first["attempts"][0]["error"]) == (
        again["reason"],
        again["attempts"][0]["error"],
    )
    assert 1 == len(model.calls)
    assert "hunter22" not in json.dumps(beats)
