"""A SQLite response cache whose file cannot be written (another process's long lock, a full
disk) says so: a `healjson.cache_error` event (operation `write`) in the run's own logger, once
per streak of failures and once more when entries begin to be dropped; what is pending is
written when the file takes writes again, is bounded meanwhile, and a failed write leaves no
transaction or lock behind."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

import healjson
from healjson import ResponseCache
from healjson import _response_cache as response_cache
from healjson.testing import ScriptedModel, capture_events


class Invoice(BaseModel):
    number: str
    total: int


def waited(done: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Whether `done()` became true within `seconds` (polled)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if done():
            return True
        time.sleep(0.02)
    return done()


def rows(path: Path) -> int:
    """The entries the file holds, read by another connection."""
    with sqlite3.connect(path, timeout=5) as connection:
        (count,) = connection.execute("SELECT count(*) FROM responses").fetchone()
    return int(count)


def test_a_locked_file_is_reported_and_written_once_it_is_free(tmp_path: Path) -> None:
    """Another connection holds the file's write lock: the healed run's own `capture_events`
    block hears `cache_error` (operation `write`, the path, one entry pending); once the lock
    is released the entry is in the file."""
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path, timeout_s=0.05, flush_every_s=0.01)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        healer = healjson.Healer(Invoice, cache=cache)
        with capture_events() as events:
            outcome = healer.run(ScriptedModel(['{"number": "A", "total": 1}']), "x")
            assert waited(lambda: any(e["event"] == "healjson.cache_error" for e in events))
            time.sleep(0.6)  # the writer retries meanwhile: still one event for the streak
        assert outcome.ok
        errors = [e for e in events if e["event"] == "healjson.cache_error"]
        assert 1 == len(errors)
        assert ("write", str(path), 1, 0) == (
            errors[0]["operation"],
            errors[0]["path"],
            errors[0]["pending"],
            errors[0]["dropped"],
        )
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert waited(lambda: rows(path) == 1)
    cache.close()


def test_pending_entries_are_bounded_and_the_drop_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the file refuses writes, at most `_MAX_PENDING` entries wait (the oldest dropped),
    and a second event says entries are being dropped; a lookup still finds the newest."""
    monkeypatch.setattr(response_cache, "_MAX_PENDING", 5)
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path, timeout_s=0.05, flush_every_s=0.01)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with capture_events() as events:
            cache.put("k0", b"v0")
            assert waited(lambda: any(e["event"] == "healjson.cache_error" for e in events))
            for n in range(1, 9):
                cache.put(f"k{n}", f"v{n}".encode())
            assert waited(lambda: len([e for e in events if e.get("dropped")]) == 1)
            assert len(cache._pending) <= 5
            assert b"v8" == cache.get("k8")
            assert cache.get("k0") is None  # dropped: a miss later, never a wrong answer
            dropped = next(e for e in events if e.get("dropped"))["dropped"]
        assert 4 == dropped
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert waited(lambda: rows(path) == 5)
    cache.close()


def test_a_write_that_fails_leaves_no_lock_behind(tmp_path: Path) -> None:
    """A write the file refuses part-way (full: `max_page_count` reached) is rolled back: the
    writer's connection holds no transaction, and another connection can write at once."""
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path, timeout_s=0.05)
    connection = cache._connection()
    (pages,) = connection.execute("PRAGMA page_count").fetchone()
    connection.execute(f"PRAGMA max_page_count = {pages + 1}")
    cache._pending["big"] = b"x" * 200_000  # more than one page more than the file may hold
    with pytest.raises(sqlite3.DatabaseError):
        cache.flush()
    assert not connection.in_transaction
    with sqlite3.connect(path, timeout=0.05) as other:
        other.execute("INSERT INTO responses VALUES ('o', x'00', 0)")
    assert 1 == rows(path)
