"""JSON Schema dicts as targets: `validate(text, {...})`, `Healer({...})`, `@heal`, wrapped clients.

The value of a valid answer is the plain JSON value; `jsonschema` validates; its errors become
the same diagnostic triples as pydantic's (source `schema`); L1's local heals and alignment walk
the user's schema (`$ref` / `$defs` included); a scalar that fits no type of its node is read
laxly when exactly one reading fits (flag `coerced`), as pydantic's lax mode does for a model.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model
from typer.testing import CliRunner

import healjson
from healjson import Degraded, Flag, Healed, Healer, Reason, Violation, contract
from healjson._cli.app import app
from healjson._cli.loading import SpecError, load_object
from healjson._core.target.target import JsonSchema, list_item_type, target_for
from healjson._core.wire.delta import Delta
from healjson._providers.openai_strict_schema import strict_json_schema
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from lanes import INSTRUCTOR_ONLY
from sdk_calls import TLS, close_gemini, wrapped_create

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
    """`validate` against a JSON Schema dict returns the answer as a plain dict, with no local
    repair flagged."""
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
    """Every local heal (fences, prose, syntax, key case, coercion, enum case, wrappers, number
    words) applies to a JSON Schema target and is flagged."""
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
    """A `$ref` into `$defs` is followed both to align keys and to validate, and a missing
    required field deep in it is reported at its path."""
    text = '{"name": "Ada", "age": 36, "address": {"City": "Paris"}}'
    outcome = healjson.validate(text, PERSON)
    assert {"city": "Paris"} == healed(outcome)["address"]
    assert "keys_aligned" in outcome.flags
    bad = healjson.validate('{"name": "Ada", "age": 36, "address": {"zip": "1"}}', PERSON)
    assert isinstance(bad, Degraded)
    assert ["address.city"] == [d.path for d in bad.errors]
    assert bad.errors[0].is_missing


def test_schema_errors_become_diagnostic_triples() -> None:
    """Each schema error of a dict target becomes a `schema` diagnostic with the path, the value
    received, the constraint and a prescription."""
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
    """Each branch's error at one place, merged; but "X or null" (`Optional[X]`) with a value
    that is not null reports X's error alone, as pydantic does for the model."""
    schema = {
        "type": "object",
        "properties": {
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "m": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        },
    }
    outcome = healjson.validate('{"n": "many", "m": "some"}', schema)
    assert isinstance(outcome, Degraded)
    found = {d.path: d.constraint for d in outcome.errors}
    assert {"n": "must be an integer", "m": "must be an integer, or must be a boolean"} == found


def test_a_failed_union_of_objects_reports_the_closest_branch() -> None:
    """A value that fails every branch of an `anyOf` of objects is reported against the branch it
    nearly matched, not against every branch."""
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


def test_the_draft_named_by_dollar_schema_is_used() -> None:
    """The draft named by `$schema` decides how keywords read (draft 7 and draft 4
    `exclusiveMinimum`), and Draft 2020-12 applies when none is named."""
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"n": {"$ref": "#/definitions/N"}},
        "definitions": {"N": {"type": "integer", "exclusiveMinimum": 3}},
        "required": ["n"],
    }
    assert {"n": 5} == healed(healjson.validate('{"N": "5"}', draft7))
    outcome = healjson.validate('{"n": 3}', draft7)
    assert isinstance(outcome, Degraded)
    assert "must be greater than 3" == outcome.errors[0].constraint
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"n": {"type": "integer", "minimum": 3, "exclusiveMinimum": True}},
    }
    outcome = healjson.validate('{"n": 3}', draft4)
    assert isinstance(outcome, Degraded)
    assert "must be greater than 3" == outcome.errors[0].constraint
    # Draft 2020-12 by default: a boolean exclusiveMinimum is no longer a keyword's valid value
    with pytest.raises(ValueError, match="not a valid JSON Schema"):
        target_for({"properties": {"n": {"minimum": 3, "exclusiveMinimum": True}}})


