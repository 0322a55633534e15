"""What a caller's own parameters choose, read the same way by every OpenAI-shaped adapter.

- Output formats: a caller's own format that names a schema (`response_format` json_schema, a
  server's own field in `extra_body`, the Responses API's `text.format` json_schema) is sent as
  given; one that names none (`json_object`, `text`) is sent as given too, with the answer's
  schema stated in the prompt as healjson's own `json_object` tier states it
  (`tiers.prompted`): `names_schema`, `responses_names_schema`.
- Tool choices: a `tool_choice` that forces a tool call (`"required"`, a named function or
  tool, `allowed_tools` in `required` mode) leaves no room for the JSON answer of
  `response_model=` (`forces_call`; each other provider's module reads its own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._fields import get_field

__all__ = [
    "SERVER_FORMATS",
    "forces_call",
    "names_schema",
    "responses_names_schema",
]

SERVER_FORMATS = ("structured_outputs", "guided_json", "guided_choice", "guided_regex",
                  "guided_grammar", "json_schema", "grammar")  # fmt: skip
"""The servers' own output-format fields, sent in `extra_body` (vLLM's, llama.cpp's)."""


def names_schema(params: Mapping[str, Any]) -> bool:
    """True when a chat call's own output format names what the answer must look like (a
    `response_format` json_schema, or a type the SDK turns into one; a server's own field in
    `extra_body`), False for one that names none (`json_object`, `text`)."""
    extra = params.get("extra_body")
    if isinstance(extra, Mapping) and any(key in extra for key in SERVER_FORMATS):
        return True
    given = params.get("response_format")
    return isinstance(given, type) or bool(get_field(given, "type") == "json_schema")


def responses_names_schema(text: Any) -> bool:
    """True when a Responses call's own `text.format` names a schema (`json_schema`)."""
    return bool(get_field(get_field(text, "format"), "type") == "json_schema")


def forces_call(choice: Any) -> bool:
    """True when an OpenAI `tool_choice` (chat's or the Responses API's) forces a tool call:
    `"required"`, a named function or custom tool, a built-in tool's type (the Responses API's
    `{"type": "web_search_preview"}`, `mcp`, ...), or `allowed_tools` in `required` mode;
    `"auto"`, `"none"` and `allowed_tools` in `auto` mode leave the model free to answer."""
    if isinstance(choice, str):
        return choice == "required"
    kind = get_field(choice, "type")
    if not isinstance(kind, str):
        return False
    if kind == "allowed_tools":  # chat nests its fields, the Responses API does not
        nested = get_field(choice, "allowed_tools")
        mode = get_field(nested if nested is not None else choice, "mode")
        return bool(mode == "required")
    return True
