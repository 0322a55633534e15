"""`healjson.ray`: `HealBatch` (calls the model) and `HealReplies` (heals replies a pipeline
already has), called directly on batches and run by Ray Data on a local Ray instance.

Every model call goes over real HTTP, through the real openai SDK, to a `ScriptedServer` on
127.0.0.1 in this process; Ray's workers reach it there. The server answers by the request's
content (`answer`), so concurrent requests from any worker get the right reply: the first user
turn says `doc N: KIND`, and KIND decides the reply (valid JSON, fenced, broken JSON that L1
heals, a contract violation that a repair call fixes, a refusal).
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import openai
import pandas as pd
import pyarrow as pa
import pytest
import ray
import ray.cloudpickle
import ray.data
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from ray.data.block import BlockAccessor
from ray.data.expressions import col

import healjson
from healjson import HealPolicy, Violation, contract
from healjson.ray import OUTCOME_COLUMN, REPAIR_COLUMNS, RESULT_COLUMNS, HealBatch, HealReplies
from healjson.testing import ScriptedReply, ScriptedServer
from ray_env import RAY_KEY_VAR as KEY_VAR
from ray_env import RAY_SECRET as SECRET

# Ray warns about its own settings when it builds its DataContext (not about healjson's use)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")

URL_VAR = "HEALJSON_RAY_TEST_BASE_URL"


class Extract(BaseModel):
    """What each document yields."""

    doc: int
    title: str = Field(min_length=1)
    start: int = Field(ge=1)
    end: int


@contract(fields=("start", "end"))
def ends_after_start(extract: Extract) -> Violation | None:
    """A range ends at or after its start."""
    if extract.end < extract.start:
        return Violation("`end` must not be before `start`")
    return None


KINDS = ("valid", "fenced", "broken", "violation", "refusal")


def good(n: int) -> dict[str, Any]:
    return {"doc": n, "title": f"Doc {n}", "start": 1, "end": n % 7 + 1}


def reply_text(n: int, kind: str, repairing: bool) -> str | None:
    """The model's text for document `n` of `kind` (None: no text, a refusal for the server)."""
    if kind == "valid" or (repairing and kind == "violation"):
        return json.dumps(good(n))
    if kind == "fenced":
        return f"Here it is:\n```json\n{json.dumps(good(n))}\n```\nAnything else?"
    if kind == "broken":  # single quotes and a trailing comma: L1's lenient reader heals it
        return f"{{'doc': {n}, 'title': 'Doc {n}', 'start': 1, 'end': {n % 7 + 1},}}"
    if kind == "violation":
        return json.dumps({**good(n), "start": 9, "end": 2})
    if kind == "refusal":
        return None
    raise AssertionError(kind)


def doc_of(messages: list[dict[str, Any]]) -> tuple[int, str]:
    first = next(m["content"] for m in messages if m["role"] == "user")
    found = re.search(r"doc (\d+): (\w+)", first)
    assert found is not None, first
    return int(found.group(1)), found.group(2)


class Endpoint:
    """The server's one script item: answers by the request's content, counts calls and the
    most requests in flight; with `barrier`, each request waits until that many are in flight."""

    def __init__(self, barrier: int | None = None) -> None:
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._barrier = None if barrier is None else threading.Barrier(barrier, timeout=10)

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self._barrier is not None:
                self._barrier.wait()
            messages = body["messages"]
            n, kind = doc_of(messages)
            repairing = any(m["role"] == "assistant" for m in messages)
            text = reply_text(n, kind, repairing)
            if text is None:
                return ScriptedReply(refusal="I can't help with that.")
            return ScriptedReply(content=text)
        finally:
            with self._lock:
                self.in_flight -= 1


PID_HEADER = "x-test-process"
"""Sent with every request of an `EnvClientFactory` client: the id of the process that built it
(which actor made the call)."""


class EnvClientFactory:
    """Builds the client where it is called, the key read from that process's environment."""

    def __init__(self, base_url: str | None = None) -> None:
        self.base_url = base_url

    def __call__(self) -> openai.AsyncOpenAI:
        base_url = self.base_url or os.environ[URL_VAR]
        return openai.AsyncOpenAI(
            api_key=os.environ[KEY_VAR],
            base_url=base_url,
            max_retries=0,
            default_headers={PID_HEADER: str(os.getpid())},
        )


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Endpoint, ScriptedServer]]:
    endpoint = Endpoint()
    with ScriptedServer([endpoint], repeat=True) as running:
        yield endpoint, running


def local_factory(base_url: str) -> Callable[[], openai.AsyncOpenAI]:
    def make() -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key="sk-local-test", base_url=base_url, max_retries=0)

    return make


@pytest.fixture(scope="module")
def heal(server: tuple[Endpoint, ScriptedServer]) -> Iterator[HealBatch]:
    """One HealBatch for the direct tests (its client and loop live for the module)."""
    with HealBatch(
        local_factory(server[1].base_url),
        model="scripted-model",
        response_model=Extract,
        contracts=[ends_after_start],
        concurrency=8,
        include_outcome=True,
    ) as built:
        yield built


# -- building batches the way Ray Data hands them over -------------------------------------------

MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
SCHEMA = pa.schema([("id", pa.int64()), ("messages", pa.list_(MESSAGE)), ("prompt", pa.string())])


