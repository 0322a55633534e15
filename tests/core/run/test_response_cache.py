"""The response cache: a hit costs no model call and is judged again against today's checks; the
key holds the request, the schema, the contracts and the context; the SQLite file survives a
new process and many writers, and holds no secret."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from pydantic_core import to_json

import healjson
from healjson import Healed, HealPolicy, ResponseCache, contract
from healjson import _response_cache as response_cache
from healjson._core.judge.contracts import ContractContext
from healjson._core.redact import redact_text, secrets_scope
from healjson._core.run.answers import HealSpec, ReadReply
from healjson._core.run.cache import VERSION, cache_key, read_entry, spec_fingerprint, write_entry
from healjson._core.target.target import target_for
from healjson._core.wire.reply import Reply, Usage
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer, capture_events
from paths import TESTS
from sdk_calls import TLS

SECRET = "sk-test-0123456789abcdefSECRET"


class Invoice(BaseModel):
    number: str
    total: int


class Receipt(BaseModel):
    number: str
    total: int
    currency: str = "EUR"


GOOD = '{"number": "INV-1", "total": 40}'
USER = [{"role": "user", "content": "Extract the invoice: INV-1, total 40."}]


def named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The events called `name`."""
    return [event for event in events if event["event"] == name]


def _wrapped(stack: Any, server: ScriptedServer, cache: Any, **client: Any) -> Any:
    http = openai.DefaultHttpxClient(verify=TLS)
    sdk = stack.enter_context(
        openai.OpenAI(
            base_url=server.base_url,
            api_key=client.pop("api_key", "test"),
            max_retries=0,
            http_client=http,
        )
    )
    return healjson.wrap(sdk, cache=cache)


def test_a_put_is_read_back_at_once_and_committed_in_batches(tmp_path: Path) -> None:
    """This object reads an entry back at once; another one (another process's) sees it once
    the writer thread has committed it, within moments."""
    path = tmp_path / "cache.sqlite"
    writer, reader = ResponseCache(path, flush_every_s=0.01), ResponseCache(path)
    for index in range(50):
        writer.put(f"k{index}", b"v")
    assert b"v" == writer.get("k49")
    deadline = time.monotonic() + 10
    while reader.get("k49") is None and time.monotonic() < deadline:
        time.sleep(0.01)

    assert b"v" == reader.get("k49")
    assert 50 == len(reader)


def _statements(cache: ResponseCache) -> list[str]:
    """The SQL statements this thread's connection of `cache` runs from now on."""
    seen: list[str] = []
    cache._connection().set_trace_callback(seen.append)
    return seen


def test_a_lookup_that_misses_asks_the_file_nothing(tmp_path: Path) -> None:
    """Once a cache object has read which keys the file holds, a key it does not hold is a miss
    with no statement (a statement takes the file's locks); a key it holds is read from the
    file."""
    path = tmp_path / "cache.sqlite"
    with ResponseCache(path) as writer:
        for index in range(20):
            writer.put(f"k{index}", b"v%d" % index)
    reader = ResponseCache(path, flush_every_s=60.0)
    assert reader.get("absent-0") is None  # the first lookup reads the keys
    seen = _statements(reader)

    assert [None] * 100 == [reader.get(f"absent-{index}") for index in range(1, 101)]
    assert [] == seen
    assert b"v7" == reader.get("k7")
    assert 1 == len(seen)
    reader.close()


@pytest.mark.parametrize("before", [5, 20])
def test_past_the_index_bound_every_lookup_asks_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: int
) -> None:
    """A file with more entries than the key index holds (found at the first read, or grown
    past it later) is asked at every lookup, and every entry is still found."""
    monkeypatch.setattr(response_cache, "_MAX_INDEXED", 10)
    path = tmp_path / "cache.sqlite"
    writer = ResponseCache(path)
    for index in range(before):
        writer.put(f"k{index}", b"v")
    writer.flush()
    reader = ResponseCache(path, flush_every_s=0.0)
    assert reader.get("absent") is None
    for index in range(before, 20):
        writer.put(f"k{index}", b"v")
    writer.flush()
    assert reader.get("absent") is None  # the read that finds the file past the bound
    seen = _statements(reader)

    assert [b"v"] * 20 == [reader.get(f"k{index}") for index in range(20)]
    assert reader.get("absent") is None
    assert 21 == len(seen)  # one SELECT per lookup, no read of the keys
    reader.close()
    writer.close()


