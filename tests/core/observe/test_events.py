"""Structured events: quiet until asked, flat fields, content only when asked, never a secret."""

from __future__ import annotations

import json
from typing import Any

import openai
import structlog

import healjson
from contract_cases import UrgentTicket as Ticket
from contract_cases import urgent_needs_detail
from healjson import Healer, Reply
from healjson.testing import ScriptedModel, ScriptedServer, capture_events

SECRET = "sk-test-SECRET-0123456789"


GOOD = '{"urgency": 5, "summary": "Parcel lost for a week, customer is furious"}'
SHORT = '{"urgency": 5, "summary": "Lost it"}'


def _run(replies: list[Any], **params: Any) -> healjson.Outcome[Ticket]:
    healer = Healer(Ticket, contracts=[urgent_needs_detail])
    return healer.run(ScriptedModel(replies), "triage this", **params)


def test_events_are_quiet_until_configured() -> None:
    """Without a bound logger and without structlog configuration nothing is emitted."""
    structlog.reset_defaults()
    seen: list[str] = []

    class Recorder:
        def info(self, event: str, **fields: Any) -> None:
            seen.append(event)

    _run([SHORT, GOOD])
    assert [] == seen
    with healjson.set_logger(Recorder()):
        _run([SHORT, GOOD])
    assert "healjson.repair_request" in seen
    seen.clear()
    _run([SHORT, GOOD])
    assert [] == seen  # the context manager restored the quiet default


def test_every_layer_emits_an_event_with_flat_fields() -> None:
    """Attempts, local repairs, diagnostics, the repair request and the outcome are events."""
    with capture_events() as logs:
        outcome = _run(["```json\n" + SHORT + "\n```", GOOD])
    events = [log["event"] for log in logs]
    assert [
        "healjson.attempt",
        "healjson.local_repair",
        "healjson.diagnostic",
        "healjson.repair_request",
        "healjson.attempt",
        "healjson.healed",
    ] == events
    first = logs[0]
    assert 1 == first["attempt"]
    assert ["code_fence"] == first["flags"]
    assert "stop" == first["finish_reason"]
    assert logs[2]["fields"] == ["urgency", "summary"]
    assert 2 == logs[3]["attempt"]
    assert logs[-1]["calls"] == outcome.calls
    assert all(not isinstance(v, dict) for log in logs for v in log.values())


def test_degradation_event_carries_the_reason() -> None:
    """A degraded run ends with a `healjson.degraded` event naming the reason."""
    with capture_events() as logs:
        _run([Reply('{"urgency": 3, "summary": "cut', "length")] * 3)
    assert "healjson.degraded" == logs[-1]["event"]
    assert "token_truncated" == logs[-1]["reason"]


def test_content_is_logged_only_when_asked() -> None:
    """Raw output and prompts appear in events only with include_content=True."""
    with capture_events() as logs:
        _run([SHORT, GOOD])
    assert not any("Lost it" in json.dumps(log, default=str) for log in logs)
    with capture_events(include_content=True) as logs:
        _run([SHORT, GOOD])
    assert any("Lost it" in json.dumps(log, default=str) for log in logs)


def test_api_key_and_headers_never_reach_the_logs_or_the_record() -> None:
    """A real client call with an API key and auth headers leaks neither into events nor traces."""
    with (
        ScriptedServer([SHORT, GOOD]) as server,
        openai.OpenAI(base_url=server.base_url, api_key=SECRET, max_retries=0) as sdk,
    ):
        client = healjson.wrap(sdk)
        with capture_events(include_content=True) as logs:
            outcome = client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "triage"}],
                response_model=Ticket,
                contracts=[urgent_needs_detail],
                extra_headers={"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET},
            )
        assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert outcome.ok
    assert SECRET not in json.dumps(logs, default=str)
    assert SECRET not in outcome.trace("json")
    assert SECRET not in outcome.trace("markdown")


def test_broken_logger_never_breaks_a_run() -> None:
    """A logger that raises is ignored; the outcome is unaffected."""

    class Broken:
        def info(self, event: str, **fields: Any) -> None:
            raise RuntimeError("log sink down")

    with healjson.set_logger(Broken()):
        outcome = _run([SHORT, GOOD])
    assert outcome.ok
