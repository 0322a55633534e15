"""`healjson.dspy`: every path a prediction takes through `HealAdapter` treats it alike.

The `context=` callable is given the call's inputs on every path (one answer healed and
repaired, several generations, native tool calls read by DSPy's own pipeline), and an empty
dict when `parse` is called directly, outside a prediction. DSPy's adapter callbacks (the
global ones and the wrapped adapter's own) each see one `format` and one `parse` per answer,
as with the bare chat adapter: never a `format` twice, never a prediction without its `parse`.

A real `dspy.Predict` over a real `dspy.LM("openai/...")` talking HTTP to `ScriptedServer`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("dspy")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.exceptions import AdapterParseError

from dspy_kit import MODES, Mode
from healjson import Violation, contract
from healjson.dspy import HealAdapter, outcome_of
from healjson.testing import ScriptedReply, ScriptedServer

GOOD = "[[ ## label ## ]]\nbug\n\n[[ ## count ## ]]\n2\n\n[[ ## completed ## ]]"
WORDY = "[[ ## label ## ]]\nbug\n\n[[ ## count ## ]]\nmany\n\n[[ ## completed ## ]]"


class Count(dspy.Signature):
    """Count the bugs."""

    text: str = dspy.InputField()
    label: str = dspy.OutputField()
    count: int = dspy.OutputField()


class Limited(dspy.Signature):
    """Count."""

    text: str = dspy.InputField()
    count: int = dspy.OutputField()


class Weather(dspy.Signature):
    """Answer, calling tools."""

    question: str = dspy.InputField()
    tools: list[dspy.Tool] = dspy.InputField()
    answer: int = dspy.OutputField()
    calls: dspy.ToolCalls = dspy.OutputField()


class Events(BaseCallback):
    """The adapter and LM events a callback sees, in order."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.parsed: list[tuple[dict[str, Any], Any]] = []  # each parse's inputs and outputs

    def on_adapter_format_start(self, call_id: str, instance: Any, inputs: Any) -> None:
        self.seen.append(("format", type(instance).__name__))

    def on_lm_start(self, call_id: str, instance: Any, inputs: Any) -> None:
        self.seen.append(("lm",))

    def on_adapter_parse_start(self, call_id: str, instance: Any, inputs: Any) -> None:
        self.seen.append(("parse", type(instance).__name__))
        self.parsed.append((dict(inputs), None))

    def on_adapter_parse_end(self, call_id: str, outputs: Any, exception: Any = None) -> None:
        self.seen.append(("parsed", type(exception).__name__ if exception else None))
        self.parsed[-1] = (self.parsed[-1][0], outputs)

    def kinds(self) -> list[str]:
        return [event[0] for event in self.seen]


def predict(
    signature: Any,
    script: Sequence[Any],
    adapter: Any,
    *,
    mode: Mode = "sync",
    callbacks: Sequence[Any] = (),
    model: str = "openai/scripted-model",
    config: dict[str, Any] | None = None,
    repeat: bool = False,
    **inputs: Any,
) -> tuple[Any, AdapterParseError | None, int]:
    """One prediction of `signature` on `inputs` with `adapter` (and global `callbacks`):
    the prediction (or the `AdapterParseError`) and the number of model requests."""
    with ScriptedServer(script, repeat=repeat) as server:
        lm = dspy.LM(model, api_base=server.base_url, api_key="sk-test", cache=False, num_retries=0)
        program = dspy.Predict(signature, **(config or {}))
        prediction, error = None, None
        try:
            with dspy.context(lm=lm, adapter=adapter, callbacks=list(callbacks)):
                if mode == "sync":
                    prediction = program(**inputs)
                else:
                    prediction = asyncio.run(program.acall(**inputs))
        except AdapterParseError as exc:
            error = exc
        finally:
            lm.close()
        return prediction, error, len(server.requests)


class Seen:
    """A `context=` callable: the inputs it is given, and the limit it makes of them."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.given: list[dict[str, Any]] = []

    def __call__(self, inputs: dict[str, Any]) -> dict[str, Any]:
        self.given.append(dict(inputs))
        return {"limit": len(inputs[self.field])}


@contract
def within_limit(value: Any, ctx: Any) -> Violation | None:
    """The answer is at most the limit the call's inputs make."""
    found = getattr(value, "count", None)
    found = getattr(value, "answer", None) if found is None else found
    return Violation("over the limit", fields=()) if found > ctx.extra["limit"] else None


# -- the context callable is given the call's inputs on every path ----------------------------


@pytest.mark.parametrize("mode", MODES)
def test_several_generations_are_judged_with_the_calls_inputs(mode: Mode) -> None:
    """With `n=2`, each answer is judged with the context the call's inputs make: a valid
    answer is accepted and the callable never sees an empty dict."""
    seen = Seen("text")
    adapter = HealAdapter(contracts=[within_limit], context=seen)
    answer = "[[ ## count ## ]]\n5\n\n[[ ## completed ## ]]"
    prediction, error, _ = predict(
        Limited, [answer], adapter, mode=mode, config={"n": 2}, repeat=True, text="0123456789"
    )
    assert error is None
    assert [5, 5] == [completion.count for completion in prediction.completions]
    assert seen.given
    assert all({"text": "0123456789"} == given for given in seen.given)


def weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