def test_nan_and_infinity_are_not_json() -> None:
    """`NaN` and `Infinity` are not JSON numbers, so they never validate against a schema target."""
    outcome = healjson.validate('{"n": NaN}', {"type": "object"})
    assert isinstance(outcome, Degraded)
    assert isinstance(healjson.validate("Infinity", {"type": "number"}), Degraded)


def test_errors_are_bounded() -> None:
    """A value with 500 schema errors yields exactly the first 100 diagnostics, in order."""
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
    """An invalid schema (bad type, bad keyword value, unknown draft, remote or dangling `$ref`,
    non-JSON default) is refused when the healer is built, with a message naming the fault."""
    with pytest.raises(error, match=words.replace("$", r"\$")):
        Healer(schema)
    with pytest.raises(error):
        healjson.validate("{}", schema)


def test_equal_schemas_share_one_target() -> None:
    """Equal schema dicts (copied, or with keys in another order) share one cached target, named
    after the schema's title."""
    again = json.loads(json.dumps(PERSON))
    assert target_for(PERSON) is target_for(again)
    assert target_for(PERSON) is target_for(dict(reversed(list(PERSON.items()))))
    assert "Person" == target_for(PERSON).name
    assert "Response" == target_for({"type": "object"}).name
    assert target_for(PERSON).expects_object
    assert frozenset({"name", "age", "role", "address"}) == target_for(PERSON).field_names


