"""A DSPy LM's API key that the model echoes is kept nowhere: the adapter's run redacts with the
LM's own credentials (its `api_key`), in the outcome, its records and traces, the events and the
`AdapterParseError` DSPy raises."""

from __future__ import annotations

import json
from typing import Any

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError

from healjson.dspy import HealAdapter
from healjson.testing import ScriptedReply, ScriptedServer, capture_events

KEY = "sk-proj-Q9x7LmN2pR4tV6wY8zA1bC3dE5fG"


class Count(dspy.Signature):
    """Count."""

    text: str = dspy.InputField()
    count: int = dspy.OutputField()


def _completion(content: str) -> dict[str, Any]:
    """A chat completion answering `content`."""
    choice = {"index": 0, "finish_reason": "stop",
              "message": {"role": "assistant", "content": content}}  # fmt: skip
    return {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [choice], "usage": {"prompt_tokens": 5, "completion_tokens": 5}}  # fmt: skip


@pytest.mark.parametrize("spelled", [KEY, KEY.replace("s", "\\u0073", 1)], ids=["plain", "escaped"])
def test_an_echoed_lm_key_is_kept_nowhere(spelled: str) -> None:
    """Three answers echoing the key (none healable): the error and everything healjson keeps
    or emits of the run hold no form of it."""
    bad = f"[[ ## count ## ]]\nmy key is {spelled}\n\n[[ ## completed ## ]]"
    bodies = [json.dumps(_completion(bad))] * 3
    with ScriptedServer([ScriptedReply(body=body) for body in bodies]) as server:
        lm = dspy.LM("openai/m", api_base=server.base_url, api_key=KEY, cache=False, num_retries=0)
        with (
            capture_events(include_content=True) as events,
            dspy.context(lm=lm, adapter=HealAdapter()),
            pytest.raises(AdapterParseError) as raised,
        ):
            dspy.Predict(Count)(text="t")
    outcome = raised.value.outcome  # type: ignore[attr-defined]
    places = {
        "error": str(raised.value),
        "lm_response": str(getattr(raised.value, "lm_response", "")),
        "raw_text": outcome.raw_text or "",
        "to_dict": json.dumps(outcome.to_dict()),
        "trace": outcome.trace("json"),
        "repr": repr(outcome),
        "events": json.dumps(events, default=str),
    }
    assert [] == [name for name, text in places.items() if KEY in text or KEY[1:] in text]
