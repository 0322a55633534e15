"""End-to-end behaviour of the healing loop through `Healer.run` and `Healer.arun`.

Every scenario runs twice: once through `Healer.run` with the scripted model, once through
`Healer.arun` with its `acall` (driven by `asyncio.run`).
"""

from __future__ import annotations

import asyncio
import enum
import json
from collections.abc import Callable
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

import healjson
from healjson import (
    MISSING,
    Attempt,
    ContractContext,
    Degraded,
    DegradedError,
    Flag,
    Healed,
    Healer,
    HealPolicy,
    Reason,
    Reply,
    Source,
    Strategy,
    Usage,
    Violation,
    contract,
)
from healjson._core.run.budget import estimate
from healjson.testing import ScriptedModel

# ---------------------------------------------------------------------------------------------
# Models, contracts and canned answers
# ---------------------------------------------------------------------------------------------


class Ticket(BaseModel):
    urgency: Literal["low", "high"]
    summary: str = Field(max_length=80)
    order_id: str = Field(pattern=r"^ORD-\d{6}$")


class Pair(BaseModel):
    a: int
    b: str


class Item(BaseModel):
    name: str
    qty: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: int
    y: int


MESSAGES = [
    {"role": "system", "content": "You turn support emails into tickets."},
    {"role": "user", "content": "My order ORD-123456 never arrived and the site is down."},
]

GOOD = '{"urgency": "low", "summary": "order never arrived", "order_id": "ORD-123456"}'
HIGH_NO_OUTAGE = '{"urgency": "high", "summary": "order never arrived", "order_id": "ORD-123456"}'
BAD_URGENCY = '{"urgency": "medium", "summary": "order never arrived", "order_id": "ORD-123456"}'
GOOD_PAIR = '{"a": 1, "b": "two"}'
CUT = Reply('{"a": 1, "b": "cut', "length")

EXAMPLE_HEADING = "Example of a valid answer (shape only; use your own values): "
SCHEMA_HEADING = "JSON schema of the answer: "


@contract(fields=("urgency", "summary"))
def high_needs_outage(ticket: Ticket, ctx: ContractContext) -> Violation | None:
    """A high-urgency ticket must mention an outage in its summary."""
    if ticket.urgency == "high" and "outage" not in ticket.summary:
        return Violation("a high-urgency ticket must mention an outage in the summary")
    return None


def ticket(**changes: Any) -> Ticket:
    data = {"urgency": "low", "summary": "order never arrived", "order_id": "ORD-123456"}
    data.update(changes)
    return Ticket(**data)


