"""A wide model's first healed stream costs work linear in its fields: the early judge builds one
stand-in model per target, not one per field (each of which cost the whole model), and still
stops a stream at the first field no later text can fix."""

from __future__ import annotations

import json
from typing import Any

import openai
from pydantic import BaseModel, Field, create_model

import healjson
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

WIDTH = 200


def wide(name: str, **overrides: Any) -> type[BaseModel]:
    fields: dict[str, Any] = {f"field_{i}": (int, ...) for i in range(WIDTH)}
    fields.update(overrides)
    model: type[BaseModel] = create_model(name, **fields)
    return model


def answer(**changes: Any) -> str:
    return json.dumps({f"field_{i}": i for i in range(WIDTH)} | changes)


def stream(server: ScriptedServer, model: type[BaseModel]) -> Any:
    http = openai.DefaultHttpxClient(verify=TLS)
    with openai.OpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, http_client=http
    ) as sdk:
        healing = healjson.wrap(sdk).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], response_model=model,
            stream=True,
        )  # fmt: skip
        for _ in healing:
            pass
        return healing.outcome


def test_the_first_stream_of_a_wide_model_builds_one_stand_in() -> None:
    """Judging each of 200 fields as it closes builds one stand-in subclass of the model for
    the whole stream (a subclass per field made the first stream quadratic in the fields)."""
    model = wide("Wide200")
    with ScriptedServer([ScriptedReply(content=answer(), chunk_chars=7)]) as server:
        outcome = stream(server, model)
    assert outcome.ok
    assert len(model.__subclasses__()) <= 1


def test_a_wide_stream_still_stops_at_a_field_no_text_can_fix() -> None:
    """A breach in field 50 of 200 (a bound) still stops the stream there: the repair call
    follows and heals, and the first answer was read only up to the breach."""
    model = wide("WideBound", field_50=(int, Field(ge=0)))
    bad = answer(field_50=-1)
    replies = [ScriptedReply(content=bad, chunk_chars=7), ScriptedReply(content=answer())]
    with ScriptedServer(replies) as server:
        outcome = stream(server, model)
        calls = len(server.requests)
    assert outcome.ok
    assert 2 == calls
    first = outcome.attempts[0].raw_text or ""
    assert '"field_50": -1' in first
    assert len(first) < len(bad) / 2