@pytest.mark.parametrize("written", [1, 30, 45])
def test_an_entry_another_object_commits_after_a_clear_is_found(
    tmp_path: Path, written: int
) -> None:
    """Another cache object (another process) empties the file and writes new entries, fewer
    or more than the file held: this object, which had read the old keys, finds every new one
    once it reads the file again (the rows it had read are gone: it reads afresh)."""
    path = tmp_path / "cache.sqlite"
    reader, other = ResponseCache(path, flush_every_s=0.0), ResponseCache(path)
    for index in range(30):
        other.put(f"old{index}", b"o")
    other.flush()
    assert b"o" == reader.get("old29")
    other.clear()
    for index in range(written):
        other.put(f"new{index}", b"n")
    other.flush()

    assert reader.get("old29") is None
    assert [b"n"] * written == [reader.get(f"new{index}") for index in range(written)]
    reader.close()
    other.close()


_OPS = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.sampled_from(["put", "put", "put", "clear"]),
        st.sampled_from(["a", "b", "c", "d", "e"]),
        st.binary(min_size=1, max_size=4),
    ),
    max_size=25,
)


@settings(max_examples=15, deadline=None)
@given(ops=_OPS)
def test_two_objects_on_one_file_agree_with_a_dict_at_every_step(ops: list[Any]) -> None:
    """Any interleaving of committed puts and clears by two cache objects on one file (two
    processes' worth), each reading the file's keys at every lookup: after every operation,
    every lookup of either object agrees with a plain dict that saw the same operations (the
    key index never hides an entry the file holds, whatever was cleared and written since)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cache.sqlite"
        caches = [ResponseCache(path, flush_every_s=0.0), ResponseCache(path, flush_every_s=0.0)]
        model: dict[str, bytes] = {}
        for who, op, key, value in ops:
            if op == "put":
                caches[who].put(key, value)
                caches[who].flush()
                model[key] = value
            else:
                caches[who].clear()
                model.clear()
            for cache in caches:
                assert {k: model.get(k) for k in "abcde"} == {k: cache.get(k) for k in "abcde"}
        for cache in caches:
            cache.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX's")
def test_a_forked_child_uses_the_cache_on_its_own(tmp_path: Path) -> None:
    """A child made with `os.fork` while the parent holds an entry not yet written: the child
    does not serve or write the parent's pending entry, its own entries reach the file, and
    the parent then finds them and writes its own."""
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path, flush_every_s=60.0)
    cache.put("parent", b"p")
    assert b"p" == cache.get("parent")
    child = os.fork()
    if child == 0:  # pragma: no cover  (the child's report is its exit code)
        code = 1
        try:
            ok = cache.get("parent") is None
            cache.put("child", b"c")
            cache.flush()
            code = 0 if ok and b"c" == cache.get("child") else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)

    assert 0 == os.waitstatus_to_exitcode(status)
    cache.flush()
    reader = ResponseCache(path)
    assert (b"p", b"c") == (reader.get("parent"), reader.get("child"))
    reader.close()
    cache.close()


def test_a_file_of_the_earlier_table_layout_is_read_and_written(tmp_path: Path) -> None:
    """A cache file whose table an earlier release made (`WITHOUT ROWID`) keeps its entries
    and takes new ones: the layout changed, not the columns."""
    path = tmp_path / "cache.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as old:
        old.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, value BLOB NOT NULL, "
            "stored_at REAL NOT NULL) WITHOUT ROWID"
        )
        old.execute("INSERT INTO responses VALUES ('old', x'6f6c64', 0)")
        old.commit()
    with ResponseCache(path) as cache:
        cache.put("new", b"new")
        cache.put("old", b"replaced")
        cache.flush()

    with ResponseCache(path) as reader:
        assert b"new" == reader.get("new")
        assert b"replaced" == reader.get("old")


def test_a_cache_hit_costs_no_model_call(tmp_path: Path, closing: contextlib.ExitStack) -> None:
    """The second identical request is served from the cache: no HTTP request, no tokens."""
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with ScriptedServer([GOOD, GOOD]) as server:
        client = _wrapped(closing, server, cache)
        first = client.chat.completions.create(model="m", messages=USER, response_model=Invoice)
        second = client.chat.completions.create(model="m", messages=USER, response_model=Invoice)
        requests = len(server.requests)

    assert 1 == requests
    assert isinstance(first, Healed)
    assert isinstance(second, Healed)
    assert first.value == second.value
    assert (1, 0) == (first.calls, second.calls)
    assert (0, 1) == (first.usage.cache_hits, second.usage.cache_hits)
    assert 0 == second.usage.requests
    assert 0 == second.usage.total_tokens
    assert second.attempts[0].cache_hit
    assert not first.attempts[0].cache_hit
    assert 1 == len(cache)


def test_a_hit_is_healed_locally_again_with_the_same_flags() -> None:
    """A stored answer that needed L1 is read by L1 again: the same value and flags."""
    cache = ResponseCache.memory()
    healer = healjson.Healer(Invoice, cache=cache)
    model = ScriptedModel([f"Sure:\n```json\n{GOOD}\n```"])

    first = healer.run(model, USER)
    second = healer.run(model, USER)

    assert 1 == len(model.calls)
    assert first.flags == second.flags
    assert first.value == second.value
    assert second.attempts[0].cache_hit


def test_a_tightened_contract_turns_a_stale_hit_into_a_miss_and_says_why() -> None:
    """The same rule, now stricter (its code unchanged: it reads a limit that moved): the stored
    answer fails it, the event says so, and the model is called."""
    limit = {"max": 100}

    @contract(fields=("total",))
    def within_limit(value: Invoice, ctx: Any) -> Any:
        if value.total > limit["max"]:
            return healjson.Violation(f"total must be at most {limit['max']}")
        return None

    cache = ResponseCache.memory()
    healer = healjson.Healer(Invoice, contracts=[within_limit], cache=cache)
    model = ScriptedModel([GOOD, '{"number": "INV-1", "total": 10}'])

    first = healer.run(model, USER)
    limit["max"] = 20
    with capture_events() as events:
        second = healer.run(model, USER)

    assert isinstance(first, Healed)
    assert isinstance(second, Healed)
    assert 10 == second.value.total
    assert 2 == len(model.calls)
    assert 1 == second.calls
    assert not second.attempts[0].cache_hit
    (miss,) = named(events, "healjson.cache_miss")
    assert "fails today's checks" in miss["why"]
    assert "total must be at most 20" in miss["why"]


def test_a_stale_hit_is_replaced_by_the_answer_that_passes() -> None:
    """After a stale hit the new healed answer is stored: the third run is a hit again."""
    limit = {"max": 100}

    @contract(fields=("total",))
    def small(value: Invoice, ctx: Any) -> Any:
        return None if value.total <= limit["max"] else healjson.Violation("too large")

    cache = ResponseCache.memory()
    healer = healjson.Healer(Invoice, contracts=[small], cache=cache)
    model = ScriptedModel([GOOD, '{"number": "INV-1", "total": 10}'])

    healer.run(model, USER)
    limit["max"] = 20
    healer.run(model, USER)
    third = healer.run(model, USER)

    assert 2 == len(model.calls)
    assert third.attempts[0].cache_hit
    assert 10 == third.value.total


def test_another_context_or_another_schema_misses() -> None:
    """The validation context and the target's schema are part of the key."""
    cache = ResponseCache.memory()
    model = ScriptedModel([GOOD] * 4)
    invoices = healjson.Healer(Invoice, cache=cache)
    receipts = healjson.Healer(Receipt, cache=cache)

    invoices.run(model, USER, context={"tenant": "a"})
    invoices.run(model, USER, context={"tenant": "b"})
    receipts.run(model, USER, context={"tenant": "a"})
    again = invoices.run(model, USER, context={"tenant": "a"})

    assert 3 == len(model.calls)
    assert again.attempts[0].cache_hit


