"""The healer cache under concurrency, and keys that do not rebuild healers needlessly.

One wrapped client shared by 16 threads (10 calls each), or by 200 asyncio tasks, with a fresh
`fallback=`, `contracts=` list and `examples=` list on every call: no call may raise, every
outcome must be the one its own call asked for, and equal-by-value examples must not rebuild
the healer.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy, Reason, Violation, contract
from healjson.adapters import _cache
from healjson.adapters._cache import HealerCache
from healjson.testing import ScriptedServer
from sdk_calls import TLS as _SSL


class Invoice(BaseModel):
    number: str
    total: int


GOOD = '{"number": "INV-1", "total": 5}'
EXPECTED = Invoice(number="INV-1", total=5)
USER = [{"role": "user", "content": "Invoice INV-1 over 5 EUR."}]
ONE_CALL = HealPolicy(max_attempts=1)
CALLS_PER_THREAD = 10  # each thread's calls cycle through both verdicts and the three examples


@contract(fields=("total",))
def total_is_five(invoice: Invoice) -> Violation | None:
    """Passes for the scripted answer."""
    return None if invoice.total == 5 else Violation("total must be 5")


@contract(fields=("total",))
def total_is_six(invoice: Invoice) -> Violation | None:
    """Fails for the scripted answer."""
    return None if invoice.total in (0, 6) else Violation("total must be 6")


def _example(index: int) -> list[dict[str, Any]]:
    """A fresh list per call, equal by value for calls with the same `index % 3`."""
    return [{"number": f"EX-{index % 3}", "total": 6}]


def _call(index: int) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """The keyword arguments of call `index`, its own fallback object, and whether it heals."""
    fallback = {"call": index}
    heals = index % 2 == 0
    kwargs = {
        "model": "m",
        "messages": USER,
        "response_model": Invoice,
        "contracts": [total_is_five if heals else total_is_six],
        "examples": _example(index),
        "fallback": fallback,
        "policy": ONE_CALL,
    }
    return kwargs, fallback, heals


def _check(outcome: Any, fallback: dict[str, Any], heals: bool) -> None:
    if heals:
        assert isinstance(outcome, Healed)
        assert EXPECTED == outcome.value
    else:
        assert isinstance(outcome, Degraded)
        assert Reason.INVALID_OUTPUT == outcome.reason
        assert outcome.fallback is fallback  # this call's own fallback, not another call's


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as the interpreter allows, to expose races."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


@pytest.fixture
def constructions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every `Healer` the cache builds is recorded here."""
    built: list[Any] = []

    class CountingHealer(Healer[Any]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            built.append(self)

    monkeypatch.setattr(_cache, "Healer", CountingHealer)
    return built


def test_sixteen_threads_share_one_sync_client_without_errors(fast_switching: None) -> None:
    """16 threads x 10 calls with per-call fallbacks, contracts and examples: all correct."""
    failures: list[BaseException] = []
    start = threading.Barrier(16)

    with (
        ScriptedServer([GOOD], repeat=True) as server,
        openai.OpenAI(
            base_url=server.base_url,
            api_key="test",
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=_SSL),
        ) as sdk,
    ):
        client = healjson.wrap(sdk)

        def worker(thread: int) -> None:
            try:
                start.wait(timeout=30)
                for step in range(CALLS_PER_THREAD):
                    kwargs, fallback, heals = _call(thread * CALLS_PER_THREAD + step)
                    _check(client.chat.completions.create(**kwargs), fallback, heals)
            except BaseException as exc:  # collected: an exception in a thread is a failure
                failures.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)

    assert [] == failures
    assert 16 * CALLS_PER_THREAD == len(server.requests)


def test_two_hundred_tasks_share_one_async_client_without_errors() -> None:
    """200 concurrent tasks with per-call fallbacks, contracts and examples: all correct."""

    async def main() -> list[tuple[Any, dict[str, Any], bool]]:
        # all 200 tasks run through the healer cache at once; their requests share 32
        # connections, so a loaded machine's accept backlog cannot turn this into a connect
        # timeout (the SDK's is 5 s) that has nothing to do with the cache under test
        http = openai.DefaultAsyncHttpxClient(
            verify=_SSL, limits=httpx.Limits(max_connections=32, max_keepalive_connections=32)
        )
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            client = healjson.wrap(sdk)

            async def one(index: int) -> tuple[Any, dict[str, Any], bool]:
                kwargs, fallback, heals = _call(index)
                return await client.chat.completions.create(**kwargs), fallback, heals

            return await asyncio.gather(*(one(index) for index in range(200)))

    with ScriptedServer([GOOD], repeat=True) as server:
        results = asyncio.run(main())

    for outcome, fallback, heals in results:
        _check(outcome, fallback, heals)
    assert 200 == len(server.requests)


