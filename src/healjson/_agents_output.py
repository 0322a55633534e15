"""The Agents SDK output schema through which `heal_final_output` hands on its healed value as
validated once (`HealedOutputSchema`).

The SDK validates the final output an `invalid_final_output` handler returns once more: its
`validate_handler_final_output` dumps it to JSON with the output schema's type adapter and
calls the agent's output schema's `validate_json` on that text, and the run's final output is
what that returns. For the SDK's own `AgentOutputSchema` that is a second validation (strict,
from JSON): a validator that changes a valid value (dollars to cents) runs twice. No handler
result can avoid it (`RunErrorHandlerResult` has no "already validated" form); the output
schema can: the SDK accepts any `AgentOutputSchemaBase` as `output_type` and takes whatever
its `validate_json` returns. `HealedOutputSchema` is the SDK's `AgentOutputSchema` (the same
JSON schema, strictness, wrapping, name and validation of the model's replies) whose
`validate_json` returns the value `heal_final_output` healed, itself, when it is called with the
JSON the SDK made of that value right after the handler returned it (`hand_over`); every other
text is validated as the SDK does.

The hand-over is kept in a context variable: the SDK awaits the handler in the run's own task
and validates its result without yielding in between, so it is seen by that validation only,
never by another run (another task, another thread) sharing the agent; the validation takes it
(a value handed over is delivered at most once), and a text that is not the handed value's JSON
is validated as the SDK does.

`as_sdk_output` runs the SDK's second validation of a handler's output first, as a check (a
value it would refuse or change is not handed on); `handed_over` hands a value to a
`HealedOutputSchema`. `output_schema` is the SDK's schema for an agent's output, `final_text`
the reply the SDK validated.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from agents import AgentOutputSchema, AgentOutputSchemaBase, ItemHelpers

__all__ = [
    "HealedOutputSchema",
    "as_sdk_output",
    "final_text",
    "hand_over",
    "handed_over",
    "output_schema",
]

_WRAPPER_KEY = "response"  # the SDK's `agent_output._WRAPPER_DICT_KEY`

_HANDED: ContextVar[tuple[HealedOutputSchema, str, Any] | None] = ContextVar(
    "healjson_agents_handed_output", default=None
)


class HealedOutputSchema(AgentOutputSchema):
    """An agent's `output_type` under which a final output `heal_final_output` healed is the
    run's final output as healjson validated it, never validated a second time by the SDK:
    `Agent(output_type=HealedOutputSchema(Answer))` (`strict_json_schema` as for the SDK's
    `AgentOutputSchema`). The model sees the same JSON schema, and a reply that validates is
    validated as the SDK does; only the value the handler healed is taken as it is."""

    def validate_json(self, json_str: str) -> Any:
        """The value `heal_final_output` handed over when `json_str` is the JSON the SDK made
        of it; else the SDK's own validation of `json_str`."""
        handed = _HANDED.get()
        if handed is not None:
            _HANDED.set(None)  # taken once, by the validation that follows the handler
            schema, text, value = handed
            if schema is self and text == json_str:
                return value
        return super().validate_json(json_str)


def hand_over(schema: HealedOutputSchema, value: Any) -> bool:
    """Make `value` what `schema.validate_json` returns for the JSON the SDK is about to make of
    it (as its `validate_handler_final_output` does: the schema's type adapter's dump, in the
    `response` wrapper when the schema wraps its type). False when that dump fails (the SDK
    would refuse the value: nothing is handed over)."""
    payload = value
    wrapped = getattr(schema, "_is_wrapped", False)
    if wrapped and not (isinstance(value, dict) and _WRAPPER_KEY in value):  # the SDK's rule
        payload = {_WRAPPER_KEY: value}
    try:
        text = schema._type_adapter.dump_json(payload, warnings="none")
    except Exception:  # a serializer that fails: the SDK raises its UserError on it
        return False
    _HANDED.set((schema, text.decode(), value))
    return True


def as_sdk_output(agent: Any, schema: AgentOutputSchema, adapter: Any, value: Any) -> str | None:
    """The JSON of `value` as the final output the SDK takes from a handler, when the SDK's
    reading of it gives `value` back; None when it would refuse or change it.

    The SDK validates a handler's final output again (its `validate_handler_final_output`:
    the output type's JSON dump, in its `response` wrapper for a type that is not an object,
    validated in its strict mode), and takes an object only (the L1 data is no value of the
    output type). So that reading is run here first, as a check whose result is thrown away:
    a validator that changes a valid value (dollars to cents) would change the value the
    contracts judged, which is never handed on. `adapter`: the output type's (its dump is the
    SDK's: the type's own aliases)."""
    from agents.run_internal import error_handlers

    reads = getattr(error_handlers, "validate_handler_final_output", None)
    try:
        text = adapter.dump_json(value)
        if reads is not None:
            again = reads(agent, value)
        else:  # pragma: no cover - another SDK release: the same reading, as documented
            shown = text.decode()
            wrapped = getattr(schema, "_is_wrapped", False)
            again = schema.validate_json(f'{{"response": {shown}}}' if wrapped else shown)
        # both: a JSON that hides what changed (a `SecretStr` dumps as its mask) is no proof
        same = adapter.dump_json(again) == text and bool(again == value)
    except Exception:  # the SDK's UserError / ModelBehaviorError, a serializer that fails
        return None
    return text.decode() if same else None


def handed_over(schema: HealedOutputSchema, adapter: Any, value: Any) -> str | None:
    """The JSON of `value`, handed over to `schema` (its `validate_json` returns `value` itself
    for the SDK's JSON of it: no second validation); None when the SDK could not dump it."""
    try:
        text = adapter.dump_json(value).decode()
    except Exception:  # a serializer that fails: the SDK would refuse the value too
        return None
    return text if hand_over(schema, value) else None


def output_schema(agent: Any) -> AgentOutputSchema | None:
    """The SDK's schema for the agent's output (None: plain text, or a custom schema class
    whose type healjson cannot know)."""
    declared = getattr(agent, "output_type", None)
    if declared is None or declared is str:
        return None
    if isinstance(declared, AgentOutputSchema):
        return None if declared.is_plain_text() else declared
    if isinstance(declared, AgentOutputSchemaBase):
        return None
    return AgentOutputSchema(declared)


def final_text(run_data: Any) -> str | None:
    """The text of the last message of the model's last response (what the SDK validated)."""
    responses = getattr(run_data, "raw_responses", None) or ()
    for response in reversed(responses):
        for item in reversed(getattr(response, "output", None) or ()):
            text = ItemHelpers.extract_text(item)
            if text is not None:
                return text
    return None
