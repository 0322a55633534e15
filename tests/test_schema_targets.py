"""JSON Schema dicts as targets: `validate(text, {...})`, `Healer({...})`, `@heal`, wrapped clients.

The value of a valid answer is the plain JSON value; `jsonschema` validates; its errors become
the same diagnostic triples as pydantic's (source `schema`); L1's local heals and alignment walk
the user's schema (`$ref` / `$defs` included); a scalar that fits no type of its node is read
laxly when exactly one reading fits (flag `coerced`), as pydantic's lax mode does for a model.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from typing import Any, Literal

import anthropic
import openai
import pytest

import healjson
from healjson import Degraded, Healed, Healer, Reason, Violation, contract
from healjson._core.stream.chunks import Delta
from healjson._core.target import JsonSchema, list_item_type, target_for
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from sdk_calls import wrapped_create

PERSON: dict[str, Any] = {
    "title": "Person",
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "role": {"enum": ["admin", "guest"]},
        "address": {"$ref": "#/$defs/Address"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["city"],
        }
    },
}
GOOD = '{"name": "Ada", "age": 36}'


def healed(outcome: Any) -> Any:
    assert isinstance(outcome, Healed), outcome
    return outcome.value


def test_validate_returns_the_plain_json_value() -> None:
    outcome = healjson.validate(GOOD, PERSON)
    assert {"name": "Ada", "age": 36} == healed(outcome)
    assert type(outcome.value) is dict
    assert () == outcome.flags


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        (f"```json\n{GOOD}\n```", "code_fence"),
        (f"Sure, here it is: {GOOD} Anything else?", "prose_around"),
        ('{"name": "Ada", "age": 36,}', "syntax_repaired"),
        ('{"Name": "Ada", "AGE": 36}', "keys_aligned"),
        ('{"name": "Ada", "age": "36"}', "coerced"),
        ('{"name": "Ada", "age": 36, "role": "ADMIN"}', "enum_case"),
        ('{"person": {"name": "Ada", "age": 36}}', "unwrapped"),
        ('{"name": "Ada", "age": "thirty-six"}', "number_word"),
    ],
)
def test_each_local_heal_applies_to_a_schema_target(text: str, flag: str) -> None:
    value = healed(outcome := healjson.validate(text, PERSON))
    assert flag in outcome.flags
    assert ("Ada", 36) == (value["name"], value["age"])
    if flag == "enum_case":
        assert "admin" == value["role"]


def test_a_numeric_string_is_read_only_when_one_type_fits() -> None:
    """`"5"` where an integer is wanted is 5 (coerced); where an integer or a boolean may
    stand, `"1"` has two readings and stays as written (the schema refuses it)."""
    number = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert {"n": 5} == healed(healjson.validate('{"n": "5"}', number))
    either = {"type": "object", "properties": {"n": {"type": ["integer", "boolean"]}}}
    outcome = healjson.validate('{"n": "1"}', either)
    assert isinstance(outcome, Degraded)
    assert ["n"] == [d.path for d in outcome.errors]
    text = {"type": "object", "properties": {"n": {"type": ["integer", "string"]}}}
    assert {"n": "1"} == healed(healjson.validate('{"n": "1"}', text))  # fits as written


def test_refs_and_defs_are_aligned_and_validated() -> None:
    text = '{"name": "Ada", "age": 36, "address": {"City": "Paris"}}'
    outcome = healjson.validate(text, PERSON)
    assert {"city": "Paris"} == healed(outcome)["address"]
    assert "keys_aligned" in outcome.flags
    bad = healjson.validate('{"name": "Ada", "age": 36, "address": {"zip": "1"}}', PERSON)
    assert isinstance(bad, Degraded)
    assert ["address.city"] == [d.path for d in bad.errors]
    assert bad.errors[0].is_missing


def test_schema_errors_become_diagnostic_triples() -> None:
    outcome = healjson.validate('{"name": "", "age": -2, "role": "root", "x": 1}', PERSON)
    assert isinstance(outcome, Degraded)
    assert Reason.INVALID_OUTPUT == outcome.reason
    found = {d.path: d for d in outcome.errors}
    assert ["name", "age", "role", "x"] == list(found)
    assert {"schema"} == {str(d.source) for d in outcome.errors}
    assert "must have at least 1 characters" == found["name"].constraint
    assert "must be at least 0" == found["age"].constraint
    assert "Set `age` to a value at least 0 (got -2)." == found["age"].prescription
    assert '"admin" or "guest"' in found["role"].constraint
    assert "is not a field of the schema" == found["x"].constraint
    assert -2 == found["age"].value


def test_a_failed_union_reports_every_branch_on_the_value_itself() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    }
    outcome = healjson.validate('{"n": "many"}', schema)
    assert isinstance(outcome, Degraded)
    [diagnostic] = outcome.errors
    assert "n" == diagnostic.path
    assert "must be an integer, or must be null" == diagnostic.constraint


def test_a_failed_union_of_objects_reports_the_closest_branch() -> None:
    schema = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}},
                "required": ["kind", "lives"],
            },
            {
                "type": "object",
                "properties": {"kind": {"const": "dog"}, "bark": {"type": "string"}},
                "required": ["kind", "bark"],
            },
        ]
    }
    outcome = healjson.validate('{"kind": "cat", "lives": "nine lives"}', schema)
    assert isinstance(outcome, Degraded)
    assert ["lives"] == [d.path for d in outcome.errors]
    assert "must be an integer" == outcome.errors[0].constraint


def test_errors_are_bounded() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    outcome = healjson.validate(json.dumps(["x"] * 500), schema)
    assert isinstance(outcome, Degraded)
    assert 100 == len(outcome.errors)
    assert ("[0]", "[99]") == (outcome.errors[0].path, outcome.errors[-1].path)


@pytest.mark.parametrize(
    ("schema", "error", "words"),
    [
        ({"type": "objekt"}, ValueError, "not a valid JSON Schema"),
        ({"properties": {"a": {"minimum": "zero"}}}, ValueError, "properties/a/minimum"),
        ({"$schema": "https://example.com/mine"}, ValueError, "unknown $schema"),
        ({"$ref": "https://example.com/s.json"}, ValueError, "outside the schema"),
        ({"$ref": "#/$defs/Nope"}, ValueError, "does not resolve"),
        ({"type": "object", "default": object()}, TypeError, "JSON data"),
    ],
)
def test_an_invalid_schema_is_refused_at_construction(
    schema: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words.replace("$", r"\$")):
        Healer(schema)
    with pytest.raises(error):
        healjson.validate("{}", schema)


def test_equal_schemas_share_one_target() -> None:
    again = json.loads(json.dumps(PERSON))
    assert target_for(PERSON) is target_for(again)
    assert target_for(PERSON) is target_for(dict(reversed(list(PERSON.items()))))
    assert "Person" == target_for(PERSON).name
    assert "Response" == target_for({"type": "object"}).name
    assert target_for(PERSON).expects_object
    assert frozenset({"name", "age", "role", "address"}) == target_for(PERSON).field_names


def test_the_callers_dict_is_copied() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    target = target_for(schema)
    schema["properties"]["a"]["type"] = "string"
    assert {"a": 1} == healed(healjson.validate('{"a": 1}', target))
    assert "integer" == target.json_schema["properties"]["a"]["type"]


def test_the_items_of_an_array_schema_stand_alone() -> None:
    schema = {
        "type": "array",
        "items": {"$ref": "#/$defs/Item"},
        "$defs": {"Item": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    items = list_item_type(target_for(schema).type_)
    assert isinstance(items, JsonSchema)
    assert {"$ref": "#/$defs/Item", "$defs": schema["$defs"]} == items.schema
    assert target_for(schema).type_.plain_array
    bounded = {**schema, "maxItems": 3}
    assert not target_for(bounded).type_.plain_array
    recursive = {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}}
    assert list_item_type(target_for(recursive).type_) is None


def test_healer_repairs_with_the_jsonschema_diagnostic() -> None:
    model = ScriptedModel(['{"name": "Ada", "age": -1}', GOOD])
    outcome = Healer(PERSON).run(model, "Who?")
    assert {"name": "Ada", "age": 36} == healed(outcome)
    assert 2 == outcome.calls
    repair = model.calls[1].last_user_text
    assert "`age`" in repair
    assert "at least 0" in repair
    # the golden example is synthesised from the schema and is valid
    assert Healer(PERSON)._spec.example is not None
    assert isinstance(healjson.validate(Healer(PERSON)._spec.example, PERSON), Healed)


def test_contracts_receive_the_plain_json_value() -> None:
    seen: list[Any] = []

    @contract(fields=("age",))
    def adult(person: dict[str, Any]) -> Violation | None:
        seen.append(person)
        return None if person["age"] >= 18 else Violation("must be an adult")

    healer = Healer(PERSON, contracts=[adult])
    seen.clear()  # the synthesised golden example was checked too
    model = ScriptedModel(['{"name": "Bo", "age": 7}', GOOD])
    outcome = healer.run(model, "Who?")
    assert {"name": "Ada", "age": 36} == healed(outcome)
    assert [{"name": "Bo", "age": 7}, {"name": "Ada", "age": 36}] == seen
    assert "must be an adult" in model.calls[1].last_user_text

    @contract(fields=("salary",))
    def paid(person: dict[str, Any]) -> None:
        return None

    with pytest.raises(ValueError, match="does not have"):
        Healer(PERSON, contracts=[paid])


def test_examples_are_checked_against_the_schema() -> None:
    assert Healer(PERSON, examples=[{"name": "Ada", "age": 36}]).examples
    with pytest.raises(ValueError, match="examples"):
        Healer(PERSON, examples=[{"name": "Ada"}])


# -- arrays: streamed item by item, repaired item by item ----------------------------------------

LINES: dict[str, Any] = {
    "type": "array",
    "items": {"$ref": "#/$defs/Line"},
    "$defs": {
        "Line": {
            "type": "object",
            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
            "required": ["sku", "qty"],
        }
    },
}


def tool_stream(pieces: list[str], consumed: list[int]) -> Any:
    """A streamed tool call's arguments, piece by piece; `consumed` counts the pieces read."""

    def call(messages: Any, **params: Any) -> Any:
        def chunks() -> Any:
            for piece in pieces:
                consumed.append(1)
                yield Delta(tool_arguments=piece)
            yield Delta(finish_reason="stop")

        return chunks()

    return call


