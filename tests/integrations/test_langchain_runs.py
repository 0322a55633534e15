"""`healjson.langchain`: each model call of a step is a call of a healjson run, the first one
included, driven by the core's drivers.

A real LangChain v1 agent (`create_agent`) with `ChatOpenAI` over real HTTP to
`ScriptedServer`: a provider's failure or a cut answer on the agent's first call degrades as on
a repair, the policy's deadline covers it, the run's parameters (`escalate_model`) reach the
request, and a union `ToolStrategy`'s structured response is the member whose tool the model
called, healed against that member alone; with OpenTelemetry on, a step whose first answer is
handed on has the spans of one run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from healjson import Degraded, Healed, HealPolicy, Reason
from healjson.langchain import OUTCOME_KEY, TOOL_OUTCOME_KEY, HealMiddleware
from healjson.testing import ScriptedReply, ScriptedServer
from otel_kit import Telemetry, installed

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")


class Report(BaseModel):
    summary: str
    hits: int


class Ship(BaseModel):
    order_id: str


class Refund(BaseModel):
    order_id: str
    amount: float


GOOD = '{"summary": "red shoes: 5", "hits": 5}'


def call(name: str, arguments: str, call_id: str = "call_1", delay_s: float = 0.0) -> ScriptedReply:
    """One turn calling tool `name` with `arguments` (sent verbatim)."""
    function = {"name": name, "arguments": arguments}
    return ScriptedReply(
        tool_calls=[{"id": call_id, "type": "function", "function": function}],
        finish_reason="tool_calls",
        delay_s=delay_s,
    )


@dataclass
class Ran:
    result: dict[str, Any]
    requests: list[Any]
    seconds: float

    @property
    def outcome(self) -> Any:
        return self.result.get(OUTCOME_KEY)

    def tools_offered(self, number: int) -> list[str]:
        """The tool names of model request `number` (1-based)."""
        body = self.requests[number - 1].body
        return [entry["function"]["name"] for entry in body.get("tools", ())]


def run(
    script: Sequence[Any],
    *,
    response_format: Any = None,
    middleware: HealMiddleware | Sequence[Any] | None = None,
    mode: Mode = "sync",
    with_tools: bool = False,
    base_url: str | None = None,
    model_name: str = "scripted-model",
    **model_options: Any,
) -> Ran:
    """The agent on `script`, its model `ChatOpenAI` on the scripted server (or `base_url`)."""

    @tool
    def search(query: str, limit: int) -> str:
        """Search the shop."""
        return f"{limit} hits for {query}"

    if middleware is None or isinstance(middleware, HealMiddleware):
        chosen = [middleware or HealMiddleware()]
    else:
        chosen = list(middleware)
    tools = [search] if with_tools else []
    message = {"messages": [{"role": "user", "content": "Find red shoes."}]}
    options = {"model": model_name, "api_key": "sk-test", "max_retries": 0, **model_options}
    with ScriptedServer(script) as server:
        url = base_url or server.base_url
        began = time.perf_counter()
        if mode == "sync":
            with httpx.Client() as http:
                model = ChatOpenAI(base_url=url, http_client=http, **options)
                agent = create_agent(
                    model, tools=tools, response_format=response_format, middleware=chosen
                )
                result = agent.invoke(message)
        else:

            async def go() -> dict[str, Any]:
                async with httpx.AsyncClient() as http:
                    model = ChatOpenAI(base_url=url, http_async_client=http, **options)
                    agent = create_agent(
                        model, tools=tools, response_format=response_format, middleware=chosen
                    )
                    found: dict[str, Any] = await agent.ainvoke(message)
                    return found

            result = asyncio.run(go())
        return Ran(result, list(server.requests), time.perf_counter() - began)


# ---------------------------------------------------------------------------------------------
# The first call is a call of the run: the provider's failures degrade, the deadline holds
# ---------------------------------------------------------------------------------------------

FIRST_CALL_FAILURES = {
    "http_500": (ScriptedReply.error(500, "boom"), {}, Reason.API_ERROR),
    "http_429": (ScriptedReply.error(429, "slow down"), {}, Reason.API_ERROR),
    "http_502_html": (
        ScriptedReply(status=502, body="<html>Bad gateway</html>", content_type="text/html"),
        {},
        Reason.API_ERROR,
    ),
    "read_timeout": (ScriptedReply(content=GOOD, delay_s=2), {"timeout": 0.3}, Reason.TIMEOUT),
    "cut_by_the_token_limit": (
        ScriptedReply(content='{"summary": "The fir', finish_reason="length"),
        {},
        Reason.TOKEN_TRUNCATED,
    ),
    "content_filter": (
        ScriptedReply(content="", finish_reason="content_filter"),
        {},
        Reason.CONTENT_FILTER,
    ),
}


@pytest.mark.parametrize("case", sorted(FIRST_CALL_FAILURES))
@pytest.mark.parametrize("mode", MODES)
def test_a_failure_on_the_first_call_degrades_as_on_a_repair(case: str, mode: Mode) -> None:
    """The provider's failure (or a cut or filtered answer LangChain raises on) on the agent's
    first model call ends the step as `Degraded` with the failure's reason, never raising."""
    reply, options, reason = FIRST_CALL_FAILURES[case]
    ran = run([reply], response_format=ProviderStrategy(Report), mode=mode, **options)
    assert ran.result.get("structured_response") is None
    assert isinstance(ran.outcome, Degraded)
    assert reason == ran.outcome.reason
    assert 1 == ran.outcome.calls
    last = ran.result["messages"][-1]
    assert isinstance(last, AIMessage)
    assert f"({reason})" in last.text  # the step's message says why it ended


