"""The scripted server's wire timing for streams: a first event long after the headers,
keep-alives during every wait (SSE comments on OpenAI's route, `ping` events on Anthropic's,
none on Gemini's), a byte trickle and silence after the answer; read as raw bytes over HTTP."""

from __future__ import annotations

import time
from typing import Any

import httpx2
import pytest

from healjson.testing import ScriptedReply, ScriptedServer

ROUTES = {
    "openai": ("/v1/chat/completions", {"model": "m", "stream": True}),
    "anthropic": ("/v1/messages", {"model": "c", "max_tokens": 10, "stream": True}),
    "gemini": ("/v1beta/models/g:streamGenerateContent", {}),
}


def _read(server: ScriptedServer, route: str) -> list[tuple[float, bytes]]:
    """Each piece of the body as it arrived, with its time since the request was sent (the
    last piece, empty: the body's end)."""
    path, body = ROUTES[route]
    body = {**body, "messages": [{"role": "user", "content": "hi"}]}
    if route == "gemini":
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    url = f"http://127.0.0.1:{server.port}{path}"
    start = time.perf_counter()
    with httpx2.Client() as client, client.stream("POST", url, json=body) as response:
        pieces = [(time.perf_counter() - start, piece) for piece in response.iter_raw()]
    return [*pieces, (time.perf_counter() - start, b"")]


def _body(pieces: list[tuple[float, bytes]]) -> bytes:
    return b"".join(piece for _, piece in pieces)


def _first(pieces: list[tuple[float, bytes]], marker: bytes) -> float:
    """When `marker` had arrived."""
    seen = b""
    for at, piece in pieces:
        seen += piece
        if marker in seen:
            return at
    raise AssertionError(f"{marker!r} never arrived")


@pytest.mark.parametrize(
    ("route", "keepalive", "first"),
    [
        ("openai", b": keep-alive\n\n", b"data: {"),
        ("anthropic", b'event: ping\ndata: {"type": "ping"}\n\n', b"event: message_start"),
    ],
)
def test_keepalives_fill_the_wait_before_the_first_event(
    route: str, keepalive: bytes, first: bytes
) -> None:
    """Keep-alives (OpenAI comments, Anthropic pings) fill the wait before a slow first event."""
    reply = ScriptedReply("abc", first_event_delay_s=0.3, keepalive_every_s=0.05)
    with ScriptedServer([reply, "abc"]) as server:
        pieces = _read(server, route)
        plain = _read(server, route)
    body = _body(pieces)
    assert _first(pieces, first) >= 0.3
    assert body.startswith(keepalive)
    extra = body.count(keepalive) - _body(plain).count(keepalive)
    assert 3 <= extra <= 6  # one each 50 ms while the first event waited
    assert body.replace(keepalive, b"").count(b"data:") == _body(plain).replace(
        keepalive, b""
    ).count(b"data:")


def test_gemini_sends_no_keepalive() -> None:
    """The Gemini route sends no keep-alive before a slow first event."""
    reply = ScriptedReply("abc", first_event_delay_s=0.15, keepalive_every_s=0.03)
    with ScriptedServer([reply]) as server:
        pieces = _read(server, "gemini")
    assert _first(pieces, b"data:") >= 0.15
    assert _body(pieces).startswith(b"data:")


def test_keepalives_between_events() -> None:
    """Keep-alives fill the waits between slow events too."""
    reply = ScriptedReply("abcdef", chunk_chars=2, chunk_delay_s=0.1, keepalive_every_s=0.03)
    with ScriptedServer([reply]) as server:
        body = _body(_read(server, "openai"))
    events = [frame for frame in body.split(b"\n\n") if frame]
    assert events[0].startswith(b"data:")  # no wait before the first event
    between = [i for i, frame in enumerate(events) if frame == b": keep-alive"]
    assert len(between) >= 6  # about 3 in each wait of 100 ms


def test_silence_after_the_answer_comes_before_the_streams_end() -> None:
    """`hold_open_s` keeps the stream open in silence after the answer, before its end."""
    reply = ScriptedReply("abc", hold_open_s=0.3)
    with ScriptedServer([reply]) as server:
        pieces = _read(server, "openai")
    answered = _first(pieces, b'"stop"')
    assert _first(pieces, b"[DONE]") - answered >= 0.25  # as the client saw it
    with ScriptedServer([reply]) as server:
        pieces = _read(server, "anthropic")
        server.wait_idle()
        [request] = server.requests
    assert pieces[-1][0] - _first(pieces, b"message_stop") >= 0.25  # the body ends late
    assert request.stream_completed


def test_a_trickle_sends_the_same_bytes_one_at_a_time() -> None:
    """`byte_delay_s` sends the same bytes in many small reads."""
    reply = ScriptedReply("abc", byte_delay_s=0.0001)
    with ScriptedServer([reply, "abc"]) as server:
        trickled = _read(server, "openai")
        plain = _read(server, "openai")
    assert len(_body(trickled)) == len(_body(plain))
    assert _body(trickled).count(b"data:") == _body(plain).count(b"data:")
    assert len(trickled) > 4 * len(plain)  # many more reads, each of a few bytes


def test_a_client_that_leaves_is_noticed_while_the_server_waits() -> None:
    """The server stops a delayed or held reply once its client has gone (no `stop()`)."""
    for reply in (ScriptedReply("abc", delay_s=30), ScriptedReply("abc", first_event_delay_s=30)):
        with ScriptedServer([reply]) as server:
            url = f"{server.base_url}/chat/completions"
            body: dict[str, Any] = {"model": "m", "stream": True, "messages": []}
            with pytest.raises(httpx2.ReadTimeout), httpx2.Client(timeout=0.1) as client:
                client.post(url, json=body).read()
            server.wait_idle(1.0)
            assert not server.requests[0].stream_completed


@pytest.mark.parametrize(
    "fields",
    [
        {"first_event_delay_s": -1},
        {"hold_open_s": float("inf")},
        {"byte_delay_s": "0.1"},
        {"keepalive_every_s": 0},
        {"keepalive_every_s": float("nan")},
    ],
)
def test_wire_timing_fields_are_validated(fields: dict[str, Any]) -> None:
    """Bad wire timing fields of a scripted reply are refused, naming the field."""
    with pytest.raises(ValueError, match=next(iter(fields))):
        ScriptedReply("x", **fields)
