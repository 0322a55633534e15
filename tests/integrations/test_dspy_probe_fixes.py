"""`healjson.dspy`: what a probe of `HealAdapter` found, each as the rule it broke.

The wrapped adapter keeps every method `HealAdapter` does not implement (ReAct's formatting
helpers), and writes every request as it would alone (the JSON adapter's `response_format`); a
section's one-key object stands for the field's value only under the core's rule inside an
answer; a field said two ways is asked again, whether or not each value would validate; an
answer DSPy served from its cache costs nothing and says so.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Literal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

pytest.importorskip("dspy")

import dspy
from dspy.utils.exceptions import AdapterParseError

from dspy_kit import MODES, Mode, scripted_lm
from dspy_kit import predict as run
from healjson import Flag, HealPolicy, Source
from healjson._frameworks.core import names_the_value
from healjson._frameworks.dspy_fields import read_answer
from healjson.dspy import HealAdapter, outcome_of
from healjson.testing import ScriptedServer
from pinned import pinned


@pytest.fixture(autouse=True)
def _bundled_model_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """DSPy reads LiteLLM's model map from the internet unless told to use its own copy."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class Sum(dspy.Signature):
    """Add the numbers."""

    question: str = dspy.InputField()
    answer: int = dspy.OutputField()


class Pair(dspy.Signature):
    """Give two numbers."""

    text: str = dspy.InputField()
    a: int = dspy.OutputField()
    b: int = dspy.OutputField()


class Labelled(dspy.Signature):
    """Label and count."""

    text: str = dspy.InputField()
    label: Literal["spam", "ham"] = dspy.OutputField()
    total: int = dspy.OutputField()


def chat(**fields: str) -> str:
    """An answer in DSPy's chat format."""
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _program(adapter: Any, module: Any, script: list[str], **inputs: Any) -> tuple[Any, Any]:
    """`module(**inputs)` under `adapter` on `script`: its prediction and the LM's requests."""
    with ScriptedServer(script) as server:
        lm = scripted_lm(server)
        try:
            with dspy.context(lm=lm, adapter=adapter):
                prediction = module(**inputs)
        finally:
            lm.close()
        return prediction, server.requests


def _stripped(prediction: Any) -> dict[str, Any]:
    return {k: v for k, v in prediction.items() if k != "healjson_outcome"}


# ---------------------------------------------------------------------------------------------
# 1. The wrapped adapter's methods
# ---------------------------------------------------------------------------------------------

REACT = [
    chat(next_thought="add", next_tool_name="add", next_tool_args='{"a": 2, "b": 3}'),
    chat(next_thought="done", next_tool_name="finish", next_tool_args="{}"),
    chat(reasoning="2 + 3", answer="5"),
]


def test_react_with_a_tool_runs_as_under_the_chat_adapter() -> None:
    """`dspy.ReAct` with a tool gives under `HealAdapter` what it gives under `ChatAdapter`,
    with the same requests."""
    stock, stock_sent = _program(
        dspy.ChatAdapter(), dspy.ReAct(Sum, tools=[add], max_iters=3), REACT, question="2+3"
    )
    healed, healed_sent = _program(
        HealAdapter(), dspy.ReAct(Sum, tools=[add], max_iters=3), REACT, question="2+3"
    )
    assert 5 == healed.answer
    assert _stripped(stock) == _stripped(healed)
    assert [r.messages for r in stock_sent] == [r.messages for r in healed_sent]
    assert outcome_of(healed) is not None


def test_chain_of_thought_runs_as_under_the_chat_adapter() -> None:
    """`dspy.ChainOfThought` gives under `HealAdapter` what it gives under `ChatAdapter`."""
    script = [chat(reasoning="2 + 3", answer="5")]
    stock, _ = _program(dspy.ChatAdapter(), dspy.ChainOfThought(Sum), script, question="2+3")
    healed, _ = _program(HealAdapter(), dspy.ChainOfThought(Sum), script, question="2+3")
    assert {"reasoning": "2 + 3", "answer": 5} == _stripped(stock) == _stripped(healed)


