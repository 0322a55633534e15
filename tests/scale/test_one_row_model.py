"""One input file means the same requests whichever runner reads it: `healjson batch` (one
process, the endpoint called directly), `healjson batch --batch-api` (`run_batch_api`: the
provider's Batch API in rounds) and `healjson.ray` (`HealBatch` on a local Ray instance, the
file read by `ray.data.read_json`, so its rows arrive as Arrow rows: absent fields and struct
keys as nulls, integers in a float column as floats).

Every runner talks over real HTTP to a `ScriptedServer`; the requests each server received are
compared row by row: the same messages (a repair request included: one row's `context` makes
its first answer break a contract) and the same parameters.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import ContractContext, HealPolicy, Violation, contract
from healjson._batch.run import Batch, openai_healer
from healjson.batch_api import run_batch_api
from healjson.testing import ScriptedReply, ScriptedServer

# Ray warns about its own settings when it builds its DataContext (not about healjson's use)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")

MODEL = "scripted-model"
POLICY = HealPolicy(max_attempts=2)

LINES: list[dict[str, Any]] = [
    {"id": "messages", "messages": [{"role": "user", "content": "doc 1"}]},
    {"id": "prompt", "prompt": "doc 2"},
    {"id": "system", "system": "You read documents.", "prompt": "doc 3"},
    {"id": "params", "prompt": "doc 4", "temperature": 0, "max_tokens": 300, "top_p": 1},
    {"id": "context", "prompt": "doc 5", "context": {"expect": 55, "note": None}},
    {"id": "unicode", "system": "Réponds en JSON ✓", "prompt": "doc 6: Grüße, 東京 — 🚀"},
    {
        "id": "nulls and both",
        "messages": [
            {"role": "system", "content": "Be brief.", "name": None},
            {"role": "user", "content": "doc 7", "name": "ana"},
        ],
        "prompt": "not sent: a row's messages win over its prompt",
        "system": None,
        "temperature": 0.25,
    },
    {"id": "blank prompt", "prompt": "   "},
    {"id": "bad max_tokens", "prompt": "doc 9", "max_tokens": -1},
    {"id": "bad system", "prompt": "doc 10", "system": ""},
]
SENT = {"messages", "prompt", "system", "params", "context", "unicode", "nulls and both"}
INVALID = {"blank prompt", "bad max_tokens", "bad system"}


class Doc(BaseModel):
    doc: int
    title: str


@contract
def as_expected(value: Doc, ctx: ContractContext) -> Violation | None:
    """The row's context may say which document it expects."""
    expect = ctx.extra.get("expect")
    if expect is not None and value.doc != expect:
        return Violation(f"`doc` must be {expect}")
    return None


def answer(messages: list[dict[str, Any]]) -> ScriptedReply:
    """Document N's value; after a repair prompt, the document the repair asks for."""
    users = [m["content"] for m in messages if m["role"] == "user"]
    found = re.search(r"doc (\d+)", users[0])
    assert found is not None, users
    number = int(found.group(1))
    if any(m["role"] == "assistant" for m in messages):
        asked = re.search(r"must be (\d+)", users[-1])
        number = int(asked.group(1)) if asked else number
    return ScriptedReply(content=json.dumps({"doc": number, "title": f"Doc {number}"}))


def chat_reply(body: dict[str, Any]) -> ScriptedReply:
    return answer(body["messages"])


def batch_reply(custom_id: str, body: dict[str, Any]) -> ScriptedReply:
    return answer(body["messages"])


class Factory:
    """The client of a `HealBatch` actor, built there."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def __call__(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key="sk-local", base_url=self.base_url, max_retries=0)


def by_row(bodies: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The request bodies by the document of their first user turn, each row's in order."""
    found: dict[int, list[dict[str, Any]]] = {}
    for body in bodies:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        number = int(re.search(r"doc (\d+)", users[0]).group(1))  # type: ignore[union-attr]
        found.setdefault(number, []).append(body)
    for requests in found.values():
        requests.sort(key=lambda body: len(body["messages"]))  # the first call, then repairs
    return found


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("one-row-model") / "in.jsonl"
    text = "\n".join(json.dumps(line, ensure_ascii=False) for line in LINES) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def run_direct(source: Path, out: Path) -> tuple[dict[int, list[dict[str, Any]]], dict[str, Any]]:
    """`healjson batch`: the rows and the requests the endpoint received."""
    with ScriptedServer([chat_reply], repeat=True) as server:

        async def run() -> None:
            raw = openai.AsyncOpenAI(api_key="sk-local", base_url=server.base_url, max_retries=0)
            async with raw:
                heal = openai_healer(
                    healjson.wrap(raw),
                    model=MODEL,
                    response_model=Doc,
                    contracts=(as_expected,),
                    policy=POLICY,
                )
                with Batch.open(source, out) as batch:
                    await batch.run(heal, concurrency=4)

        asyncio.run(run())
        bodies = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    return by_row([body for body in bodies if body is not None]), _rows(out)


