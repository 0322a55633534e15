"""`healjson.agents` delivers a healed value validated exactly once, and a tool runs only on
arguments the SDK's own validation reads as the contracts judged them: the real OpenAI Agents
SDK over real HTTP against `ScriptedServer` (and its own `validate_handler_final_output`).

A final output declared `output_type=HealedOutputSchema(T)` is the value `heal_final_output`
healed, itself (the SDK's second validation of a handler's output is skipped for it, so a
non-idempotent validator, dollars to cents, or a `SecretStr` survives); a plain `output_type`
still declines such a value. A tool's arguments are read once more the SDK's way (lax, from
Python data, no validation context) before the tool runs: a validator reading the run's context
cannot make healjson accept what the SDK refuses, nor have the contracts judge another value than
the one the tool gets.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, SecretStr, ValidationInfo

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    AgentOutputSchema,
    FunctionTool,
    ModelBehaviorError,
    OpenAIChatCompletionsModel,
    RunContextWrapper,
    RunErrorHandlerInput,
    Runner,
    function_tool,
)
from agents.items import ModelResponse  # noqa: E402
from agents.run_internal.error_handlers import (  # noqa: E402
    build_run_error_data,
    create_message_output_item,
    validate_handler_final_output,
)
from agents.tool_context import ToolContext  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai import AsyncOpenAI, DefaultAsyncHttpxClient  # noqa: E402

from healjson import Violation, contract  # noqa: E402
from healjson.agents import (  # noqa: E402
    ContractStopped,
    HealedOutputSchema,
    HealLog,
    heal_final_output,
    heal_tools,
)
from healjson.testing import ScriptedServer, corrupted  # noqa: E402
from integrations.test_agents_validated_once import (  # noqa: E402
    Cents,
    Receipt,
    run,
    tool_call,
    tool_results,
)
from sdk_calls import TLS  # noqa: E402

agents.set_tracing_disabled(True)

HANDLERS = {"invalid_final_output": heal_final_output()}
SLOPPY_RECEIPT = "Here it is: {'customer': 'Ada', 'amount_cents': 12.5,}"


def checked_handler(contracts: list[Any], **options: Any) -> Any:
    """`heal_final_output(contracts, ...)`, which warns that its contracts judge only the outputs
    the SDK refused (`contract_guardrail` judges every one)."""
    with pytest.warns(UserWarning, match="contract_guardrail"):
        return heal_final_output(contracts, **options)


@pytest.fixture(scope="module", autouse=True)
def _sdk_trace_exporter_closed() -> Iterator[None]:
    """The SDK's trace exporter (made on first use) is closed once this module's tests are
    done."""
    yield
    from agents.tracing.processors import default_exporter

    default_exporter().close()


def receipts(schema: Any) -> Any:
    return lambda model: Agent(name="shop", model=model, output_type=schema)


# ---------------------------------------------------------------------------------------------
# The final output: handed over as healjson validated it
# ---------------------------------------------------------------------------------------------


def test_a_healed_final_output_is_delivered_validated_once_under_the_healed_schema() -> None:
    """Under `HealedOutputSchema` the healed output is the run's final output with its
    validator applied once (1250 cents, not 125000), where a plain `output_type` declines it."""
    plain = run(receipts(Receipt), [SLOPPY_RECEIPT], error_handlers=HANDLERS)
    assert type(plain.error) is ModelBehaviorError

    log = HealLog()
    handlers = {"invalid_final_output": heal_final_output(log=log)}
    ran = run(receipts(HealedOutputSchema(Receipt)), [SLOPPY_RECEIPT], error_handlers=handlers)
    assert ran.error is None
    assert ran.result is not None
    assert ran.result.final_output.model_dump() == {"customer": "Ada", "amount_cents": 1250}
    assert len(ran.requests) == 1  # no re-ask
    [entry] = log.entries
    assert entry.healed
    assert json.loads(entry.value_json or "") == {"customer": "Ada", "amount_cents": 1250}


def test_the_final_output_is_the_very_value_the_contracts_judged() -> None:
    """The run's final output is the object healjson validated and its contracts judged (the
    same object, not a copy read back from its JSON)."""
    judged: list[Receipt] = []

    @contract(fields=("amount_cents",))
    def seen(receipt: Receipt) -> None:
        judged.append(receipt)

    handlers = {"invalid_final_output": checked_handler([seen])}
    ran = run(receipts(HealedOutputSchema(Receipt)), [SLOPPY_RECEIPT], error_handlers=handlers)
    assert ran.result is not None
    assert ran.result.final_output is judged[-1]


class Login(BaseModel):
    user: str
    password: SecretStr


def test_a_secret_survives_the_hand_over() -> None:
    """A `SecretStr` (its JSON is a mask) is delivered with its secret under
    `HealedOutputSchema`; a plain `output_type` declines it rather than deliver the mask."""
    reply = "```json\n{'user': 'ada', 'password': 'hunter2'}\n```"
    plain = run(receipts(Login), [reply], error_handlers=HANDLERS)
    assert type(plain.error) is ModelBehaviorError

    ran = run(receipts(HealedOutputSchema(Login)), [reply], error_handlers=HANDLERS)
    assert ran.result is not None
    assert ran.result.final_output.password.get_secret_value() == "hunter2"


def test_a_wrapped_output_type_is_handed_over_too() -> None:
    """A type the SDK wraps in `{"response": ...}` (a list) is handed over as healjson
    validated it: each price converted once."""
    schema = HealedOutputSchema(list[Cents])
    ran = run(receipts(schema), ["Prices: [12.5, 3,]"], error_handlers=HANDLERS)
    assert ran.error is None
    assert ran.result is not None
    assert ran.result.final_output == [1250, 300]


def test_the_healed_schema_is_the_sdks_for_the_model_and_for_clean_replies() -> None:
    """`HealedOutputSchema` sends the model the SDK's own JSON schema and validates a reply
    that needs no healing (or one no handler heals) exactly as the SDK's `AgentOutputSchema`."""
    clean = '{"customer": "Ada", "amount_cents": 12.5}'
    sdk = run(receipts(AgentOutputSchema(Receipt)), [clean])
    ours = run(receipts(HealedOutputSchema(Receipt)), [clean])
    assert sdk.result is not None
    assert ours.result is not None
    assert ours.result.final_output == sdk.result.final_output
    assert ours.result.final_output.amount_cents == 1250
    sent = [r.body.get("response_format") for r in (sdk.requests[0], ours.requests[0])]
    assert sent[0] is not None
    assert sent[0] == sent[1]
    broken = run(receipts(HealedOutputSchema(Receipt)), [SLOPPY_RECEIPT])
    assert type(broken.error) is ModelBehaviorError