def test_the_cache_itself_survives_sixteen_threads_evicting(fast_switching: None) -> None:
    """16 threads cycling through more configurations than the cache holds never raise."""
    cache = HealerCache()
    rules = [contract(fields=("total",))(lambda invoice: None) for _ in range(300)]
    failures: list[BaseException] = []
    start = threading.Barrier(16)

    def worker(thread: int) -> None:
        try:
            start.wait(timeout=30)
            for step in range(60):
                rule = rules[(thread * 37 + step * 7) % len(rules)]
                fallback = {"thread": thread, "step": step}
                healer = cache.get(Invoice, [rule], ONE_CALL, fallback, _example(step))
                assert healer.fallback is fallback
                assert rule is healer.contracts[0]
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert [] == failures
    assert 256 == len(cache)


def test_fresh_but_equal_examples_do_not_rebuild_the_healer(constructions: list[Any]) -> None:
    """A new `examples=[{...}]` list per call, equal by value, reuses the one healer."""
    with (
        ScriptedServer([GOOD], repeat=True) as server,
        openai.OpenAI(
            base_url=server.base_url,
            api_key="test",
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=_SSL),
        ) as sdk,
    ):
        client = healjson.wrap(sdk)
        outcomes = [
            client.chat.completions.create(
                model="m",
                messages=USER,
                response_model=Invoice,
                contracts=[total_is_five],
                examples=[{"number": "EX-1", "total": 6}],
            )
            for _ in range(5)
        ]

    assert [True] * 5 == [outcome.ok for outcome in outcomes]
    assert 1 == len(constructions)


def test_a_per_call_fallback_costs_a_copy_not_a_build(constructions: list[Any]) -> None:
    """Each call's fallback gets a cheap copy of the one healer that shares its golden example."""
    cache = HealerCache()
    fallbacks = [{"n": n} for n in range(5)]

    healers = [cache.get(Invoice, [total_is_five], ONE_CALL, f, _example(0)) for f in fallbacks]
    base = cache.get(Invoice, [total_is_five], ONE_CALL, None, _example(0))

    assert 1 == len(constructions)
    assert fallbacks == [healer.fallback for healer in healers]
    assert None is base.fallback
    assert base is cache.get(Invoice, (total_is_five,), ONE_CALL, None, tuple(_example(0)))
    assert all(healer.spec.example is base.spec.example for healer in healers)
    assert all(healer.spec.fallback is healer.fallback for healer in healers)


def test_different_examples_or_contracts_build_different_healers(constructions: list[Any]) -> None:
    """Examples differing by value, or other contract objects, are other configurations."""
    cache = HealerCache()

    first = cache.get(Invoice, [total_is_five], ONE_CALL, None, _example(0))
    other_example = cache.get(Invoice, [total_is_five], ONE_CALL, None, _example(1))
    other_contract = cache.get(Invoice, [total_is_six], ONE_CALL, None, _example(0))
    equal_policy = cache.get(
        Invoice, [total_is_five], HealPolicy(max_attempts=1), None, _example(0)
    )

    assert 3 == len(constructions)
    assert len({id(first), id(other_example), id(other_contract)}) == 3
    assert first is equal_policy


def test_the_least_recently_used_configuration_is_evicted_first(constructions: list[Any]) -> None:
    """Past 256 entries the cache drops the configuration used longest ago."""
    cache = HealerCache()
    rules = [contract(fields=("total",))(lambda invoice: None) for _ in range(257)]
    for rule in rules[:256]:
        cache.get(Invoice, [rule], ONE_CALL, None, ())
    cache.get(Invoice, [rules[0]], ONE_CALL, None, ())  # used again: now the most recent
    cache.get(Invoice, [rules[256]], ONE_CALL, None, ())  # evicts rules[1], not rules[0]
    built = len(constructions)

    cache.get(Invoice, [rules[0]], ONE_CALL, None, ())
    assert built == len(constructions)
    cache.get(Invoice, [rules[1]], ONE_CALL, None, ())
    assert built + 1 == len(constructions)
    assert 256 == len(cache)


def test_examples_are_keyed_by_the_json_they_validate_as() -> None:
    """A model instance and the equal dict are one configuration: the healer checks both as
    the same JSON."""
    cache = HealerCache()

    first = cache.get(Invoice, (), ONE_CALL, None, [Invoice(number="EX", total=6)])

    assert first is cache.get(Invoice, (), ONE_CALL, None, [{"number": "EX", "total": 6}])
    assert first is not cache.get(Invoice, (), ONE_CALL, None, ['{"number": "EX", "total": 6}'])


def test_an_invalid_example_raises_on_every_call_and_poisons_nothing() -> None:
    """A configuration error raises each time it is asked for; other configurations still work."""
    cache = HealerCache()

    for _ in range(2):
        with pytest.raises(ValueError, match="does not validate"):
            cache.get(Invoice, (), ONE_CALL, None, [{"number": 1}])
    assert isinstance(cache.get(Invoice, (), ONE_CALL, None, ()), Healer)
