"""`healjson.agents` hands on no value validated twice, and a contract that fails as code is the
caller's bug: the real OpenAI Agents SDK over real HTTP against `ScriptedServer`.

A tool's parameter (or an output's field) may carry a validator that is not idempotent: here
`dollars_to_cents`, the model writes dollars and the tool gets cents. Validated once, `12.5` is
1250; validated again, 125000. Clean arguments are validated once, by the SDK; healed ones must
be too (the SDK is handed the JSON data L1 read, never the value healjson validated from it).
The SDK validates a final output an error handler returns once more, from its JSON: the handler
hands on only a value that reading gives back. A contract that raises (or changes the value it
judges) ends the run with the SDK's `UserError`, as an exception from a tool's own code does:
it is never told to the model as the model's mistake.
"""

from __future__ import annotations

import asyncio
import functools
import json
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, BeforeValidator

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    FunctionTool,
    ModelBehaviorError,
    OutputGuardrailTripwireTriggered,
    UserError,
    function_tool,
)
from agents.tool_context import ToolContext  # noqa: E402

from agents_kit import run as run_agent  # noqa: E402
from agents_kit import sdk_trace_exporter_closed  # noqa: E402, F401
from healjson import Violation, contract  # noqa: E402
from healjson.agents import (  # noqa: E402
    ContractStopped,
    HealLog,
    contract_guardrail,
    heal_final_output,
    heal_tools,
)
from healjson.testing import ScriptedReply, corrupted  # noqa: E402

agents.set_tracing_disabled(True)


def checked_handler(contracts: list[Any], **options: Any) -> Any:
    """`heal_final_output(contracts, ...)`, which warns that its contracts judge only the outputs
    the SDK refused (`contract_guardrail` judges every one)."""
    with pytest.warns(UserWarning, match="contract_guardrail"):
        return heal_final_output(contracts, **options)


def dollars_to_cents(value: Any) -> int:
    """The model writes dollars; the value is cents (not idempotent: a second run is x100)."""
    return round(float(value) * 100)


Cents = Annotated[int, BeforeValidator(dollars_to_cents)]


class Receipt(BaseModel):
    customer: str
    amount_cents: Cents


@dataclass
class Charges:
    """What the `charge` tool was called with, and the arguments text its invoker received."""

    cents: list[int]
    texts: list[str]


def make_charge(charges: Charges, **options: Any) -> FunctionTool:
    @function_tool(**options)
    def charge(ctx: ToolContext[Any], customer: str, amount_cents: Cents) -> str:
        """Charge the customer; `amount_cents` is written in dollars."""
        charges.cents.append(amount_cents)
        charges.texts.append(ctx.tool_arguments)
        return f"charged {amount_cents} cents"

    return charge


def tool_call(arguments: str, call_id: str = "call_1", name: str = "charge") -> ScriptedReply:
    function = {"name": name, "arguments": arguments}
    return ScriptedReply(tool_calls=[{"id": call_id, "type": "function", "function": function}])


# every run asks the same: the kit's run, on this prompt
run = functools.partial(run_agent, prompt="Charge Ada 12.50 dollars.")


def tool_results(request: Any) -> list[str]:
    """The tool messages a chat request carries (what the model was told)."""
    return [str(m.get("content")) for m in request.body["messages"] if m.get("role") == "tool"]


CLEAN = '{"customer": "Ada", "amount_cents": 12.5}'
SLOPPY = {
    "single_quotes_trailing_comma": "{'customer': 'Ada', 'amount_cents': 12.5,}",
    "fenced": '```json\n{"customer": "Ada", "amount_cents": 12.5}\n```',
    "key_case": '{"Customer": "Ada", "amount_cents": 12.5}',
    "prose_around": 'Charging: {"customer": "Ada", "amount_cents": 12.5} now.',
    "quoted_number": "{'customer': 'Ada', 'amount_cents': '12.5'}",
}

