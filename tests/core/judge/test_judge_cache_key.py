"""A judge's cached verdict is reused only for the very request it answered: its cache key
holds everything its prompt holds (the model, the question, the request, the value)."""

from __future__ import annotations

import json

import openai
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy
from healjson.testing import ScriptedModel, ScriptedServer
from sdk_calls import TLS


class Summary(BaseModel):
    text: str


QUESTION = "Is the summary faithful to the request?"
YES = json.dumps({"verdict": "yes", "reason": "it is"})
NO = json.dumps({"verdict": "no", "reason": "The request asked about a refund."})
ANSWER = json.dumps({"text": "The customer is unhappy."})
ONE = HealPolicy(max_attempts=1)


def client(server: ScriptedServer) -> openai.OpenAI:
    http = openai.DefaultHttpxClient(verify=TLS)
    return openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0, http_client=http)


def test_a_yes_for_one_request_is_not_reused_for_another() -> None:
    """The same value judged for two requests asks the judge twice: a "yes" for the first
    request does not let the second pass, where the judge says "no"."""
    with ScriptedServer([YES, NO]) as server, client(server) as judging:
        rule = healjson.judge(QUESTION, client=judging, model="judge")
        healer = Healer(Summary, contracts=[rule], policy=ONE)
        first = healer.run(ScriptedModel([ANSWER]), "The customer is unhappy with us.")
        second = healer.run(ScriptedModel([ANSWER]), "I want a refund for order 7.")
        asked = [request.last_user_text for request in server.requests]
    assert isinstance(first, Healed)
    assert isinstance(second, Degraded)
    assert 2 == len(asked)
    assert "I want a refund for order 7." in asked[1]


def test_the_same_request_and_value_are_judged_once() -> None:
    """The same value for the same request is judged once: the second run reuses the verdict."""
    with ScriptedServer([YES]) as server, client(server) as judging:
        rule = healjson.judge(QUESTION, client=judging, model="judge")
        healer = Healer(Summary, contracts=[rule], policy=ONE)
        outcomes = [healer.run(ScriptedModel([ANSWER]), "Summarise: unhappy.") for _ in range(2)]
        asked = len(server.requests)
    assert 1 == asked
    assert [True, True] == [outcome.ok for outcome in outcomes]


def test_two_judges_with_other_models_do_not_share_a_verdict() -> None:
    """A verdict is the judge's own: another judge (another model) asking the same question
    about the same value for the same request asks its model."""
    with ScriptedServer([YES, NO]) as server, client(server) as judging:
        lenient = healjson.judge(QUESTION, client=judging, model="lenient")
        strict = healjson.judge(QUESTION, client=judging, model="strict")
        first = Healer(Summary, contracts=[lenient], policy=ONE).run(ScriptedModel([ANSWER]), "x")
        second = Healer(Summary, contracts=[strict], policy=ONE).run(ScriptedModel([ANSWER]), "x")
        models = [request.body["model"] for request in server.requests if request.body]
    assert ["lenient", "strict"] == models
    assert (True, False) == (first.ok, second.ok)
