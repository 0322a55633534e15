"""What the kill tests' victims run, in a child forked from the warm `zygote` process: a real
run of `healjson batch` or of a Batch API run, killed with SIGKILL from outside or by itself the
nth time the runner reports a phase (`on_event`).

A victim does not wait for its writes to reach the disk (`_no_fsync`): a SIGKILL leaves the
kernel's page cache whole, so the next run reads every byte the killed one wrote, in the order
it wrote them, with or without fsync. fsync guards against a power cut, which no test here can
stage; waiting for it (~150 per Batch API run, mostly SQLite's) was most of a victim's time."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel

from healjson import HealPolicy
from healjson._cli.app import app
from healjson.batch_api import run_batch_api

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "cli"))
from ticket_pack import Ticket, urgent_summary_explains

from sdk_calls import TLS as _SSL

openai.OpenAI(api_key="k").files  # the SDK's resources, imported before forking  # noqa: B018


def _client(base_url: str) -> openai.OpenAI:
    http = openai.DefaultHttpxClient(verify=_SSL)
    return openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, http_client=http)


class Invoice(BaseModel):
    number: str
    total: int


class _Unsynced(sqlite3.Connection):
    """A connection whose `PRAGMA synchronous` is always OFF (whatever the ledger asks)."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if sql.replace(" ", "").lower().startswith("pragmasynchronous="):
            sql = "PRAGMA synchronous=OFF"
        return super().execute(sql, parameters)


def _no_fsync() -> None:
    """In this victim (a forked child, which ends with its run): no fsync, no SQLite sync."""
    connect = sqlite3.connect

    def unsynced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return connect(*args, **kwargs, factory=_Unsynced)

    sqlite3.connect = unsynced  # type: ignore[assignment]
    os.fsync = lambda fd: None


def batch_command(args: list[str]) -> None:
    """`healjson batch ARGS` (exits with its exit code)."""
    _no_fsync()
    app(args, prog_name="healjson")


def _killer(phase: str, nth: int) -> Any:
    seen = {"n": 0}

    def on_event(name: str, info: Mapping[str, Any]) -> None:
        if name == phase:
            seen["n"] += 1
            if seen["n"] == nth:
                os.kill(os.getpid(), signal.SIGKILL)

    return on_event


def tickets_batch_api(phase: str, nth: int, base_url: str, source: str, out: str) -> None:
    """A Batch API run of tickets (chat lines), killed the nth time it reports `phase`."""
    _no_fsync()
    run_batch_api(
        source, out, client=_client(base_url), model="m", response_model=Ticket,
        contracts=[urgent_summary_explains], policy=HealPolicy(max_attempts=3),
        poll_interval_s=0.01, on_event=_killer(phase, nth),
    )  # fmt: skip


def invoices_responses_batch_api(
    phase: str, nth: int, base_url: str, source: str, out: str
) -> None:
    """A Batch API run of invoices on `/v1/responses`, killed the nth time it reports `phase`."""
    _no_fsync()
    run_batch_api(
        source, out, client=_client(base_url), model="m", response_model=Invoice,
        endpoint="responses", poll_interval_s=0.01, on_event=_killer(phase, nth),
    )  # fmt: skip
