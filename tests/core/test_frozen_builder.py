"""`frozen.builder`: the cheaper constructor of the records a run builds makes exactly what the
class's own constructor makes, for any field values."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from healjson import Attempt, Healed, HealPolicy, Reply, Usage
from healjson._core.flags import Flag
from healjson._core.frozen import builder
from healjson._core.outcome.attempt import first_attempt, new_attempt
from healjson._core.repair.prompt import Strategy
from healjson._core.run.answers import HealSpec
from healjson._core.run.engine import new_healed
from healjson._core.target.target import target_for
from healjson._core.wire.effects import CallResult, ModelCall, new_call_result, new_model_call
from healjson._core.wire.reply import new_reply, new_usage

T = TypeVar("T")

_VALUES = st.none() | st.integers() | st.text(max_size=8) | st.tuples(st.integers())


@dataclass(frozen=True, slots=True)
class _Shapes(Generic[T]):
    """Every kind of field a dataclass has: required, defaulted, factory-made, not in
    `__init__` (plain and factory-made), keyword-only."""

    required: T
    plain: Any = 1
    made: list[int] = field(default_factory=list)
    fixed: int = field(default=7, init=False)
    made_later: dict[str, int] = field(default_factory=dict, init=False)
    named: Any = field(default="n", kw_only=True)
    named_made: list[str] = field(default_factory=lambda: ["x"], kw_only=True)


def _same(built: Any, expected: Any) -> None:
    assert type(built) is type(expected)
    assert built == expected
    assert repr(built) == repr(expected)
    for item in dataclasses.fields(expected):
        assert getattr(built, item.name) == getattr(expected, item.name)
    assert pickle.loads(pickle.dumps(built)) == expected
    assert copy.copy(built) == expected
    name = dataclasses.fields(expected)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, name, None)


@given(
    required=_VALUES,
    given_kwargs=st.fixed_dictionaries(
        {},
        optional={"plain": _VALUES, "made": st.lists(st.integers()), "named": _VALUES},
    ),
)
def test_any_field_shape_builds_the_dataclass_own_instance(
    required: Any, given_kwargs: dict[str, Any]
) -> None:
    """For any field values, `builder` makes exactly the instance the dataclass's own constructor
    makes, factories included."""
    built = builder(_Shapes)(required, **given_kwargs)
    expected = _Shapes(required, **given_kwargs)
    _same(built, expected)
    assert built.made is not builder(_Shapes)(required).made  # a factory makes one per object
    assert dataclasses.replace(built, plain=2) == dataclasses.replace(expected, plain=2)


_COUNTS = st.integers(min_value=0, max_value=10**9)
_TEXT = st.none() | st.text(max_size=12)


@given(
    prompt=_COUNTS,
    completion=_COUNTS,
    estimated=st.booleans(),
    model=_TEXT,
    content=_TEXT,
    finish=_TEXT,
    latency=st.floats(min_value=0, max_value=60),
)
def test_the_run_records_built_cheaply_equal_their_constructors(
    prompt: int,
    completion: int,
    estimated: bool,
    model: str | None,
    content: str | None,
    finish: str | None,
    latency: float,
) -> None:
    """The run's records built cheaply (usage, reply, attempt, call, result, a first attempt, an
    outcome) equal those their constructors build, for any values."""
    usage = new_usage(prompt, completion, estimated, requests=1, model=model)
    _same(usage, Usage(prompt, completion, estimated, requests=1, model=model))
    assert hash(usage) == hash(Usage(prompt, completion, estimated, requests=1, model=model))
    reply = new_reply(content, finish, None, usage, model)
    _same(reply, Reply(content, finish, None, usage, model))
    messages = ({"role": "user", "content": "x"},)
    _same(new_model_call(1, messages, {"model": model}), ModelCall(1, messages, {"model": model}))
    _same(new_call_result(reply, None, latency), CallResult(reply, None, latency))
    kwargs: dict[str, Any] = {
        "number": 1,
        "strategy": Strategy.INITIAL,
        "messages": messages,
        "params": {"model": model},
        "raw_text": content,
        "usage": usage,
        "latency_s": latency,
        "ok": True,
    }
    attempt = new_attempt(**kwargs)
    _same(attempt, Attempt(**kwargs))
    assert new_attempt(1, Strategy.INITIAL, (), {}).usage == Usage()  # the default factory
    healed = builder(Healed)(value=content, raw_text=content or "", attempts=(attempt,))
    expected = Healed(value=content, raw_text=content or "", attempts=(attempt,))
    _same(healed, expected)
    assert healed.ok is True  # a field outside `__init__` keeps its default
    assert healed.to_dict() == expected.to_dict()
    flags = (Flag.REASONING_SET_ASIDE,) if finish else ()
    first = first_attempt(
        messages, {"model": model}, content or "", finish, flags, usage, model, latency, model
    )
    _same(
        first,
        Attempt(
            number=1,
            strategy=Strategy.INITIAL,
            messages=messages,
            params={"model": model},
            raw_text=content or "",
            finish_reason=finish,
            flags=flags,
            usage=usage,
            model=model,
            latency_s=latency,
            ok=True,
            reasoning=model,
        ),
    )
    spec = HealSpec(target_for(str), policy=HealPolicy(max_attempts=2))
    run_id = model or "r"
    _same(
        new_healed(spec, content, content or "", (first,), flags, usage, ("a",), run_id),
        Healed(
            value=content,
            raw_text=content or "",
            attempts=(first,),
            usage=usage,
            flags=flags,
            changed_fields=("a",),
            max_attempts=2,
            run_id=run_id,
            target=spec.target_name,
        ),
    )


@dataclass(frozen=True)
class _NoSlots:
    a: int = 0


@dataclass(slots=True)
class _NotFrozen:
    a: int = 0


@dataclass(frozen=True, slots=True)
class _Checked:
    a: int = 0

    def __post_init__(self) -> None:
        if self.a < 0:
            raise ValueError("negative")


class _Plain:
    __slots__ = ("a",)


@pytest.mark.parametrize("cls", [_NoSlots, _NotFrozen, _Checked, _Plain, int])
def test_what_it_cannot_build_exactly_is_refused(cls: type) -> None:
    """`builder` refuses a class it cannot build exactly: no slots, not frozen, with a
    `__post_init__`, a plain class, a builtin."""
    with pytest.raises(TypeError):
        builder(cls)