FORMATTERS = sorted(
    name
    for name, member in vars(dspy.Adapter).items()
    if callable(member) and name.startswith("format_")
)


@pytest.mark.parametrize("name", FORMATTERS)
def test_every_formatting_helper_of_dspys_adapter_is_the_wrapped_adapters(name: str) -> None:
    """Each `format_*` method of the installed `dspy.Adapter` called on `HealAdapter` is the
    wrapped adapter's (never the base class's stub)."""
    base = dspy.ChatAdapter()
    seen: list[tuple[Any, ...]] = []
    setattr(base, name, lambda *args, **kwargs: seen.append(args) or f"base {name}")
    assert f"base {name}" == getattr(HealAdapter(base), name)(Sum, {"x": 1})
    assert [(Sum, {"x": 1})] == seen


# ---------------------------------------------------------------------------------------------
# 2. A section's one-key object
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_value_given_under_another_fields_name_is_not_taken(mode: Mode) -> None:
    """Section `a` holding `{"b": 2}` is not read as `a=2`: the model is asked again."""
    moved = '[[ ## a ## ]]\n{"b": 2}\n\n[[ ## b ## ]]\n7\n\n[[ ## completed ## ]]'
    ran = run(Pair, [moved, chat(a="1", b="7")], mode=mode)
    assert ran.error is None
    assert (1, 7, 2) == (ran.prediction.a, ran.prediction.b, ran.calls)
    assert Flag.UNWRAPPED not in ran.outcome.attempts[0].flags
    assert ["a"] == [d.path for d in ran.outcome.attempts[0].diagnostics]


@pytest.mark.parametrize("key", ["value", "RESULT", "a"])
def test_a_value_under_an_envelope_word_or_its_own_name_is_unwrapped(key: str) -> None:
    """Section `a` holding `{key: 2}` under an envelope word or `a` itself is `a=2`, one call."""
    ran = run(Pair, [chat(a=f'{{"{key}": 2}}', b="7")])
    assert (2, 7, 1) == (ran.prediction.a, ran.prediction.b, ran.calls)
    assert Flag.UNWRAPPED in ran.outcome.flags


NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True).filter(lambda n: n != "completed")
KEYS = st.one_of(
    st.sampled_from(["value", "Result", "DATA", "answer", "output", "b", "total", "fahrenheit"]),
    st.from_regex(r"[A-Za-z][A-Za-z0-9_ -]{0,11}", fullmatch=True),
)


@pinned(max_examples=75)
@given(NAMES, KEYS, st.integers(-(10**6), 10**6), st.booleans())
@example("a", "b", 2, False)
@example("a", "value", 2, False)
@example("total", "Total", 3, True)
def test_a_sections_one_key_object_is_the_value_only_when_its_key_names_it(
    name: str, key: str, number: int, own_case: bool
) -> None:
    """For any field name and wrapper key, a section's `{key: n}` is read as `n` exactly when
    the key is an envelope word (the core's rule) or the field's own name."""
    key = name.upper() if own_case else key
    text = f'[[ ## {name} ## ]]\n{{"{key}": {number}}}\n\n[[ ## completed ## ]]'
    found = read_answer(text, {name: int})
    assert found is not None
    own = key.replace("_", "").replace("-", "").replace(" ", "").lower() == name.replace("_", "")
    expected = own or names_the_value(key, frozenset(), False, number)
    value = found.objects[0][name]
    if expected:
        assert number == value
        assert Flag.UNWRAPPED in found.flags
    else:
        assert {key: number} == value
        assert Flag.UNWRAPPED not in found.flags