@pytest.fixture(params=["run", "arun"])
def heal(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Run a healer with a scripted model, synchronously or on an event loop."""

    def run(healer: Healer[Any], scripted: Any, messages: Any = None, /, **params: Any) -> Any:
        messages = MESSAGES if messages is None else messages
        if request.param == "run":
            return healer.run(scripted, messages, **params)
        return asyncio.run(healer.arun(scripted.acall, messages, **params))

    return run


# ---------------------------------------------------------------------------------------------
# L1: local repairs heal in one call
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected_flags"),
    [
        pytest.param(f"```json\n{GOOD}\n```", {Flag.CODE_FENCE}, id="fenced"),
        pytest.param(
            f"Sure! Here is the ticket:\n{GOOD}\nLet me know if you need more.",
            {Flag.PROSE_AROUND},
            id="prose",
        ),
        pytest.param(
            '{\n  // the urgency\n  "urgency": "low",\n  "summary": "order never arrived",\n'
            '  "order_id": "ORD-123456"\n}',
            {Flag.SYNTAX_REPAIRED},
            id="line-comment",
        ),
        pytest.param(
            '{"urgency": "low", /* short */ "summary": "order never arrived", '
            '"order_id": "ORD-123456"}',
            {Flag.SYNTAX_REPAIRED},
            id="block-comment",
        ),
        pytest.param(
            '{\n  "urgency": "low",  # the urgency\n  "summary": "order never arrived",\n'
            '  "order_id": "ORD-123456"\n}',
            {Flag.SYNTAX_REPAIRED},
            id="hash-comment",
        ),
        pytest.param(
            '{"urgency": "low", "summary": "order never arrived", "order_id": "ORD-123456",}',
            {Flag.SYNTAX_REPAIRED},
            id="trailing-comma",
        ),
        pytest.param(
            f"Here you go:\n```json\n{GOOD[:-1]},\n}}\n```",
            {Flag.CODE_FENCE, Flag.PROSE_AROUND, Flag.SYNTAX_REPAIRED},
            id="fenced-prose-trailing-comma",
        ),
    ],
)
def test_locally_repairable_answer_heals_in_one_call(
    heal: Callable[..., Any], reply: str, expected_flags: set[Flag]
) -> None:
    """A fenced, prose-wrapped, commented or trailing-comma answer heals without a repair call."""
    model = ScriptedModel([reply])

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Healed)
    assert ticket() == out.value
    assert 1 == out.calls
    assert 1 == len(model.calls)
    assert expected_flags <= set(out.flags)
    assert expected_flags <= set(out.attempts[0].flags)
    assert reply == out.raw_text


def test_clean_answer_heals_with_no_flags(heal: Callable[..., Any]) -> None:
    """A clean JSON answer heals in one call and records no local repairs."""
    out = heal(Healer(Ticket), ScriptedModel([GOOD]))

    assert isinstance(out, Healed)
    assert () == out.flags
    assert () == out.changed_fields
    assert Strategy.INITIAL == out.attempts[0].strategy


# ---------------------------------------------------------------------------------------------
# Repairs that need another call
# ---------------------------------------------------------------------------------------------


def test_truncated_then_good_heals_in_two_calls(heal: Callable[..., Any]) -> None:
    """A reply cut off by the token limit is re-asked once, then the good answer heals."""
    model = ScriptedModel([CUT, GOOD_PAIR])

    out = heal(Healer(Pair), model)

    assert isinstance(out, Healed)
    assert Pair(a=1, b="two") == out.value
    assert 2 == out.calls
    assert Strategy.TRUNCATION == out.attempts[1].strategy
    assert "length" == out.attempts[0].finish_reason
    assert Flag.TRUNCATED in out.attempts[0].flags
    assert "cut off" in model.calls[1].last_user_text


def test_contract_violation_repair_prompt_carries_value_fields_and_first_answer(
    heal: Callable[..., Any],
) -> None:
    """A cross-field violation is repaired in 2 calls with the offending value and both fields."""
    fixed = '{"urgency": "low", "summary": "order never arrived", "order_id": "ORD-123456"}'
    model = ScriptedModel([HIGH_NO_OUTAGE, fixed])

    out = heal(Healer(Ticket, contracts=[high_needs_outage]), model)

    assert isinstance(out, Healed)
    assert 2 == out.calls
    second = model.calls[1].messages
    assert MESSAGES == [dict(m) for m in second[: len(MESSAGES)]]
    assert {"role": "assistant", "content": HIGH_NO_OUTAGE} == dict(second[-2])
    assert "user" == second[-1]["role"]
    last_user = model.calls[1].last_user_text
    assert '"high"' in last_user
    assert "urgency" in last_user
    assert "summary" in last_user
    assert len(MESSAGES) + 2 == len(second)
    assert Strategy.REPAIR == out.attempts[1].strategy
    assert ("urgency",) == out.changed_fields


def test_changed_fields_lists_every_field_the_repair_touched(heal: Callable[..., Any]) -> None:
    """When the repair changes another field than the flagged one, both show in changed_fields."""
    fixed = '{"urgency": "high", "summary": "site outage", "order_id": "ORD-654321"}'
    model = ScriptedModel([HIGH_NO_OUTAGE, fixed])

    out = heal(Healer(Ticket, contracts=[high_needs_outage]), model)

    assert isinstance(out, Healed)
    assert {"summary", "order_id"} == set(out.changed_fields)


def test_changed_fields_never_lists_what_is_not_a_field(heal: Callable[..., Any]) -> None:
    """A garbage first answer's junk keys are no change to the target; a field the repaired
    answer left at its default is not either. Only fields of the healed value are listed."""
    junk = '{"urgency": "high", "summary": "x", "foo": 1, "nested": {"a": [1, 2]}}'
    fixed = '{"urgency": "low", "summary": "x", "order_id": "ORD-654321"}'
    out = heal(Healer(Ticket), ScriptedModel([junk, fixed]))

    assert isinstance(out, Healed)
    assert {"urgency", "order_id"} == set(out.changed_fields)


def test_changed_fields_after_a_schema_repair_names_the_fixed_field(
    heal: Callable[..., Any],
) -> None:
    """A schema repair that fixes one field reports exactly that field as changed."""
    out = heal(Healer(Ticket), ScriptedModel([BAD_URGENCY, GOOD]))

    assert isinstance(out, Healed)
    assert ("urgency",) == out.changed_fields
    assert Strategy.REPAIR == out.attempts[1].strategy


def test_always_invalid_degrades_after_three_calls(heal: Callable[..., Any]) -> None:
    """An answer that never validates degrades with max_retries_exceeded after 3 calls."""
    model = ScriptedModel([BAD_URGENCY] * 3)

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == out.reason
    assert 3 == out.calls
    assert 3 == len(model.calls)
    assert 3 == len(out.attempts)
    assert BAD_URGENCY == out.raw_text
    assert out.errors
    assert "urgency" == out.errors[0].path
    assert "medium" == out.errors[0].value
    assert Source.SCHEMA == out.errors[0].source
    assert [1, 2, 3] == [a.number for a in out.attempts]
    assert not any(a.ok for a in out.attempts)


def test_always_truncated_degrades_with_complete_fields_as_partial(
    heal: Callable[..., Any],
) -> None:
    """Answers always cut off degrade with token_truncated and only the complete fields."""
    model = ScriptedModel([CUT, CUT, CUT])

    out = heal(Healer(Pair), model)

    assert isinstance(out, Degraded)
    assert Reason.TOKEN_TRUNCATED == out.reason
    assert 3 == out.calls
    assert {"a": 1} == out.partial
    assert CUT.content == out.raw_text
    assert Source.TRUNCATION == out.errors[0].source


def test_empty_then_good_resends_the_original_request(heal: Callable[..., Any]) -> None:
    """An empty answer is retried with exactly the original messages."""
    model = ScriptedModel(["", GOOD])

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Healed)
    assert 2 == out.calls
    assert MESSAGES == [dict(m) for m in model.calls[1].messages]
    assert Strategy.EMPTY_RETRY == out.attempts[1].strategy


def test_always_empty_degrades_with_empty_output(heal: Callable[..., Any]) -> None:
    """Answers that are always empty degrade with empty_output."""
    out = heal(Healer(Ticket), ScriptedModel(["", "  ", ""]))

    assert isinstance(out, Degraded)
    assert Reason.EMPTY_OUTPUT == out.reason
    assert 3 == out.calls


def test_single_attempt_policy_degrades_with_invalid_output(heal: Callable[..., Any]) -> None:
    """With max_attempts=1 an invalid answer degrades with invalid_output after one call."""
    out = heal(Healer(Ticket, policy=HealPolicy(max_attempts=1)), ScriptedModel([BAD_URGENCY]))

    assert isinstance(out, Degraded)
    assert Reason.INVALID_OUTPUT == out.reason
    assert 1 == out.calls


# ---------------------------------------------------------------------------------------------
# Call failures, refusals, provider stops
# ---------------------------------------------------------------------------------------------


class APITimeoutError(Exception):
    """Stands in for an SDK's timeout class (classified by name, not by import)."""

    __module__ = "openai._exceptions"  # an SDK's class: the provider's failure


class ContentFilterFinishReasonError(Exception):
    """Stands in for the SDK error raised when the content filter stopped a parse."""

    __module__ = "openai._exceptions"


class LengthFinishReasonError(Exception):
    """Stands in for the SDK error raised when a parse hit the token limit."""

    __module__ = "openai._exceptions"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        pytest.param(TimeoutError("slow"), Reason.TIMEOUT, id="TimeoutError"),
        pytest.param(APITimeoutError("slow"), Reason.TIMEOUT, id="APITimeoutError"),
        pytest.param(ConnectionRefusedError("refused"), Reason.API_ERROR, id="Refused"),
        pytest.param(ConnectionError("reset"), Reason.API_ERROR, id="ConnectionError"),
        pytest.param(ContentFilterFinishReasonError(), Reason.CONTENT_FILTER, id="ContentFilter"),
        pytest.param(LengthFinishReasonError(), Reason.TOKEN_TRUNCATED, id="LengthFinish"),
    ],
)
def test_raising_call_degrades_without_retry(
    heal: Callable[..., Any], error: Exception, reason: Reason
) -> None:
    """A call that raises degrades with timeout or api_error after exactly one call."""
    model = ScriptedModel([error, GOOD, GOOD])

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Degraded)
    assert reason == out.reason
    assert 1 == out.calls
    assert 1 == len(model.calls)
    assert Source.API == out.errors[0].source
    assert type(error).__name__ in out.errors[0].value
    assert out.attempts[0].error is not None
    assert type(error).__name__ in out.attempts[0].error


