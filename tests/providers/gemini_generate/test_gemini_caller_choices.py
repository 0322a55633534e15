"""A Gemini caller's own config never keeps `response_model`'s schema from the model: a JSON
mime type that names no schema is sent as given with the schema stated as the `json_object`
tier states it, a schema of the caller's is sent as given, and a `tool_config` that forces a
function call (mode `ANY`) is refused at the call. The real SDK over real HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google import genai
from google.genai import types as gt
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson.testing import ScriptedServer
from pinned import pinned
from sdk_calls import TLS, close_gemini

GOOD = '{"name": "Ann", "age": 31}'
PROMPT = "Ann is 31. Extract the person as JSON."


class Person(BaseModel):
    name: str
    age: int


def _client(server: ScriptedServer, **options: Any) -> tuple[Any, Any]:
    http = gt.HttpOptions(
        base_url=server.gemini_base_url, timeout=10_000, client_args={"verify": TLS}
    )
    bare = genai.Client(api_key="test-key", http_options=http)
    return bare, healjson.wrap(bare, **options)


def _sent(config: dict[str, Any] | None, **options: Any) -> tuple[Any, dict[str, Any]]:
    """The outcome of one healed call with `config`, and the body it sent."""
    with ScriptedServer([GOOD], repeat=True) as server:
        bare, client = _client(server, **options)
        try:
            outcome = client.models.generate_content(
                model="gemini-test", contents=PROMPT, config=config, response_model=Person
            )
        finally:
            close_gemini(bare)
        body = server.requests[0].body
    return outcome, body


def _system(body: dict[str, Any]) -> Any:
    return body.get("systemInstruction") or body.get("system_instruction")


def _mime(body: dict[str, Any]) -> Any:
    config = body.get("generationConfig") or {}
    return config.get("responseMimeType")


def test_a_json_mime_type_of_the_callers_gets_the_schema_as_the_tier_states_it() -> None:
    """`response_mime_type="application/json"` with no schema: sent as given, with the system
    instruction the `json_object` tier sends."""
    outcome, body = _sent({"response_mime_type": "application/json"})
    _, tier = _sent(None, json_mode="json_object")
    assert isinstance(outcome, Healed)
    assert "application/json" == _mime(body)
    assert _system(tier) is not None
    assert _system(tier) == _system(body)


def test_a_schema_of_the_callers_is_sent_as_given_with_no_instruction() -> None:
    """`response_json_schema` of the caller's: sent unchanged, no schema instruction added."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    config = {"response_mime_type": "application/json", "response_json_schema": schema}
    outcome, body = _sent(config)
    assert isinstance(outcome, Healed)
    assert schema == body["generationConfig"]["responseJsonSchema"]
    assert _system(body) is None


MODES = ["ANY", "any", gt.FunctionCallingConfigMode.ANY, "AUTO", "NONE", "auto"]


@pinned(max_examples=12)
@given(mode=st.sampled_from(MODES), as_object=st.booleans(), named=st.booleans())
def test_a_tool_config_is_refused_exactly_when_it_forces_a_call(
    mode: Any, as_object: bool, named: bool
) -> None:
    """A `tool_config` in mode `ANY` (any spelling, a dict or the SDK's object, with or without
    allowed names) raises TypeError before any request; `AUTO` and `NONE` heal."""
    calling: dict[str, Any] = {"mode": mode}
    if named:
        calling["allowed_function_names"] = ["lookup"]
    tool_config: Any = {"function_calling_config": calling}
    if as_object:
        tool_config = gt.ToolConfig(function_calling_config=gt.FunctionCallingConfig(**calling))
    forces = str(getattr(mode, "value", mode)).upper() == "ANY"
    with ScriptedServer([GOOD], repeat=True) as server:
        bare, client = _client(server)
        try:
            if forces:
                with pytest.raises(TypeError, match="forces a function call"):
                    client.models.generate_content(
                        model="gemini-test",
                        contents=PROMPT,
                        config={"tool_config": tool_config},
                        response_model=Person,
                    )
                assert [] == server.requests
            else:
                outcome = client.models.generate_content(
                    model="gemini-test",
                    contents=PROMPT,
                    config={"tool_config": tool_config},
                    response_model=Person,
                )
                assert isinstance(outcome, Healed)
        finally:
            close_gemini(bare)


def test_a_camel_case_config_is_read_as_the_sdk_reads_it() -> None:
    """A dict config in the SDK's camelCase (`systemInstruction`, `responseMimeType`,
    `toolConfig`) is read as its snake_case twin: the instruction is sent beside the tier's,
    the mime type is the caller's own format, and a forcing `toolConfig` is refused."""
    config = {"systemInstruction": "Be terse.", "responseMimeType": "application/json"}
    outcome, body = _sent(config, json_mode="json_object")
    assert isinstance(outcome, Healed)
    assert "application/json" == _mime(body)
    assert "Be terse." in json.dumps(_system(body))
    assert "JSON schema" in json.dumps(_system(body))
    forcing = {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}
    with pytest.raises(TypeError, match="forces a function call"):
        _sent(forcing)
