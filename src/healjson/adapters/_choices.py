"""Calls refused before any request because the caller's own parameters rule out the answer a
`response_model=` asks for: a `tool_choice` that forces a tool call (`check_tool_choice`),
beside `_base.check_one_answer`'s several answers."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from healjson._providers.caller_choices import forces_call

__all__ = ["check_tool_choice"]


def check_tool_choice(
    params: Mapping[str, Any],
    where: str,
    forces: Callable[[Any], bool] = forces_call,
    model: str = "response_model",
) -> None:
    """Raise TypeError for a `response_model=` call whose `tool_choice` forces a tool call
    (`forces`: the provider's reading of it): the model must answer with a call then, never
    with the JSON answer, so every attempt would be spent for nothing. `model`: the parameter
    that asked for the answer (`response_model`, or the SDK's own `response_format`,
    `text_format`, `output_format`). Callers test `"tool_choice" in params` first (the common
    call has none)."""
    choice = params.get("tool_choice")
    if choice is None or not forces(choice):
        return
    raise TypeError(
        f"{where}: tool_choice={choice!r} forces a tool call, so the model cannot give the JSON "
        f"answer {model}= asks for. Drop tool_choice (or pass one that lets the model answer "
        f"in text) to heal the answer, or pass heal_tools=True instead of {model}= to heal the "
        f"tool calls."
    )