# ---------------------------------------------------------------------------------------------
# Tool arguments: validated once, by the SDK
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sloppiness", sorted(SLOPPY))
def test_healed_tool_arguments_are_validated_once_as_clean_ones_are(sloppiness: str) -> None:
    """Healed arguments reach the tool validated once (1250 cents, as clean ones), and the log
    shows the arguments text the tool's invoker received."""
    clean = Charges([], [])
    alone = run(
        lambda model: Agent(name="shop", tools=[make_charge(clean)], model=model),
        [tool_call(CLEAN), "done"],
    )
    assert alone.error is None
    assert clean.cents == [1250]

    log = HealLog()
    healed = Charges([], [])
    ran = run(
        lambda model: heal_tools(
            Agent(name="shop", tools=[make_charge(healed)], model=model), log=log
        ),
        [tool_call(SLOPPY[sloppiness]), "done"],
    )
    assert ran.error is None
    assert len(ran.requests) == 2  # healed in place: no re-ask
    assert healed.cents == [1250]
    [entry] = log.entries
    assert entry.healed
    assert entry.value_json == healed.texts[0]  # what the tool's invoker was handed
    assert json.loads(entry.value_json)["customer"] == "Ada"


@contract(
    fields=("amount_cents",),
    on_fail="fix",
    fix=lambda a: a.model_copy(update={"amount_cents": 100_000}),
)
def at_most_a_thousand_dollars(args: Any) -> Violation | None:
    """A charge is at most 100000 cents; the fix caps it."""
    return Violation("at most 100000 cents") if args.amount_cents > 100_000 else None


def test_a_fixed_value_the_sdk_would_validate_into_another_is_asked_for_again() -> None:
    """A `fix` rule's value has no JSON the SDK reads back as it (its validator runs again on
    it: 100000 cents would become 10000000): it is not handed on; the model is told the rule it
    broke and the tool runs once, with the value the model then sent, validated once."""
    log = HealLog()
    charges = Charges([], [])
    ran = run(
        lambda model: heal_tools(
            Agent(name="shop", tools=[make_charge(charges)], model=model),
            {"charge": [at_most_a_thousand_dollars]},
            log=log,
        ),
        [
            tool_call("{'customer': 'Ada', 'amount_cents': 5000,}"),
            tool_call('{"customer": "Ada", "amount_cents": 1000}', "call_2"),
            "done",
        ],
    )
    assert ran.error is None
    assert charges.cents == [100_000]
    [told] = tool_results(ran.requests[1])
    assert "at_most_a_thousand_dollars" in told
    assert told.endswith("Call `charge` again with the arguments corrected (one JSON object).")
    assert [entry.healed for entry in log.entries] == [False]


class Search(BaseModel):
    query: str
    limit: int


@contract(fields=("limit",), on_fail="fix", fix=lambda a: a.model_copy(update={"limit": 50}))
def fifty_at_most(args: Any) -> Violation | None:
    """At most 50 results; the fix caps it."""
    return Violation("limit must be at most 50") if args.limit > 50 else None


def test_a_fixed_value_the_sdk_reads_back_as_it_is_handed_on() -> None:
    """A `fix` rule's value whose JSON the SDK reads back as the same value (no validator
    changes it) is handed on: the tool runs with the fixed value, no model call spent."""
    ran_with: list[tuple[str, int]] = []

    @function_tool
    def search(query: str, limit: int) -> str:
        """Search."""
        ran_with.append((query, limit))
        return "ok"

    ran = run(
        lambda model: heal_tools(
            Agent(name="finder", tools=[search], model=model), {"search": [fifty_at_most]}
        ),
        [tool_call("{'query': 'lamp', 'limit': 500,}", name="search"), "done"],
    )
    assert ran.error is None
    assert ran_with == [("lamp", 50)]
    assert len(ran.requests) == 2


# ---------------------------------------------------------------------------------------------
# The final output: the SDK validates a handler's output once more
# ---------------------------------------------------------------------------------------------


def shop(model: Any) -> Agent[Any]:
    return Agent(name="shop", model=model, output_type=Receipt)


def test_a_final_output_the_sdk_would_validate_into_another_value_is_not_handed_on() -> None:
    """The SDK validates a final output a handler returns once more (1250 cents would become
    125000): the handler declines it, and the SDK raises its own error as without healing,
    never a value validated twice."""
    reply = "Here it is: {'customer': 'Ada', 'amount_cents': 12.5,}"
    alone = run(shop, [reply])
    assert isinstance(alone.error, ModelBehaviorError)

    log = HealLog()
    ran = run(shop, [reply], error_handlers={"invalid_final_output": heal_final_output(log=log)})
    assert ran.result is None
    assert type(ran.error) is ModelBehaviorError
    assert len(ran.requests) == 1
    [entry] = log.entries
    assert not entry.healed
    assert "validates a final output a handler returns once more" in str(entry)