class _ReturnsNumber:
    """A model whose call returns something that is not a reply."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: Any, **params: Any) -> int:
        self.calls += 1
        return 42

    async def acall(self, messages: Any, **params: Any) -> int:
        return self(messages, **params)


def test_unreadable_return_value_degrades_with_api_error(heal: Callable[..., Any]) -> None:
    """A call returning something that is not a reply degrades with api_error, not an exception."""
    model = _ReturnsNumber()

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Degraded)
    assert Reason.API_ERROR == out.reason
    assert 1 == out.calls
    assert 1 == model.calls
    assert "int" in out.errors[0].value


def test_refusal_degrades_in_one_call(heal: Callable[..., Any]) -> None:
    """A refusal degrades with reason refusal and is not retried by default."""
    model = ScriptedModel([Reply(None, "stop", refusal="I can't"), GOOD])

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Degraded)
    assert Reason.REFUSAL == out.reason
    assert 1 == out.calls
    assert "I can't" == out.errors[0].value
    assert Source.REFUSAL == out.errors[0].source


def test_refusal_is_retried_when_policy_says_retry(heal: Callable[..., Any]) -> None:
    """With on_refusal="retry" a refusal is re-asked and the next good answer heals."""
    model = ScriptedModel([Reply(None, "stop", refusal="I can't"), GOOD])

    out = heal(Healer(Ticket, policy=HealPolicy(on_refusal="retry")), model)

    assert isinstance(out, Healed)
    assert 2 == out.calls
    assert ticket() == out.value


def test_repeated_refusal_with_retry_degrades_with_refusal(heal: Callable[..., Any]) -> None:
    """With on_refusal="retry", refusing every time still ends as a refusal."""
    refusal = Reply(None, "stop", refusal="I can't")
    model = ScriptedModel([refusal, refusal, refusal])

    out = heal(Healer(Ticket, policy=HealPolicy(on_refusal="retry")), model)

    assert isinstance(out, Degraded)
    assert Reason.REFUSAL == out.reason
    assert 3 == out.calls


def test_content_filter_degrades_at_once(heal: Callable[..., Any]) -> None:
    """finish_reason="content_filter" degrades with content_filter after one call."""
    model = ScriptedModel([Reply("", "content_filter"), GOOD])

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Degraded)
    assert Reason.CONTENT_FILTER == out.reason
    assert 1 == out.calls
    assert "content_filter" == out.attempts[0].finish_reason


# ---------------------------------------------------------------------------------------------
# Policy knobs
# ---------------------------------------------------------------------------------------------


def test_token_budget_stops_before_the_next_call(heal: Callable[..., Any]) -> None:
    """When the next call would pass the token budget, the run degrades before making it."""
    usage = Usage(prompt_tokens=40, completion_tokens=20)
    model = ScriptedModel([Reply(BAD_URGENCY, "stop", usage=usage), GOOD])

    out = heal(Healer(Ticket, policy=HealPolicy(token_budget=80)), model)

    assert isinstance(out, Degraded)
    assert Reason.BUDGET_EXCEEDED == out.reason
    assert 1 == out.calls
    assert 1 == len(model.calls)
    assert Source.BUDGET == out.errors[0].source
    assert out.errors[0].value > 80
    assert BAD_URGENCY == out.raw_text


def test_token_budget_large_enough_lets_the_repair_run(heal: Callable[..., Any]) -> None:
    """A budget that covers the repair does not stop it."""
    usage = Usage(prompt_tokens=40, completion_tokens=20)
    model = ScriptedModel([Reply(BAD_URGENCY, "stop", usage=usage), GOOD])

    out = heal(Healer(Ticket, policy=HealPolicy(token_budget=10_000)), model)

    assert isinstance(out, Healed)
    assert 2 == out.calls


def test_a_first_call_whose_prompt_passes_the_token_budget_is_not_made(
    heal: Callable[..., Any],
) -> None:
    """A request whose prompt alone passes the token budget is not sent: the run degrades with
    `budget_exceeded` after no call, its diagnostic naming the projected tokens."""
    model = ScriptedModel([GOOD])
    prompt = estimate([{"role": "user", "content": "x " * 400}])

    out = heal(Healer(Ticket, policy=HealPolicy(token_budget=prompt - 1)), model, "x " * 400)

    assert isinstance(out, Degraded)
    assert Reason.BUDGET_EXCEEDED == out.reason
    assert 0 == out.calls
    assert [] == model.calls
    assert prompt == out.errors[0].value
    fits = heal(
        Healer(Ticket, policy=HealPolicy(token_budget=prompt)), ScriptedModel([GOOD]), "x " * 400
    )
    assert isinstance(fits, Healed)


@pytest.mark.parametrize("answer_tokens", [1, 500, 5_000])
def test_token_budget_projects_the_repairs_answer_as_the_last_answers_size(
    heal: Callable[..., Any], answer_tokens: int
) -> None:
    """A repair asks for the answer again: it is projected to cost its prompt and an answer the
    last answer's size, so a budget the prompt alone fits but the answer would pass stops it,
    and one a token larger lets it run."""
    usage = Usage(prompt_tokens=40, completion_tokens=answer_tokens)
    probe = ScriptedModel([Reply(BAD_URGENCY, "stop", usage=usage), GOOD])
    measured = heal(Healer(Ticket, policy=HealPolicy(token_budget=10**9)), probe)
    repair_prompt = estimate(measured.attempts[1].messages)
    projected = 40 + answer_tokens + repair_prompt + answer_tokens

    for budget, stops in ((projected - 1, True), (projected, False)):
        model = ScriptedModel([Reply(BAD_URGENCY, "stop", usage=usage), GOOD])
        out = heal(Healer(Ticket, policy=HealPolicy(token_budget=budget)), model)
        assert (Reason.BUDGET_EXCEEDED == getattr(out, "reason", None)) is stops, budget
        assert (1 if stops else 2) == len(model.calls)


def test_raise_max_tokens_doubles_max_tokens_and_resends(heal: Callable[..., Any]) -> None:
    """on_truncation="raise_max_tokens" resends the original request with twice the max_tokens."""
    model = ScriptedModel([CUT, GOOD_PAIR])

    out = heal(
        Healer(Pair, policy=HealPolicy(on_truncation="raise_max_tokens")),
        model,
        max_tokens=100,
        temperature=0,
    )

    assert isinstance(out, Healed)
    assert 2 == out.calls
    assert {"max_tokens": 100, "temperature": 0} == model.calls[0].params
    assert {"max_tokens": 200, "temperature": 0} == model.calls[1].params
    assert MESSAGES == [dict(m) for m in model.calls[1].messages]
    assert Strategy.RESEND == out.attempts[1].strategy


def test_raise_max_tokens_respects_the_cap(heal: Callable[..., Any]) -> None:
    """The grown max_tokens never passes max_tokens_cap."""
    model = ScriptedModel([CUT, GOOD_PAIR])
    policy = HealPolicy(on_truncation="raise_max_tokens", max_tokens_cap=150)

    heal(Healer(Pair, policy=policy), model, max_tokens=100)

    assert 150 == model.calls[1].params["max_tokens"]


def test_raise_max_tokens_grows_max_completion_tokens_when_that_is_the_key(
    heal: Callable[..., Any],
) -> None:
    """A request that uses max_completion_tokens gets that key grown, not max_tokens."""
    model = ScriptedModel([CUT, GOOD_PAIR])

    heal(
        Healer(Pair, policy=HealPolicy(on_truncation="raise_max_tokens")),
        model,
        max_completion_tokens=300,
    )

    assert {"max_completion_tokens": 600} == model.calls[1].params


def test_raise_max_tokens_without_a_limit_doubles_the_reported_usage(
    heal: Callable[..., Any],
) -> None:
    """With no max_tokens param, the reported completion tokens of the cut reply are doubled."""
    cut = Reply(CUT.content, "length", usage=Usage(10, 50))
    model = ScriptedModel([cut, GOOD_PAIR])

    heal(Healer(Pair, policy=HealPolicy(on_truncation="raise_max_tokens")), model)

    assert {} == model.calls[0].params
    assert {"max_tokens": 100} == model.calls[1].params


def test_raise_max_tokens_does_not_invent_a_limit_from_an_estimate(
    heal: Callable[..., Any],
) -> None:
    """With no max_tokens param and no reported usage, the resend is not given a made-up limit."""
    # The cut reply's usage is only estimated (characters / 4); a max_tokens derived from it can
    # be far below the limit the provider actually applied (8 tokens for this 18-character
    # reply), so the resend would be cut off again.
    model = ScriptedModel([CUT, GOOD_PAIR])

    heal(Healer(Pair, policy=HealPolicy(on_truncation="raise_max_tokens")), model)

    assert "max_tokens" not in model.calls[1].params


def test_truncation_both_grows_max_tokens_and_asks_for_compact_json(
    heal: Callable[..., Any],
) -> None:
    """on_truncation="both" doubles max_tokens and sends the compact-rewrite prompt."""
    model = ScriptedModel([CUT, GOOD_PAIR])

    out = heal(Healer(Pair, policy=HealPolicy(on_truncation="both")), model, max_tokens=100)

    assert isinstance(out, Healed)
    assert {"max_tokens": 200} == model.calls[1].params
    assert Strategy.TRUNCATION == out.attempts[1].strategy
    assert {"role": "assistant", "content": CUT.content} == dict(model.calls[1].messages[-2])
    assert "compactly" in model.calls[1].last_user_text


def test_compress_truncation_keeps_max_tokens(heal: Callable[..., Any]) -> None:
    """The default on_truncation="compress" leaves max_tokens alone."""
    model = ScriptedModel([CUT, GOOD_PAIR])

    heal(Healer(Pair), model, max_tokens=100)

    assert {"max_tokens": 100} == model.calls[1].params


def test_empty_reply_cut_by_the_token_limit_grows_max_tokens(heal: Callable[..., Any]) -> None:
    """An empty reply with finish_reason="length" is a truncation, so raise_max_tokens applies."""
    # e.g. a reasoning model that spent the whole max_tokens before writing any answer
    spent = Reply("", "length", usage=Usage(10, 100))
    model = ScriptedModel([spent, GOOD_PAIR])

    heal(Healer(Pair, policy=HealPolicy(on_truncation="raise_max_tokens")), model, max_tokens=100)

    assert 200 == model.calls[1].params.get("max_tokens")


def test_always_empty_length_replies_degrade_with_token_truncated(
    heal: Callable[..., Any],
) -> None:
    """Replies that are empty because the token limit was hit degrade with token_truncated."""
    spent = Reply("", "length", usage=Usage(10, 100))

    out = heal(Healer(Pair), ScriptedModel([spent] * 3), max_tokens=100)

    assert isinstance(out, Degraded)
    assert Reason.TOKEN_TRUNCATED == out.reason


def test_truncation_degrade_policy_stops_at_once(heal: Callable[..., Any]) -> None:
    """on_truncation="degrade" stops with token_truncated after the first cut-off reply."""
    model = ScriptedModel([CUT, GOOD_PAIR])

    out = heal(Healer(Pair, policy=HealPolicy(on_truncation="degrade")), model)

    assert isinstance(out, Degraded)
    assert Reason.TOKEN_TRUNCATED == out.reason
    assert 1 == out.calls
    assert {"a": 1} == out.partial


def test_escalate_model_is_used_for_the_last_attempt(heal: Callable[..., Any]) -> None:
    """escalate_model is passed as the model param of the final attempt only, and recorded."""
    model = ScriptedModel([BAD_URGENCY, BAD_URGENCY, GOOD])

    out = heal(Healer(Ticket, policy=HealPolicy(escalate_model="big")), model, model="small")

    assert isinstance(out, Healed)
    assert 3 == out.calls
    assert ["small", "small", "big"] == [c.params["model"] for c in model.calls]
    assert "big" == out.attempts[-1].params["model"]
    assert "big" == out.attempts[-1].model
    assert "small" == out.attempts[0].model


# ---------------------------------------------------------------------------------------------
# Fallbacks and unwrapping
# ---------------------------------------------------------------------------------------------


def test_fallback_value_is_returned_on_degradation(heal: Callable[..., Any]) -> None:
    """A fallback value is carried by the Degraded outcome."""
    safe = ticket(summary="needs a human")

    out = heal(Healer(Ticket, fallback=safe), ScriptedModel([BAD_URGENCY] * 3))

    assert isinstance(out, Degraded)
    assert safe == out.fallback


def test_fallback_factory_gets_raw_text_and_errors(heal: Callable[..., Any]) -> None:
    """A fallback factory is called once with the last raw text and the errors."""
    seen: list[tuple[Any, Any]] = []

    def factory(raw: str | None, errors: tuple[healjson.Diagnostic, ...]) -> Ticket:
        seen.append((raw, errors))
        return ticket(summary="fallback")

    out = heal(Healer(Ticket, fallback=factory), ScriptedModel([BAD_URGENCY] * 3))

    assert isinstance(out, Degraded)
    assert ticket(summary="fallback") == out.fallback
    assert 1 == len(seen)
    raw, errors = seen[0]
    assert BAD_URGENCY == raw
    assert out.errors == errors
    assert "urgency" == errors[0].path


def test_async_fallback_factory_is_awaited(heal: Callable[..., Any]) -> None:
    """An async fallback factory is awaited in both run and arun."""

    async def factory(raw: str | None, errors: Any) -> str:
        await asyncio.sleep(0)
        return f"fallback for {raw}"

    out = heal(Healer(Ticket, fallback=factory), ScriptedModel([TimeoutError("slow")]))

    assert isinstance(out, Degraded)
    assert "fallback for None" == out.fallback


def test_raising_fallback_factory_adds_a_diagnostic(heal: Callable[..., Any]) -> None:
    """A fallback factory that raises does not raise: no fallback and a fallback diagnostic."""

    def factory(raw: str | None, errors: Any) -> Ticket:
        raise RuntimeError("factory broke")

    out = heal(Healer(Ticket, fallback=factory), ScriptedModel([BAD_URGENCY] * 3))

    assert isinstance(out, Degraded)
    assert out.fallback is None
    assert Reason.MAX_RETRIES_EXCEEDED == out.reason
    assert Source.FALLBACK == out.errors[-1].source
    assert "factory broke" in out.errors[-1].value
    assert Source.SCHEMA == out.errors[0].source


def test_raising_async_fallback_factory_adds_a_diagnostic(heal: Callable[..., Any]) -> None:
    """An async fallback factory that raises does not raise either."""

    async def factory(raw: str | None, errors: Any) -> Ticket:
        raise RuntimeError("async factory broke")

    out = heal(Healer(Ticket, fallback=factory), ScriptedModel([ConnectionError("down")]))

    assert isinstance(out, Degraded)
    assert Reason.API_ERROR == out.reason
    assert out.fallback is None
    assert [Source.API, Source.FALLBACK] == [e.source for e in out.errors]
    assert "async factory broke" in out.errors[-1].value


def test_degraded_unwrap_raises_degraded_error_with_the_outcome(heal: Callable[..., Any]) -> None:
    """Degraded.unwrap() raises DegradedError carrying the outcome; value_or gives the default."""
    out = heal(Healer(Ticket), ScriptedModel([BAD_URGENCY] * 3))

    with pytest.raises(DegradedError) as caught:
        out.unwrap()

    assert out is caught.value.outcome
    assert "max_retries_exceeded" in str(caught.value)
    assert "default" == out.value_or("default")


def test_healed_unwrap_and_value_or_return_the_value(heal: Callable[..., Any]) -> None:
    """Healed.unwrap() and Healed.value_or() return the value."""
    out = heal(Healer(Ticket), ScriptedModel([GOOD]))

    assert ticket() == out.unwrap()
    assert ticket() == out.value_or("default")
    assert out.ok is True


# ---------------------------------------------------------------------------------------------
# Contracts
# ---------------------------------------------------------------------------------------------


def test_raising_contract_degrades_with_contract_error_without_retry(
    heal: Callable[..., Any],
) -> None:
    """A contract that raises degrades with contract_error after one call and never raises."""

    @contract(fields=("summary",))
    def broken(value: Ticket, ctx: ContractContext) -> None:
        raise KeyError("oops")

    model = ScriptedModel([GOOD, GOOD, GOOD])

    out = heal(Healer(Ticket, contracts=[broken]), model)

    assert isinstance(out, Degraded)
    assert Reason.CONTRACT_ERROR == out.reason
    assert 1 == out.calls
    assert 1 == len(model.calls)
    assert Source.CONTRACT_ERROR == out.errors[0].source
    assert "broken" == out.errors[0].rule
    assert "KeyError" in out.errors[0].constraint
    assert ticket().model_dump() == out.partial


def test_raising_async_contract_degrades_with_contract_error(heal: Callable[..., Any]) -> None:
    """An async contract that raises also degrades with contract_error after one call."""

    async def broken(value: Ticket, ctx: ContractContext) -> None:
        raise RuntimeError("async oops")

    out = heal(Healer(Ticket, contracts=[broken]), ScriptedModel([GOOD, GOOD]))

    assert isinstance(out, Degraded)
    assert Reason.CONTRACT_ERROR == out.reason
    assert 1 == out.calls
    assert "async oops" in out.errors[0].constraint


def test_async_contract_is_awaited_in_run_and_arun(heal: Callable[..., Any]) -> None:
    """An async contract's violation drives a repair just like a sync one."""
    checked: list[str] = []

    @contract(fields=("urgency", "summary"))
    async def high_needs_outage_async(value: Ticket, ctx: ContractContext) -> Violation | None:
        await asyncio.sleep(0)
        checked.append(value.urgency)
        if value.urgency == "high" and "outage" not in value.summary:
            return Violation("a high-urgency ticket must mention an outage")
        return None

    model = ScriptedModel([HIGH_NO_OUTAGE, GOOD])

    out = heal(Healer(Ticket, contracts=[high_needs_outage_async]), model)

    assert isinstance(out, Healed)
    assert 2 == out.calls
    assert ["high", "low"] == checked
    assert Source.CONTRACT == out.attempts[0].diagnostics[0].source
    assert "outage" in model.calls[1].last_user_text