@pytest.mark.parametrize("mode", MODES)
def test_an_unreachable_provider_degrades_the_first_call(mode: Mode) -> None:
    """A refused connection on the first call is `Degraded` (`api_error`), not an exception."""
    ran = run([], response_format=ToolStrategy(Report), mode=mode, base_url="http://127.0.0.1:9/v1")
    assert isinstance(ran.outcome, Degraded)
    assert Reason.API_ERROR == ran.outcome.reason


@pytest.mark.parametrize("mode", MODES)
def test_a_refusal_langchain_raises_on_is_the_runs_refusal(mode: Mode) -> None:
    """`ModelRefusalMiddleware` (inside healjson's) raises on a refusal: the step degrades with
    `refusal`, as it does on a refusal LangChain hands back."""
    from langchain.agents.middleware.model_refusal import ModelRefusalMiddleware

    ran = run(
        [ScriptedReply(refusal="I can't help with that.")],
        response_format=ToolStrategy(Report),
        middleware=[HealMiddleware(), ModelRefusalMiddleware()],
        mode=mode,
    )
    assert isinstance(ran.outcome, Degraded)
    assert Reason.REFUSAL == ran.outcome.reason
    assert 1 == len(ran.requests)


def test_a_first_call_failure_of_an_agent_with_tools_only_degrades_its_tool_calls() -> None:
    """Without a response format, the step's run is its tool calls': the failure degrades it."""
    ran = run([ScriptedReply.error(500, "boom")], with_tools=True)
    outcome = ran.result[TOOL_OUTCOME_KEY]
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert outcome is ran.outcome


NO_REPLY_BODIES = {
    "html_page": ("<html><body>Sign in to the proxy</body></html>", "text/html"),
    "empty": ("", "text/html"),
    "json_list": ("[1, 2]", "application/json"),
    "json_string": ('"ok"', "application/json"),
    "object_without_choices": ('{"unexpected": 1}', "application/json"),
}
STRATEGIES = {"tool": ToolStrategy(Report), "provider": ProviderStrategy(Report)}


@pytest.mark.parametrize("body", sorted(NO_REPLY_BODIES))
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
@pytest.mark.parametrize("mode", MODES)
def test_a_200_body_that_is_no_reply_is_the_providers_failure(
    body: str, strategy: str, mode: Mode
) -> None:
    """An HTTP 200 whose body is no chat completion (a proxy's HTML page, an empty body, JSON of
    another shape) ends the step `Degraded` with `api_error`, whatever the chat model raised."""
    text, content_type = NO_REPLY_BODIES[body]
    page = ScriptedReply(status=200, body=text, content_type=content_type)
    ran = run([page], response_format=STRATEGIES[strategy], mode=mode)
    assert ran.result.get("structured_response") is None
    assert isinstance(ran.outcome, Degraded)
    assert Reason.API_ERROR == ran.outcome.reason
    assert 1 == ran.outcome.calls
    assert "HTTP 200" in str(ran.outcome.attempts[0].error)