def test_a_later_run_never_gets_a_value_handed_over_before() -> None:
    """A later run's reply whose text is exactly the JSON of a value handed over before is
    validated by the SDK as any reply (its validator runs: 125000), never given that value."""
    schema = HealedOutputSchema(Receipt)
    first = run(receipts(schema), [SLOPPY_RECEIPT], error_handlers=HANDLERS)
    assert first.result is not None
    assert first.result.final_output.amount_cents == 1250
    again = '{"customer":"Ada","amount_cents":1250}'  # the JSON the SDK made of it
    second = run(receipts(schema), [again], error_handlers=HANDLERS)
    assert second.result is not None
    assert second.result.final_output.amount_cents == 125_000


def test_a_streamed_run_gets_the_healed_output_validated_once() -> None:
    """`Runner.run_streamed` under `HealedOutputSchema`: the healed output is the run's final
    output with its validator applied once."""
    agent = Agent(name="shop", output_type=HealedOutputSchema(Receipt))

    async def go(base_url: str) -> Any:
        http = DefaultAsyncHttpxClient(verify=TLS)
        async with AsyncOpenAI(
            base_url=base_url, api_key="test", max_retries=0, http_client=http
        ) as client:
            model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
            streamed = Runner.run_streamed(
                agent.clone(model=model), "Charge Ada.", error_handlers=HANDLERS
            )
            async for _ in streamed.stream_events():
                pass
            return streamed.final_output

    with ScriptedServer([SLOPPY_RECEIPT]) as server:
        output = asyncio.run(go(server.base_url))
        assert all(request.streamed for request in server.requests)
    assert output.model_dump() == {"customer": "Ada", "amount_cents": 1250}