def test_contract_returning_a_list_of_violations_reports_each(heal: Callable[..., Any]) -> None:
    """A contract returning several Violations yields one diagnostic per violation."""

    @contract(fields=("summary", "order_id"))
    def two_rules(value: Ticket, ctx: ContractContext) -> list[Violation]:
        out = []
        if "never" in value.summary:
            out.append(Violation("the summary must not say never", path="summary"))
        if value.order_id.endswith("456"):
            out.append(Violation("the order id must not end in 456", path="order_id"))
        return out

    model = ScriptedModel([GOOD, GOOD, GOOD])

    out = heal(Healer(Ticket, contracts=[two_rules]), model)

    assert isinstance(out, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == out.reason
    first = out.attempts[0].diagnostics
    assert ["summary", "order_id"] == [d.path for d in first]
    assert ["order never arrived", "ORD-123456"] == [d.value for d in first]
    assert "failed 2 checks" in model.calls[1].last_user_text


def test_single_argument_contract_is_called_with_the_value(heal: Callable[..., Any]) -> None:
    """A contract defined as `def rule(value)` is called without a context."""
    seen: list[Any] = []

    def rule(value: Ticket) -> str | None:
        seen.append(value)
        return "the order id must end in 999" if not value.order_id.endswith("999") else None

    fixed = GOOD.replace("ORD-123456", "ORD-123999")
    healer = Healer(Ticket, contracts=[rule])
    seen.clear()  # construction checks the synthesised example against the contracts
    out = heal(healer, ScriptedModel([GOOD, fixed]))

    assert isinstance(out, Healed)
    assert 2 == out.calls
    assert [ticket(), ticket(order_id="ORD-123999")] == seen
    assert ("order_id",) == out.changed_fields


def test_contract_reads_the_original_request_from_context(heal: Callable[..., Any]) -> None:
    """ctx.input_text holds the user turns of the original messages, not the repair turns."""
    inputs: list[str] = []

    def grounded(value: Ticket, ctx: ContractContext) -> Violation | None:
        inputs.append(ctx.input_text)
        if value.order_id not in ctx.input_text:
            return Violation("the order id must appear in the email", path="order_id")
        return None

    invented = GOOD.replace("ORD-123456", "ORD-999999")
    healer = Healer(Ticket, contracts=[grounded])
    inputs.clear()  # construction checks the synthesised example against the contracts
    out = heal(healer, ScriptedModel([invented, GOOD]))

    assert isinstance(out, Healed)
    assert 2 == out.calls
    assert [MESSAGES[1]["content"]] * 2 == inputs


def test_run_context_mapping_is_extra_data_beside_the_messages(heal: Callable[..., Any]) -> None:
    """run(context={...}) gives contracts ctx.extra while ctx.input_text still reads the request."""
    seen: list[tuple[dict[str, Any], str]] = []

    def rule(value: Ticket, ctx: ContractContext) -> None:
        seen.append((dict(ctx.extra), ctx.input_text))

    healer = Healer(Ticket, contracts=[rule])
    seen.clear()
    heal(healer, ScriptedModel([GOOD]), context={"tenant": "acme"})

    assert [({"tenant": "acme"}, MESSAGES[1]["content"])] == seen


# ---------------------------------------------------------------------------------------------
# Drivers
# ---------------------------------------------------------------------------------------------


def test_run_accepts_an_async_call() -> None:
    """Healer.run awaits a coroutine-returning call on its own."""
    model = ScriptedModel([BAD_URGENCY, GOOD])

    out = Healer(Ticket).run(model.acall, MESSAGES)

    assert isinstance(out, Healed)
    assert 2 == out.calls


def test_arun_accepts_a_sync_call() -> None:
    """Healer.arun works with a plain synchronous call."""
    model = ScriptedModel([BAD_URGENCY, GOOD])

    out = asyncio.run(Healer(Ticket).arun(model, MESSAGES))

    assert isinstance(out, Healed)
    assert 2 == out.calls


def test_run_with_async_contract_works_inside_a_running_loop() -> None:
    """A blocking run() called from async code still awaits async contracts."""

    @contract(fields=("urgency", "summary"))
    async def rule(value: Ticket, ctx: ContractContext) -> Violation | None:
        await asyncio.sleep(0)
        return Violation("needs an outage") if value.urgency == "high" else None

    async def main() -> Any:
        return Healer(Ticket, contracts=[rule]).run(ScriptedModel([HIGH_NO_OUTAGE, GOOD]), MESSAGES)

    out = asyncio.run(main())

    assert isinstance(out, Healed)
    assert 2 == out.calls


def test_attempt_records_call_latency(heal: Callable[..., Any]) -> None:
    """Each attempt records how long its call took."""
    out = heal(Healer(Ticket), ScriptedModel([GOOD], delay_s=0.05))

    assert out.attempts[0].latency_s >= 0.05


# ---------------------------------------------------------------------------------------------
# Attempts and usage
# ---------------------------------------------------------------------------------------------


def test_usage_is_summed_over_attempts(heal: Callable[..., Any]) -> None:
    """The outcome's usage is the sum of every attempt's reported usage."""
    model = ScriptedModel(
        [
            Reply(BAD_URGENCY, "stop", usage=Usage(10, 5)),
            Reply(GOOD, "stop", usage=Usage(20, 7)),
        ]
    )

    out = heal(Healer(Ticket), model)

    assert isinstance(out, Healed)
    assert Usage(30, 12) == out.usage
    assert 42 == out.usage.total_tokens
    assert [Usage(10, 5), Usage(20, 7)] == [a.usage for a in out.attempts]


def test_unreported_usage_is_estimated(heal: Callable[..., Any]) -> None:
    """A reply without usage gets an estimated usage, flagged as estimated."""
    out = heal(Healer(Ticket), ScriptedModel([Reply(GOOD, "stop")]))

    assert out.usage.estimated is True
    assert len(GOOD) // 4 == out.usage.completion_tokens
    assert out.usage.prompt_tokens > 0


def test_attempts_record_each_strategy_in_order(heal: Callable[..., Any]) -> None:
    """Each attempt records its number, strategy, finish reason, raw text, flags and diagnostics."""
    replies: list[Any] = [
        "",
        "sorry, no JSON today",
        CUT,
        '```json\n{"a": "x", "b": "y"}\n```',
        GOOD_PAIR,
    ]
    model = ScriptedModel(replies)

    out = heal(Healer(Pair, policy=HealPolicy(max_attempts=5)), model)

    assert isinstance(out, Healed)
    attempts: tuple[Attempt, ...] = out.attempts
    assert [1, 2, 3, 4, 5] == [a.number for a in attempts]
    assert [
        Strategy.INITIAL,
        Strategy.EMPTY_RETRY,
        Strategy.SYNTAX,
        Strategy.TRUNCATION,
        Strategy.REPAIR,
    ] == [a.strategy for a in attempts]
    assert ["stop", "stop", "length", "stop", "stop"] == [a.finish_reason for a in attempts]
    assert ["", "sorry, no JSON today", CUT.content, replies[3], GOOD_PAIR] == [
        a.raw_text for a in attempts
    ]
    assert [Source.EMPTY] == [d.source for d in attempts[0].diagnostics]
    assert [Source.SYNTAX] == [d.source for d in attempts[1].diagnostics]
    assert [Source.TRUNCATION] == [d.source for d in attempts[2].diagnostics]
    assert ["a"] == [d.path for d in attempts[3].diagnostics]
    assert () == attempts[4].diagnostics
    assert Flag.CODE_FENCE in attempts[3].flags
    assert [False, False, False, False, True] == [a.ok for a in attempts]
    assert attempts[0].prompt is None
    assert Strategy.SYNTAX == attempts[2].prompt.strategy
    assert tuple(model.calls[2].messages) == tuple(attempts[2].messages)


# ---------------------------------------------------------------------------------------------
# Repair prompt size and enrichment
# ---------------------------------------------------------------------------------------------


def _chars(messages: Any) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages)


