"""`with healjson.set_logger(log):` is a per-thread, per-task scope; the bare call is global.

Overlapping blocks in concurrent asyncio tasks and threads must each route events to their own
logger only, never leave a logger (with `include_content=True`) installed for unrelated calls,
and restore exactly the previous state on exit.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import healjson
from healjson import Healer, Violation, contract


class Note(BaseModel):
    summary: str


@contract(fields=("summary",))
def long_enough(note: Note) -> Violation | None:
    """A summary says something."""
    if len(note.summary) < 20:
        return Violation("the summary needs at least 20 characters")
    return None


HEALER = Healer(Note, contracts=[long_enough])


def _replies(tag: str) -> list[str]:
    """A short answer (repaired) and then a good one, both carrying `tag`."""
    return [f'{{"summary": "{tag}"}}', f'{{"summary": "{tag} explained at length"}}']


EVENTS_PER_RUN = 5  # attempt, diagnostic, repair_request, attempt, healed


class Recorder:
    """A structlog-style logger that keeps (event, fields) pairs."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def info(self, event: str, **fields: Any) -> None:
        with self._lock:
            self.events.append((event, fields))

    def texts(self) -> list[str]:
        return [str(fields["raw_text"]) for _, fields in self.events if "raw_text" in fields]


@pytest.fixture(autouse=True)
def _quiet_default() -> Iterator[None]:
    """Every test starts and ends with the process-wide default logger."""
    healjson.set_logger(None)
    yield
    healjson.set_logger(None)


def _run_sync(tag: str) -> None:
    replies = _replies(tag)
    outcome = HEALER.run(lambda messages, **params: replies.pop(0), "summarise")
    assert outcome.ok


async def _run_async(tag: str) -> None:
    replies = _replies(tag)

    async def call(messages: Any, **params: Any) -> str:
        await asyncio.sleep(0)  # let the other tasks interleave between attempts
        return replies.pop(0)

    outcome = await HEALER.arun(call, "summarise")
    assert outcome.ok


def test_overlapping_blocks_in_twenty_tasks_route_events_to_their_own_logger() -> None:
    """Each of 20 interleaved tasks' events reach only the logger of its own block."""
    recorders = [Recorder() for _ in range(20)]

    async def task(index: int) -> None:
        with healjson.set_logger(recorders[index], include_content=index % 2 == 0):
            await asyncio.sleep(0)
            await _run_async(f"task-{index:02d}")
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(task(index) for index in range(20)))

    asyncio.run(main())

    for index, recorder in enumerate(recorders):
        assert EVENTS_PER_RUN == len(recorder.events)
        texts = recorder.texts()
        if index % 2 == 0:
            assert 2 == len(texts)
            assert all(f"task-{index:02d}" in text for text in texts)
        else:
            assert [] == texts  # include_content=False stayed with the tasks that asked for it


def test_overlapping_blocks_in_eight_threads_route_events_to_their_own_logger() -> None:
    """Each of 8 threads inside overlapping blocks logs only to its own logger; a thread outside
    every block meanwhile logs to none of them."""
    recorders = [Recorder() for _ in range(8)]
    entered = threading.Barrier(9)
    done = threading.Barrier(9)
    failures: list[BaseException] = []

    def worker(index: int) -> None:
        try:
            with healjson.set_logger(recorders[index], include_content=True):
                entered.wait(timeout=30)
                _run_sync(f"thread-{index}")
                done.wait(timeout=30)
        except BaseException as exc:  # reported below: a thread cannot fail the test itself
            failures.append(exc)

    def outsider() -> None:
        try:
            entered.wait(timeout=30)  # every block is open now
            _run_sync("outsider")
            done.wait(timeout=30)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    threads.append(threading.Thread(target=outsider))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert [] == failures
    for index, recorder in enumerate(recorders):
        assert EVENTS_PER_RUN == len(recorder.events)
        assert all(f"thread-{index}" in text for text in recorder.texts())
    seen = [text for recorder in recorders for text in recorder.texts()]
    assert not any("outsider" in text for text in seen)


def test_after_concurrent_blocks_the_process_default_is_unchanged() -> None:
    """Blocks opened and closed in many threads leave the process-wide default as it was."""
    default = Recorder()
    healjson.set_logger(default)
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait(timeout=30)
        for _ in range(200):
            with healjson.set_logger(Recorder(), include_content=True):
                time.sleep(0)  # give the other threads a chance to open their blocks meanwhile

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        sys.setswitchinterval(previous)

    _run_sync("after")
    assert EVENTS_PER_RUN == len(default.events)
    assert [] == default.texts()  # the default never got include_content from a block


def test_a_block_exit_restores_exactly_the_previous_state() -> None:
    """Nested blocks over a process-wide default: each exit brings back what was before."""
    default, outer, inner = Recorder(), Recorder(), Recorder()
    healjson.set_logger(default)

    with healjson.set_logger(outer):
        _run_sync("outer-1")
        with healjson.set_logger(inner, include_content=True):
            _run_sync("inner")
        _run_sync("outer-2")
    _run_sync("default")

    assert (EVENTS_PER_RUN, 2 * EVENTS_PER_RUN, EVENTS_PER_RUN) == (
        len(default.events),
        len(outer.events),
        len(inner.events),
    )
    assert [] == outer.texts()
    assert 2 == len(inner.texts())


def test_a_block_left_by_an_exception_restores_the_previous_state() -> None:
    """Leaving a block by an exception restores the settings as well."""
    inside = Recorder()
    with pytest.raises(RuntimeError), healjson.set_logger(inside):
        raise RuntimeError("boom")
    _run_sync("after")
    assert [] == inside.events


def test_blocks_created_before_they_are_entered_still_restore_the_default() -> None:
    """`a = set_logger(A); b = set_logger(B)`, then entering each: the default is restored."""
    default, first, second = Recorder(), Recorder(), Recorder()
    healjson.set_logger(default)

    a = healjson.set_logger(first)
    b = healjson.set_logger(second)
    with a:
        _run_sync("first")
    with b:
        _run_sync("second")
    _run_sync("default")

    assert (EVENTS_PER_RUN,) * 3 == (len(default.events), len(first.events), len(second.events))


def test_a_bare_call_inside_a_block_changes_the_default_but_not_the_block() -> None:
    """Inside a block the block wins; the bare call changes the default for everyone else."""
    block, changed = Recorder(), Recorder()

    with healjson.set_logger(block):
        healjson.set_logger(changed)
        _run_sync("inside")
    _run_sync("outside")

    assert (EVENTS_PER_RUN, EVENTS_PER_RUN) == (len(block.events), len(changed.events))


def test_a_bare_call_changes_the_default_for_other_threads() -> None:
    """Without `with`, set_logger is process-wide: a thread started later logs to it."""
    default = Recorder()
    healjson.set_logger(default)

    thread = threading.Thread(target=_run_sync, args=("thread",))
    thread.start()
    thread.join(timeout=30)

    assert EVENTS_PER_RUN == len(default.events)


def test_tasks_created_inside_a_block_inherit_it() -> None:
    """asyncio copies the context into new tasks, so a task started in a block logs to it."""
    block = Recorder()

    async def main() -> None:
        with healjson.set_logger(block):
            child = asyncio.create_task(_run_async("child"))
        await child

    asyncio.run(main())

    assert EVENTS_PER_RUN == len(block.events)
