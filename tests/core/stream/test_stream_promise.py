"""What a stream promises: the unstreamed outcome, items that stay, an ending it does not guess.

* Equivalence: for any reply text, chunked any way, the streamed outcome is the unstreamed
  outcome of the same text (same verdict, value, number of calls). A stream stops early only on
  a breach no later text can repair (`healjson._core.stream.judge`), and then it makes the same
  repair the unstreamed run makes.
* An item handed out by `items()` is in the final value at its index, in index order.
* A stream that ends with no finish reason in the middle of a value is never healed from it.
* A snapshot's fields win over its own helpers.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import keyword
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model, field_validator, model_validator

import healjson
from healjson import (
    Degraded,
    Delta,
    Flag,
    Healed,
    Healer,
    HealPolicy,
    Partial,
    Reason,
    Reply,
    Violation,
)
from healjson._core.wire.reply import ToolCall
from healjson.testing import ScriptedModel


class Box(BaseModel):
    qty: int = Field(ge=1, le=9)
    label: str = Field(min_length=2)
    unit: str = "pcs"

    @field_validator("qty", mode="before")
    @classmethod
    def count_items(cls, value: Any) -> Any:  # "3 items" -> 3
        if isinstance(value, str) and value.endswith(" items") and value[:-6].isdigit():
            return int(value[:-6])
        return value


class CheckedBox(Box):
    """A cross-field rule in pydantic's own form: an `after` model validator."""

    @model_validator(mode="after")
    def labelled_in_kg(self) -> CheckedBox:
        if self.unit == "kg" and self.label == "ok":
            raise ValueError("a box in kg needs a real label")
        return self


@healjson.contract(fields=("qty",))
def big_boxes_in_kg(box: Box) -> Violation | None:
    """Declares `qty` but reads `unit` too (defaulted, or arriving later)."""
    if box.qty > 5 and box.unit != "kg":
        return Violation("a box of more than 5 must be counted in kg", fields=("unit",))
    return None


@healjson.contract(fields=("label",))
def label_not_tbd(box: Box) -> Violation | None:
    return Violation("label must not be TBD") if box.label == "TBD" else None


@healjson.contract(fields=("qty",))
def broken_rule(box: Box) -> Violation | None:
    raise ValueError("a bug in the rule")


GOOD_BOX = '{"qty": 2, "label": "ok", "unit": "kg"}'

QTYS = [2, 7, 99, 0, "five", "3 items", "2", "seven boxes"]
LABELS = ["ok", "a fine box", "x", "TBD", ""]


@st.composite
def box_texts(draw: st.DrawFn) -> tuple[str, bool]:
    """A reply for `Box`, and whether it is a tool call's arguments (one value by construction)."""
    fields: dict[str, Any] = {}
    if draw(st.integers(0, 4)):
        fields["qty"] = draw(st.sampled_from(QTYS))
    if draw(st.booleans()) or not fields:
        fields["label"] = draw(st.sampled_from(LABELS))
    if draw(st.booleans()):
        fields["unit"] = draw(st.sampled_from(["kg", "pcs"]))
    order = draw(st.permutations(list(fields)))
    case = draw(st.sampled_from([str, str, str, str.capitalize, str.upper]))
    data = {case(key): fields[key] for key in order}
    if not draw(st.integers(0, 3)):
        data = {"box": data}  # a wrapper object
    text = json.dumps(data, indent=draw(st.sampled_from([None, 1])))
    tool = True
    shape = draw(st.sampled_from(["bare", "bare", "bare", "draft", "fence", "prose"]))
    if shape == "draft":  # an example first, then the answer: only in text mode
        draft = json.dumps({"qty": draw(st.sampled_from([99, 2])), "label": "x"})
        text = f"For example {draft}. My answer: {text}"
        tool = False
    elif shape == "fence":
        text, tool = f"```json\n{text}\n```", False
    elif shape == "prose":
        text, tool = f"Here it is: {text} Done.", False
    return text, tool


