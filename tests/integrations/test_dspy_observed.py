"""`healjson.dspy`: what a DSPy run shows while it runs is the model's own text.

The healer reads each chat-format answer itself (its reply reader), so the events
(`healjson.testing.capture_events`), the OpenTelemetry spans (the real SDK, in-memory exporter)
and the records of a repair's request show what the LM returned, with each field's local
repairs on the attempt's flags: for a first-try heal, a repaired run and a degraded run, over a
real `dspy.LM("openai/...")` talking HTTP to `ScriptedServer`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan

pytest.importorskip("dspy")

import dspy
from dspy.utils.exceptions import AdapterParseError

from dspy_kit import MODES, Mode, Ran, predict, scripted_lm
from healjson import Degraded, Flag, Healed, Reason
from healjson.dspy import HealAdapter, outcome_of
from healjson.testing import ScriptedServer, capture_events
from otel_kit import Telemetry, installed

FENCE = "`" * 3


@pytest.fixture(autouse=True)
def _bundled_model_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """DSPy reads LiteLLM's model map from the internet unless told to use its own copy."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class Spans(Telemetry):
    """An OpenTelemetry SDK's in-memory record of healjson's spans (`otel_kit`)."""

    def attempts(self) -> list[ReadableSpan]:
        """Each call's span under the one run span, in the order the calls were made."""
        [run] = self.runs()
        return sorted(self.children(run), key=lambda s: s.start_time or 0)

    def outputs(self) -> list[str]:
        """The model's output each call's span recorded."""
        return [_content(span, "gen_ai.output.messages")[-1]["content"] for span in self.attempts()]


def _content(span: ReadableSpan, name: str) -> list[dict[str, Any]]:
    found = json.loads(str((span.attributes or {})[name]))
    assert isinstance(found, list)
    return found


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spans]:
    """A configured OpenTelemetry SDK recording message content (as the GenAI conventions'
    opt-in says), handed to healjson through the API's provider lookup."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    with installed(monkeypatch, Spans()) as state:
        yield state


class Ticket(dspy.Signature):
    """Triage the ticket."""

    text: str = dspy.InputField()
    note: str = dspy.OutputField()
    kind: Literal["bug", "question"] = dspy.OutputField()
    count: int = dspy.OutputField()


def chat(*, note: str = "It crashes.", kind: str = "bug", count: str = "2") -> str:
    """An answer in the chat adapter's format."""
    return (
        f"[[ ## note ## ]]\n{note}\n\n[[ ## kind ## ]]\n{kind}\n\n"
        f"[[ ## count ## ]]\n{count}\n\n[[ ## completed ## ]]"
    )


GOOD = chat()
REPAIRED = chat(kind="BUG", count=f"{FENCE}\ntwo\n{FENCE}")  # enum_case, number_word, fence
NEVER = chat(count="a lot")

SCENARIOS: dict[str, list[str]] = {
    "first_try": [REPAIRED],
    "repaired": [chat(kind="BUG", count="a lot"), chat(count="two")],
    "degraded": [NEVER, NEVER, NEVER],
}


def run(script: Sequence[str], mode: Mode = "sync") -> tuple[Ran, list[dict[str, Any]]]:
    """One prediction of `Ticket` on `script`, with the events it sent (their content too)."""
    with capture_events(include_content=True) as events:
        ran = predict(Ticket, script, mode=mode)
    return ran, events


