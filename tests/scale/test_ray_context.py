"""`healjson.ray`: a row's `context` column is its run's `context=` (pydantic's validation
context and the contracts' `ctx.extra`), for `HealBatch` and `HealReplies` alike; called here
directly on Arrow tables (the callables need no Ray cluster)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import openai
import pytest
from pydantic import BaseModel, ValidationInfo, field_validator

from healjson import ContractContext, HealPolicy
from healjson.testing import ScriptedServer

pa = pytest.importorskip("pyarrow")
from healjson.ray import HealBatch, HealReplies  # noqa: E402

SOURCE = "to be or not to be, that is the question"
QUOTES = {1: "not to be", 2: "to sleep, perchance", 3: "anything at all"}
"""What the model quotes for row N: from the source, invented, and for a row with no source."""
TENANTS: list[Any] = []


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
    TENANTS.append(ctx.extra.get("tenant"))


def _quote_for(prompt: str) -> str:
    number = int(re.search(r"row (\d+)", prompt).group(1))  # type: ignore[union-attr]
    return json.dumps({"quote": QUOTES[number]})


def _contexts(as_text: bool) -> list[Any]:
    given: list[Any] = [{"source": SOURCE, "tenant": "a"}, {"source": SOURCE, "tenant": "b"}, None]
    return [None if c is None else json.dumps(c) for c in given] if as_text else given


def _rows(table: Any) -> dict[Any, dict[str, Any]]:
    return {row["id"]: row for row in table.to_pylist()}


@pytest.mark.parametrize("as_text", [False, True], ids=["struct", "json text"])
def test_heal_replies_judges_each_row_under_its_context(as_text: bool) -> None:
    """`HealReplies` judges each row under its own `context` column, given as a struct or as JSON
    text."""
    TENANTS.clear()
    prompts = [f"Quote row {n}." for n in (1, 2, 3)]
    table = pa.table(
        {
            "id": [1, 2, 3],
            "prompt": prompts,
            "generated_text": [_quote_for(prompt) for prompt in prompts],
            "context": _contexts(as_text),
        }
    )
    post = HealReplies(Quote, contracts=[_tenant], policy=HealPolicy(max_attempts=2))
    rows = _rows(post(table))
    assert rows[1]["ok"]
    assert rows[2]["ok"] is None  # the invented quote is not healed: it needs a repair
    assert (
        "must be a quote from the source" in json.loads(rows[2]["repair_messages"])[-1]["content"]
    )
    assert rows[3]["ok"]
    assert ["a", None] == TENANTS


def test_heal_replies_a_context_that_is_not_an_object_is_invalid_input() -> None:
    """A row whose `context` is not an object is `invalid_input`, saying so."""
    table = pa.table(
        {"id": [1], "prompt": ["Quote row 1."], "generated_text": ["{}"], "context": ["[1, 2]"]}
    )
    (row,) = HealReplies(Quote)(table).to_pylist()
    assert "invalid_input" == row["reason"]
    assert "`context` must be an object" in row["errors"]


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    def answer(body: dict[str, Any]) -> str:
        return _quote_for(next(m["content"] for m in body["messages"] if m["role"] == "user"))

    with ScriptedServer([answer], repeat=True) as running:
        yield running


def test_heal_batch_heals_each_row_under_its_context(server: ScriptedServer) -> None:
    """`HealBatch` heals each row under its own context, and a context that is not JSON is
    `invalid_input`."""
    TENANTS.clear()

    def factory() -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)

    table = pa.table(
        {
            "id": [1, 2, 3, 4],
            "prompt": [f"Quote row {n}." for n in (1, 2, 3, 1)],
            "context": [*_contexts(True), "not json"],
        }
    )
    with HealBatch(
        factory,
        model="m",
        response_model=Quote,
        contracts=[_tenant],
        policy=HealPolicy(max_attempts=2),
    ) as heal:
        rows = _rows(heal(table))
    assert rows[1]["ok"]
    assert (False, "max_retries_exceeded") == (rows[2]["ok"], rows[2]["reason"])
    assert 2 == rows[2]["attempts"]
    assert rows[3]["ok"]
    assert "invalid_input" == rows[4]["reason"]
    # rows 1 and 3, each under its own context; and the golden example, checked once at the
    # first repair prompt (row 2's), under that row's context
    assert 3 == len(TENANTS)
    assert {"a", None, "b"} == set(TENANTS)


def test_heal_replies_never_writes_a_value_the_redactor_changed() -> None:
    """A healed value holding a credential shape is written as an `api_error` row (its `outcome`
    column saying the same), a plain one as it is."""
    shaped = "Bearer abcdefghijklmnopqrstuvwxyz0123456789"
    table = pa.table(
        {
            "id": [1, 2],
            "prompt": ["Quote row 1.", "Quote row 2."],
            "generated_text": [json.dumps({"quote": shaped}), json.dumps({"quote": "plain"})],
        }
    )
    rows = _rows(HealReplies(Quote, include_outcome=True)(table))
    assert (rows[1]["ok"], rows[1]["reason"], rows[1]["value"]) == (False, "api_error", None)
    assert "redaction" in rows[1]["errors"]
    assert json.loads(rows[1]["outcome"])["ok"] is False
    assert "abcdefghijklmnop" not in json.dumps(rows[1])
    assert (rows[2]["ok"], json.loads(rows[2]["value"])) == (True, {"quote": "plain"})