def chunks_of(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


def summary(outcome: Any) -> tuple[Any, ...]:
    value = outcome.value if isinstance(outcome, Healed) else None
    reason = None if isinstance(outcome, Healed) else outcome.reason
    return type(outcome).__name__, value, outcome.calls, reason


class StreamScript:
    """A call whose first reply streams (its chunks, then its finish reason), the rest whole.
    With `tool`, the chunks are a tool call's arguments: one JSON value by construction, what a
    stream may judge before its end (free text may still hold a second, corrected value)."""

    def __init__(
        self, first: list[str], *rest: str | list[str], finish: str = "stop", tool: bool = False
    ) -> None:
        self.replies: list[Any] = [first, *rest]
        self.calls = 0
        self.finish = finish
        self.tool = tool

    def __call__(self, messages: Any, **params: Any) -> Any:
        self.calls += 1
        reply = self.replies.pop(0) if self.replies else GOOD_BOX
        if isinstance(reply, list):
            pieces = [Delta(tool_arguments=p) if self.tool else p for p in reply]
            finish = self.finish if self.calls == 1 else "stop"  # a repair's reply is whole
            return iter([*pieces, Delta(finish_reason=finish)])
        return reply

    async def acall(self, messages: Any, **params: Any) -> Any:
        reply = self(messages, **params)
        if isinstance(reply, str):
            return reply

        async def pieces() -> AsyncIterator[Any]:
            for piece in reply:
                yield piece

        return pieces()


CONTRACTS = [
    (),
    (big_boxes_in_kg,),
    (label_not_tbd,),
    (broken_rule,),
    (big_boxes_in_kg, label_not_tbd),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reply=box_texts(),
    cuts=st.lists(st.integers(0, 200), max_size=8),
    rules=st.sampled_from(CONTRACTS),
    later=st.sampled_from([GOOD_BOX, '{"qty": 99, "label": "ok"}']),
    cut=st.one_of(st.none(), st.integers(1, 80)),
    truncation=st.sampled_from(["compress", "degrade"]),
    model=st.sampled_from([Box, CheckedBox]),
)
@example(
    reply=('{"qty": "five", "label": "ok"}', True),
    cuts=[],
    rules=(),
    later=GOOD_BOX,
    cut=None,
    truncation="compress",
    model=Box,
)
@example(
    reply=('{"qty": "3 items", "label": "ok"}', True),
    cuts=[],
    rules=(),
    later=GOOD_BOX,
    cut=None,
    truncation="compress",
    model=Box,
)
@example(
    reply=('{"qty": 7, "label": "ok", "unit": "kg"}', True),
    cuts=[12],
    rules=(big_boxes_in_kg,),
    later=GOOD_BOX,
    cut=None,
    truncation="compress",
    model=Box,
)
@example(
    reply=('{"qty": 2, "label": "ok"}', True),
    cuts=[],
    rules=(broken_rule,),
    later=GOOD_BOX,
    cut=None,
    truncation="compress",
    model=Box,
)
@example(
    reply=('{"Qty": 7, "label": "ok"}', True),
    cuts=[3],
    rules=(),
    later=GOOD_BOX,
    cut=None,
    truncation="compress",
    model=Box,
)
@example(
    reply=('For example {"qty": 99, "label": "x"}. My answer: {"qty": 2, "label": "ok"}', False),
    cuts=[],
    rules=(),
    later=GOOD_BOX,
    cut=None,
    truncation="compress",
    model=Box,
)
def test_a_streamed_reply_has_the_unstreamed_outcome(
    reply: tuple[str, bool],
    cuts: list[int],
    rules: tuple[Any, ...],
    later: str,
    cut: int | None,
    truncation: Any,
    model: type[Box],
) -> None:
    """Sync, async, every chunking, whole or cut by the token limit: the verdict, value and
    calls of the same text unstreamed (the sync run streams the repairs' replies too)."""
    text, tool = reply
    finish = "stop" if cut is None else "length"
    text = text if cut is None else text[:cut]
    first = (
        Reply(None, finish, tool_calls=(ToolCall("Box", text),)) if tool else Reply(text, finish)
    )
    healer = Healer(model, contracts=rules, policy=HealPolicy(on_truncation=truncation))
    whole = healer.run(ScriptedModel([first, later, later]), "box?")

    again = chunks_of(later, cuts)
    script = StreamScript(chunks_of(text, cuts), again, again, finish=finish, tool=tool)
    assert summary(whole) == summary(healer.stream(script, "box?").finish())

    script = StreamScript(chunks_of(text, cuts[::-1]), later, later, finish=finish, tool=tool)
    astream = healer.astream(script.acall, "box?")
    assert summary(whole) == summary(asyncio.run(astream.finish()))


def test_what_a_one_value_stream_stops_early_on_is_a_breach_the_whole_text_has_too() -> None:
    """The early stops the property allows, seen: a closed field out of its bounds, a contract on
    its declared fields; never a number word, a before-validator's input, a contract reading a
    defaulted field, or a rule that raises."""
    healer = Healer(Box, contracts=[big_boxes_in_kg, label_not_tbd])
    cases = {
        '{"qty": 99, "label": "' + "y" * 300 + '"}': True,  # out of bounds: final whatever follows
        '{"label": "TBD", "qty": 2, "unit": "' + "k" * 300 + '"}': True,  # its field has arrived
        '{"qty": "five", "label": "' + "y" * 300 + '"}': False,  # L1 reads the number word
        '{"qty": "3 items", "label": "' + "y" * 300 + '"}': False,  # the before-validator's
        '{"qty": 7, "label": "' + "y" * 300 + '", "unit": "kg"}': False,  # reads `unit`, to come
    }
    for text, stops in cases.items():
        script = StreamScript(chunks_of(text, list(range(0, len(text), 7))), GOOD_BOX, tool=True)
        outcome = healer.stream(script, "box?").finish()
        assert (Flag.STREAM_ABORTED in outcome.attempts[0].flags) is stops, text
        assert summary(healer.run(ScriptedModel([text, GOOD_BOX]), "box?")) == summary(outcome)


def test_a_contract_that_raises_ends_contract_error_after_one_call_streamed_as_unstreamed() -> None:
    """A contract that raises ends the run with `contract_error` after one call, streamed as
    unstreamed."""
    healer = Healer(Box, contracts=[broken_rule])
    text = '{"qty": 2, "label": "ok"}'
    script = StreamScript(chunks_of(text, [5, 10, 15]), GOOD_BOX, GOOD_BOX, tool=True)
    streamed = healer.stream(script, "box?").finish()
    whole = healer.run(ScriptedModel([text, GOOD_BOX, GOOD_BOX]), "box?")

    assert isinstance(streamed, Degraded)
    assert Reason.CONTRACT_ERROR == streamed.reason == whole.reason
    assert 1 == streamed.calls == whole.calls == script.calls


def test_instructor_create_partial_heals_a_number_word_in_one_call() -> None:
    """instructor's `create_partial` through `wrap` heals a number word locally in one call."""
    instructor = pytest.importorskip("instructor")
    openai = pytest.importorskip("openai")
    from healjson.testing import ScriptedReply, ScriptedServer

    text = '{"qty": "five", "label": "a fine box"}'
    with ScriptedServer([ScriptedReply(content=text, chunk_chars=4)] * 3) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0, timeout=10)
        wrapped = healjson.wrap(instructor.from_openai(sdk, mode=instructor.Mode.JSON))
        partial = wrapped.create_partial(
            model="m", messages=[{"role": "user", "content": "x"}], response_model=Box
        )
        list(partial)
        sdk.close()
        outcome = partial.outcome

    assert isinstance(outcome, Healed)
    assert (5, 1) == (outcome.value.qty, outcome.calls)


