"""The caller's own tool calls, healed (`create(..., tools=[...], heal_tools=True)`): the real
openai SDK over real HTTP against the scripted server, chat completions and the Responses API,
sync and async. Each call of a reply is checked against its tool; a broken one is asked again
alone; a forced call that never comes degrades with its own reason."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Flag, Healed, HealPolicy, Reason, ToolCalls, Violation, contract
from healjson.testing import ScriptedReply, ScriptedServer
from lanes import INSTRUCTOR_ONLY

Mode = Literal["sync", "async"]
Api = Literal["chat", "responses"]
WAYS = [(api, mode) for api in ("chat", "responses") for mode in ("sync", "async")]


class Search(BaseModel):
    """Search the catalogue."""

    query: str
    limit: int = Field(ge=1, le=50)


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    days: int


@contract(fields=("limit",))
def small_pages(value: Search) -> Violation | None:
    """At most 10 results a page."""
    if value.limit > 10:
        return Violation("limit must be at most 10 for a search")
    return None


def call(
    name: str, arguments: str, call_id: str | None = None, *, index: int = 0
) -> dict[str, Any]:
    """A scripted tool call (OpenAI's chat shape; the server renders it for each route)."""
    return {
        "id": call_id or f"call_{name}_{index}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def calls(*made: dict[str, Any], content: str | None = None, finish: str = "tool_calls") -> Any:
    return ScriptedReply(content=content, tool_calls=list(made), finish_reason=finish)


def heal(api: Api, mode: Mode, server: ScriptedServer, **kwargs: Any) -> Any:
    """One `heal_tools=True` call on a wrapped sync or async client, on `api`."""
    kwargs.setdefault("model", "gpt-test")
    kwargs.setdefault("tools", [Search, Weather])
    kwargs["heal_tools"] = True
    prompt = kwargs.pop("prompt", "Find red shoes and the weather in Oslo.")
    if api == "chat":
        kwargs.setdefault("messages", [{"role": "user", "content": prompt}])
    else:
        kwargs.setdefault("input", prompt)

    def create(client: Any) -> Any:
        if api == "chat":
            return client.chat.completions.create(**kwargs)
        return client.responses.create(**kwargs)

    if mode == "sync":
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
            return create(healjson.wrap(sdk))

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0
        ) as sdk:
            return await create(healjson.wrap(sdk))

    return asyncio.run(main())


def value(outcome: Any) -> ToolCalls:
    assert isinstance(outcome, Healed), outcome
    assert isinstance(outcome.value, ToolCalls)
    return outcome.value


# -- valid answers -----------------------------------------------------------------------------


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_valid_parallel_calls_are_healed_in_one_call_with_their_ids(api: Api, mode: Mode) -> None:
    """Valid parallel tool calls heal in one call with the answer's text and each call's id, on
    chat and Responses, sync and async."""
    script = [
        calls(
            call("Search", '{"query": "red shoes", "limit": 5}', "call_a"),
            call("Weather", '{"city": "Oslo", "days": 2}', "call_b"),
            content="Looking both up.",
        )
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert 1 == len(server.requests)
    assert "Looking both up." == answer.text
    assert ["call_a", "call_b"] == [c.id for c in answer.calls]
    assert Search(query="red shoes", limit=5) == answer.calls[0].arguments
    assert Weather(city="Oslo", days=2) == answer.calls[1].arguments
    assert all(c.ok and c.flags == () for c in answer.calls)


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_text_without_a_call_is_a_valid_answer_when_calls_are_optional(
    api: Api, mode: Mode
) -> None:
    """When calls are optional, a text answer without a call is a valid answer with no calls."""
    with ScriptedServer(["No tool is needed: it is sunny."]) as server:
        outcome = heal(api, mode, server)
    assert ToolCalls("No tool is needed: it is sunny.", ()) == value(outcome)
    assert 1 == len(server.requests)


def test_tools_declared_from_models_are_sent_as_strict_function_tools() -> None:
    """Tools declared as pydantic models are sent as strict function tools with their docstring
    as description, nested on chat and flat on Responses."""
    with ScriptedServer([calls(call("Search", '{"query": "x", "limit": 1}'))]) as server:
        heal("chat", "sync", server)
        heal("responses", "sync", server)
    chat, responses = (request.body or {} for request in server.requests)
    function = chat["tools"][0]["function"]
    assert ("Search", True) == (function["name"], function["strict"])
    assert "Search the catalogue." == function["description"]
    assert {"query", "limit"} == set(function["parameters"]["properties"])
    flat = responses["tools"][0]
    assert ("function", "Search", True) == (flat["type"], flat["name"], flat["strict"])


# -- local repairs -----------------------------------------------------------------------------

LOCAL = {
    "fence": ('```json\n{"query": "red shoes", "limit": 5}\n```', Flag.CODE_FENCE),
    "single quotes": ("{'query': 'red shoes', 'limit': 5}", Flag.SYNTAX_REPAIRED),
    "trailing comma": ('{"query": "red shoes", "limit": 5,}', Flag.SYNTAX_REPAIRED),
    "key case": ('{"Query": "red shoes", "LIMIT": 5}', Flag.KEYS_ALIGNED),
    "string number": ('{"query": "red shoes", "limit": "5"}', Flag.COERCED),
}


@pytest.mark.parametrize(("api", "mode"), WAYS)
@pytest.mark.parametrize(("arguments", "flag"), LOCAL.values(), ids=LOCAL.keys())
def test_each_local_repair_of_tool_arguments_heals_in_one_call(
    api: Api, mode: Mode, arguments: str, flag: Flag
) -> None:
    """Each local repair of a call's arguments heals it in one call, flagged on the call and the
    outcome, with the raw arguments kept."""
    script = [calls(call("Search", arguments), call("Weather", '{"city": "Oslo", "days": 1}'))]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert 1 == len(server.requests)
    assert Search(query="red shoes", limit=5) == answer.calls[0].arguments
    assert flag in answer.calls[0].flags
    assert flag in outcome.flags
    assert arguments == answer.calls[0].raw
    assert () == answer.calls[1].flags


# -- repairs of broken calls -------------------------------------------------------------------


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_one_broken_call_of_two_is_asked_again_alone(api: Api, mode: Mode) -> None:
    """Of two calls, the broken one is asked for again alone and the valid one is kept as it
    came."""
    script = [
        calls(
            call("Search", '{"query": "red shoes", "limit": "many"}', "call_a"),
            call("Weather", '{"city": "Oslo", "days": 2}', "call_b"),
        ),
        calls(call("Search", '{"query": "red shoes", "limit": 5}', "call_c")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert 2 == len(server.requests)
    assert [Search(query="red shoes", limit=5), Weather(city="Oslo", days=2)] == [
        c.arguments for c in answer.calls
    ]
    assert ["call_c", "call_b"] == [c.id for c in answer.calls]
    assert ("calls[0]",) == outcome.changed_fields
    repair = server.requests[1].messages
    sent_back = [c["id"] for m in repair for c in m.get("tool_calls") or ()]
    assert ["call_a", "call_b"] == sent_back  # the whole turn, as the protocol needs
    answers = {m["tool_call_id"]: m["content"] for m in repair if m.get("role") == "tool"}
    assert answers["call_b"].startswith("Accepted")
    assert answers["call_a"].startswith("Rejected")
    assert "limit" in answers["call_a"]
    assert "`Search` (call_a)" in repair[-1]["content"]
    assert "Weather" not in repair[-1]["content"]


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_call_to_an_unknown_tool_is_repaired(api: Api, mode: Mode) -> None:
    """A call to a tool that does not exist is repaired with a diagnostic naming the tools there
    are."""
    script = [
        calls(call("find_products", '{"query": "red shoes"}', "call_x")),
        calls(call("Search", '{"query": "red shoes", "limit": 3}', "call_y")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    assert [("call_y", "Search")] == [(c.id, c.name) for c in value(outcome).calls]
    first = outcome.attempts[0].diagnostics[0]
    assert "`find_products` is not one" in first.constraint
    assert "Search" in first.prescription
    assert "Weather" in first.prescription


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_per_tool_contracts_are_checked_and_a_breach_repaired(api: Api, mode: Mode) -> None:
    """`tool_contracts` check each call of their tool, and a breach is repaired while other
    tools' calls stand."""
    script = [
        calls(
            call("Search", '{"query": "red shoes", "limit": 40}'),
            call("Weather", '{"city": "Oslo", "days": 40}'),
        ),
        calls(call("Search", '{"query": "red shoes", "limit": 10}')),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server, tool_contracts={"Search": [small_pages]})
    answer = value(outcome)
    assert 10 == answer.calls[0].arguments.limit
    assert 40 == answer.calls[1].arguments.days  # no contract of Weather's says otherwise
    assert ("small_pages",) == outcome.contracts
    breach = outcome.attempts[0].diagnostics[0]
    assert ("calls[0].limit", "contract") == (breach.path, breach.source)


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_arguments_cut_by_the_token_limit_are_asked_again(api: Api, mode: Mode) -> None:
    """A call whose arguments the token limit cut is asked for again, the other calls kept in
    order."""
    script = [
        calls(
            call("Weather", '{"city": "Oslo", "days": 2}'),
            call("Search", '{"query": "red sho'),
            finish="length",
        ),
        calls(call("Search", '{"query": "red shoes", "limit": 2}')),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server, max_tokens=50 if api == "chat" else None)
    answer = value(outcome)
    assert ["Weather", "Search"] == [c.name for c in answer.calls]
    assert "truncation" == outcome.attempts[0].diagnostics[0].source
    assert Search(query="red shoes", limit=2) == answer.calls[1].arguments


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_spent_budget_degrades_keeping_every_call_as_sent(api: Api, mode: Mode) -> None:
    """A spent budget degrades with every call kept as sent in the partial answer, the broken one
    marked not ok."""
    broken = '{"query": "red shoes", "limit": "many"}'
    script = [calls(call("Search", broken), call("Weather", '{"city": "Oslo", "days": 2}'))]
    with ScriptedServer(script, repeat=True) as server:
        outcome = heal(api, mode, server, policy=HealPolicy(max_attempts=2))
    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert 2 == len(server.requests)
    partial = outcome.partial
    assert isinstance(partial, ToolCalls)
    assert [broken, '{"city": "Oslo", "days": 2}'] == [c.raw for c in partial.calls]
    assert [False, True] == [c.ok for c in partial.calls]
    assert broken == partial.calls[0].arguments
    assert all(d.path.startswith("calls[0]") for d in outcome.errors)


# -- an accepted call is never lost or renamed by a repair ---------------------------------------

BROKEN_SEARCH = '{"query": "red shoes", "limit": 80}'  # out of bounds: asked again
OSLO = '{"city": "Oslo", "days": 2}'


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_call_split_in_two_by_the_repair_keeps_the_accepted_call(api: Api, mode: Mode) -> None:
    """A rejected call made again as two calls puts both at its place, and the accepted call
    stays with its id."""
    script = [
        calls(call("Search", BROKEN_SEARCH, "call_a"), call("Weather", OSLO, "call_b")),
        calls(
            call("Search", '{"query": "red shoes", "limit": 50}', "call_c"),
            call("Search", '{"query": "red shoes page 2", "limit": 30}', "call_d"),
        ),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert [("call_c", "Search"), ("call_d", "Search"), ("call_b", "Weather")] == [
        (c.id, c.name) for c in answer.calls
    ]
    assert Weather(city="Oslo", days=2) == answer.calls[2].arguments
    assert [50, 30] == [c.arguments.limit for c in answer.calls[:2]]
    assert ("calls[0]", "calls[1]") == outcome.changed_fields
    assert 2 == len(server.requests)


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_an_accepted_call_sent_again_keeps_its_id_and_place(api: Api, mode: Mode) -> None:
    """An accepted call the repair sends again (other spacing, other key order, a new id) is the
    accepted call: kept once, at its place, with its first id."""
    script = [
        calls(call("Weather", OSLO, "call_a"), call("Search", BROKEN_SEARCH, "call_b")),
        calls(
            call("Weather", '{ "days":2,\n  "city":"Oslo" }', "call_c"),
            call("Search", '{"query": "red shoes", "limit": 20}', "call_d"),
        ),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert [("call_a", "Weather"), ("call_d", "Search")] == [(c.id, c.name) for c in answer.calls]
    assert OSLO == answer.calls[0].raw  # as first sent
    assert ("calls[1]",) == outcome.changed_fields


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_an_accepted_call_sent_again_changed_is_a_new_call_beside_it(api: Api, mode: Mode) -> None:
    """An accepted call the repair sends again with other arguments is a new call placed with
    the replacement, and named changed; the accepted one keeps its arguments and id."""
    script = [
        calls(call("Search", BROKEN_SEARCH, "call_a"), call("Weather", OSLO, "call_b")),
        calls(
            call("Search", '{"query": "red shoes", "limit": 20}', "call_c"),
            call("Weather", '{"city": "Bergen", "days": 2}', "call_b"),  # its id, reused
        ),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert [
        ("call_c", Search(query="red shoes", limit=20)),
        ("call_a_2", Weather(city="Bergen", days=2)),
        ("call_b", Weather(city="Oslo", days=2)),
    ] == [(c.id, c.arguments) for c in answer.calls]
    assert ("calls[0]", "calls[1]") == outcome.changed_fields


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_call_to_a_tool_never_called_before_is_added_at_the_replaced_place(
    api: Api, mode: Mode
) -> None:
    """A repair that adds a call to a tool not called before keeps it, judged on its own, at
    the place of the call it came with."""
    script = [
        calls(
            call("Search", BROKEN_SEARCH, "call_a"), call("Search", '{"query": "x", "limit": 1}')
        ),
        calls(
            call("Weather", '{"city": "Oslo", "days": "3"}', "call_w"),
            call("Search", '{"query": "red shoes", "limit": 20}', "call_c"),
        ),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert [("call_w", "Weather"), ("call_c", "Search"), ("call_Search_0", "Search")] == [
        (c.id, c.name) for c in answer.calls
    ]
    assert Weather(city="Oslo", days=3) == answer.calls[0].arguments
    assert Flag.COERCED in answer.calls[0].flags
    assert ("calls[0]", "calls[1]") == outcome.changed_fields


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_rejected_call_the_repair_leaves_out_is_asked_again_alone(api: Api, mode: Mode) -> None:
    """A rejected call the repair makes no call for stays rejected and is asked again alone,
    while the other calls stand."""
    script = [
        calls(
            call("Search", BROKEN_SEARCH, "call_a"),
            call("Weather", OSLO, "call_b"),
            call("Weather", '{"city": "Rome", "days": "many"}', "call_c"),
        ),
        calls(call("Weather", OSLO, "call_x"), call("Search", '{"query": "shoes", "limit": 5}')),
        calls(call("Weather", '{"city": "Rome", "days": 4}', "call_y")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert [("call_Search_0", "Search"), ("call_b", "Weather"), ("call_y", "Weather")] == [
        (c.id, c.name) for c in answer.calls
    ]
    assert ("calls[0]", "calls[2]") == outcome.changed_fields
    third = server.requests[2].messages[-1]["content"]
    assert "1 of your 3 tool calls was rejected: `Weather` (call_c)" in third


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_call_made_again_to_another_tool_never_takes_the_rejected_calls_place(
    api: Api, mode: Mode
) -> None:
    """A rejected call made again to another tool, round after round, is rejected each time and
    asked for by its own tool, until a valid call to that tool takes its place."""
    script = [
        calls(call("Search", '{"query": "a", "limit": 5}', "call_a"), call("Weather", "{}")),
        calls(call("Search", '{"query": "b", "limit": 5}', "call_c")),
        calls(call("Search", '{"query": "b", "limit": 5}', "call_d")),  # the same again
        calls(call("Weather", OSLO, "call_e")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server, policy=HealPolicy(max_attempts=4))
    answer = value(outcome)
    assert 4 == len(server.requests)
    assert [("call_a", Search(query="a", limit=5)), ("call_e", Weather(city="Oslo", days=2))] == [
        (c.id, c.arguments) for c in answer.calls
    ]
    assert ("calls[1]",) == outcome.changed_fields
    for n, made in ((2, "call_c"), (3, "call_d")):
        asked = server.requests[n].messages[-1]["content"]
        assert f"`Weather` ({made}, which called `Search` instead)" in asked
        assert "`Search` (call_" not in asked
    rejected = outcome.attempts[2].diagnostics[0]
    assert "must be the call to `Weather` made again" in rejected.constraint


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_call_never_made_again_to_its_tool_degrades(api: Api, mode: Mode) -> None:
    """A rejected call the model only ever makes again to another tool degrades when the
    attempts are spent: never healed by the other tool's call."""
    script = [
        calls(call("Search", '{"query": "a", "limit": 5}', "call_a"), call("Weather", "{}")),
        calls(call("Search", '{"query": "b", "limit": 5}', "call_c")),
        calls(call("Search", '{"query": "b", "limit": 5}', "call_d")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server, policy=HealPolicy(max_attempts=3))
    assert isinstance(outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == outcome.reason
    assert 3 == len(server.requests)
    partial = outcome.partial
    assert isinstance(partial, ToolCalls)
    assert [("call_a", True), ("call_d", False)] == [(c.id, c.ok) for c in partial.calls]
    assert ["calls[1]"] == [d.path for d in outcome.errors]
    assert "must be the call to `Weather` made again" in outcome.errors[0].constraint


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_an_accepted_call_sent_again_as_equal_json_is_kept_once(api: Api, mode: Mode) -> None:
    """An accepted call sent again with JSON-equal arguments (`5.0` for `5`, other key order) is
    the accepted call, kept once; `true` for `1` is other arguments, a new call."""
    script = [
        calls(
            call("Search", '{"query": "red shoes", "limit": 5}', "call_a"),
            call("Weather", '{"city": "Oslo", "days": 1}', "call_b"),
            call("Search", BROKEN_SEARCH, "call_c"),
        ),
        calls(
            call("Search", '{"limit": 5.0, "query": "red shoes"}', "call_x"),  # call_a
            call("Weather", '{"city": "Oslo", "days": true}', "call_y"),  # not call_b
            call("Search", '{"query": "red shoes", "limit": 20}', "call_z"),
        ),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server)
    answer = value(outcome)
    assert 2 == len(server.requests)
    assert ["call_a", "call_b", "call_y", "call_z"] == [c.id for c in answer.calls]
    assert '{"query": "red shoes", "limit": 5}' == answer.calls[0].raw  # as first sent
    assert '{"city": "Oslo", "days": true}' == answer.calls[2].raw
    assert 20 == answer.calls[3].arguments.limit
    assert ("calls[2]", "calls[3]") == outcome.changed_fields


# -- forced calls ------------------------------------------------------------------------------


@pytest.mark.parametrize(("api", "mode"), WAYS)
@pytest.mark.parametrize("choice", ["required", "named"])
def test_a_forced_call_that_never_comes_degrades_with_its_own_reason(
    api: Api, mode: Mode, choice: str
) -> None:
    """A forced call (`required` or a named tool) that never comes degrades with its own reason."""
    if choice == "named":
        forced: Any = (
            {"type": "function", "function": {"name": "Search"}}
            if api == "chat"
            else {"type": "function", "name": "Search"}
        )
    else:
        forced = "required"
    with ScriptedServer(["I would rather chat."], repeat=True) as server:
        outcome = heal(api, mode, server, tool_choice=forced, policy=HealPolicy(max_attempts=2))
    assert isinstance(outcome, Degraded)
    assert Reason.TOOL_CALL_MISSING == outcome.reason
    assert 2 == len(server.requests)  # asked once more first
    assert "made none" in server.requests[1].last_user_text
    assert ToolCalls("I would rather chat.", ()) == outcome.partial


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_forced_call_that_comes_on_the_repair_heals(api: Api, mode: Mode) -> None:
    """A forced call that comes only after the repair heals."""
    script = ["Sure, searching.", calls(call("Search", '{"query": "shoes", "limit": 1}'))]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server, tool_choice="required")
    assert ["Search"] == [c.name for c in value(outcome).calls]


# -- the request is the caller's ---------------------------------------------------------------


def test_without_heal_tools_a_call_passes_through_unchanged() -> None:
    """Without `heal_tools`, a completion with a broken tool call passes through as the SDK
    returned it."""
    script = [calls(call("Search", "{'broken"))]
    with (
        ScriptedServer(script) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk,
    ):
        completion = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], tools=[]
        )
    assert "{'broken" == completion.choices[0].message.tool_calls[0].function.arguments


def test_heal_tools_refuses_a_response_model_and_stray_tool_contracts() -> None:
    """`heal_tools` with a `response_model`, `tool_contracts` without `heal_tools`, and contracts
    for an unknown tool are refused when called."""
    with (
        ScriptedServer([]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk,
    ):
        client = healjson.wrap(sdk)
        base = {"model": "m", "messages": [], "tools": [Search], "heal_tools": True}
        with pytest.raises(TypeError, match="response_model"):
            client.chat.completions.create(**base, response_model=Search)
        with pytest.raises(TypeError, match="needs heal_tools"):
            client.chat.completions.create(
                model="m", messages=[], tools=[Search], tool_contracts={"Search": []}
            )
        with pytest.raises(ValueError, match="'Nope'"):
            client.chat.completions.create(**base, tool_contracts={"Nope": []})
    assert [] == server.requests


def test_json_schema_tools_and_pydantic_function_tool_are_read() -> None:
    """JSON Schema function tools and `openai.pydantic_function_tool` tools are read and their
    calls healed."""
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
        "additionalProperties": False,
    }
    tools = [
        {"type": "function", "function": {"name": "weather", "parameters": schema}},
        openai.pydantic_function_tool(Search),
    ]
    script = [
        calls(
            call("weather", '{"city": "Oslo", "days": "2"}'),
            call("Search", '{"query": "x", "limit": 2}'),
        )
    ]
    with ScriptedServer(script) as server:
        outcome = heal("chat", "sync", server, tools=tools)
    answer = value(outcome)
    assert {"city": "Oslo", "days": 2} == answer.calls[0].arguments
    assert Flag.COERCED in answer.calls[0].flags  # "2" -> 2, as the schema says
    assert Search(query="x", limit=2) == answer.calls[1].arguments
    assert json.loads(json.dumps(server.requests[0].body))["tools"][0]["function"]["name"] == (
        "weather"
    )


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_json_schema_tool_is_validated_against_its_schema(api: Api, mode: Mode) -> None:
    """A JSON Schema tool's arguments are validated against its schema, bounds included, and
    repaired."""
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "maximum": 14}},
        "required": ["city", "days"],
    }
    if api == "chat":
        tool: dict[str, Any] = {
            "type": "function",
            "function": {"name": "weather", "parameters": schema},
        }
    else:
        tool = {"type": "function", "name": "weather", "parameters": schema, "strict": False}
    script = [
        calls(call("weather", '{"city": "Oslo", "days": 30}', "call_1")),
        calls(call("weather", '{"city": "Oslo", "days": 14}', "call_2")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(api, mode, server, tools=[tool])
    assert [{"city": "Oslo", "days": 14}] == [c.arguments for c in value(outcome).calls]
    assert "calls[0].days" == outcome.attempts[0].diagnostics[0].path
    assert tool == (server.requests[0].body or {})["tools"][0]  # sent as the caller wrote it


def test_the_record_and_the_trace_show_each_call_and_the_repair_exchange() -> None:
    """The record keeps each call's arguments, flags and id, and the trace shows the calls and
    the repair exchange."""
    script = [
        calls(
            call("Search", '{"query": "shoes", "limit": "many"}', "call_a"),
            call("Weather", '{"city": "Oslo", "days": "2"}', "call_b"),
        ),
        calls(call("Search", '{"query": "shoes", "limit": 5}', "call_c")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal("chat", "sync", server)
    record = json.loads(json.dumps(outcome.to_dict()))
    assert {"query": "shoes", "limit": 5} == record["value"]["calls"][0]["arguments"]
    assert ["coerced"] == record["value"]["calls"][1]["flags"]  # per call
    assert "call_a" == record["attempts"][0]["tool_calls"][0]["id"]
    trace = outcome.trace()
    assert "Repair prompt sent" in trace  # the tool-call repair is a `RepairPrompt` too
    assert "`Weather` (call_b): Accepted" in trace
    assert "1 of your 2 tool calls was rejected: `Search` (call_a)" in trace
    assert "- **Tool call** `Search` (call_c)" in trace
    assert "resent unchanged" not in trace


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_wrapped_instructor_client_heals_the_callers_own_tool_calls(mode: Mode) -> None:
    """A wrapped instructor client heals the caller's own tool calls, sync and async."""
    instructor = pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

    script = [
        calls(
            call("Search", '{"query": "shoes", "limit": 0}', "call_a"),
            call("Weather", "{'city': 'Oslo', 'days': 1}", "call_b"),
        ),
        calls(call("Search", '{"query": "shoes", "limit": 1}', "call_c")),
    ]
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "Shoes and Oslo."}],
        "tools": [Search, Weather],
        "heal_tools": True,
        "max_retries": 1,  # instructor's keyword: two calls in all
    }
    with ScriptedServer(script) as server:
        if mode == "sync":
            with openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as sdk:
                outcome = healjson.wrap(instructor.from_openai(sdk)).chat.completions.create(
                    **kwargs
                )
        else:

            async def main() -> Any:
                async with openai.AsyncOpenAI(
                    base_url=server.base_url, api_key="t", max_retries=0
                ) as sdk:
                    client = healjson.wrap(instructor.from_openai(sdk))
                    return await client.chat.completions.create(**kwargs)

            outcome = asyncio.run(main())
    answer = value(outcome)
    assert [Search(query="shoes", limit=1), Weather(city="Oslo", days=1)] == [
        c.arguments for c in answer.calls
    ]
    assert 2 == outcome.max_attempts
    assert "response_format" not in (server.requests[0].body or {})


# -- streamed ----------------------------------------------------------------------------------


def heal_streamed(api: Api, mode: Mode, server: ScriptedServer, **kwargs: Any) -> Any:
    """`heal_tools=True, stream=True`: (the text pieces iterated, the outcome)."""
    kwargs.update(model="gpt-test", heal_tools=True, stream=True)
    kwargs.setdefault("tools", [Search, Weather])
    if api == "chat":
        kwargs["messages"] = [{"role": "user", "content": "Shoes and Oslo."}]
    else:
        kwargs["input"] = "Shoes and Oslo."

    def create(client: Any) -> Any:
        return (client.chat.completions if api == "chat" else client.responses).create(**kwargs)

    if mode == "sync":
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
            stream = create(healjson.wrap(sdk))
            pieces = list(stream)
            return pieces, stream.outcome

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0
        ) as sdk:
            stream = await create(healjson.wrap(sdk))
            pieces = [piece async for piece in stream]
            return pieces, stream.outcome

    return asyncio.run(main())


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_streamed_run_yields_the_text_and_heals_the_calls(api: Api, mode: Mode) -> None:
    """A streamed tool-call run yields the answer's text and heals the calls at its end."""
    script = [
        ScriptedReply(
            content="Looking both up now.",
            tool_calls=[
                call("Search", "{'query': 'red shoes', 'limit': 'many'}", "call_a"),
                call("Weather", '{"city": "Oslo", "days": "2"}', "call_b"),
            ],
            finish_reason="tool_calls",
            chunk_chars=3,
        ),
        ScriptedReply(
            tool_calls=[call("Search", '{"query": "red shoes", "limit": 4}', "call_c")],
            finish_reason="tool_calls",
            chunk_chars=3,
        ),
    ]
    with ScriptedServer(script) as server:
        pieces, outcome = heal_streamed(api, mode, server)
    assert "Looking both up now." == "".join(pieces)
    assert len(pieces) > 1  # as it arrived
    answer = value(outcome)
    assert ["call_c", "call_b"] == [c.id for c in answer.calls]
    assert [Search(query="red shoes", limit=4), Weather(city="Oslo", days=2)] == [
        c.arguments for c in answer.calls
    ]
    assert "Looking both up now." == answer.text
    assert all(request.streamed for request in server.requests)
    assert 2 == len(server.requests)


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_streamed_cut_call_and_a_dropped_stream(api: Api, mode: Mode) -> None:
    """A streamed call cut by the token limit is asked again, and a stream dropped on the repair
    degrades with `api_error`."""
    cut = ScriptedReply(
        tool_calls=[call("Search", '{"query": "red sh')], finish_reason="length", chunk_chars=4
    )
    dropped = ScriptedReply(
        tool_calls=[call("Search", '{"query": "red shoes", "limit": 4}')], cut_after_chars=8
    )
    with ScriptedServer([cut, dropped]) as server:
        _, outcome = heal_streamed(api, mode, server)
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert "truncation" == outcome.attempts[0].diagnostics[0].source


@pytest.mark.parametrize(("api", "mode"), WAYS)
def test_a_streamed_repair_split_in_two_keeps_the_accepted_call(api: Api, mode: Mode) -> None:
    """Streamed, a rejected call made again as two calls puts both at its place, and the
    accepted call stays with its id."""
    script = [
        ScriptedReply(
            content="Both.",
            tool_calls=[call("Search", BROKEN_SEARCH, "call_a"), call("Weather", OSLO, "call_b")],
            finish_reason="tool_calls",
            chunk_chars=5,
        ),
        ScriptedReply(
            tool_calls=[
                call("Search", '{"query": "red shoes", "limit": 50}', "call_c"),
                call("Weather", OSLO, "call_d"),  # the accepted call, sent again
                call("Search", '{"query": "red shoes page 2", "limit": 30}', "call_e"),
            ],
            finish_reason="tool_calls",
            chunk_chars=5,
        ),
    ]
    with ScriptedServer(script) as server:
        pieces, outcome = heal_streamed(api, mode, server)
    assert "Both." == "".join(pieces)
    answer = value(outcome)
    assert [("call_c", "Search"), ("call_e", "Search"), ("call_b", "Weather")] == [
        (c.id, c.name) for c in answer.calls
    ]
    assert ("calls[0]", "calls[1]") == outcome.changed_fields
    assert all(request.streamed for request in server.requests)


# -- Anthropic ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_anthropic_tool_calls_are_healed_with_tool_result_blocks(mode: Mode) -> None:
    """Anthropic tool calls are healed, the repair answering the calls with `tool_result` blocks."""
    import anthropic

    weather = {
        "name": "weather",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
        },
    }
    script = [
        calls(
            call("Search", '{"query": "red shoes", "limit": 99}', "toolu_a"),
            call("weather", '{"city": "Oslo", "days": "3"}', "toolu_b"),
            content="Checking.",
        ),
        calls(call("Search", '{"query": "red shoes", "limit": 9}', "toolu_c")),
    ]
    kwargs: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Shoes and Oslo."}],
        "tools": [Search, weather],
        "tool_choice": {"type": "any"},
        "heal_tools": True,
    }
    with ScriptedServer(script) as server:
        url = server.anthropic_base_url
        if mode == "sync":
            with anthropic.Anthropic(base_url=url, api_key="t", max_retries=0) as sdk:
                outcome = healjson.wrap(sdk).messages.create(**kwargs)
        else:

            async def main() -> Any:
                async with anthropic.AsyncAnthropic(
                    base_url=url, api_key="t", max_retries=0
                ) as sdk:
                    return await healjson.wrap(sdk).messages.create(**kwargs)

            outcome = asyncio.run(main())
    answer = value(outcome)
    assert "Checking." == answer.text
    assert [
        ("toolu_c", Search(query="red shoes", limit=9)),
        ("toolu_b", {"city": "Oslo", "days": 3}),
    ] == [(c.id, c.arguments) for c in answer.calls]
    first = server.requests[0].body or {}
    assert {"name", "input_schema", "description"} == set(first["tools"][0])  # a model, sent so
    turns = (server.requests[1].body or {})["messages"]
    assert ["user", "assistant", "user"] == [t["role"] for t in turns]
    uses = [b for b in turns[1]["content"] if b["type"] == "tool_use"]
    assert [
        ("toolu_a", {"query": "red shoes", "limit": 99}),
        ("toolu_b", {"city": "Oslo", "days": "3"}),
    ] == [(b["id"], b["input"]) for b in uses]
    results = [b for b in turns[2]["content"] if b["type"] == "tool_result"]
    assert ["toolu_a", "toolu_b"] == [b["tool_use_id"] for b in results]
    assert results[0]["content"].startswith("Rejected")
    assert results[1]["content"].startswith("Accepted")
    assert "text" == turns[2]["content"][-1]["type"]  # the request to make the call again


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_anthropic_streamed_tool_calls_are_healed(mode: Mode) -> None:
    """Streamed Anthropic tool calls are healed, a Python-literal argument set repaired locally."""
    import anthropic

    script = [
        ScriptedReply(
            content="On it.",
            tool_calls=[
                call("Weather", '{"city": "Oslo", "days": 1}', "toolu_a"),
                call("Search", "{'query': 'boots', 'limit': 3,}", "toolu_b"),  # no JSON: streamed
            ],
            chunk_chars=3,
        )
    ]
    kwargs: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Boots and Oslo."}],
        "tools": [Search, Weather],
        "heal_tools": True,
        "stream": True,
    }
    with ScriptedServer(script) as server:
        url = server.anthropic_base_url
        if mode == "sync":
            with anthropic.Anthropic(base_url=url, api_key="t", max_retries=0) as sdk:
                stream = healjson.wrap(sdk).messages.create(**kwargs)
                pieces = list(stream)
                outcome = stream.outcome
        else:

            async def main() -> Any:
                async with anthropic.AsyncAnthropic(
                    base_url=url, api_key="t", max_retries=0
                ) as sdk:
                    stream = await healjson.wrap(sdk).messages.create(**kwargs)
                    return [piece async for piece in stream], await stream.finish()

            pieces, outcome = asyncio.run(main())
    assert "On it." == "".join(pieces)
    answer = value(outcome)
    assert [
        ("toolu_a", Weather(city="Oslo", days=1)),
        ("toolu_b", Search(query="boots", limit=3)),
    ] == [(c.id, c.arguments) for c in answer.calls]
    assert Flag.SYNTAX_REPAIRED in answer.calls[1].flags
    assert 1 == len(server.requests)
    assert outcome.usage.prompt_tokens > 0


def test_a_chat_shaped_tool_is_sent_flat_on_the_responses_api() -> None:
    """A chat-shaped tool is sent flat on the Responses API, and its model is kept for
    validation."""
    script = [calls(call("Search", '{"query": "x", "limit": "2"}'))]
    with ScriptedServer(script) as server:
        outcome = heal("responses", "sync", server, tools=[openai.pydantic_function_tool(Search)])
    assert Search(query="x", limit=2) == value(outcome).calls[0].arguments  # the model kept
    sent = (server.requests[0].body or {})["tools"][0]
    assert ("function", "Search", True) == (sent["type"], sent["name"], sent["strict"])
    assert "function" not in sent


def test_a_responses_repair_can_chain_to_the_previous_response() -> None:
    """A Responses tool-call repair can chain to the stored previous response, sending only the
    outputs and the repair."""
    script = [
        calls(
            call("Search", '{"query": "x", "limit": "many"}', "call_a"),
            call("Weather", '{"city": "Oslo", "days": 2}', "call_b"),
        ),
        calls(call("Search", '{"query": "x", "limit": 2}', "call_c")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal("responses", "sync", server, store=True, repair_via="previous_response_id")
    assert ["call_c", "call_b"] == [c.id for c in value(outcome).calls]
    second = server.requests[1].body or {}
    assert second["previous_response_id"]
    kinds = [item.get("type", "message") for item in second["input"]]
    assert ["function_call_output", "function_call_output", "message"] == kinds
    assert ["call_a", "call_b"] == [item["call_id"] for item in second["input"][:2]]
