"""What the kill tests' victims run, in a child forked from the warm `zygote` process: a real
run of `healjson batch` or of a Batch API run, killed with SIGKILL from outside or by itself the
nth time the runner reports a phase (`on_event`)."""

from __future__ import annotations

import os
import signal
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

openai.OpenAI(api_key="k").files  # the SDK's resources, imported before forking  # noqa: B018


class Invoice(BaseModel):
    number: str
    total: int


def batch_command(args: list[str]) -> None:
    """`healjson batch ARGS` (exits with its exit code)."""
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
    client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    run_batch_api(
        source, out, client=client, model="m", response_model=Ticket,
        contracts=[urgent_summary_explains], policy=HealPolicy(max_attempts=3),
        poll_interval_s=0.01, on_event=_killer(phase, nth),
    )  # fmt: skip


def invoices_responses_batch_api(
    phase: str, nth: int, base_url: str, source: str, out: str
) -> None:
    """A Batch API run of invoices on `/v1/responses`, killed the nth time it reports `phase`."""
    run_batch_api(
        source, out, client=openai.OpenAI(base_url=base_url, api_key="k", max_retries=0),
        model="m", response_model=Invoice, endpoint="responses", poll_interval_s=0.01,
        on_event=_killer(phase, nth),
    )  # fmt: skip
