"""A DBOS worker for the durable-step tests, run as its own process: `python dbos_worker.py MODE
DATABASE BASE_URL OUT`. MODE `start` starts the workflow over 20 rows (it may be killed
mid-run); `resume` launches DBOS on the same system database, which recovers the pending
workflow, waits for its result and writes it to OUT as JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

import openai
from dbos import DBOS, SetWorkflowID
from pydantic import BaseModel

import healjson
from healjson.dbos import healed_step

WORKFLOW_ID = "heal-20-rows"
ROWS = 20


class Row(BaseModel):
    row: int
    value: int


healer = healjson.Healer(Row)
_client: list[Any] = []


def call(messages: list[dict[str, Any]], **params: Any) -> Any:
    """The model call: the real openai SDK against the scripted server."""
    return _client[0].chat.completions.create(messages=messages, **params)


step = healed_step(healer, call, retry_interval_s=0.05, retries=4)


@DBOS.workflow()
def heal_rows(count: int) -> list[list[Any]]:
    """Every row healed, each model call a step; what became of each row."""
    results = []
    for row in range(count):
        outcome = step([{"role": "user", "content": f"row {row}"}], model="m")
        value = outcome.value.value if outcome.ok else None
        reason = None if outcome.ok else str(outcome.reason)
        results.append([row, outcome.ok, reason, value, outcome.calls])
    return results


def main(mode: str, database: str, base_url: str, out: str) -> None:
    _client.append(openai.OpenAI(base_url=base_url, api_key="test", max_retries=0, timeout=30))
    DBOS(
        config={
            "name": "healjson-durable-test",
            "system_database_url": f"sqlite:///{database}",
            "application_version": "healjson-test-1",
            "log_level": "ERROR",
        }
    )
    DBOS.launch()
    if mode == "start":
        with SetWorkflowID(WORKFLOW_ID):
            handle = DBOS.start_workflow(heal_rows, ROWS)
    else:
        handle = DBOS.retrieve_workflow(WORKFLOW_ID)
    result = handle.get_result()
    with open(out, "w", encoding="utf-8") as file:
        json.dump(result, file)
    DBOS.destroy()


if __name__ == "__main__":
    main(*sys.argv[1:5])