# --- items handed out are final ------------------------------------------------------------------


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)

    @field_validator("sku")
    @classmethod
    def odd_rule(cls, value: str) -> str:
        if value == "K":  # neither valid nor a validation error: undecided until the end
            raise LookupError("an odd validator")
        return value


def lines(*qtys: Any, sku: str = "ABCDEFGH") -> str:
    return json.dumps([{"sku": sku[i], "qty": q} for i, q in enumerate(qtys)])


@healjson.contract
def at_most_five_in_all(lines: list[Line]) -> Violation | None:
    return Violation("at most 5 in all") if sum(line.qty for line in lines) > 5 else None


@settings(max_examples=40, deadline=None)
@given(
    first=st.lists(st.sampled_from([1, 2, 0, "two"]), min_size=1, max_size=5),
    tool=st.booleans(),
    draft=st.booleans(),
    list_rule=st.booleans(),
    repair=st.sampled_from(["items", "whole", "other"]),
    cuts=st.lists(st.integers(0, 300), max_size=6),
    odd=st.booleans(),
    streamed_repairs=st.booleans(),
)
def test_an_item_handed_out_is_in_the_final_value_at_its_index(
    first: list[Any],
    tool: bool,
    draft: bool,
    list_rule: bool,
    repair: str,
    cuts: list[int],
    odd: bool,
    streamed_repairs: bool,
) -> None:
    """Whatever the stream, draft, rules and repair, every item a stream hands out is in the
    final value at its index, or the stream says it was retracted."""
    text = lines(*first, sku="AKCDEFGH" if odd else "ABCDEFGH")
    if draft:  # a draft list, then the answer
        text, tool = f"Draft: {lines(9, 9, sku='XY')}\nFinal: {text}", False
    bad = sum(1 for q in first if q == 0)
    repairs = {
        "items": lines(*[1] * bad, sku="RSTUVW"),  # the failed items alone, spliced back
        "whole": lines(*[1] * len(first), sku="MNOPQR"),  # the whole list, written anew
        "other": lines(1, sku="Z"),
    }
    healer = Healer(list[Line], contracts=[at_most_five_in_all] if list_rule else [])
    later: list[Any] = [repairs[repair], repairs["whole"]]
    if streamed_repairs:  # every call streams, repairs too
        later = [chunks_of(reply, cuts) for reply in later]
    script = StreamScript(chunks_of(text, cuts), *later, tool=tool)
    stream = healer.stream(script, "lines?")

    given = list(stream.items())
    outcome = stream.outcome
    status = stream.item_status
    if isinstance(outcome, Healed):
        final = list(outcome.value)
        retracted = {i for i, why in status.items() if why == "retracted"}
        if not retracted:
            assert final == given  # every item, in order, each one final
        else:  # a whole-list repair replaced them: reported, and the final items followed
            assert final == [item for item in given if item in final]
            assert len([item for item in given if item not in final]) <= len(retracted)
        assert set(range(len(final))) <= set(status)
        assert {status[i] for i in set(status) - set(range(len(final)))} <= {"held", "retracted"}
    if outcome.calls == 1 and isinstance(outcome, Healed):
        assert set(status.values()) == {"streamed"}


