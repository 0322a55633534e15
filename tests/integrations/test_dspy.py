"""`healjson.dspy`: a real DSPy program (`dspy.Predict`, `dspy.LM("openai/...")`) over real
HTTP to `ScriptedServer`, with `HealAdapter`.

Each scenario scripts the LM's answers; the server's request count is the number of LM calls
the prediction spent. A malformation L1 repairs costs no call; what it cannot repair is asked
again with healjson's repair request (the model's answer as the assistant turn); what never
becomes valid raises DSPy's own `AdapterParseError`, with the outcome attached.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationInfo, field_validator

pytest.importorskip("dspy")

import dspy
from dspy.predict.predict import serialize_object
from dspy.utils.exceptions import AdapterParseError

from dspy_kit import MODES, Mode, Ran, predict
from healjson import Degraded, Flag, Healed, HealPolicy, Reason, Violation, contract
from healjson._frameworks.dspy_fields import read_fields
from healjson.dspy import HealAdapter, HealReport, outcome_of
from healjson.testing import ScriptedServer


@pytest.fixture(autouse=True)
def _bundled_model_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """DSPy reads LiteLLM's model map from the internet unless told to use its own copy."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class Item(BaseModel):
    name: str
    price: float

    @field_validator("price")
    @classmethod
    def _within_budget(cls, price: float, info: ValidationInfo) -> float:
        budget = (info.context or {}).get("budget")
        if budget is not None and price > budget:
            raise ValueError(f"must be at most {budget} (the budget)")
        return price


class Extract(dspy.Signature):
    """Extract the order from the text."""

    text: str = dspy.InputField()
    label: Literal["order", "question"] = dspy.OutputField()
    lines: list[Item] = dspy.OutputField()
    total: float = dspy.OutputField()


LINES = [{"name": "shoes", "price": 40.0}, {"name": "socks", "price": 2.5}]
LINES_TEXT = json.dumps(LINES)
EXPECTED_LINES = [Item.model_validate(line) for line in LINES]


def chat(
    *, label: str = "order", lines: str = LINES_TEXT, total: str = "42.5", header: str = "lines"
) -> str:
    """An answer in the chat adapter's format (`[[ ## field ## ]]` sections)."""
    return (
        f"[[ ## label ## ]]\n{label}\n\n[[ ## {header} ## ]]\n{lines}\n\n"
        f"[[ ## total ## ]]\n{total}\n\n[[ ## completed ## ]]"
    )


GOOD = chat()


def run(script: Sequence[Any], adapter: Any = None, *, mode: Mode = "sync") -> Ran:
    """`dspy.Predict(Extract)` on `script` (with `HealAdapter()` unless `adapter` is given)."""
    return predict(Extract, script, adapter, mode=mode, text="Two shoes and socks.")


# ---------------------------------------------------------------------------------------------
# Healed locally: one call
# ---------------------------------------------------------------------------------------------

CHAT_FAMILIES = {
    "fenced": chat(lines="```json\n" + LINES_TEXT + "\n```"),
    "prose_around": chat(lines="Here are the lines:\n" + LINES_TEXT + "\nThat is all."),
    "trailing_comma": chat(lines=LINES_TEXT[:-1] + ",]"),
    "header_case": chat(header="Lines"),
    "nested_key_case": chat(lines=LINES_TEXT.replace('"name"', '"Name"')),
    "json_string_in_field": chat(lines=json.dumps(LINES_TEXT)),
    "wrapped": chat(lines=json.dumps({"lines": LINES})),
    "literal_case": chat(label="ORDER"),
    "number_as_text": chat(total='"42.5"'),
}


@pytest.mark.parametrize("family", sorted(CHAT_FAMILIES))
@pytest.mark.parametrize("mode", MODES)
def test_each_malformation_in_a_field_is_healed_in_one_call(family: str, mode: Mode) -> None:
    """L1 and the alignments run on each output field: the typed values come out right."""
    ran = run([CHAT_FAMILIES[family]], mode=mode)
    assert ran.error is None
    assert 1 == ran.calls
    assert "order" == ran.prediction.label
    assert EXPECTED_LINES == ran.prediction.lines
    assert 42.5 == ran.prediction.total
    assert isinstance(ran.outcome, Healed)


JSON_FAMILIES = {
    "fenced": "```json\n" + json.dumps({"label": "order", "lines": LINES, "total": 42.5}) + "\n```",
    "key_case": json.dumps({"Label": "order", "LINES": LINES, "Total": 42.5}),
    "json_string_in_field": json.dumps({"label": "order", "lines": LINES_TEXT, "total": 42.5}),
    "wrapped": json.dumps({"output": {"label": "order", "lines": LINES, "total": 42.5}}),
}


