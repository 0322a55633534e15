"""Which channel of a reply is the answer when the caller passed no tools of their own: a call
named after the target (in any spelling a provider allows) is; without one, text beside the
calls is the answer and the calls are another tool's, never the value; a reply of calls alone
answers with its first call."""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

import healjson
from healjson import Healed, Healer, HealPolicy, Reply
from healjson._core.judge.check import answer_tool_name, caller_tools
from healjson._core.wire.reply import ToolCall
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from pinned import pinned
from wrapped_calls import Person, ask


class Point(BaseModel):
    x: int
    label: str


points = st.builds(Point, x=st.integers(-1000, 1000), label=st.text(max_size=12))
# tool names that are not the target's in any spelling
other_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,20}", fullmatch=True).filter(
    lambda name: answer_tool_name(name) != "point"
)
arguments = st.one_of(
    points.map(lambda point: point.model_dump_json()),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(json.dumps),
    st.text(max_size=20),
)
stray_calls = st.lists(
    st.builds(ToolCall, name=other_names, arguments=arguments), min_size=1, max_size=3
).map(tuple)
POLICY = HealPolicy(max_attempts=1)


@pinned(max_examples=30)
@given(answer=points, calls=stray_calls, finish=st.sampled_from(["stop", "tool_calls"]))
def test_text_beside_calls_to_other_tools_is_the_answer(
    answer: Point, calls: tuple[ToolCall, ...], finish: str
) -> None:
    """A valid answer in the text is the value, whatever the calls beside it carry (another
    valid `Point` included): the value and the raw text never disagree."""
    reply = Reply(answer.model_dump_json(), finish, tool_calls=calls)

    outcome = Healer(Point, policy=POLICY).run(ScriptedModel([reply]), "Where?")

    assert isinstance(outcome, Healed)
    assert (answer, answer.model_dump_json()) == (outcome.value, outcome.raw_text)


def respelled(name: str) -> st.SearchStrategy[str]:
    """`name` as a provider may write a tool named after it: any case, `_`/`-` anywhere."""
    return st.lists(
        st.tuples(st.booleans(), st.sampled_from(["", "_", "-"])), min_size=len(name)
    ).map(
        lambda marks: "".join(
            (char.upper() if upper else char.lower()) + mark
            for char, (upper, mark) in zip(name, marks, strict=False)
        )
    )


@pinned(max_examples=30)
@given(
    answer=points,
    name=respelled("Point"),
    text=st.sampled_from([None, "", "Calling the tool.", '{"x": 0, "label": "text"}']),
    before=st.lists(st.builds(ToolCall, name=other_names, arguments=st.just("{}")), max_size=2),
)
def test_a_call_named_after_the_target_is_the_answer_whatever_the_text(
    answer: Point, name: str, text: str | None, before: list[ToolCall]
) -> None:
    """healjson's own answer tool (or instructor's), named after the target in any spelling,
    gives the value, even beside text and after other calls."""
    calls = (*before, ToolCall(name, answer.model_dump_json()))
    reply = Reply(text, "tool_calls", tool_calls=calls)

    outcome = Healer(Point, policy=POLICY).run(ScriptedModel([reply]), "Where?")

    assert isinstance(outcome, Healed)
    assert answer == outcome.value


def test_a_reply_of_calls_alone_answers_with_its_first_call() -> None:
    """No text and no call named after the target (Anthropic's `answer` tool for a target
    without a title): the first call's arguments are the answer."""
    calls = (ToolCall("answer", '{"x": 1, "label": "a"}'), ToolCall("other", "{}"))
    reply = Reply(None, "tool_calls", tool_calls=calls)

    outcome = Healer(Point, policy=POLICY).run(ScriptedModel([reply]), "Where?")

    assert Point(x=1, label="a") == outcome.unwrap()