def run_batch_api_rounds(
    source: Path, out: Path
) -> tuple[dict[int, list[dict[str, Any]]], dict[str, Any]]:
    """`healjson batch --batch-api`: the rows and every batch line's body."""
    with ScriptedServer(batch_replies=batch_reply) as server:
        client = openai.OpenAI(api_key="sk-local", base_url=server.base_url, max_retries=0)
        with client:
            report = run_batch_api(
                source,
                out,
                client=client,
                model=MODEL,
                response_model=Doc,
                contracts=[as_expected],
                policy=POLICY,
                poll_interval_s=0.0,
            )
        assert report.complete
        bodies = [body for batch in server.batches for body in batch.requests]
    return by_row(bodies), _rows(out)


def run_ray(source: Path) -> tuple[dict[int, list[dict[str, Any]]], dict[str, Any]]:
    """`healjson.ray.HealBatch` over `ray.data.read_json`: the rows and the requests."""
    import ray.data

    from healjson.ray import HealBatch

    with ScriptedServer([chat_reply], repeat=True) as server:
        healed = ray.data.read_json(str(source)).map_batches(
            HealBatch,
            fn_constructor_kwargs={
                "client_factory": Factory(server.base_url),
                "model": MODEL,
                "response_model": Doc,
                "contracts": [as_expected],
                "policy": POLICY,
                "concurrency": 4,
            },
            compute=ray.data.ActorPoolStrategy(size=1),
            num_cpus=0.5,
            batch_format="pyarrow",
        )
        out = {row["id"]: row for row in healed.take_all()}
        bodies = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    return by_row([body for body in bodies if body is not None]), out


def _rows(path: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["id"]: row for row in rows}


def _sent(body: dict[str, Any]) -> dict[str, Any]:
    """What a request asks for: its messages and parameters (everything but transport)."""
    return {key: value for key, value in body.items() if key != "stream"}


@pytest.mark.slow
@pytest.mark.usefixtures("ray_module")
def test_one_input_file_means_the_same_requests_in_every_runner(
    source: Path, tmp_path: Path
) -> None:
    """One input file gives the same requests row by row through `healjson batch`, the Batch API
    runner and `healjson.ray`."""
    direct, direct_rows = run_direct(source, tmp_path / "direct.jsonl")
    batched, batched_rows = run_batch_api_rounds(source, tmp_path / "batch-api.jsonl")
    rayed, ray_rows = run_ray(source)

    # the same requests, row by row (the context row's repair request included)
    assert direct.keys() == {1, 2, 3, 4, 5, 6, 7}
    assert 2 == len(direct[5])  # its context made the first answer break the contract
    for number, requests in direct.items():
        expected = [_sent(body) for body in requests]
        assert expected == [_sent(body) for body in batched[number]], number
        assert expected == [_sent(body) for body in rayed[number]], number
    assert batched.keys() == rayed.keys() == direct.keys()

    # what the reader made of the lines
    first = {number: requests[0] for number, requests in direct.items()}
    assert [{"role": "system", "content": "You read documents."}] == first[3]["messages"][:1]
    assert (0.0, 300, 1.0) == tuple(first[4][k] for k in ("temperature", "max_tokens", "top_p"))
    assert isinstance(first[4]["temperature"], float)
    assert "Grüße, 東京 — 🚀" in first[6]["messages"][-1]["content"]
    assert "Réponds en JSON ✓" in first[6]["messages"][0]["content"]
    assert 0.25 == first[7]["temperature"]
    assert {"role": "user", "content": "doc 7", "name": "ana"} == first[7]["messages"][-1]
    assert "name" not in first[7]["messages"][0]  # the null-valued key dropped
    assert all("not sent" not in json.dumps(body) for body in first.values())
    assert all("temperature" not in first[n] for n in (1, 2, 3, 5, 6))

    # the same rows: healed, or refused as invalid input, in all three
    for rows in (direct_rows, batched_rows, ray_rows):
        assert SENT | INVALID == rows.keys()
        assert all(rows[key]["ok"] is True for key in SENT)
        assert {"invalid_input"} == {rows[key]["reason"] for key in INVALID}
        assert 2 == rows["context"]["attempts"]
    problems = {
        key: json.loads(ray_rows[key]["errors"])[0]["constraint"] for key in sorted(INVALID)
    }
    for key, problem in problems.items():
        assert problem in direct_rows[key]["errors"][0]["constraint"], key
        assert problem in batched_rows[key]["errors"][0]["constraint"], key


