"""An answer in the envelope healjson asked for is judged as the list it carries.

Under OpenAI's strict format a list target is asked for as `{"value": [...]}`. When some of its
items fail their own checks (a validator, a bound), the answer is judged as that list, exactly
as the bare array would be: the diagnostics are the items' (`[1].sku`), the repair asks for the
failing items only, the good items are kept, and a stream never takes back an item it handed
out. An object that is not that envelope (other keys beside the list, a value that is no list,
an item that is itself such an object) is judged as before.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, field_validator

import healjson
from healjson import Degraded, Flag, Healed, Healer
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

USER = [{"role": "user", "content": "List the order lines."}]


class Sku(BaseModel):
    sku: str
    qty: int = Field(ge=1)

    @field_validator("sku")
    @classmethod
    def upper(cls, value: str) -> str:
        """An item's own rule, which no schema states."""
        if not value.isupper():
            raise ValueError("sku must be upper case")
        return value


class Holder(BaseModel):
    value: list[int]


GOOD_A, BAD_B, GOOD_C = {"sku": "A", "qty": 2}, {"sku": "b", "qty": 1}, {"sku": "C", "qty": 3}
FIXED_B = {"sku": "B", "qty": 1}
FIRST = [GOOD_A, BAD_B, GOOD_C]


def enveloped(items: Any, key: str = "value") -> str:
    return json.dumps({key: items})


def paths(outcome: Any, attempt: int = 0) -> list[str]:
    return [diagnostic.path for diagnostic in outcome.attempts[attempt].diagnostics]


def skus(outcome: Any) -> list[str]:
    return [item.sku for item in outcome.value]


def asked(server: ScriptedServer, request: int) -> str:
    return str(server.requests[request].body["messages"][-1]["content"])


def test_the_envelope_read_is_the_one_the_strict_format_sends() -> None:
    """The key the reader takes for the envelope is the key OpenAI's strict schema wraps a
    list target in."""
    from healjson._core.parse.wrappers import ENVELOPE_KEY  # new with the fix
    from healjson._providers.openai_strict_schema import strict_json_schema

    assert ENVELOPE_KEY == strict_json_schema(list[Sku]).envelope


def test_an_enveloped_list_is_repaired_item_by_item() -> None:
    """An unstreamed envelope with one failing item gets the item's diagnostic, a repair for it
    alone, and a value that keeps the good items."""
    replies = [enveloped(FIRST), enveloped([FIXED_B])]
    with (
        ScriptedServer(replies) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=list[Sku]
        )
    assert isinstance(outcome, Healed)
    assert ["[1].sku"] == paths(outcome)
    assert "response_format" in server.requests[0].body  # the strict envelope was asked for
    repair = asked(server, 1)
    assert "in this order: [1];" in repair
    assert "([0], [2]) passed every check and are accepted" in repair
    assert "<root>" not in repair
    assert ["A", "B", "C"] == skus(outcome)
    assert Flag.ITEMS_MERGED in outcome.attempts[1].flags
    assert 2 == outcome.calls


def test_a_streamed_envelope_never_retracts_a_good_item() -> None:
    """A streamed envelope with one failing item hands out the good items, repairs the bad one
    alone, and every item handed out is the final value's at its index."""
    replies = [ScriptedReply(content=enveloped(FIRST), chunk_chars=5), enveloped([FIXED_B])]
    with (
        ScriptedServer(replies) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=list[Sku], stream=True
        )
        handed = list(stream.items())
        outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert ["[1].sku"] == paths(outcome)
    assert "in this order: [1];" in asked(server, 1)
    assert ["A", "B", "C"] == skus(outcome)
    assert handed == list(outcome.value)
    assert {0: "streamed", 1: "repaired", 2: "streamed"} == stream.item_status
    assert "retracted" not in stream.item_status.values()


def test_a_repair_answer_in_the_envelope_that_still_fails_is_asked_again_by_item() -> None:
    """A repair answered in the envelope whose item still fails is judged as the list it
    carries: the same item is asked for again, and the good items stay."""
    replies = [enveloped(FIRST), enveloped([{"sku": "bb", "qty": 1}]), enveloped([FIXED_B])]
    with (
        ScriptedServer(replies) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=list[Sku]
        )
    assert isinstance(outcome, Healed)
    assert ["[1].sku"] == paths(outcome, 1)
    assert "in this order: [1];" in asked(server, 2)
    assert ["A", "B", "C"] == skus(outcome)
    assert 3 == outcome.calls


