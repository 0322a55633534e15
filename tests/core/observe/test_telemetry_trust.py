"""What spans, metrics and events may be trusted with: no key the model invented with content
capture off, every field bounded, `error.type` by the conventions, and every call made counted
(the real OpenTelemetry SDK, in-memory readers; loopback scripted servers)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

import healjson
from healjson import Degraded, Healer, HealPolicy
from healjson._core.observe.shown import CONTENT_CHARS, KEY, MAX_ITEMS, SAID_CHARS
from healjson.testing import ScriptedReply, ScriptedServer, capture_events
from otel_kit import Telemetry, abandoned_stream, installed

CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
API_KEY = "sk-trust-0123456789abcdef"


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str
    qty: int = Field(alias="quantity")


class Order(BaseModel):
    items: list[Line]
    notes: dict[str, int]


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


GOOD = '{"urgency": 3, "summary": "Order stuck for a week"}'
SAID = [{"role": "user", "content": "hi"}]


def answering(*texts: str) -> Any:
    """A model call that answers `texts` in turn (the last one again once they run out)."""
    left = list(texts)

    def call(messages: Any, **params: Any) -> str:
        return left.pop(0) if len(left) > 1 else left[0]

    return call


def invented(keys: tuple[str, str]) -> str:
    """An answer with `keys[0]` an extra key of a line and `keys[1]` a key of the free-form
    mapping whose value is no integer."""
    line = {"sku": "A-1", "quantity": 2, keys[0]: "x"}
    return json.dumps({"items": [line], "notes": {keys[1]: "not a number"}})


def strings(value: Any) -> Iterator[tuple[str | None, str]]:
    """Every string in an event's fields or a span's attributes, with its field's name."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        name, item = stack.pop()
        if isinstance(item, str):
            yield name, item
        elif isinstance(item, dict):
            stack.extend((str(key), member) for key, member in item.items())
            stack.extend((name, str(key)) for key in item)
        elif isinstance(item, list | tuple):
            stack.extend((name, member) for member in item)


def shown(state: Telemetry, events: list[dict[str, Any]]) -> list[tuple[str | None, str]]:
    """Every string telemetry carried: events' fields, spans' names, attributes and statuses."""
    found = list(strings(events))
    for span in state.finished():
        found.append(("name", span.name))
        found.extend(strings(dict(span.attributes or {})))
        found.append(("status", span.status.description or ""))
    return found


model_keys = st.text(
    alphabet=st.characters(categories=("L", "N", "Pd", "Pc", "Zs", "So"), exclude_characters=".[]"),
    min_size=12,
    max_size=40,
).filter(lambda key: key.strip() == key and key not in {"sku", "qty", "quantity"})


