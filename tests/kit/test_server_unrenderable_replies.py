"""A scripted reply the server cannot render (a reply file's `content` that is a number, a list
for a refusal) is answered with a clear HTTP 500 naming the script item and the field, on every
route, streamed or not: never a traceback on the server's stderr and a dead request."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

_ROUTES = {  # route -> (path under the server's root, a request body)
    "openai": (
        "/v1/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "x"}]},
    ),
    "responses": ("/v1/responses", {"model": "m", "input": "x"}),
    "anthropic": (
        "/v1/messages",
        {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]},
    ),
    "gemini": ("/v1beta/models/m:generateContent", {"contents": [{"parts": [{"text": "x"}]}]}),
    "ollama": ("/api/chat", {"model": "m", "messages": [{"role": "user", "content": "x"}]}),
}
_TEXTS = ("content", "refusal", "reasoning", "finish_reason")
_WRONG = (
    st.integers() | st.floats(allow_nan=False) | st.booleans() | st.lists(st.text(), max_size=2)
)


def served(reply: ScriptedReply, route: str, *, stream: bool) -> httpx.Response:
    path, body = _ROUTES[route]
    if stream and route == "gemini":
        path = path.replace(":generateContent", ":streamGenerateContent")
    elif stream:
        body = {**body, "stream": True}
    with ScriptedServer([reply]) as server:
        root = f"http://127.0.0.1:{server.port}"
        return httpx.post(root + path, json=body, timeout=10)


@pinned(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(_TEXTS),
    value=_WRONG,
    route=st.sampled_from(sorted(_ROUTES)),
    stream=st.booleans(),
)
def test_a_reply_whose_text_is_not_a_string_is_a_clear_500(
    capfd: pytest.CaptureFixture[str], field: str, value: Any, route: str, stream: bool
) -> None:
    """A reply (as a reply file gives it) whose text field holds a number, a flag or a list is
    answered with HTTP 500 naming the script item and the field, and nothing on stderr."""
    reply = ScriptedReply(**{field: value})
    response = served(reply, route, stream=stream)
    assert 500 == response.status_code
    text = json.dumps(response.json())
    assert "ScriptedServer script item #1" in text
    assert f"{field} must be a string or None" in text
    assert "Traceback" not in capfd.readouterr().err


def test_a_reply_that_fails_to_render_otherwise_is_a_clear_500_too(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Any other failure to render a reply (here a usage of the wrong shape) is a 500 that says
    what was raised, not a traceback on stderr."""
    reply = ScriptedReply(content="{}", usage={"prompt_tokens": "many"})  # type: ignore[dict-item]
    response = served(reply, "anthropic", stream=False)
    assert 500 == response.status_code
    assert "this reply cannot be rendered (TypeError" in json.dumps(response.json())
    assert "Traceback" not in capfd.readouterr().err
