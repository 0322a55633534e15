"""`healjson.ResponseCache`: where healed answers are kept between runs (SQLite by default).

The store only keeps bytes under keys; what a key and an entry mean, and why a hit is judged
again before it is served, is the run's business (`healjson._core.run.cache`). Any object with
`get(key) -> bytes | str | None` and `put(key, value)` can stand in for it (`ResponseStore`).

SQLite in WAL mode: any number of threads and processes read and write one file at once (a
connection per thread and process; a writer waits for the lock up to `timeout_s`); an entry
written is there for the next process. Writes are not synced to the disk (`synchronous=OFF`):
a power cut may lose the last entries (later misses), never the file's soundness.
`ResponseCache.memory()` keeps entries in this process only (a dict behind a lock), for tests
and short-lived programs.

A lookup that misses costs no SQLite statement: each cache object keeps the keys the file holds
in memory (`_KeyIndex`: their hashes, read once and then only the rows added since, at most every
`flush_every_s`), and asks the file only for a key it holds. A statement takes the file's locks
(system calls), and on the happy path every lookup misses.
"""

from __future__ import annotations

import atexit
import contextvars
import math
import os
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ._core.diagnostic import describe_exception
from ._core.observe.events import warn
from ._core.wire.effects import CacheStore

if TYPE_CHECKING:
    import sqlite3

__all__ = ["ResponseCache", "ResponseStore"]

# a rowid table: an entry (an answer, a kilobyte or more) is appended, and only its key goes into
# the key's index at a random place (a `WITHOUT ROWID` table, which earlier files have and which
# still work, rewrote a random page of whole entries per insert)
_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS responses "
    "(key TEXT PRIMARY KEY, value BLOB NOT NULL, stored_at REAL NOT NULL)"
)


_MAX_PENDING: Final = 10_000
"""Entries a cache object holds in memory while its file cannot be written (a locked or full
disk); past this many the oldest are dropped (later misses), so a store that never recovers
cannot grow the process without bound."""

_MAX_INDEXED: Final = 200_000
"""Keys a cache object keeps in memory (about 70 bytes each); past this many in the file, every
lookup asks the file."""


class _Process:
    """This process's id, kept up to date across `os.fork` (read per call: `os.getpid()` is a
    system call)."""

    pid = os.getpid()

    @classmethod
    def forked(cls) -> None:
        cls.pid = os.getpid()
        for cache in list(_LIVE):  # a lock another thread held at the fork is never released
            cache._forked()


if hasattr(os, "register_at_fork"):  # POSIX: a child learns its own id once, at the fork
    os.register_at_fork(after_in_child=_Process.forked)


ResponseStore = CacheStore
"""What a response cache needs of its store: `get(key) -> bytes | str | None` and
`put(key, value)` (bytes); `ResponseCache` is one, any object with the two methods another."""


class _KeyIndex:
    """The keys a cache file holds, as their hashes in a set: a key not in it is a miss without
    a statement. Read whole at the first lookup, then only the rows added since the last read
    (a rowid table appends), at most every `every_s`; a key this object puts is added at once.
    Its only error is a stale "no" for up to `every_s` after another process commits (a miss
    then: one more model call, never a wrong answer); a "yes" is checked in the file. Off
    (`hashes` None: every lookup asks the file) for a file of the earlier `WITHOUT ROWID` layout
    or one of more than `_MAX_INDEXED` entries."""

    __slots__ = ("due", "every_s", "hashes", "last", "lock", "rowid")

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.hashes: set[int] | None = set()
        self.rowid = 0  # the last row read, and its key's hash
        self.last = 0
        self.due = 0.0  # when to read the rows added since (`time.monotonic()`)
        self.lock = threading.Lock()

    def may_hold(self, key: str, connection: Callable[[], sqlite3.Connection]) -> bool:
        """False when the file cannot hold `key`; True when it may (or the index is off)."""
        if time.monotonic() >= self.due:
            self._read(connection())
        hashes = self.hashes
        return hashes is None or hash(key) in hashes

    def add(self, key: str) -> None:
        hashes = self.hashes
        if hashes is not None:
            hashes.add(hash(key))

    def _read(self, connection: sqlite3.Connection) -> None:
        with self.lock:
            if self.hashes is None or time.monotonic() < self.due:
                return  # off, or read by another thread meanwhile
            try:
                self.hashes = self._rows_since(connection, self.hashes)
            except Exception:  # no rowid (the earlier layout), or a file in trouble: ask it
                self.hashes = None
            # off for good: never read again (every lookup asks the file)
            self.due = math.inf if self.hashes is None else time.monotonic() + self.every_s

    def _rows_since(self, connection: sqlite3.Connection, hashes: set[int]) -> set[int] | None:
        """`hashes` with the rows added since the last read (None: past the bound)."""
        if self.rowid:  # the last row read is gone or another: rows went, read afresh
            row = connection.execute(
                "SELECT key FROM responses WHERE rowid = ?", (self.rowid,)
            ).fetchone()
            if row is None or hash(row[0]) != self.last:
                hashes, self.rowid = set(), 0
        if not self.rowid:  # a first read: a file past the bound is not read at all
            (top,) = connection.execute("SELECT max(rowid) FROM responses").fetchone()
            if (top or 0) > _MAX_INDEXED:
                return None
        rows = connection.execute(
            "SELECT rowid, key FROM responses WHERE rowid > ? ORDER BY rowid", (self.rowid,)
        )
        for rowid, key in rows:
            self.last = hash(key)
            hashes.add(self.last)
            self.rowid = rowid
            if len(hashes) > _MAX_INDEXED:  # grown past the bound
                return None
        return hashes


