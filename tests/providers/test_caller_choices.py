"""What a caller's own parameters do to `response_model=`: they never keep its schema from the
model, and a request that cannot give its answer is refused at the call.

- The caller's Anthropic `tools=` choose no output format: native structured output goes beside
  them, the forced answer tool's tier is skipped for the prompt's.
- A caller's own format that names no schema (chat's `response_format` json_object, the Responses
  API's `text.format` json_object, Ollama's `format="json"`) is sent as given with the schema
  stated in the prompt, as healjson's own `json_object` tier states it; one that names a schema is
  sent as given, unchanged.
- A `tool_choice` that forces a tool call raises TypeError before any request (without
  `heal_tools=True`), on every entry point that takes the answer's model.

Each test drives the real SDKs over HTTP to the scripted server on 127.0.0.1, sync and async.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import ollama
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healed, ToolCalls
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

GOOD = '{"name": "Ann", "age": 31}'
MESSAGES = [{"role": "user", "content": "Ann is 31"}]
ANT_TOOL = {"name": "f", "input_schema": {"type": "object", "properties": {}}}
CHAT_TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
RESP_TOOL = {"type": "function", "name": "f", "parameters": {"type": "object"}}


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def server() -> Any:
    with ScriptedServer([GOOD], repeat=True) as found:
        yield found


def run(value: Any) -> Any:
    return asyncio.run(value) if asyncio.iscoroutine(value) else value


def anthropic_client(server: ScriptedServer, runner: str, **options: Any) -> Any:
    kind = anthropic.AsyncAnthropic if runner == "async" else anthropic.Anthropic
    sdk = kind(base_url=server.anthropic_base_url, api_key="sk-test", max_retries=0)
    return healjson.wrap(sdk, **options)


def openai_client(server: ScriptedServer, runner: str, **options: Any) -> Any:
    kind = openai.AsyncOpenAI if runner == "async" else openai.OpenAI
    return healjson.wrap(
        kind(base_url=server.base_url, api_key="sk-test", max_retries=0), **options
    )


def ollama_client(server: ScriptedServer, runner: str, **options: Any) -> Any:
    kind = ollama.AsyncClient if runner == "async" else ollama.Client
    return healjson.wrap(kind(host=server.ollama_host), **options)


async def _closed(client: Any, value: Any) -> Any:
    """`value` awaited (an async stream read to its end), then the async client closed in the
    loop that used it."""
    async with client.wrapped:
        if asyncio.iscoroutine(value):
            value = await value
        return await value.finish() if hasattr(type(value), "finish") else value


def settled(make: Callable[[], Any], call: Callable[[Any], Any], runner: str) -> Any:
    """What `call` gives on the client `make` builds (made inside the loop that runs it, for an
    async client): a healed stream read to its end."""
    if runner == "sync":
        client = make()
        try:
            value = call(client)
            return value.finish() if hasattr(type(value), "finish") else value
        finally:
            client.wrapped.close()

    async def go() -> Any:
        client = make()
        return await _closed(client, call(client))

    return asyncio.run(go())


def sent(
    server: ScriptedServer, make: Callable[[], Any], call: Callable[[Any], Any], runner: str
) -> tuple[Any, list[dict[str, Any]]]:
    """`call`'s outcome on the client `make` builds, and the bodies of the requests it made."""
    before = len(server.requests)
    outcome = settled(make, call, runner)
    server.wait_idle()
    return outcome, [request.body for request in server.requests[before:]]


# --- A: the caller's Anthropic tools choose no output format ---------------------------------


def test_anthropic_native_schema_goes_beside_the_callers_tools(
    server: ScriptedServer, runner: str
) -> None:
    """With the caller's tools, the json_schema tier sends `output_config` beside them."""
    outcome, bodies = sent(
        server,
        lambda: anthropic_client(server, runner),
        lambda client: client.messages.create(
            model="c",
            max_tokens=100,
            messages=MESSAGES,
            response_model=Person,
            tools=[ANT_TOOL],
        ),
        runner,
    )
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    (body,) = bodies
    assert [ANT_TOOL] == body["tools"]
    assert "tool_choice" not in body
    assert "json_schema" == body["output_config"]["format"]["type"]
    assert ["name", "age"] == body["output_config"]["format"]["schema"]["required"]