# -- the reader itself: a row read from JSON and from Arrow is the same request -------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", ""]), "content": _TEXT},
    optional={"name": st.none() | _TEXT},
)
# an Arrow column holds 64-bit integers: a larger one never reaches a Ray row
_INT64 = st.integers(-(2**63), 2**63 - 1)
_ROW = st.fixed_dictionaries(
    {},
    optional={
        "messages": st.none() | st.lists(_MESSAGE, max_size=3),
        "prompt": st.none() | _TEXT,
        "system": st.none() | _TEXT,
        "context": st.none()
        | st.fixed_dictionaries({}, optional={"tenant": _TEXT, "limit": st.none() | _INT64}),
        "temperature": st.none() | st.integers(-1, 2) | st.floats(0, 2),
        "top_p": st.none() | st.floats(0, 1),
        "max_tokens": st.none() | st.integers(-2, 5000),
    },
)


@settings(max_examples=12, deadline=None)
@given(rows=st.lists(_ROW, min_size=1, max_size=6))
@example(rows=[{"prompt": "a", "context": {"limit": 2**53 + 1}}, {"prompt": "b", "context": {}}])
def test_a_row_means_one_request_read_from_json_or_from_arrow(rows: list[dict[str, Any]]) -> None:
    """Each row of a JSON Lines file and the same row as Ray Data hands it over (Arrow: every
    field and struct key of any row present in each, as null when absent; integers in a float
    column as floats; and as pandas or numpy batches) read into the same request, or the same
    problem."""
    pa = pytest.importorskip("pyarrow")
    from ray.data.block import BlockAccessor

    from healjson._batch.request import read_request
    from healjson._ray_rows import Columns, request_fields

    rows = [{"id": n, **row} for n, row in enumerate(rows)]  # a file's rows have some field
    from_json = [read_request(json.loads(json.dumps(row))) for row in rows]
    table = pa.Table.from_struct_array(pa.array(rows))
    names = {"messages": "messages", "prompt": "prompt"}
    # Ray's numpy batches carry a struct's integer field with nulls as floats: an integer
    # beyond 2**53 is rounded before healjson sees it (`HealBatch` says to use pyarrow there)
    formats = _FORMATS if all(_exact_in_a_float(row) for row in rows) else ("pandas",)
    for batch in (table, *(BlockAccessor.for_block(table).to_batch_format(f) for f in formats)):
        assert from_json == [read_request(f) for f in request_fields(Columns(batch), names)]


_FORMATS = ("pandas", "numpy")


def _exact_in_a_float(row: dict[str, Any]) -> bool:
    context = row.get("context") or {}
    return not isinstance(context.get("limit"), int) or abs(context["limit"]) <= 2**53


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


_USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("row", "read"),
    [
        ({"messages": json.dumps(_USER)}, (tuple(_USER), None, {})),
        ({"messages": "[{"}, "`messages` is text that is not JSON"),
        ({"messages": [{"role": "user", "content": _nested(70)}]}, "nest deeper than 64 levels"),
        ({"prompt": 7}, "`prompt` must be a non-empty string"),
        ({"prompt": "hi", "context": '{"a": null}'}, (tuple(_USER), {"a": None}, {})),
        ({"prompt": "hi", "context": {"a": None, "b": [{"c": None}]}},
         (tuple(_USER), {"b": [{}]}, {})),
        ({"prompt": "hi", "context": "{"}, "`context` is text that is not JSON"),
        ({"prompt": "hi", "context": "[1]"}, "`context` must be an object"),
        ({"prompt": "hi", "context": ["a"]}, "`context` must be an object"),
        ({"prompt": "hi", "context": {"deep": _nested(70)}}, "`context` nests deeper than 64"),
        ({"prompt": "hi", "max_tokens": 256.0, "top_p": float("nan")},
         (tuple(_USER), None, {"max_tokens": 256})),
        ({"prompt": "hi", "max_tokens": True}, "`max_tokens` must be a positive integer"),
        ({"prompt": "hi", "max_tokens": 2.5}, "`max_tokens` must be a positive integer"),
        ({"prompt": "hi", "temperature": float("inf")}, "`temperature` must be a number"),
        ({"prompt": "hi", "top_p": False}, "`top_p` must be a number"),
    ],
)  # fmt: skip
def test_the_reader_rules(row: dict[str, Any], read: Any) -> None:
    """Each rule of `healjson._batch.request`, one row at a time: a request, or its problem."""
    from healjson._batch.request import Request, Unusable, read_request

    found = read_request(row)
    if isinstance(read, str):
        assert isinstance(found, Unusable)
        assert read in found.problem
        assert found.field in row or found.field == "messages"
    else:
        assert Request(*read) == found
        assert isinstance(found, Request)
        assert {k: type(v) for k, v in read[2].items()} == {
            k: type(v) for k, v in found.params.items()
        }  # 256.0 is sent as 256
