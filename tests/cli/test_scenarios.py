"""`healjson._cli.scenarios`: `json_like`, the malformation classes, the built-in scenario set."""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Sequence
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Flag, Healed, Outcome, Reason, Source, Violation
from healjson._cli.demo_runs import GOOD, PROMPT, SupportTicket, urgent_tickets_explain
from healjson._cli.scenarios import (
    CLASSES,
    EvalScenario,
    builtin_scenarios,
    json_like,
    malformations,
)

# --- helpers --------------------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Equality that also tells True from 1, 1 from 1.0, and key order in objects."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
# Outside strict JSON, healjson's L1 recovers objects and arrays only: a bare `True`, `None` or
# `'text'` on its own is indistinguishable from a word of prose, so a lone scalar in Python or
# single-quoted spelling is genuinely ambiguous. Inside a container the same spellings must heal.
json_containers = st.lists(json_values, max_size=4) | st.dictionaries(
    st.text(max_size=8), json_values, max_size=4
)
SPELLINGS = [("'", "json"), ('"', "python"), ("'", "python")]


# --- json_like ------------------------------------------------------------------------------------


@settings(max_examples=75)
@given(value=json_values)
def test_json_like_defaults_are_json(value: Any) -> None:
    """With the defaults, json_like is json.dumps with ", " / ": " separators and loads back."""
    text = json_like(value)
    assert json.dumps(value, ensure_ascii=False, separators=(", ", ": ")) == text
    assert same(value, json.loads(text))


@settings(max_examples=40)
@given(value=json_values)
def test_json_like_with_indent_is_json(value: Any) -> None:
    """An indent keeps the text valid JSON, spread over lines when a container is not empty."""
    text = json_like(value, indent=2)
    assert same(value, json.loads(text))
    if isinstance(value, dict | list) and value:
        assert "\n" in text
    else:
        assert text == json_like(value)


@pytest.mark.parametrize(("quote", "literals"), SPELLINGS)
@settings(max_examples=40)
@given(value=json_containers)
def test_healjson_recovers_every_rendered_spelling(quote: str, literals: str, value: Any) -> None:
    """Single quotes and/or Python literals inside a container: healjson.parse gets the value."""
    text = json_like(value, quote=quote, literals=literals)
    result = healjson.parse(text)
    assert result.error is None
    assert same(value, result.value)


@pytest.mark.parametrize("quote", ['"', "'"])
@settings(max_examples=40)
@given(value=json_values)
def test_python_literals_are_python(quote: str, value: Any) -> None:
    """`literals="python"` writes a Python literal: ast.literal_eval reads the value back."""
    assert same(value, ast.literal_eval(json_like(value, quote=quote, literals="python")))


def test_json_like_examples() -> None:
    """Hand-checked spellings of the quotes, the escapes and the literals."""
    value = {"ok": [True, False, None], "n": 1.5, "s": 'it\'s "x"\\'}
    assert '{"ok": [true, false, null], "n": 1.5, "s": "it\'s \\"x\\"\\\\"}' == json_like(value)
    assert "{'ok': [true, false, null], 'n': 1.5, 's': 'it\\'s \"x\"\\\\'}" == json_like(
        value, quote="'"
    )
    assert '{"ok": [True, False, None], "n": 1.5, "s": "it\'s \\"x\\"\\\\"}' == json_like(
        value, literals="python"
    )
    assert "[\n  1,\n  {\n    'a': None\n  }\n]" == json_like(
        [1, {"a": None}], quote="'", literals="python", indent=2
    )
    assert '"é\\n"' == json_like("é\n")  # not ASCII-escaped; control characters are
    assert "{}" == json_like({}, indent=4)
    assert "[]" == json_like([], indent=4)


