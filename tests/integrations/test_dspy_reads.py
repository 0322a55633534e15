"""`healjson.dspy`: what a prediction's outcome says about the LM's answers, over a real
`dspy.LM("openai/...")` talking HTTP to `ScriptedServer`.

The local repairs made to each field are on the outcome, its attempts and its trace, with the
model's text as it came; a text field keeps its text as stock DSPy does; the LM's response is
read whole (finish reason, refusal, reported usage, as `healjson.wrap(OpenAI())` reads it);
the run's parameters reach the LM (a stronger model, a larger token limit); a field given
twice with different values is several answers, never one picked silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

pytest.importorskip("dspy")

import dspy
from dspy.utils.exceptions import AdapterParseError

import healjson
from dspy_kit import MODES, Mode, scripted_lm
from dspy_kit import predict as run
from healjson import Flag, Healed, HealPolicy, Reason, Source
from healjson._frameworks.dspy_fields import read_answer
from healjson.dspy import HealAdapter, outcome_of
from healjson.testing import ScriptedReply, ScriptedServer

FENCE = "`" * 3


@pytest.fixture(autouse=True)
def _bundled_model_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """DSPy reads LiteLLM's model map from the internet unless told to use its own copy."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class Ticket(dspy.Signature):
    """Triage the ticket."""

    text: str = dspy.InputField()
    kind: Literal["bug", "question"] = dspy.OutputField()
    count: int = dspy.OutputField()
    tags: list[str] = dspy.OutputField()


class Answer(dspy.Signature):
    """Answer the question."""

    question: str = dspy.InputField()
    answer: str = dspy.OutputField()
    total: int = dspy.OutputField()


class AnswerOut(BaseModel):
    answer: str
    total: int


class NoteValue(BaseModel):
    note: str
    value: str


class Snippets(dspy.Signature):
    """Quote the code."""

    text: str = dspy.InputField()
    plain: str = dspy.OutputField()
    optional: str | None = dspy.OutputField()


def wrapped(script: Sequence[Any], policy: HealPolicy | None = None) -> tuple[Any, int]:
    """The same replies through `healjson.wrap(OpenAI())`: the outcome and the calls made."""
    from openai import OpenAI

    with ScriptedServer(script) as server:
        client = healjson.wrap(OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0))
        outcome = client.chat.completions.create(
            model="scripted-model",
            messages=[{"role": "user", "content": "q"}],
            response_model=AnswerOut,
            policy=policy,
        )
        return outcome, len(server.requests)


def chat(**sections: str) -> str:
    """An answer in the chat adapter's format, one section per keyword, in order."""
    body = "".join(f"[[ ## {name} ## ]]\n{text}\n\n" for name, text in sections.items())
    return body + "[[ ## completed ## ]]"


# ---------------------------------------------------------------------------------------------
# Every local repair visible, the model's text kept
# ---------------------------------------------------------------------------------------------

BODIES = {
    "kind": ("BUG", Literal["bug", "question"]),
    "count": ("two", int),
    "tags": (f"{FENCE}json\n['ui', 'crash',]\n{FENCE}", list[str]),
}
REPAIRED = chat(**{name: body for name, (body, _) in BODIES.items()})


@pytest.mark.parametrize("mode", MODES)
def test_each_fields_local_repairs_are_on_the_outcome_its_attempt_and_trace(mode: Mode) -> None:
    """The flags `healjson.parse` reports for each field's section (but `text_as_value`: the
    chat format writes every value as text) are the outcome's and the attempt's, the trace
    lists them, and `raw_text` is the model's text."""
    ran = run(Ticket, [REPAIRED], mode=mode)
    assert ("bug", 2, ["ui", "crash"]) == (
        ran.prediction.kind,
        ran.prediction.count,
        ran.prediction.tags,
    )
    outcome = ran.outcome
    expected = [
        flag
        for body, kind in BODIES.values()
        for flag in healjson.parse(body, kind).flags
        if flag is not Flag.TEXT_AS_VALUE
    ]
    assert set(expected) <= set(outcome.flags)
    assert list(dict.fromkeys(expected)) == list(outcome.flags[: len(set(expected))])
    assert outcome.flags == outcome.attempts[0].flags
    assert REPAIRED == outcome.raw_text == outcome.attempts[0].raw_text
    repairs = next(line for line in outcome.trace().splitlines() if "L1 local repairs" in line)
    assert all(str(flag) in repairs for flag in expected)


