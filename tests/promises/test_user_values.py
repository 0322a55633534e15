"""Values that come from user code (violations, fallbacks, examples, serializers) never break a
run, a trace or a record: they are rendered through one never-raising path."""

from __future__ import annotations

import asyncio
import copy
import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, field_serializer

import healjson
from healjson import (
    Degraded,
    Diagnostic,
    Healed,
    Healer,
    HealPolicy,
    Reason,
    Source,
    Violation,
    outcome_from_dict,
)
from healjson._core.diagnostic import jsonable, short_repr
from healjson._core.outcome.record import render_markdown
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer


class Ticket(BaseModel):
    id: int
    summary: str


GOOD = '{"id": 1, "summary": "printer jammed"}'
PROMPT = "Open a ticket."


class UnprintableValue:
    """A value whose `__repr__` (and `__str__`) raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")

    def __str__(self) -> str:
        raise RuntimeError("no str for you")


class BrokenDump:
    """An object that looks like a pydantic model but whose `model_dump` raises."""

    def model_dump(self, **kwargs: Any) -> Any:
        raise ValueError("cannot dump")

    def __repr__(self) -> str:
        raise RuntimeError("cannot repr either")


class HostileDict(dict[str, Any]):
    """A dict whose `items` raises."""

    def items(self) -> Any:
        raise RuntimeError("no items")


def cyclic_list() -> list[Any]:
    """`x = []; x.append(x)`."""
    x: list[Any] = []
    x.append(x)
    return x


def cyclic_dict() -> dict[str, Any]:
    """A dict that contains itself."""
    d: dict[str, Any] = {"a": 1}
    d["self"] = d
    return d


def shared_dag(levels: int = 60) -> list[Any]:
    """A list whose two items are the same list, `levels` deep: 2**levels leaves if expanded."""
    node: list[Any] = [0]
    for _ in range(levels):
        node = [node, node]
    return node


def nested(depth: int) -> list[Any]:
    """A list nested `depth` levels deep."""
    node: list[Any] = []
    for _ in range(depth):
        node = [node]
    return node


HUGE_INT = 10**100000  # str() refuses it in Python 3.11+


def huge_int() -> int:
    """HUGE_INT, drawn through a function (hypothesis would print the value itself)."""
    return HUGE_INT


HOSTILE_VALUES: dict[str, Callable[[], Any]] = {
    "unprintable": UnprintableValue,
    "broken model_dump": BrokenDump,
    "hostile dict": lambda: HostileDict(a=1),
    "cyclic list": cyclic_list,
    "cyclic dict": cyclic_dict,
    "huge int": lambda: HUGE_INT,
    "huge int in a list": lambda: [1, HUGE_INT],
    "huge int key": lambda: {HUGE_INT: 1},
    "unprintable key": lambda: {UnprintableValue(): 1},
    "shared dag": lambda: shared_dag(12),
    "deep nesting": lambda: nested(5000),
    "2 MB string": lambda: "x" * 2_000_000,
}
hostile = pytest.mark.parametrize("make", list(HOSTILE_VALUES.values()), ids=list(HOSTILE_VALUES))


def malformed(**attributes: Any) -> Violation:
    """A Violation whose attributes are set past the constructor's checks (as a subclass,
    `copy` or `object.__setattr__` can)."""
    violation = Violation("summary must mention the order")
    for name, value in attributes.items():
        object.__setattr__(violation, name, value)
    return violation


MALFORMED = {
    "non-str path": (lambda: malformed(path=5), "path"),
    "fields of ints": (lambda: malformed(fields=(1, 2)), "fields"),
    "fields as a str": (lambda: malformed(fields="summary"), "fields"),
    "fields not a sequence": (lambda: malformed(fields=5), "fields"),
    "non-str constraint": (lambda: malformed(constraint=123), "constraint"),
    "non-str prescription": (lambda: malformed(prescription=b"fix it"), "prescription"),
}
malformed_cases = pytest.mark.parametrize(
    ("make", "named"), list(MALFORMED.values()), ids=list(MALFORMED)
)


def returning(value: Any) -> Callable[[Any], Any]:
    """A contract that returns `value` (built fresh for each call)."""

    def rule(ticket: Any) -> Any:
        return value() if callable(value) else value

    return rule


def check_renders(outcome: Any) -> None:
    """The outcome's trace (both formats) and its record are produced without raising."""
    assert isinstance(outcome.trace(), str)
    assert isinstance(json.loads(outcome.trace("json")), dict)
    record = outcome.to_dict()
    assert isinstance(json.dumps(record), str)
    assert isinstance(outcome_from_dict(record), Healed | Degraded)