def test_other_messages_or_parameters_miss_and_transport_parameters_do_not_count() -> None:
    """The messages and the model's parameters make the key; a timeout or extra headers do not."""
    cache = ResponseCache.memory()
    model = ScriptedModel([GOOD] * 4)
    healer = healjson.Healer(Invoice, cache=cache)

    healer.run(model, USER, model="m", temperature=0)
    healer.run(model, USER, model="m", temperature=0.5)
    healer.run(model, [{"role": "user", "content": "another"}], model="m", temperature=0)
    hit = healer.run(model, USER, temperature=0, model="m", timeout=3, extra_headers={"a": "b"})

    assert 3 == len(model.calls)
    assert hit.attempts[0].cache_hit


def test_an_edited_contract_is_another_key() -> None:
    """A rule's code is part of its fingerprint: an edited rule of the same name misses."""

    def make(bound: int) -> Any:
        if bound > 50:

            @contract(fields=("total",), name="bounded")
            def loose(value: Invoice, ctx: Any) -> Any:
                return None if value.total <= 1000 else healjson.Violation("too large")

            return loose

        @contract(fields=("total",), name="bounded")
        def tight(value: Invoice, ctx: Any) -> Any:
            return None if value.total < 999 and value.total >= 0 else healjson.Violation("no")

        return tight

    one = spec_fingerprint(HealSpec(target_for(Invoice), (make(100),)))
    two = spec_fingerprint(HealSpec(target_for(Invoice), (make(1),)))
    same = spec_fingerprint(HealSpec(target_for(Invoice), (make(100),)))

    assert one != two
    assert one == same