@pytest.mark.parametrize("mode", MODES)
def test_native_tool_calls_are_judged_with_the_calls_inputs(mode: Mode) -> None:
    """With native tool calls (read by DSPy's own pipeline), the answer beside the calls is
    judged with the context the call's inputs make."""
    seen = Seen("question")
    base = dspy.ChatAdapter(use_native_function_calling=True)
    adapter = HealAdapter(base, contracts=[within_limit], context=seen)
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    reply = ScriptedReply(
        content="[[ ## answer ## ]]\n5\n\n[[ ## completed ## ]]", tool_calls=[call]
    )
    tools = [dspy.Tool(weather)]
    prediction, error, _ = predict(
        Weather,
        [reply],
        adapter,
        mode=mode,
        model="openai/gpt-4o-mini",
        question="Paris?",
        tools=tools,
    )
    assert error is None
    assert 5 == prediction.answer
    assert ["weather"] == [made.name for made in prediction.calls.tool_calls]
    assert [{"question": "Paris?", "tools": tools}] == seen.given


def test_a_direct_parse_gives_the_callable_an_empty_dict() -> None:
    """`parse` called directly, outside a prediction, gives the `context=` callable `{}`."""
    given: list[dict[str, Any]] = []

    def context(inputs: dict[str, Any]) -> dict[str, Any]:
        given.append(dict(inputs))
        return {"limit": 10}

    adapter = HealAdapter(contracts=[within_limit], context=context)
    assert {"count": 5} == adapter.parse(Limited, "[[ ## count ## ]]\n5\n\n[[ ## completed ## ]]")
    assert [{}] == given


# -- each callback sees one format and one parse per answer -----------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_each_callback_sees_one_format_and_one_parse_as_with_the_bare_adapter(mode: Mode) -> None:
    """A clean answer: the global callback and the base's own each see `format`, then `parse`
    once (the global one the LM call between them), as with a bare `ChatAdapter`."""
    bare = Events()
    predict(Count, [GOOD], dspy.ChatAdapter(), mode=mode, callbacks=[bare], text="x")
    spread, own = Events(), Events()
    adapter = HealAdapter(dspy.ChatAdapter(callbacks=[own]))
    prediction, error, _ = predict(Count, [GOOD], adapter, mode=mode, callbacks=[spread], text="x")
    assert error is None
    assert 2 == prediction.count
    assert ["format", "lm", "parse", "parsed"] == bare.kinds() == spread.kinds()
    assert ["format", "parse", "parsed"] == own.kinds()
    assert ("parsed", None) == spread.seen[-1]


def test_the_parse_event_carries_what_the_bare_adapters_does() -> None:
    """The parse event's inputs are the signature and the model's text, its outputs the
    output fields, as the bare adapter's."""
    bare, healed = Events(), Events()
    predict(Count, [GOOD], dspy.ChatAdapter(), callbacks=[bare], text="x")
    predict(Count, [GOOD], HealAdapter(), callbacks=[healed], text="x")
    (bare_inputs, bare_outputs), (inputs, outputs) = bare.parsed[0], healed.parsed[0]
    assert {"signature", "completion"} == set(inputs) == set(bare_inputs)
    assert GOOD == inputs["completion"] == bare_inputs["completion"]
    assert {"label": "bug", "count": 2} == outputs == bare_outputs


@pytest.mark.parametrize("mode", MODES)
def test_a_repaired_prediction_has_one_format_and_one_parse(mode: Mode) -> None:
    """An answer repaired by a second LM call: one `format`, both LM calls, one `parse` of the
    answer the prediction holds."""
    events = Events()
    prediction, error, requests = predict(
        Count, [WORDY, GOOD], HealAdapter(), mode=mode, callbacks=[events], text="x"
    )
    assert error is None
    assert 2 == requests
    assert 2 == outcome_of(prediction).calls
    assert ["format", "lm", "lm", "parse", "parsed"] == events.kinds()
    assert GOOD == events.parsed[0][0]["completion"]


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_prediction_reports_its_parse_failure(mode: Mode) -> None:
    """An answer that cannot be healed: one `parse` event, ended by the `AdapterParseError`
    the prediction raises."""
    events = Events()
    adapter = HealAdapter(dspy.ChatAdapter(use_json_adapter_fallback=False))
    _, error, requests = predict(
        Count, [WORDY] * 3, adapter, mode=mode, callbacks=[events], text="x"
    )
    assert error is not None
    assert 3 == requests
    assert ["format", "lm", "lm", "lm", "parse", "parsed"] == events.kinds()
    assert ("parsed", "AdapterParseError") == events.seen[-1]


def test_several_generations_have_one_format_and_a_parse_each() -> None:
    """With `n=2` (DSPy's own pipeline): one `format`, a `parse` per generation, each once."""
    events, own = Events(), Events()
    adapter = HealAdapter(dspy.ChatAdapter(callbacks=[own]))
    predict(Count, [GOOD], adapter, callbacks=[events], config={"n": 2}, repeat=True, text="x")
    assert 1 == events.kinds().count("format") == own.kinds().count("format")
    assert 2 == events.kinds().count("parse") == own.kinds().count("parse")


def test_a_json_adapter_base_formats_once() -> None:
    """Wrapping DSPy's JSON adapter (whose inherited `format` DSPy wraps twice): one `format`
    event, one `parse` event."""
    events = Events()
    answer = '{"label": "bug", "count": 2}'
    prediction, error, _ = predict(
        Count, [answer], HealAdapter(dspy.JSONAdapter()), callbacks=[events], text="x"
    )
    assert error is None
    assert 2 == prediction.count
    assert ["format", "lm", "parse", "parsed"] == events.kinds()


def test_the_adapters_callbacks_are_the_bases() -> None:
    """A `HealAdapter`'s callbacks are its base's: one list, each callback run once."""
    own = Events()
    base = dspy.ChatAdapter(callbacks=[own])
    adapter = HealAdapter(base)
    assert adapter.callbacks is base.callbacks
    assert [own] == adapter.callbacks
