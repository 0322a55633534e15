"""`healjson.judge`: a rule a model decides, over the real openai SDK and the scripted server."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Healer, Reason
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer


class Summary(BaseModel):
    text: str


QUESTION = "Is the summary faithful to the request?"
YES = json.dumps({"verdict": "yes", "reason": "it is"})
NO = json.dumps({"verdict": "no", "reason": "Mention the refund the customer asked for."})
ANSWER = json.dumps({"text": "The customer is unhappy."})
SLOW = 10.0  # a reply this late is never waited for (the server's stop cuts it short)


def sync_client(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0)


def test_a_yes_passes_and_the_question_and_request_reach_the_judge() -> None:
    """A judge that answers yes passes the value; its request carries the question, the user's
    request and the answer, and its usage is counted apart."""
    with ScriptedServer([YES]) as server, sync_client(server) as client:
        rule = healjson.judge(QUESTION, client=client, model="judge-model")
        outcome = Healer(Summary, contracts=[rule]).run(
            ScriptedModel([ANSWER]), "I want a refund for order 7"
        )
        [request] = server.requests
    assert isinstance(outcome, Healed)
    assert outcome.calls == 1
    asked = request.messages[-1]["content"]
    assert QUESTION in asked
    assert "I want a refund for order 7" in asked
    assert "The customer is unhappy." in asked
    assert request.body["model"] == "judge-model"
    assert request.body["max_tokens"] == 200
    assert rule.check.calls == 1  # type: ignore[attr-defined]
    judged = rule.check.usage  # type: ignore[attr-defined]
    assert judged.requests == 1
    assert judged.total_tokens > 0
    # the judge's call is counted in the run's usage, apart from the model's attempt
    assert outcome.usage == outcome.attempts[0].usage + judged
    assert outcome.usage.requests == 2


def test_a_no_is_a_violation_with_the_reason_as_prescription_and_reasks() -> None:
    """A judge's no is a violation named after the rule, with the judge's reason as the
    prescription, and the model is asked again."""
    better = json.dumps({"text": "The customer wants a refund."})
    with ScriptedServer([NO, YES]) as server, sync_client(server) as client:
        rule = healjson.judge(QUESTION, client=client, model="j", name="faithful")
        outcome = Healer(Summary, contracts=[rule]).run(ScriptedModel([ANSWER, better]), "x")
    assert isinstance(outcome, Healed)
    assert outcome.calls == 2
    [violation] = outcome.attempts[0].diagnostics
    assert violation.rule == "faithful"
    assert violation.prescription == "Mention the refund the customer asked for."
    assert QUESTION in violation.constraint


def test_the_cache_avoids_a_second_call_for_the_same_value() -> None:
    """The judge is called once for the same value judged twice."""
    with ScriptedServer([NO]) as server, sync_client(server) as client:
        rule = healjson.judge(QUESTION, client=client, model="j", on_fail="warn")
        first = healjson.validate(ANSWER, Summary, contracts=[rule])
        second = healjson.validate(ANSWER, Summary, contracts=[rule])
        assert len(server.requests) == 1
    assert isinstance(first, Healed)
    assert isinstance(second, Healed)
    assert first.warnings == second.warnings
    assert len(first.warnings) == 1


@pytest.mark.parametrize(
    ("item", "timeout_s", "why"),
    [
        # Only the slow reply gets a short timeout: on a loaded machine 0.3 s can pass before
        # even a prompt reply arrives, and that case would then test the timeout instead.
        (ScriptedReply(status=500, body='{"error": {"message": "down"}}'), 30.0, "call failed"),
        (ScriptedReply(content="I think it is fine."), 30.0, "no verdict"),
        (ScriptedReply(content=YES, delay_s=SLOW), 0.3, "did not answer within 0.3 s"),
    ],
)
def test_a_failing_judge_is_a_contract_error_never_a_pass(
    item: ScriptedReply, timeout_s: float, why: str
) -> None:
    """A judge whose call fails, gives no verdict or is too slow degrades with `contract_error`,
    never a pass, and never holds the check past its timeout."""
    with ScriptedServer([item]) as server, sync_client(server) as client:
        rule = healjson.judge(QUESTION, client=client, model="j", timeout_s=timeout_s)
        started = time.monotonic()
        outcome = healjson.validate(ANSWER, Summary, contracts=[rule])
        # a sync client's call past the timeout does not hold the check up until it returns
        assert time.monotonic() - started < SLOW / 2
    assert isinstance(outcome, Degraded)
    assert outcome.reason is Reason.CONTRACT_ERROR
    assert why in outcome.errors[0].constraint


def test_an_async_client_judges_in_arun() -> None:
    """A judge with an async openai client judges inside `arun`, and its no with `on_fail="stop"`
    degrades."""

    async def main() -> Any:
        with ScriptedServer([NO]) as server:
            async with openai.AsyncOpenAI(
                base_url=server.base_url, api_key="t", max_retries=0
            ) as client:
                rule = healjson.judge(QUESTION, client=client, model="j", on_fail="stop")
                model = ScriptedModel([ANSWER])
                return await Healer(Summary, contracts=[rule]).arun(model.acall, "x")

    outcome = asyncio.run(main())
    assert isinstance(outcome, Degraded)
    assert outcome.reason is Reason.CONTRACT_ERROR
    assert outcome.errors[0].prescription == "Mention the refund the customer asked for."


def test_a_judge_takes_a_question_and_cannot_fix() -> None:
    """A judge without a question, or with `on_fail="fix"`, is refused when built."""
    with pytest.raises(TypeError, match="question"):
        healjson.judge("", client=None, model="j")
    with pytest.raises(TypeError, match="fix"):
        healjson.judge(QUESTION, client=None, model="j", on_fail="fix")
