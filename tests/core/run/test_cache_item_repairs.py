"""A response cache after a per-item repair: what it stores is the merged list as L1 read it (the
first answer's accepted items and the repair's items spliced, the model's own JSON), never a dump
of the validated value, so a hit validates the same data the live run validated, once, into an
equal value (a non-idempotent validator, a `SecretStr`, a field left out of dumps)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import openai
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, SecretStr, field_validator

import healjson
from healjson.testing import ScriptedServer
from pinned import pinned
from sdk_calls import TLS


class Item(BaseModel):
    sku: str
    cents: int  # the model gives dollars: a validator that is not idempotent on its output
    note: str = Field(default="none", exclude=True)  # never in a dump of the value
    pin: SecretStr | None = None  # dumped as `**********`

    @field_validator("cents", mode="before")
    @classmethod
    def dollars_to_cents(cls, value: Any) -> int:
        return round(float(value) * 100)


class DictStore:
    """A store (`get` / `put`) that shows what was put."""

    def __init__(self) -> None:
        self.entries: dict[str, bytes] = {}

    def get(self, key: str) -> bytes | None:
        return self.entries.get(key)

    def put(self, key: str, value: bytes) -> None:
        self.entries[key] = value


FIRST = [{"sku": "A", "cents": 1.5, "note": "fragile", "pin": "1234-5678"}, {"sku": "B"}]
REPAIR = [{"sku": "B", "cents": 2.25, "note": "heavy"}]


def _seen(items: list[Item]) -> list[tuple[Any, ...]]:
    return [(i.sku, i.cents, i.note, i.pin and i.pin.get_secret_value()) for i in items]


def test_a_hit_after_a_per_item_repair_over_http_equals_the_first_value(
    closing: contextlib.ExitStack,
) -> None:
    """A wrapped client's run repaired per item, then the same request again: the hit makes no
    call and its value is the first run's (cents once, the pin and the excluded note kept)."""
    with ScriptedServer([json.dumps(FIRST), json.dumps(REPAIR)]) as server:
        sdk = closing.enter_context(
            openai.OpenAI(
                base_url=server.base_url,
                api_key="sk-test-0123456789abcdef",
                max_retries=0,
                http_client=openai.DefaultHttpxClient(verify=TLS),
            )
        )
        client = healjson.wrap(sdk, cache=healjson.ResponseCache.memory())
        messages = [{"role": "user", "content": "items"}]
        first = client.chat.completions.create(
            model="m", messages=messages, response_model=list[Item]
        )
        again = client.chat.completions.create(
            model="m", messages=messages, response_model=list[Item]
        )
        requests = len(server.requests)

    assert healjson.Flag.ITEMS_MERGED in first.flags
    assert 2 == requests  # the first run's two calls; the hit made none
    assert 1 == again.usage.cache_hits
    assert [("A", 150, "fragile", "1234-5678"), ("B", 225, "heavy", None)] == _seen(first.value)
    assert first.value == again.value


def test_the_entry_is_the_merged_list_the_model_said_not_the_values_dump() -> None:
    """The stored text is the first answer's accepted item and the repair's item, as the model
    wrote them (dollars, the note, the pin in its own words): no dump of the value."""
    store = DictStore()
    answers = iter([json.dumps(FIRST), json.dumps(REPAIR)])
    healer = healjson.Healer(list[Item], cache=store)
    outcome = healer.run(lambda messages, **params: next(answers), "items", model="m")

    assert outcome.ok
    (entry,) = store.entries.values()
    assert [FIRST[0], REPAIR[0]] == json.loads(json.loads(entry)["text"])


def test_the_async_driver_serves_the_same_value_from_the_cache() -> None:
    """`arun` after a per-item repair, then again: the hit's value equals the first run's."""
    answers = iter([json.dumps(FIRST), json.dumps(REPAIR)])

    async def call(messages: Any, **params: Any) -> str:
        return next(answers)

    async def twice() -> tuple[Any, Any]:
        healer = healjson.Healer(list[Item], cache=healjson.ResponseCache.memory())
        first = await healer.arun(call, "items", model="m")
        return first, await healer.arun(call, "items", model="m")

    first, again = asyncio.run(twice())

    assert healjson.Flag.ITEMS_MERGED in first.flags
    assert 0 == again.calls
    assert first.value == again.value


_ITEMS = st.lists(
    st.fixed_dictionaries(
        {
            "sku": st.text("ABCXYZ", min_size=1, max_size=4),
            "cents": st.integers(0, 99_999).map(lambda cents: cents / 100),
            "note": st.text("abc xyz", max_size=6),
            "pin": st.none() | st.text("0123456789-", min_size=1, max_size=9),
        }
    ),
    min_size=2,
    max_size=6,
)


@pinned(max_examples=20)
@given(items=_ITEMS, data=st.data())
def test_a_hit_after_any_per_item_repair_equals_the_first_value(
    items: list[dict[str, Any]], data: st.DataObject
) -> None:
    """For any list whose bad items (no `cents`) are repaired per item, the hit's value equals
    the first run's, and the first run's is each item's dollars validated once."""
    bad = data.draw(
        st.sets(st.integers(0, len(items) - 1), min_size=1, max_size=len(items) - 1), label="bad"
    )
    first = [
        {k: v for k, v in item.items() if k != "cents" or i not in bad}
        for i, item in enumerate(items)
    ]
    repair = [items[i] for i in sorted(bad)]
    answers = iter([json.dumps(first), json.dumps(repair)])
    healer = healjson.Healer(list[Item], cache=healjson.ResponseCache.memory())

    live = healer.run(lambda messages, **params: next(answers), "items", model="m")
    hit = healer.run(lambda messages, **params: next(answers), "items", model="m")

    assert healjson.Flag.ITEMS_MERGED in live.flags
    assert 0 == hit.calls
    assert [round(item["cents"] * 100) for item in items] == [i.cents for i in live.value]
    assert live.value == hit.value