def handled(schema: Any, text: str) -> Any:
    """The SDK's own steps for a final output that fails validation: `heal_final_output` on the
    model's message, then `validate_handler_final_output` on its result (None: declined)."""
    agent: Agent[Any] = Agent(name="shop", output_type=schema)
    message = create_message_output_item(agent, text).raw_item
    response = ModelResponse(output=[message], usage=Usage(), response_id=None)
    data = build_run_error_data(
        input="Charge Ada.", new_items=[], raw_responses=[response], last_agent=agent
    )
    handler = heal_final_output()

    async def go() -> Any:
        result = await handler(
            RunErrorHandlerInput(ModelBehaviorError("invalid"), RunContextWrapper(None), data)
        )
        if result is None:
            return None
        return validate_handler_final_output(agent, result.final_output)

    return asyncio.run(go())


@settings(max_examples=30, deadline=None)
@given(data=st.data(), cents=st.integers(min_value=1, max_value=10**7), name=st.text(max_size=20))
def test_any_recoverable_final_output_is_converted_exactly_once(
    data: st.DataObject, cents: int, name: str
) -> None:
    """Any rendering of the output the way models break JSON: a recoverable one is the run's
    final output with its validator applied once (never twice), a cut one is declined."""
    broken = data.draw(corrupted({"customer": name, "amount_cents": cents / 100}))
    output = handled(HealedOutputSchema(Receipt), broken.text)
    if broken.recoverable:
        assert output.model_dump() == {"customer": name, "amount_cents": cents}
    else:
        assert output is None


# ---------------------------------------------------------------------------------------------
# Tool arguments: accepted only as the SDK reads them
# ---------------------------------------------------------------------------------------------


def within_budget(amount: int, info: ValidationInfo) -> int:
    """At most the context's `budget` (10 without a validation context, as the SDK reads)."""
    budget = (info.context or {}).get("budget", 10)
    if amount > budget:
        raise ValueError(f"must be at most {budget}")
    return amount


def scaled(amount: int, info: ValidationInfo) -> int:
    """Multiplied by the context's `factor` (1 without a validation context, as the SDK reads)."""
    return amount * (info.context or {}).get("factor", 1)


Budgeted = Annotated[int, AfterValidator(within_budget)]
Scaled = Annotated[int, AfterValidator(scaled)]


def spend_tool(ran_with: list[int], validator: Any) -> FunctionTool:
    """A `spend` tool whose `amount` carries `validator` (`within_budget` or `scaled`)."""
    if validator is within_budget:

        @function_tool
        def spend(amount: Budgeted) -> str:
            """Spend an amount."""
            ran_with.append(amount)
            return f"spent {amount}"

        return spend

    @function_tool(name_override="spend")
    def spend_scaled(amount: Scaled) -> str:
        """Spend an amount."""
        ran_with.append(amount)
        return f"spent {amount}"

    return spend_scaled


def test_arguments_the_sdk_refuses_are_told_to_the_model_not_run() -> None:
    """Arguments healjson's reading (the run's context as validation context) accepts but the
    SDK's (none) refuses are not handed on: the model reads what the SDK's validation said,
    with the fix, instead of the SDK's generic tool error, and its corrected call runs."""
    ran_with: list[int] = []
    log = HealLog()
    ran = run(
        lambda model: heal_tools(
            Agent(name="wallet", tools=[spend_tool(ran_with, within_budget)], model=model),
            log=log,
        ),
        [
            tool_call("{'amount': 50,}", name="spend"),
            tool_call('{"amount": 5}', "call_2", name="spend"),
            "done",
        ],
        context={"budget": 100},
    )
    assert ran.error is None
    assert ran_with == [5]
    [told] = tool_results(ran.requests[1])
    assert "must be at most 10" in told
    assert told.endswith("Call `spend` again with the arguments corrected (one JSON object).")
    assert [entry.healed for entry in log.entries] == [False]
    assert log.entries[0].diagnostics[0].path == "amount"


