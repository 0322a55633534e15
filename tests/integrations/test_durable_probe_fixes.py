"""Every run knows the credentials in its own call's parameters, whatever the entry point
(`Healer.run` / `arun`, a DBOS step, a Temporal activity): nothing it stores, emits or returns
holds them. And a healer DBOS rebuilds for its cache lookups keeps all the caller's healer had
(`Healer.with_cache`): its reply reader, so its cache keys, included."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from temporalio.testing import ActivityEnvironment

import healjson
from healjson import RetryableError
from healjson.testing import ScriptedServer
from pinned import pinned
from sdk_calls import TLS

KEY = "zq-PERCALL-4f8a9b7c6d5e4f3a2b1c"  # no known credential shape: known only as a parameter
HEADERS = {"x-api-key": KEY}


class Row(BaseModel):
    value: int


def _echoing(status: int) -> Any:
    """A `ScriptedReply` error whose body echoes the per-call key, as some providers' do."""
    from healjson.testing import ScriptedReply

    return ScriptedReply.error(status, f"Incorrect API key provided: {KEY}")


def _sdk_call(closing: contextlib.ExitStack, server: ScriptedServer) -> Any:
    sdk = closing.enter_context(
        openai.OpenAI(
            base_url=server.base_url,
            api_key="test",
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=TLS),
        )
    )
    return lambda messages, **params: sdk.chat.completions.create(messages=messages, **params)


def _shown(outcome: Any) -> str:
    """Everything an outcome shows: its record, repr, errors and trace."""
    return json.dumps(outcome.to_dict()) + repr(outcome) + str(outcome.errors) + outcome.trace()


def test_a_run_never_returns_the_key_its_own_parameters_carry(
    closing: contextlib.ExitStack,
) -> None:
    """`Healer.run` with the key in `extra_headers` and an HTTP 401 echoing it: the degraded
    outcome (record, repr, errors, trace) never holds it."""
    with ScriptedServer([_echoing(401)]) as server:
        call = _sdk_call(closing, server)
        outcome = healjson.Healer(Row).run(call, "x", model="m", extra_headers=HEADERS)

    assert "api_error" == outcome.reason
    assert KEY not in _shown(outcome)
    assert "[redacted]" in str(outcome.errors)


def test_an_async_run_never_returns_the_key_its_own_parameters_carry() -> None:
    """`Healer.arun`, an async call failing with the key in its message: not in the outcome."""

    async def call(messages: Any, **params: Any) -> str:
        raise _auth_error(params["extra_headers"]["x-api-key"])

    outcome = asyncio.run(healjson.Healer(Row).arun(call, "x", model="m", extra_headers=HEADERS))

    assert not outcome.ok
    assert KEY not in _shown(outcome)


def test_a_stream_never_returns_the_key_its_own_parameters_carry() -> None:
    """`Healer.stream` / `astream`, a call failing with the key in its message: not in the
    outcome."""

    def call(messages: Any, **params: Any) -> Any:
        raise _auth_error(params["extra_headers"]["x-api-key"])

    async def acall(messages: Any, **params: Any) -> Any:
        raise _auth_error(params["extra_headers"]["x-api-key"])

    healer = healjson.Healer(Row)
    stream = healer.stream(call, "x", model="m", extra_headers=HEADERS)
    outcome = stream.finish()

    async def drained() -> Any:
        return await healer.astream(acall, "x", model="m", extra_headers=HEADERS).finish()

    for each in (outcome, asyncio.run(drained())):
        assert not each.ok
        assert KEY not in _shown(each)


def _auth_error(key: str) -> openai.AuthenticationError:
    request = httpx.Request("POST", "http://x/v1/chat/completions")
    body = {"error": {"message": f"Incorrect API key provided: {key}"}}
    response = httpx.Response(401, request=request, json=body)
    return openai.AuthenticationError(
        f"Incorrect API key provided: {key}", response=response, body=None
    )


@pinned(max_examples=20)
@given(
    key=st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=16, max_size=40),
    where=st.sampled_from(["extra_headers", "api_key", "extra_query"]),
)
def test_any_per_call_credential_is_kept_out_of_the_outcome(key: str, where: str) -> None:
    """For any key passed in a credential-named parameter, a provider error echoing it leaves
    no trace of it in the run's outcome."""
    params: dict[str, Any] = {
        "extra_headers": {"extra_headers": {"x-api-key": key}},
        "api_key": {"api_key": key},
        "extra_query": {"extra_query": {"access_token": key}},
    }[where]

    def call(messages: Any, **given: Any) -> str:
        raise _auth_error(key)

    outcome = healjson.Healer(Row).run(call, "x", model="m", **params)

    assert not outcome.ok
    assert key not in _shown(outcome)


def _launch(tmp_path: Path, name: str) -> Any:
    """DBOS on a SQLite system database in `tmp_path`, launched (the caller destroys it)."""
    from dbos import DBOS

    DBOS(
        config={
            "name": name,
            "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
            "log_level": "ERROR",
        }
    )
    DBOS.launch()
    return DBOS


