"""The ledger of a Batch API run: one SQLite file that makes the run resumable and exactly-once.

It holds the run's settings, every row (its id, its request: messages, context and own parameters,
and the results of its model calls so far) and every batch part (which round, which rows, the
uploaded file, the batch id, how far it got). Each step of the run is one transaction, so a process
killed at any point leaves the ledger at a step boundary, and running the same command again
continues from there:

* a part is `planned` (its rows chosen, nothing sent), `uploaded` (its file id known),
  `submitting` (the create request may have been sent: the batch is looked up by its
  metadata before a new one is created), `submitted` (batch id known), `ended`, then
  `collected` (its results stored in the rows, in the same transaction);
* a row is `pending` until its outcome is written to the output file, then `done`; the output
  file is the record of what was written (a row whose id it already holds is never written
  again), so a kill between the write and the ledger's update writes nothing twice;
* a part the provider gave a final answer about (it does not know the batch, its results
  cannot be read) is `failed` (`cancelled` when a cancel found it unknown), its `status` the
  provider's answer (redacted), and its rows `lost`: they may have run and been billed, so
  they are sent again only when asked (`revive_lost`).

The engine is deterministic given a row's results, so a row's next request (or its outcome) is
rebuilt from them when needed (`healjson._core.run.replay`) instead of being stored.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from healjson._batch.request import Request

from .result_lines import Result

__all__ = ["LOST_MARK", "Ledger", "LedgerError", "NewRow", "Part", "Row"]

SCHEMA_VERSION: Final = 1
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    seq INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    ident TEXT NOT NULL,
    line INTEGER NOT NULL,
    messages TEXT NOT NULL,
    results TEXT NOT NULL DEFAULT '[]',
    part INTEGER,
    state TEXT NOT NULL DEFAULT 'pending',
    context TEXT,
    params TEXT
);
CREATE INDEX IF NOT EXISTS rows_by_part ON rows (part);
CREATE INDEX IF NOT EXISTS rows_by_state ON rows (state);
CREATE TABLE IF NOT EXISTS parts (
    id INTEGER PRIMARY KEY,
    round INTEGER NOT NULL,
    state TEXT NOT NULL,
    requests INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    token TEXT NOT NULL,
    file_id TEXT,
    batch_id TEXT,
    status TEXT,
    submitted_at REAL,
    ended_at REAL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    answered INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    cost REAL
);
"""
LOST_MARK: Final = "lost: "
"""How the status of a part whose rows are lost begins (then the provider's answer)."""
IN_FLIGHT: Final = ("planned", "uploaded", "submitting", "submitted", "ended")

NewRow = tuple[str, "str | int", int, Request]
"""An input row as `Ledger.add_rows` takes it: `(key, id, line, request)`."""


class LedgerError(Exception):
    """The ledger cannot be used for this run (another run's settings, a newer format, ...)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One input row as the ledger holds it."""

    seq: int
    key: str
    ident: str | int
    line: int
    messages: tuple[dict[str, Any], ...]
    results: tuple[Result, ...]
    part: int | None
    state: str
    context: dict[str, Any] | None = None
    """The row's `context` object (the run's `context=`), None when it has none."""
    params: dict[str, Any] = field(default_factory=dict)
    """The row's own model parameters (over the run's)."""

    @property
    def round(self) -> int:
        """The round of this row's next request: the number of results it has."""
        return len(self.results)


@dataclass(frozen=True, slots=True)
class Part:
    """One batch of one round."""

    id: int
    round: int
    state: str
    requests: int
    bytes: int
    token: str
    file_id: str | None
    batch_id: str | None
    status: str | None
    submitted_at: float | None
    prompt_tokens: int
    completion_tokens: int
    answered: int
    failed: int
    cost: float | None

    @property
    def lost(self) -> bool:
        """True for a part the provider gave a final answer about (`Ledger.lose`): nothing of
        it was read, its spend is unknown."""
        return (self.status or "").startswith(LOST_MARK)


