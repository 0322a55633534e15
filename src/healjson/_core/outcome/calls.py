"""An answer to a request with the caller's own tools: its text and every call (`ToolCalls`).

The value of a tool-call run's outcome, beside `Outcome`: each call (`HealedCall`) carries its
id, the tool's name, its validated arguments, the text the model sent and the local repairs L1
applied to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from healjson._core.diagnostic import jsonable
from healjson._core.flags import Flag
from healjson._core.wire.reply import FUNCTION

__all__ = ["HealedCall", "ToolCalls"]


@dataclass(frozen=True, slots=True)
class HealedCall:
    """One tool call of an answer: its `id` (the one the next turn answers it by), the tool's
    `name` and its `arguments`: the validated value (the tool's pydantic model instance when
    the tool was declared from one, else the JSON value) when `ok`; in a `Degraded` outcome's
    `partial`, a call that did not pass has its arguments text as sent there instead. `raw` is
    the arguments text as the model sent it; `flags` the local repairs L1 applied to it.

    `kind` is `"function"`, or `"custom"` for a call of a custom tool (OpenAI chat's `{"type":
    "custom", "custom": {"name", "input"}}`): its `arguments` and `raw` are then both its input,
    the free text exactly as the model sent it (never read as JSON)."""

    id: str
    name: str
    arguments: Any
    raw: str
    ok: bool = True
    flags: tuple[Flag, ...] = ()
    kind: str = FUNCTION


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """An answer to a request with tools: the message text (`None`: there was none) and every
    call, in the order the model made them (parallel calls included; `()`: no call)."""

    text: str | None
    calls: tuple[HealedCall, ...] = ()

    def named(self, name: str) -> tuple[HealedCall, ...]:
        """The calls of the tool `name`, in order."""
        return tuple(call for call in self.calls if call.name == name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data: the text and each call (`arguments` as JSON data), as outcome
        records and traces show the value."""
        return {"text": self.text, "calls": [_call_data(call) for call in self.calls]}

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        """`to_dict()`, under the name value renderers read (as for a pydantic model)."""
        return self.to_dict()


def _call_data(call: HealedCall) -> dict[str, Any]:
    """One call as JSON data (its `kind` named when it is not a function call's)."""
    data = {
        "id": call.id,
        "name": call.name,
        "arguments": jsonable(call.arguments),
        "raw": call.raw,
        "ok": call.ok,
        "flags": [str(flag) for flag in call.flags],
    }
    return data if call.kind == FUNCTION else {**data, "kind": call.kind}
