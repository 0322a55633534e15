"""Per-item repair: when some items of a list fail and the rest pass, only the failed ones are
asked for (the others named as accepted), and the answer is spliced back into the list."""

from __future__ import annotations

import json
from typing import Any

import openai
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Flag, Healed, Healer, HealPolicy, Strategy, Violation, contract
from healjson._core.outcome.outcome import outcome_from_dict
from healjson.testing import ScriptedReply, ScriptedServer


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


def lines(*qtys: int) -> list[dict[str, Any]]:
    return [{"sku": chr(ord("A") + i), "qty": q} for i, q in enumerate(qtys)]


class Model:
    """Answers from a list of replies and keeps the requests."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]], **params: Any) -> Any:
        self.requests.append(messages)
        reply = self.replies.pop(0)
        return reply if isinstance(reply, str) else json.dumps(reply)


def test_only_the_failed_items_are_asked_for_and_spliced_back() -> None:
    """A list with broken items is repaired by asking for those items alone, naming the accepted
    ones, and splicing the answers back at their indexes."""
    model = Model(lines(2, 0, 1, -1), [{"sku": "B", "qty": 1}, {"sku": "D", "qty": 4}])
    outcome = Healer(list[Line]).run(model, "List the order lines")

    assert isinstance(outcome, Healed)
    assert [line.qty for line in outcome.value] == [2, 1, 1, 4]
    assert outcome.calls == 2
    repair = outcome.attempts[1]
    assert repair.strategy is Strategy.ITEMS
    assert Flag.ITEMS_MERGED in repair.flags
    assert repair.raw_text == json.dumps([{"sku": "B", "qty": 1}, {"sku": "D", "qty": 4}])
    asked = model.requests[1][-1]["content"]
    assert "2 of them ([1], [3]) failed 2 checks" in asked
    assert "The other 2 items ([0], [2]) passed every check and are accepted" in asked
    assert "a JSON array of the 2 corrected items, in this order: [1], [3]" in asked
    assert model.requests[1][-2] == {"role": "assistant", "content": json.dumps(lines(2, 0, 1, -1))}
    assert outcome.changed_fields == ("[1].qty", "[3].qty")


def test_a_model_that_sends_the_whole_list_again_is_judged_as_it_is() -> None:
    """A model that answers a per-item repair with the whole list again is judged on that list,
    with no splice."""
    outcome = Healer(list[Line]).run(Model(lines(1, 0, 1), lines(1, 1, 1)), "go")
    assert isinstance(outcome, Healed)
    assert [line.qty for line in outcome.value] == [1, 1, 1]
    assert Flag.ITEMS_MERGED not in outcome.attempts[1].flags


def test_an_item_still_wrong_after_the_splice_is_asked_for_again() -> None:
    """An item still wrong after the splice is asked for again alone, with the spliced list
    quoted back."""
    model = Model(
        lines(1, 0, 0), [{"sku": "B", "qty": 1}, {"sku": "C", "qty": 0}], [{"sku": "C", "qty": 3}]
    )
    outcome = Healer(list[Line], policy=HealPolicy(max_attempts=3)).run(model, "go")
    assert isinstance(outcome, Healed)
    assert [line.qty for line in outcome.value] == [1, 1, 3]
    third = model.requests[2][-1]["content"]
    assert "1 of them ([2]) failed" in third
    assert "([0]-[1]) passed every check" in third
    # the assistant turn quoted back is the list as it stands after the splice
    assert json.loads(model.requests[2][-2]["content"])[1] == {"sku": "B", "qty": 1}


@contract(fields=())
def at_most_three(items: list[Line]) -> Violation | None:
    return Violation("at most 3 lines") if len(items) > 3 else None


def test_a_list_level_failure_keeps_the_whole_value_repair() -> None:
    """A failure of a list-level contract is repaired by asking for the whole value."""
    model = Model(lines(1, 1, 1, 1), lines(1, 1, 1))
    outcome = Healer(list[Line], contracts=[at_most_three]).run(model, "go")
    assert isinstance(outcome, Healed)
    assert outcome.attempts[1].strategy is Strategy.REPAIR


def test_the_spliced_list_meets_the_list_level_contracts_too() -> None:
    # item [1] fails its schema (contracts wait for a valid list); spliced, the list is too long
    """A spliced list is judged by the list-level contracts too, and their failure brings a
    whole-value repair."""
    model = Model(lines(1, 0, 1, 1), [{"sku": "B", "qty": 1}], lines(1, 1, 1))
    policy = HealPolicy(max_attempts=3)
    outcome = Healer(list[Line], contracts=[at_most_three], policy=policy).run(model, "go")
    assert isinstance(outcome, Healed)
    assert [a.strategy for a in outcome.attempts] == [
        Strategy.INITIAL,
        Strategy.ITEMS,
        Strategy.REPAIR,
    ]
    assert len(outcome.value) == 3


def test_every_item_failing_keeps_the_whole_value_repair() -> None:
    """When every item fails, the repair asks for the whole value rather than each item."""
    outcome = Healer(list[Line]).run(Model(lines(0, 0), lines(1, 1)), "go")
    assert isinstance(outcome, Healed)
    assert outcome.attempts[1].strategy is Strategy.REPAIR


def test_an_object_target_never_gets_a_per_item_repair() -> None:
    """A list inside an object target is repaired with the whole object, never per item."""

    class Order(BaseModel):
        lines: list[Line]

    model = Model({"lines": lines(1, 0)}, {"lines": lines(1, 1)})
    outcome = Healer(Order).run(model, "go")
    assert isinstance(outcome, Healed)
    assert outcome.attempts[1].strategy is Strategy.REPAIR


def test_the_per_item_prompt_round_trips_through_to_dict() -> None:
    """A per-item repair prompt survives `to_dict` and `outcome_from_dict` with its items and
    renders the same text."""
    outcome = Healer(list[Line], policy=HealPolicy(max_attempts=2)).run(
        Model(lines(1, 0, 1), [{"sku": "B", "qty": 0}]), "go"
    )
    again = outcome_from_dict(outcome.to_dict())
    prompt = again.attempts[1].prompt
    assert prompt is not None
    assert prompt.items == (1,)
    assert prompt.item_count == 3
    assert prompt.render() == outcome.attempts[1].prompt.render()  # type: ignore[union-attr]


def test_a_streamed_list_hands_out_its_items_in_order_the_bad_one_once_repaired() -> None:
    """A streamed list over HTTP hands out its items in order, the bad one once repaired by a
    per-item request."""
    first = ScriptedReply(content=json.dumps(lines(1, 0, 2, 3)), chunk_chars=6)
    fixed = ScriptedReply(content=json.dumps([{"sku": "B", "qty": 5}]), chunk_chars=6)
    with (
        ScriptedServer([first, fixed]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "lines"}], response_model=list[Line],
            stream=True,
        )  # fmt: skip
        seen = [(line.sku, line.qty) for line in stream.items()]
        requests = [r.body for r in server.requests]
    assert seen == [("A", 1), ("B", 5), ("C", 2), ("D", 3)]  # in order: C and D wait for B
    assert stream.item_status == {0: "streamed", 1: "repaired", 2: "streamed", 3: "streamed"}
    assert isinstance(stream.outcome, Healed)
    assert stream.outcome.calls == 2
    assert requests[1] is not None
    assert "in this order: [1]" in requests[1]["messages"][-1]["content"]


@settings(max_examples=30, deadline=None)
@given(
    qtys=st.lists(st.integers(1, 9), min_size=2, max_size=12),
    data=st.data(),
)
def test_any_subset_of_bad_items_heals_in_one_repair_asking_for_just_those(
    qtys: list[int], data: st.DataObject
) -> None:
    """Any subset of bad items heals in one repair that asks for exactly those items."""
    bad = data.draw(
        st.sets(st.integers(0, len(qtys) - 1), min_size=1, max_size=len(qtys) - 1), label="bad"
    )
    sent = [0 if i in bad else q for i, q in enumerate(qtys)]
    repaired = [{"sku": chr(ord("A") + i), "qty": qtys[i]} for i in sorted(bad)]
    model = Model(lines(*sent), repaired)
    outcome = Healer(list[Line]).run(model, "go")

    assert isinstance(outcome, Healed)
    assert [line.qty for line in outcome.value] == qtys
    assert outcome.calls == 2
    asked = model.requests[1][-1]["content"]
    assert f"a JSON array of the {len(bad)} corrected items" in asked
    for index in range(len(qtys)):  # each index is named, as asked or as accepted
        shown = f"[{index}]" in asked or any(
            f"[{a}]-[{b}]" in asked for a in range(index + 1) for b in range(index, len(qtys))
        )
        assert shown, (index, asked)