@pytest.mark.slow  # a real DBOS launched: the slow lane
def test_a_dbos_step_never_records_the_key_its_call_carries(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """A terminal (401) and a transient (500, retried by DBOS) error echoing the per-call key:
    neither the outcomes nor any byte of DBOS's system database holds it."""
    from dbos import SetWorkflowID

    from healjson.dbos import healed_step, healed_step_async

    with ScriptedServer([_echoing(401), _echoing(500), _echoing(500), _echoing(401)]) as server:
        call = _sdk_call(closing, server)
        healer = healjson.Healer(Row)
        dbos = _launch(tmp_path, "healjson-percall-secret-test")
        try:

            @dbos.workflow(name="healjson-test-percall-secret")
            def rows() -> list[Any]:
                terminal = healed_step(healer, call, "a", model="m", extra_headers=HEADERS)
                transient = healed_step(
                    healer,
                    call,
                    "b",
                    model="m",
                    retries=2,
                    retry_interval_s=0,
                    extra_headers=HEADERS,
                )
                return [terminal, transient]

            @dbos.workflow(name="healjson-test-percall-secret-async")
            async def row() -> Any:
                return await healed_step_async(healer, call, "c", model="m", extra_headers=HEADERS)

            with SetWorkflowID("percall-secret-1"):
                outcomes = rows()
            with SetWorkflowID("percall-secret-2"):
                outcomes.append(asyncio.run(row()))
            steps = [
                (step["function_name"], step["output"], step["error"])
                for workflow in ("percall-secret-1", "percall-secret-2")
                for step in dbos.list_workflow_steps(workflow)
            ]
        finally:
            dbos.destroy()

    assert ["api_error"] * 3 == [outcome.reason for outcome in outcomes]
    assert all(KEY not in _shown(outcome) for outcome in outcomes)
    recorded = repr(steps)
    assert "Incorrect API key provided" in recorded  # the errors are recorded, redacted
    assert KEY not in recorded
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("dbos.sqlite*"))
    assert KEY.encode() not in stored


def test_a_temporal_activity_never_reports_the_key_its_request_carries(
    closing: contextlib.ExitStack,
) -> None:
    """An activity whose request's params carry the key: its result on a 401, its
    `RetryableError` on a 500, its heartbeats and a raised `Degraded`'s details never hold it."""
    from temporalio.exceptions import ApplicationError

    from healjson.temporal import healed_activity

    request = {
        "messages": [{"role": "user", "content": "x"}],
        "params": {"model": "m", "extra_headers": HEADERS},
    }
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    with ScriptedServer([_echoing(401), _echoing(500), _echoing(401)]) as server:
        healer = healjson.Healer(Row)
        call = _sdk_call(closing, server)
        result = env.run(healed_activity(healer, call), request)
        with pytest.raises(RetryableError) as retryable:
            env.run(healed_activity(healer, call), request)
        with pytest.raises(ApplicationError) as degraded:
            env.run(healed_activity(healer, call, on_degraded="raise"), request)

    assert "api_error" == result["reason"]
    assert KEY not in json.dumps(result)
    assert KEY not in str(retryable.value)
    assert KEY not in repr(beats)
    assert KEY not in str(degraded.value) + json.dumps(degraded.value.details, default=str)


def _reader(text: str) -> healjson.ReadReply | None:
    found = re.search(r"VALUE=(\d+)", text)
    return None if found is None else healjson.ReadReply((f'{{"value": {found[1]}}}',))


def test_with_cache_keeps_every_public_setting_of_the_healer() -> None:
    """`Healer.with_cache` changes the cache only: every other public attribute is the very
    object the healer had, its spec (reply reader, golden example) the same."""
    healer = healjson.Healer(
        list[Row],
        contracts=[healjson.contract(fields=())(lambda rows: None)],
        item_contracts=[healjson.contract(fields=("value",))(lambda row: None)],
        policy=healjson.HealPolicy(max_attempts=2),
        fallback=[],
        examples=[[{"value": 1}]],
        cache=healjson.ResponseCache.memory(),
    ).with_reply_reader(_reader)
    other = healjson.ResponseCache.memory()

    twin = healer.with_cache(other)

    public = {name for name in vars(healer) if not name.startswith("_")}
    assert {
        "cache",
        "contracts",
        "examples",
        "fallback",
        "item_contracts",
        "policy",
        "spec",
    } <= public
    assert other is twin.cache
    assert all(getattr(twin, name) is getattr(healer, name) for name in public - {"cache"})
    assert twin.spec.reply_reader is _reader
    assert healer.with_cache(None).cache is None


@pytest.mark.slow  # a real DBOS launched: the slow lane
def test_a_dbos_step_keeps_the_reply_reader_and_the_keys_of_a_cached_healer(tmp_path: Path) -> None:
    """A healer with a reply reader and a cache heals its reader's format inside a DBOS step,
    and the answer stored outside DBOS is found inside it (the same cache key: no call)."""
    from dbos import SetWorkflowID

    from healjson.dbos import healed_step

    calls: list[str] = []

    def call(messages: Any, **params: Any) -> str:
        calls.append(messages[-1]["content"])
        return "VALUE=7"

    policy = healjson.HealPolicy(max_attempts=1)
    store = healjson.ResponseCache.memory()
    healer = healjson.Healer(Row, policy=policy, cache=store).with_reply_reader(_reader)
    outside = healer.run(call, "stored", model="m")
    dbos = _launch(tmp_path, "healjson-reader-twin-test")
    try:

        @dbos.workflow(name="healjson-test-reader-twin")
        def rows() -> list[Any]:
            return [healed_step(healer, call, text, model="m") for text in ("stored", "new")]

        with SetWorkflowID("reader-twin-1"):
            inside = rows()
    finally:
        dbos.destroy()

    assert outside.ok
    assert [(True, 7), (True, 7)] == [(o.ok, o.value.value) for o in inside]
    assert ["stored", "new"] == calls  # "stored" was served from the cache inside DBOS
    assert 1 == inside[0].usage.cache_hits