# --- malformed violations ------------------------------------------------------------------------


@malformed_cases
def test_a_malformed_violation_degrades_validate_with_a_contract_error(
    make: Callable[[], Violation], named: str
) -> None:
    """`validate` turns a malformed Violation into a `contract_error` naming the bad attribute."""
    outcome = healjson.validate(GOOD, Ticket, contracts=[returning(make)])

    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    (error,) = outcome.errors
    assert Source.CONTRACT_ERROR == error.source
    assert f"Violation.{named}" in error.constraint
    check_renders(outcome)


@malformed_cases
def test_a_malformed_violation_degrades_run_after_one_call(
    make: Callable[[], Violation], named: str
) -> None:
    """`Healer.run` stops at once with `contract_error`: another call cannot fix a bug in code."""
    model = ScriptedModel([GOOD] * 3)

    outcome = Healer(Ticket, contracts=[returning(make)]).run(model, PROMPT)

    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert 1 == len(model.calls)
    assert f"Violation.{named}" in outcome.errors[0].constraint


@malformed_cases
def test_a_malformed_violation_from_an_async_contract_degrades_arun(
    make: Callable[[], Violation], named: str
) -> None:
    """`Healer.arun` with an async contract returning a malformed Violation degrades too."""

    async def rule(ticket: Any) -> Any:
        return make()

    model = ScriptedModel([GOOD] * 3)

    outcome = asyncio.run(Healer(Ticket, contracts=[rule]).arun(model.acall, PROMPT))

    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert f"Violation.{named}" in outcome.errors[0].constraint


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"constraint": 123}, "constraint"),
        ({"constraint": "c", "fields": "summary"}, "fields"),
        ({"constraint": "c", "fields": 5}, "fields"),
        ({"constraint": "c", "fields": ("summary", 2)}, "fields"),
        ({"constraint": "c", "path": 5}, "path"),
        ({"constraint": "c", "prescription": ["fix"]}, "prescription"),
    ],
)
def test_the_violation_constructor_rejects_misuse_at_once(
    kwargs: dict[str, Any], named: str
) -> None:
    """Building a Violation with a wrong attribute type raises TypeError where it is built."""
    with pytest.raises(TypeError, match=f"Violation.{named}"):
        Violation(**kwargs)


def test_a_violation_built_wrongly_inside_a_contract_is_a_contract_error() -> None:
    """The constructor's TypeError inside a contract is reported as that contract's bug."""
    outcome = healjson.validate(GOOD, Ticket, contracts=[lambda t: Violation("c", path=5)])

    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert "Violation.path must be a string" in outcome.errors[0].constraint


def test_contract_fields_must_be_names() -> None:
    """`@contract(fields=...)` with a non-string name is a configuration mistake: TypeError."""
    with pytest.raises(TypeError, match="contract fields"):
        healjson.contract(fields=("summary", 3))  # type: ignore[arg-type]


def test_a_contract_returning_an_endless_generator_is_cut_off() -> None:
    """A contract yielding violations forever still ends: its first violations are kept."""

    def endless(ticket: Any) -> Iterator[Violation]:
        while True:
            yield Violation("summary must mention the order", fields=("summary",))

    outcome = healjson.validate(GOOD, Ticket, contracts=[endless])

    assert isinstance(outcome, Degraded)
    assert 0 < len(outcome.errors) <= 1000


