"""Which channel of a reply is the answer when the caller passed no tools of their own: a call
named after the target (in any spelling a provider allows) is; without one, text beside the
calls is the answer and the calls are another tool's, never the value; a reply of calls alone
answers with its first call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Healed, Healer, HealPolicy, Reply
from healjson._core.judge.check import answer_tool_name
from healjson._core.wire.reply import ToolCall
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from pinned import pinned
from wrapped_calls import ask


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


@pinned(max_examples=60)
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


@pinned(max_examples=60)
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
