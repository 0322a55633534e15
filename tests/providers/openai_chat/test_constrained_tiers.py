"""The local servers' tiers: `json_mode="constrained"` sends the full JSON schema as a non-strict
`response_format` json_schema (vLLM, SGLang, llama.cpp's server, Ollama, LM Studio enforce it as
sent), `json_mode="structured_outputs"` vLLM's `extra_body={"structured_outputs": ...}` (a
`choice` for a target of literal values); a 400 steps each down, remembered per client. The real
openai SDK over real HTTP against `ScriptedServer`."""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Iterator
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson._core.target.target import target_for
from healjson._providers.openai_chat import batch_body, literal_values, structured_outputs
from healjson.testing import ScriptedReply, ScriptedServer

USER = [{"role": "user", "content": "Classify."}]


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Scores(BaseModel):
    by_name: dict[str, int]
    kind: int | str


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@contextlib.contextmanager
def _client(server: ScriptedServer, **wrap: Any) -> Iterator[Any]:
    """`healjson.wrap(OpenAI(...), **wrap)` on `server`, the SDK client closed after."""
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
        yield healjson.wrap(sdk, **wrap)


def test_constrained_sends_the_full_schema_non_strict() -> None:
    """A map, a union and a recursive model keep their schema (strict mode cannot say a map)."""
    for target, answer in (
        (Scores, '{"by_name": {"a": 1}, "kind": 2}'),
        (Tree, '{"name": "root", "children": [{"name": "leaf", "children": []}]}'),
    ):
        with ScriptedServer([answer]) as server, _client(server, json_mode="constrained") as client:
            outcome = client.chat.completions.create(
                model="m", messages=USER, response_model=target
            )
            sent = server.requests[0]
        assert isinstance(outcome, Healed), outcome
        assert sent.response_format == {
            "type": "json_schema",
            "json_schema": {
                "name": target.__name__,
                "schema": target.model_json_schema(),
                "strict": False,
            },
        }
        assert not sent.system  # no schema in the prompt: the server enforces it


def test_structured_outputs_sends_vllms_json_and_choice() -> None:
    """The `structured_outputs` tier sends vLLM's `json` schema for an object target and a
    `choice` list for an enum or a `Literal`."""
    with (
        ScriptedServer(['{"by_name": {}, "kind": "x"}', '"green"', '"b"']) as server,
        _client(server, json_mode="structured_outputs") as client,
    ):
        first = client.chat.completions.create(model="m", messages=USER, response_model=Scores)
        second = client.chat.completions.create(model="m", messages=USER, response_model=Color)
        third = client.chat.completions.create(
            model="m", messages=USER, response_model=Literal["a", "b"]
        )
        bodies = [request.body or {} for request in server.requests]
    assert isinstance(first, Healed)
    assert isinstance(second, Healed)
    assert isinstance(third, Healed)
    assert second.value is Color.GREEN
    assert third.value == "b"
    # a schema asks for compact JSON too: no whitespace for a local model to loop on
    assert bodies[0]["structured_outputs"] == {
        "json": Scores.model_json_schema(),
        "disable_any_whitespace": True,
    }
    # each choice is the value's JSON text: the answer stays one JSON value
    assert bodies[1]["structured_outputs"] == {"choice": ['"red"', '"green"']}
    assert bodies[2]["structured_outputs"] == {"choice": ['"a"', '"b"']}
    assert all("response_format" not in body for body in bodies)


def test_structured_outputs_keeps_the_callers_extra_body() -> None:
    """The `structured_outputs` tier keeps the other fields of the caller's `extra_body`."""
    with (
        ScriptedServer(['"red"']) as server,
        _client(server, json_mode="structured_outputs") as client,
    ):
        client.chat.completions.create(
            model="m", messages=USER, response_model=Color, extra_body={"top_k": 5}
        )
        body = server.requests[0].body or {}
    assert body["top_k"] == 5
    assert body["structured_outputs"] == {"choice": ['"red"', '"green"']}


def test_a_callers_own_server_format_is_sent_as_given() -> None:
    """A caller's own `structured_outputs` in `extra_body` is sent as given, not replaced."""
    own = {"structured_outputs": {"regex": "[a-z]+"}}
    with (
        ScriptedServer(['"red"']) as server,
        _client(server, json_mode="structured_outputs") as client,
    ):
        client.chat.completions.create(
            model="m", messages=USER, response_model=Color, extra_body=own
        )
        body = server.requests[0].body or {}
    assert body["structured_outputs"] == {"regex": "[a-z]+"}