def test_a_list_rule_holds_items_until_the_answer_is_judged() -> None:
    """A list-level contract can replace the whole list: nothing is handed out before it ran."""
    healer = Healer(list[Line], contracts=[at_most_five_in_all])
    script = StreamScript(chunks_of(lines(3, 3), [3, 9, 20, 30]), lines(1, 1, sku="PQ"), tool=True)
    stream = healer.stream(script, "lines?")

    got = list(stream.items())

    assert isinstance(stream.outcome, Healed)
    assert ["P", "Q"] == [line.sku for line in got] == [line.sku for line in stream.outcome.value]
    assert {0: "repaired", 1: "repaired"} == stream.item_status


def test_a_draft_list_before_the_answer_hands_out_nothing_of_the_draft() -> None:
    """A draft list written before the answer hands out none of its items when the last answer is
    chosen."""
    text = f"For example: {lines(1, 1, sku='XY')}\nThe answer: {lines(2, 3)}"
    stream = Healer(list[Line], policy=healjson.HealPolicy(on_ambiguity="last")).stream(
        StreamScript(chunks_of(text, list(range(0, len(text), 6)))), "lines?"
    )
    assert ["A", "B"] == [line.sku for line in stream.items()]
    assert isinstance(stream.outcome, Healed)


def test_an_item_healed_locally_in_a_one_call_run_is_streamed_not_repaired() -> None:
    """An item L1 heals locally in a one-call run is reported as streamed, not repaired."""
    text = lines(1, "two", 3)  # L1 reads the number word at the end: no repair call
    script = StreamScript(chunks_of(text, [4, 11, 30]), tool=True)
    stream = Healer(list[Line]).stream(script, "x")

    assert [1, 2, 3] == [line.qty for line in stream.items()]
    assert 1 == stream.outcome.calls
    assert {0: "streamed", 1: "streamed", 2: "streamed"} == stream.item_status