def test_prompt_size_stays_flat_as_attempts_grow(heal: Callable[..., Any]) -> None:
    """Failed attempts are summarised in short history lines, not resent verbatim."""
    padding = "Here is the ticket you asked for, based on the email. " * 10
    invalid = f"{padding}\n{BAD_URGENCY}"
    model = ScriptedModel([invalid] * 6)

    out = heal(Healer(Ticket, policy=HealPolicy(max_attempts=6)), model)

    assert isinstance(out, Degraded)
    assert 6 == len(model.calls)
    sizes = [_chars(c.messages) for c in model.calls]
    for later in sizes[3:]:
        assert abs(later - sizes[2]) < 400, sizes
    # one assistant turn and one repair turn, however many attempts failed
    assert [len(MESSAGES)] + [len(MESSAGES) + 2] * 5 == [len(c.messages) for c in model.calls]
    assert 1 == sum(str(m["content"]).count(invalid) for m in model.calls[5].messages)
    history = [line for line in model.calls[5].last_user_text.splitlines() if line.startswith("- ")]
    assert 4 == len(history)


def test_history_keeps_only_the_latest_four_earlier_attempts(heal: Callable[..., Any]) -> None:
    """With more failed attempts than history lines, the oldest ones drop out of the prompt."""
    replies = [BAD_URGENCY.replace("medium", f"level-{n}") for n in range(1, 8)]
    model = ScriptedModel(replies)

    heal(Healer(Ticket, policy=HealPolicy(max_attempts=7)), model)

    last = model.calls[6].last_user_text
    history = [line for line in last.splitlines() if line.startswith("- attempt")]
    assert ["- attempt 2", "- attempt 3", "- attempt 4", "- attempt 5"] == [
        line[: len("- attempt 2")] for line in history
    ]
    assert "level-1" not in last
    assert {"role": "assistant", "content": replies[5]} == dict(model.calls[6].messages[-2])


