"""Several answers in one reply: different ones are never resolved silently.

By default (`on_ambiguity="reask"`) a reply holding several different valid answers gives no
value and the repair asks for exactly one; identical repeats are one answer; `"first"` and
`"last"` pick one and say so. Driven through `parse`, `Healer` (sync and async) and the real
openai SDK over HTTP.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import pytest
from hypothesis import assume, given
from pydantic import BaseModel

import healjson
from healjson import Degraded, Flag, Healed, Healer, HealPolicy, Reason, Source
from healjson.testing import ScriptedModel, ScriptedServer, from_schema
from pinned import pinned
from sdk_calls import wrapped_create


class Ticket(BaseModel):
    category: Literal["refund", "billing", "other"]
    priority: int


EXAMPLE = Ticket(category="other", priority=1)
ANSWER = Ticket(category="refund", priority=3)
Mode = Literal["sync", "async"]

SHAPES = {
    "example_then_answer": (
        f"For example, a ticket looks like {EXAMPLE.model_dump_json()}.\n"
        f"Here is yours:\n{ANSWER.model_dump_json()}"
    ),
    "self_correction": (
        f"{EXAMPLE.model_dump_json()}\n\nWait, correction: the customer wants money back, so\n"
        f"{ANSWER.model_dump_json()}"
    ),
    "two_fences": (
        f"```json\n{EXAMPLE.model_dump_json()}\n```\nor\n```json\n{ANSWER.model_dump_json()}\n```"
    ),
    "two_bare_objects": f"{EXAMPLE.model_dump_json()} {ANSWER.model_dump_json()}",
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_different_valid_answers_give_no_value_by_default(text: str) -> None:
    """Every shape of "two answers" is ambiguous: no value, both kept in reading order."""
    result = healjson.parse(text, Ticket)
    assert None is result.value
    assert Source.AMBIGUITY == result.error.source
    assert (EXAMPLE.model_dump(), ANSWER.model_dump()) == result.candidates
    outcome = healjson.validate(text, Ticket)
    assert isinstance(outcome, Degraded)
    assert Reason.INVALID_OUTPUT == outcome.reason


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_the_policy_can_take_the_last_or_the_first_and_says_so(text: str) -> None:
    """`last` takes the final answer, `first` the first one; both flag the choice."""
    last = healjson.validate(text, Ticket, on_ambiguity="last")
    first = healjson.validate(text, Ticket, on_ambiguity="first")
    assert isinstance(last, Healed)
    assert isinstance(first, Healed)
    assert ANSWER == last.value
    assert EXAMPLE == first.value
    assert Flag.AMBIGUOUS_CHOICE in last.flags


def test_identical_repeats_are_one_answer() -> None:
    """The same answer twice (a fence and a restatement) is not ambiguous."""
    text = f"```json\n{ANSWER.model_dump_json()}\n```\nFinal answer: {ANSWER.model_dump_json()}"
    outcome = healjson.validate(text, Ticket)
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert Flag.AMBIGUOUS_CHOICE not in outcome.flags


def test_answers_equal_after_alignment_are_one_answer() -> None:
    """ "Different" means different once aligned: `"REFUND"` and `"refund"`, `"3"` and `3`."""
    text = '{"category": "REFUND", "priority": "3"}\n{"category": "refund", "priority": 3}'
    outcome = healjson.validate(text, Ticket)
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value


def test_a_candidate_that_does_not_validate_is_no_rival() -> None:
    """A draft that fails the schema beside a valid answer leaves one answer."""
    text = '{"category": "nonsense"}\nFinal: ' + ANSWER.model_dump_json()
    assert ANSWER == healjson.validate(text, Ticket).unwrap()


def test_untyped_parse_reports_the_ambiguity_with_every_candidate() -> None:
    """Without a schema, two different objects are two answers (a `[1]` citation is not)."""
    result = healjson.parse('See [1]. {"a": 1} ... or rather {"a": 2}')
    assert Source.AMBIGUITY == result.error.source
    assert ({"a": 1}, {"a": 2}) == result.candidates
    assert {"a": 2} == healjson.parse('See [1]. {"a": 2}').value


def test_an_unknown_ambiguity_mode_is_a_configuration_error() -> None:
    """A typo in the mode raises at once, in the policy and in `parse`."""
    with pytest.raises(ValueError, match="on_ambiguity"):
        HealPolicy(on_ambiguity="latest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_ambiguity"):
        healjson.parse("{}", on_ambiguity="latest")  # type: ignore[arg-type]


@pinned()
@given(a=from_schema(Ticket), b=from_schema(Ticket))
def test_any_two_different_answers_are_ambiguous_and_identical_ones_are_not(
    a: Ticket, b: Ticket
) -> None:
    """For any two valid values: different ones are both kept, identical ones are one."""
    text = f"Example: {a.model_dump_json()}\nAnswer: {b.model_dump_json()}"
    result = healjson.parse(text, Ticket)
    if a == b:
        assert b == result.instance
    else:
        assert (a.model_dump(), b.model_dump()) == result.candidates
        assert b == healjson.parse(text, Ticket, on_ambiguity="last").instance


@pinned()
@given(a=from_schema(Ticket), b=from_schema(Ticket))
def test_an_ambiguous_reply_is_never_healed_in_one_call(a: Ticket, b: Ticket) -> None:
    """Whatever the two values, the default policy spends a call rather than guess."""
    assume(a != b)
    model = ScriptedModel([f"{a.model_dump_json()}\n{b.model_dump_json()}", b.model_dump_json()])
    outcome = Healer(Ticket).run(model, "Triage.")
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls


# --- the repair ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_repair_asks_for_exactly_one_answer(mode: Mode) -> None:
    """The re-ask names the count and asks for one value, with the full context."""
    model = ScriptedModel([SHAPES["example_then_answer"], ANSWER.model_dump_json()])
    healer = Healer(Ticket)
    if mode == "sync":
        outcome = healer.run(model, "Triage this ticket.")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "Triage this ticket."))
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    repair = model.calls[1].messages
    assert "Triage this ticket." == repair[0]["content"]
    assert SHAPES["example_then_answer"] == repair[-2]["content"]
    assert "2 different values" in repair[-1]["content"]
    assert "exactly one JSON value" in repair[-1]["content"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_last_policy_heals_in_one_call(mode: Mode) -> None:
    """`HealPolicy(on_ambiguity="last")`: the self-correction is taken without a re-ask."""
    model = ScriptedModel([SHAPES["self_correction"]])
    healer = Healer(Ticket, policy=HealPolicy(on_ambiguity="last"))
    if mode == "sync":
        outcome = healer.run(model, "Triage.")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "Triage."))
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert 1 == outcome.calls
    assert Flag.AMBIGUOUS_CHOICE in outcome.flags


def test_an_answer_that_stays_ambiguous_degrades_with_every_candidate() -> None:
    """Still two answers when the budget is spent: `max_retries_exceeded`, candidates kept."""
    model = ScriptedModel([SHAPES["two_fences"]] * 2)
    outcome = Healer(Ticket, policy=HealPolicy(max_attempts=2)).run(model, "Triage.")
    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert Source.AMBIGUITY == outcome.errors[0].source
    assert [EXAMPLE.model_dump(), ANSWER.model_dump()] == outcome.errors[0].value


# --- through the real openai SDK -----------------------------------------------------------------


def _create(server: ScriptedServer, mode: Mode, **create: Any) -> Any:
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "Triage."}],
        "response_model": Ticket,
        **create,
    }
    return wrapped_create(server, mode, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_wrap_reasks_on_an_example_then_answer_reply(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """Over HTTP: two answers cost one repair request, which says why."""
    scripted_server.extend([SHAPES["example_then_answer"], ANSWER.model_dump_json()])
    outcome = _create(scripted_server, mode)
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert 2 == len(scripted_server.requests)
    sent = scripted_server.requests[1].messages[-1]["content"]
    assert "2 different values" in sent


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_wrap_heals_identical_repeats_in_one_request(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """Over HTTP: the same answer twice is one answer, one request."""
    body = ANSWER.model_dump_json()
    scripted_server.push(f"{body}\n\nTo confirm: {json.dumps(ANSWER.model_dump(), indent=2)}")
    outcome = _create(scripted_server, mode)
    assert isinstance(outcome, Healed)
    assert 1 == len(scripted_server.requests)