def attempt_events(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == "healjson.attempt"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_attempts_event_shows_the_models_text_and_its_fields_repairs(
    scenario: str, mode: Mode
) -> None:
    """Each `healjson.attempt` event carries the text the LM returned for that call, and the
    flags its fields' local repairs raised (the attempt's own)."""
    script = SCENARIOS[scenario]
    ran, events = run(script, mode)
    outcome = ran.outcome
    assert len(script) == ran.calls == len(outcome.attempts)
    seen = attempt_events(events)
    assert script == [event["raw_text"] for event in seen]
    assert [[str(flag) for flag in a.flags] for a in outcome.attempts] == [
        event["flags"] for event in seen
    ]
    assert script == [a.raw_text for a in outcome.attempts]
    assert script[-1] == outcome.raw_text
    if scenario == "degraded":
        assert isinstance(outcome, Degraded)
        assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
        assert "healjson.degraded" == events[-1]["event"]
    else:
        assert isinstance(outcome, Healed)
        assert [str(flag) for flag in outcome.flags] == events[-1]["flags"]


def test_a_first_try_heals_events_name_each_fields_local_repairs() -> None:
    """The local repairs made to the fields' sections are on the attempt's event, its
    `healjson.local_repair` event and the `healjson.healed` event."""
    _, events = run(SCENARIOS["first_try"])
    expected = {str(flag) for flag in (Flag.ENUM_CASE, Flag.NUMBER_WORD, Flag.CODE_FENCE)}
    [attempt] = attempt_events(events)
    [local] = [event for event in events if event["event"] == "healjson.local_repair"]
    assert expected <= set(attempt["flags"]) == set(local["flags"]) == set(events[-1]["flags"])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_calls_span_shows_the_models_text(spans: Spans, scenario: str, mode: Mode) -> None:
    """Each call's span records the text the LM returned as its output, and its flags."""
    script = SCENARIOS[scenario]
    ran = predict(Ticket, script, mode=mode)
    assert script == spans.outputs()
    flags = [list((span.attributes or {})["healjson.flags"]) for span in spans.attempts()]
    assert [[str(flag) for flag in a.flags] for a in ran.outcome.attempts] == flags


@pytest.mark.parametrize("scenario", ["repaired", "degraded"])
def test_a_repairs_recorded_request_is_the_one_the_lm_received(spans: Spans, scenario: str) -> None:
    """A repair's assistant turn quotes the model's text: in the request the LM received, in
    the attempt's record, in its span, in the repair request's own record."""
    script = SCENARIOS[scenario]
    ran = predict(Ticket, script)
    for number in range(2, len(script) + 1):
        quoted = {"role": "assistant", "content": script[number - 2]}
        attempt = ran.outcome.attempts[number - 1]
        assert quoted == ran.sent(number)[-2] == attempt.messages[-2]
        assert script[number - 2] == attempt.prompt.raw_output
        assert quoted == _content(spans.attempts()[number - 1], "gen_ai.input.messages")[-2]


def test_dspys_parse_hook_emits_the_models_text() -> None:
    """`adapter.parse` (DSPy's own hook) judges the text in hand: its event shows that text."""
    with capture_events(include_content=True) as events:
        with pytest.raises(AdapterParseError):
            HealAdapter().parse(Ticket, NEVER)
        HealAdapter().parse(Ticket, REPAIRED)
    assert [NEVER, REPAIRED] == [event["raw_text"] for event in attempt_events(events)]


# ---------------------------------------------------------------------------------------------
# Over generated chat-format answers
# ---------------------------------------------------------------------------------------------

NOTES = st.text("abcdefghijklmnop qrstuvwxyz.,!?", min_size=1, max_size=30).filter(
    lambda s: s.strip() == s
)
KINDS = st.sampled_from(["bug", "BUG", "Bug", "question", "QUESTION", "feature"])
COUNTS = st.integers(-(10**6), 10**6).flatmap(
    lambda n: st.sampled_from(
        [str(n), f'"{n}"', f"{FENCE}\n{n}\n{FENCE}", f"{n} items", "many", "two"]
    )
)


def header(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([name, name.upper(), name.title()]).map(lambda h: f"[[ ## {h} ## ]]")


SECTIONS = st.tuples(
    header("note"), NOTES, header("kind"), KINDS, header("count"), COUNTS, st.booleans()
).map(
    lambda p: (
        f"{p[0]}\n{p[1]}\n\n{p[2]}\n{p[3]}\n\n{p[4]}\n{p[5]}\n\n"
        + ("[[ ## completed ## ]]" if p[6] else "")
    )
)


def test_the_raw_text_recorded_anywhere_is_what_the_lm_returned(spans: Spans) -> None:
    """For any chat-format answer (headers in any case, values that read, need a local repair
    or fail), every record of every call — the outcome's and each attempt's `raw_text`, the
    attempt events, the call spans, the repair's quoted turn — is the text the LM returned."""
    answers: list[str] = []
    returned: list[str] = []

    def reply(_: Any) -> str:
        returned.append(answers.pop(0))
        return returned[-1]

    with ScriptedServer([reply], repeat=True) as server:
        lm = scripted_lm(server)

        @settings(max_examples=20, deadline=None)
        @given(SECTIONS)
        def check(text: str) -> None:
            answers[:] = [text, text, GOOD]
            returned.clear()
            spans.clear()
            before = len(server.requests)
            with (
                capture_events(include_content=True) as events,
                dspy.context(lm=lm, adapter=HealAdapter()),
            ):
                try:
                    outcome = outcome_of(dspy.Predict(Ticket)(text="q"))
                except AdapterParseError as exc:
                    outcome = exc.outcome  # type: ignore[attr-defined]
            assert outcome is not None
            assert len(returned) == len(server.requests) - before == len(outcome.attempts)
            assert returned == [a.raw_text for a in outcome.attempts]
            assert returned[-1] == outcome.raw_text
            assert returned == [event["raw_text"] for event in attempt_events(events)]
            assert returned == spans.outputs()
            for earlier, attempt in zip(returned, outcome.attempts[1:], strict=False):
                assert earlier == attempt.messages[-2]["content"]

        try:
            check()
        finally:
            lm.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_run_without_listeners_heals_as_one_with_them(mode: Mode) -> None:
    """Nothing listening (no events, no spans): the same outcome, the model's text its
    `raw_text`, the fields' repairs its flags."""
    ran = predict(Ticket, SCENARIOS["first_try"], mode=mode)
    observed, _ = run(SCENARIOS["first_try"], mode)
    assert ran.outcome.flags == observed.outcome.flags
    assert REPAIRED == ran.outcome.raw_text == ran.outcome.attempts[0].raw_text
    assert (ran.prediction.kind, ran.prediction.count) == ("bug", 2)