def tagged(text: str) -> ReadReply | None:
    """A reply reader of `<answer>` tags (for the fingerprint test)."""
    start, end = text.find("<answer>"), text.find("</answer>")
    return None if start < 0 or end < 0 else ReadReply((text[start + 8 : end],))


def fenced(text: str) -> ReadReply | None:
    """Another reply reader (for the fingerprint test)."""
    return None


def test_a_reply_reader_is_part_of_the_fingerprint_and_none_keeps_the_old_key() -> None:
    """Healers that read replies differently never share an answer's key; a healer without a
    reader keeps the key it had before readers existed."""
    plain = spec_fingerprint(HealSpec(target_for(Invoice)))
    one = spec_fingerprint(HealSpec(target_for(Invoice), reply_reader=tagged))
    other = spec_fingerprint(HealSpec(target_for(Invoice), reply_reader=fenced))

    assert len({plain, one, other}) == 3
    assert spec_fingerprint(HealSpec(target_for(Invoice), reply_reader=tagged)) == one
    assert "reader" not in plain


def test_a_degraded_run_stores_nothing() -> None:
    """Only a healed answer is kept."""
    cache = ResponseCache.memory()
    healer = healjson.Healer(Invoice, cache=cache, policy=HealPolicy(max_attempts=1))

    outcome = healer.run(ScriptedModel(["no JSON here"]), USER)

    assert not outcome.ok
    assert 0 == len(cache)


def test_an_unreadable_entry_is_a_miss_and_says_why() -> None:
    """A corrupt entry (another version's, a broken write) is not served; the model is called."""
    cache = ResponseCache.memory()
    healer = healjson.Healer(Invoice, cache=cache)
    model = ScriptedModel([GOOD, GOOD])
    healer.run(model, USER)
    (key,) = cache._memory or {}
    cache.put(key, b"{not json")

    with capture_events() as events:
        outcome = healer.run(model, USER)

    assert 2 == len(model.calls)
    assert outcome.ok
    assert ["the entry is not JSON"] == [e["why"] for e in named(events, "healjson.cache_miss")]
    assert "the entry is not one this version reads" == read_entry(b'{"v": 9}')


def test_a_store_that_fails_is_a_miss_and_the_run_goes_on() -> None:
    """A cache that raises on read or write never breaks a run: a `healjson.cache_error` event."""

    class Broken:
        def get(self, key: str) -> bytes:
            raise OSError("disk gone")

        def put(self, key: str, value: bytes) -> None:
            raise OSError("disk gone")

    healer = healjson.Healer(Invoice, cache=Broken())
    with capture_events() as events:
        outcome = healer.run(ScriptedModel([GOOD]), USER)

    assert outcome.ok
    assert ["get", "put"] == [e["operation"] for e in named(events, "healjson.cache_error")]