# ---------------------------------------------------------------------------------------------
# 3. A field said two ways
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_field_given_again_with_an_invalid_value_is_asked_again(mode: Mode) -> None:
    """`total: 5` then `total: about 7, not 5` is not read as 5: the model is asked again, told
    the field was given different values."""
    twice = "[[ ## label ## ]]\nspam\n\n[[ ## total ## ]]\n5\n\n"
    twice += "[[ ## total ## ]]\nabout 7, not 5\n\n[[ ## completed ## ]]"
    ran = run(Labelled, [twice, chat(label="ham", total="6")], mode=mode)
    assert ran.error is None
    assert ("ham", 6, 2) == (ran.prediction.label, ran.prediction.total, ran.calls)
    first = ran.outcome.attempts[0]
    assert ["total"] == [d.path for d in first.diagnostics]
    assert "given once" in first.diagnostics[0].constraint
    assert first.raw_text == twice


def test_a_literal_given_again_with_a_value_outside_it_is_asked_again() -> None:
    """`label: spam` then `label: neither, on reflection` is not read as `spam`."""
    twice = "[[ ## label ## ]]\nspam\n\n[[ ## total ## ]]\n5\n\n"
    twice += "[[ ## label ## ]]\nneither, on reflection\n\n[[ ## completed ## ]]"
    ran = run(Labelled, [twice, chat(label="ham", total="5")])
    assert ("ham", 2) == (ran.prediction.label, ran.calls)


def test_under_on_ambiguity_first_no_extra_rule_asks_again() -> None:
    """`on_ambiguity="first"` keeps its one call: the rule belongs to the default `reask`."""
    twice = "[[ ## label ## ]]\nspam\n\n[[ ## total ## ]]\n5\n\n[[ ## total ## ]]\n7\n\n"
    ran = run(Labelled, [twice], HealAdapter(policy=HealPolicy(on_ambiguity="first")))
    assert (5, 1) == (ran.prediction.total, ran.calls)


SAID = st.one_of(
    st.integers(-999, 999).map(str),
    st.tuples(st.integers(0, 99), st.integers(100, 199)).map(lambda p: f"about {p[0]}, not {p[1]}"),
)


@pinned(max_examples=60)
@given(SAID, SAID, st.sampled_from(["", " ", "  "]))
@example("5", "about 7, not 105", "")
@example("5", "5", " ")
def test_a_field_said_two_ways_is_never_resolved_silently(one: str, two: str, pad: str) -> None:
    """For any two sections of one field: the same text (after trimming) is that value; two
    different texts fail the one-answer parse (asked again in a run), valid or not."""
    text = f"[[ ## label ## ]]\nham\n\n[[ ## total ## ]]\n{one}\n\n"
    text += f"[[ ## total ## ]]\n{pad}{two}{pad}\n\n[[ ## completed ## ]]"
    adapter = HealAdapter()
    if one.strip() == two.strip():
        if one.lstrip("-").isdigit():
            assert int(one) == adapter.parse(Labelled, text)["total"]
        return
    with pytest.raises(AdapterParseError) as raised:
        adapter.parse(Labelled, text)
    errors = raised.value.outcome.errors  # type: ignore[attr-defined]
    assert errors
    if any(said.lstrip("-").isdigit() for said in (one, two)):  # one value fits: not taken
        assert {d.source for d in errors} <= {Source.AMBIGUITY, Source.CONTRACT}


# ---------------------------------------------------------------------------------------------
# 4. DSPy's cache
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_from_dspys_cache_costs_nothing(mode: Mode) -> None:
    """The second identical prediction with `dspy.LM(cache=True)` sends no request: its
    outcome counts no request and no token, one cache hit, its attempt a cache hit."""
    inputs = {"question": f"2+3 {uuid.uuid4()}"}
    with ScriptedServer([chat(answer="5")]) as server:
        lm = scripted_lm(server, cache=True)
        outcomes = []
        try:
            for _ in range(2):
                with dspy.context(lm=lm, adapter=HealAdapter()):
                    if mode == "sync":
                        prediction = dspy.Predict(Sum)(**inputs)
                    else:
                        prediction = asyncio.run(dspy.Predict(Sum).acall(**inputs))
                outcomes.append(outcome_of(prediction))
        finally:
            lm.close()
        assert 1 == len(server.requests)
    first, hit = outcomes
    assert (1, 0, False) == (
        first.usage.requests,
        first.usage.cache_hits,
        first.attempts[0].cache_hit,
    )
    assert first.usage.total_tokens > 0
    assert (0, 0, 1) == (hit.usage.requests, hit.usage.total_tokens, hit.usage.cache_hits)
    assert not hit.usage.estimated
    assert [True] == [a.cache_hit for a in hit.attempts]
    assert 0 == hit.calls