@settings(
    max_examples=10,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(keys=st.tuples(model_keys, model_keys))
def test_no_key_the_model_invented_reaches_telemetry_with_capture_off(
    keys: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With content capture off, keys the model wrote never reach a span or an event, while
    the names the target declares do, each invented segment shown as the placeholder."""
    monkeypatch.delenv(CAPTURE, raising=False)
    policy = HealPolicy(max_attempts=2)
    with installed(monkeypatch, Telemetry()) as state, capture_events() as events:
        outcome = Healer(Order, policy=policy).run(answering(invented(keys)), "order")
    assert isinstance(outcome, Degraded)
    texts = [text for _, text in shown(state, events)]
    assert not [text for text in texts for key in keys if key in text]
    paths = {event["path"] for event in events if event["event"] == "healjson.diagnostic"}
    assert {f"items[0].{KEY}", f"notes.{KEY}"} <= paths
    diagnostics = [text for name, text in shown(state, []) if name == "healjson.diagnostic"]
    assert diagnostics
    assert all(text.startswith(("items[0].<key>", "notes.<key>")) for text in diagnostics)


def test_with_capture_on_the_models_keys_are_shown_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Content capture on (the environment for spans, `include_content` for events): a path
    is shown as the model wrote it."""
    monkeypatch.setenv(CAPTURE, "true")
    answer = invented(("customer_email_ada", "secret_note_key"))
    with (
        installed(monkeypatch, Telemetry()) as state,
        capture_events(include_content=True) as events,
    ):
        Healer(Order, policy=HealPolicy(max_attempts=1)).run(answering(answer), "order")
    paths = {event["path"] for event in events if event["event"] == "healjson.diagnostic"}
    assert {"items[0].customer_email_ada", "notes.secret_note_key"} <= paths
    said = [text for name, text in shown(state, []) if name == "healjson.diagnostic"]
    assert any("customer_email_ada" in text or "secret_note_key" in text for text in said)


def within_bounds(found: list[tuple[str | None, str]]) -> list[tuple[str | None, int]]:
    """The strings longer than their bound: captured content's, or every other text's."""
    content = {"raw_text", "prompt", "gen_ai.input.messages", "gen_ai.output.messages"}
    return [
        (name, len(text))
        for name, text in found
        if len(text) > (CONTENT_CHARS if name in content else SAID_CHARS)
    ]


def body(content: str, *, model: str = "m") -> str:
    """A chat completion the provider wrote, its model as given."""
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


@pytest.mark.parametrize("content", [False, True], ids=["capture-off", "capture-on"])
def test_a_megabyte_answer_and_error_leave_every_field_within_its_bound(
    content: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1 MB answer (and model name) then a 1 MB provider error message: no event field and
    no span attribute past its bound, each cut one marked."""
    if content:
        monkeypatch.setenv(CAPTURE, "true")
    huge = "y" * 1_000_000
    answer = json.dumps({"urgency": 9, "summary": "z" * 1_000_000})
    replies = [
        ScriptedReply(body=body(answer, model="m" * 1_000_000)),
        ScriptedReply(status=500, content=f"the server broke: {huge}"),
    ]
    with (
        installed(monkeypatch, Telemetry()) as state,
        capture_events(include_content=content) as events,
        ScriptedServer(replies) as server,
    ):
        sdk = openai.OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0)
        with sdk:
            outcome = healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, response_model=Ticket
            )
    assert isinstance(outcome, Degraded)
    found = shown(state, events)
    assert not within_bounds(found)
    assert any("…(cut from" in text for _, text in found)
    attempts = [event for event in events if event["event"] == "healjson.attempt"]
    assert 2 == len(attempts)
    assert attempts[1]["error"].endswith("chars)")
    assert ("raw_text" in attempts[0]) is content


def test_an_event_list_is_cut_at_its_bound() -> None:
    """An answer with hundreds of keys the schema forbids: the degraded event's list of errors
    holds at most `MAX_ITEMS` of them and says how many more there were."""
    line = {"sku": "A-1", "quantity": 2} | {f"extra_{n}": n for n in range(300)}
    answer = json.dumps({"items": [line], "notes": {}})
    with capture_events() as events:
        Healer(Order, policy=HealPolicy(max_attempts=1)).run(answering(answer), "order")
    [degraded] = [event for event in events if event["event"] == "healjson.degraded"]
    assert len(degraded["errors"]) <= MAX_ITEMS + 1
    assert all(
        len(list(value)) <= MAX_ITEMS + 1 for value in degraded.values() if isinstance(value, list)
    )


def failed_call(state: Telemetry) -> Any:
    """The one call span that ended in an error."""
    [span] = [s for s in state.finished() if s.name.startswith("chat") and s.status.description]
    return span


def test_error_type_is_the_sdk_exceptions_qualified_class(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 429 the OpenAI SDK raises as `RateLimitError`: the call span's `error.type` is
    `openai.RateLimitError`, the run's span its reason."""
    with (
        installed(monkeypatch, Telemetry()) as state,
        ScriptedServer([ScriptedReply(status=429, content="slow down")]) as server,
    ):
        sdk = openai.OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0)
        with sdk:
            healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, response_model=Ticket
            )
    assert "openai.RateLimitError" == failed_call(state).attributes["error.type"]
    [run] = state.runs()
    assert "api_error" == run.attributes["error.type"]


def test_error_type_of_a_builtin_exception_is_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that raises a builtin `ConnectionRefusedError`: `error.type` is its bare name,
    as the conventions write a builtin's (`OSError`)."""

    def refused(messages: Any, **params: Any) -> str:
        raise ConnectionRefusedError("[Errno 111] Connection refused")

    with installed(monkeypatch, Telemetry()) as state:
        Healer(Ticket).run(refused, "go", model="m")
    assert "ConnectionRefusedError" == failed_call(state).attributes["error.type"]


def test_error_type_of_a_name_two_packages_export_is_exact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refused connection through the OpenAI SDK raises `APIConnectionError`, a name the
    Anthropic SDK exports too (both loaded here): `error.type` is the raised class's own,
    `openai.…`, never a name read back from the error's message."""
    assert anthropic.APIConnectionError is not openai.APIConnectionError
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with installed(monkeypatch, Telemetry()) as state:
        sdk = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=0)
        with sdk:
            healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, response_model=Ticket
            )
    assert "openai.APIConnectionError" == failed_call(state).attributes["error.type"]


