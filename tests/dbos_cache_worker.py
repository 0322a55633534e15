"""A DBOS worker for the response-cache kill test, run as its own process: `python
dbos_cache_worker.py MODE DATABASE CACHE OUT`. Its workflow heals rows A and B through a healer
with a response cache (each call appended to OUT + ".calls"); MODE `start` starts it and dies
(`os._exit`) while row B's repair is in flight, after row A's answer was committed to the cache;
`resume` launches DBOS on the same system database, which recovers the workflow, and writes its
result to OUT as JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID
from pydantic import BaseModel

import healjson
from healjson.dbos import healed_step

WORKFLOW_ID = "heal-rows-with-a-cache"


class Row(BaseModel):
    row: str
    value: int


def main(mode: str, database: str, cache: str, out: str) -> None:
    store = healjson.ResponseCache(cache)
    calls = Path(out + ".calls")

    def call(messages: list[dict[str, Any]], **params: Any) -> str:
        """Row A answers at once; row B's first answer lacks `value`, its repair answers (and
        kills the first process, once A's cache entry is committed)."""
        row = messages[0]["content"]
        repair = any(message["role"] == "assistant" for message in messages)
        with calls.open("a", encoding="utf-8") as log:
            log.write(f"{mode} {row} {'repair' if repair else 'first'}\n")
        if row == "A":
            return '{"row": "A", "value": 1}'
        if not repair:
            return '{"row": "B"}'
        if mode == "start":
            store.flush()
            time.sleep(0.1)
            os._exit(9)
        return '{"row": "B", "value": 2}'

    step = healed_step(healjson.Healer(Row, cache=store), call, retries=1)

    @DBOS.workflow()
    def rows() -> list[list[Any]]:
        found = []
        for row in ("A", "B"):
            outcome = step([{"role": "user", "content": row}], model="m")
            value = outcome.value.model_dump() if outcome.ok else str(outcome.reason)
            found.append([row, outcome.ok, value])
        return found

    DBOS(
        config={
            "name": "healjson-cache-kill-test",
            "system_database_url": f"sqlite:///{database}",
            "application_version": "healjson-test-1",
            "log_level": "ERROR",
        }
    )
    DBOS.launch()
    if mode == "start":
        with SetWorkflowID(WORKFLOW_ID):
            handle = DBOS.start_workflow(rows)
    else:
        handle = DBOS.retrieve_workflow(WORKFLOW_ID)
    Path(out).write_text(json.dumps(handle.get_result()), encoding="utf-8")
    DBOS.destroy()


if __name__ == "__main__":
    main(*sys.argv[1:5])
