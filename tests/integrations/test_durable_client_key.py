"""Durable steps and activities know the client their call uses (`client=`, or the client a
bound method belongs to): what they record never holds its key, even a key of no known
shape; and recorded calls are named by everything that shapes the conversation (the healer,
the context), so two healers healing the same request in one activity never share them."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel
from temporalio import activity
from temporalio.testing import ActivityEnvironment

import healjson
from healjson import RetryableError
from healjson._core.run.owner import call_client
from healjson.temporal import healed_activity
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

# a key of no credential shape: only knowing the client finds it
KEY = "zq-CLIENTKEY-4f8a9b7c6d5e4f3a2b1c"
ECHOED = f'{{"number": "A", "total": 1, "note": "the key I was sent is {KEY}"}}'
REQUEST = {"messages": [{"role": "user", "content": "invoice A"}], "params": {"model": "m"}}


class Invoice(BaseModel):
    number: str
    total: int


class Shipment(BaseModel):
    number: str
    total: int
    carrier: str


def _client(stack: contextlib.ExitStack, server: ScriptedServer) -> openai.OpenAI:
    return stack.enter_context(
        openai.OpenAI(
            base_url=server.base_url,
            api_key=KEY,
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=TLS),
        )
    )


def test_a_bound_method_names_its_sdk_client_and_a_function_names_none() -> None:
    """`client.chat.completions.create` belongs to the client (not to its HTTP client); a
    function of the caller's own, a class and a module function belong to none."""
    import anthropic
    import ollama

    sdk = openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0)
    claude = anthropic.Anthropic(api_key=KEY, base_url="http://127.0.0.1:9", max_retries=0)
    local = ollama.Client(host="http://127.0.0.1:9")
    try:
        assert sdk is call_client(sdk.chat.completions.create)
        assert sdk is call_client(sdk.responses.create)
        assert claude is call_client(claude.messages.create)
        assert local is call_client(local.chat)
        assert call_client(lambda messages: None) is None
        assert call_client(json.dumps) is None
        assert call_client(Invoice.model_validate) is None
    finally:
        sdk.close()
        claude.close()
        local.close()


def test_a_temporal_activity_given_its_client_records_no_key(
    closing: contextlib.ExitStack,
) -> None:
    """An answer echoing the key degrades with `api_error` (recorded redacted), a 401 and a 503
    echoing it are recorded and raised without it: the heartbeats, the results and the
    retryable error's text hold no trace of the key."""
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    script = [
        ECHOED,
        ScriptedReply.error(401, f"Incorrect API key provided: {KEY}"),
        ScriptedReply.error(503, f"overloaded for key {KEY}"),
    ]
    with ScriptedServer(script) as server:
        sdk = _client(closing, server)
        act = healed_activity(
            healjson.Healer(Invoice, policy=healjson.HealPolicy(max_attempts=1)),
            lambda messages, **params: sdk.chat.completions.create(messages=messages, **params),
            client=sdk,
        )
        answered = env.run(act, REQUEST)
        refused = env.run(act, REQUEST)
        with pytest.raises(RetryableError) as raised:
            env.run(act, REQUEST)

    assert (False, "api_error") == (answered["ok"], answered["reason"])
    assert (False, "api_error") == (refused["ok"], refused["reason"])
    kept = json.dumps([answered, refused, beats, str(raised.value), raised.value.args], default=str)
    assert KEY not in kept
    assert "[redacted]" in kept


def test_a_dbos_step_given_its_client_records_no_key(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """The steps' records (DBOS's system database) hold neither the answer's nor the error
    body's echo of the key; the answer that held it degrades with `api_error`."""
    from dbos import DBOS, SetWorkflowID

    from healjson.dbos import healed_step

    error = ScriptedReply.error(400, f"Incorrect API key provided: {KEY}")
    with ScriptedServer([ECHOED, error]) as server:
        sdk = _client(closing, server)

        def call(messages: Any, **params: Any) -> Any:
            return sdk.chat.completions.create(messages=messages, **params)

        healer = healjson.Healer(Invoice, policy=healjson.HealPolicy(max_attempts=1))

        @DBOS.workflow(name="healjson-test-client-key")
        def heal() -> list[Any]:
            return [
                healed_step(healer, call, text, model="m", client=sdk).reason
                for text in ("invoice A", "invoice B")
            ]

        DBOS(
            config={
                "name": "healjson-client-key-test",
                "system_database_url": f"sqlite:///{tmp_path / 'dbos.sqlite'}",
                "log_level": "ERROR",
            }
        )
        DBOS.launch()
        try:
            with SetWorkflowID("client-key-1"):
                reasons = heal()
            steps = DBOS.list_workflow_steps("client-key-1")
        finally:
            DBOS.destroy()

    assert ["api_error", "api_error"] == reasons
    recorded = repr([(step["function_name"], step["output"], step["error"]) for step in steps])
    assert KEY not in recorded
    assert "[redacted]" in recorded


def _transient() -> openai.InternalServerError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(503, request=request)
    return openai.InternalServerError("overloaded", response=response, body=None)


def test_two_healers_of_one_request_never_share_recorded_calls() -> None:
    """One activity heals a request as an `Invoice`, then as a `Shipment` whose repair is cut
    by a transient failure: on the retried attempt the invoice is made again from its own call,
    never from the shipment run's replies (its repair answer included)."""
    messages = [{"role": "user", "content": "Document 17: invoice INV-1, 40 EUR, DHL"}]
    script: list[Any] = []

    def call(sent: Any, **params: Any) -> Any:
        reply = script.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    invoices, shipments = healjson.Healer(Invoice), healjson.Healer(Shipment)

    @activity.defn(name="healjson-test-two-healers")
    def extract() -> list[Any]:
        first = healed_activity(invoices, call, messages, model="m")
        second = healed_activity(shipments, call, messages, model="m")
        return [first.unwrap().model_dump(), second.unwrap().model_dump()]

    script[:] = [
        '{"number": "INV-1", "total": 40}',
        '{"number": "INV-1"}',
        '{"number": "SHIP-999", "total": 999}',
        _transient(),
    ]
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    with pytest.raises(RetryableError):
        env.run(extract)
    script[:] = [
        '{"number": "INV-1", "total": 40}',
        '{"number": "INV-1", "total": 40, "carrier": "DHL"}',
    ]
    retry = ActivityEnvironment()
    retry.info = dataclasses.replace(
        ActivityEnvironment.default_info(), attempt=2, heartbeat_details=list(beats[-1])
    )

    invoice, shipment = retry.run(extract)

    assert {"number": "INV-1", "total": 40} == invoice
    assert {"number": "INV-1", "total": 40, "carrier": "DHL"} == shipment