def test_second_repair_adds_golden_example_and_schema(heal: Callable[..., Any]) -> None:
    """The first repair is short; from the second repair on, the example and the schema appear."""
    model = ScriptedModel([BAD_URGENCY] * 3)

    heal(Healer(Ticket), model)

    first_repair = model.calls[1].last_user_text
    second_repair = model.calls[2].last_user_text
    assert EXAMPLE_HEADING not in first_repair
    assert SCHEMA_HEADING not in first_repair
    assert EXAMPLE_HEADING in second_repair
    assert SCHEMA_HEADING in second_repair
    schema = json.dumps(Ticket.model_json_schema(), ensure_ascii=False, separators=(",", ":"))
    assert f"{SCHEMA_HEADING}{schema}" in second_repair


def test_second_repair_lists_the_earlier_attempt_in_history(heal: Callable[..., Any]) -> None:
    """The second repair prompt carries one history line for the first failed attempt."""
    model = ScriptedModel([BAD_URGENCY] * 3)

    heal(Healer(Ticket), model)

    assert "Earlier attempts failed" not in model.calls[1].last_user_text
    second = model.calls[2].last_user_text
    assert "Earlier attempts failed like this" in second
    assert "- attempt 1 (schema): urgency" in second


def test_history_none_leaves_history_out(heal: Callable[..., Any]) -> None:
    """HealPolicy(history="none") adds no history lines to repair prompts."""
    model = ScriptedModel([BAD_URGENCY] * 3)

    heal(Healer(Ticket, policy=HealPolicy(history="none")), model)

    assert "Earlier attempts" not in model.calls[2].last_user_text