@contract(fields=("amount",))
def at_least_a_hundred(args: Any) -> Violation | None:
    """An amount of at least 100."""
    return Violation("amount must be at least 100") if args.amount < 100 else None


@contract(fields=("amount",), on_fail="stop")
def never_below_a_hundred(args: Any) -> Violation | None:
    """An amount below 100 is never sent again."""
    return Violation("amount must be at least 100") if args.amount < 100 else None


@pytest.mark.parametrize("arguments", ['{"amount": 5}', "{'amount': 5,}"], ids=["clean", "sloppy"])
def test_the_contracts_judge_the_value_the_tool_gets(arguments: str) -> None:
    """Where healjson's reading (500, the context's factor applied) and the SDK's (5) differ,
    the contracts judge the SDK's value, the one the tool would get: the call is refused with
    the rule, and the corrected call runs with the SDK's value."""
    ran_with: list[int] = []
    log = HealLog()
    ran = run(
        lambda model: heal_tools(
            Agent(name="wallet", tools=[spend_tool(ran_with, scaled)], model=model),
            {"spend": [at_least_a_hundred]},
            log=log,
        ),
        [
            tool_call(arguments, name="spend"),
            tool_call('{"amount": 200}', "call_2", name="spend"),
            "done",
        ],
        context={"factor": 100},
    )
    assert ran.error is None
    assert ran_with == [200]
    [told] = tool_results(ran.requests[1])
    assert "amount must be at least 100" in told
    assert [d.rule for d in log.entries[0].diagnostics] == ["at_least_a_hundred"]
    assert [d.value for d in log.entries[0].diagnostics] == [5]


def test_a_stop_rule_broken_by_the_value_the_tool_gets_ends_the_run() -> None:
    """A `"stop"` rule the SDK's reading of the arguments breaks (though healjson's reading
    passes it) ends the run with `ContractStopped`: the tool never runs."""
    ran_with: list[int] = []
    ran = run(
        lambda model: heal_tools(
            Agent(name="wallet", tools=[spend_tool(ran_with, scaled)], model=model),
            {"spend": [never_below_a_hundred]},
        ),
        [tool_call("{'amount': 5,}", name="spend"), "done"],
        context={"factor": 100},
    )
    assert isinstance(ran.error, ContractStopped)
    assert ran.error.rules == ("never_below_a_hundred",)
    assert ran_with == []
    assert len(ran.requests) == 1


@settings(max_examples=30, deadline=None)
@given(
    amount=st.integers(min_value=0, max_value=1000),
    factor=st.integers(min_value=1, max_value=10),
    sloppy=st.booleans(),
)
def test_a_tool_runs_only_on_a_value_the_contracts_passed(
    amount: int, factor: int, sloppy: bool
) -> None:
    """Whatever the run's context makes of healjson's reading, the tool runs exactly when the
    value the SDK gives it passes the contracts, and with that value."""
    ran_with: list[int] = []
    [tool] = heal_tools([spend_tool(ran_with, scaled)], {"spend": [at_least_a_hundred]})
    assert isinstance(tool, FunctionTool)
    text = f"{{'amount': {amount},}}" if sloppy else json.dumps({"amount": amount})
    ctx = ToolContext(
        context={"factor": factor}, tool_name="spend", tool_call_id="call_1", tool_arguments=text
    )
    result = asyncio.run(tool.on_invoke_tool(ctx, text))
    if amount >= 100:
        assert ran_with == [amount], result
    else:
        assert ran_with == []
        assert "amount must be at least 100" in str(result)
