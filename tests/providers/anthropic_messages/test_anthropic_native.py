"""`healjson.wrap(Anthropic())` / `wrap(AsyncAnthropic())`: `messages.create(response_model=M)`.

Each test drives the real `anthropic` SDK over HTTP to the scripted server on 127.0.0.1 (its
Messages route), sync and async, streamed and not. The SDK does not retry (`max_retries=0`), so
the server's request count is exactly healjson's model calls (a tier's step-down included).
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, Literal

import anthropic
import pytest
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Healed, HealPolicy, HealStream, Reason
from healjson._providers.anthropic_messages.schema import anthropic_schema
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

USER = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
GOOD = '{"name": "Ann", "age": 31}'


class Person(BaseModel):
    name: str = Field(min_length=1)
    age: int = Field(ge=0)


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[False, True], ids=["whole", "streamed"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return request.param  # type: ignore[no-any-return]


def ask(
    server: ScriptedServer,
    runner: str = "sync",
    streamed: bool = False,
    *,
    json_mode: str = "json_schema",
    **kwargs: Any,
) -> Any:
    """One healing `messages.create` through a fresh wrapped client (two: `calls` of them)."""
    kwargs.setdefault("model", "claude-test")
    kwargs.setdefault("messages", USER)
    kwargs.setdefault("max_tokens", 256)
    kwargs.setdefault("response_model", Person)
    options: dict[str, Any] = {
        "base_url": server.anthropic_base_url,
        "api_key": "sk-test",
        "max_retries": 0,
        "timeout": 10.0,
    }
    if runner == "async":

        async def go() -> Any:
            sdk = anthropic.AsyncAnthropic(
                **options, http_client=anthropic.DefaultAsyncHttpxClient(verify=TLS)
            )
            async with sdk:
                client = healjson.wrap(sdk, json_mode=json_mode)
                if streamed:
                    async with client.messages.stream(**kwargs) as stream:
                        async for _ in stream:
                            pass
                    return stream.outcome
                return await client.messages.create(**kwargs)

        return asyncio.run(go())
    with anthropic.Anthropic(
        **options, http_client=anthropic.DefaultHttpxClient(verify=TLS)
    ) as sdk:
        client = healjson.wrap(sdk, json_mode=json_mode)
        if streamed:
            stream = client.messages.create(stream=True, **kwargs)
            assert isinstance(stream, HealStream)
            for _ in stream:
                pass
            return stream.outcome
        return client.messages.create(**kwargs)


def test_native_structured_output_tier(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """The first tier asks for `output_config.format` with a closed schema; what the dialect
    cannot express (bounds, lengths) moves into descriptions and is still checked locally."""
    scripted_server.push(GOOD)

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    [request] = scripted_server.requests
    body = request.body or {}
    schema = body["output_config"]["format"]["schema"]
    assert "json_schema" == body["output_config"]["format"]["type"]
    assert schema["additionalProperties"] is False
    assert "minimum" not in schema["properties"]["age"]
    assert '"minimum": 0' in schema["properties"]["age"]["description"]
    assert "tools" not in body
    assert 256 == body["max_tokens"]


def test_bound_moved_to_description_is_still_checked(scripted_server: ScriptedServer) -> None:
    """A value the description only asks for (age >= 0) is validated by pydantic: repaired."""
    scripted_server.extend(['{"name": "Ann", "age": -1}', GOOD])

    outcome = ask(scripted_server)

    assert isinstance(outcome, Healed)
    assert 2 == len(scripted_server.requests)


def test_forced_strict_tool_tier(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """`json_mode="json_object"`: a forced strict tool; its `tool_use` input is the answer."""
    scripted_server.push(GOOD)

    outcome = ask(scripted_server, runner, streamed, json_mode="json_object")

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    body = scripted_server.requests[0].body or {}
    [tool] = body["tools"]
    assert tool["strict"] is True
    assert {"type": "tool", "name": tool["name"]} == body["tool_choice"]
    assert "output_config" not in body
    assert tool["name"] == outcome.attempts[0].tool_calls[0].name


def test_prompt_tier_keeps_the_callers_system_prompt(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """`json_mode="prompt"`: the schema joins the caller's own `system` (which comes first)."""
    scripted_server.push(GOOD)

    outcome = ask(scripted_server, runner, json_mode="prompt", system="You are terse.")

    assert isinstance(outcome, Healed)
    request = scripted_server.requests[0]
    assert request.system.startswith("You are terse.")
    assert '"age"' in request.system