def test_the_callers_dict_is_copied() -> None:
    """Changing the caller's schema dict after the target is built changes nothing about the
    target."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    target = target_for(schema)
    schema["properties"]["a"]["type"] = "string"
    assert {"a": 1} == healed(healjson.validate('{"a": 1}', target))
    assert "integer" == target.json_schema["properties"]["a"]["type"]


def test_the_items_of_an_array_schema_stand_alone() -> None:
    """The item schema of an array target stands alone with the `$defs` it refers to, a bounded
    array is not plain, and a recursive item gives no item type."""
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
    """A schema target's repair prompt carries the jsonschema diagnostic, and the golden example
    synthesised from the schema is itself valid."""
    model = ScriptedModel(['{"name": "Ada", "age": -1}', GOOD])
    outcome = Healer(PERSON).run(model, "Who?")
    assert {"name": "Ada", "age": 36} == healed(outcome)
    assert 2 == outcome.calls
    repair = model.calls[1].last_user_text
    assert "`age`" in repair
    assert "at least 0" in repair
    # the golden example is synthesised from the schema and is valid
    assert Healer(PERSON).spec.example is not None
    assert isinstance(healjson.validate(Healer(PERSON).spec.example, PERSON), Healed)


def test_contracts_receive_the_plain_json_value() -> None:
    """Contracts on a schema target receive the plain dict, and a contract naming a field the
    schema lacks is refused at construction."""
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
    """Golden examples are validated against the schema target, and an invalid one is refused at
    construction."""
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


def in_turn(*calls: Any) -> Any:
    """A model call that answers with each of `calls` in turn."""
    queue = list(calls)

    def call(messages: Any, **params: Any) -> Any:
        return queue.pop(0)(messages, **params)

    return call


def test_an_array_schema_streams_its_items_as_they_complete() -> None:
    """A streamed array-schema answer hands out each item as soon as it closes, before the stream
    ends."""
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
    """A broken item of a streamed array-schema answer is held back, repaired alone and merged at
    its index."""
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
    """An unstreamed array-schema answer with one broken item is repaired by asking for that item
    alone."""
    first = '[{"sku": "A", "qty": 1}, {"sku": "B", "qty": "none"}, {"sku": "C", "qty": 3}]'
    model = ScriptedModel([first, '[{"sku": "B", "qty": 2}]'])
    outcome = Healer(LINES).run(model, "lines?")
    assert [1, 2, 3] == [item["qty"] for item in healed(outcome)]
    assert "items_merged" in outcome.flags
    assert "[1].qty" in model.calls[1].last_user_text


def test_partial_snapshots_of_a_schema_target() -> None:
    """Streaming a schema target yields `Partial` snapshots named after the schema, whose last
    one holds the whole value."""
    text = json.dumps({"name": "Ada", "age": 36})
    snaps = list(Healer(PERSON).stream(lambda messages, **_: iter(text), "who?"))
    assert snaps
    assert "Ada" == snaps[-1].name
    assert {"name": "Ada", "age": 36} == snaps[-1].to_dict()
    assert "Partial[Person]" in repr(snaps[-1])


# -- wrapped clients: the real SDKs over HTTP against the scripted server -------------------------

USER = [{"role": "user", "content": "Who is the first programmer?"}]


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
    """A wrapped openai client sends a schema dict as a strict `json_schema` response format and
    repairs a schema error with its prescription."""
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
    assert "schema: `greater_than_equal`" in outcome.trace()  # a schema error, not a contract's


def test_the_strict_schema_of_a_schema_dict() -> None:
    """A schema dict's strict schema is cached per target, named after it, and wraps only non-
    object answers in an envelope."""
    strict = strict_json_schema(json.loads(json.dumps(PERSON)))
    assert strict is strict_json_schema(target_for(PERSON))
    assert "Person" == strict.name
    assert strict.envelope is None
    assert "value" == strict_json_schema(LINES).envelope
    assert "response" == strict_json_schema({"type": "integer"}).name.lower()


def test_wrapped_openai_steps_down_for_a_schema_strict_mode_cannot_express() -> None:
    """A map schema that strict mode cannot express is sent as JSON mode with the schema in the
    prompt, and the answer still heals."""
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
    """A wrapped client builds one healer for equal schema dicts passed as fresh objects on every
    call."""
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
    """A wrapped openai stream of an array schema hands out every item, with the array carried in
    the strict envelope."""
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
    """The Responses API's `create` takes a schema dict as `response_model`, sync and async, and
    sends it as the text format."""
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
    """A wrapped Anthropic client sends a schema dict as its native output format and repairs
    against it."""
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
    """A wrapped Gemini client sends a schema dict, `$defs` included, as its
    `responseJsonSchema`."""
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
            close_gemini(client)
    assert {"name": "Ada", "age": 36} == healed(outcome)
    config = (server.requests[0].body or {}).get("generationConfig") or {}
    assert "Address" in config["responseJsonSchema"]["$defs"]


def test_heal_decorator_takes_a_schema() -> None:
    """`@heal` takes a schema dict as its target and heals a prose-wrapped answer."""

    @healjson.heal(PERSON)
    def ask(messages: Any, **params: Any) -> str:
        return f"Here you go: {GOOD}"

    outcome = ask("Who?")
    assert {"name": "Ada", "age": 36} == healed(outcome)
    assert "prose_around" in outcome.flags


# -- the same verdict as the pydantic model the schema came from ----------------------------------

_FIELD_NAMES = ("total", "label", "owner", "level", "score", "price", "city", "note")
_CHOICES = ("low", "medium", "high")
_MODEL_IDS = itertools.count()


@dataclass(frozen=True)
class Spec:
    """A generated field: `int` / `float` (bounds), `str` (a max length), `bool`, `lit`
    (choices), `opt` (Optional, not required), `list` of `inner`, or a `model`."""

    kind: str
    inner: Spec | None = None
    fields: tuple[tuple[str, Spec], ...] = ()
    low: int = 0
    high: int = 0


@st.composite
def specs(draw: st.DrawFn, depth: int = 0) -> Spec:
    names = draw(st.lists(st.sampled_from(_FIELD_NAMES), min_size=1, max_size=4, unique=True))
    return Spec("model", fields=tuple((name, draw(field_specs(depth))) for name in names))


@st.composite
def field_specs(draw: st.DrawFn, depth: int) -> Spec:
    kinds = ["int", "float", "str", "bool", "lit", "opt", "list"]
    kind = draw(st.sampled_from([*kinds, "model"] if depth < 2 else kinds))
    if kind == "model":
        return draw(specs(depth + 1))
    if kind in ("opt", "list"):
        return Spec(kind, draw(field_specs(depth + 1)))
    low = draw(st.integers(-5, 5))
    return Spec(kind, low=low, high=low + draw(st.integers(0, 20)))


def model_of(spec: Spec) -> Any:
    """The pydantic type of a spec (an `opt` field is `X | None = None`)."""
    if spec.kind == "model":
        fields: dict[str, Any] = {}
        for name, sub in spec.fields:
            fields[name] = (model_of(sub), None if sub.kind == "opt" else ...)
        return create_model(f"Generated{next(_MODEL_IDS)}", **fields)
    if spec.kind in ("opt", "list"):
        assert spec.inner is not None
        inner = model_of(spec.inner)
        return inner | None if spec.kind == "opt" else list[inner]  # type: ignore[valid-type]
    if spec.kind in ("int", "float"):
        number = int if spec.kind == "int" else float
        return Annotated[number, Field(ge=spec.low, le=spec.high)]
    if spec.kind == "str":
        return Annotated[str, Field(max_length=abs(spec.high))]
    if spec.kind == "lit":
        return Literal[_CHOICES]
    return bool


@st.composite
def data_for(draw: st.DrawFn, spec: Spec) -> Any:
    """JSON data for a spec: mostly valid, often slipped the ways models slip (a number as a
    string or a word, out of bounds, a boolean word, an enum in capitals, a missing field, a
    lone item for a list, a key in capitals), sometimes plainly wrong."""
    slip = draw(st.integers(0, 9)) == 0
    if spec.kind == "model":
        out: dict[str, Any] = {}
        for name, sub in spec.fields:
            if sub.kind == "opt" and draw(st.booleans()):
                continue  # an optional field left out
            if draw(st.integers(0, 14)) == 0:
                continue  # a required field missing
            key = name.upper() if draw(st.integers(0, 7)) == 0 else name
            out[key] = draw(data_for(sub))
        return out
    if spec.kind == "opt":
        assert spec.inner is not None
        return None if draw(st.booleans()) else draw(data_for(spec.inner))
    if spec.kind == "list":
        assert spec.inner is not None
        items = draw(st.lists(data_for(spec.inner), max_size=3))
        return items[0] if slip and len(items) == 1 else items
    if spec.kind in ("int", "float"):
        number = draw(st.integers(spec.low - 2, spec.high + 2))
        value: Any = number if spec.kind == "int" else number + draw(st.sampled_from([0, 0.5]))
        return draw(st.sampled_from([str(value), float(number), "many", None])) if slip else value
    if spec.kind == "str":
        text = draw(
            st.text(
                st.characters(codec="ascii", categories=("L", "N")), max_size=abs(spec.high) + 2
            )
        )
        return draw(st.sampled_from([7, None, True])) if slip else text
    if spec.kind == "lit":
        choice = draw(st.sampled_from(_CHOICES))
        return draw(st.sampled_from([choice.upper(), "other", 1])) if slip else choice
    flag = draw(st.booleans())
    return draw(st.sampled_from(["true", "no", 2, "maybe"])) if slip else flag


def _declared(spec: Spec, value: Any) -> Any:
    """`value` without the keys its model does not declare: a model ignores them, a JSON Schema
    without `additionalProperties: false` allows them (and the value keeps them)."""
    if spec.kind == "model" and isinstance(value, dict):
        subs = dict(spec.fields)
        return {k: _declared(subs[k], v) for k, v in value.items() if k in subs}
    if spec.kind in ("opt", "list") and spec.inner is not None:
        if isinstance(value, list) and spec.kind == "list":
            return [_declared(spec.inner, item) for item in value]
        return _declared(spec.inner, value)
    return value


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values, numbers compared by value (`5 == 5.0`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return isinstance(a, bool) == isinstance(b, bool) and a == b


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_models_schema_and_the_model_agree(data: st.DataObject) -> None:
    """For a generated model and JSON text near it, `validate(text, Model.model_json_schema())`
    and `validate(text, Model)` reach the same verdict, and a healed value is the same JSON
    (the model's dump of the fields the answer set: a dict target fills in no defaults)."""
    spec = data.draw(specs())
    model = model_of(spec)
    value = data.draw(data_for(spec))
    text = json.dumps(value)
    if data.draw(st.booleans()):
        text = f"Here it is:\n```json\n{text}\n```"
    typed = healjson.validate(text, model)
    plain = healjson.validate(text, model.model_json_schema())
    assert type(typed) is type(plain), (text, typed, plain)
    if isinstance(typed, Healed):
        dumped = typed.value.model_dump(mode="json", exclude_unset=True)
        assert _same_json(dumped, _declared(spec, plain.value)), (text, dumped, plain.value)
        # a JSON Schema counts 5.0 as an integer (valid as written, no `coerced`); every
        # other flag is the same, and a schema target's lax reading is one pydantic makes too
        coerced = {Flag.COERCED}
        assert set(typed.flags) - coerced == set(plain.flags) - coerced, (text, typed, plain)
        assert Flag.COERCED not in plain.flags or Flag.COERCED in typed.flags, (text, plain)
    else:
        assert {d.path for d in typed.errors} == {d.path for d in plain.errors}, (
            text,
            typed,
            plain,
        )


@pytest.mark.parametrize(
    ("kind", "given"),
    [("integer", True), ("number", False), ("boolean", 1), ("boolean", 0)],
)
def test_a_schema_target_never_reads_a_boolean_as_a_number_or_back(kind: str, given: Any) -> None:
    """A JSON Schema target refuses a boolean where a number goes and `0` / `1` where a boolean
    goes (a boolean carries no quantity); a model reads them as pydantic's lax mode does,
    flagged `coerced`."""
    schema = {"type": "object", "properties": {"x": {"type": kind}}, "required": ["x"]}
    text = json.dumps({"x": given})
    refused = healjson.validate(text, schema)
    assert isinstance(refused, Degraded)
    assert ["x"] == [d.path for d in refused.errors]
    model = create_model("M", x=({"integer": int, "number": float, "boolean": bool}[kind], ...))
    read = healjson.validate(text, model)
    assert isinstance(read, Healed)
    assert Flag.COERCED in read.flags


# -- the command line: a `.json` file names a JSON Schema target ----------------------------------


def test_cli_heal_takes_a_json_schema_file(tmp_path: Path) -> None:
    """`healjson heal --model person.json` reads the JSON Schema file as the target and heals the
    reply."""
    schema_file = tmp_path / "person.json"
    schema_file.write_text(json.dumps(PERSON), encoding="utf-8")
    reply = tmp_path / "reply.txt"
    reply.write_text('Sure: {"Name": "Ada", "age": "36",}', encoding="utf-8")
    result = CliRunner().invoke(app, ["heal", str(reply), "--model", str(schema_file)])
    assert 0 == result.exit_code, result.output
    assert "- **Target**: `Person`" in result.stdout
    assert '"age": 36' in result.stdout
    assert isinstance(load_object(str(schema_file)), dict)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[1, 2]", "not a JSON Schema object"),
        ("{not json", "cannot read"),
        ('{"type": "objekt"}', "not a valid JSON Schema"),
    ],
)
def test_cli_refuses_a_json_file_that_is_no_schema(
    tmp_path: Path, content: str, words: str
) -> None:
    """The command line refuses a JSON file that is not a schema object, not JSON, not a valid
    schema, or missing, saying which."""
    schema_file = tmp_path / "bad.json"
    schema_file.write_text(content, encoding="utf-8")
    with pytest.raises(SpecError, match=words):
        load_object(str(schema_file))
    with pytest.raises(SpecError, match="no JSON Schema file"):
        load_object(str(tmp_path / "missing.json"))