def _example_in(text: str) -> str:
    line = next(line for line in text.splitlines() if line.startswith(EXAMPLE_HEADING))
    return line[len(EXAMPLE_HEADING) :]


def test_synthesised_golden_example_validates_against_the_model(
    heal: Callable[..., Any],
) -> None:
    """The example synthesised from the schema validates, including a pattern field."""
    model = ScriptedModel([BAD_URGENCY] * 3)

    out = heal(Healer(Ticket), model)

    example = _example_in(model.calls[2].last_user_text)
    parsed = Ticket.model_validate_json(example)
    assert parsed.order_id.startswith("ORD-")
    assert example == out.attempts[2].prompt.example


def test_synthesised_example_passes_the_sync_contracts(heal: Callable[..., Any]) -> None:
    """A synthesised example is never one that breaks a contract."""
    model = ScriptedModel([HIGH_NO_OUTAGE] * 3)

    out = heal(Healer(Ticket, contracts=[high_needs_outage]), model)

    example = out.attempts[2].prompt.example
    assert example is not None
    assert healjson.validate(example, Ticket, contracts=[high_needs_outage]).ok


def test_user_example_is_used_instead_of_a_synthesised_one(heal: Callable[..., Any]) -> None:
    """A golden example given with examples= is the one shown in the repair prompt."""
    mine = ticket(summary="site outage, nothing loads", urgency="high")
    model = ScriptedModel([BAD_URGENCY] * 3)

    heal(Healer(Ticket, examples=[mine], policy=HealPolicy(example_from_repair=1)), model)

    assert mine.model_dump_json() == _example_in(model.calls[1].last_user_text)
    assert mine.model_dump_json() == _example_in(model.calls[2].last_user_text)


def test_example_from_repair_one_enriches_the_first_repair(heal: Callable[..., Any]) -> None:
    """HealPolicy(example_from_repair=1) includes the example and schema in the first repair."""
    model = ScriptedModel([BAD_URGENCY, GOOD])

    heal(Healer(Ticket, policy=HealPolicy(example_from_repair=1)), model)

    assert EXAMPLE_HEADING in model.calls[1].last_user_text
    assert SCHEMA_HEADING in model.calls[1].last_user_text


# ---------------------------------------------------------------------------------------------
# Configuration errors raise at construction
# ---------------------------------------------------------------------------------------------


def test_invalid_example_raises_at_construction() -> None:
    """An example that does not validate against the model raises ValueError."""
    with pytest.raises(ValueError, match=r"examples\[0\]"):
        Healer(Ticket, examples=[{"urgency": "medium", "summary": "x", "order_id": "nope"}])


def test_example_as_json_text_is_accepted() -> None:
    """A golden example given as JSON text is validated and kept."""
    healer = Healer(Ticket, examples=[GOOD])

    assert (ticket(),) == healer.examples