def test_json_like_tuples_and_non_string_keys() -> None:
    """Tuples are arrays; object keys are written as strings."""
    assert "[1, [2, 3]]" == json_like((1, (2, 3)))
    assert '{"1": "a", "None": true}' == json_like({1: "a", None: True})
    assert "{'1': 'a'}" == json_like({1: "a"}, quote="'")


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, [1, {"x": math.inf}], {"a": [math.nan]}]
)
def test_json_like_rejects_non_finite_floats(value: Any) -> None:
    """NaN and infinities have no JSON spelling, at any depth."""
    with pytest.raises(ValueError, match="cannot render"):
        json_like(value)
    with pytest.raises(ValueError, match="cannot render"):
        json_like(value, quote="'", literals="python")


@pytest.mark.parametrize(
    "value", [{1, 2}, b"bytes", object(), Decimal("1.5"), 1 + 2j, [1, {"a": frozenset()}]]
)
def test_json_like_rejects_unsupported_types(value: Any) -> None:
    """Anything that is not JSON data raises TypeError naming the type."""
    with pytest.raises(TypeError, match="cannot render"):
        json_like(value)


# --- malformations: a test model ------------------------------------------------------------------


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Order(BaseModel):
    count: int = Field(ge=0)
    paid: bool
    note: str | None = None
    lines: list[Line]


@healjson.contract(fields=("count", "lines"))
def count_matches_lines(order: Order, ctx: healjson.ContractContext) -> Violation | None:
    """The count is the number of order lines."""
    if order.count != len(order.lines):
        return Violation("count must equal the number of order lines")
    return None


RULES = (count_matches_lines,)
ORDER = {
    "count": 2,
    "paid": True,
    "note": None,
    "lines": [{"sku": "A-1", "qty": 1}, {"sku": 'B\'s "best"', "qty": 3}],
}
VIOLATION = {**ORDER, "count": 3}

FIXABLE = {
    # the class, and the flag that says healjson saw (and fixed) that malformation
    "fenced": Flag.CODE_FENCE,
    "prose": Flag.PROSE_AROUND,
    "trailing_comma": Flag.SYNTAX_REPAIRED,
    "single_quotes": Flag.SYNTAX_REPAIRED,
    "python_literals": Flag.SYNTAX_REPAIRED,
    "quoted_number": Flag.COERCED,
    "two_candidates": Flag.MULTIPLE_CANDIDATES,
}
FAILING = {
    # the class, and how the first reply must degrade
    "truncated": (Reason.TOKEN_TRUNCATED, Source.TRUNCATION),
    "schema_violation": (Reason.INVALID_OUTPUT, Source.SCHEMA),
    "contract_violation": (Reason.INVALID_OUTPUT, Source.CONTRACT),
}


def test_every_class_is_covered_here() -> None:
    """A new class in CLASSES must be added to the expectations of this file."""
    assert set(CLASSES) == set(FIXABLE) | set(FAILING) | {"valid"}
    assert len(set(CLASSES)) == len(CLASSES)


def outcome_of(
    reply: Any, target: Any, contracts: Sequence[Any], messages: Sequence[Any] = ()
) -> Outcome[Any]:
    """Run one scripted reply (text or reply fields) through healjson.validate."""
    if isinstance(reply, str):
        text, finish_reason = reply, None
    else:
        text, finish_reason = reply["content"], reply.get("finish_reason")
    return healjson.validate(
        text, target, contracts=contracts, context=list(messages), finish_reason=finish_reason
    )