class Order(BaseModel):
    customer: str
    qty: int


def test_a_final_output_is_the_value_healjson_validated_and_judged() -> None:
    """A healed final output (a quoted number the strict SDK refuses) is the value healjson
    validated and its contracts judged (the SDK's own reading of it gives it back); the log
    shows its JSON."""
    judged: list[Order] = []

    @contract(fields=("qty",))
    def seen(order: Order) -> None:
        judged.append(order)

    log = HealLog()
    ran = run(
        lambda model: Agent(name="orders", model=model, output_type=Order),
        ['Sure: {"customer": "Ada", "qty": "3"}'],
        error_handlers={"invalid_final_output": checked_handler([seen], log=log)},
    )
    assert ran.error is None
    assert ran.result is not None
    assert ran.result.final_output == Order(customer="Ada", qty=3)
    assert ran.result.final_output == judged[-1]  # the SDK's reading of it gives it back
    [entry] = log.entries
    assert json.loads(entry.value_json or "") == {"customer": "Ada", "qty": 3}


@contract(fields=("amount_cents",))
def at_least_a_hundred_dollars(receipt: Receipt) -> Violation | None:
    """A charge is at least 10000 cents."""
    return Violation("at least 10000 cents") if receipt.amount_cents < 10_000 else None


@contract(fields=("amount_cents",))
def at_most_a_thousand(receipt: Receipt) -> Violation | None:
    """A charge is at most 100000 cents."""
    return Violation("at most 100000 cents") if receipt.amount_cents > 100_000 else None


@pytest.mark.parametrize(
    ("rule", "trips"), [(at_least_a_hundred_dollars, True), (at_most_a_thousand, False)]
)
def test_the_guardrail_judges_the_output_itself_not_its_json_read_again(
    rule: Any, trips: bool
) -> None:
    """The guardrail's contracts judge the output the SDK validated (1250 cents), not its JSON
    validated once more (125000): a breach is caught, a valid output passes."""
    ran = run(
        lambda model: Agent(
            name="shop",
            model=model,
            output_type=Receipt,
            output_guardrails=[contract_guardrail([rule])],
        ),
        [CLEAN],
    )
    if trips:
        assert isinstance(ran.error, OutputGuardrailTripwireTriggered)
        report = ran.error.guardrail_result.output.output_info
        assert report.diagnostics[0].value == 1250
    else:
        assert ran.error is None
        assert ran.result is not None
        assert ran.result.final_output.amount_cents == 1250


# ---------------------------------------------------------------------------------------------
# A contract that fails as code: the caller's bug, the SDK's UserError
# ---------------------------------------------------------------------------------------------


@contract(fields=("amount_cents",))
def divides_by_zero(args: Any) -> Violation | None:
    """A contract with a bug."""
    return Violation("never") if 1 / 0 else None


@contract(fields=("amount_cents",))
def changes_the_value(args: Any) -> Violation | None:
    """A contract with a bug: it changes the value it judges."""
    args.amount_cents = 1
    return None


FAILURE_FUNCTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "failures_end_the_run": {"failure_error_function": None},
    "custom": {"failure_error_function": lambda ctx, error: pytest.fail("told the model")},
}


@pytest.mark.parametrize("failure", sorted(FAILURE_FUNCTIONS))
@pytest.mark.parametrize("bug", [divides_by_zero, changes_the_value], ids=["raises", "mutates"])
@pytest.mark.parametrize("arguments", [CLEAN, SLOPPY["fenced"]], ids=["clean", "sloppy"])
def test_a_tool_contract_that_fails_as_code_ends_the_run_with_a_user_error(
    failure: str, bug: Any, arguments: str
) -> None:
    """A tool contract that raises or changes the value is the caller's bug: the run ends with
    `UserError` naming it, the tool never runs, and the model is never told to try again."""
    log = HealLog()
    charges = Charges([], [])
    ran = run(
        lambda model: heal_tools(
            Agent(
                name="shop",
                tools=[make_charge(charges, **FAILURE_FUNCTIONS[failure])],
                model=model,
            ),
            {"charge": [bug]},
            log=log,
        ),
        [tool_call(arguments), tool_call(CLEAN, "call_2"), "done"],
    )
    assert isinstance(ran.error, UserError)
    assert not isinstance(ran.error, ModelBehaviorError)
    assert f"contract `{bug.name}`" in str(ran.error)
    assert "tool `charge`" in str(ran.error)
    assert charges.cents == []
    assert len(ran.requests) == 1  # never asked again
    [entry] = log.entries
    assert not entry.healed
    assert entry.diagnostics[0].source == "contract_error"