def test_an_array_schema_streams_its_items_as_they_complete() -> None:
    items = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}, {"sku": "C", "qty": 3}]
    text = json.dumps(items)
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    consumed: list[int] = []
    stream = Healer(LINES).stream(tool_stream(pieces, consumed), "lines?")
    seen: list[tuple[Any, int]] = [(item, len(consumed)) for item in stream.items()]
    assert items == [item for item, _ in seen]
    assert seen[0][1] < len(pieces)  # handed out before the stream ended
    assert items == healed(stream.outcome)
    assert {0: "streamed", 1: "streamed", 2: "streamed"} == stream.item_status


def test_a_bad_item_of_an_array_schema_is_held_and_repaired_alone() -> None:
    first = json.dumps([{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}, {"sku": "C", "qty": 3}])
    pieces = [first[i : i + 9] for i in range(0, len(first), 9)]
    replies = iter([tool_stream(pieces, []), lambda messages, **_: '[{"sku": "B", "qty": 2}]'])
    prompts: list[Any] = []

    def call(messages: Any, **params: Any) -> Any:
        prompts.append(messages)
        return next(replies)(messages, **params)

    stream = Healer(LINES).stream(call, "lines?")
    given = [item["sku"] for item in stream.items()]
    value = healed(stream.outcome)
    assert ["A", "B", "C"] == [item["sku"] for item in value]
    assert 2 == value[1]["qty"]
    assert "items_merged" in stream.outcome.flags
    assert ["A", "B", "C"] == given  # B once repaired
    assert {0: "streamed", 1: "repaired", 2: "streamed"} == stream.item_status
    assert "[1].qty" in str(prompts[1][-1]["content"])