@pytest.mark.parametrize("family", sorted(JSON_FAMILIES))
def test_the_json_adapter_is_healed_too(family: str) -> None:
    """Wrapping `JSONAdapter()`: a JSON answer's slips are healed in one call."""
    ran = run([JSON_FAMILIES[family]], HealAdapter(dspy.JSONAdapter()))
    assert ran.error is None
    assert 1 == ran.calls
    assert EXPECTED_LINES == ran.prediction.lines


def test_the_stock_json_adapter_fails_on_keys_in_another_case() -> None:
    """The baseline: DSPy's JSON adapter drops keys it does not know and raises."""
    ran = run([JSON_FAMILIES["key_case"]], dspy.JSONAdapter())
    assert ran.error is not None
    assert 1 == ran.calls


def test_the_stock_chat_adapter_reissues_the_generation_on_a_header_case() -> None:
    """The baseline: DSPy's chat adapter falls back to its JSON adapter, a whole new call."""
    ran = run([CHAT_FAMILIES["header_case"], JSON_FAMILIES["fenced"]], dspy.ChatAdapter())
    assert ran.error is None
    assert 2 == ran.calls


def test_the_flags_of_the_whole_answer_are_on_the_outcome() -> None:
    """A header in another case is aligned by the core (`keys_aligned` on the outcome)."""
    ran = run([CHAT_FAMILIES["header_case"]])
    assert Flag.KEYS_ALIGNED in ran.outcome.flags


# ---------------------------------------------------------------------------------------------
# Repaired with diagnostics, or failed as DSPy fails
# ---------------------------------------------------------------------------------------------


@contract(fields=("lines", "total"))
def total_is_the_sum(value: Any, ctx: Any) -> Violation | None:
    """The total is the sum of the lines' prices."""
    found = sum(line.price for line in value.lines)
    if abs(found - value.total) < 0.01:
        return None
    return Violation(f"must equal the sum of the prices ({found})", prescription="Fix the total.")


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_breach_is_repaired_with_the_answer_as_the_assistant_turn(mode: Mode) -> None:
    """A breach costs one repair call: the request's messages, the answer verbatim, the fix."""
    breach = chat(total="40")
    ran = run([breach, GOOD], HealAdapter(contracts=[total_is_the_sum]), mode=mode)
    assert ran.error is None
    assert 2 == ran.calls
    assert 42.5 == ran.prediction.total
    repair = ran.sent(2)
    assert ran.sent(1) == repair[:-2]
    assert {"role": "assistant", "content": breach} == repair[-2]
    assert "must equal the sum of the prices (42.5)" in repair[-1]["content"]
    assert ["total"] == list(ran.outcome.changed_fields)


def test_a_repair_answered_as_json_is_read_too() -> None:
    """The repair asks for the corrected value; a JSON object answer is read like the format."""
    ran = run(
        [chat(total="40"), JSON_FAMILIES["fenced"]], HealAdapter(contracts=[total_is_the_sum])
    )
    assert ran.error is None
    assert 42.5 == ran.prediction.total


def test_a_missing_field_is_asked_for_never_invented() -> None:
    """An answer without `total` is not completed locally: the model is asked, then gives it."""
    missing = "[[ ## label ## ]]\norder\n\n[[ ## lines ## ]]\n" + LINES_TEXT
    ran = run([missing, GOOD])
    assert 2 == ran.calls
    assert ["total"] == [d.path for d in ran.outcome.attempts[0].diagnostics]