def test_anthropic_answer_tool_tier_gives_way_to_the_prompt_beside_the_callers_tools(
    server: ScriptedServer, runner: str
) -> None:
    """In the json_object tier the caller's tools are kept, no tool is forced, and the schema
    is stated in the system prompt as the prompt tier states it."""
    outcome, bodies = sent(
        server,
        lambda: anthropic_client(server, runner, json_mode="json_object"),
        lambda client: client.messages.create(
            model="c",
            max_tokens=100,
            messages=MESSAGES,
            response_model=Person,
            tools=[ANT_TOOL],
        ),
        runner,
    )
    _, expected = sent(
        server,
        lambda: anthropic_client(server, runner, json_mode="prompt"),
        lambda prompted: prompted.messages.create(
            model="c",
            max_tokens=100,
            messages=MESSAGES,
            response_model=Person,
        ),
        runner,
    )
    assert isinstance(outcome, Healed)
    (body,) = bodies
    assert [ANT_TOOL] == body["tools"]
    assert "tool_choice" not in body
    assert "output_config" not in body
    assert expected[0]["system"] == body["system"]
    assert '"required"' in body["system"]


def test_anthropic_callers_output_config_format_is_sent_as_given(
    server: ScriptedServer, runner: str
) -> None:
    """Only an `output_config` format of the caller's chooses the format: sent as given."""
    own = {"format": {"type": "json_schema", "schema": {"type": "object"}}}
    _, bodies = sent(
        server,
        lambda: anthropic_client(server, runner),
        lambda client: client.messages.create(
            model="c",
            max_tokens=100,
            messages=MESSAGES,
            response_model=Person,
            tools=[ANT_TOOL],
            output_config=own,
        ),
        runner,
    )
    assert own == bodies[0]["output_config"]
    assert "system" not in bodies[0]


def test_anthropic_heal_tools_still_sends_the_callers_request(runner: str) -> None:
    """`heal_tools=True` heals the caller's tool calls with no tier format added."""
    reply = ScriptedReply(
        content=None,
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        finish_reason="tool_calls",
    )
    with ScriptedServer([reply], repeat=True) as server:
        outcome, bodies = sent(
            server,
            lambda: anthropic_client(server, runner),
            lambda client: client.messages.create(
                model="c",
                max_tokens=100,
                messages=MESSAGES,
                tools=[ANT_TOOL],
                heal_tools=True,
                tool_choice={"type": "any"},
            ),
            runner,
        )
    assert isinstance(outcome, Healed)
    assert isinstance(outcome.value, ToolCalls)
    assert ["f"] == [call.name for call in outcome.value.calls]
    assert "output_config" not in bodies[0]
    assert {"type": "any"} == bodies[0]["tool_choice"]


# --- B: a caller's format naming no schema gets the schema stated ----------------------------


def test_chat_json_object_of_the_callers_states_the_schema_as_the_tier_does(
    server: ScriptedServer, runner: str
) -> None:
    """The caller's `response_format` json_object is sent as given, the messages those of
    healjson's own json_object tier."""
    outcome, bodies = sent(
        server,
        lambda: openai_client(server, runner),
        lambda client: client.chat.completions.create(
            model="m",
            messages=MESSAGES,
            response_model=Person,
            response_format={"type": "json_object"},
        ),
        runner,
    )
    _, expected = sent(
        server,
        lambda: openai_client(server, runner, json_mode="json_object"),
        lambda tier: tier.chat.completions.create(
            model="m",
            messages=MESSAGES,
            response_model=Person,
        ),
        runner,
    )
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert {"type": "json_object"} == bodies[0]["response_format"]
    assert expected[0]["messages"] == bodies[0]["messages"]
    assert "system" == bodies[0]["messages"][0]["role"]


def test_chat_streamed_json_object_of_the_callers_states_the_schema(
    server: ScriptedServer, runner: str
) -> None:
    """A streamed call in the caller's json_object format states the schema too."""
    outcome, bodies = sent(
        server,
        lambda: openai_client(server, runner),
        lambda client: client.chat.completions.create(
            model="m",
            messages=MESSAGES,
            response_model=Person,
            stream=True,
            response_format={"type": "json_object"},
        ),
        runner,
    )
    assert isinstance(outcome, Healed)
    assert "Reply with only a JSON value" in bodies[0]["messages"][0]["content"]
    assert {"type": "json_object"} == bodies[0]["response_format"]


