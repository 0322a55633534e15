"""A batch row's `context` object is its run's `context=`: the contracts' `ctx.extra` and
pydantic's validation context, in `healjson batch` and in a Batch API run alike (kept in the
ledger across rounds). A `context` that is not an object is an `invalid_input` row."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel, ValidationInfo, field_validator

import healjson
from healjson import ContractContext, HealPolicy
from healjson._batch.api.ledger import Ledger
from healjson._batch.run import Batch, openai_healer
from healjson.batch_api import default_ledger, run_batch_api
from healjson.testing import ScriptedServer
from sdk_calls import TLS as _SSL

SOURCE = "to be or not to be, that is the question"
QUOTES = {1: "not to be", 2: "to sleep, perchance", 3: "anything at all"}
"""What the model quotes for row N: row 1 from the source, row 2 invented, row 3 has no
source to check against."""
POLICY = HealPolicy(max_attempts=2)
EXTRAS: list[Any] = []


class Quote(BaseModel):
    quote: str

    @field_validator("quote")
    @classmethod
    def _from_the_source(cls, value: str, info: ValidationInfo) -> str:
        source = info.context.get("source") if isinstance(info.context, Mapping) else None
        if isinstance(source, str) and value not in source:
            raise ValueError("must be a quote from the source, word for word")
        return value


def _tenant(value: Quote, ctx: ContractContext) -> None:
    EXTRAS.append(dict(ctx.extra))


def _answer(messages: list[dict[str, Any]]) -> str:
    number = int(re.search(r"row (\d+)", messages[0]["content"]).group(1))  # type: ignore[union-attr]
    return json.dumps({"quote": QUOTES[number]})


def _input(path: Path) -> Path:
    lines = [
        {"id": "r1", "prompt": "Quote row 1.", "context": {"source": SOURCE, "tenant": "a"}},
        {"id": "r2", "prompt": "Quote row 2.", "context": {"source": SOURCE, "tenant": "b"}},
        {"id": "r3", "prompt": "Quote row 3."},
        {"id": "r4", "prompt": "Quote row 1.", "context": ["not", "an", "object"]},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def _rows(out: Path) -> dict[str, dict[str, Any]]:
    found = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {row["id"]: row for row in found}


def _check(rows: dict[str, dict[str, Any]]) -> None:
    assert rows["r1"]["ok"]
    assert {"quote": "not to be"} == rows["r1"]["value"]
    assert not rows["r2"]["ok"]  # the invented quote never heals under its row's source
    assert "must be a quote from the source" in json.dumps(rows["r2"]["errors"])
    assert rows["r3"]["ok"]
    assert "invalid_input" == rows["r4"]["reason"]
    assert "`context` must be an object" in rows["r4"]["errors"][0]["constraint"]
    # the contracts ran on the rows that passed the schema, each under its own row's context,
    # and once on the golden example, at the first repair prompt (r2's), under r2's context
    assert {"a", None, "b"} == {extra.get("tenant") for extra in EXTRAS}


def test_healjson_batch_heals_each_row_under_its_context(tmp_path: Path) -> None:
    """`healjson batch` heals each row under its own `context` object."""
    EXTRAS.clear()
    source, out = _input(tmp_path / "in.jsonl"), tmp_path / "out.jsonl"
    with ScriptedServer([lambda body: _answer(body["messages"])], repeat=True) as server:

        async def main() -> None:
            sdk = openai.AsyncOpenAI(
                base_url=server.base_url,
                api_key="test",
                max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(verify=_SSL),
            )
            async with sdk:
                heal = openai_healer(
                    healjson.wrap(sdk),
                    model="m",
                    response_model=Quote,
                    contracts=(_tenant,),
                    policy=POLICY,
                )
                with Batch.open(source, out) as batch:
                    await batch.run(heal, concurrency=2)

        asyncio.run(main())
    _check(_rows(out))


def test_a_batch_api_run_heals_each_row_under_its_context(tmp_path: Path) -> None:
    """A Batch API run heals each row under its own `context` object."""
    EXTRAS.clear()
    source, out = _input(tmp_path / "in.jsonl"), tmp_path / "out.jsonl"
    answer = ScriptedServer(batch_replies=lambda custom_id, body: _answer(body["messages"]))
    with (
        answer as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
    ):
        report = run_batch_api(
            source,
            out,
            client=client,
            model="m",
            response_model=Quote,
            contracts=[_tenant],
            policy=POLICY,
            poll_interval_s=0.0,
        )
        assert report.complete
        assert 2 == len(server.batches)  # row 2 was asked again, under its own context
    _check(_rows(out))
    ledger = Ledger(default_ledger(out), read_only=True)
    try:
        contexts = {row.ident: row.context for row in ledger.rows()}
    finally:
        ledger.close()
    assert {"source": SOURCE, "tenant": "b"} == contexts["r2"]
    assert contexts["r3"] is None


def test_a_ledger_begun_before_rows_had_a_context_is_resumed(tmp_path: Path) -> None:
    """Its rows had none (nor their own parameters); the columns are added when it is opened,
    and new rows keep theirs."""
    import sqlite3

    from healjson._batch.api import ledger as ledger_module
    from healjson._batch.request import Request

    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old_schema = ledger_module._SCHEMA.replace(",\n    context TEXT,\n    params TEXT", "")
    assert old_schema != ledger_module._SCHEMA
    old.executescript(old_schema)
    old.execute("INSERT INTO rows (key, ident, line, messages) VALUES ('k1', '1', 1, '[]')")
    old.commit()
    old.close()
    ledger = Ledger(path)
    try:
        request = Request(({"role": "user", "content": "x"},), {"source": "s"}, {"top_p": 0.5})
        ledger.add_rows([("k2", 2, 2, request)])
        found = {row.key: (row.context, row.params) for row in ledger.rows()}
    finally:
        ledger.close()
    assert {"k1": (None, {}), "k2": ({"source": "s"}, {"top_p": 0.5})} == found
