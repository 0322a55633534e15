"""Chat messages as Anthropic turns: the common request's short way (plain text turns kept as
they are) agrees with the general conversion on every list of messages."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from healjson._providers.anthropic_messages.wire import _with_messages as with_messages
from healjson._providers.anthropic_messages.wire import anthropic_request
from pinned import pinned

_CONTENT = st.one_of(
    st.sampled_from(["", "hi", "a longer text"]),
    st.just([{"type": "text", "text": "block"}]),
    st.just([{"type": "tool_result", "tool_use_id": "t1", "content": "42"}]),
)
_CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}


@st.composite
def _message(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    message: dict[str, Any] = {"role": role, "content": draw(_CONTENT)}
    if role == "assistant" and draw(st.booleans()):
        message["tool_calls"] = [_CALL]
    if role == "tool":
        message["tool_call_id"] = "c1"
    return message


@pinned()
@given(messages=st.lists(_message(), max_size=5), system=st.sampled_from([None, "given"]))
def test_the_short_way_agrees_with_the_general_conversion(
    messages: list[dict[str, Any]], system: str | None
) -> None:
    """Whatever the roles, contents and tool calls, a first request's body is the general
    conversion's (which a mark-less `shared` forces)."""
    params = {} if system is None else {"system": system}
    general = with_messages(messages, dict(params), {"role": "none"})
    assert general == anthropic_request(messages, params)


def _tool_input(arguments: str) -> Any:
    """The `input` of the `tool_use` block a chat call with `arguments` becomes."""
    call = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    asked = [{"role": "assistant", "content": None, "tool_calls": [call]}]
    turns = with_messages(asked, {})["messages"]
    (block,) = [b for t in turns for b in t["content"] if b.get("type") == "tool_use"]
    return block["input"]


@pinned()
@given(
    data=st.dictionaries(
        st.sampled_from(["city", "days", "unit"]),
        st.one_of(st.integers(-9, 9), st.sampled_from(["Oslo", "C", "it's"])),
        min_size=1,
    )
)
def test_a_call_quoted_back_keeps_every_argument_l1_can_read(data: dict[str, Any]) -> None:
    """A call's arguments quoted back in a repair are the object they spell: as JSON, or as L1
    reads them when they are not JSON (Python quotes), never an empty object."""
    assert data == _tool_input(json.dumps(data))
    assert data == _tool_input(repr(data))


def test_arguments_with_no_object_in_them_are_an_empty_input() -> None:
    """Arguments that hold no object (empty, a bare word) are quoted back as an empty input,
    the one form the API accepts."""
    assert {} == _tool_input("")
    assert {} == _tool_input("nonsense")