def test_a_rejected_constrained_tier_steps_down_and_is_remembered() -> None:
    """A rejected `constrained` tier steps down to JSON mode, and the client remembers it for the
    next call."""
    rejected = ScriptedReply.error(400, "response_format json_schema is not supported")
    good = '{"by_name": {"a": 1}, "kind": 2}'
    with (
        ScriptedServer([rejected, good, good]) as server,
        _client(server, json_mode="constrained") as client,
    ):
        first = client.chat.completions.create(model="m", messages=USER, response_model=Scores)
        second = client.chat.completions.create(model="m", messages=USER, response_model=Scores)
        formats = [request.response_format for request in server.requests]
    assert isinstance(first, Healed)
    assert isinstance(second, Healed)
    assert formats[0] is not None
    assert formats[0]["type"] == "json_schema"
    assert formats[1:] == [{"type": "json_object"}, {"type": "json_object"}]
    assert client.format.mode == "json_object"


def test_a_rejected_structured_outputs_tier_steps_down_to_constrained() -> None:
    """A server that rejects `structured_outputs` is asked again with a non-strict JSON schema,
    the `constrained` tier."""
    rejected = ScriptedReply.error(400, "Unknown field: structured_outputs")
    with (
        ScriptedServer([rejected, '"red"']) as server,
        _client(server, json_mode="structured_outputs") as client,
    ):
        outcome = client.chat.completions.create(model="m", messages=USER, response_model=Color)
        second = server.requests[1]
    assert isinstance(outcome, Healed)
    assert outcome.value is Color.RED
    assert "structured_outputs" not in (second.body or {})
    assert second.response_format is not None
    assert second.response_format["json_schema"]["strict"] is False
    assert client.format.mode == "constrained"


def test_native_adapters_refuse_the_local_server_tiers() -> None:
    """The Anthropic adapter refuses the local-server tiers with a message listing the modes it
    takes."""
    import anthropic

    for mode in ("constrained", "structured_outputs"):
        with (
            anthropic.Anthropic(api_key="k", base_url="http://127.0.0.1:9") as sdk,
            pytest.raises(ValueError, match="json_mode must be one of"),
        ):
            healjson.wrap(sdk, json_mode=mode)


def test_literal_values_reads_enums_consts_and_unions_of_them() -> None:
    """`literal_values` reads an enum's or `Literal`'s values, and none for a nullable union or a
    non-literal type."""
    assert literal_values(target_for(Color).json_schema) == ["red", "green"]
    assert literal_values(target_for(Literal[1, 2]).json_schema) == [1, 2]
    assert literal_values(target_for(Literal["a"] | None).json_schema) is None  # null: a type
    assert literal_values(target_for(int).json_schema) is None
    assert structured_outputs(target_for(Scores)) == {
        "json": Scores.model_json_schema(),
        "disable_any_whitespace": True,
    }


def test_a_batch_line_carries_the_server_fields_flat() -> None:
    """A Batch API line for the `structured_outputs` tier carries the server field at the top of
    its JSON body."""
    body = batch_body("structured_outputs", target_for(Color), USER, {"model": "m"})
    assert body["structured_outputs"] == {"choice": ['"red"', '"green"']}
    assert "extra_body" not in body
    json.dumps(body)


def test_the_scripted_server_records_each_formats_constraint_and_can_honour_a_choice() -> None:
    """`RecordedRequest.structured_output` reads vLLM's `structured_outputs`, llama.cpp's
    `json_schema` and a chat `response_format`; a script callable answers the first choice."""

    def first_choice(body: dict[str, Any]) -> str:
        return str(body["structured_outputs"]["choice"][0])

    with (
        ScriptedServer([first_choice, '{"by_name": {}, "kind": 1}', "{}"]) as server,
        _client(server, json_mode="structured_outputs") as client,
        _client(server, json_mode="constrained") as constrained,
    ):
        picked = client.chat.completions.create(model="m", messages=USER, response_model=Color)
        constrained.chat.completions.create(model="m", messages=USER, response_model=Scores)
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk:
            sdk.chat.completions.create(
                model="m", messages=USER, extra_body={"json_schema": {"type": "object"}}
            )
        recorded = [request.structured_output for request in server.requests]
    assert isinstance(picked, Healed)
    assert picked.value is Color.RED
    assert recorded == [
        {"choice": ['"red"', '"green"']},
        {"json": Scores.model_json_schema()},
        {"json": {"type": "object"}},
    ]


def test_the_command_line_offers_the_local_server_tiers() -> None:
    """The command line's `--json-mode` offers `constrained` and `structured_outputs`."""
    from healjson._cli.options import JsonModeChoice

    assert {"constrained", "structured_outputs"} <= {choice.value for choice in JsonModeChoice}