@pytest.mark.parametrize("blocking", ["raises", "unreadable as a bool"])
def test_a_store_whose_blocking_flag_cannot_be_read_is_used_from_a_worker_thread(
    blocking: str,
) -> None:
    """An async run with a store whose `blocking` raises when read (or when read as a bool)
    heals, the store used from a worker thread as any blocking store is."""

    class Flag:
        def __bool__(self) -> bool:
            raise RuntimeError("no truth value")

    class Hostile:
        def __init__(self) -> None:
            self.threads: set[int] = set()

        @property
        def blocking(self) -> Any:
            if blocking == "raises":
                raise RuntimeError("no such flag")
            return Flag()

        def get(self, key: str) -> bytes | None:
            self.threads.add(threading.get_ident())
            return None

        def put(self, key: str, value: bytes) -> None:
            self.threads.add(threading.get_ident())

    store = Hostile()
    healer = healjson.Healer(Invoice, cache=store)

    async def main() -> Any:
        return await healer.arun(ScriptedModel([GOOD]), USER), threading.get_ident()

    outcome, loop_thread = asyncio.run(main())
    assert outcome.ok
    assert store.threads
    assert loop_thread not in store.threads


def test_a_cache_that_is_not_a_store_fails_at_construction() -> None:
    """A configuration mistake raises at once, saying what a cache must be."""
    with pytest.raises(TypeError, match="ResponseCache"):
        healjson.Healer(Invoice, cache="cache.sqlite")  # type: ignore[arg-type]


def test_the_async_driver_reads_and_writes_the_cache(tmp_path: Path) -> None:
    """`AsyncOpenAI` through the cache: the second call is a hit, read off the event loop."""
    cache = ResponseCache(tmp_path / "cache.sqlite")

    async def main(server: ScriptedServer) -> list[Any]:
        http = openai.DefaultAsyncHttpxClient(verify=TLS)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            client = healjson.wrap(sdk, cache=cache)
            return [
                await client.chat.completions.create(
                    model="m", messages=USER, response_model=Invoice
                )
                for _ in range(2)
            ]

    with ScriptedServer([GOOD, GOOD]) as server:
        first, second = asyncio.run(main(server))
        requests = len(server.requests)

    assert 1 == requests
    assert second.attempts[0].cache_hit
    assert first.value == second.value


def test_a_replayed_run_neither_reads_nor_writes_the_cache() -> None:
    """`Healer.replay` treats every lookup as a miss and stores nothing."""
    cache = ResponseCache.memory()
    healer = healjson.Healer(Invoice, cache=cache)
    healer.run(ScriptedModel([GOOD]), USER)
    from healjson._core.run.replay import replied

    outcome = healer.replay(USER, [replied('{"number": "INV-2", "total": 1}')])

    assert isinstance(outcome, Healed)
    assert "INV-2" == outcome.value.number
    assert 1 == len(cache)


def test_the_decorator_takes_a_cache() -> None:
    """`@heal(..., cache=...)`: the decorated call is not made again for the same messages."""
    calls: list[Any] = []

    @healjson.heal(Invoice, cache=ResponseCache.memory())
    def extract(messages: Any, **params: Any) -> str:
        calls.append(messages)
        return GOOD

    first = extract(USER)
    second = extract(USER)

    assert 1 == len(calls)
    assert first.value == second.value
    assert second.attempts[0].cache_hit