def test_responses_json_object_of_the_callers_states_the_schema_as_the_tier_does(
    server: ScriptedServer, runner: str
) -> None:
    """The caller's `text.format` json_object is sent as given, the input that of healjson's
    own json_object tier."""
    outcome, bodies = sent(
        server,
        lambda: openai_client(server, runner),
        lambda client: client.responses.create(
            model="m",
            input="Ann is 31",
            response_model=Person,
            text={"format": {"type": "json_object"}},
        ),
        runner,
    )
    _, expected = sent(
        server,
        lambda: openai_client(server, runner, json_mode="json_object"),
        lambda tier: tier.responses.create(
            model="m",
            input="Ann is 31",
            response_model=Person,
        ),
        runner,
    )
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert {"format": {"type": "json_object"}} == bodies[0]["text"]
    assert expected[0]["input"] == bodies[0]["input"]
    assert "Reply with only a JSON value" in str(bodies[0]["input"][0])


def test_ollama_format_json_of_the_callers_states_the_schema_as_the_tier_does(
    server: ScriptedServer, runner: str
) -> None:
    """Ollama's `format="json"` is sent as given, the messages those of the json_object tier;
    a format that is a schema is sent as given with the messages untouched."""
    outcome, bodies = sent(
        server,
        lambda: ollama_client(server, runner),
        lambda client: client.chat(
            model="l", messages=MESSAGES, response_model=Person, format="json"
        ),
        runner,
    )
    _, expected = sent(
        server,
        lambda: ollama_client(server, runner, json_mode="json_object"),
        lambda tier: tier.chat(model="l", messages=MESSAGES, response_model=Person),
        runner,
    )
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    _, named = sent(
        server,
        lambda: ollama_client(server, runner),
        lambda client: client.chat(
            model="l", messages=MESSAGES, response_model=Person, format=schema
        ),
        runner,
    )
    assert isinstance(outcome, Healed)
    assert "json" == bodies[0]["format"]
    assert expected[0]["messages"] == bodies[0]["messages"]
    assert schema == named[0]["format"]
    assert MESSAGES == named[0]["messages"]


OLLAMA_TOOLS = [
    {
        "type": "function",
        "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
    }
]


def test_ollama_callers_tools_get_the_schema_in_the_prompt_and_no_format(
    server: ScriptedServer, runner: str
) -> None:
    """With the caller's tools (which a `format` would keep the model from calling), Ollama's
    request keeps the tools, sets no format, and states the schema as the json_object tier."""
    outcome, bodies = sent(
        server,
        lambda: ollama_client(server, runner),
        lambda client: client.chat(
            model="l", messages=MESSAGES, response_model=Person, tools=OLLAMA_TOOLS
        ),
        runner,
    )
    _, expected = sent(
        server,
        lambda: ollama_client(server, runner, json_mode="json_object"),
        lambda tier: tier.chat(model="l", messages=MESSAGES, response_model=Person),
        runner,
    )
    assert isinstance(outcome, Healed)
    assert not bodies[0].get("format")
    assert "lookup" == bodies[0]["tools"][0]["function"]["name"]
    assert expected[0]["messages"] == bodies[0]["messages"]


CHAT_FORMATS: dict[str, dict[str, Any]] = {
    "json_object": {"response_format": {"type": "json_object"}},
    "text": {"response_format": {"type": "text"}},
    "json_schema": {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "P", "schema": {"type": "object"}},
        }
    },
    "guided_json": {"extra_body": {"guided_json": {"type": "object"}}},
    "json_object+grammar": {
        "response_format": {"type": "json_object"},
        "extra_body": {"grammar": "root ::= x"},
    },
}
NAMES_SCHEMA = {"json_object": False, "text": False, "json_schema": True, "guided_json": True,
                "json_object+grammar": True}  # fmt: skip