def test_a_repair_that_rewrites_the_whole_list_reports_the_item_it_replaced() -> None:
    """A repair that rewrites the whole list reports the item handed out before it as retracted."""
    text = lines(1, 0)
    script = StreamScript(chunks_of(text, [5, 20, 30]), lines(2, 2, sku="PQ"), tool=True)
    stream = Healer(list[Line]).stream(script, "lines?")

    got = [line.sku for line in stream.items()]

    assert ["A", "P", "Q"] == got  # A was handed out during the stream, then replaced by P
    assert {0: "retracted", 1: "repaired"} == stream.item_status
    assert ["P", "Q"] == [line.sku for line in stream.outcome.value]


@pytest.mark.parametrize(
    "script",
    [
        lambda: StreamScript(chunks_of(lines(1, 0, 3), [5, 20, 40]), lines(2, sku="P"), tool=True),
        lambda: StreamScript(chunks_of(lines(1, 0), [5, 20, 30]), lines(2, 2, sku="PQ"), tool=True),
        lambda: StreamScript(chunks_of(lines(1, 2, 3), [4, 11, 30]), tool=True),
    ],
    ids=["an-item-repaired", "the-list-rewritten", "one-call"],
)
def test_item_status_is_the_same_whichever_view_read_the_stream(script: Any) -> None:
    """Snapshots, items or `finish()`: once the stream is read to its end, `item_status` is the
    same final account of each item."""
    views = []
    for read in ("snapshots", "items", "finish"):
        stream = Healer(list[Line]).stream(script(), "lines?")
        if read == "snapshots":
            for _ in stream:
                pass
        elif read == "items":
            list(stream.items())
        else:
            stream.finish()
        views.append(stream.item_status)
    assert views[0] == views[1] == views[2]
    assert views[0]


def test_items_handed_out_in_a_run_that_degrades_are_in_no_value() -> None:
    """Items handed out during a run that ends `Degraded` are reported `held` (in no value), not
    `streamed`."""
    cut = lines(1, 2, 3)[:-12]  # the third item cut short, every answer
    policy = healjson.HealPolicy(max_attempts=1)
    stream = Healer(list[Line], policy=policy).stream(
        StreamScript(chunks_of(cut, [5, 20, 30, len(cut)]), tool=True), "lines?"
    )
    given = list(stream.items())
    assert given
    assert isinstance(stream.outcome, Degraded)
    assert {"held"} == set(stream.item_status.values())
    assert set(range(len(given))) <= set(stream.item_status)


# --- an ending the stream does not know ----------------------------------------------------------


def openai_chunks(text: str, finish: str | None) -> list[Any]:
    pieces: list[Any] = [
        {"object": "chat.completion.chunk", "choices": [{"delta": {"content": p}}]} for p in text
    ]
    if finish:
        pieces.append(
            {"object": "chat.completion.chunk", "choices": [{"delta": {}, "finish_reason": finish}]}
        )
    return pieces


def anthropic_chunks(text: str, finish: str | None) -> list[Any]:
    pieces: list[Any] = [{"type": "message_start", "message": {"model": "m"}}]
    pieces += [
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": p}} for p in text
    ]
    if finish:
        pieces += [
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
            {"type": "message_stop"},
        ]
    return pieces