def test_a_clean_chat_answer_carries_no_flag() -> None:
    """An answer in the chat format with nothing to repair (a literal, a number, a JSON list,
    each written as a section's text) heals with no flag."""
    ran = run(Ticket, [chat(kind="bug", count="2", tags='["ui", "crash"]')])
    assert ("bug", 2, ["ui", "crash"]) == (
        ran.prediction.kind,
        ran.prediction.count,
        ran.prediction.tags,
    )
    assert () == ran.outcome.flags


def test_a_repaired_attempts_flags_and_text_are_its_own() -> None:
    """A repair's attempt keeps its own text and flags; the first attempt keeps the first."""
    first = chat(kind="BUG", count="a lot", tags='["ui"]')  # no count: asked again
    second = chat(kind="bug", count="two", tags='["ui"]')
    ran = run(Ticket, [first, second])
    assert 2 == ran.calls
    one, two = ran.outcome.attempts
    assert (first, second) == (one.raw_text, two.raw_text)
    assert Flag.ENUM_CASE in one.flags
    assert Flag.ENUM_CASE not in two.flags
    assert Flag.NUMBER_WORD in two.flags
    assert second == ran.outcome.raw_text
    assert ran.outcome.flags == two.flags


SNIPPET = f"{FENCE}py\nprint(1)\n{FENCE}"


def test_a_text_field_keeps_its_text_as_stock_dspy_does() -> None:
    """`str` and `Optional[str]` sections are the model's text (a fence is part of it), as
    DSPy's own chat adapter reads them."""
    answer = chat(plain=SNIPPET, optional=SNIPPET)
    stock = run(Snippets, [answer], dspy.ChatAdapter())
    healed = run(Snippets, [answer])
    assert SNIPPET == stock.prediction.plain == stock.prediction.optional
    assert stock.prediction.plain == healed.prediction.plain
    assert stock.prediction.optional == healed.prediction.optional
    assert Flag.CODE_FENCE not in healed.outcome.flags


# ---------------------------------------------------------------------------------------------
# The LM's response read whole: as healjson.wrap(OpenAI()) reads it
# ---------------------------------------------------------------------------------------------

CUT = "[[ ## answer ## ]]\nThe order costs\n\n[[ ## total ## ]]\n42"


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_answer_is_flagged_truncated_as_the_client_adapter_flags_it(mode: Mode) -> None:
    """A reply cut by the token limit (`finish_reason="length"`) that still reads whole is
    `Healed` with `truncated`, as through `healjson.wrap(OpenAI())`."""
    ran = run(Answer, [ScriptedReply(content=CUT, finish_reason="length")], mode=mode)
    cut_json = json.dumps({"answer": "The order costs", "total": 42})
    client, _ = wrapped([ScriptedReply(content=cut_json, finish_reason="length")])
    assert isinstance(ran.outcome, Healed)
    assert Flag.TRUNCATED in ran.outcome.flags
    assert Flag.TRUNCATED in client.flags
    assert ["length"] == [a.finish_reason for a in ran.outcome.attempts]
    assert [a.finish_reason for a in client.attempts] == [
        a.finish_reason for a in ran.outcome.attempts
    ]


@pytest.mark.parametrize(
    ("mode", "engine"), [("sync", "auto"), ("async", "auto"), ("sync", "litellm")]
)
def test_a_refusal_degrades_as_refusal_after_one_call(mode: Mode, engine: str) -> None:
    """A refusal is the model's answer: `refusal`, one call, as through the client adapter
    (DSPy's own engine, or LiteLLM's)."""
    refuse = ScriptedReply(refusal="I'm sorry, I can't help with that.")
    ran = run(Answer, [refuse] * 3, mode=mode, engine=engine)
    client, client_calls = wrapped([refuse] * 3)
    assert Reason.REFUSAL == ran.outcome.reason == client.reason
    assert 1 == ran.calls == client_calls
    assert "I'm sorry" in str(ran.error)


