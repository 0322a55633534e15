"""The arguments a LangChain tool gets from a healed tool call, for `healjson.langchain`.

LangChain's `ToolNode` validates a call's `args` with the tool's own schema before the tool
runs: what it is given must be JSON data, never a dump of the instance healjson validated (a
dump masks a `SecretStr`, applies the model's serializers and aliases, and hands values an
`AfterValidator` made to a second validation). So a call's arguments are:

* the model's own arguments, exactly as it sent them (its text read as JSON), when nothing was
  repaired (no flag on the call);
* the JSON data L1 made of its text (repaired, keys aligned: `Evaluation.data`), which the
  accepted instance is the validation of, when something was;
* the dump of the value only when a `"fix"` or `"drop"` rule made it (the value is then the
  fix's own object: no JSON data exists that it is the validation of).

Needs nothing of LangChain; imported by `healjson.langchain` only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from .core import NOTHING, Evaluation, HealedCall

__all__ = ["call_arguments", "json_data"]


def call_arguments(call: HealedCall, accepted: Sequence[Evaluation]) -> Any:
    """The JSON data `call` reaches its tool with (see the module); `accepted`: the evaluations
    that accepted a value during the run (`accepted_evaluations`)."""
    if not call.flags:
        own = _sent(call.raw)
        if own is not NOTHING:
            return own
    for evaluation in reversed(accepted):
        if evaluation.instance is call.arguments:
            if evaluation.fixed or evaluation.dropped or evaluation.data is NOTHING:
                break
            return evaluation.data
    return json_data(call.arguments)


def _sent(raw: str) -> Any:
    """A call's arguments text as JSON data, as LangChain reads it (no arguments at all: the
    empty object); NOTHING when it is not a JSON object."""
    if not raw.strip():
        return {}
    try:
        found = json.loads(raw, strict=False)
    except ValueError:
        return NOTHING
    return found if isinstance(found, dict) else NOTHING


def json_data(value: Any) -> Any:
    """A validated value as JSON data (by alias): for the history, or a value a rule made."""
    if isinstance(value, Mapping):
        return dict(to_jsonable_python(value, by_alias=True))
    return to_jsonable_python(value, by_alias=True)