def test_thinking_skips_the_forced_tool(scripted_server: ScriptedServer) -> None:
    """With extended thinking on, Anthropic refuses a forced tool: the prompt tier is used."""
    scripted_server.push(GOOD)

    outcome = ask(
        scripted_server,
        json_mode="json_object",
        thinking={"type": "enabled", "budget_tokens": 1024},
        max_tokens=2048,
    )

    assert isinstance(outcome, Healed)
    body = scripted_server.requests[0].body or {}
    assert "tools" not in body
    assert '"age"' in scripted_server.requests[0].system


REFUSE_NATIVE = ScriptedReply.error(
    400, "output_config.format: structured outputs are not supported for this model"
)
REFUSE_TOOL = ScriptedReply.error(400, "tools.0.strict: strict tools are not supported")


def test_refused_tiers_step_down_in_one_call_and_are_remembered(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A 400 naming output_config steps down to the tool, one naming strict tools to the
    prompt, within the same model call; the client's next call starts at the prompt tier."""
    scripted_server.extend([REFUSE_NATIVE, REFUSE_TOOL, GOOD])

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    first, second, third = (r.body or {} for r in scripted_server.requests)
    assert "output_config" in first
    assert "tools" in second
    assert "output_config" not in second
    assert "tools" not in third
    assert "output_config" not in third


def test_the_callers_own_output_format_is_sent_as_given_and_never_stepped_down(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A call that names its own `output_config.format` gets no tier of healjson's: the
    format goes as the caller wrote it, its answer is healed, and a 400 naming it is the
    provider's error (no weaker tier is tried for a format healjson did not choose)."""
    own = {"format": {"type": "json_schema", "schema": {"type": "object"}}, "effort": "low"}
    scripted_server.extend(["Here: " + GOOD, REFUSE_NATIVE])

    healed = ask(scripted_server, runner, streamed, output_config=own)
    refused = ask(scripted_server, runner, streamed, output_config=own)

    assert isinstance(healed, Healed)
    assert Person(name="Ann", age=31) == healed.value
    assert isinstance(refused, Degraded)
    assert Reason.API_ERROR == refused.reason
    assert [own, own] == [(r.body or {})["output_config"] for r in scripted_server.requests]
    assert all("tools" not in (r.body or {}) for r in scripted_server.requests)


def test_the_stepped_down_tier_is_remembered_per_client(scripted_server: ScriptedServer) -> None:
    """An Anthropic tier stepped down after a refusal is remembered by the client, so the next
    call starts on the forced tool."""
    scripted_server.extend([REFUSE_NATIVE, GOOD, GOOD])
    with anthropic.Anthropic(
        base_url=scripted_server.anthropic_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    ) as sdk:
        client = healjson.wrap(sdk)
        for _ in range(2):
            outcome = client.messages.create(
                model="claude-test", messages=USER, max_tokens=64, response_model=Person
            )
            assert isinstance(outcome, Healed)
    assert "json_object" == client.format.mode
    assert "tools" in (scripted_server.requests[2].body or {})


def test_an_unrelated_400_is_an_api_error(scripted_server: ScriptedServer) -> None:
    """An Anthropic 400 about something else than the output format degrades as `api_error` after
    one request, with no step down."""
    scripted_server.push(ScriptedReply.error(400, "max_tokens: must be at most 8192"))

    outcome = ask(scripted_server)

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == len(scripted_server.requests)


MALFORMED = {
    "fenced": f"```json\n{GOOD}\n```",
    "prose": f"Sure! Here is the person: {GOOD} Anything else?",
    "key_case": '{"Name": "Ann", "AGE": 31}',
}


@pytest.mark.parametrize("text", MALFORMED.values(), ids=MALFORMED.keys())
def test_local_heal_in_one_call(
    scripted_server: ScriptedServer, runner: str, streamed: bool, text: str
) -> None:
    """Every malformation L1 repairs heals an Anthropic answer in one request, sync, async and
    streamed."""
    scripted_server.push(text)

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 1 == len(scripted_server.requests)


def test_truncation_is_repaired_with_a_raised_max_tokens(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A cut Anthropic answer is repaired with `max_tokens` doubled, never sending OpenAI's
    `max_completion_tokens`."""
    scripted_server.extend([ScriptedReply('{"name": "An', finish_reason="length"), GOOD])

    policy = HealPolicy(on_truncation="raise_max_tokens")

    outcome = ask(scripted_server, runner, streamed, max_tokens=64, policy=policy)

    assert isinstance(outcome, Healed)
    first, second = scripted_server.requests
    assert 64 == first.max_tokens
    assert 128 == second.max_tokens
    assert "max_completion_tokens" not in (second.body or {})


def test_refusal_degrades_after_one_call(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """An Anthropic refusal degrades with `refusal` after one request."""
    scripted_server.push(ScriptedReply(refusal="I can't help with that."))

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Degraded)
    assert Reason.REFUSAL == outcome.reason
    assert 1 == len(scripted_server.requests)


def test_usage_counts_cache_reads_and_writes(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """Anthropic usage counts every input token, cache reads and writes included, and keeps those
    buckets."""
    usage = {"prompt_tokens": 100, "completion_tokens": 9, "cached_tokens": 60,
             "cache_write_tokens": 20}  # fmt: skip
    scripted_server.push(ScriptedReply(GOOD, usage=usage))

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert 100 == outcome.usage.prompt_tokens
    assert 9 == outcome.usage.completion_tokens
    assert 60 == outcome.usage.cache_read_tokens
    assert 20 == outcome.usage.cache_write_tokens


def test_thinking_blocks_are_set_aside(scripted_server: ScriptedServer, streamed: bool) -> None:
    """An Anthropic thinking block holding JSON is set aside, never taken as the answer."""
    scripted_server.push(ScriptedReply(GOOD, reasoning='Maybe {"name": "Bob"}?'))

    outcome = ask(scripted_server, streamed=streamed)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value


def test_without_response_model_everything_passes_through(
    scripted_server: ScriptedServer,
) -> None:
    """Without `response_model`, a wrapped Anthropic client returns the SDK's own `Message` and
    sends no output format."""
    scripted_server.push("hello")
    with anthropic.Anthropic(
        base_url=scripted_server.anthropic_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    ) as sdk:
        message = healjson.wrap(sdk).messages.create(
            model="claude-test", messages=USER, max_tokens=64
        )
    assert isinstance(message, anthropic.types.Message)
    assert "hello" == message.content[0].text  # type: ignore[union-attr]
    assert "output_config" not in (scripted_server.requests[0].body or {})


class Tally(BaseModel):
    counts: dict[str, int]


class Node(BaseModel):
    label: str
    children: list[Node] = []


@pytest.mark.parametrize("model", [Tally, Node], ids=["free_form_map", "recursive"])
def test_a_schema_outside_the_dialect_skips_to_a_plain_forced_tool(
    scripted_server: ScriptedServer, model: type[BaseModel]
) -> None:
    """A map or a recursive type has no closed form: no `output_config`, a non-strict tool
    carrying the schema as it is (validated locally as always)."""
    answer = '{"counts": {"a": 1}}' if model is Tally else '{"label": "x", "children": []}'
    scripted_server.push(answer)

    outcome = ask(scripted_server, response_model=model)

    assert isinstance(outcome, Healed)
    body = scripted_server.requests[0].body or {}
    assert "output_config" not in body
    [tool] = body["tools"]
    assert "strict" not in tool


def test_with_options_and_copy_stay_healing_and_share_the_tier(
    scripted_server: ScriptedServer,
) -> None:
    """A wrapped Anthropic client's `with_options` and `copy` still heal and share the tier
    learned by the client."""
    scripted_server.extend([REFUSE_NATIVE, GOOD, GOOD])
    with anthropic.Anthropic(
        base_url=scripted_server.anthropic_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    ) as sdk:
        client = healjson.wrap(sdk)
        faster = client.with_options(timeout=5.0)
        outcome = faster.messages.create(
            model="claude-test", messages=USER, max_tokens=64, response_model=Person
        )
        assert isinstance(outcome, Healed)
        again = client.copy().messages.create(
            model="claude-test", messages=USER, max_tokens=64, response_model=Person
        )
    assert isinstance(again, Healed)
    assert "json_object" == client.format.mode
    assert "tools" in (scripted_server.requests[2].body or {})


class Item(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]+$")
    qty: int = Field(gt=0, le=10)


class Order(BaseModel):
    zeta: str | None = None
    items: list[Item] = Field(min_length=1, max_length=5)
    kind: Literal["a", "b"]
    when: datetime.date


def test_the_dialect_keeps_structure_and_moves_the_rest_into_descriptions() -> None:
    """Anthropic's schema dialect keeps the structure and property order and moves each
    unsupported keyword into the description."""
    schema = anthropic_schema(Order.model_json_schema())

    assert ["zeta", "items", "kind", "when"] == list(schema["properties"])  # order kept
    items = schema["properties"]["items"]
    assert 1 == items["minItems"]
    assert '"maxItems": 5' in items["description"]
    item = schema["$defs"]["Item"]
    assert item["additionalProperties"] is False
    assert '"pattern": "^[A-Z]+$"' in item["properties"]["sku"]["description"]
    assert '"exclusiveMinimum": 0' in item["properties"]["qty"]["description"]
    assert {"anyOf"} <= set(schema["properties"]["zeta"])
    assert "date" == schema["properties"]["when"]["format"]
    kept = {"type", "properties", "required", "items", "enum", "const", "anyOf", "allOf",
            "$ref", "$defs", "description", "title", "format", "minItems",
            "additionalProperties"}  # fmt: skip

    def keys(node: Any) -> set[str]:
        if isinstance(node, dict):
            found = set(node)
            for name, value in node.items():
                if name not in ("properties", "$defs"):
                    found |= keys(value)
                else:
                    found |= set().union(*(keys(v) for v in value.values()))
            return found
        if isinstance(node, list):
            return set().union(*(keys(v) for v in node)) if node else set()
        return set()

    assert keys(schema) <= kept


def test_a_replaced_tier_state_or_client_reshapes_the_next_call(
    scripted_server: ScriptedServer,
) -> None:
    """Replacing a wrapped Anthropic client's tier state or inner client reshapes the next call
    accordingly."""
    from healjson.adapters._format import FormatState

    scripted_server.extend([GOOD, GOOD, GOOD])
    options: dict[str, Any] = {"base_url": scripted_server.anthropic_base_url,
                               "api_key": "sk-test", "max_retries": 0, "timeout": 10.0}  # fmt: skip
    clients = [anthropic.Anthropic(**options),
               anthropic.Anthropic(**options, default_headers={"x-probe": "other"})]  # fmt: skip
    healed: Any = healjson.wrap(clients[0])  # its internals are replaced below
    ask_one: dict[str, Any] = {"model": "claude-test", "messages": USER, "max_tokens": 256}
    try:
        first = healed.messages.create(**ask_one, response_model=Person)
        healed.format = FormatState("prompt")  # drivers built over the old state: not reused
        second = healed.messages.create(**ask_one, response_model=Person)
        healed.wrapped = clients[1]
        third = healed.messages.create(**ask_one, response_model=Person)
    finally:
        for client in clients:
            client.close()

    assert [Healed, Healed, Healed] == [type(first), type(second), type(third)]
    bodies = [request.body or {} for request in scripted_server.requests]
    assert "output_config" in bodies[0]
    assert "output_config" not in bodies[1]
    assert "output_config" not in bodies[2]
    assert "other" == scripted_server.requests[2].headers.get("x-probe")  # the new client's
