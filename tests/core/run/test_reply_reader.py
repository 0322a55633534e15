"""A reply reader (`Healer.with_reply_reader`): a model that answers in a text format of its own
(here `<answer>` tags around the JSON) has each reply read into the JSON text L1 and L2 judge,
while the run keeps the model's text as the reply everywhere: the attempts' and the outcome's
`raw_text`, the events, the answer a repair quotes back, what the response cache stores."""

from __future__ import annotations

import re
from typing import Any, Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Degraded, Flag, Healed, Healer, HealPolicy, Reason, Reply, ResponseCache
from healjson._core.judge.contracts import ContractContext
from healjson._frameworks.core import ReadReply
from healjson.testing import ScriptedModel, capture_events


class Ticket(BaseModel):
    kind: Literal["bug", "question"]
    count: int


TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def tag_reader(text: str) -> ReadReply | None:
    """The `<answer>` tags of `text`, each tag's body one answer; text outside the tags is
    prose the reader sets aside (`prose_around`); None when there is no tag."""
    bodies = TAG.findall(text)
    if not bodies:
        return None
    outside = TAG.sub("", text).strip()
    return ReadReply(tuple(bodies), (Flag.PROSE_AROUND,) if outside else ())


def tagged(body: str) -> str:
    return f"<answer>{body}</answer>"


GOOD = tagged('{"kind": "bug", "count": 2}')
BAD = tagged('{"kind": "bug", "count": "many"}')


def healer(policy: HealPolicy | None = None, **options: Any) -> Healer[Ticket]:
    return Healer(Ticket, policy=policy, **options).with_reply_reader(tag_reader)


def test_a_read_reply_is_judged_as_read_and_recorded_as_the_model_wrote_it() -> None:
    """The tags' JSON is the value; the outcome, its attempt and the events show the text."""
    with capture_events(include_content=True) as events:
        outcome = healer().run(ScriptedModel([GOOD]), "triage")
    assert isinstance(outcome, Healed)
    assert Ticket(kind="bug", count=2) == outcome.value
    assert GOOD == outcome.raw_text == outcome.attempts[0].raw_text
    assert [GOOD] == [e["raw_text"] for e in events if e["event"] == "healjson.attempt"]
    assert () == outcome.flags


def test_a_repair_quotes_the_models_text_and_every_record_shows_it() -> None:
    """A failed reply is quoted back as the model wrote it (the assistant turn and the record
    of the repair's request), and each attempt records its own text."""
    model = ScriptedModel([BAD, GOOD])
    with capture_events(include_content=True) as events:
        outcome = healer().run(model, "triage")
    assert isinstance(outcome, Healed)
    assert {"role": "assistant", "content": BAD} == model.calls[1].messages[-2]
    first, second = outcome.attempts
    assert (BAD, GOOD) == (first.raw_text, second.raw_text)
    assert BAD == second.messages[-2]["content"] == second.prompt.raw_output  # type: ignore[union-attr]
    assert [BAD, GOOD] == [e["raw_text"] for e in events if e["event"] == "healjson.attempt"]
    assert GOOD == outcome.raw_text


def test_the_readers_flags_come_before_l1s() -> None:
    """Prose the reader set aside and a fence L1 took off are both on the attempt and the
    outcome, the reader's first."""
    text = "Here it is: " + tagged('```json\n{"kind": "bug", "count": 2}\n```')
    outcome = healer().run(ScriptedModel([text]), "triage")
    assert isinstance(outcome, Healed)
    assert (Flag.PROSE_AROUND, Flag.CODE_FENCE) == outcome.flags == outcome.attempts[0].flags
    assert text == outcome.raw_text


def test_several_answers_are_judged_as_several_and_their_joins_are_not_prose() -> None:
    """Two different tagged answers: asked again by default; `on_ambiguity="first"` takes the
    first, flagged `ambiguous_choice` (not `prose_around`: the lines between are the reader's)."""
    two = GOOD + tagged('{"kind": "question", "count": 1}')
    asked = healer().run(ScriptedModel([two, GOOD]), "triage")
    assert 2 == asked.calls
    assert two == asked.attempts[0].raw_text
    picked = healer(HealPolicy(on_ambiguity="first")).run(ScriptedModel([two]), "triage")
    assert isinstance(picked, Healed)
    assert Ticket(kind="bug", count=2) == picked.value
    assert Flag.AMBIGUOUS_CHOICE in picked.flags
    assert Flag.PROSE_AROUND not in picked.flags


