"""`healjson.outcome_of(obj)`: the outcome healjson kept for an object it handed back, kept as
long as the object lives (weakly), for objects that cannot be weakly referenced among the newest
few, never for a copy, never for another object."""

from __future__ import annotations

import copy
import gc
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import _attached
from healjson._attached import PINNED, attach


class Result(BaseModel):
    """Stands for an SDK's pydantic result type (weakly referenceable, unhashable)."""

    text: str = ""


class Slotted:
    """A class whose instances cannot be weakly referenced."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n


def outcome(text: str) -> Any:
    """A small outcome to attach."""
    return healjson.validate(text, dict[str, int])


def test_an_attached_outcome_is_found_on_the_object_and_only_there() -> None:
    """The object healjson returned has its outcome; an equal copy has none."""
    result = Result(text="a")
    kept = outcome('{"a": 1}')
    attach(result, kept)
    assert kept is healjson.outcome_of(result)
    assert result == result.model_copy()
    assert None is healjson.outcome_of(result.model_copy())
    assert None is healjson.outcome_of(copy.deepcopy(result))
    assert None is healjson.outcome_of(Result(text="a"))


def test_attaching_again_replaces_the_outcome() -> None:
    """The last outcome attached is the object's."""
    result = Result()
    attach(result, outcome('{"a": 1}'))
    second = outcome('{"b": 2}')
    attach(result, second)
    assert second is healjson.outcome_of(result)


def test_the_entry_goes_with_the_object() -> None:
    """Nothing is kept for an object that was collected: memory does not grow with results."""
    gc.collect()  # objects of earlier tests in this process go first, not during the count
    before = len(_attached._WEAK)
    results = [Result(text=str(n)) for n in range(100)]
    for result in results:
        attach(result, outcome('{"a": 1}'))
    assert before + 100 == len(_attached._WEAK)
    del results, result
    gc.collect()
    assert before == len(_attached._WEAK)


def test_objects_that_cannot_be_weakly_referenced_keep_the_newest_outcomes() -> None:
    """A dict or a slotted instance keeps its outcome among the newest `PINNED`, no more."""
    objects: list[Any] = [{"n": n} for n in range(PINNED)] + [Slotted(n) for n in range(10)]
    kept = outcome('{"a": 1}')
    for obj in objects:
        attach(obj, kept)
    assert len(_attached._PINNED) <= PINNED
    assert all(kept is healjson.outcome_of(obj) for obj in objects[-PINNED:])
    assert all(None is healjson.outcome_of(obj) for obj in objects[:10])
    assert None is healjson.outcome_of({"n": 1000})


def test_plain_values_have_no_outcome() -> None:
    """Anything healjson did not hand back: None."""
    assert None is healjson.outcome_of(None)
    assert None is healjson.outcome_of(3)
    assert None is healjson.outcome_of(object())


@settings(derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=40))
def test_an_outcome_is_never_reported_for_another_object(steps: list[tuple[bool, bool]]) -> None:
    """Objects made, given outcomes and dropped in any order (ids reused as they are freed):
    each live object reports exactly the outcome last attached to it, or None."""
    live: list[tuple[Any, Any]] = []
    for index, (weak, drop) in enumerate(steps):
        if drop and live:
            live.pop(0)
            gc.collect(0)  # the young objects: a full collection per step is slow in a big heap
            continue
        obj: Any = Result(text=str(index)) if weak else Slotted(index)
        attached = outcome(f'{{"n": {index}}}')
        attach(obj, attached)
        live.append((obj, attached))
    for obj, attached in live[-PINNED:]:
        assert attached is healjson.outcome_of(obj)
    assert None is healjson.outcome_of(Result(text="fresh"))
