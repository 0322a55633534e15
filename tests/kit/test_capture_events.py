"""`healjson.testing.capture_events()`: healjson's events as dicts while a block runs, scoped to
the thread or task that runs it, nested blocks included."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import pytest
import structlog

import healjson
from contract_cases import UrgentTicket as Ticket
from contract_cases import urgent_needs_detail
from healjson import Healer
from healjson.testing import ScriptedModel, capture_events

GOOD = '{"urgency": 5, "summary": "Parcel lost for a week, customer is furious"}'
SHORT = '{"urgency": 5, "summary": "Lost it"}'


def _run(*replies: str) -> healjson.Outcome[Ticket]:
    healer = Healer(Ticket, contracts=[urgent_needs_detail])
    return healer.run(ScriptedModel(list(replies)), "triage this")


async def _arun(*replies: str) -> healjson.Outcome[Ticket]:
    healer = Healer(Ticket, contracts=[urgent_needs_detail])
    return await healer.arun(ScriptedModel(list(replies)).acall, "triage this")


def test_a_run_inside_the_block_is_collected_event_by_event() -> None:
    """A run inside the block gives every event in order, each with its level, the run's id and
    its flat fields."""
    with capture_events() as events:
        outcome = _run(SHORT, GOOD)
    assert [
        ("healjson.attempt", "debug"),
        ("healjson.diagnostic", "debug"),
        ("healjson.repair_request", "debug"),
        ("healjson.attempt", "debug"),
        ("healjson.healed", "info"),
    ] == [(event["event"], event["log_level"]) for event in events]
    assert {outcome.run_id} == {event["run_id"] for event in events}
    assert 2 == events[-1]["calls"]
    assert ["urgency", "summary"] == events[1]["fields"]


def test_a_degraded_run_ends_with_a_warning() -> None:
    """A degraded run's last event is `healjson.degraded` at warning level, with its reason."""
    with capture_events() as events:
        Healer(Ticket, policy=healjson.HealPolicy(max_attempts=1)).run(
            ScriptedModel(["no json here"]), "triage this"
        )
    assert ("healjson.degraded", "warning") == (events[-1]["event"], events[-1]["log_level"])
    assert "invalid_output" == events[-1]["reason"]


def test_nothing_is_collected_before_or_after_the_block() -> None:
    """Runs before and after the block are not collected, and the list stays as the block
    left it."""
    _run(GOOD)
    with capture_events() as events:
        outcome = _run(GOOD)
    _run(GOOD)
    assert {outcome.run_id} == {event["run_id"] for event in events}
    assert 2 == len(events)


def test_content_is_collected_only_when_asked() -> None:
    """The model's text (raw output, repair prompt, a diagnostic's value) is in the events only
    with `include_content=True`."""
    with capture_events() as plain:
        _run(SHORT, GOOD)
    with capture_events(include_content=True) as full:
        _run(SHORT, GOOD)
    assert not any("raw_text" in e or "prompt" in e or "value" in e for e in plain)
    assert SHORT == full[0]["raw_text"]
    assert "Lost it" in full[2]["prompt"]
    assert "value" in full[1]


def test_an_async_run_is_collected() -> None:
    """A run awaited inside the block, and one in a task created inside it, are collected."""

    async def main() -> tuple[list[dict[str, Any]], set[str]]:
        with capture_events() as events:
            first = await _arun(GOOD)
            second = await asyncio.create_task(_arun(SHORT, GOOD))
        return events, {first.run_id, second.run_id}

    events, run_ids = asyncio.run(main())
    assert run_ids == {event["run_id"] for event in events}
    assert 2 == sum(event["event"] == "healjson.healed" for event in events)


def test_concurrent_tasks_each_collect_only_their_own_run() -> None:
    """Two tasks, each in its own block, collect only the events of their own run."""

    async def one(replies: tuple[str, ...]) -> tuple[list[dict[str, Any]], str]:
        with capture_events() as events:
            await asyncio.sleep(0)
            outcome = await _arun(*replies)
            await asyncio.sleep(0)
        return events, outcome.run_id

    async def main() -> list[tuple[list[dict[str, Any]], str]]:
        return await asyncio.gather(one((GOOD,)), one((SHORT, GOOD)))

    (first, first_id), (second, second_id) = asyncio.run(main())
    assert {first_id} == {event["run_id"] for event in first}
    assert {second_id} == {event["run_id"] for event in second}
    assert (2, 5) == (len(first), len(second))