def test_a_text_without_the_format_is_read_as_it_came() -> None:
    """The reader returns None: L1 reads the text itself (here a fenced JSON answer)."""
    text = '```json\n{"kind": "bug", "count": 2}\n```'
    outcome = healer().run(ScriptedModel([text]), "triage")
    assert isinstance(outcome, Healed)
    assert (Flag.CODE_FENCE,) == outcome.flags
    assert text == outcome.raw_text


def test_a_reader_that_raises_degrades_the_run_as_a_bug_in_code() -> None:
    """A reader's exception never escapes: the run degrades with `contract_error`, one call."""

    def broken(text: str) -> ReadReply | None:
        raise ValueError("no")

    model = ScriptedModel([GOOD, GOOD])
    outcome = Healer(Ticket).with_reply_reader(broken).run(model, "triage")
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert 1 == len(model.calls)
    assert GOOD == outcome.raw_text
    assert "reader raised" in outcome.errors[0].constraint


def test_the_first_reply_of_a_reader_run_is_never_taken_unread() -> None:
    """`HealSpec.first` (the happy path's quick start) leaves a reader's reply to the loop,
    even one that is valid JSON as it stands, and takes it without a reader."""
    text = '{"kind": "bug", "count": 2}'
    args = (Reply(text, "stop"), (), {}, 0.0, "run", ContractContext())
    assert healer().spec.first(*args) is None
    assert isinstance(Healer(Ticket).spec.first(*args), Healed)


def test_the_cache_stores_the_models_text_and_reads_a_hit_again() -> None:
    """A healed answer is stored as the model wrote it; a hit is judged again with the reader
    (no call), its `raw_text` the text."""
    cache = ResponseCache.memory()
    cached = healer(cache=cache)
    first = cached.run(ScriptedModel([GOOD]), "triage")
    model = ScriptedModel([])
    again = cached.run(model, "triage")
    assert isinstance(first, Healed)
    assert isinstance(again, Healed)
    assert [] == model.calls
    assert again.attempts[0].cache_hit
    assert (GOOD, Ticket(kind="bug", count=2)) == (again.raw_text, again.value)


def test_a_copy_keeps_the_reader_and_none_removes_it() -> None:
    """`with_fallback` on a reader's healer keeps the reader; `with_reply_reader(None)` drops
    it (the tagged text is then L1's to read: prose around one JSON value)."""
    fallback = healer().with_fallback(Ticket(kind="question", count=0))
    assert fallback.spec.reply_reader is tag_reader
    plain = healer().with_reply_reader(None).run(ScriptedModel([GOOD]), "triage")
    assert isinstance(plain, Healed)
    assert Flag.PROSE_AROUND in plain.flags


def test_a_streamed_reply_is_read_once_whole() -> None:
    """A streamed run judges the text read whole, with the model's text as its `raw_text`."""

    def call(messages: Any, **params: Any) -> Any:
        return iter([GOOD[:9], GOOD[9:20], GOOD[20:]])

    stream = healer().stream(call, "triage")
    for _ in stream:
        pass
    outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert (GOOD, Ticket(kind="bug", count=2)) == (outcome.raw_text, outcome.value)


BODIES = st.builds(
    lambda kind, count, spaced: (
        f'{{"kind": "{kind}",{" " if spaced else ""}"count": {count}}}',
        Ticket(kind=kind, count=count),
    ),
    st.sampled_from(["bug", "question"]),
    st.integers(-(10**6), 10**6),
    st.booleans(),
)
PROSE = st.text(st.characters(categories=("L", "N", "Zs")), max_size=20)


@settings(derandomize=True, max_examples=50, deadline=None)
@given(BODIES, PROSE, PROSE)
def test_any_tagged_answer_heals_with_the_models_text_recorded(
    body: tuple[str, Ticket], before: str, after: str
) -> None:
    """Whatever prose is around the tag, the value is the tag's JSON and every record of the
    reply (outcome, attempt, event) is the text the model returned."""
    text = before + tagged(body[0]) + after
    with capture_events(include_content=True) as events:
        outcome = healer().run(ScriptedModel([text]), "triage")
    assert isinstance(outcome, Healed)
    assert body[1] == outcome.value
    assert text == outcome.raw_text == outcome.attempts[0].raw_text
    assert [text] == [e["raw_text"] for e in events if e["event"] == "healjson.attempt"]
    assert (Flag.PROSE_AROUND in outcome.flags) == bool((before + after).strip())