def request_for(n: int, kind: str, shape: str) -> dict[str, Any]:
    """A row's request columns: `shape` is how it is given (or how it is broken)."""
    text = f"doc {n}: {kind}. Extract the document's title and range."
    shapes: dict[str, dict[str, Any]] = {
        "prompt": {"messages": None, "prompt": text},
        "messages": {"messages": [{"role": "user", "content": text}], "prompt": None},
        "system+messages": {
            "messages": [
                {"role": "system", "content": "You extract JSON."},
                {"role": "user", "content": text},
            ],
            "prompt": None,
        },
        "no request": {"messages": None, "prompt": None},
        "empty prompt": {"messages": None, "prompt": "   "},
        "empty messages": {"messages": [], "prompt": None},
        "no role": {"messages": [{"role": None, "content": text}], "prompt": None},
    }
    return shapes[shape]


VALID_SHAPES = ("prompt", "messages", "system+messages")
INVALID_SHAPES = ("no request", "empty prompt", "empty messages", "no role")


def as_format(table: pa.Table, batch_format: str) -> Any:
    """`table` as `map_batches` would pass it for `batch_format` ("lists": a plain dict)."""
    if batch_format == "pyarrow":
        return table
    if batch_format == "lists":
        return table.to_pydict()
    return BlockAccessor.for_block(table).to_batch_format(batch_format)


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def check_healed(row: dict[str, Any], n: int) -> None:
    """An `ok` row's value validates into the model, passes the contract, is document `n`'s."""
    assert row["ok"] is True, row
    value = Extract.model_validate_json(row["value"])
    assert ends_after_start.check(value) is None
    assert Extract(**good(n)) == value
    assert row["reason"] is None
    assert json.loads(row["errors"]) == []


# -- HealBatch, called directly ------------------------------------------------------------------


def test_heal_batch_heals_a_mixed_batch(
    heal: HealBatch, server: tuple[Endpoint, ScriptedServer]
) -> None:
    """`HealBatch` heals a batch of mixed answers and request shapes, one result row per input
    row in order, invalid requests as `invalid_input`."""
    rows = [{"id": i, **request_for(i, KINDS[i % 5], VALID_SHAPES[i % 3])} for i in range(10)] + [
        {"id": 10 + j, **request_for(0, "valid", shape)} for j, shape in enumerate(INVALID_SHAPES)
    ]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    out = heal(table)
    assert [*list(RESULT_COLUMNS), OUTCOME_COLUMN] == out.column_names
    assert pa.int64() == out.schema.field("id").type
    got = rows_of(out)
    assert [row["id"] for row in rows] == [row["id"] for row in got]
    for row in got[:10]:
        kind = KINDS[row["id"] % 5]
        if kind == "refusal":
            assert (False, "refusal", 1) == (row["ok"], row["reason"], row["attempts"])
            assert row["value"] is None
            assert "refused" in json.loads(row["errors"])[0]["constraint"]
        else:
            check_healed(row, row["id"])
            assert (2 if kind == "violation" else 1) == row["attempts"]
        assert row["prompt_tokens"] > 0
        assert row["completion_tokens"] >= 0
        record = healjson.outcome_from_dict(json.loads(row["outcome"]), Extract)
        assert row["ok"] == record.ok
        assert row["attempts"] == record.calls
    for row in got[10:]:
        assert (False, "invalid_input", 0) == (row["ok"], row["reason"], row["attempts"])
        assert row["outcome"] is None
        assert row["value"] is None
        assert 0.0 == row["cost"]
        [error] = json.loads(row["errors"])
        assert "input" == error["source"]
        assert error["constraint"]


@pytest.mark.parametrize("batch_format", ["numpy", "pandas", "lists"])
def test_heal_batch_reads_every_batch_format(heal: HealBatch, batch_format: str) -> None:
    """`HealBatch` gives the same results for a batch given as numpy, pandas or lists as for an
    Arrow table."""
    rows = [{"id": i, **request_for(i, KINDS[i % 5], VALID_SHAPES[i % 3])} for i in range(6)]
    rows.append({"id": 6, **request_for(6, "valid", "no request")})
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    expected = [(r["ok"], r["reason"], r["value"]) for r in rows_of(heal(table))]
    got = rows_of(heal(as_format(table, batch_format)))
    assert list(range(7)) == [row["id"] for row in got]
    assert expected == [(r["ok"], r["reason"], r["value"]) for r in got]


def test_heal_batch_messages_as_json_text_and_arrow_nulls(heal: HealBatch) -> None:
    """`messages` may be JSON text; the null keys Arrow's struct union adds are dropped."""
    text = json.dumps([{"role": "user", "content": "doc 3: valid"}])
    with_name = [{"role": "user", "content": "doc 4: fenced", "name": None}]
    out = rows_of(heal({"id": ["a", "b"], "messages": [text, with_name]}))
    assert ["a", "b"] == [row["id"] for row in out]
    check_healed(out[0], 3)
    check_healed(out[1], 4)
    first_request = json.loads(out[1]["outcome"])["attempts"][0]["messages"]
    assert [{"role": "user", "content": "doc 4: fenced"}] == first_request


def test_heal_batch_ids_of_several_types_become_text(heal: HealBatch) -> None:
    """Ids of several types become a text column, and a batch without ids gets null ids."""
    out = heal({"id": [7, "x", None], "prompt": ["doc 1: valid", "doc 2: valid", None]})
    assert pa.string() == out.schema.field("id").type
    assert ["7", "x", None] == out.column("id").to_pylist()
    no_ids = heal({"prompt": ["doc 1: valid"]})
    assert [None] == no_ids.column("id").to_pylist()
    assert [True] == no_ids.column("ok").to_pylist()