def test_nested_blocks_each_collect_what_ran_inside_them() -> None:
    """An event inside a nested block reaches it and the block around it; the outer block also
    collects what ran outside the inner one."""
    with capture_events() as outer:
        before = _run(GOOD)
        with capture_events() as inner:
            within = _run(GOOD)
        after = _run(GOOD)
    assert {within.run_id} == {event["run_id"] for event in inner}
    assert [before.run_id] * 2 + [within.run_id] * 2 + [after.run_id] * 2 == [
        event["run_id"] for event in outer
    ]


def test_nested_blocks_each_get_the_content_they_asked_for() -> None:
    """A block that asked for content gets the model's text; a block around it that did not
    gets the same events without it."""
    with capture_events() as outer, capture_events(include_content=True) as inner:
        _run(GOOD)
    assert GOOD == inner[0]["raw_text"]
    assert "raw_text" not in outer[0]
    assert [e["event"] for e in inner] == [e["event"] for e in outer]


def test_a_thread_started_inside_the_block_is_collected_only_with_the_context() -> None:
    """A thread started with the block's context (`copy_context().run`) is collected; a plain
    thread, which Python starts with an empty context, is not."""
    run_ids: dict[str, str] = {}

    def work(name: str) -> None:
        run_ids[name] = _run(GOOD).run_id

    with capture_events() as events:
        context = contextvars.copy_context()
        carried = threading.Thread(target=context.run, args=(work, "carried"))
        plain = threading.Thread(target=work, args=("plain",))
        for thread in (carried, plain):
            thread.start()
            thread.join()
    assert {run_ids["carried"]} == {event["run_id"] for event in events}


def test_a_thread_running_its_own_block_meanwhile_is_not_collected() -> None:
    """A block in another thread, open at the same time, collects only that thread's runs."""
    ready, done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def other() -> None:
        with capture_events() as events:
            ready.set()
            seen["run_id"] = _run(GOOD).run_id
            done.wait(10)
        seen["events"] = events

    thread = threading.Thread(target=other)
    with capture_events() as mine:
        thread.start()
        ready.wait(10)
        outcome = _run(SHORT, GOOD)
        done.set()
        thread.join()
    assert {outcome.run_id} == {event["run_id"] for event in mine}
    assert {seen["run_id"]} == {event["run_id"] for event in seen["events"]}


def test_the_previous_logger_is_back_after_the_block_even_when_it_raises() -> None:
    """After the block, even one left by an exception, events go to the logger set before it."""
    received: list[str] = []

    class Logger:
        def info(self, event: str, **fields: Any) -> None:
            received.append(event)

    def failing_test() -> None:
        with capture_events():
            _run(GOOD)
            raise RuntimeError("the test failed")

    with healjson.set_logger(Logger()):
        with pytest.raises(RuntimeError, match="the test failed"):
            failing_test()
        assert [] == received  # the block's run went to the block
        _run(GOOD)
    assert ["healjson.attempt", "healjson.healed"] == received


def test_structlog_is_not_configured_by_the_block() -> None:
    """The block leaves structlog's configuration as it was, inside and after it."""
    configured = structlog.is_configured()
    with capture_events():
        _run(GOOD)
        assert configured is structlog.is_configured()
    assert configured is structlog.is_configured()


def test_a_set_logger_block_inside_takes_the_events_for_its_span() -> None:
    """A `with healjson.set_logger(...)` block inside the capture takes the events of its own
    span; the capture collects the rest."""
    received: list[str] = []

    class Logger:
        def info(self, event: str, **fields: Any) -> None:
            received.append(fields["run_id"])

    with capture_events() as events:
        with healjson.set_logger(Logger()):
            inside = _run(GOOD)
        outside = _run(GOOD)
    assert {inside.run_id} == set(received)
    assert {outside.run_id} == {event["run_id"] for event in events}


def test_each_test_starts_with_nothing_collected_first() -> None:
    """A block in one test collects nothing of another's: a fresh block starts empty."""
    with capture_events() as events:
        pass
    assert [] == events
