"""`healjson.langchain`: a healed tool call reaches its tool as JSON data, never as a dump of the
instance healjson validated: the model's own arguments exactly when nothing was repaired, the
JSON data L1 made of its text when something was. LangChain's `ToolNode` validates that data
itself, once, as it would without the middleware (a `SecretStr` unmasked, an `AfterValidator`
applied once, no serializer or alias in the way).

A real LangChain v1 agent (`create_agent`) with `ChatOpenAI` over real HTTP to
`ScriptedServer`.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from typing import Annotated, Any

import httpx
import pytest
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, Field, SecretStr, field_serializer

pytest.importorskip("langchain")

from hypothesis import given
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, tool

from healjson import Flag, Healed, Violation, contract
from healjson.langchain import TOOL_OUTCOME_KEY, HealMiddleware
from healjson.testing import ScriptedReply, ScriptedServer
from langchain_kit import scripted_model
from pinned import pinned

received: list[Any] = []


def call(name: str, arguments: str) -> ScriptedReply:
    """One model turn calling `name` with `arguments` (the text as sent)."""
    function = {"name": name, "arguments": arguments}
    return ScriptedReply(
        tool_calls=[{"id": f"call_{name}", "type": "function", "function": function}],
        finish_reason="tool_calls",
    )


def run(
    tools: list[Any],
    script: list[ScriptedReply],
    *,
    healed: bool = True,
    mode: str = "sync",
    **options: Any,
) -> tuple[dict[str, Any], int]:
    """The agent with `tools` (healed, with `options`, unless `healed` is False) on `script`,
    invoked or awaited: its result and the number of model requests."""
    received.clear()
    message = {"messages": [{"role": "user", "content": "Go."}]}
    middleware = [HealMiddleware(**options)] if healed else []
    with ScriptedServer([*script, ScriptedReply(content="done")]) as server:
        if mode == "sync":
            with httpx.Client() as http:
                agent = create_agent(
                    scripted_model(server, http), tools=tools, middleware=middleware
                )
                result = agent.invoke(message)
        else:

            async def go() -> dict[str, Any]:
                async with httpx.AsyncClient() as http:
                    model = scripted_model(server, http)
                    agent = create_agent(model, tools=tools, middleware=middleware)
                    found: dict[str, Any] = await agent.ainvoke(message)
                    return found

            result = asyncio.run(go())
        return result, len(server.requests)


def given_args(result: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the (one) tool call LangChain's tool node was handed."""
    calls = [c for m in result["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert 1 == len(calls)
    found: dict[str, Any] = calls[0]["args"]
    return found


@tool
def login(user: str, password: SecretStr) -> str:
    """Log in."""
    received.append((user, password.get_secret_value()))
    return "ok"


class Booking(BaseModel):
    when: datetime.date
    note: str = Field(default="", exclude=True)
    tag: Annotated[str, AfterValidator(lambda s: s + "!")] = "x"
    seat: str = Field(default="", alias="seatNumber")

    @field_serializer("when")
    def _day_first(self, value: datetime.date) -> str:
        return value.strftime("%d/%m/%Y")


def _book(when: datetime.date, note: str = "", tag: str = "x", seat: str = "") -> str:
    received.append((when, note, tag, seat))
    return "ok"


book = StructuredTool.from_function(_book, name="book", description="Book.", args_schema=Booking)


@tool
def search(query: str, limit: int) -> str:
    """Search the shop."""
    received.append((query, limit))
    return "ok"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_secret_argument_reaches_the_tool_unmasked(mode: str) -> None:
    """A `SecretStr` argument reaches the tool as the model sent it, not as `**********`."""
    script = [call("login", '{"user": "bob", "password": "hunter2-long-pass"}')]
    result, requests = run([login], script, mode=mode)
    assert [("bob", "hunter2-long-pass")] == received
    assert {"user": "bob", "password": "hunter2-long-pass"} == given_args(result)
    outcome = result[TOOL_OUTCOME_KEY]
    assert isinstance(outcome, Healed)
    assert () == outcome.flags
    assert 2 == requests


def test_validators_serializers_and_aliases_apply_as_without_the_middleware() -> None:
    """A non-idempotent `AfterValidator` is applied once (by LangChain's tool node), an
    excluded field and a serializer change nothing: the tool gets what it gets without the
    middleware."""
    sent = '{"when": "2024-03-05", "note": "window seat", "tag": "vip", "seatNumber": "12A"}'
    run([book], [call("book", sent)], healed=False)
    bare = list(received)
    result, _ = run([book], [call("book", sent)])
    assert [(datetime.date(2024, 3, 5), "", "vip!", "12A")] == bare == received
    assert json.loads(sent) == given_args(result)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_repaired_call_reaches_the_tool_repaired(mode: str) -> None:
    """Single quotes, a trailing comma and a number as a string: the tool gets the repaired
    JSON data L1 read (its tool node validating it), and the outcome names the repairs."""
    result, requests = run(
        [search], [call("search", "{'query': 'red lamp', 'limit': '5',}")], mode=mode
    )
    assert [("red lamp", 5)] == received
    assert {"query": "red lamp", "limit": "5"} == given_args(result)
    assert {Flag.SYNTAX_REPAIRED, Flag.COERCED} <= set(result[TOOL_OUTCOME_KEY].flags)
    assert 2 == requests


def test_a_key_in_another_case_reaches_the_tool_aligned() -> None:
    """A key in another case is aligned in the data the tool gets (`Query` read as `query`)."""
    result, _ = run([search], [call("search", '{"Query": "lamp", "limit": 2}')])
    assert [("lamp", 2)] == received
    assert {"query": "lamp", "limit": 2} == given_args(result)


def test_a_call_asked_again_reaches_the_tool_as_the_model_sent_it_the_second_time() -> None:
    """A call without a required argument is asked again; the tool gets the second call's own
    arguments."""
    script = [call("search", '{"query": "lamp"}'), call("search", '{"query": "lamp", "limit": 3}')]
    result, requests = run([search], script)
    assert [("lamp", 3)] == received
    assert {"query": "lamp", "limit": 3} == given_args(result)
    assert 3 == requests


@contract(fields=("limit",), on_fail="fix", fix=lambda a: a.model_copy(update={"limit": 50}))
def fifty_at_most(args: Any) -> Violation | None:
    """At most 50 results; the fix caps it."""
    return Violation("limit must be at most 50") if args.limit > 50 else None


def test_a_value_a_fix_rule_made_reaches_the_tool_fixed() -> None:
    """A `fix` rule's value (no JSON text it is the validation of) reaches the tool as its JSON
    data, no model call spent."""
    script = [call("search", '{"query": "lamp", "limit": 500}')]
    result, requests = run([search], script, tool_contracts={"search": [fifty_at_most]})
    assert [("lamp", 50)] == received
    assert {"query": "lamp", "limit": 50} == given_args(result)
    assert Flag.CONTRACT_FIXED in result[TOOL_OUTCOME_KEY].flags
    assert 2 == requests


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


class Record(BaseModel):
    note: str
    count: int
    secret: SecretStr
    when: datetime.date
    items: list[Any]
    data: dict[str, Any]

    @field_serializer("when")
    def _day_first(self, value: datetime.date) -> str:
        return value.strftime("%d/%m/%Y")


def _record(**arguments: Any) -> str:
    secret, when = arguments["secret"], arguments["when"]
    received.append({**arguments, "secret": secret.get_secret_value(), "when": when.isoformat()})
    return "ok"


record = StructuredTool.from_function(
    _record, name="record", description="Record anything.", args_schema=Record
)


@pinned(max_examples=10)
@given(
    st.fixed_dictionaries(
        {
            "note": st.text(max_size=20),
            "count": st.integers(min_value=-(2**63), max_value=2**63),
            "secret": st.text(min_size=1, max_size=20),
            "when": st.dates().map(datetime.date.isoformat),
            "items": st.lists(_JSON, max_size=3),
            "data": st.dictionaries(st.text(max_size=6), _JSON, max_size=3),
        }
    ),
    st.booleans(),
)
def test_any_valid_arguments_reach_the_tool_as_the_model_sent_them(
    arguments: dict[str, Any], ascii_only: bool
) -> None:
    """Any valid arguments object reaches the tool equal to what the model sent."""
    sent = json.dumps(arguments, ensure_ascii=ascii_only)
    result, _ = run([record], [call("record", sent)])
    assert json.loads(sent) == given_args(result)
    assert [json.loads(sent)] == received