@contract(fields=("qty",), on_fail="stop")
def no_bulk(order: Any) -> Violation | None:
    """More than 10 is never sent again."""
    return Violation("qty must be at most 10") if order.qty > 10 else None


@pytest.mark.parametrize("failure", sorted(FAILURE_FUNCTIONS))
@pytest.mark.parametrize(
    "arguments",
    ['{"customer": "Ada", "qty": 50}', "{'customer': 'Ada', 'qty': 50,}"],
    ids=["clean", "sloppy"],
)
def test_a_stop_rule_broken_by_the_tool_arguments_ends_the_run(
    failure: str, arguments: str
) -> None:
    """A `"stop"` rule the model's arguments break ends the run with `ContractStopped` (the
    SDK's `ModelBehaviorError`) naming the rule and the tool, whatever the tool's failure
    policy: the tool never runs and the model is never asked again."""
    log = HealLog()
    ran_with: list[int] = []

    @function_tool(**FAILURE_FUNCTIONS[failure])
    def order(customer: str, qty: int) -> str:
        """Order."""
        ran_with.append(qty)
        return "ok"

    ran = run(
        lambda model: heal_tools(
            Agent(name="orders", tools=[order], model=model), {"order": [no_bulk]}, log=log
        ),
        [
            tool_call(arguments, name="order"),
            tool_call('{"customer": "Ada", "qty": 5}', "call_2", name="order"),
            "done",
        ],
    )
    assert isinstance(ran.error, ContractStopped)
    assert isinstance(ran.error, ModelBehaviorError)
    assert not isinstance(ran.error, UserError)
    assert ran.error.rules == ("no_bulk",)
    assert [d.value for d in ran.error.diagnostics] == [50]
    assert "`no_bulk`" in str(ran.error)
    assert 'on_fail="stop"' in str(ran.error)
    assert "tool `order`" in str(ran.error)
    assert "qty must be at most 10" in str(ran.error)
    assert ran_with == []
    assert len(ran.requests) == 1  # never asked again
    [entry] = log.entries
    assert not entry.healed
    assert [d.rule for d in entry.diagnostics] == ["no_bulk"]


def test_a_reask_rule_broken_by_the_tool_arguments_is_told_to_the_model() -> None:
    """A `"reask"` rule (the default) the model's arguments break is the model's to correct:
    it reads the rule as the tool's result and the corrected call runs."""
    ran_with: list[int] = []

    @contract(fields=("qty",))
    def at_most_ten(order: Any) -> Violation | None:
        return Violation("qty must be at most 10") if order.qty > 10 else None

    @function_tool
    def order(customer: str, qty: int) -> str:
        """Order."""
        ran_with.append(qty)
        return "ok"

    ran = run(
        lambda model: heal_tools(
            Agent(name="orders", tools=[order], model=model), {"order": [at_most_ten]}
        ),
        [
            tool_call("{'customer': 'Ada', 'qty': 50,}", name="order"),
            tool_call('{"customer": "Ada", "qty": 5}', "call_2", name="order"),
            "done",
        ],
    )
    assert ran.error is None
    assert ran_with == [5]
    [told] = tool_results(ran.requests[1])
    assert "qty must be at most 10" in told


def test_a_stop_rule_broken_by_the_final_output_ends_the_run() -> None:
    """`heal_final_output`: a healed final output that breaks a `"stop"` rule is not handed on;
    the run ends with the SDK's `ModelBehaviorError` after one model call."""
    log = HealLog()
    ran = run(
        lambda model: Agent(name="orders", model=model, output_type=Order),
        ['```json\n{"customer": "Ada", "qty": 50}\n```', '{"customer": "Ada", "qty": 5}'],
        error_handlers={"invalid_final_output": checked_handler([no_bulk], log=log)},
    )
    assert isinstance(ran.error, ModelBehaviorError)
    assert len(ran.requests) == 1
    [entry] = log.entries
    assert [d.rule for d in entry.diagnostics] == ["no_bulk"]