def test_the_cache_survives_a_new_process(tmp_path: Path) -> None:
    """An answer stored by one process is served to the next one, with no model call."""
    path = tmp_path / "cache.sqlite"
    with ResponseCache(path) as cache:  # leaving the block commits what is pending
        healjson.Healer(Invoice, cache=cache).run(ScriptedModel([GOOD]), USER)
    code = f"""
import json, sys
sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(TESTS)!r}]
import healjson
from test_response_cache import Invoice, USER
def call(messages, **params):
    raise AssertionError("the model was called")
outcome = healjson.Healer(Invoice, cache=healjson.ResponseCache({str(path)!r})).run(call, USER)
print(json.dumps([outcome.ok, outcome.calls, outcome.usage.cache_hits, outcome.value.total]))
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )

    assert [True, 0, 1, 40] == json.loads(done.stdout.strip().splitlines()[-1])


def _write_many(path: str, worker: int, count: int) -> None:
    """Write `count` entries from 2 threads of this process."""
    cache = ResponseCache(path)

    def write(thread: int) -> None:
        for index in range(count // 2):
            cache.put(f"{worker}-{thread}-{index}", json.dumps([worker, thread, index]).encode())

    threads = [threading.Thread(target=write, args=(thread,)) for thread in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cache.flush()


@pytest.mark.slow  # fresh interpreters
def test_eight_threads_and_four_processes_writing_at_once_leave_it_whole(tmp_path: Path) -> None:
    """8 threads here and 4 processes (2 threads each) write to one file at once: every entry is
    there, readable, and SQLite finds the file sound."""
    path = tmp_path / "cache.sqlite"
    cache = ResponseCache(path)
    per_worker = 200
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_write_many, args=(str(path), worker, per_worker))
        for worker in range(4)
    ]

    def local(thread: int) -> None:
        for index in range(per_worker):
            cache.put(f"local-{thread}-{index}", json.dumps([thread, index]).encode())
            assert cache.get(f"local-{thread}-{index}") is not None

    threads = [threading.Thread(target=local, args=(thread,)) for thread in range(8)]
    for process in processes:
        process.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for process in processes:
        process.join(timeout=120)

    assert [0, 0, 0, 0] == [process.exitcode for process in processes]
    assert 8 * per_worker + 4 * per_worker == len(cache)
    assert [3, 1, 5] == json.loads(cache.get("3-1-5") or b"null")
    with sqlite3.connect(path) as check:
        assert [("ok",)] == check.execute("PRAGMA integrity_check").fetchall()


def test_no_secret_reaches_the_cache_file(tmp_path: Path, closing: contextlib.ExitStack) -> None:
    """The client's key, a key passed per call and a key the model echoes are nowhere in the
    file (its WAL included): an answer holding the key is not stored at all, and a request is
    kept only as a hash."""
    path = tmp_path / "cache.sqlite"
    echoed = f'{{"number": "INV-{SECRET}", "total": 40}}'
    cache = ResponseCache(path)
    with ScriptedServer([echoed, GOOD]) as server:
        client = _wrapped(closing, server, cache, api_key=SECRET)
        outcomes = [
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": f"my key is {SECRET}, invoice {n}"}],
                response_model=Invoice,
                extra_query={"api_key": SECRET},
            )
            for n in (1, 2)
        ]

    assert all(outcome.ok for outcome in outcomes)
    assert 1 == len(cache)  # the clean answer only
    cache.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert SECRET.encode() not in stored
    assert b"[redacted]" not in stored
    assert GOOD.encode().replace(b'"', b'\\"') in stored


def test_requests_that_differ_inside_a_credential_span_get_their_own_answers() -> None:
    """Two requests that differ only inside a credential-shaped span (`password=...`) have
    their own keys: the second is not served the first's answer."""
    cache = ResponseCache.memory()
    healer = healjson.Healer(Invoice, cache=cache)
    model = ScriptedModel(['{"number": "weak", "total": 1}', '{"number": "strong", "total": 2}'])

    def rate(password: str) -> Any:
        line = f"Rate this config line: password={password}"
        return healer.run(model, [{"role": "user", "content": line}])

    weak, strong = rate("hunter22"), rate("Xk9#Lq2!vP_77zz")
    again = rate("hunter22")

    assert ("weak", "strong", "weak") == (
        weak.value.number,
        strong.value.number,
        again.value.number,
    )
    assert 2 == len(model.calls)
    assert (False, True) == (strong.attempts[0].cache_hit, again.attempts[0].cache_hit)


class Login(BaseModel):
    user: str
    password: str


def test_an_answer_the_redactor_would_change_is_not_stored_so_never_served_altered() -> None:
    """An answer holding a credential shape is healed as the model gave it and not stored: the
    same request is a miss next time (the model is called), never a hit with `[redacted]`."""
    cache = ResponseCache.memory()
    healer = healjson.Healer(Login, cache=cache)
    answer = '{"user": "alice", "password": "hunter22"}'
    model = ScriptedModel([answer, answer])
    request = [{"role": "user", "content": "Extract: user=alice password=hunter22"}]

    first, second = healer.run(model, request), healer.run(model, request)

    assert 0 == len(cache)
    assert 2 == len(model.calls)
    assert ["hunter22", "hunter22"] == [first.value.password, second.value.password]
    assert not second.attempts[0].cache_hit


