"""A request whose `tool_choice` allows no call (`"none"`; Anthropic's `{"type": "none"}`)
answered with calls all the same (a server that ignores the choice): the calls are rejected,
never healed, and the model is asked to answer in text; a text answer is healed with no call.
A choice that forces a tool answered with a call to another: the record keeps the tool the
call must be made again to. The real SDKs over real HTTP against the scripted server, sync
and async."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, HealPolicy, ToolCalls, outcome_from_dict
from healjson.testing import ScriptedReply, ScriptedServer
from openai_tools_kit import Api, Mode, healed

WAYS = [(api, mode) for api in ("chat", "responses") for mode in ("sync", "async")]
TEXT = "It is sunny in Oslo."


class Weather(BaseModel):
    """The weather in a city."""

    city: str


def made_call() -> ScriptedReply:
    """A reply that calls `Weather` although the request allows no call."""
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "Weather", "arguments": '{"city": "Oslo"}'},
    }
    return ScriptedReply(content=None, tool_calls=[call], finish_reason="tool_calls")


def heal(api: Api, mode: Mode, server: ScriptedServer, **kwargs: Any) -> Any:
    """One `heal_tools=True` request with `tool_choice="none"` on a wrapped OpenAI client."""
    kwargs.update(tools=[Weather], tool_choice="none")
    if api == "chat":
        kwargs["messages"] = [{"role": "user", "content": "The weather in Oslo?"}]
    else:
        kwargs["input"] = "The weather in Oslo?"
    return healed(server, api, mode, **kwargs)


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_calls_where_none_is_allowed_are_rejected_and_a_text_answer_asked(
    api: Api, mode: Mode
) -> None:
    """A reply of calls, then a text one: healed with the text and no call, two requests; the
    second tells the model its calls were rejected and asks for text."""
    with ScriptedServer([made_call(), ScriptedReply(TEXT)]) as server:
        outcome = heal(api, mode, server)
        second = str(server.requests[1].body)
    assert isinstance(outcome, Healed)
    assert isinstance(outcome.value, ToolCalls)
    assert (TEXT, ()) == (outcome.value.text, outcome.value.calls)
    assert 2 == outcome.calls
    assert "allows no tool call" in second
    assert "tool_call_not_allowed" == outcome.attempts[0].diagnostics[0].extra["cause"]


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_text_answer_is_healed_at_once(api: Api, mode: Mode) -> None:
    """A text answer to a request that allows no call: healed, one request."""
    with ScriptedServer([ScriptedReply(TEXT)]) as server:
        outcome = heal(api, mode, server)
    assert isinstance(outcome, Healed)
    assert (TEXT, (), 1) == (outcome.value.text, outcome.value.calls, outcome.calls)


def test_calls_every_time_degrade_keeping_them() -> None:
    """A model that calls on every attempt: degraded, never healed; its calls are kept in
    the partial value and the record, which round-trips the form's rule."""
    with ScriptedServer([made_call()], repeat=True) as server:
        outcome = heal("chat", "sync", server, policy=HealPolicy(max_attempts=2))
    assert isinstance(outcome, Degraded)
    assert ["Weather"] == [call.name for call in outcome.partial.calls]
    form = outcome.attempts[1].prompt.calls
    assert form.forbidden
    again = outcome_from_dict(outcome.to_dict())
    assert again.attempts[1].prompt.calls.forbidden


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_anthropics_none_choice_allows_no_call(mode: Mode) -> None:
    """Anthropic's `tool_choice={"type": "none"}` answered with a call: rejected, the text
    answer asked for and healed."""
    tool = {"name": "Weather", "input_schema": Weather.model_json_schema()}
    with ScriptedServer([made_call(), ScriptedReply(TEXT)]) as server:
        kwargs: dict[str, Any] = {
            "model": "c",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "The weather in Oslo?"}],
            "tools": [tool],
            "heal_tools": True,
            "tool_choice": {"type": "none"},
        }
        if mode == "sync":
            with anthropic.Anthropic(
                base_url=server.anthropic_base_url, api_key="k", max_retries=0
            ) as sdk:
                outcome = healjson.wrap(sdk).messages.create(**kwargs)
        else:

            async def main() -> Any:
                async with anthropic.AsyncAnthropic(
                    base_url=server.anthropic_base_url, api_key="k", max_retries=0
                ) as sdk:
                    return await healjson.wrap(sdk).messages.create(**kwargs)

            outcome = asyncio.run(main())
    assert isinstance(outcome, Healed)
    assert (TEXT, ()) == (outcome.value.text, outcome.value.calls)
    assert 2 == outcome.calls


def test_a_record_keeps_the_tool_a_call_must_be_made_again_to() -> None:
    """A forced tool answered with a call to another: the repair names the tool to call, and
    the outcome's record keeps it, so the repair renders the same after a round trip."""

    class Search(BaseModel):
        """Search the catalogue."""

        query: str

    other = {
        "id": "c1",
        "type": "function",
        "function": {"name": "Search", "arguments": '{"query": "q"}'},
    }
    forced = {"type": "function", "function": {"name": "Weather"}}
    with ScriptedServer(
        [ScriptedReply(tool_calls=[other], finish_reason="tool_calls"), made_call()]
    ) as server:
        outcome = healed(
            server,
            "chat",
            tools=[Weather, Search],
            tool_choice=forced,
            messages=[{"role": "user", "content": "The weather in Oslo?"}],
        )
    assert isinstance(outcome, Healed)
    form = outcome.attempts[1].prompt.calls
    assert "Weather" == form.calls[0].tool
    again = outcome_from_dict(outcome.to_dict()).attempts[1].prompt
    assert "Weather" == again.calls.calls[0].tool
    assert outcome.attempts[1].prompt.render() == again.render()


def test_calls_where_none_is_allowed_run_no_contract() -> None:
    """A call the request allows none of is refused before its arguments are judged: the
    tool's contracts never run on it."""
    judged: list[Any] = []

    def noting(arguments: Any) -> None:
        judged.append(arguments)

    with ScriptedServer([made_call(), ScriptedReply(TEXT)]) as server:
        outcome = heal("chat", "sync", server, tool_contracts={"Weather": [noting]})
    assert isinstance(outcome, Healed)
    assert [] == judged