def test_heal_batch_of_no_rows(heal: HealBatch) -> None:
    """A batch of no rows gives an empty table with every result column."""
    out = heal(pa.Table.from_pylist([], schema=SCHEMA))
    assert 0 == out.num_rows
    assert [*list(RESULT_COLUMNS), OUTCOME_COLUMN] == out.column_names


def test_heal_batch_heals_rows_concurrently_up_to_its_bound() -> None:
    """Four requests must be in flight together for any to be answered (a barrier): the rows
    of a batch run concurrently, and never more than `concurrency` at once in one instance,
    even with two batches called from two threads at the same time."""
    endpoint = Endpoint(barrier=4)
    results: dict[int, list[dict[str, Any]]] = {}
    with ScriptedServer([endpoint], repeat=True) as running:
        factory = local_factory(running.base_url)
        with HealBatch(factory, model="m", response_model=Extract, concurrency=4) as heal:

            def run(first: int) -> None:
                prompts = [f"doc {n}: valid" for n in range(first, first + 8)]
                results[first] = rows_of(
                    heal({"id": list(range(first, first + 8)), "prompt": prompts})
                )

            threads = [threading.Thread(target=run, args=(first,)) for first in (0, 8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    for first, rows in results.items():
        assert list(range(first, first + 8)) == [row["id"] for row in rows]
        for row in rows:
            check_healed(row, row["id"])
    assert [0, 8] == sorted(results)
    assert 4 == endpoint.max_in_flight
    assert 16 == endpoint.calls


def test_heal_batch_takes_the_client_class_as_its_factory(
    server: tuple[Endpoint, ScriptedServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`openai.AsyncOpenAI` itself is a factory: it reads the key and URL from the environment
    of the process that calls it (the actor)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("OPENAI_BASE_URL", server[1].base_url)
    with HealBatch(openai.AsyncOpenAI, model="m", response_model=Extract) as heal:
        out = rows_of(heal({"prompt": ["doc 9: fenced"]}))
    check_healed(out[0], 9)


def test_heal_batch_takes_an_async_factory(server: tuple[Endpoint, ScriptedServer]) -> None:
    """`HealBatch` takes an async client factory, awaited on the actor's loop."""
    make = local_factory(server[1].base_url)

    async def factory() -> openai.AsyncOpenAI:  # awaited on the actor's loop
        return make()

    with HealBatch(factory, model="m", response_model=Extract) as heal:
        out = rows_of(heal({"prompt": ["doc 4: broken"]}))
    check_healed(out[0], 4)


def test_heal_batch_builds_one_client_and_one_loop_for_every_batch(
    server: tuple[Endpoint, ScriptedServer],
) -> None:
    """`HealBatch` builds one client and one event loop thread for all its batches, and stops the
    loop when closed."""
    made: list[openai.AsyncOpenAI] = []
    make = local_factory(server[1].base_url)

    def factory() -> openai.AsyncOpenAI:
        made.append(make())
        return made[-1]

    def loops() -> int:
        return sum(t.name == "healjson-ray-loop" for t in threading.enumerate())

    before = loops()
    with HealBatch(factory, model="m", response_model=Extract) as heal:
        for start in range(0, 9, 3):
            out = heal({"prompt": [f"doc {i}: valid" for i in range(start, start + 3)]})
            assert [True] * 3 == out.column("ok").to_pylist()
        assert 1 == len(made)
        assert before + 1 == loops()
        assert heal._client.wrapped is made[0]
        assert "HealBatch(Extract, model='m', concurrency=16)" == repr(heal)
    assert made[0].is_closed()
    assert before == loops()
    heal.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        heal({"prompt": ["doc 1: valid"]})
    assert 0 == heal({"prompt": [None]}).column("attempts").to_pylist()[0]  # no call needed


def test_heal_batch_accepts_a_wrapped_client_and_a_policy(
    server: tuple[Endpoint, ScriptedServer],
) -> None:
    """`HealBatch` accepts a wrapped client, a policy, a JSON mode and request parameters, and
    applies them."""
    make = local_factory(server[1].base_url)
    policy = HealPolicy(max_attempts=1)
    with HealBatch(
        lambda: healjson.wrap(make(), json_mode="prompt"),
        model="m",
        response_model=Extract,
        contracts=[ends_after_start],
        policy=policy,
        json_mode="json_object",
        request_params={"temperature": 0},
    ) as heal:
        assert "json_object" == heal._client.format.mode
        out = rows_of(heal({"prompt": ["doc 5: violation"]}))
    # one attempt allowed: the violation is the last word (a repair would have fixed it)
    assert (False, "invalid_output", 1) == (out[0]["ok"], out[0]["reason"], out[0]["attempts"])
    assert "ends_after_start" == json.loads(out[0]["errors"])[0]["rule"]


def test_heal_batch_configuration_errors_raise_at_construction(
    server: tuple[Endpoint, ScriptedServer],
) -> None:
    """`HealBatch` refuses a client instead of a factory, a sync client, a bad concurrency or an
    empty model when built."""
    url = server[1].base_url
    client = local_factory(url)()
    with pytest.raises(TypeError, match="not a client"):
        HealBatch(healjson.wrap(client), model="m", response_model=Extract)
    asyncio.run(client.close())
    made: list[openai.OpenAI] = []

    def sync_factory() -> openai.OpenAI:
        made.append(openai.OpenAI(api_key="k", base_url=url))
        return made[-1]

    with pytest.raises(TypeError, match="async client"):
        HealBatch(sync_factory, model="m", response_model=Extract)
    assert made[0].is_closed()  # the client the factory made for it is closed with it
    with pytest.raises(ValueError, match="concurrency"):
        HealBatch(local_factory(url), model="m", response_model=Extract, concurrency=0)
    with pytest.raises(TypeError, match="model"):
        HealBatch(local_factory(url), model="", response_model=Extract)
    with pytest.raises(ValueError, match="messages, model"):
        HealBatch(
            local_factory(url),
            model="m",
            response_model=Extract,
            request_params={"model": "x", "messages": []},
        )
    with pytest.raises(ValueError, match="does not validate"):
        HealBatch(local_factory(url), model="m", response_model=Extract, examples=[{"doc": "x"}])
    with (
        HealBatch(local_factory(url), model="m", response_model=Extract) as heal,
        pytest.raises(TypeError, match="batch must be"),
    ):
        heal([{"prompt": "doc 1: valid"}])


def test_a_heal_batch_instance_cannot_be_shipped(heal: HealBatch) -> None:
    """A `HealBatch` instance refuses to be pickled, saying to pass the class to `map_batches`."""
    with pytest.raises(TypeError, match="pass the class"):
        ray.cloudpickle.dumps(heal)
    with pytest.raises(TypeError, match="pass the class"):
        pickle.dumps(heal)


def test_the_serialised_class_and_kwargs_hold_no_api_key(
    server: tuple[Endpoint, ScriptedServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What Ray ships to the actors (the class and its constructor kwargs, cloudpickled) holds
    the env var's name but never its value; the actor reads the key when it builds the client.
    A factory that captured the key would ship it: the same check catches that."""
    _endpoint, running = server
    monkeypatch.setenv(KEY_VAR, SECRET)
    base_url = running.base_url

    def from_env() -> openai.AsyncOpenAI:  # pickled by value: code and closure, not the key
        return openai.AsyncOpenAI(api_key=os.environ[KEY_VAR], base_url=base_url, max_retries=0)

    kwargs = {
        "client_factory": from_env,
        "model": "scripted-model",
        "response_model": Extract,
        "contracts": [ends_after_start],
        "policy": HealPolicy(max_attempts=2),
    }
    shipped = ray.cloudpickle.dumps((HealBatch, kwargs))
    assert SECRET.encode() not in shipped
    assert KEY_VAR.encode() in shipped  # the factory's code did travel
    for factory in (EnvClientFactory(base_url), EnvClientFactory()):
        assert SECRET.encode() not in ray.cloudpickle.dumps(
            (HealBatch, {**kwargs, "client_factory": factory})
        )

    key = os.environ[KEY_VAR]
    captured = ray.cloudpickle.dumps((HealBatch, {**kwargs, "client_factory": lambda: key}))
    assert SECRET.encode() in captured  # the check sees a captured key

    cls, received = ray.cloudpickle.loads(shipped)
    count = len(running.requests)
    with cls(**received) as heal:
        out = rows_of(heal({"prompt": ["doc 2: valid"]}))
        assert SECRET not in repr(heal)
    check_healed(out[0], 2)
    sent = [r for r in running.requests[count:] if r.path.endswith("/chat/completions")]
    assert [f"Bearer {SECRET}"] == [r.headers["authorization"] for r in sent]
    assert SECRET not in json.dumps(out)


# -- HealReplies, called directly ----------------------------------------------------------------

REPLY_KINDS = ("valid", "fenced", "broken", "violation", "refusal", "empty", "null", "truncated")
NEEDS_REPAIR = frozenset({"violation", "refusal", "empty", "null", "truncated"})


def generated(n: int, kind: str) -> tuple[str | None, str | None]:
    """A pipeline's reply text and finish reason for document `n`."""
    if kind == "refusal":
        return "I can't help with that.", "stop"
    if kind == "empty":
        return "", "stop"
    if kind == "null":
        return None, None
    if kind == "truncated":
        return json.dumps(good(n))[:20], "length"
    return reply_text(n, kind, repairing=False), "stop"


def replies_table(cases: list[tuple[str, str]], start: int = 0) -> pa.Table:
    rows = []
    for offset, (kind, shape) in enumerate(cases):
        n = start + offset
        text, finish = generated(n, kind)
        rows.append(
            {
                "id": n,
                **request_for(n, kind, shape),
                "generated_text": text,
                "finish_reason": finish,
                "num_input_tokens": 40,
                "num_generated_tokens": len(text or "") // 4,
            }
        )
    schema = SCHEMA.append(pa.field("generated_text", pa.string()))
    for name, kind in (("finish_reason", pa.string()), ("num_input_tokens", pa.int64())):
        schema = schema.append(pa.field(name, kind))
    schema = schema.append(pa.field("num_generated_tokens", pa.int64()))
    return pa.Table.from_pylist(rows, schema=schema)


def answer_repairs(pending: list[dict[str, Any]], kind_of: Callable[[int], str]) -> pa.Table:
    """The pipeline's second pass: each pending row's `repair_messages` sent to the "model"
    (which now answers well, except for `refusal` documents), put in `messages` as a pipeline
    that calls the model on that column would."""
    rows = []
    for row in pending:
        messages = json.loads(row["repair_messages"])
        n, _ = doc_of(messages)
        text = "Still no." if kind_of(n) == "refusal" else json.dumps(good(n))
        rows.append(
            {
                "id": row["id"],
                "messages": row["repair_messages"],
                "history": row["history"],
                "generated_text": text,
            }
        )
    return pa.Table.from_pylist(rows)


def test_heal_replies_first_pass_then_repairs() -> None:
    """`HealReplies` heals the answers it can at the first pass and writes the repair messages
    for the rest, which heal at the second."""
    post = HealReplies(
        Extract,
        contracts=[ends_after_start],
        policy=HealPolicy(max_attempts=2),
        model="gpt-4o-mini",
    )
    cases = [(kind, VALID_SHAPES[i % 3]) for i, kind in enumerate(REPLY_KINDS)]
    out = post(replies_table(cases))
    assert [*RESULT_COLUMNS, *REPAIR_COLUMNS] == out.column_names
    first = rows_of(out)
    by_kind = dict(zip(REPLY_KINDS, first, strict=True))
    for kind in ("valid", "fenced", "broken"):
        row = by_kind[kind]
        check_healed(row, row["id"])
        assert 1 == row["attempts"]
        assert row["repair_messages"] is None
        assert row["history"] is None
        assert 40 == row["prompt_tokens"]
    for kind in NEEDS_REPAIR:
        row = by_kind[kind]
        assert (None, None, None, None) == (row["ok"], row["value"], row["reason"], row["errors"])
        assert 1 == row["attempts"]
        assert 40 == row["prompt_tokens"]
        request = json.loads(row["repair_messages"])
        original = json.loads(row["history"])["messages"]
        assert original == request[: len(original)]
        assert request[-1]["role"] in ("user", "assistant")
        assert len(request) >= len(original)
    violation = json.loads(by_kind["violation"]["repair_messages"])
    assert "`end` must not be before `start`" in violation[-1]["content"]
    assert json.loads(by_kind["truncated"]["history"])["replies"][0]["finish_reason"] == "length"

    pending = [row for row in first if row["repair_messages"] is not None]
    second = rows_of(post(answer_repairs(pending, lambda n: REPLY_KINDS[n])))
    assert [row["id"] for row in pending] == [row["id"] for row in second]
    for row in second:
        assert 2 == row["attempts"]
        assert row["repair_messages"] is None
        assert 40 == row["prompt_tokens"]  # the first pass's 40; the second gave no count
        if REPLY_KINDS[row["id"]] == "refusal":  # the policy's two attempts are spent
            assert (False, "max_retries_exceeded") == (row["ok"], row["reason"])
        else:
            check_healed(row, row["id"])


def test_heal_replies_outcome_column_records_every_pass() -> None:
    """`HealReplies(include_outcome=True)` records the outcome of every pass, and
    `id_column=None` reads no id."""
    post = HealReplies(Extract, contracts=[ends_after_start], include_outcome=True, id_column=None)
    first = rows_of(post(replies_table([("violation", "prompt")], start=3)))
    assert [*RESULT_COLUMNS, OUTCOME_COLUMN, *REPAIR_COLUMNS] == list(first[0])
    assert first[0]["outcome"] is None
    assert first[0]["id"] is None
    second = rows_of(post(answer_repairs(first, lambda n: "violation").drop_columns(["id"])))
    outcome = healjson.outcome_from_dict(json.loads(second[0]["outcome"]), Extract)
    assert outcome.ok
    assert 2 == outcome.calls
    assert outcome.attempts[0].raw_text == generated(3, "violation")[0]
    assert second[0]["id"] is None  # id_column=None: no id is read


@pytest.mark.parametrize("batch_format", ["pyarrow", "numpy", "pandas", "lists"])
def test_heal_replies_reads_every_batch_format(batch_format: str) -> None:
    """`HealReplies` gives the same results for every batch format, invalid rows as
    `invalid_input`."""
    post = HealReplies(Extract, contracts=[ends_after_start])
    cases = [(kind, VALID_SHAPES[i % 3]) for i, kind in enumerate(REPLY_KINDS)]
    cases += [("valid", shape) for shape in INVALID_SHAPES]
    table = replies_table(cases)
    expected = rows_of(post(table))
    assert expected == rows_of(post(as_format(table, batch_format)))
    assert ["invalid_input"] * 4 == [row["reason"] for row in expected[-4:]]


def test_heal_replies_invalid_rows() -> None:
    """`HealReplies` turns each malformed row (bad messages, non-text answer, bad history) into
    an `invalid_input` row."""
    post = HealReplies(Extract, policy=HealPolicy(max_attempts=2))
    message = [{"role": "user", "content": "doc 1: valid"}]
    batch = {
        "id": list(range(6)),
        "messages": [message, message, "not json [", message, None, message],
        "generated_text": [json.dumps(good(1)), 42, json.dumps(good(1)), "{}", "{}", None],
        "history": [
            None,
            None,
            None,
            "not json",
            json.dumps({"messages": [], "replies": []}),
            "[]",
        ],
    }
    rows = rows_of(post(batch))
    assert rows[0]["ok"] is True
    problems = [json.loads(row["errors"])[0]["constraint"] for row in rows[1:]]
    assert ["invalid_input"] * 5 == [row["reason"] for row in rows[1:]]
    assert "must be a string" in problems[0]
    assert "not JSON" in problems[1]
    assert "`history` is not JSON" in problems[2]
    assert "history.messages" in problems[3]
    assert "JSON object a previous pass wrote" in problems[4]
    bad_replies = {"messages": message, "replies": [{"text": 3}]}
    no_list = {"messages": message, "replies": "x"}
    more = rows_of(
        post(
            {
                "messages": [message, message],
                "generated_text": ["{}", "{}"],
                "history": [json.dumps(bad_replies), json.dumps(no_list)],
            }
        )
    )
    assert ["invalid_input"] * 2 == [row["reason"] for row in more]
    constraints = [json.loads(row["errors"])[0]["constraint"] for row in more]
    assert "`history.replies[0]` must be an object with a `text`" == constraints[0]
    assert "`history.replies` must be a list" == constraints[1]
    missing = rows_of(post({"id": [1, 2], "prompt": ["doc 1: valid", "doc 2: valid"]}))
    assert ["invalid_input"] * 2 == [row["reason"] for row in missing]
    assert "no `generated_text` column" in json.loads(missing[0]["errors"])[0]["constraint"]


def test_heal_replies_reads_content_parts_and_drops_arrow_nulls() -> None:
    """Content parts and tool calls come through Arrow with null keys for what a row lacks:
    they are dropped from the request (and the next one); malformed messages are refused."""
    post = HealReplies(Extract)
    parts = [{"type": "text", "text": "doc 1: valid", "image_url": None}]
    asked = [{"role": "user", "content": parts, "name": None}]
    rows = rows_of(
        post(
            {
                "messages": [asked, ["hello"], [{"role": "user", "content": 5}]],
                "generated_text": ["no JSON here", "{}", "{}"],
            }
        )
    )
    kept = [{"role": "user", "content": [{"type": "text", "text": "doc 1: valid"}]}]
    assert kept == json.loads(rows[0]["history"])["messages"]
    assert kept == json.loads(rows[0]["repair_messages"])[:1]
    problems = [json.loads(row["errors"])[0]["constraint"] for row in rows[1:]]
    assert "`messages[0]` must be an object with a `role`" == problems[0]
    assert "`messages[0].content` must be a string or a list of parts" == problems[1]
    with pytest.raises(ValueError, match="differ in length"):
        post({"messages": [asked], "generated_text": []})


def test_heal_replies_ships_without_its_healer() -> None:
    """An instance goes to Ray tasks as the function itself: its healer stays behind and each
    process builds one, shared by every copy it unpickles."""
    post = HealReplies(Extract, contracts=[ends_after_start])
    shipped = ray.cloudpickle.dumps(post)
    assert b"golden" not in shipped.lower()
    copy, again = ray.cloudpickle.loads(shipped), ray.cloudpickle.loads(shipped)
    assert copy._healer is again._healer is post._healer  # same process: one healer
    out = rows_of(copy(replies_table([("fenced", "prompt")])))
    check_healed(out[0], 0)
    assert "HealReplies(Extract, text_column='generated_text')" == repr(copy)
    with pytest.raises(ValueError, match="does not validate"):
        HealReplies(Extract, examples=[{"doc": "one"}])


# -- properties: every row accounted for once, every `ok` value valid ----------------------------

case = st.tuples(st.sampled_from(REPLY_KINDS), st.sampled_from(VALID_SHAPES + INVALID_SHAPES))
batch_formats = st.sampled_from(["pyarrow", "numpy", "pandas", "lists"])
_PROPERTY_REPLIES = HealReplies(Extract, contracts=[ends_after_start])


@settings(max_examples=20, deadline=None)
@given(cases=st.lists(case, max_size=25), batch_format=batch_formats)
def test_heal_replies_accounts_for_every_row(
    cases: list[tuple[str, str]], batch_format: str
) -> None:
    """For any mix of answers and formats, `HealReplies` gives one row per input row, in order,
    each with the verdict its case calls for."""
    post = _PROPERTY_REPLIES
    table = replies_table(cases)
    first = rows_of(post(as_format(table, batch_format)))
    assert list(range(len(cases))) == [row["id"] for row in first]
    for row, (kind, shape) in zip(first, cases, strict=True):
        assert (row["repair_messages"] is None) == (row["history"] is None)
        if shape in INVALID_SHAPES:
            assert (False, "invalid_input", None) == (row["ok"], row["reason"], row["history"])
        elif kind in NEEDS_REPAIR:
            assert row["ok"] is None
            assert row["repair_messages"] is not None
        else:
            check_healed(row, row["id"])
    pending = [row for row in first if row["repair_messages"] is not None]
    second = rows_of(post(answer_repairs(pending, lambda n: "fine"))) if pending else []
    assert [row["id"] for row in pending] == [row["id"] for row in second]
    for row in second:
        check_healed(row, row["id"])
        assert 2 == row["attempts"]
    finished = [row["id"] for row in first if row["repair_messages"] is None]
    assert sorted(finished + [row["id"] for row in second]) == list(range(len(cases)))


batch_cases = st.tuples(st.sampled_from(KINDS), st.sampled_from(VALID_SHAPES + INVALID_SHAPES))


@settings(max_examples=12, deadline=None)
@given(cases=st.lists(batch_cases, max_size=12), batch_format=batch_formats)
def test_heal_batch_accounts_for_every_row(
    heal: HealBatch, cases: list[tuple[str, str]], batch_format: str
) -> None:
    """For any mix of answers and formats, `HealBatch` gives one row per input row, in order,
    each with the verdict its case calls for."""
    rows = [{"id": n, **request_for(n, kind, shape)} for n, (kind, shape) in enumerate(cases)]
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    out = rows_of(heal(as_format(table, batch_format)))
    assert list(range(len(cases))) == [row["id"] for row in out]
    for row, (kind, shape) in zip(out, cases, strict=True):
        if shape in INVALID_SHAPES:
            assert (False, "invalid_input", 0) == (row["ok"], row["reason"], row["attempts"])
        elif kind == "refusal":
            assert (False, "refusal") == (row["ok"], row["reason"])
        else:
            check_healed(row, row["id"])
            assert (2 if kind == "violation" else 1) == row["attempts"]


def test_importing_healjson_does_not_import_ray() -> None:
    """`import healjson.ray` loads neither Ray nor pyarrow: a call does (pyarrow only)."""
    code = (
        "import sys, healjson, healjson.ray; print('ray' in sys.modules, 'pyarrow' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "False False" == done.stdout.strip()


def test_pandas_missing_values_are_missing() -> None:
    """Missing values in a pandas frame (`pd.NA`, NaN in object columns) are read as missing,
    never as text."""
    post = HealReplies(Extract)
    frame = pd.DataFrame(
        {
            "id": pd.array([1, None], dtype="Int64"),
            "prompt": pd.array(["doc 1: valid", pd.NA], dtype="string"),
            "generated_text": pd.array([json.dumps(good(1)), pd.NA], dtype="string"),
        }
    )
    rows = rows_of(post(frame))
    assert [1, None] == [row["id"] for row in rows]
    check_healed(rows[0], 1)
    assert "invalid_input" == rows[1]["reason"]
    # a numpy-backed object column marks a missing value with NaN
    objects = pd.DataFrame(
        {"prompt": ["doc 2: valid", float("nan")], "generated_text": "{}"}, dtype=object
    )
    reasons = [row["reason"] for row in rows_of(post(objects))]
    assert reasons[1] == "invalid_input"
    assert reasons[0] is None  # `{}` is not an Extract: a repair is asked for


# -- on a local Ray instance -----------------------------------------------------------------------

BATCH = 13
"""Rows per block, and per batch."""
ROWS = 4 * BATCH
"""Four blocks: two batches for each of two actors. Every 13th row is invalid (in turn each of
the four ways), the others hold every kind in every valid request shape (`assert_every_case`):
more rows would cost the actors and the server time and exercise nothing more (throughput is
`benchmarks/`' business)."""


def kind_of(n: int) -> str:
    return KINDS[n % len(KINDS)]


def shape_of(n: int) -> str:
    """Every 13th row is invalid (in one of four ways); the others alternate request shapes."""
    if n % 13 == 12:
        return INVALID_SHAPES[(n // 13) % len(INVALID_SHAPES)]
    return VALID_SHAPES[n % len(VALID_SHAPES)]


def assert_every_case(kinds: tuple[str, ...]) -> None:
    """The `ROWS` rows (row `n` of kind `kinds[n % len(kinds)]`) hold each of `kinds` in each
    valid request shape, and each invalid shape."""
    cases = {(kinds[n % len(kinds)], shape_of(n)) for n in range(ROWS)}
    assert {(kind, shape) for kind in kinds for shape in VALID_SHAPES} <= cases
    assert set(INVALID_SHAPES) <= {shape for _, shape in cases}


def dataset_of(table: pa.Table) -> ray.data.Dataset:
    """`table` as a dataset of blocks of `BATCH` rows, made here: `from_arrow` runs a Ray task
    per block to read its metadata, and the workers Ray starts with would run those rather than
    host the actors."""
    return ray.data.from_blocks(
        [table.slice(start, BATCH) for start in range(0, table.num_rows, BATCH)]
    )


@pytest.fixture(scope="module")
def ray_server() -> Iterator[tuple[Endpoint, ScriptedServer]]:
    endpoint = Endpoint()
    with ScriptedServer([endpoint], repeat=True) as running:
        yield endpoint, running


@pytest.mark.slow
@pytest.mark.usefixtures("ray_module")
def test_map_batches_heals_every_row_on_two_actors(
    ray_server: tuple[Endpoint, ScriptedServer],
) -> None:
    """`Dataset.map_batches(HealBatch)` on two actors heals every row of the dataset, each as its
    case calls for, the API key read from the workers' environment."""
    endpoint, running = ray_server
    assert_every_case(KINDS)
    rows = [{"id": n, **request_for(n, kind_of(n), shape_of(n))} for n in range(ROWS)]
    dataset = dataset_of(pa.Table.from_pylist(rows, schema=SCHEMA))
    healed = dataset.map_batches(
        HealBatch,
        fn_constructor_kwargs={
            "client_factory": EnvClientFactory(running.base_url),
            "model": "scripted-model",
            "response_model": Extract,
            "contracts": [ends_after_start],
            "concurrency": 16,
        },
        # at most two batches at a time in an actor, and none before both are up: each of the
        # two heals some
        compute=ray.data.ActorPoolStrategy(size=2, max_tasks_in_flight_per_actor=2),
        num_cpus=0.5,
        batch_size=BATCH,
        batch_format="pyarrow",
    )
    healed.context.wait_for_min_actors_s = 300
    out = healed.take_all()
    assert ROWS == len(out)
    assert list(range(ROWS)) == sorted(row["id"] for row in out)  # each row exactly once
    reasons: dict[str | None, int] = {}
    for row in out:
        n = row["id"]
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
        if shape_of(n) in INVALID_SHAPES:
            assert (False, "invalid_input", 0) == (row["ok"], row["reason"], row["attempts"])
        elif kind_of(n) == "refusal":
            assert (False, "refusal", 1) == (row["ok"], row["reason"], row["attempts"])
        else:
            check_healed(row, n)
            assert (2 if kind_of(n) == "violation" else 1) == row["attempts"]
            assert row["prompt_tokens"] > 0
    invalid = sum(shape_of(n) in INVALID_SHAPES for n in range(ROWS))
    refusals = sum(
        shape_of(n) not in INVALID_SHAPES and kind_of(n) == "refusal" for n in range(ROWS)
    )
    assert {
        None: ROWS - invalid - refusals,
        "invalid_input": invalid,
        "refusal": refusals,
    } == reasons
    repairs = sum(
        shape_of(n) not in INVALID_SHAPES and kind_of(n) == "violation" for n in range(ROWS)
    )
    assert ROWS - invalid + repairs == endpoint.calls  # one call per row, one more per repair
    sent = {r.headers.get("authorization") for r in running.requests if r.body is not None}
    assert {f"Bearer {SECRET}"} == sent  # read from the environment, in the actors
    callers = {r.headers.get(PID_HEADER) for r in running.requests if r.body is not None}
    assert 2 == len(callers)  # two actors made the calls,
    assert str(os.getpid()) not in callers  # neither of them this process


def _second_pass_request(row: dict[str, Any]) -> dict[str, Any]:
    """What a pipeline does with a row still healing: send `repair_messages` to the model (here
    simulated: it now answers well, except for documents it refuses) and keep `history`."""
    messages = json.loads(row["repair_messages"])
    n, kind = doc_of(messages)
    text = "I still can't help." if kind == "refusal" else json.dumps(good(n))
    return {
        "id": row["id"],
        "messages": row["repair_messages"],
        "history": row["history"],
        "generated_text": text,
    }


@pytest.mark.slow
@pytest.mark.usefixtures("ray_module")
def test_map_batches_postprocess_over_every_row_in_two_passes() -> None:
    """`Dataset.map_batches(HealReplies)` heals every row of a dataset in two passes, the repairs
    answered between them."""
    assert_every_case(REPLY_KINDS)
    cases = [(REPLY_KINDS[n % len(REPLY_KINDS)], shape_of(n)) for n in range(ROWS)]
    post = HealReplies(Extract, contracts=[ends_after_start], policy=HealPolicy(max_attempts=2))
    dataset = dataset_of(replies_table(cases))
    # one task at a time, here and in the datasets made from this one: one worker to start
    # (starting one is most of this test's time)
    limits = ray.data.ExecutionResources.for_limits(cpu=1)
    dataset.context.execution_options.resource_limits = limits
    first = dataset.map_batches(post, batch_format="pyarrow", batch_size=BATCH).materialize()
    first_rows = first.take_all()
    assert ROWS == len(first_rows)
    assert list(range(ROWS)) == sorted(row["id"] for row in first_rows)

    pending = first.filter(expr=col("repair_messages").is_not_null())
    second_input = pending.map(_second_pass_request)
    second_rows = second_input.map_batches(
        post, batch_format="pyarrow", batch_size=BATCH
    ).take_all()

    kind = {n: cases[n][0] for n in range(ROWS)}
    valid = {n for n in range(ROWS) if cases[n][1] not in INVALID_SHAPES}
    expect_pending = {n for n in valid if kind[n] in NEEDS_REPAIR}
    assert expect_pending == {row["id"] for row in second_rows}
    assert len(expect_pending) == len(second_rows)
    final = {row["id"]: row for row in first_rows if row["repair_messages"] is None}
    assert not final.keys() & expect_pending
    for row in second_rows:
        assert row["repair_messages"] is None
        assert 2 == row["attempts"]
        final[row["id"]] = row
    assert list(range(ROWS)) == sorted(final)  # every row accounted for, exactly once
    for n, row in final.items():
        if n not in valid:
            assert (False, "invalid_input") == (row["ok"], row["reason"])
        elif kind[n] == "refusal":
            assert (False, "max_retries_exceeded") == (row["ok"], row["reason"])
        else:
            check_healed(row, n)
            assert (2 if n in expect_pending else 1) == row["attempts"]


@pytest.mark.parametrize("batch_format", ["numpy", "pandas", "lists"])
@pytest.mark.parametrize("include_outcome", [False, True])
def test_a_lone_surrogate_in_a_reply_costs_only_its_own_row(
    batch_format: str, include_outcome: bool
) -> None:
    """A reply text holding a lone surrogate (pandas and dict batches carry Python text, which
    Arrow's UTF-8 strings cannot hold as it is) gets its own result, written with U+FFFD in place
    of the surrogate; the batch's other rows are the ones a batch without it gets."""
    post = HealReplies(Extract, policy=HealPolicy(max_attempts=1), include_outcome=include_outcome)
    message = [{"role": "user", "content": "doc 1: valid"}]
    clean = json.dumps(good(1))
    texts = [clean, clean.replace('"title": "', '"title": "\ud800'), "\udfff not json", clean]
    ids = list(range(len(texts)))
    batch: Any = {"id": ids, "messages": [message] * len(texts), "generated_text": texts}
    if batch_format == "numpy":
        batch = {name: np.array(values, dtype=object) for name, values in batch.items()}
    elif batch_format == "pandas":
        batch = pd.DataFrame({name: pd.Series(v, dtype=object) for name, v in batch.items()})

    found = rows_of(post(batch))

    assert ids == [row["id"] for row in found]
    assert [True, False, False, True] == [row["ok"] for row in found]
    alone = rows_of(post({"id": [0], "messages": [message], "generated_text": [clean]}))[0]
    alone.pop("outcome", None)  # its run id is its own
    for index in (0, 3):
        found[index].pop("outcome", None)
        assert {**alone, "id": index} == found[index]
    for row in found[1:3]:
        assert "invalid_output" == row["reason"]
        json.dumps(row, ensure_ascii=False).encode("utf-8")  # valid UTF-8 throughout
        if include_outcome:
            assert "\ufffd" in row["outcome"]  # the raw text as written: the surrogate replaced