@pytest.mark.parametrize("mode", MODES)
def test_a_200_page_on_a_repair_call_degrades_after_it(mode: Mode) -> None:
    """A proxy page answered to a repair call is that call's failure: `api_error` after two
    calls, never an exception."""
    page = ScriptedReply(status=200, body="<html>proxy</html>", content_type="text/html")
    ran = run([call("Report", '{"summary": "x"}'), page], response_format=ToolStrategy(Report))
    assert isinstance(ran.outcome, Degraded)
    assert Reason.API_ERROR == ran.outcome.reason
    assert 2 == ran.outcome.calls


class Buggy(AgentMiddleware):  # type: ignore[type-arg]
    """A middleware inside healjson's with a bug of its own: it raises `ValueError`, before or
    after the model call."""

    def __init__(self, after: bool) -> None:
        super().__init__()
        self.after = after

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        if self.after:
            handler(request)
        raise ValueError("a bug in the caller's middleware")

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        if self.after:
            await handler(request)
        raise ValueError("a bug in the caller's middleware")


@pytest.mark.parametrize("after", [False, True], ids=["before-the-call", "after-a-reply"])
@pytest.mark.parametrize("mode", MODES)
def test_the_callers_own_value_error_still_propagates(after: bool, mode: Mode) -> None:
    """A `ValueError` raised by the caller's own code in the model call (a middleware inside
    healjson's) propagates unchanged, whether the provider answered a reply or a proxy page."""
    for reply in (call("Report", GOOD), ScriptedReply(status=200, body="<html>x</html>")):
        with pytest.raises(ValueError, match="a bug in the caller's middleware"):
            run(
                [reply],
                response_format=ToolStrategy(Report),
                middleware=[HealMiddleware(), Buggy(after and reply.status != 200)],
                mode=mode,
            )


@pytest.mark.parametrize("mode", MODES)
def test_the_deadline_bounds_the_first_call(mode: Mode) -> None:
    """`HealPolicy(deadline_s=1)`: a first answer 3 s away ends the step at the deadline."""
    slow = call("Report", GOOD, delay_s=3)
    middleware = HealMiddleware(policy=HealPolicy(deadline_s=1))
    ran = run([slow], response_format=ToolStrategy(Report), middleware=middleware, mode=mode)
    assert ran.seconds < 2.5
    assert isinstance(ran.outcome, Degraded)
    assert Reason.TIMEOUT == ran.outcome.reason


def test_a_first_answer_handed_to_the_tool_calls_run_keeps_its_latency() -> None:
    """A first turn calling the agent's tools (made before its run was known) is recorded with
    the time it took, and the deadline counts it: the run is the step's, not a second one."""
    broken = call("search", '{"query": "shoes"}', "call_a", delay_s=0.4)
    script = [
        broken,
        call("search", '{"query": "shoes", "limit": 2}', "call_b"),
        call("Report", GOOD),
    ]
    ran = run(script, response_format=ToolStrategy(Report), with_tools=True)
    outcome = ran.result[TOOL_OUTCOME_KEY]
    assert isinstance(outcome, Healed)
    assert outcome.attempts[0].latency_s >= 0.4
    assert 2 == outcome.calls


def test_the_deadline_counts_the_first_call_of_a_handed_over_run() -> None:
    """A first turn for the tools' run that took most of the deadline leaves its repair only
    what is left: the step ends at the deadline, not one deadline after the first call."""
    broken = call("search", '{"query": "shoes"}', "call_a", delay_s=0.8)
    slow = call("search", '{"query": "shoes", "limit": 2}', "call_b", delay_s=3)
    middleware = HealMiddleware(policy=HealPolicy(deadline_s=1.2))
    ran = run(
        [broken, slow], response_format=ToolStrategy(Report), middleware=middleware, with_tools=True
    )
    assert ran.seconds < 2.0
    assert Reason.TIMEOUT == ran.result[TOOL_OUTCOME_KEY].reason