def test_the_reported_usage_is_the_outcomes_and_bounds_the_budget() -> None:
    """The provider's token counts (not an estimate) are the outcome's usage, and the token
    budget stops the run where the client adapter's stops."""
    usage = {
        "prompt_tokens": 900,
        "completion_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 300},
        "completion_tokens_details": {"reasoning_tokens": 40},
    }
    bad = chat(answer="x", total="many")
    policy = HealPolicy(token_budget=500)
    ran = run(Answer, [ScriptedReply(content=bad, usage=usage)] * 3, HealAdapter(policy=policy))
    bad_json = json.dumps({"answer": "x", "total": "many"})
    client, client_calls = wrapped([ScriptedReply(content=bad_json, usage=usage)] * 3, policy)
    assert Reason.BUDGET_EXCEEDED == ran.outcome.reason == client.reason
    assert 1 == ran.calls == client_calls
    spent = ran.outcome.usage
    assert (900, 100, 300, 40, False) == (
        spent.prompt_tokens,
        spent.completion_tokens,
        spent.cache_read_tokens,
        spent.reasoning_tokens,
        spent.estimated,
    )
    reported = client.usage
    assert (reported.prompt_tokens, reported.completion_tokens) == (900, 100)
    assert (reported.cache_read_tokens, reported.reasoning_tokens) == (300, 40)


# ---------------------------------------------------------------------------------------------
# The run's parameters reach the LM
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_escalated_model_answers_the_last_attempt(mode: Mode) -> None:
    """`HealPolicy(escalate_model=...)`: the last call goes to a copy of the LM with that
    model (the LM's provider prefix kept), and the answer it gives is the value."""
    bad = chat(answer="x", total="many")
    policy = HealPolicy(escalate_model="gpt-4o")
    ran = run(
        Answer, [bad, bad, chat(answer="x", total="4")], HealAdapter(policy=policy), mode=mode
    )
    assert ran.error is None
    assert 4 == ran.prediction.total
    models = [request.body["model"] for request in ran.requests]
    assert ["scripted-model", "scripted-model", "gpt-4o"] == models
    assert "gpt-4o" == ran.outcome.attempts[-1].model


@pytest.mark.parametrize("mode", MODES)
def test_a_cut_answer_is_asked_again_with_a_larger_token_limit(mode: Mode) -> None:
    """`on_truncation="raise_max_tokens"`: the LM's own limit (`max_tokens=`) is grown for the
    next call, under the name the LM sends."""
    cut = ScriptedReply(content="[[ ## answer ## ]]\nThe order", finish_reason="length")
    policy = HealPolicy(on_truncation="raise_max_tokens")
    ran = run(
        Answer,
        [cut, chat(answer="x", total="4")],
        HealAdapter(policy=policy),
        mode=mode,
        max_tokens=100,
    )
    assert ran.error is None
    assert 2 == ran.calls
    limits = [
        request.body.get("max_tokens", request.body.get("max_completion_tokens"))
        for request in ran.requests
    ]
    assert [100, 200] == limits


# ---------------------------------------------------------------------------------------------
# A field given twice: one answer, or several
# ---------------------------------------------------------------------------------------------

TWICE = "[[ ## answer ## ]]\nx\n\n[[ ## total ## ]]\n40\n\n[[ ## total ## ]]\n45\n\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_field_given_twice_with_different_values_is_asked_again(mode: Mode) -> None:
    """Two values for one field are two answers: by default the model is asked again."""
    ran = run(Answer, [TWICE + "[[ ## completed ## ]]", chat(answer="x", total="45")], mode=mode)
    assert ran.error is None
    assert 2 == ran.calls
    assert 45 == ran.prediction.total
    first = ran.outcome.attempts[0]
    assert [Source.AMBIGUITY] == [d.source for d in first.diagnostics]
    assert first.raw_text.startswith(TWICE)