@pinned(max_examples=10)
@given(st.sampled_from(sorted(CHAT_FORMATS)), st.sampled_from(["sync", "async"]))
def test_chat_schema_is_in_the_prompt_exactly_when_the_callers_format_names_none(
    name: str, runner: str
) -> None:
    """Over caller formats: sent as given, the schema stated exactly when none is named."""
    with ScriptedServer([GOOD], repeat=True) as server:
        _, bodies = sent(
            server,
            lambda: openai_client(server, runner),
            lambda client: client.chat.completions.create(
                model="m", messages=MESSAGES, response_model=Person, **CHAT_FORMATS[name]
            ),
            runner,
        )
    body = bodies[0]
    for key, value in CHAT_FORMATS[name].items():  # `extra_body`'s fields go to the top
        for field, found in value.items() if key == "extra_body" else [(key, value)]:
            assert found == body[field]
    assert (MESSAGES == body["messages"]) is NAMES_SCHEMA[name]


# --- C: a forced tool call is refused at the call ---------------------------------------------

OPENAI_CHOICES = [
    "auto", "none", "required",
    {"type": "function", "function": {"name": "f"}},
    {"type": "function", "name": "f"},
    {"type": "custom", "custom": {"name": "f"}},
    {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": [CHAT_TOOL]}},
    {"type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [CHAT_TOOL]}},
    {"type": "allowed_tools", "mode": "required", "tools": [RESP_TOOL]},
    {"type": "allowed_tools", "mode": "auto", "tools": [RESP_TOOL]},
    {"type": "web_search_preview"},
]  # fmt: skip
ANTHROPIC_CHOICES = [{"type": "auto"}, {"type": "none"}, {"type": "any"},
                     {"type": "tool", "name": "f"}]  # fmt: skip


def openai_forces(choice: Any) -> bool:
    """The test's own reading of what an OpenAI `tool_choice` forces."""
    if choice in ("auto", "none"):
        return False
    if isinstance(choice, dict) and choice["type"] == "allowed_tools":
        return (choice.get("allowed_tools") or choice)["mode"] == "required"
    return True


def anthropic_forces(choice: Any) -> bool:
    return choice["type"] in ("any", "tool")


def chat_create(client: Any, choice: Any) -> Any:
    return client.chat.completions.create(
        model="m", messages=MESSAGES, response_model=Person, tools=[CHAT_TOOL], tool_choice=choice
    )


def chat_stream(client: Any, choice: Any) -> Any:
    return client.chat.completions.create(
        model="m", messages=MESSAGES, response_model=Person, tools=[CHAT_TOOL],
        tool_choice=choice, stream=True,
    )  # fmt: skip


def chat_parse(client: Any, choice: Any) -> Any:
    return client.chat.completions.parse(
        model="m", messages=MESSAGES, response_format=Person, tools=[CHAT_TOOL], tool_choice=choice
    )


def chat_sdk_stream(client: Any, choice: Any) -> Any:
    return client.chat.completions.stream(
        model="m", messages=MESSAGES, response_format=Person, tools=[CHAT_TOOL], tool_choice=choice
    )


def responses_create(client: Any, choice: Any) -> Any:
    return client.responses.create(
        model="m", input="Ann is 31", response_model=Person, tools=[RESP_TOOL], tool_choice=choice
    )


def responses_parse(client: Any, choice: Any) -> Any:
    return client.responses.parse(
        model="m", input="Ann is 31", text_format=Person, tools=[RESP_TOOL], tool_choice=choice
    )


def responses_stream(client: Any, choice: Any) -> Any:
    return client.responses.stream(
        model="m", input="Ann is 31", text_format=Person, tools=[RESP_TOOL], tool_choice=choice
    )


def messages_create(client: Any, choice: Any) -> Any:
    return client.messages.create(
        model="c", max_tokens=100, messages=MESSAGES, response_model=Person, tools=[ANT_TOOL],
        tool_choice=choice,
    )  # fmt: skip


def messages_stream(client: Any, choice: Any) -> Any:
    return client.messages.stream(
        model="c", max_tokens=100, messages=MESSAGES, response_model=Person, tools=[ANT_TOOL],
        tool_choice=choice,
    )  # fmt: skip


def messages_parse(client: Any, choice: Any) -> Any:
    return client.messages.parse(
        model="c", max_tokens=100, messages=MESSAGES, output_format=Person, tools=[ANT_TOOL],
        tool_choice=choice,
    )  # fmt: skip


def messages_sdk_stream(client: Any, choice: Any) -> Any:
    return client.messages.stream(
        model="c", max_tokens=100, messages=MESSAGES, output_format=Person, tools=[ANT_TOOL],
        tool_choice=choice,
    )  # fmt: skip


def beta_messages_create(client: Any, choice: Any) -> Any:
    return client.beta.messages.create(
        model="c", max_tokens=100, messages=MESSAGES, response_model=Person, tools=[ANT_TOOL],
        tool_choice=choice,
    )  # fmt: skip


ENTRIES: dict[str, tuple[Callable[..., Any], Callable[..., Any], list[Any], Callable[..., bool]]]
ENTRIES = {
    "chat.create": (openai_client, chat_create, OPENAI_CHOICES, openai_forces),
    "chat.create(stream)": (openai_client, chat_stream, OPENAI_CHOICES, openai_forces),
    "chat.parse": (openai_client, chat_parse, OPENAI_CHOICES, openai_forces),
    "responses.create": (openai_client, responses_create, OPENAI_CHOICES, openai_forces),
    "responses.parse": (openai_client, responses_parse, OPENAI_CHOICES, openai_forces),
    "messages.create": (anthropic_client, messages_create, ANTHROPIC_CHOICES, anthropic_forces),
    "messages.stream": (anthropic_client, messages_stream, ANTHROPIC_CHOICES, anthropic_forces),
    "messages.parse": (anthropic_client, messages_parse, ANTHROPIC_CHOICES, anthropic_forces),
    "beta.messages.create": (
        anthropic_client,
        beta_messages_create,
        ANTHROPIC_CHOICES,
        anthropic_forces,
    ),
}


@pinned(max_examples=30)
@given(st.data(), st.sampled_from(sorted(ENTRIES)), st.sampled_from(["sync", "async"]))
def test_a_tool_choice_is_refused_exactly_when_it_forces_a_call(
    data: st.DataObject, entry: str, runner: str
) -> None:
    """Over entry points and tool choices: TypeError naming both parameters, before any
    request, exactly when the choice forces a tool call; otherwise the answer is healed."""
    make, call, choices, forces = ENTRIES[entry]
    choice = data.draw(st.sampled_from(choices))
    with ScriptedServer([GOOD], repeat=True) as server:
        if forces(choice):
            with pytest.raises(TypeError, match=r"tool_choice=.*heal_tools=True") as raised:
                settled(lambda: make(server, runner), lambda client: call(client, choice), runner)
            text = str(raised.value)
            assert "response_model=" in text or "_format=" in text
            assert [] == server.requests
            return
        found = settled(lambda: make(server, runner), lambda client: call(client, choice), runner)
        if not isinstance(found, Healed):
            found = healjson.outcome_of(found)
        server.wait_idle()
        assert 1 <= len(server.requests)
        assert choice == server.requests[0].body["tool_choice"]
        assert isinstance(found, Healed)
        assert Person(name="Ann", age=31) == found.value


@pytest.mark.parametrize(
    ("make", "call", "choice"),
    [
        (openai_client, chat_sdk_stream, "required"),
        (openai_client, responses_stream, {"type": "function", "name": "f"}),
        (anthropic_client, messages_sdk_stream, {"type": "any"}),
    ],
    ids=["chat.stream", "responses.stream", "messages.stream(output_format)"],
)
def test_the_sdks_own_stream_managers_refuse_a_forced_call(
    make: Callable[..., Any], call: Callable[..., Any], choice: Any, runner: str
) -> None:
    """The SDK's own stream managers with the answer's model refuse a forced call at the call."""
    with ScriptedServer([GOOD], repeat=True) as server:
        with pytest.raises(TypeError, match="forces a tool call"):
            settled(lambda: make(server, runner), lambda client: call(client, choice), runner)
        assert [] == server.requests


def test_heal_tools_keeps_a_forced_tool_choice(runner: str) -> None:
    """With `heal_tools=True` a forced `tool_choice` is the caller's to make: sent as given."""
    reply = ScriptedReply(
        content=None,
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        finish_reason="tool_calls",
    )
    with ScriptedServer([reply], repeat=True) as server:
        outcome, bodies = sent(
            server,
            lambda: openai_client(server, runner),
            lambda client: client.chat.completions.create(
                model="m",
                messages=MESSAGES,
                tools=[CHAT_TOOL],
                tool_choice="required",
                heal_tools=True,
            ),
            runner,
        )
    assert isinstance(outcome, Healed)
    assert ["f"] == [c.name for c in outcome.value.calls]
    assert "required" == bodies[0]["tool_choice"]