def test_per_item_repair_of_an_array_schema_unstreamed() -> None:
    first = '[{"sku": "A", "qty": 1}, {"sku": "B", "qty": "none"}, {"sku": "C", "qty": 3}]'
    model = ScriptedModel([first, '[{"sku": "B", "qty": 2}]'])
    outcome = Healer(LINES).run(model, "lines?")
    assert [1, 2, 3] == [item["qty"] for item in healed(outcome)]
    assert "items_merged" in outcome.flags
    assert "[1].qty" in model.calls[1].last_user_text


def test_partial_snapshots_of_a_schema_target() -> None:
    text = json.dumps({"name": "Ada", "age": 36})
    snaps = list(Healer(PERSON).stream(lambda messages, **_: iter(text), "who?"))
    assert snaps
    assert "Ada" == snaps[-1].name
    assert {"name": "Ada", "age": 36} == snaps[-1].to_dict()
    assert "Partial[Person]" in repr(snaps[-1])


# -- wrapped clients: the real SDKs over HTTP against the scripted server -------------------------

USER = [{"role": "user", "content": "Who is the first programmer?"}]
TLS = ssl.create_default_context()


def _objects(schema: Any) -> list[dict[str, Any]]:
    """Every object node of a JSON schema."""
    found: list[dict[str, Any]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_wrapped_openai_sends_the_strict_schema_and_repairs(mode: Literal["sync", "async"]) -> None:
    with ScriptedServer(['{"name": "Ada", "age": -1}', GOOD]) as server:
        outcome = wrapped_create(
            server,
            mode,
            model="small",
            messages=USER,
            response_model=json.loads(json.dumps(PERSON)),
        )
    assert {"name": "Ada", "age": 36} == healed(outcome)
    assert 2 == outcome.calls
    first, second = server.requests
    response_format = first.body["response_format"]
    assert "json_schema" == response_format["type"]
    assert "Person" == response_format["json_schema"]["name"]
    assert True is response_format["json_schema"]["strict"]
    schema = response_format["json_schema"]["schema"]
    assert ["name", "age", "role", "address"] == schema["required"]  # the strict transform
    assert "Address" in schema["$defs"]
    assert 2 == len(_objects(schema))
    assert all(node["additionalProperties"] is False for node in _objects(schema))
    assert "Set `age` to a value at least 0 (got -1)." in second.messages[-1]["content"]


def test_wrapped_openai_steps_down_for_a_schema_strict_mode_cannot_express() -> None:
    scores = {"type": "object", "additionalProperties": {"type": "integer"}}
    with ScriptedServer(['{"math": 3, "art": "4"}']) as server:
        outcome = wrapped_create(
            server, "sync", model="small", messages=USER, response_model=scores
        )
    assert {"math": 3, "art": 4} == healed(outcome)
    assert "coerced" in outcome.flags
    [request] = server.requests
    assert {"type": "json_object"} == request.body["response_format"]
    assert '"additionalProperties":{"type":"integer"}' in request.messages[0]["content"]


def test_wrapped_openai_builds_one_healer_per_schema_value() -> None:
    with (
        ScriptedServer([GOOD, GOOD]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk,
    ):
        client = healjson.wrap(sdk)
        for _ in range(2):  # a fresh but equal dict per call
            schema = json.loads(json.dumps(PERSON))
            outcome = client.chat.completions.create(
                model="small", messages=USER, response_model=schema
            )
            assert isinstance(outcome, Healed)
        assert 1 == len(client._healers)


def test_wrapped_openai_streams_an_array_schema() -> None:
    items = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}]
    with (
        ScriptedServer([ScriptedReply(json.dumps(items), chunk_chars=5)]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="small", messages=USER, response_model=LINES, stream=True
        )
        got = list(stream.items())
    assert items == got
    assert items == healed(stream.outcome)
    schema = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert ["value"] == schema["required"]  # an array answer rides in the strict envelope


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_wrapped_responses_create_takes_a_schema(mode: Literal["sync", "async"]) -> None:
    with ScriptedServer(['{"name": "Ada", "age": "36"}']) as server:
        if mode == "sync":
            with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
                outcome = healjson.wrap(sdk).responses.create(
                    model="small", input="Who?", response_model=PERSON
                )
        else:

            async def main() -> Any:
                async with openai.AsyncOpenAI(
                    base_url=server.base_url, api_key="test", max_retries=0
                ) as sdk:
                    return await healjson.wrap(sdk).responses.create(
                        model="small", input="Who?", response_model=PERSON
                    )

            outcome = asyncio.run(main())
    assert {"name": "Ada", "age": 36} == healed(outcome)
    text_format = server.requests[0].body["text"]["format"]
    assert "json_schema" == text_format["type"]
    assert "Person" == text_format["name"]


def test_wrapped_anthropic_takes_a_schema() -> None:
    with (
        ScriptedServer(['{"name": "Ada", "age": -1}', GOOD]) as server,
        anthropic.Anthropic(
            base_url=server.anthropic_base_url,
            api_key="sk-test",
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(verify=TLS),
        ) as sdk,
    ):
        outcome = healjson.wrap(sdk).messages.create(
            model="claude", messages=USER, max_tokens=256, response_model=PERSON
        )
    assert {"name": "Ada", "age": 36} == healed(outcome)
    body = server.requests[0].body or {}
    assert "json_schema" == body["output_config"]["format"]["type"]
    assert "Address" in body["output_config"]["format"]["schema"]["$defs"]
    assert "at least 0" in str(server.requests[1].messages[-1]["content"])


def test_wrapped_gemini_takes_a_schema() -> None:
    from google import genai
    from google.genai import types as genai_types

    options = genai_types.HttpOptions(base_url=None, timeout=10_000, client_args={"verify": TLS})
    with ScriptedServer([GOOD]) as server:
        options.base_url = server.gemini_base_url
        client = genai.Client(api_key="test-key", http_options=options)
        try:
            outcome = healjson.wrap(client).models.generate_content(
                model="gemini-test", contents="Who?", response_model=PERSON
            )
        finally:
            client.close()
    assert {"name": "Ada", "age": 36} == healed(outcome)
    config = (server.requests[0].body or {}).get("generationConfig") or {}
    assert "Address" in config["responseJsonSchema"]["$defs"]


def test_heal_decorator_takes_a_schema() -> None:
    @healjson.heal(PERSON)
    def ask(messages: Any, **params: Any) -> str:
        return f"Here you go: {GOOD}"

    outcome = ask("Who?")
    assert {"name": "Ada", "age": 36} == healed(outcome)
    assert "prose_around" in outcome.flags