def test_error_type_of_the_runs_deadline_is_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call the run's own deadline cut short: healjson's stop kind, `timeout`, on the call's
    span and on the run's."""

    def slow(messages: Any, **params: Any) -> str:
        time.sleep(2)
        return GOOD

    with installed(monkeypatch, Telemetry()) as state:
        outcome = Healer(Ticket, policy=HealPolicy(deadline_s=0.2)).run(slow, "go", model="m")
    assert isinstance(outcome, Degraded)
    assert "timeout" == failed_call(state).attributes["error.type"]
    [run] = state.runs()
    assert "timeout" == run.attributes["error.type"]


def test_a_run_stopped_by_its_budget_has_that_error_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run whose token budget forbids its repair: its span's `error.type` is the stop,
    `budget_exceeded`."""
    policy = HealPolicy(token_budget=1)
    with installed(monkeypatch, Telemetry()) as state:
        outcome = Healer(Ticket, policy=policy).run(answering("{}"), "go", model="m")
    assert isinstance(outcome, Degraded)
    [run] = state.runs()
    assert "budget_exceeded" == run.attributes["error.type"]


LONG = '{"urgency": 3, "summary": "' + "x" * 400 + '"}'


def counted(state: Telemetry) -> list[tuple[int, dict[str, Any]]]:
    """The `healjson.attempts` counter's points: value and attributes."""
    return [(point.value, dict(point.attributes)) for point in state.metric("healjson.attempts")]


def test_a_stream_abandoned_in_a_loop_counts_its_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller who breaks out of a healed stream and closes it: the call it made counts in
    `healjson.attempts`, and its span says it was abandoned."""
    with (
        installed(monkeypatch, Telemetry()) as state,
        ScriptedServer([ScriptedReply(content=LONG, chunk_chars=10)]) as server,
    ):
        abandoned_stream(server, API_KEY, SAID, Ticket)
    assert [(1, {"healjson.strategy": "initial"})] == counted(state)
    assert "abandoned" == failed_call(state).attributes["error.type"]


def test_an_async_stream_closed_early_counts_its_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """An async healed stream the caller closes after its first snapshot: its call counts."""

    async def main(server: ScriptedServer) -> None:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key=API_KEY, max_retries=0
        ) as sdk:
            stream = await healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, response_model=Ticket, stream=True
            )
            async for _ in stream:
                break
            await stream.aclose()

    with (
        installed(monkeypatch, Telemetry()) as state,
        ScriptedServer([ScriptedReply(content=LONG, chunk_chars=10)]) as server,
    ):
        asyncio.run(main(server))
    assert [(1, {"healjson.strategy": "initial"})] == counted(state)


def test_a_finished_stream_counts_its_call_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream read to its end counts its call once (the abandoned count is no second one)."""
    with (
        installed(monkeypatch, Telemetry()) as state,
        ScriptedServer([ScriptedReply(content=GOOD, chunk_chars=10)]) as server,
    ):
        sdk = openai.OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0)
        with sdk:
            stream = healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, response_model=Ticket, stream=True
            )
            for _ in stream:
                pass
    assert [(1, {"healjson.strategy": "initial"})] == counted(state)