def test_an_entry_written_under_the_earlier_key_scheme_is_never_found() -> None:
    """The key scheme's version is in every key: an entry an earlier release wrote under the
    key of the redacted request (its text redacted) is not served to the request as sent."""
    cache = ResponseCache.memory()
    healer = healjson.Healer(Login, cache=cache)
    request = ({"role": "user", "content": "Extract: user=alice password=hunter22"},)
    fingerprint = spec_fingerprint(healer.spec).replace(VERSION, "healjson-response-cache/1")
    redacted = redact_text(to_json([request, []]).decode())
    earlier = hashlib.sha256(fingerprint.encode() + b"\0" + redacted.encode()).hexdigest()
    text = '{"user": "alice", "password": "[redacted]"}'
    cache.put(earlier, json.dumps({"v": 1, "text": text, "usage": [0, 0, 1]}).encode())
    model = ScriptedModel(['{"user": "alice", "password": "hunter22"}'])

    outcome = healer.run(model, list(request))

    assert 1 == len(model.calls)
    assert "hunter22" == outcome.value.password


def test_a_deeply_nested_entry_is_a_miss_not_an_exception(tmp_path: Path) -> None:
    """An entry nested past Python's recursion limit (a corrupt file, a hostile shared store)
    is a miss that says why, in the sync and the async driver; the model is called."""
    path = tmp_path / "cache.sqlite"
    with ResponseCache(path) as cache:
        healjson.Healer(Invoice, cache=cache).run(ScriptedModel([GOOD]), USER)
    deep = b"[" * 100_000 + b"]" * 100_000
    model = ScriptedModel([GOOD, GOOD])
    with capture_events() as events:
        outcomes = []
        for run in (
            lambda healer: healer.run(model, USER),
            lambda healer: asyncio.run(healer.arun(model, USER)),
        ):
            with sqlite3.connect(path) as db:  # the file's one entry overwritten
                db.execute("UPDATE responses SET value = ?", (deep,))
            db.close()
            with ResponseCache(path) as cache:
                outcomes.append(run(healjson.Healer(Invoice, cache=cache)))

    assert [True, True] == [outcome.ok for outcome in outcomes]
    assert 2 == len(model.calls)
    whys = [event["why"] for event in named(events, "healjson.cache_miss")]
    assert ["the entry nests too deeply to read"] * 2 == whys


def test_a_request_pydantic_cannot_write_as_utf8_is_keyed_not_raised() -> None:
    """A message holding a lone surrogate (no UTF-8 spelling) still has a key of its own: the
    run with a cache heals it as a run without one does."""
    healer = healjson.Healer(Invoice, cache=ResponseCache.memory())
    model = ScriptedModel([GOOD, GOOD])

    one = healer.run(model, [{"role": "user", "content": "invoice \ud800"}])
    two = healer.run(model, [{"role": "user", "content": "invoice \\ud800"}])

    assert one.ok
    assert two.ok
    assert 2 == len(model.calls)


def test_the_key_is_the_same_across_processes_and_hides_the_request() -> None:
    """A key is a hex SHA-256: stable for the same request, different for another."""
    fingerprint = spec_fingerprint(HealSpec(target_for(Invoice)))
    ctx = ContractContext()
    one = cache_key(fingerprint, tuple(USER), {"model": "m"}, ctx)
    two = cache_key(fingerprint, tuple(USER), {"model": "m"}, ctx)
    three = cache_key(fingerprint, tuple(USER), {"model": "n"}, ctx)

    assert one == two
    assert one != three
    assert 64 == len(one)
    assert "INV-1" not in one


def test_the_key_is_the_documented_hash_of_the_request_as_sent() -> None:
    """A key is SHA-256 over the fingerprint (the key scheme's version in it), a zero byte, the
    request as JSON (messages, sorted parameters, transport ones left out) and, with a
    context, a zero byte and the context: the formula `docs/caching.md` states."""
    fingerprint = spec_fingerprint(HealSpec(target_for(Invoice)))
    request = to_json([tuple(USER), sorted({"model": "m", "seed": 7}.items())])
    context = {"tenant": "acme"}
    plain = hashlib.sha256(fingerprint.encode() + b"\0" + request).hexdigest()
    with_context = hashlib.sha256(
        fingerprint.encode() + b"\0" + request + b"\0" + to_json(context)
    ).hexdigest()

    params = {"model": "m", "seed": 7, "timeout": 3}
    assert plain == cache_key(fingerprint, tuple(USER), params, ContractContext())
    assert with_context == cache_key(
        fingerprint, tuple(USER), params, ContractContext(extra=context)
    )


class _Keyed:
    """A client holding a key, for a secrets scope."""

    api_key = SECRET