def test_the_envelope_key_in_another_case_is_the_envelope() -> None:
    """`{"Value": [...]}` is the envelope too: its items' diagnostics, at the list's paths."""
    outcome = healjson.validate(enveloped(FIRST, "Value"), list[Sku])
    assert isinstance(outcome, Degraded)
    assert ["[1].sku"] == paths(outcome)
    assert Flag.UNWRAPPED in outcome.attempts[0].flags


def test_an_envelope_with_keys_in_its_items_aligned_keeps_them_aligned() -> None:
    """The list an envelope carries is read as a bare array is: its keys aligned, its failing
    item named."""
    items = [{"SKU": "A", "qty": 1}, {"sku": "b", "Qty": 1}]
    outcome = healjson.validate(enveloped(items), list[Sku])
    assert ["[1].sku"] == paths(outcome)
    assert Flag.KEYS_ALIGNED in outcome.attempts[0].flags


def test_an_object_that_is_not_the_envelope_is_judged_as_written() -> None:
    """An object with other keys beside its list, or an envelope holding no list, is not the
    envelope: the answer is no list."""
    beside = json.dumps({"value": FIRST, "note": "three lines"})
    for text in (beside, enveloped(5), enveloped({"sku": "b", "qty": 1})):
        outcome = healjson.validate(text, list[Sku])
        assert isinstance(outcome, Degraded)
        assert ["<root>"] == paths(outcome), text


def test_an_item_that_is_such_an_object_is_read_as_the_item() -> None:
    """When an item of the list has a field named like the envelope's key, the object is that
    item, as before."""
    outcome = healjson.validate(enveloped([1, 2]), list[Holder])
    assert isinstance(outcome, Healed)
    assert [Holder(value=[1, 2])] == outcome.value
    assert Flag.LISTED in outcome.attempts[0].flags


def test_an_envelope_around_a_valid_list_is_unchanged() -> None:
    """A valid list in the envelope is the list, flagged `unwrapped`, as it always was."""
    outcome = healjson.validate(enveloped([GOOD_A, GOOD_C]), list[Sku])
    assert isinstance(outcome, Healed)
    assert ["A", "C"] == skus(outcome)
    assert [Flag.UNWRAPPED] == list(outcome.attempts[0].flags)


def test_an_envelope_around_a_scalar_target_keeps_its_reading() -> None:
    """A non-list target's envelope is read as before: its value when it fits, the root's
    diagnostic when it does not."""
    healed = healjson.validate(json.dumps({"value": 5}), int)
    assert isinstance(healed, Healed)
    assert 5 == healed.value
    failed = healjson.validate(json.dumps({"value": "many"}), int)
    assert isinstance(failed, Degraded)
    assert ["<root>"] == paths(failed)


class Answers:
    """A model that answers the first request with `first`, then each repair with the items it
    asks for corrected: the failing ones alone for a per-item repair, else the whole list; in
    the envelope when `envelope`."""

    def __init__(self, items: list[dict[str, Any]], envelope: bool) -> None:
        self.items = items
        self.envelope = envelope
        self.calls = 0

    def __call__(self, messages: list[dict[str, Any]], **params: Any) -> str:
        self.calls += 1
        if self.calls == 1:
            answer = self.items
        else:
            prompt = str(messages[-1]["content"])
            fixed = [
                {"sku": item["sku"].upper(), "qty": max(item["qty"], 1)} for item in self.items
            ]
            failing = [i for i, item in enumerate(self.items) if fixed[i] != item]
            answer = [fixed[i] for i in failing] if "in this order:" in prompt else fixed
        return enveloped(answer) if self.envelope else json.dumps(answer)


ITEM = st.fixed_dictionaries(
    {"sku": st.sampled_from(["A", "B", "c", "d"]), "qty": st.sampled_from([0, 1, 2])}
)


@pinned(max_examples=10)
@given(items=st.lists(ITEM, min_size=1, max_size=5))
def test_an_envelope_and_a_bare_array_are_judged_alike(items: list[dict[str, Any]]) -> None:
    """For any list with any of its items failing, the enveloped answer and the bare array get
    the same diagnostics' paths, the same repairs and the same outcome."""
    bare = Healer(list[Sku]).run(Answers(items, envelope=False), "go")
    wrapped = Healer(list[Sku]).run(Answers(items, envelope=True), "go")
    assert paths(bare) == paths(wrapped)
    assert type(bare) is type(wrapped)
    assert bare.calls == wrapped.calls
    assert [a.strategy for a in bare.attempts] == [a.strategy for a in wrapped.attempts]
    for one, other in zip(bare.attempts, wrapped.attempts, strict=True):
        assert (Flag.ITEMS_MERGED in one.flags) == (Flag.ITEMS_MERGED in other.flags)
    assert getattr(bare, "value", None) == getattr(wrapped, "value", None)
