"""Chat messages as Anthropic turns: the common request's short way (plain text turns kept as
they are) agrees with the general conversion on every list of messages."""

from __future__ import annotations

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