def dumped(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def check_scenarios(
    scenarios: Sequence[EvalScenario],
    target: Any,
    contracts: Sequence[Any],
    good: Any,
    prefix: str = "",
) -> None:
    """What every derived scenario set must satisfy."""
    kinds = [s.kind for s in scenarios]
    assert [k for k in CLASSES if k in kinds] == kinds  # in CLASSES order, no duplicates
    assert "valid" in kinds
    assert ("truncated" in kinds) is isinstance(good, dict | list)  # a cut scalar is no cut
    for scenario in scenarios:
        assert f"{prefix}{scenario.kind}" == scenario.id
        assert scenario.has_expected
        assert good == scenario.expected
        assert (scenario.kind in FIXABLE) is scenario.locally_fixable
        assert len(scenario.replies) == (1 if scenario.kind == "valid" else 2)

        first = outcome_of(scenario.replies[0], target, contracts, scenario.messages)
        if scenario.kind in FIXABLE:
            assert isinstance(first, Healed), (scenario.kind, first)
            assert good == dumped(first.value), scenario.kind
            assert FIXABLE[scenario.kind] in first.flags, (scenario.kind, first.flags)
        elif scenario.kind == "valid":
            assert isinstance(first, Healed), first
            assert good == dumped(first.value)
            assert () == first.flags
        else:
            reason, source = FAILING[scenario.kind]
            assert isinstance(first, Degraded), (scenario.kind, first)
            assert reason is first.reason, scenario.kind
            assert source in {d.source for d in first.errors}, (scenario.kind, first.errors)

        last = outcome_of(scenario.replies[-1], target, contracts, scenario.messages)
        assert isinstance(last, Healed), (scenario.kind, last)
        assert good == dumped(last.value)
        assert () == last.flags


# --- malformations --------------------------------------------------------------------------------


def test_every_class_applies_to_a_rich_model() -> None:
    """An int, a bool, an optional (null) field, a nested list and a contract: all classes."""
    scenarios = malformations(ORDER, Order, violation=VIOLATION, contracts=RULES, prefix="order/")
    assert list(CLASSES) == [s.kind for s in scenarios]
    check_scenarios(scenarios, Order, RULES, ORDER, prefix="order/")


def test_failing_first_replies_fail_for_the_right_reason() -> None:
    """The contract violation names the broken rule; the truncated reply is a cut-off prefix."""
    scenarios = {
        s.kind: s for s in malformations(ORDER, Order, violation=VIOLATION, contracts=RULES)
    }
    broken = outcome_of(scenarios["contract_violation"].replies[0], Order, RULES)
    assert isinstance(broken, Degraded)
    assert {"count_matches_lines"} == {d.rule for d in broken.errors}
    # the violating reply passes the schema: without the contract it validates
    assert outcome_of(scenarios["contract_violation"].replies[0], Order, ()).ok
    assert VIOLATION == json.loads(scenarios["contract_violation"].replies[0])

    truncated = scenarios["truncated"].replies[0]
    assert isinstance(truncated, dict)
    assert "length" == truncated["finish_reason"]
    valid = scenarios["valid"].replies[0]
    assert valid.startswith(truncated["content"])
    assert len(truncated["content"]) < len(valid)

    # the schema violation is the good value with a required field missing
    missing = json.loads(scenarios["schema_violation"].replies[0])
    assert set(missing) < set(ORDER)
    assert all(ORDER[k] == v for k, v in missing.items())


def test_model_instance_as_good_value() -> None:
    """A pydantic instance gives the same scenarios as its JSON data."""
    from_instance = malformations(
        Order.model_validate(ORDER), Order, violation=VIOLATION, contracts=RULES
    )
    assert malformations(ORDER, Order, violation=VIOLATION, contracts=RULES) == from_instance


def test_no_prefix_means_the_kind_is_the_id() -> None:
    """Without a prefix the id is the class name."""
    for scenario in malformations(ORDER, Order, contracts=RULES):
        assert scenario.kind == scenario.id


class Tag(BaseModel):
    name: str
    active: bool
    labels: list[str]


class Memo(BaseModel):
    note: str | None = None
    qty: int


ALL_BUT = {
    "no violation given: no contract_violation": (
        ORDER,
        Order,
        RULES,
        [k for k in CLASSES if k != "contract_violation"],
    ),
    "no numbers: no quoted_number": (
        {"name": "urgent", "active": False, "labels": ["a", "b"]},
        Tag,
        (),
        [k for k in CLASSES if k not in {"quoted_number", "contract_violation"}],
    ),
    "no bools or null: no python_literals": (
        {"sku": "A-1", "qty": 2},
        Line,
        (),
        [k for k in CLASSES if k not in {"python_literals", "contract_violation"}],
    ),
    "first key optional: no two_candidates, no schema_violation": (
        {"note": "call back", "qty": 1},
        Memo,
        (),
        [
            k
            for k in CLASSES
            if k
            not in {"python_literals", "two_candidates", "schema_violation", "contract_violation"}
        ],
    ),
    "not an object, no strings: only the array classes": (
        [3, 4],
        list[int],
        (),
        ["fenced", "prose", "trailing_comma", "quoted_number", "truncated", "valid"],
    ),
    "strings but no numbers in an array": (
        ["x", "y"],
        list[str],
        (),
        ["fenced", "prose", "trailing_comma", "single_quotes", "truncated", "valid"],
    ),
}


@pytest.mark.parametrize(
    ("good", "target", "contracts", "kinds"), list(ALL_BUT.values()), ids=list(ALL_BUT)
)
def test_classes_that_do_not_apply_are_left_out(
    good: Any, target: Any, contracts: Sequence[Any], kinds: list[str]
) -> None:
    """Only classes whose malformation can be made from the good value are derived."""
    scenarios = malformations(good, target, contracts=contracts)
    assert kinds == [s.kind for s in scenarios]
    check_scenarios(scenarios, target, contracts, good)


@st.composite
def orders(draw: st.DrawFn) -> dict[str, Any]:
    lines = draw(
        st.lists(
            st.fixed_dictionaries({"sku": st.text(max_size=10), "qty": st.integers(1, 10**9)}),
            max_size=3,
        )
    )
    return {
        "count": len(lines),
        "paid": draw(st.booleans()),
        "note": draw(st.none() | st.text(max_size=10)),
        "lines": lines,
    }


@settings(max_examples=12)
@given(good=orders())
def test_first_replies_behave_as_their_class_for_any_order(good: dict[str, Any]) -> None:
    """Whatever the strings and numbers, each first reply heals or fails as its class says."""
    violation = {**good, "count": good["count"] + 1}
    scenarios = malformations(good, Order, violation=violation, contracts=RULES, prefix="p/")
    check_scenarios(scenarios, Order, RULES, good, prefix="p/")


@healjson.contract(fields=("sku",))
def sku_was_mentioned(line: Line, ctx: healjson.ContractContext) -> Violation | None:
    """The sku must appear in what the customer wrote."""
    if line.sku not in ctx.input_text:
        return Violation("the sku must be one the customer mentioned")
    return None


def test_messages_are_the_contract_context() -> None:
    """The messages reach the contracts (and are kept on every scenario)."""
    messages = [{"role": "user", "content": "Two of A-1, please."}]
    good = {"sku": "A-1", "qty": 2}
    scenarios = malformations(
        good,
        Line,
        contracts=(sku_was_mentioned,),
        messages=messages,
        violation={"sku": "Z-9", "qty": 2},
    )
    assert "contract_violation" in [s.kind for s in scenarios]
    for scenario in scenarios:
        assert tuple(messages) == scenario.messages
    check_scenarios(scenarios, Line, (sku_was_mentioned,), good)
    # without the messages the good value breaks the rule
    with pytest.raises(ValueError, match="good value"):
        malformations(good, Line, contracts=(sku_was_mentioned,))


def test_pack_names_the_contracts_of_every_row() -> None:
    """`pack` is recorded on each scenario (and in its row); it is None by default."""
    with_pack = malformations(ORDER, Order, contracts=RULES, pack="contracts/orders.py")
    assert {"contracts/orders.py"} == {s.contracts for s in with_pack}
    assert all(s.to_dict()["contracts"] == "contracts/orders.py" for s in with_pack)
    without = malformations(ORDER, Order, contracts=RULES)
    assert {None} == {s.contracts for s in without}
    assert all("contracts" not in s.to_dict() for s in without)
    assert {None} == {s.response_model for s in with_pack + without}


@pytest.mark.parametrize(
    "good",
    [
        {**ORDER, "count": -1},  # fails the schema (ge=0)
        {k: v for k, v in ORDER.items() if k != "paid"},  # a required field missing
        {**ORDER, "count": 5},  # passes the schema, breaks the contract
    ],
    ids=["schema-constraint", "missing-field", "breaks-contract"],
)
def test_invalid_good_value_raises(good: dict[str, Any]) -> None:
    """The good value must pass both the schema and the contracts."""
    with pytest.raises(ValueError, match="good value"):
        malformations(good, Order, contracts=RULES)


@pytest.mark.parametrize(
    ("violation", "contracts"),
    [
        ({**ORDER, "note": "a different note"}, RULES),  # keeps the contract
        ({**ORDER, "count": -3}, RULES),  # fails the schema
        ({"count": 3, "paid": True}, RULES),  # fails the schema (lines missing)
        (VIOLATION, ()),  # no contract to break
    ],
    ids=["keeps-contract", "schema-constraint", "missing-field", "no-contracts"],
)
def test_bad_violation_raises(violation: dict[str, Any], contracts: Sequence[Any]) -> None:
    """`violation` must pass the schema and break a contract."""
    with pytest.raises(ValueError, match="violation"):
        malformations(ORDER, Order, violation=violation, contracts=contracts)


@pytest.mark.parametrize(
    ("good", "target"),
    [(5, int), (True, bool), ("ok", str), (None, int | None)],
    ids=["int", "bool", "str", "null"],
)
def test_scalar_targets_first_replies_behave_as_their_class(good: Any, target: Any) -> None:
    """The class promise holds for scalars too: prose, quotes and cuts only apply to objects
    and arrays (a bare `'ok'` or a cut number is another answer, not a malformed one)."""
    scenarios = malformations(good, target)
    assert {s.kind for s in scenarios} <= {"fenced", "valid"}
    assert {"fenced", "valid"} <= {s.kind for s in scenarios}
    check_scenarios(scenarios, target, (), good)


# --- EvalScenario ---------------------------------------------------------------------------------

TRUNCATED_REPLY = MappingProxyType({"content": '{"a": ', "finish_reason": "length"})


def test_script_pads_with_the_last_reply() -> None:
    """`script(n)` repeats the last reply up to n and never drops replies."""
    scenario = EvalScenario(id="s", messages=(), replies=("first", TRUNCATED_REPLY, "last"))
    assert ["first", TRUNCATED_REPLY, "last", "last", "last"] == scenario.script(5)
    assert ["first", TRUNCATED_REPLY, "last"] == scenario.script(3)
    assert ["first", TRUNCATED_REPLY, "last"] == scenario.script(1)
    assert ["first", TRUNCATED_REPLY, "last"] == scenario.script(0)
    one = EvalScenario(id="t", messages=(), replies=(TRUNCATED_REPLY,))
    assert [TRUNCATED_REPLY] * 4 == one.script(4)
    padded = scenario.script(5)
    padded.append("extra")  # a fresh list: the scenario is untouched
    assert ("first", TRUNCATED_REPLY, "last") == scenario.replies


def test_script_without_replies_is_empty() -> None:
    """A scenario with no replies scripts nothing, whatever the number of calls."""
    assert [] == EvalScenario(id="s", messages=()).script(3)


def from_row(row: dict[str, Any]) -> EvalScenario:
    """Rebuild a scenario from its row, reading each key the way `to_dict` writes it."""
    return EvalScenario(
        id=row["id"],
        messages=tuple(row["messages"]),
        replies=tuple(row["replies"]),
        expected=row.get("expected"),
        has_expected="expected" in row,
        kind=row["kind"],
        locally_fixable=row.get("locally_fixable", False),
        contracts=row.get("contracts"),
        response_model=row.get("response_model"),
    )


def test_to_dict_round_trips_every_field() -> None:
    """A row holds every field, as JSON data."""
    scenario = EvalScenario(
        id="t/1",
        messages=({"role": "user", "content": "hi"},),
        replies=("x", TRUNCATED_REPLY),
        expected={"a": [1, None]},
        has_expected=True,
        kind="truncated",
        locally_fixable=True,
        contracts="contracts/p.py",
        response_model="models.py:Thing",
    )
    row = scenario.to_dict()
    assert {
        "id": "t/1",
        "kind": "truncated",
        "messages": [{"role": "user", "content": "hi"}],
        "contracts": "contracts/p.py",
        "response_model": "models.py:Thing",
        "replies": ["x", {"content": '{"a": ', "finish_reason": "length"}],
        "expected": {"a": [1, None]},
        "locally_fixable": True,
    } == row
    assert type(row["replies"][1]) is dict
    assert isinstance(row["messages"], list)
    assert scenario == from_row(json.loads(json.dumps(row)))


def test_to_dict_leaves_out_defaults() -> None:
    """Unset optional fields are not written; an expected None is, when it is expected."""
    assert {"id": "m", "kind": "", "messages": [], "replies": []} == EvalScenario(
        id="m", messages=()
    ).to_dict()
    row = EvalScenario(id="m", messages=(), expected=None, has_expected=True).to_dict()
    assert "expected" in row
    assert None is row["expected"]
    assert "locally_fixable" not in EvalScenario(id="m", messages=(), kind="valid").to_dict()


def test_derived_scenarios_round_trip_through_rows() -> None:
    """Every derived scenario survives a trip through a JSON row."""
    scenarios = malformations(
        ORDER,
        Order,
        violation=VIOLATION,
        contracts=RULES,
        messages=[{"role": "user", "content": "an order"}],
        pack="contracts/orders.py",
        prefix="o/",
    )
    for scenario in scenarios:
        assert scenario == from_row(json.loads(json.dumps(scenario.to_dict())))


# --- builtin_scenarios ----------------------------------------------------------------------------


def test_builtin_scenarios_are_the_demo_ticket() -> None:
    """The offline default: the demo's SupportTicket, its contract and its prompt."""
    scenarios, target, contracts = builtin_scenarios()
    assert SupportTicket is target
    assert 1 == len(contracts)
    assert urgent_tickets_explain is contracts[0]
    kinds = [s.kind for s in scenarios]
    assert len(set(kinds)) == len(kinds)
    assert len({s.id for s in scenarios}) == len(scenarios)
    # the demo ticket has no booleans or nulls, so python_literals does not apply
    assert [k for k in CLASSES if k != "python_literals"] == kinds
    for scenario in scenarios:
        assert scenario.id.startswith("ticket/")
        assert tuple(PROMPT) == scenario.messages
        assert json.loads(GOOD) == scenario.expected
    check_scenarios(scenarios, target, contracts, json.loads(GOOD), prefix="ticket/")


def test_builtin_contract_violation_breaks_the_demo_rule() -> None:
    """The built-in violation is the demo's Case #7: a short summary on an urgent ticket."""
    scenarios, target, contracts = builtin_scenarios()
    (scenario,) = [s for s in scenarios if s.kind == "contract_violation"]
    outcome = outcome_of(scenario.replies[0], target, contracts, scenario.messages)
    assert isinstance(outcome, Degraded)
    assert {"urgent_tickets_explain"} == {d.rule for d in outcome.errors}


def test_builtin_scenarios_are_deterministic() -> None:
    """Two calls give the same scenarios."""
    assert builtin_scenarios()[0] == builtin_scenarios()[0]
