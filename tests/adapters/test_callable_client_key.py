"""`wrap_callable` over one of an SDK client's own methods (`sdk.chat.completions.create`)
knows that client's key, as `wrap(sdk)` does: an error body or an answer echoing a key of no
known shape leaves it in no record."""

from __future__ import annotations

import json

import openai
import pytest
from pydantic import BaseModel

import healjson
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

KEY = "zq-CLIENTKEY-4f8a9b7c6d5e4f3a2b1c"


class Row(BaseModel):
    value: int


@pytest.mark.parametrize(
    "reply",
    [
        ScriptedReply.error(401, f"Incorrect API key provided: {KEY}"),
        ScriptedReply(content=f'{{"value": "the key I was sent is {KEY}"}}'),
    ],
    ids=["error-body", "answer"],
)
def test_a_bound_sdk_method_makes_its_clients_key_known(reply: ScriptedReply) -> None:
    """Whatever echoes the key, the outcome's records hold it masked."""
    with (
        ScriptedServer([reply]) as server,
        openai.OpenAI(
            base_url=server.base_url,
            api_key=KEY,
            max_retries=0,
            http_client=openai.DefaultHttpxClient(verify=TLS),
        ) as sdk,
    ):
        healed = healjson.wrap_callable(sdk.chat.completions.create)
        outcome = healed(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            response_model=Row,
            policy=healjson.HealPolicy(max_attempts=1),
        )

    assert not outcome.ok
    kept = json.dumps(outcome.to_dict()) + outcome.trace() + repr(outcome)
    assert KEY not in kept
    assert "[redacted]" in kept