def test_cli_batch_takes_a_json_schema_file(tmp_path: Path) -> None:
    """`healjson batch --response-model person.json` heals every row against the schema file."""
    schema_file = tmp_path / "person.json"
    schema_file.write_text(json.dumps(PERSON), encoding="utf-8")
    source = tmp_path / "in.jsonl"
    source.write_text(
        "\n".join(json.dumps({"id": f"p{n}", "prompt": f"Person {n}?"}) for n in range(3)) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    with ScriptedServer([GOOD], repeat=True) as server:
        result = CliRunner().invoke(
            app,
            [
                "batch", str(source), "--out", str(out), "--model", "m",
                "--response-model", str(schema_file),
                "--base-url", server.base_url, "--api-key", "test",
            ],
        )  # fmt: skip
    assert 0 == result.exit_code, result.output
    found = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert 3 == len(found)
    assert all(row["ok"] and {"name": "Ada", "age": 36} == row["value"] for row in found)


def test_a_wrapped_instructor_client_refuses_a_schema_dict_clearly() -> None:
    """instructor validates with pydantic: a dict is the caller's mistake, said at the call."""
    instructor = pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

    with (
        ScriptedServer([GOOD]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk,
    ):
        client = healjson.wrap(instructor.from_openai(sdk))
        with pytest.raises(TypeError, match="instructor client validates with pydantic"):
            client.chat.completions.create(model="m", messages=USER, response_model=PERSON)
        assert [] == server.requests


def test_fix_warn_and_drop_rules_on_schema_targets() -> None:
    """The `fix`, `warn` and `drop` rule policies act on schema targets as they do on models."""

    @contract(
        fields=("name",),
        on_fail="fix",
        fix=lambda person: {**person, "name": person["name"].strip()},
    )
    def trimmed(person: dict[str, Any]) -> str | None:
        return (
            "name has no surrounding spaces" if person["name"] != person["name"].strip() else None
        )

    @contract(fields=("age",), on_fail="warn")
    def plausible(person: dict[str, Any]) -> str | None:
        return "age is usually below 120" if person["age"] >= 120 else None

    outcome = healjson.validate(
        '{"name": " Ada ", "age": 130}', PERSON, contracts=[trimmed, plausible]
    )
    assert {"name": "Ada", "age": 130} == healed(outcome)
    assert ("trimmed",) == outcome.fixed
    assert "age = 130: age is usually below 120" == outcome.warnings[0].describe()

    @contract(fields=("qty",), on_fail="drop")
    def few(line: dict[str, Any]) -> str | None:
        return "qty is at most 5" if line["qty"] > 5 else None

    text = '[{"sku": "A", "qty": 1}, {"sku": "B", "qty": 9}, {"sku": "C", "qty": 2}]'
    model = ScriptedModel([text])
    outcome = Healer(LINES, item_contracts=[few]).run(model, "lines?")
    assert ["A", "C"] == [line["sku"] for line in healed(outcome)]
    assert [(1, {"sku": "B", "qty": 9})] == [(d.index, d.item) for d in outcome.dropped]


def test_parse_and_outcome_records_take_a_schema() -> None:
    """`parse` and `outcome_from_dict` take a schema dict, and a record whose value breaks the
    schema is refused."""
    result = healjson.parse('Sure: {"name": "Ada", "age": "36"}', PERSON)
    assert result.valid
    assert {"name": "Ada", "age": 36} == result.instance
    record = healjson.validate(GOOD, PERSON).to_dict()
    again = healjson.outcome_from_dict(record, PERSON)
    assert {"name": "Ada", "age": 36} == healed(again)
    with pytest.raises(ValueError, match="not a healjson outcome record"):
        healjson.outcome_from_dict({**record, "value": {"name": "Ada"}}, PERSON)


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


@settings(max_examples=30, deadline=None)
@given(
    qtys=st.lists(st.sampled_from([0, 1, 2, "3", "two", -1]), min_size=1, max_size=5),
    cuts=st.lists(st.integers(0, 400), max_size=8),
    tool=st.booleans(),
    whole_repair=st.booleans(),
)
def test_a_streamed_array_schema_keeps_the_stream_promise(
    qtys: list[Any], cuts: list[int], tool: bool, whole_repair: bool
) -> None:
    """Streamed or not, one outcome; the items handed out, their status and the outcome are
    those of the pydantic model the schema describes (`list[Line]`), item by item."""
    text = json.dumps([{"sku": f"S{i}", "qty": qty} for i, qty in enumerate(qtys)])
    bad = [i for i, qty in enumerate(qtys) if qty in (0, -1, "two")]
    fixed = range(len(qtys)) if whole_repair else bad
    repair = json.dumps([{"sku": f"S{i}", "qty": 1} for i in fixed])
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    pieces = [text[a:b] for a, b in itertools.pairwise(points)]

    def run(target: Any) -> tuple[Any, ...]:
        replies: list[Any] = [pieces, repair, repair]

        def call(messages: Any, **params: Any) -> Any:
            reply = replies.pop(0)
            if isinstance(reply, str):
                return reply
            chunks = [Delta(tool_arguments=p) if tool else p for p in reply]
            return iter([*chunks, Delta(finish_reason="stop")])

        stream = Healer(target).stream(call, "lines?")
        given = [_dumped(item) for item in stream.items()]
        outcome = stream.outcome
        value = _dumped(outcome.value) if isinstance(outcome, Healed) else None
        return type(outcome).__name__, outcome.calls, value, given, stream.item_status

    plain, typed = run(LINES), run(list[Line])
    assert typed == plain
    whole = Healer(LINES).run(ScriptedModel([text, repair, repair]), "lines?")
    assert (type(whole).__name__, whole.calls) == plain[:2]


def _dumped(value: Any) -> Any:
    if isinstance(value, list):
        return [_dumped(item) for item in value]
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def test_a_one_value_stream_of_an_object_schema_stops_at_a_final_breach() -> None:
    """A top-level field out of its bounds is final whatever follows (the stream stops and
    the repair starts at once); a number word, a key in another case, or a schema relating
    its fields to each other is left to the final check. Each ends as the unstreamed run."""
    long_name = "y" * 300
    related = {**PERSON, "dependentRequired": {"role": ["address"]}}
    cases = [
        (PERSON, '{"age": -4, "name": "' + long_name + '"}', True),
        (PERSON, '{"address": {"zip": "1"}, "name": "' + long_name + '", "age": 3}', True),
        (PERSON, '{"age": "four", "name": "' + long_name + '"}', False),
        (PERSON, '{"AGE": -4, "name": "' + long_name + '"}', False),
        (related, '{"age": -4, "name": "' + long_name + '"}', False),
    ]
    for schema, text, stops in cases:
        pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
        consumed: list[int] = []
        call = in_turn(tool_stream(pieces, consumed), lambda messages, **_: GOOD)
        healer = Healer(schema)
        outcome = healer.stream(call, "who?").finish()
        assert (Flag.STREAM_ABORTED in outcome.attempts[0].flags) is stops, text
        assert (len(consumed) < len(pieces)) is stops, text
        whole = healer.run(ScriptedModel([text, GOOD]), "who?")
        assert (type(whole), whole.calls, whole.value) == (
            type(outcome),
            outcome.calls,
            outcome.value,
        )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_streamed_object_schema_has_the_unstreamed_outcome(data: st.DataObject) -> None:
    """A generated model's schema, JSON near it as one streamed value (a tool call's
    arguments), any chunking: the stream (which may stop early) ends as the unstreamed run."""
    spec = data.draw(specs())
    schema = model_of(spec).model_json_schema()
    text = json.dumps(data.draw(data_for(spec)))
    good = json.dumps(data.draw(data_for(spec)))
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=6))
    points = sorted({0, len(text), *cuts})
    pieces = [text[a:b] for a, b in itertools.pairwise(points)]
    healer = Healer(schema)
    whole = healer.run(ScriptedModel([text, good, good]), "x?")
    repair = lambda messages, **_: good  # noqa: E731
    streamed = healer.stream(in_turn(tool_stream(pieces, []), repair, repair), "x?").finish()
    assert (type(whole), whole.calls) == (type(streamed), streamed.calls), text
    if isinstance(whole, Healed):
        assert whole.value == streamed.value
