"""The OpenAI Agents SDK wraps an output type that is not an object in `{"response": ...}`: that
key is the SDK's, never data. `heal_final_output` heals the value inside it, even where the
wrapper itself would also fit the type (a union with a mapping, `Any`, a list of objects)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import Agent, AgentOutputSchema, OpenAIChatCompletionsModel, Runner
from openai import AsyncOpenAI, DefaultAsyncHttpxClient

from healjson.agents import heal_final_output
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS


def final_output(output_type: Any, reply: str) -> Any:
    """The run's final output when the model answers `reply` once (the SDK refusing it, the
    handler heals it); the SDK's `ModelBehaviorError` is raised when the handler gives up."""
    with ScriptedServer([ScriptedReply(content=reply)]) as server:
        http = DefaultAsyncHttpxClient(verify=TLS)
        client = AsyncOpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        )
        model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
        # not strict: OpenAI's strict schemas have no open mappings (the scripted model
        # answers whatever it is told)
        schema = AgentOutputSchema(output_type, strict_json_schema=False)
        agent = Agent(name="lister", model=model, output_type=schema)

        async def run() -> Any:
            try:
                result = await Runner.run(
                    agent,
                    "List them.",
                    error_handlers={"invalid_final_output": heal_final_output()},
                )
            finally:
                await client.close()
            return result.final_output

        return asyncio.run(run())


@pytest.mark.parametrize(
    ("output_type", "reply", "expected"),
    [
        (dict[str, Any] | list[int], '{"response": [1, 2],}', [1, 2]),
        (list[dict[str, Any]], '{"response": [{"a": 1}],}', [{"a": 1}]),
        (list[dict[str, Any]], '{"response": {"a": 1},}', [{"a": 1}]),
        (list[Any], '{"response": [1],}', [1]),
        (Any, '{"response": {"a": 1},}', {"a": 1}),
        (list[int], "```json\n[1, 2, 3]\n```", [1, 2, 3]),
    ],
    ids=["union-with-a-mapping", "list-of-objects", "one-object", "list", "any", "bare-answer"],
)
def test_the_sdks_wrapper_key_is_never_data(output_type: Any, reply: str, expected: Any) -> None:
    """A broken answer in the SDK's `{"response": ...}` wrapper heals to the value inside it,
    also where the wrapper object would fit the type (or make two readings fit); an answer
    without the wrapper heals as before."""
    assert expected == final_output(output_type, reply)