class Ledger:
    """The SQLite ledger at `path` (created on first use)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        try:
            if read_only:
                uri = f"{path.resolve().as_uri()}?mode=ro"
                self.db = sqlite3.connect(uri, uri=True, isolation_level=None)
            else:
                self.db = sqlite3.connect(path, isolation_level=None)
                self.db.execute("PRAGMA synchronous=FULL")
                self.db.executescript(_SCHEMA)
                _add_columns(self.db)
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open the ledger {path}: {exc}") from exc
        self.db.row_factory = sqlite3.Row

    def close(self) -> None:
        self.db.close()

    # -- settings ---------------------------------------------------------------------------

    def settle(self, settings: Mapping[str, str]) -> None:
        """Record the run's settings, or check they are those it was started with."""
        stored = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        if not stored:
            with self.transaction():
                rows = [("schema", str(SCHEMA_VERSION)), *settings.items()]
                self.db.executemany("INSERT INTO meta VALUES (?, ?)", rows)
            return
        if stored.get("schema") != str(SCHEMA_VERSION):
            raise LedgerError(f"{self.path} was written by another healjson version")
        changed = [k for k, v in settings.items() if k in stored and stored[k] != v]
        if changed:
            was = ", ".join(f"{k}={stored[k]!r} (now {settings[k]!r})" for k in changed)
            raise LedgerError(
                f"{self.path} belongs to a run with other settings: {was}; use the same "
                "settings to resume it, or another --ledger for a new run"
            )

    def meta(self, key: str) -> str | None:
        found = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if found is None else str(found[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- rows -------------------------------------------------------------------------------

    def add_rows(self, rows: Sequence[NewRow]) -> None:
        """Add input rows `(key, id, line, request)` (a key already there is kept as it is)."""
        with self.transaction():
            self.db.executemany(
                "INSERT OR IGNORE INTO rows (key, ident, line, messages, context, params) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        key,
                        json.dumps(ident),
                        line,
                        json.dumps(list(request.messages), ensure_ascii=False),
                        _text(request.context),
                        _text(request.params or None),
                    )
                    for key, ident, line, request in rows
                ],
            )

    def rows(self, where: str = "", args: Sequence[Any] = ()) -> Iterator[Row]:
        query = "SELECT * FROM rows" + (f" WHERE {where}" if where else "") + " ORDER BY seq"
        for found in self.db.execute(query, tuple(args)).fetchall():
            yield _row(found)

    def seqs(self, part_id: int) -> set[int]:
        """The seqs of the rows in part `part_id` (nothing else of them read)."""
        found = self.db.execute("SELECT seq FROM rows WHERE part = ?", (part_id,))
        return {int(seq) for (seq,) in found}

    def unassigned(self, chunk: int) -> Iterator[list[Row]]:
        """Pending rows with no request in flight (each needs a decision: an outcome, or a
        request in a part), `chunk` at a time in `seq` order; a row changed between two chunks
        is not seen again."""
        last = 0
        while True:
            found = self.db.execute(
                "SELECT * FROM rows WHERE state = 'pending' AND part IS NULL AND seq > ? "
                "ORDER BY seq LIMIT ?",
                (last, chunk),
            ).fetchall()
            if not found:
                return
            rows = [_row(item) for item in found]
            last = rows[-1].seq
            yield rows

    def keys(self) -> set[str]:
        """The id keys of every row."""
        return {str(key) for (key,) in self.db.execute("SELECT key FROM rows")}

    def line_of(self, key: str) -> int | None:
        """The input line of the row with id key `key`, or None."""
        found = self.db.execute("SELECT line FROM rows WHERE key = ?", (key,)).fetchone()
        return None if found is None else int(found[0])

    def mark_done(self, seqs: Sequence[int]) -> None:
        with self.transaction():
            self.db.executemany(
                "UPDATE rows SET state = 'done' WHERE seq = ?", [(s,) for s in seqs]
            )

    def lose(self, part: Part, said: str, *, state: str = "failed") -> int:
        """Close `part` as `state` with the provider's answer `said` (redacted) as its status, and
        mark its rows `lost` (no result stored), in one transaction; how many rows."""
        with self.transaction():
            found = self.db.execute(
                "UPDATE rows SET state = 'lost', part = NULL WHERE part = ? AND state = 'pending'",
                (part.id,),
            )
            self.db.execute(
                "UPDATE parts SET state = ?, status = ?, ended_at = ? WHERE id = ?",
                (state, LOST_MARK + said, time.time(), part.id),
            )
        return int(found.rowcount)

    def revive_lost(self) -> int:
        """Make every `lost` row pending again (its request goes into a later part); how many."""
        with self.transaction():
            found = self.db.execute("UPDATE rows SET state = 'pending' WHERE state = 'lost'")
        return int(found.rowcount)

    def counts(self) -> dict[str, int]:
        found = self.db.execute("SELECT state, COUNT(*) FROM rows GROUP BY state").fetchall()
        return {str(state): int(count) for state, count in found}

    # -- parts ------------------------------------------------------------------------------

    def plan(
        self, round_: int, groups: Sequence[tuple[Sequence[int], int]], token: str
    ) -> list[int]:
        """New parts for `round_`, one per group of `(row seqs, bytes)`, in one transaction."""
        ids: list[int] = []
        with self.transaction():
            for seqs, size in groups:
                cursor = self.db.execute(
                    "INSERT INTO parts (round, state, requests, bytes, token) "
                    "VALUES (?, 'planned', ?, ?, ?)",
                    (round_, len(seqs), size, token),
                )
                part = int(cursor.lastrowid or 0)
                self.db.executemany(
                    "UPDATE rows SET part = ? WHERE seq = ?", [(part, seq) for seq in seqs]
                )
                ids.append(part)
        return ids

    def parts(self, where: str = "", args: Sequence[Any] = ()) -> list[Part]:
        query = "SELECT * FROM parts" + (f" WHERE {where}" if where else "") + " ORDER BY id"
        return [_part(found) for found in self.db.execute(query, tuple(args)).fetchall()]

    def part(self, part_id: int) -> Part:
        (found,) = self.parts("id = ?", (part_id,))
        return found

    def in_flight(self) -> list[Part]:
        marks = ", ".join("?" * len(IN_FLIGHT))
        return self.parts(f"state IN ({marks})", IN_FLIGHT)

    def update_part(self, part_id: int, **fields: Any) -> None:
        names = ", ".join(f"{name} = ?" for name in fields)
        with self.transaction():
            self.db.execute(f"UPDATE parts SET {names} WHERE id = ?", (*fields.values(), part_id))

    def collect(
        self,
        part: Part,
        results: Mapping[int, Result],
        usage: tuple[int, int, float | None],
        *,
        state: str = "collected",
    ) -> None:
        """Store a part's results in its rows and close the part, in one transaction. A row
        without a result is freed (its request goes into a later part); a row that already has
        this round's result (collected before) is left as it is."""
        with self.transaction():
            for row in self.rows("part = ?", (part.id,)):
                result = results.get(row.seq)
                if result is not None and row.round == part.round:
                    stored = [r.to_json() for r in (*row.results, result)]
                    self.db.execute(
                        "UPDATE rows SET results = ?, part = NULL WHERE seq = ?",
                        (json.dumps(stored, ensure_ascii=False), row.seq),
                    )
                else:
                    self.db.execute("UPDATE rows SET part = NULL WHERE seq = ?", (row.seq,))
            prompt, completion, cost = usage
            failed = sum(1 for result in results.values() if result.body is None)
            self.db.execute(
                "UPDATE parts SET state = ?, ended_at = ?, prompt_tokens = ?, "
                "completion_tokens = ?, answered = ?, failed = ?, cost = ? WHERE id = ?",
                (state, time.time(), prompt, completion, len(results), failed, cost, part.id),
            )

    # -- transactions -----------------------------------------------------------------------

    def transaction(self) -> _Transaction:
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _add_columns(db: sqlite3.Connection) -> None:
    """A ledger begun before rows had a context (or their own parameters) gets the column (its
    rows have none)."""
    columns = {str(info[1]) for info in db.execute("PRAGMA table_info(rows)").fetchall()}
    for name in ("context", "params"):
        if name not in columns:
            db.execute(f"ALTER TABLE rows ADD COLUMN {name} TEXT")


def _text(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _row(found: sqlite3.Row) -> Row:
    results = tuple(Result.from_json(item) for item in json.loads(found["results"]))
    ident = json.loads(found["ident"])
    names = found.keys()
    context = found["context"] if "context" in names else None
    params = found["params"] if "params" in names else None
    return Row(
        found["seq"],
        found["key"],
        ident,
        found["line"],
        tuple(json.loads(found["messages"])),
        results,
        found["part"],
        found["state"],
        None if context is None else json.loads(context),
        {} if params is None else json.loads(params),
    )


def _part(found: sqlite3.Row) -> Part:
    return Part(**{name: found[name] for name in Part.__slots__})