@pytest.mark.parametrize(("choice", "total"), [("first", 40), ("last", 45)])
def test_on_ambiguity_picks_one_value_and_flags_the_choice(choice: str, total: int) -> None:
    """`on_ambiguity="first"` / `"last"`: that value, flagged `ambiguous_choice`, one call."""
    policy = HealPolicy(on_ambiguity=choice)  # type: ignore[arg-type]
    ran = run(Answer, [TWICE], HealAdapter(policy=policy))
    assert 1 == ran.calls
    assert total == ran.prediction.total
    assert Flag.AMBIGUOUS_CHOICE in ran.outcome.flags
    assert Flag.PROSE_AROUND not in ran.outcome.flags


def test_the_same_value_twice_is_one_answer() -> None:
    """A field repeated with the same value is read once (flag `multiple_candidates`)."""
    same = "[[ ## answer ## ]]\nx\n\n[[ ## total ## ]]\n40\n\n[[ ## total ## ]]\n 40 \n"
    ran = run(Answer, [same])
    assert 1 == ran.calls
    assert 40 == ran.prediction.total
    assert Flag.MULTIPLE_CANDIDATES in ran.outcome.flags


def test_dspys_parse_hook_does_not_take_the_first_of_two_values() -> None:
    """`adapter.parse` (several generations, DSPy's own hook) fails on two values for a field
    where DSPy's chat adapter would take the first."""
    answer = TWICE + "[[ ## completed ## ]]"
    assert 40 == dspy.ChatAdapter().parse(Answer, answer)["total"]
    with pytest.raises(AdapterParseError) as raised:
        HealAdapter().parse(Answer, answer)
    assert Source.AMBIGUITY == raised.value.outcome.errors[0].source  # type: ignore[attr-defined]


def test_a_repeated_field_is_never_resolved_silently_over_http() -> None:
    """For any two values of a field, over the real LM: different values are asked again
    (the answer that follows is the value), the same value is one answer."""

    answers: list[str] = []

    def reply(_: Any) -> str:
        return answers.pop(0)

    with ScriptedServer([reply], repeat=True) as server:
        lm = scripted_lm(server)

        @settings(max_examples=12, deadline=None)
        @given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6), st.booleans())
        def check(one: int, two: int, spaced: bool) -> None:
            gap = "\n\n" if spaced else "\n"
            twice = f"[[ ## answer ## ]]\nx{gap}[[ ## total ## ]]\n{one}{gap}"
            twice += f"[[ ## total ## ]]\n{two}{gap}[[ ## completed ## ]]"
            answers[:] = [twice, chat(answer="x", total="7")]
            before = len(server.requests)
            with dspy.context(lm=lm, adapter=HealAdapter()):
                prediction = dspy.Predict(Answer)(question="q")
            outcome = outcome_of(prediction)
            assert outcome is not None
            if one == two:
                assert (one, 1) == (prediction.total, len(server.requests) - before)
            else:
                assert (7, 2) == (prediction.total, len(server.requests) - before)
                assert Source.AMBIGUITY in [d.source for d in outcome.attempts[0].diagnostics]

        try:
            check()
        finally:
            lm.close()


TEXTS = st.text(st.characters(categories=("L", "N", "P", "Zs")), min_size=1).filter(
    lambda s: s.strip() == s and "[[" not in s
)


@settings(derandomize=True, max_examples=100)
@given(st.lists(st.one_of(st.integers(), TEXTS), min_size=2, max_size=4))
def test_any_field_given_with_different_values_is_several_answers(values: list[Any]) -> None:
    """The reader keeps every different value of a repeated field (never the first alone): as
    many objects as different values, each other field the same in all."""
    text = "[[ ## note ## ]]\nhello\n\n" + "".join(
        f"[[ ## value ## ]]\n{json.dumps(value) if isinstance(value, int) else value}\n\n"
        for value in values
    )
    found = read_answer(text, {"note": str, "value": str})
    assert found is not None
    different = list(dict.fromkeys(str(value) for value in values))
    assert different == [found_object["value"] for found_object in found.objects]
    assert all("hello" == found_object["note"] for found_object in found.objects)
    assert found.ambiguous == (len(different) > 1)
    outcome = healjson.validate(found.text(), NoteValue)
    if found.ambiguous:
        assert [Source.AMBIGUITY] == [d.source for d in outcome.errors]  # type: ignore[union-attr]
    else:
        assert NoteValue(note="hello", value=different[0]) == outcome.unwrap()