def test_a_contract_yielding_nones_forever_still_ends() -> None:
    """An endless generator of "no problem" results is read up to the cap and passes."""

    def endless(ticket: Any) -> Iterator[None]:
        while True:
            yield None

    outcome = healjson.validate(GOOD, Ticket, contracts=[endless])

    assert isinstance(outcome, Healed)


def test_a_contract_returning_deeply_nested_lists_is_a_contract_error() -> None:
    """A result nested deeper than a list of violations is reported, not recursed into."""
    outcome = healjson.validate(GOOD, Ticket, contracts=[returning(lambda: nested(5000))])

    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason


def test_a_value_path_whose_attribute_raises_reads_as_missing() -> None:
    """A contract field whose attribute access raises anything is treated as absent."""

    class Sneaky(BaseModel):
        id: int

        @property
        def summary(self) -> str:
            raise ValueError("computed field exploded")

    rule = healjson.contract(fields=("summary",))(lambda t: Violation("needs a summary"))
    outcome = healjson.validate('{"id": 1}', Sneaky, contracts=[rule])

    assert isinstance(outcome, Degraded)
    assert outcome.errors[0].is_missing


# --- hostile values in violations and fallbacks --------------------------------------------------


@hostile
def test_a_hostile_violation_value_never_breaks_run_or_its_trace(make: Callable[[], Any]) -> None:
    """A violation value that cannot be printed, is cyclic, huge or deep: run, trace and
    to_dict all work."""
    model = ScriptedModel([GOOD] * 2)
    rule = returning(lambda: Violation("summary must mention the order", value=make()))

    outcome = Healer(Ticket, contracts=[rule], policy=HealPolicy(max_attempts=2)).run(model, PROMPT)

    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert 2 == len(model.calls)
    check_renders(outcome)


@hostile
def test_a_hostile_violation_value_never_breaks_arun(make: Callable[[], Any]) -> None:
    """The same values through `arun` and an async contract."""

    async def rule(ticket: Any) -> Violation:
        return Violation("summary must mention the order", value=make())

    model = ScriptedModel([GOOD] * 2)
    healer = Healer(Ticket, contracts=[rule], policy=HealPolicy(max_attempts=2))

    outcome = asyncio.run(healer.arun(model.acall, PROMPT))

    assert isinstance(outcome, Degraded)
    check_renders(outcome)


@hostile
def test_a_hostile_fallback_never_breaks_run_trace_or_to_dict(make: Callable[[], Any]) -> None:
    """A fallback that is cyclic, huge, deep or unprintable is kept and renders safely."""
    fallback = make()
    model = ScriptedModel(["no JSON here"] * 2)

    outcome = Healer(Ticket, fallback=fallback, policy=HealPolicy(max_attempts=2)).run(
        model, PROMPT
    )

    assert isinstance(outcome, Degraded)
    assert fallback is outcome.fallback
    check_renders(outcome)


@hostile
def test_a_hostile_fallback_factory_result_never_breaks_the_trace(
    make: Callable[[], Any],
) -> None:
    """What a fallback factory returns renders safely too."""
    model = ScriptedModel(["no JSON here"])

    outcome = Healer(Ticket, fallback=lambda raw, errors: make()).run(model, PROMPT)

    assert isinstance(outcome, Degraded)
    check_renders(outcome)


def test_a_cyclic_fallback_is_rendered_with_a_cycle_marker() -> None:
    """The cycle shows as a visible marker instead of recursing."""
    outcome = Healer(Ticket, fallback=cyclic_list()).run(ScriptedModel(["nope"] * 3), PROMPT)

    assert isinstance(outcome, Degraded)
    assert ["<cycle>"] == outcome.to_dict()["fallback"]
    assert '- **Fallback**: `["<cycle>"]`' in outcome.trace()