STRAY = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "lookup_user", "arguments": '{"name": "Eve", "age": 99}'},
}


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("provider", ["chat", "anthropic", "gemini", "ollama"])
def test_every_wire_keeps_the_text_answer_beside_a_stray_call(
    scripted_server: ScriptedServer, provider: str, streamed: bool
) -> None:
    """Over real HTTP with each SDK, no tools sent: the text's person is the value, not the
    person in a call to a tool nobody offered."""
    scripted_server.extend(
        [ScriptedReply(content='{"name": "Ann", "age": 31}', tool_calls=[STRAY])]
    )

    outcome: Any = ask(scripted_server, provider, "sync", streamed)

    assert isinstance(outcome, Healed)
    assert ("Ann", 31) == (outcome.value.name, outcome.value.age)


def dialect_name(title: str) -> str:
    """A forced answer tool's name as a dialect writes it from a schema's title: the characters
    a tool name may hold, others as `_`, cut to 64 (`answer` for no title left)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", title)[:64] or "answer"


titles = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=80
)


@pinned(max_examples=30)
@given(title=titles, answer=points)
def test_the_answer_tool_named_after_the_schema_title_is_the_answer_beside_text(
    title: str, answer: Point
) -> None:
    """A target whose schema has a title of its own: the forced tool named after that title
    (in the characters a tool name allows, cut to 64) is the answer, even beside text that holds
    another JSON value."""
    titled = create_model("Titled", __base__=Point, __config__=None)
    titled.model_config["title"] = title
    titled.model_rebuild(force=True)
    assume(titled.model_json_schema().get("title") == title)
    example = '{"x": 0, "label": "an example"}'
    calls = (ToolCall(dialect_name(title), answer.model_dump_json()),)
    reply = Reply(f"For instance: {example}", "tool_calls", tool_calls=calls)

    outcome = Healer(titled, policy=POLICY).run(ScriptedModel([reply]), "Where?")

    assert isinstance(outcome, Healed)
    assert answer.model_dump() == outcome.value.model_dump()


def test_a_json_schema_targets_answer_tool_is_the_answer_beside_text() -> None:
    """A JSON Schema target without a title: its answer tool is `answer`."""
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    calls = (ToolCall("answer", '{"x": 7}'),)
    reply = Reply('Like {"x": 1}.', "tool_calls", tool_calls=calls)

    outcome = Healer(schema, policy=POLICY).run(ScriptedModel([reply]), "x?")

    assert {"x": 7} == outcome.unwrap()


@pytest.mark.parametrize("tools", [None, []], ids=["no-tools", "empty-tools"])
def test_an_empty_tools_list_is_no_tools_of_the_callers(
    scripted_server: ScriptedServer, tools: list[Any] | None
) -> None:
    """`tools=[]` passes no tool: the forced answer tool of the tool tier is sent, and its call
    is the answer, as without `tools=`."""
    scripted_server.extend([ScriptedReply(content='{"name": "Ann", "age": 31}')])
    more = {} if tools is None else {"tools": tools}
    with anthropic.Anthropic(
        base_url=scripted_server.anthropic_base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        outcome = healjson.wrap(sdk, json_mode="json_object").messages.create(
            model="claude-test",
            max_tokens=256,
            messages=[{"role": "user", "content": "Ann is 31"}],
            response_model=Person,
            policy=POLICY,
            **more,
        )

    assert isinstance(outcome, Healed), outcome
    sent = scripted_server.requests[-1].body
    assert ["Person"] == [tool["name"] for tool in sent["tools"]]


@given(tools=st.none() | st.lists(st.just({"name": "t"}), max_size=2), other=st.booleans())
def test_the_caller_has_tools_exactly_when_it_passed_a_non_empty_list(
    tools: list[Any] | None, other: bool
) -> None:
    """`caller_tools`: a `tools` key holding tools, nothing else."""
    params: dict[str, Any] = {"model": "m"} if other else {}
    if tools is not None:
        params["tools"] = tools

    assert bool(tools) == caller_tools(params)