# ---------------------------------------------------------------------------------------------
# The run's parameters reach the request
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_escalate_model_is_the_last_requests_model(mode: Mode) -> None:
    """`HealPolicy(escalate_model=...)`: the last attempt's request names that model, as its
    record says."""
    script = [call("Report", "nope", "c1"), call("Report", "nope", "c2"), call("Report", GOOD)]
    middleware = HealMiddleware(policy=HealPolicy(escalate_model="gpt-4o"))
    ran = run(
        script,
        response_format=ToolStrategy(Report),
        middleware=middleware,
        mode=mode,
        model_name="small-model",
    )
    assert ["small-model", "small-model", "gpt-4o"] == [r.body["model"] for r in ran.requests]
    assert [{}, {}, {"model": "gpt-4o"}] == [a.params for a in ran.outcome.attempts]
    assert isinstance(ran.outcome, Healed)


# ---------------------------------------------------------------------------------------------
# A union's structured response is the member whose tool the model called
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_union_members_call_is_healed_against_that_member(mode: Mode) -> None:
    """A `Refund` call without its `amount` is never a `Ship`: the repair offers the `Refund`
    tool alone, and its answer is the structured response."""
    script = [
        call("Refund", '{"order_id": "A1"}', "c1"),
        call("Refund", '{"order_id": "A1", "amount": 12.5}', "c2"),
    ]
    ran = run(script, response_format=ToolStrategy(Ship | Refund), mode=mode)
    assert Refund(order_id="A1", amount=12.5) == ran.result["structured_response"]
    assert 2 == len(ran.requests)
    assert ["amount"] == [d.path for d in ran.outcome.attempts[0].diagnostics]
    assert {"Ship", "Refund"} == set(ran.tools_offered(1))
    assert ["Refund"] == ran.tools_offered(2)
    assert "Refund" == ran.result["messages"][-1].name


class Hold(BaseModel):
    order_id: str


class Cancel(BaseModel):
    order_id: str
    note: str = ""


UNION_CALLS = {
    # both members accept the arguments; pydantic's union alone would pick the other one
    "a_ship_call_with_an_extra_key": (Ship | Refund, "Ship", '{"order_id": "A1", "amount": 1}'),
    "a_cancel_call_tying_with_hold": (Hold | Cancel, "Cancel", '{"order_id": "A1"}'),
}


@pytest.mark.parametrize("case", sorted(UNION_CALLS))
def test_a_complete_union_call_is_the_member_it_names(case: str) -> None:
    """Arguments two members accept are the member whose tool was called, in one call."""
    union, name, arguments = UNION_CALLS[case]
    ran = run([call(name, arguments)], response_format=ToolStrategy(union))
    assert name == type(ran.result["structured_response"]).__name__
    assert 1 == len(ran.requests)


def test_a_contract_of_a_union_applies_to_the_members_with_its_fields() -> None:
    """A rule over `amount` judges a `Refund`; a `Ship` (no such field) is not its to judge."""
    from healjson import Violation, contract

    @contract(fields=("amount",))
    def positive(value: Any, ctx: Any) -> Violation | None:
        return None if value.amount > 0 else Violation("must be > 0", prescription="Use > 0.")

    middleware = HealMiddleware(contracts=[positive])
    refund = run(
        [call("Refund", '{"order_id": "A1", "amount": -1}', "c1")] * 3,
        response_format=ToolStrategy(Ship | Refund),
        middleware=middleware,
    )
    assert isinstance(refund.outcome, Degraded)
    ship = run(
        [call("Ship", '{"order_id": "A1"}')],
        response_format=ToolStrategy(Ship | Refund),
        middleware=HealMiddleware(contracts=[positive]),
    )
    assert Ship(order_id="A1") == ship.result["structured_response"]


# ---------------------------------------------------------------------------------------------
# Spans: a step whose first answer is handed on has the spans of one run
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """A configured OpenTelemetry SDK (the real one, exporting to memory), as an application
    would set one up (`otel_kit`)."""
    with installed(monkeypatch, Telemetry()) as state:
        yield state