@pytest.mark.parametrize("mode", MODES)
def test_a_never_valid_answer_raises_dspys_own_error_with_the_outcome(mode: Mode) -> None:
    """Three calls, then `AdapterParseError` (what DSPy programs and optimisers catch)."""
    ran = run([chat(total="a lot")] * 3, mode=mode)
    assert ran.error is not None
    assert 3 == ran.calls
    assert isinstance(ran.outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == ran.outcome.reason
    assert "total" in str(ran.error)


def test_the_policy_bounds_the_calls() -> None:
    """`HealPolicy(max_attempts=1)`: no repair call."""
    ran = run([chat(total="a lot")], HealAdapter(policy=HealPolicy(max_attempts=1)))
    assert 1 == ran.calls
    assert Reason.INVALID_OUTPUT == ran.outcome.reason


def test_the_context_reaches_the_validators() -> None:
    """`context=` is pydantic's validation context: a price over the budget is repaired."""
    cheap = chat(lines=json.dumps([{"name": "socks", "price": 2.5}]), total="2.5")
    ran = run([GOOD, cheap], HealAdapter(context={"budget": 10}))
    assert 2 == ran.calls
    assert "must be at most 10" in ran.sent(2)[-1]["content"]
    assert 2.5 == ran.prediction.total


def test_a_context_callable_is_given_the_inputs() -> None:
    """A callable `context=` receives the call's inputs."""
    seen: list[dict[str, Any]] = []

    def context(inputs: dict[str, Any]) -> dict[str, Any]:
        seen.append(inputs)
        return {}

    run([GOOD], HealAdapter(context=context))
    assert "Two shoes and socks." == seen[0]["text"]


# ---------------------------------------------------------------------------------------------
# The adapter in DSPy's world
# ---------------------------------------------------------------------------------------------


def test_parse_alone_heals_a_field_and_raises_dspys_error_when_it_cannot() -> None:
    """`adapter.parse` (DSPy's hook): healed fields, or `AdapterParseError` with the outcome."""
    adapter = HealAdapter()
    found = adapter.parse(Extract, CHAT_FAMILIES["prose_around"])
    assert EXPECTED_LINES == found["lines"]
    judged = HealAdapter(contracts=[total_is_the_sum]).parse(Extract, GOOD)
    assert 42.5 == judged["total"]
    with pytest.raises(AdapterParseError) as raised:
        adapter.parse(Extract, chat(total="a lot"))
    assert isinstance(raised.value.outcome, Degraded)  # type: ignore[attr-defined]


def test_the_report_saves_as_the_outcomes_data() -> None:
    """A prediction's `HealReport` serialises as DSPy saves demos: the outcome's JSON data."""
    ran = run([GOOD])
    report = ran.prediction.healjson_outcome
    assert isinstance(report, HealReport)
    data = serialize_object(report)
    assert ran.outcome.to_dict() == data
    assert isinstance(outcome_of({"healjson_outcome": data}), Healed)
    assert outcome_of(dspy.Prediction()) is None


def test_configuration_mistakes_raise_at_once() -> None:
    """A base that is no adapter, a double wrap, a wrong policy or context: said at once."""
    with pytest.raises(TypeError, match="DSPy adapter"):
        HealAdapter(base="chat")
    with pytest.raises(TypeError, match="once"):
        HealAdapter(HealAdapter())
    with pytest.raises(TypeError, match="HealPolicy"):
        HealAdapter(policy={"max_attempts": 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="context must be"):
        HealAdapter(context=3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# The field reader, over its input space
# ---------------------------------------------------------------------------------------------

READER_FIELDS = {"answer": str, "count": int, "tags": list[str]}


@settings(derandomize=True, max_examples=100)
@given(st.text())
def test_the_field_reader_never_raises_on_any_text(text: str) -> None:
    """Any answer text gives an object of known fields, or None (no header): never an error."""
    found = read_fields(text, READER_FIELDS)
    assert found is None or set(found) <= set(READER_FIELDS)


@settings(derandomize=True, max_examples=100)
@given(
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1).filter(
        lambda s: s.strip() == s and "[[" not in s
    ),
    st.integers(-(10**6), 10**6),
    st.lists(st.text(st.characters(categories=("L", "N")), min_size=1), max_size=4),
)
def test_the_field_reader_gives_back_what_the_chat_format_holds(
    answer: str, count: int, tags: list[str]
) -> None:
    """Each field rendered under its header is read back as the value it holds."""
    text = (
        f"[[ ## answer ## ]]\n{answer}\n\n[[ ## count ## ]]\n{count}\n\n"
        f"[[ ## tags ## ]]\n{json.dumps(tags)}\n\n[[ ## completed ## ]]"
    )
    assert {"answer": answer, "count": count, "tags": tags} == read_fields(text, READER_FIELDS)


def test_a_copied_adapter_heals_as_the_original() -> None:
    """A deep copy (as programs and settings are copied) keeps the base and heals one call."""
    import copy

    adapter = copy.deepcopy(HealAdapter())
    assert callable(adapter.user_message_output_requirements)  # the base's helpers, delegated
    ran = run([CHAT_FAMILIES["header_case"]], adapter)
    assert 1 == ran.calls
    assert EXPECTED_LINES == ran.prediction.lines


def test_an_empty_answer_is_asked_again() -> None:
    """An empty answer is no answer: the request goes again, then the answer is read."""
    ran = run(["", GOOD])
    assert 2 == ran.calls
    assert 42.5 == ran.prediction.total


@pytest.mark.parametrize("mode", MODES)
def test_several_generations_are_read_by_the_healed_parse(mode: Mode) -> None:
    """`n > 1`: each answer goes through the healed parse (no repair round)."""
    chosen = HealAdapter()
    with ScriptedServer([CHAT_FAMILIES["header_case"]], repeat=True) as server:
        lm = dspy.LM(
            "openai/scripted-model", api_base=server.base_url, api_key="sk-test", cache=False
        )
        predict = dspy.Predict(Extract)

        async def go() -> Any:
            try:
                with dspy.context(lm=lm, adapter=chosen):
                    return await predict.acall(text="Two shoes.", config={"n": 2})
            finally:
                await lm.aclose()

        if mode == "async":
            prediction = asyncio.run(go())
        else:
            try:
                with dspy.context(lm=lm, adapter=chosen):
                    prediction = predict(text="Two shoes.", config={"n": 2})
            finally:
                lm.close()
    assert EXPECTED_LINES == prediction.lines
    assert 2 == len(prediction.completions.lines)