_PARAM_VALUES = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.booleans(),
    st.text(max_size=12),
    st.builds(lambda a, b: a + SECRET + b, st.text(max_size=4), st.text(max_size=4)),
)
_PARAMS = st.dictionaries(
    st.sampled_from(["model", "user", "seed", "note", "api_key", "timeout"]), _PARAM_VALUES
)
_SPANS = st.sampled_from(["password=", "Authorization: Bearer ", "api_key=", "my key is ", ""])
_SECRETS = st.one_of(st.text(max_size=16), st.just(SECRET), st.just("[redacted]"))


def _as_sent(params: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """Parameters as they are sent (transport ones left out), each value with its JSON type."""
    return sorted((k, type(v).__name__, v) for k, v in params.items() if k != "timeout")


@settings(max_examples=40, deadline=None)
@given(span=_SPANS, one=_SECRETS, two=_SECRETS, params=_PARAMS, other=_PARAMS)
def test_two_requests_that_differ_anywhere_never_share_a_key(
    span: str, one: str, two: str, params: dict[str, Any], other: dict[str, Any]
) -> None:
    """Inside a client's secrets scope, two requests share a key exactly when they are the
    same as sent: a difference inside a credential-shaped span, or in a parameter holding the
    client's key, is another key."""
    fingerprint = spec_fingerprint(HealSpec(target_for(Invoice)))
    first = ({"role": "user", "content": f"Rate this: {span}{one}"},)
    second = ({"role": "user", "content": f"Rate this: {span}{two}"},)
    with secrets_scope(_Keyed(), params):
        a = cache_key(fingerprint, first, params, ContractContext())
        b = cache_key(fingerprint, second, other, ContractContext())

    assert (a == b) == (one == two and _as_sent(params) == _as_sent(other))


_ANSWERS = st.builds(
    lambda head, span, value: f'{{"note": "{head}{span}{value}"}}',
    st.text(max_size=8),
    st.sampled_from(["", "password=", "Bearer ", "Authorization: ", "my key is "]),
    st.one_of(st.text(max_size=16), st.just(SECRET)),
)


@settings(max_examples=40, deadline=None)
@given(text=_ANSWERS)
def test_an_entry_is_the_answer_verbatim_or_nothing(text: str) -> None:
    """Inside a client's secrets scope, an entry is written only when the redactor would leave
    it as it is, and then it reads back as the very answer; one the redactor would change is
    not written at all."""
    with secrets_scope(_Keyed(), {}):
        stored = write_entry(text, "stop", "m", Usage())
        untouched = redact_text(text) == text
        clean = stored is None or redact_text(stored.decode()) == stored.decode()

    assert clean
    if not untouched:
        assert stored is None
    if stored is not None:
        found = read_entry(stored)
        assert isinstance(found, Reply)
        assert text == found.content


def test_the_command_line_batch_serves_repeated_prompts_from_the_cache(tmp_path: Path) -> None:
    """`healjson batch --cache PATH`: a second run over the same prompts makes no model call."""
    from typer.testing import CliRunner

    from healjson._cli.app import app

    rows = tmp_path / "in.jsonl"
    rows.write_text(
        "".join(json.dumps({"id": str(i), "prompt": f"invoice {i}"}) + "\n" for i in range(3))
    )

    def answer(body: dict[str, Any]) -> ScriptedReply:
        row = str(body["messages"][-1]["content"])[-1]
        return ScriptedReply(content=f'{{"number": "INV-{row}", "total": {row}}}')

    with ScriptedServer([answer], repeat=True) as server:
        for out in ("a.jsonl", "b.jsonl"):
            result = CliRunner().invoke(
                app,
                [
                    "batch",
                    str(rows),
                    "--out",
                    str(tmp_path / out),
                    "--model",
                    "m",
                    "--response-model",
                    f"{Path(__file__).resolve()}:Invoice",
                    "--base-url",
                    server.base_url,
                    "--api-key",
                    "k",
                    "--cache",
                    str(tmp_path / "cache.sqlite"),
                    "--no-progress",
                ],
            )
            assert 0 == result.exit_code, result.output
        requests = len(server.requests)

    assert 3 == requests
    second = [json.loads(line) for line in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert 3 == len(second)
    assert all(row.get("ok") for row in second)