def step_spans(state: Telemetry) -> list[tuple[str, Any, list[tuple[str, Any]]]]:
    """Each run span as `(name, outcome, [(call span name, its ok), ...])`, in start order;
    asserts every span is a run span or a call span of one, ended without error unless its
    run degraded, and that nothing is left as the current span."""
    found = state.finished()
    runs = sorted(
        (s for s in found if s.name.startswith("healjson.heal")), key=lambda s: s.start_time or 0
    )
    ids = {run.context.span_id for run in runs if run.context is not None}
    calls = [s for s in found if s not in runs]
    assert all(s.parent is not None and s.parent.span_id in ids for s in calls)
    assert all(run.parent is None for run in runs)  # none nested under another's call
    out = []
    for run in runs:
        attributes = dict(run.attributes or {})
        assert run.context is not None
        mine = sorted(
            (s for s in calls if s.parent is not None and s.parent.span_id == run.context.span_id),
            key=lambda s: s.start_time or 0,
        )
        assert all(s.status.status_code is StatusCode.UNSET for s in mine)
        failed = attributes.get("healjson.outcome") == "degraded"
        assert (run.status.status_code is StatusCode.ERROR) == failed
        shown = [(s.name, dict(s.attributes or {}).get("healjson.ok")) for s in mine]
        out.append((run.name, attributes.get("healjson.outcome"), shown))
    assert not trace.get_current_span().get_span_context().is_valid
    return out


@pytest.mark.parametrize("mode", MODES)
def test_a_union_members_step_has_the_spans_of_one_run(spans: Telemetry, mode: Mode) -> None:
    """A first answer calling one member's tool (made in the union's run, handed on to the
    member's) gives one run span, the member's, with its outcome and id, and one call span per
    model call: as a plain run of that member does."""
    script = [
        call("Refund", '{"order_id": "A1"}', "c1"),
        call("Refund", '{"order_id": "A1", "amount": 12.5}', "c2"),
    ]
    ran = run(script, response_format=ToolStrategy(Ship | Refund), mode=mode)
    assert isinstance(ran.outcome, Healed)
    handed = step_spans(spans)
    assert [("healjson.heal Refund", "healed", [("chat", False), ("chat", True)])] == handed
    [span] = [s for s in spans.finished() if s.name.startswith("healjson.heal")]
    attributes = dict(span.attributes or {})
    assert (ran.outcome.run_id, "Refund") == (
        attributes["healjson.run_id"],
        attributes["healjson.target"],
    )

    spans.clear()
    plain = run(script, response_format=ToolStrategy(Refund), mode=mode)
    assert isinstance(plain.outcome, Healed)
    assert handed == step_spans(spans)


@pytest.mark.parametrize("mode", MODES)
def test_a_first_answer_handed_to_the_tool_calls_run_has_its_spans(
    spans: Telemetry, mode: Mode
) -> None:
    """A first answer calling the agent's tools (made in the structured response's run) is the
    tool calls' run's first call span: two runs in all, each with its outcome and its calls,
    none left without an outcome."""
    script = [
        call("search", '{"query": "shoes"}', "call_a"),
        call("search", '{"query": "shoes", "limit": 2}', "call_b"),
        call("Report", GOOD),
    ]
    ran = run(script, response_format=ToolStrategy(Report), with_tools=True, mode=mode)
    assert isinstance(ran.result[TOOL_OUTCOME_KEY], Healed)
    assert isinstance(ran.outcome, Healed)
    assert [
        ("healjson.heal ToolCalls", "healed", [("chat", False), ("chat", True)]),
        ("healjson.heal Report", "healed", [("chat", True)]),
    ] == step_spans(spans)


def test_a_handed_over_run_that_degrades_has_one_failed_run_span(
    spans: Telemetry,
) -> None:
    """A union member's run handed its first answer that never heals ends as one degraded run
    span (its error the run's reason) over its call spans, as a plain run does."""
    never = call("Refund", '{"order_id": "A1"}', "c1")
    ran = run([never] * 3, response_format=ToolStrategy(Ship | Refund))
    assert isinstance(ran.outcome, Degraded)
    assert [
        ("healjson.heal Refund", "degraded", [("chat", False), ("chat", False), ("chat", False)])
    ] == step_spans(spans)


def test_a_passed_through_answer_ends_its_spans_without_an_outcome(
    spans: Telemetry,
) -> None:
    """A plain answer of an agent with tools (no run's to judge) passes through untouched: the
    spans of its call end, said `passed`, with no error, and nothing is left open."""
    ran = run(["Hello."], with_tools=True)
    assert "Hello." == ran.result["messages"][-1].content
    assert [("healjson.heal ToolCalls", "passed", [("chat", None)])] == step_spans(spans)
