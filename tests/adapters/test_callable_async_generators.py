"""`wrap_callable` over a function whose chunks come as an async iterator.

The return-shape check accepts only what the chosen driver can consume: the async driver reads
an async iterator of chunks (an async generator function is an async function: its healed call
streams with `async for`, and `async_=True` says so for one a decorator hides), the sync driver
only an iterable; anything else is the documented "must return ..." `TypeError`, never an
internal one.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import BaseModel

import healjson

SAID = [{"role": "user", "content": "Ann is 31"}]
GOOD = '{"name": "Ann", "age": 31}'


class Person(BaseModel):
    name: str
    age: int


def chunks(text: str = GOOD, size: int = 5) -> list[dict[str, Any]]:
    """A chat completion's stream of `text`, as dicts."""
    head = {"object": "chat.completion.chunk", "model": "m"}
    out = [
        {**head, "choices": [{"index": 0, "delta": {"content": text[i : i + size]},
                              "finish_reason": None}]}
        for i in range(0, len(text), size)
    ]  # fmt: skip
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return out


async def agen(**_: Any) -> AsyncIterator[dict[str, Any]]:
    for chunk in chunks():
        yield chunk


def hidden(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` behind a decorator that hides what kind of function it is."""

    def call(**kwargs: Any) -> Any:
        return fn(**kwargs)

    return call


async def drain(stream: Any) -> Any:
    async for _ in stream:
        pass
    return stream.outcome


def test_an_async_generator_function_streams_on_the_async_path() -> None:
    """An async generator function is async: its healed stream is read by `async for`."""
    healed = healjson.wrap_callable(agen)
    assert healed.is_async
    outcome = asyncio.run(
        drain(healed(model="m", messages=SAID, response_model=Person, stream=True))
    )
    assert outcome.ok, outcome
    assert outcome.value == Person(name="Ann", age=31)
    assert outcome.calls == 1


@pytest.mark.parametrize("fn", [agen, hidden(agen)], ids=["plain", "decorated"])
def test_async_flag_reads_an_un_awaited_async_iterator(fn: Callable[..., Any]) -> None:
    """With `async_=True` a stream the function returns without an awaitable is read as it is."""
    healed = healjson.wrap_callable(fn, async_=True)
    outcome = asyncio.run(
        drain(healed(model="m", messages=SAID, response_model=Person, stream=True))
    )
    assert outcome.ok, outcome
    assert outcome.value == Person(name="Ann", age=31)


def test_a_repair_round_streams_from_the_async_generator_again() -> None:
    """A broken first stream is repaired by a second call of the async generator function."""
    texts = iter(['{"name": "Ann"}', GOOD])

    async def twice(**_: Any) -> AsyncIterator[dict[str, Any]]:
        for chunk in chunks(next(texts)):
            yield chunk

    stream = healjson.wrap_callable(twice)(
        model="m", messages=SAID, response_model=Person, stream=True
    )
    outcome = asyncio.run(drain(stream))
    assert outcome.ok, outcome
    assert outcome.calls == 2


def test_a_sync_call_returning_an_async_iterator_is_a_clear_type_error() -> None:
    """On the sync path an async iterator of chunks is the documented `TypeError`."""
    healed = healjson.wrap_callable(hidden(agen))  # looks sync: the sync driver
    assert not healed.is_async
    with pytest.raises(TypeError, match="must return") as caught:
        for _ in healed(model="m", messages=SAID, response_model=Person, stream=True):
            pass
    assert "not iterable" not in str(caught.value)
    assert "async iterator" in str(caught.value)


def test_an_async_generator_without_stream_is_a_clear_type_error() -> None:
    """Asked for a whole completion, an async generator's stream is the documented `TypeError`."""
    healed = healjson.wrap_callable(agen)
    with pytest.raises(TypeError, match="must return") as caught:
        asyncio.run(healed(model="m", messages=SAID, response_model=Person))
    assert "await" not in str(caught.value).split(";")[0]
    assert "async iterator" in str(caught.value)


def test_async_path_still_reads_a_sync_iterable_of_chunks() -> None:
    """An async function returning a plain list of chunks still streams on the async path."""

    async def listed(**_: Any) -> list[dict[str, Any]]:
        return chunks()

    outcome = asyncio.run(
        drain(
            healjson.wrap_callable(listed)(
                model="m", messages=SAID, response_model=Person, stream=True
            )
        )
    )
    assert outcome.ok, outcome


def test_a_wrapped_coroutine_function_keeps_awaiting_its_completion() -> None:
    """An async function returning a whole completion is awaited as before (decorated too)."""
    completion = {
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": GOOD}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7},
    }  # fmt: skip

    async def complete(**_: Any) -> dict[str, Any]:
        return completion

    @functools.wraps(complete)
    async def decorated(**kwargs: Any) -> dict[str, Any]:
        return await complete(**kwargs)

    for fn in (complete, decorated):
        outcome = asyncio.run(
            healjson.wrap_callable(fn)(model="m", messages=SAID, response_model=Person)
        )
        assert outcome.ok, outcome
        assert outcome.usage.prompt_tokens == 5