def test_a_huge_int_fallback_is_rendered_by_its_size() -> None:
    """An integer too long to print is rendered as its approximate digit count."""
    outcome = Healer(Ticket, fallback=HUGE_INT).run(ScriptedModel(["nope"] * 3), PROMPT)

    assert isinstance(outcome, Degraded)
    assert "<integer of about 100001 digits>" == outcome.to_dict()["fallback"]


def test_a_healed_value_still_round_trips_exactly() -> None:
    """Ordinary values are rendered unchanged: a Healed record round-trips to the same value."""
    outcome = Healer(Ticket).run(ScriptedModel([GOOD]), PROMPT)

    rebuilt = outcome_from_dict(outcome.to_dict(), Ticket)

    assert isinstance(rebuilt, Healed)
    assert Ticket(id=1, summary="printer jammed") == rebuilt.value


# --- the one rendering path ----------------------------------------------------------------------

hostile_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.builds(huge_int)
    | st.just(math.inf)
    | st.builds(UnprintableValue)
    | st.builds(BrokenDump)
    | st.builds(cyclic_list)
    | st.builds(cyclic_dict)
    | st.just(b"bytes")
    | st.just(Source.SCHEMA),
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=5) | st.integers(), children, max_size=4)
        | st.builds(HostileDict, st.dictionaries(st.text(max_size=5), children))
    ),
    max_leaves=10,
)


@given(value=hostile_values, limit=st.integers(0, 400))
def test_short_repr_never_raises_and_respects_its_limit(value: Any, limit: int) -> None:
    """short_repr returns a string of at most `limit` characters for any value."""
    text = short_repr(value, limit)

    assert isinstance(text, str)
    assert len(text) <= limit


@given(value=hostile_values)
def test_jsonable_never_raises_and_gives_plain_json_data(value: Any) -> None:
    """jsonable returns data that json.dumps accepts, for any value."""
    data = jsonable(value)

    assert isinstance(json.dumps(data), str)


@given(value=hostile_values)
def test_a_diagnostic_with_any_value_describes_and_serialises(value: Any) -> None:
    """Diagnostic.describe and to_dict never raise, whatever the value."""
    diagnostic = Diagnostic(
        "summary", value, "c", "p", Source.CONTRACT, extra={"values": {1: value}}
    )

    assert isinstance(diagnostic.describe(), str)
    assert isinstance(json.dumps(diagnostic.to_dict()), str)


@pytest.mark.slow
def test_short_repr_does_not_render_a_huge_value_in_full() -> None:
    """A 20 MB string is cut before it is rendered: the marker counts what was left out."""
    text = short_repr("x" * 20_000_000, 50)

    assert 50 == len(text)
    assert text.startswith('"xxx')
    assert "…(+" in text


def test_short_repr_of_plain_values_is_their_json() -> None:
    """Ordinary values render as compact JSON, unchanged."""
    assert '{"a": [1, 2.5, "x", null, true]}' == short_repr({"a": [1, 2.5, "x", None, True]})


def test_a_shared_structure_is_rendered_within_the_size_cap() -> None:
    """A structure with 2**60 leaves when expanded is cut off by the node budget."""
    data = jsonable(shared_dag(60))

    assert len(json.dumps(data)) < 50_000_000


# --- golden examples built from user serializers -------------------------------------------------


class Fussy(BaseModel):
    """A model whose serializer fails on the value the synthesised example uses (1)."""

    count: int

    @field_serializer("count")
    def _count(self, value: int) -> int:
        if value == 1:
            raise RuntimeError("the serializer refuses 1")
        return value


def test_a_serializer_failing_on_the_golden_example_means_no_example() -> None:
    """Healer(...) builds, without an example, and heals answers the serializer accepts."""
    healer = Healer(Fussy)

    outcome = healer.run(ScriptedModel(['{"count": 2}']), PROMPT)

    assert isinstance(outcome, Healed)
    assert Fussy(count=2) == outcome.value