def test_contract_naming_an_unknown_field_raises_at_construction() -> None:
    """A contract that names a field the model does not have raises ValueError."""

    @contract(fields=("urgency", "priority"))
    def rule(value: Ticket, ctx: ContractContext) -> None:
        return None

    with pytest.raises(ValueError, match="priority"):
        Healer(Ticket, contracts=[rule])


def test_contract_with_nested_path_to_known_field_is_accepted() -> None:
    """A contract naming `items[0].qty` is checked by its top-level field."""

    class Order(BaseModel):
        items: list[Item]

    @contract(fields=("items[0].qty",))
    def rule(value: Order, ctx: ContractContext) -> None:
        return None

    assert 1 == len(Healer(Order, contracts=[rule]).contracts)


@pytest.mark.parametrize("attempts", [0, -1])
def test_policy_with_no_attempts_raises(attempts: int) -> None:
    """HealPolicy(max_attempts=0) is a configuration error."""
    with pytest.raises(ValueError, match="max_attempts"):
        HealPolicy(max_attempts=attempts)


def test_policy_that_is_not_a_heal_policy_raises() -> None:
    """Passing something other than a HealPolicy raises TypeError."""
    with pytest.raises(TypeError, match="HealPolicy"):
        Healer(Ticket, policy={"max_attempts": 2})  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Targets other than BaseModel
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "body", "expected"),
    [
        pytest.param(
            list[Item],
            '[{"name": "pen", "qty": 2}, {"name": "ink", "qty": 1}]',
            [Item(name="pen", qty=2), Item(name="ink", qty=1)],
            id="list",
        ),
        pytest.param(Literal["a", "b"], '"b"', "b", id="literal"),
        pytest.param(Color, '"blue"', Color.BLUE, id="enum"),
        pytest.param(dict[str, int], '{"x": 1, "y": 2}', {"x": 1, "y": 2}, id="dict"),
        pytest.param(Point, '{"x": 3, "y": 4}', {"x": 3, "y": 4}, id="typeddict"),
    ],
)
def test_non_model_target_heals_from_a_fenced_answer(
    heal: Callable[..., Any], target: Any, body: str, expected: Any
) -> None:
    """list, Literal, Enum, dict and TypedDict targets heal from a fenced answer in one call."""
    out = heal(Healer(target), ScriptedModel([f"```json\n{body}\n```"]))

    assert isinstance(out, Healed)
    assert expected == out.value
    assert 1 == out.calls
    assert Flag.CODE_FENCE in out.flags


def test_non_model_target_repairs_an_invalid_answer(heal: Callable[..., Any]) -> None:
    """A list target whose first answer has a wrong item is repaired with the item's path."""
    model = ScriptedModel(
        [
            '[{"name": "pen", "qty": 2}, {"name": "ink", "qty": "lots"}]',
            '[{"name": "pen", "qty": 2}]',
        ]
    )

    out = heal(Healer(list[Item]), model)

    assert isinstance(out, Healed)
    assert 2 == out.calls
    assert "[1].qty" == out.attempts[0].diagnostics[0].path
    assert "`[1].qty`" in model.calls[1].last_user_text


def test_callers_messages_are_not_modified(heal: Callable[..., Any]) -> None:
    """The caller's message list and dicts are left exactly as they were after repairs."""
    messages = [dict(m) for m in MESSAGES]
    before = [dict(m) for m in messages]

    heal(Healer(Ticket), ScriptedModel([BAD_URGENCY] * 3), messages)

    assert before == messages


def test_messages_may_be_a_prompt_string(heal: Callable[..., Any]) -> None:
    """A bare prompt string becomes one user message."""
    model = ScriptedModel([GOOD])

    heal(Healer(Ticket), model, "Make a ticket.")

    assert [{"role": "user", "content": "Make a ticket."}] == [
        dict(m) for m in model.calls[0].messages
    ]


# ---------------------------------------------------------------------------------------------
# validate(): L1 + L2 without a model call
# ---------------------------------------------------------------------------------------------


def test_validate_heals_a_good_reply() -> None:
    """validate() returns Healed for a reply that passes the schema and contracts."""
    out = healjson.validate(f"```json\n{GOOD}\n```", Ticket, contracts=[high_needs_outage])

    assert isinstance(out, Healed)
    assert ticket() == out.value
    assert Flag.CODE_FENCE in out.flags
    assert 0 == out.calls  # a reply handed in: no model call
    assert "none (the reply was given, not requested)" in out.trace()


def test_validate_degrades_with_invalid_output() -> None:
    """validate() returns Degraded(invalid_output) for a schema-invalid reply, never raising."""
    out = healjson.validate(BAD_URGENCY, Ticket)

    assert isinstance(out, Degraded)
    assert Reason.INVALID_OUTPUT == out.reason
    assert BAD_URGENCY == out.raw_text
    assert "urgency" == out.errors[0].path


def test_validate_runs_an_input_grounded_contract() -> None:
    """A contract reads the request through ctx.input_text when validate() gets a context."""
    context = [
        {"role": "system", "content": "Ignore me."},
        {"role": "user", "content": "Order ORD-123456 is late."},
    ]
    inputs: list[str] = []

    def grounded(value: Ticket, ctx: ContractContext) -> Violation | None:
        inputs.append(ctx.input_text)
        if value.order_id not in ctx.input_text:
            return Violation("the order id must appear in the request", path="order_id")
        return None

    good = healjson.validate(GOOD, Ticket, contracts=[grounded], context=context)
    bad = healjson.validate(
        GOOD.replace("ORD-123456", "ORD-000001"), Ticket, contracts=[grounded], context=context
    )

    assert isinstance(good, Healed)
    assert isinstance(bad, Degraded)
    assert Reason.INVALID_OUTPUT == bad.reason
    assert "order_id" == bad.errors[0].path
    assert "ORD-000001" == bad.errors[0].value
    assert ["Order ORD-123456 is late."] * 2 == inputs


def test_validate_reports_a_missing_field_as_missing() -> None:
    """validate() reports an absent field with the MISSING marker."""
    out = healjson.validate('{"urgency": "low", "summary": "x"}', Ticket)

    assert isinstance(out, Degraded)
    assert MISSING is out.errors[0].value
    assert "order_id" == out.errors[0].path


def test_validate_degrades_with_empty_and_truncated_reasons() -> None:
    """validate() uses empty_output and token_truncated where they apply."""
    empty = healjson.validate("", Pair)
    cut = healjson.validate('{"a": 1, "b": "cut', Pair, finish_reason="length")

    assert Reason.EMPTY_OUTPUT == empty.reason
    assert Reason.TOKEN_TRUNCATED == cut.reason
    assert {"a": 1} == cut.partial