def test_the_guardrail_trips_on_a_stop_rule() -> None:
    """`contract_guardrail`: a `"stop"` rule the final output breaks trips the guardrail, the
    rule in its report."""
    guard = contract_guardrail([no_bulk])
    ran = run(
        lambda model: Agent(
            name="orders", model=model, output_type=Order, output_guardrails=[guard]
        ),
        ['{"customer": "Ada", "qty": 50}', '{"customer": "Ada", "qty": 5}'],
    )
    assert isinstance(ran.error, OutputGuardrailTripwireTriggered)
    report = ran.error.guardrail_result.output.output_info
    assert [d.rule for d in report.diagnostics] == ["no_bulk"]
    assert len(ran.requests) == 1


@contract(fields=("qty",))
def order_bug(order: Order) -> Violation | None:
    """A contract with a bug."""
    raise KeyError("qty")


def test_a_final_output_contract_that_raises_ends_the_run_with_a_user_error() -> None:
    """`heal_final_output`: a contract that raises is the caller's bug, raised as the SDK's
    `UserError`, not the SDK's `ModelBehaviorError` about the model's output."""
    log = HealLog()
    ran = run(
        lambda model: Agent(name="orders", model=model, output_type=Order),
        ['```json\n{"customer": "Ada", "qty": 3}\n```'],
        error_handlers={"invalid_final_output": checked_handler([order_bug], log=log)},
    )
    assert isinstance(ran.error, UserError)
    assert len(ran.requests) == 1
    [entry] = log.entries
    assert entry.diagnostics[0].source == "contract_error"


def test_a_guardrail_contract_that_raises_ends_the_run_with_a_user_error() -> None:
    """`contract_guardrail`: a contract that raises is the caller's bug, raised as `UserError`,
    not a tripwire blaming the output."""
    guard = contract_guardrail([order_bug])
    ran = run(
        lambda model: Agent(
            name="orders", model=model, output_type=Order, output_guardrails=[guard]
        ),
        ['{"customer": "Ada", "qty": 3}'],
    )
    assert isinstance(ran.error, UserError)
    assert "contract `order_bug`" in str(ran.error)


@contract(fields=("qty",))
def rounds_the_order(order: Order) -> Violation | None:
    """A contract with a bug: it changes the output it judges."""
    order.qty = 10
    return None


def test_a_guardrail_contract_that_changes_the_output_ends_the_run_with_a_user_error() -> None:
    """`contract_guardrail`: a contract that changes the output it judges is the caller's bug,
    raised as `UserError` naming that contract, not a tripwire blaming the output."""
    log = HealLog()
    guard = contract_guardrail([rounds_the_order], log=log)
    ran = run(
        lambda model: Agent(
            name="orders", model=model, output_type=Order, output_guardrails=[guard]
        ),
        ['{"customer": "Ada", "qty": 3}'],
    )
    assert isinstance(ran.error, UserError)
    assert "contract `rounds_the_order` changed the value it checks" in str(ran.error)
    [entry] = log.entries
    [found] = entry.diagnostics
    assert (found.source, found.rule, found.value) == (
        "contract_error",
        "rounds_the_order",
        {
            "customer": "Ada",
            "qty": 3,
        },
    )


# ---------------------------------------------------------------------------------------------
# The property: any repairable rendering reaches the tool validated exactly once
# ---------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(data=st.data(), cents=st.integers(min_value=1, max_value=10**7), name=st.text(max_size=20))
def test_a_healed_tool_gets_exactly_one_application_of_its_validator(
    data: st.DataObject, cents: int, name: str
) -> None:
    """Any rendering of the arguments the way models break JSON: a recoverable one runs the tool
    with the model's dollars converted once (never twice), a cut one does not run it."""
    broken = data.draw(corrupted({"customer": name, "amount_cents": cents / 100}))
    charges = Charges([], [])
    [tool] = heal_tools([make_charge(charges)])
    assert isinstance(tool, FunctionTool)
    ctx = ToolContext(
        context=None, tool_name="charge", tool_call_id="call_1", tool_arguments=broken.text
    )
    result = asyncio.run(tool.on_invoke_tool(ctx, broken.text))
    if broken.recoverable:
        assert charges.cents == [cents], result
    else:
        assert charges.cents == []