def gemini_chunks(text: str, finish: str | None) -> list[Any]:
    pieces: list[Any] = [{"candidates": [{"content": {"parts": [{"text": p}]}}]} for p in text]
    if finish:
        pieces.append(
            {"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}]}
        )
    return pieces


FORMATS = [openai_chunks, anthropic_chunks, gemini_chunks]


class Parcel(BaseModel):
    status: str
    weight: int


CUT = [
    (int, "12", "123", 123),
    (str, '"parcel is la', '"parcel is late"', "parcel is late"),
    (float, "-1.", "-1.5", -1.5),
]


@pytest.mark.parametrize("chunks", FORMATS)
@pytest.mark.parametrize(("target", "cut", "whole", "value"), CUT)
def test_a_stream_that_stops_mid_value_with_no_finish_reason_is_never_healed_from_it(
    chunks: Any, target: Any, cut: str, whole: str, value: Any
) -> None:
    """A stream that stops mid-value with no finish reason is a truncation and is repaired, never
    healed from the cut value, in every wire format."""
    replies = [chunks(cut, None), whole]

    def call(messages: Any, **params: Any) -> Any:
        return replies.pop(0)

    outcome = Healer(target).stream(call, "go").finish()

    assert isinstance(outcome, Healed)
    assert (value, 2) == (outcome.value, outcome.calls)  # repaired, never the cut value
    assert Flag.TRUNCATED in outcome.attempts[0].flags
    assert "finish reason" in outcome.attempts[0].diagnostics[0].constraint


@pytest.mark.parametrize("chunks", FORMATS)
def test_a_known_ending_or_a_complete_value_heals_from_the_stream(chunks: Any) -> None:
    """A stream with a known ending, or whose value is complete (a closed object or string, a
    sentence's full stop), heals from the stream itself."""
    cases: list[tuple[Any, str, Any, list[str | None]]] = [
        (int, "12", 12, ["stop"]),  # the ending is known
        (
            Parcel,
            '{"status": "late", "weight": 3}',
            Parcel(status="late", weight=3),
            ["stop", None],
        ),
        (str, '"parcel is late"', "parcel is late", ["stop", None]),  # a closed string
        (str, "The parcel is late.", "The parcel is late.", [None]),  # a sentence's full stop
    ]
    for target, text, value, finishes in cases:
        for finish in finishes:
            pieces = chunks(text, finish)
            outcome = Healer(target).stream(lambda m, _p=pieces, **k: iter(_p), "go").finish()
            assert isinstance(outcome, Healed), (text, finish)
            assert (value, 1) == (outcome.value, outcome.calls)


def test_an_unstreamed_reply_without_finish_reason_is_read_as_before() -> None:
    """Only a stream's ending is in doubt: a whole reply is what the provider returned."""
    outcome = Healer(int).run(ScriptedModel([Reply("12", None)]), "go")
    assert isinstance(outcome, Healed)
    assert 12 == outcome.value


# --- a snapshot's fields win ----------------------------------------------------------------------

OWN = ["data", "complete", "to_dict", "data_of", "is_complete"]
NAMES = st.one_of(
    st.sampled_from(OWN),
    st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
        lambda n: (
            not keyword.iskeyword(n) and not hasattr(BaseModel, n) and not n.startswith("model_")
        )
    ),
)


@settings(max_examples=30, deadline=None)
@given(names=st.lists(NAMES, min_size=1, max_size=5, unique=True), complete=st.booleans())
def test_a_field_of_any_name_reads_as_the_field(names: list[str], complete: bool) -> None:
    """A model field of any name, even one of the snapshot's own methods, reads as the field, and
    the snapshot's own accessors still work."""
    model = create_model("Doc", **dict.fromkeys(names, (int, ...)))  # type: ignore[call-overload]
    data = {name: number for number, name in enumerate(names)}
    snap: Partial[Any] = Partial(data, model, complete=complete)

    for name in names:
        assert data[name] == getattr(snap, name)
    assert data == Partial.data_of(snap) == Partial.to_dict(snap)
    assert complete is Partial.is_complete(snap)
    for own in set(OWN) - set(names):  # the snapshot's own, where no field takes the name
        assert getattr(snap, own) is not None


def test_a_snapshot_of_a_model_with_a_data_field_streams_the_field() -> None:
    """A model with `data` and `complete` fields streams them as fields, while
    `Partial.is_complete` still reports the snapshot's state."""

    class Envelope(BaseModel):
        data: str
        complete: bool

    text = '{"data": "payload", "complete": false}'
    stream = Healer(Envelope).stream(lambda m, **p: iter(chunks_of(text, [9, 20])), "go")
    last = list(stream)[-1]
    assert ("payload", False) == (last.data, last.complete)
    assert Partial.is_complete(last)
