"""What a contract may return, and what becomes of anything else: a bug in the caller's contract
(`contract_error`, after one call), never violations for the model to "fix" — for whole-value
contracts (sync and async) and for item contracts alike."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import healjson
from healjson import ContractContext, Degraded, Healed, Healer, Reason, Source, Violation

GOOD = {"name": "bolt", "qty": 2}
ITEMS = [GOOD, {"name": "nut", "qty": 3}]


class Item(BaseModel):
    name: str
    qty: int


# results that are none of: None, True / False, a message, a Violation, an iterable of them
GARBAGE: dict[str, Any] = {
    "dict": {"qty": "must be positive", "name": "too short"},
    "empty dict": {},
    "int": 42,
    "float": 1.5,
    "bytes": b"qty",
    "object": object(),
    "list holding a dict": [{"qty": "bad"}],
}


class Calls:
    """A model that always answers `text`, counting its calls."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.count = 0

    def __call__(self, messages: Any, **params: Any) -> str:
        self.count += 1
        return self.text


def _is_contract_bug(out: Any, calls: Calls, rule: str) -> None:
    assert isinstance(out, Degraded)
    assert Reason.CONTRACT_ERROR == out.reason
    assert 1 == calls.count  # another model call cannot fix the caller's code
    assert [Source.CONTRACT_ERROR] == [error.source for error in out.errors]
    assert not any(error.source is Source.CONTRACT for error in out.errors)
    assert f"contract `{rule}` returned" in out.errors[0].constraint


@pytest.mark.parametrize("result", GARBAGE.values(), ids=GARBAGE.keys())
def test_a_whole_value_contract_returning_garbage_is_a_contract_error(result: Any) -> None:
    """A dict is not read as one violation per key, nor an empty one as "no violation"."""

    def rule(value: Item) -> Any:
        return result

    calls = Calls(json.dumps(GOOD))
    _is_contract_bug(Healer(Item, contracts=[rule]).run(calls, "extract"), calls, "rule")


@pytest.mark.parametrize("result", GARBAGE.values(), ids=GARBAGE.keys())
def test_an_async_contract_returning_garbage_is_a_contract_error(result: Any) -> None:
    """An async contract that returns something that is not a violation degrades with
    `contract_error` after one call."""

    async def rule(value: Item, ctx: ContractContext) -> Any:
        await asyncio.sleep(0)
        return result

    calls = Calls(json.dumps(GOOD))
    out = asyncio.run(Healer(Item, contracts=[rule]).arun(calls, "extract"))
    _is_contract_bug(out, calls, "rule")


@pytest.mark.parametrize("result", GARBAGE.values(), ids=GARBAGE.keys())
def test_an_item_contract_returning_garbage_is_a_contract_error_at_that_item(
    result: Any,
) -> None:
    """It used to become a violation of the item, which the model was asked to fix."""

    def rule(item: Item) -> Any:
        return result if item.name == "nut" else None

    calls = Calls(json.dumps(ITEMS))
    out = Healer(list[Item], item_contracts=[rule]).run(calls, "extract")
    _is_contract_bug(out, calls, "rule")
    assert "[1]" == out.errors[0].path
    assert "item [1]" in out.errors[0].constraint


def test_an_item_contract_that_raises_is_a_contract_error_at_that_item() -> None:
    """An item contract that raises degrades with `contract_error` at the path of the item it
    raised on."""

    def rule(item: Item) -> None:
        if item.name == "nut":
            raise ZeroDivisionError("division by zero")

    calls = Calls(json.dumps(ITEMS))
    out = Healer(list[Item], item_contracts=[rule]).run(calls, "extract")
    assert isinstance(out, Degraded)
    assert Reason.CONTRACT_ERROR == out.reason
    assert 1 == calls.count
    assert "[1]" == out.errors[0].path
    assert "ZeroDivisionError" in out.errors[0].constraint


def test_a_streamed_list_with_a_garbage_item_contract_is_a_contract_error() -> None:
    """A streamed list whose item contract returns garbage degrades with `contract_error` after
    one call."""

    def rule(item: Item) -> Any:
        return {"qty": "bad"}

    healer = Healer(list[Item], item_contracts=[rule])
    calls = 0

    def call(messages: Any, **params: Any) -> Any:
        nonlocal calls
        calls += 1
        return iter([json.dumps(ITEMS)[:10], json.dumps(ITEMS)[10:]])

    stream = healer.stream(call, "extract")
    for _ in stream:
        pass
    assert isinstance(stream.outcome, Degraded)
    assert Reason.CONTRACT_ERROR == stream.outcome.reason
    assert 1 == calls


ACCEPTED: dict[str, tuple[Callable[[Item], Any], bool]] = {
    "None": (lambda item: None, True),
    "True": (lambda item: True, True),
    "False": (lambda item: False, False),
    "a message": (lambda item: "qty must be odd", False),
    "a Violation": (lambda item: Violation("qty must be odd", path="qty"), False),
    "a list of them": (lambda item: [None, "qty must be odd"], False),
    "a generator of them": (lambda item: (v for v in [Violation("odd", path="qty")]), False),
    "a tuple of nothing": (lambda item: (), True),
    "a set of Violations": (lambda item: {Violation("odd", path="qty")}, False),
}


@pytest.mark.parametrize(("rule", "holds"), ACCEPTED.values(), ids=ACCEPTED.keys())
def test_accepted_results_read_as_documented(rule: Callable[[Item], Any], holds: bool) -> None:
    """The accepted results, whole-value and per item: a pass, or violations (no contract
    error)."""
    whole = healjson.validate(json.dumps(GOOD), Item, contracts=[rule])
    calls = Calls(json.dumps(ITEMS))
    items = Healer(list[Item], item_contracts=[rule]).run(calls, "extract")
    for out in (whole, items):
        if holds:
            assert isinstance(out, Healed)
        else:
            assert isinstance(out, Degraded)
            assert {Source.CONTRACT} == {error.source for error in out.errors}


class Pair(BaseModel):
    name: str
    qty: int


@pytest.mark.parametrize("result", [{"qty": "bad"}, 42, ZeroDivisionError("boom")])
def test_a_streamed_answer_judged_early_by_a_buggy_contract_is_not_repaired(result: Any) -> None:
    """A contract judged mid-stream (its fields arrived) that returns garbage or raises does not
    abort the stream as if the answer broke it: the run ends `contract_error` after one call."""

    @healjson.contract(fields=("name",))
    def rule(value: Pair) -> Any:
        if isinstance(result, Exception):
            raise result
        return result

    calls = 0

    def call(messages: Any, **params: Any) -> Any:
        nonlocal calls
        calls += 1
        text = json.dumps({"name": "bolt", "qty": 2})
        return iter([text[:15], text[15:20], text[20:]])

    stream = Healer(Pair, contracts=[rule]).stream(call, "extract")
    for _ in stream:
        pass
    assert isinstance(stream.outcome, Degraded)
    assert Reason.CONTRACT_ERROR == stream.outcome.reason
    assert 1 == calls