def test_a_serializer_failing_on_a_caller_example_means_no_example() -> None:
    """A caller's example that cannot be dumped is left out instead of raising."""
    healer = Healer(Fussy, examples=[{"count": 1}])

    assert isinstance(healer.run(ScriptedModel(['{"count": 3}']), PROMPT), Healed)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A ScriptedServer on 127.0.0.1 that always answers `{"count": 2}`."""
    with ScriptedServer([ScriptedReply(content='{"count": 2}')], repeat=True) as running:
        yield running


def test_wrap_create_with_a_fussy_serializer_returns_an_outcome(server: ScriptedServer) -> None:
    """`wrap(client).chat.completions.create(response_model=...)` builds its healer safely."""
    with openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0) as sdk:
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=[{"role": "user", "content": PROMPT}], response_model=Fussy
        )

    assert isinstance(outcome, Healed)
    assert Fussy(count=2) == outcome.value


# --- outcome_from_dict on bad input ---------------------------------------------------------------


def _records() -> list[dict[str, Any]]:
    """Valid records of several shapes: a repaired Healed, a Degraded with fallback and
    partial, a failed call, a truncation."""

    @healjson.contract(fields=("summary", "id"))
    def mentions(ticket: Ticket) -> Violation | None:
        return None if "order" in ticket.summary else Violation("summary must mention the order")

    repaired = Healer(Ticket, contracts=[mentions]).run(
        ScriptedModel([GOOD, '{"id": 1, "summary": "order 7 stuck"}']), PROMPT, max_tokens=50
    )
    degraded = Healer(Ticket, fallback={"id": 0}, policy=HealPolicy(max_attempts=2)).run(
        ScriptedModel(['```json\n{"id": "x", "summary": 5}\n```', "nope"]), PROMPT
    )
    failed = Healer(Ticket).run(ScriptedModel([TimeoutError("slow")]), PROMPT)
    cut = Healer(Ticket, policy=HealPolicy(max_attempts=1)).run(
        ScriptedModel([healjson.Reply('{"id": 1, "summ', "length")]), PROMPT
    )
    return [o.to_dict() for o in (repaired, degraded, failed, cut)]


RECORDS = _records()
RECORD_KEYS = sorted({key for record in RECORDS for key in record})
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["ok", "repair", "schema", "refusal", "code_fence", "<missing>", 10**400])
)
json_data = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=16,
)


def _mutate(draw: st.DrawFn, node: Any) -> None:
    """Replace or delete one randomly chosen part of `node` (in place)."""
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return
        key = draw(st.sampled_from(keys))
        child = node[key]
        if isinstance(child, dict | list) and child and draw(st.booleans()):
            node = child
            continue
        if isinstance(node, dict) and draw(st.booleans()):
            del node[key]
        else:
            node[key] = draw(json_data)
        return


@st.composite
def mutated_records(draw: st.DrawFn) -> dict[str, Any]:
    """A valid record with one to four parts replaced by random JSON data or deleted."""
    record = copy.deepcopy(draw(st.sampled_from(RECORDS)))
    for _ in range(draw(st.integers(1, 4))):
        _mutate(draw, record)
    return record


def _check_usable(outcome: Any) -> None:
    """A rebuilt outcome renders, serialises and round-trips."""
    assert isinstance(outcome, Healed | Degraded)
    assert isinstance(render_markdown(outcome), str)
    data = outcome.to_dict()
    assert isinstance(json.dumps(data), str)
    assert isinstance(outcome_from_dict(data), Healed | Degraded)


@given(
    data=json_data | st.dictionaries(st.sampled_from(RECORD_KEYS), json_data),
    typed=st.booleans(),
)
def test_outcome_from_dict_raises_only_value_error_on_random_data(data: Any, typed: bool) -> None:
    """Random JSON-like data either rebuilds a usable outcome or raises ValueError."""
    try:
        outcome = outcome_from_dict(data, Ticket if typed else None)
    except ValueError:
        return
    _check_usable(outcome)


@given(record=mutated_records(), typed=st.booleans())
def test_outcome_from_dict_raises_only_value_error_on_mutated_records(
    record: dict[str, Any], typed: bool
) -> None:
    """A valid record with parts replaced or deleted rebuilds a usable outcome or raises
    ValueError."""
    try:
        outcome = outcome_from_dict(record, Ticket if typed else None)
    except ValueError:
        return
    _check_usable(outcome)


@pytest.mark.parametrize(
    "record",
    [
        {"ok": True, "max_attempts": math.inf},
        {"ok": True, "max_attempts": 1e400},
        {"ok": True, "attempts": [{"number": 1, "strategy": "initial", "latency_s": 10**5000}]},
        {"ok": True, "max_attempts": 10**5000},
        {"ok": True, "usage": {"prompt_tokens": -1}},
        {"ok": True, "usage": {"prompt_tokens": math.nan}},
        {"ok": True, "attempts": [{"number": math.inf, "strategy": "initial"}]},
        {"ok": False, "reason": ["not", "hashable"]},
        {"ok": True, "flags": [{}]},
        {"ok": True, "changed_fields": [[1]]},
        {"ok": True, "raw_text": 5},
        {"ok": True, "attempts": "x"},
        {"ok": True, "attempts": [{"number": 1, "strategy": "initial", "messages": [[1, 2]]}]},
        {"ok": True, "format": 2},  # a layout this version cannot read
        {"ok": True, "format": "1"},
        {"ok": True, "format": True},
        [1, 2, 3],
        "a string",
        None,
    ],
)
def test_outcome_from_dict_turns_every_bad_input_into_value_error(record: Any) -> None:
    """Overflow, wrong types and unhashable enum values all raise ValueError."""
    with pytest.raises(ValueError, match="not a healjson outcome record"):
        outcome_from_dict(record)


@pytest.mark.parametrize("record", RECORDS, ids=["repaired", "degraded", "failed", "cut"])
def test_valid_records_round_trip_unchanged(record: dict[str, Any]) -> None:
    """Every valid record rebuilds to an outcome whose record is the same."""
    assert record == outcome_from_dict(record).to_dict()


def test_an_outcome_repr_is_short_and_the_record_stays_whole() -> None:
    """`print(outcome)` shows the gist in a line or two; `.trace()` and `.to_dict()` keep all."""
    long_summary = "x" * 5_000
    text = json.dumps({"id": 1, "category": "refund", "summary": long_summary})
    healed = healjson.validate(text, dict)
    degraded = healjson.validate("no JSON, only " + long_summary, Ticket)
    assert repr(healed).startswith("Healed(value=")
    assert repr(degraded).startswith("Degraded(reason='invalid_output', calls=0, errors=")
    for outcome in (healed, degraded):
        assert len(repr(outcome)) < 400
        assert long_summary in json.dumps(outcome.to_dict())


@given(
    keys=st.lists(
        st.text("abcdefghijklmnopqrstuvwxyz _-é", min_size=1, max_size=12),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    size=st.integers(min_value=0, max_value=600),
    limit=st.integers(min_value=40, max_value=300),
)
def test_a_short_rendering_keeps_the_key_of_a_field_it_cuts(
    keys: list[str], size: int, limit: int
) -> None:
    """A key is shown before its value, so it takes its share of the budget first: a field whose
    long value is cut keeps its name (`{"urgency": 3, "summary": "xxx…"}`, not `"": "xxx…"`)."""
    value = dict.fromkeys(keys, "x" * size)
    shown = short_repr(value, limit)
    prefix = json.dumps(value, ensure_ascii=False)
    cut = shown.rsplit("…(+", 1)[0] if "…(+" in shown else shown
    assert prefix.startswith(cut)  # what is shown is the true rendering's start


def test_repr_of_a_healed_value_with_a_long_field_names_the_field() -> None:
    """The reported case: `repr(outcome)` shows `"summary"` before its cut value."""

    class Ticket(BaseModel):
        urgency: int
        summary: str

    outcome = healjson.validate(json.dumps({"urgency": 3, "summary": "x" * 500}), Ticket)
    assert repr(outcome).startswith('Healed(value={"urgency": 3, "summary": "xxx')