class ResponseCache:
    """A response cache in a SQLite file (`ResponseCache(path)`) or in memory
    (`ResponseCache.memory()`).

    Give it to `Healer(..., cache=)`, `wrap(client, cache=)`, `@heal(..., cache=)` or the
    command line's `--cache PATH`. Every entry is a healed answer as the model gave it (an
    answer the redactor would change is not kept), never a request: the keys are hashes.

    A `put` is seen at once by this object's `get` (in any thread); a writer thread commits the
    entries in batches, `flush_every_s` (0.05) after the first of each batch, so another
    process sees them after that, after `flush()` or `close()`, and at this process's exit (a
    child made with `os.fork` that ends with `os._exit` should `flush()` first). A cache object
    reads which keys the file holds at most every `flush_every_s` (a miss asks the file
    nothing), so an entry another process committed reaches it within that much more. `len()` counts
    the entries; `clear()` empties the cache; `close()` writes what is pending and closes this
    thread's connection.
    """

    blocking = True
    """The async driver reads and writes a blocking store on a worker thread."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout_s: float = 30.0,
        flush_every_s: float = 0.05,
    ) -> None:
        self.path: Path | None = Path(path)
        self.timeout_s = timeout_s
        self.flush_every_s = flush_every_s
        self._local = threading.local()
        self._memory: dict[str, bytes] | None = None
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._pending: dict[str, bytes] = {}
        self._wake: threading.Event | None = None
        self._pid = _Process.pid
        self._index: _KeyIndex | None = _KeyIndex(flush_every_s)
        self._trouble = _Trouble()
        self._connection()  # the file and its table exist from here on: a bad path fails now
        _LIVE.add(self)

    @classmethod
    def memory(cls) -> ResponseCache:
        """A cache in this process's memory only (safe across its threads)."""
        cache = cls.__new__(cls)
        cache.path = None
        cache.timeout_s = cache.flush_every_s = 0.0
        cache._local = threading.local()
        cache._memory = {}
        cache._lock = threading.Lock()
        cache._flushing = threading.Lock()
        cache._pending = {}
        cache._wake = None
        cache._pid = _Process.pid
        cache._index = None
        cache._trouble = _Trouble()
        cache.blocking = False  # a dict lookup: no need for a worker thread
        _LIVE.add(cache)  # for a fork: a lock another thread held is replaced in the child
        return cache

    def get(self, key: str) -> bytes | None:
        """The entry under `key`, or None."""
        if self._memory is not None:
            return self._memory.get(key)
        found = self._pending.get(key)  # written here, not yet committed (a dict read is atomic)
        if found is not None and self._pid == _Process.pid:
            return found
        index = self._index
        if index is not None and not index.may_hold(key, self._connection):
            return None
        row = (
            self._connection()
            .execute("SELECT value FROM responses WHERE key = ?", (key,))
            .fetchone()
        )
        return None if row is None else bytes(row[0])

    def put(self, key: str, value: bytes) -> None:
        """Keep `value` under `key` (committed by the writer thread, in a batch)."""
        if self._memory is not None:
            with self._lock:
                self._memory[key] = bytes(value)
            return
        if self._pid != _Process.pid:  # a forked child: the parent's pending entries are its own
            self._forked()
        with self._lock:
            pending = self._pending
            pending[key] = bytes(value)
            if len(pending) > _MAX_PENDING:  # the file has not taken a write for a long while
                del pending[next(iter(pending))]
                self._trouble.dropped += 1
            if self._index is not None:
                self._index.add(key)
            self._trouble.context = contextvars.copy_context()  # where a failure is reported
            wake = self._wake
            if wake is None:
                wake = self._wake = _start_writer(self)
        if not wake.is_set():  # set already: the writer has not taken the batch yet
            wake.set()

    def flush(self) -> None:
        """Commit every pending entry now."""
        if self._memory is not None or self._pid != _Process.pid:
            return
        with self._flushing:  # one batch at a time: an older one never lands after a newer one
            with self._lock:
                items = list(self._pending.items())
            if not items:
                return
            connection = self._connection()
            now = time.time()
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.executemany(
                    "INSERT OR REPLACE INTO responses (key, value, stored_at) VALUES (?, ?, ?)",
                    [(key, value, now) for key, value in items],
                )
                connection.execute("COMMIT")
            except BaseException:  # a failed COMMIT too: no transaction left open, no lock held
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
            with self._lock:
                for key, value in items:
                    if self._pending.get(key) is value:
                        del self._pending[key]

    def __len__(self) -> int:
        if self._memory is not None:
            return len(self._memory)
        self.flush()
        (count,) = self._connection().execute("SELECT count(*) FROM responses").fetchone()
        return int(count)

    def clear(self) -> None:
        """Remove every entry."""
        with self._flushing:  # no batch taken before the clear is written after it
            with self._lock:
                (self._memory if self._memory is not None else self._pending).clear()
            if self._memory is None:
                self._connection().execute("DELETE FROM responses")
                self._index = _KeyIndex(self.flush_every_s)

    def close(self) -> None:
        """Commit what is pending and close this thread's connection (a later use opens
        another)."""
        self.flush()
        found = getattr(self._local, "connection", None)
        if found is not None:
            self._local.connection = None
            found[1].close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = "memory" if self.path is None else str(self.path)
        return f"ResponseCache({where!r})"

    def _forked(self) -> None:
        """Start afresh in a forked child: its own lock, no pending entry, no writer yet."""
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._pending = {}
        self._wake = None
        self._pid = _Process.pid
        self._trouble = _Trouble()
        if self._index is not None:  # its keys are the file's still; its lock is new
            self._index.lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection in this process (a forked child opens its own)."""
        found: tuple[int, Any] | None = getattr(self._local, "connection", None)
        pid = _Process.pid
        if found is not None and found[0] == pid:
            connection: sqlite3.Connection = found[1]
            return connection
        import sqlite3  # only a program that uses a file cache pays for the import

        assert self.path is not None
        connection = sqlite3.connect(
            self.path, timeout=self.timeout_s, isolation_level=None, check_same_thread=False
        )
        connection.execute("PRAGMA journal_mode=WAL")
        # a cache: an entry a power cut loses is a miss later, never a wrong answer (WAL keeps
        # the file sound either way); no fsync on the happy path
        connection.execute("PRAGMA synchronous=OFF")
        connection.execute(_SCHEMA)
        self._local.connection = (pid, connection)
        return connection


_LIVE: weakref.WeakSet[ResponseCache] = weakref.WeakSet()


class _Trouble:
    """A file cache's failing writes, reported as `healjson.cache_error` (operation `write`)
    in the context of the last `put` (the run whose logger, or `capture_events()` block, hears
    it): once when a streak of failures begins, and once more when entries begin to be dropped
    (`_MAX_PENDING`); a write that succeeds ends the streak."""

    def __init__(self) -> None:
        self.context: contextvars.Context | None = None
        self.failing = False
        self.dropped = 0
        self.told_dropped = False

    def recovered(self) -> None:
        self.failing = self.told_dropped = False

    def failed(self, cache: ResponseCache, exc: Exception) -> None:
        if self.failing and (self.told_dropped or not self.dropped):
            return
        first = not self.failing
        self.failing = True
        if not first:
            self.told_dropped = True
        fields = {
            "operation": "write",
            "error": describe_exception(exc),
            "path": str(cache.path),
            "pending": len(cache._pending),
            "dropped": self.dropped,
        }
        context = self.context
        try:
            if context is None:
                warn("healjson.cache_error", **fields)
            else:
                context.run(warn, "healjson.cache_error", **fields)
        except Exception:  # a logger that fails: the writer goes on all the same
            return


def _start_writer(cache: ResponseCache) -> threading.Event:
    """The cache's writer thread: woken by a `put`, it waits `flush_every_s` for more, then
    commits them all in one transaction. It holds the cache weakly (and ends with it)."""
    wake = threading.Event()
    ref = weakref.ref(cache)

    def work() -> None:
        while True:
            wake.wait()
            found = ref()
            if found is None:
                return
            delay = found.flush_every_s
            del found
            time.sleep(delay)
            wake.clear()
            found = ref()
            if found is None:
                return
            try:
                found.flush()
            except Exception as exc:  # a locked or full disk: the entries stay pending, tried again
                found._trouble.failed(found, exc)
                wake.set()
                time.sleep(0.5)
            else:
                found._trouble.recovered()
            del found

    threading.Thread(target=work, name="healjson-cache-writer", daemon=True).start()
    return wake


@atexit.register
def _flush_all() -> None:
    """At exit, every live cache's pending entries are committed."""
    for cache in list(_LIVE):
        try:
            cache.flush()
        except Exception:  # exiting: a cache that cannot be written loses only misses
            continue