def test_a_repair_answered_from_dspys_cache_costs_nothing_either() -> None:
    """A prediction that needed a repair, made again with `dspy.LM(cache=True)`: both of its
    calls are served from DSPy's cache, so its outcome counts no request, two cache hits, and
    each attempt a cache hit."""
    inputs = {"question": f"2+3 {uuid.uuid4()}"}
    with ScriptedServer([chat(answer="five-ish"), chat(answer="5")]) as server:
        lm = scripted_lm(server, cache=True)
        outcomes = []
        try:
            for _ in range(2):
                with dspy.context(lm=lm, adapter=HealAdapter()):
                    outcomes.append(outcome_of(dspy.Predict(Sum)(**inputs)))
        finally:
            lm.close()
        assert 2 == len(server.requests)
    first, again = outcomes
    assert (2, 0, 2) == (first.usage.requests, first.usage.cache_hits, first.calls)
    assert (again.ok, again.value.answer) == (True, first.value.answer)
    assert (0, 0, 2) == (again.usage.requests, again.usage.total_tokens, again.usage.cache_hits)
    assert [True, True] == [a.cache_hit for a in again.attempts]
    assert 0 == again.calls


# ---------------------------------------------------------------------------------------------
# 5. The wrapped adapter writes every request
# ---------------------------------------------------------------------------------------------


def _first_request(adapter: Any, answer: str) -> dict[str, Any]:
    with ScriptedServer([answer]) as server:
        lm = dspy.LM(
            "openai/gpt-4o-mini",
            api_base=server.base_url,
            api_key="sk-test",
            cache=False,
            num_retries=0,
        )
        try:
            with dspy.context(lm=lm, adapter=adapter):
                dspy.Predict(Sum)(question="2+3")
        finally:
            lm.close()
        body = server.requests[0].body
        assert isinstance(body, dict)
        return body


@pytest.mark.parametrize(
    ("base", "answer"),
    [(dspy.JSONAdapter, '{"answer": 5}'), (dspy.ChatAdapter, chat(answer="5"))],
)
def test_the_wrapped_adapter_sends_the_request_it_sends_alone(base: Any, answer: str) -> None:
    """`HealAdapter(base)` sends the request `base` alone sends, byte for byte as JSON data
    (the JSON adapter's structured-output `response_format` included)."""
    alone = _first_request(base(), answer)
    healed = _first_request(HealAdapter(base()), answer)
    assert alone == healed
    if base is dspy.JSONAdapter:
        assert "json_schema" == healed["response_format"]["type"]
        assert healed["response_format"]["json_schema"]["strict"] is True


# ---------------------------------------------------------------------------------------------
# 6. Streaming
# ---------------------------------------------------------------------------------------------


def test_streamify_without_listeners_gives_the_healed_prediction() -> None:
    """`dspy.streamify` (no stream listener) under `HealAdapter` ends with the healed
    prediction and its outcome."""
    with ScriptedServer([chat(answer="five")]) as server:
        lm = scripted_lm(server)
        program = dspy.streamify(dspy.Predict(Sum))

        async def go() -> Any:
            final = None
            with dspy.context(lm=lm, adapter=HealAdapter()):
                async for chunk in program(question="2+3"):
                    if isinstance(chunk, dspy.Prediction):
                        final = chunk
            return final

        try:
            final = asyncio.run(go())
        finally:
            lm.close()
    assert 5 == final.answer
    assert Flag.NUMBER_WORD in outcome_of(final).flags
