"""One row's request, read by one set of rules for every way of running many requests:
`healjson batch`, `healjson batch --batch-api` (`healjson.batch_api`) and `healjson.ray`.

A row is a set of named fields (a JSON object of an input line, or a Ray Data row's columns):

* `messages`: a non-empty list of chat messages, or that list as JSON text. Each message is an
  object with a non-empty string `role`; its `content`, when present, is null, a string or a
  list of parts. Nested at most `MAX_DEPTH` levels.
* `prompt`: a non-empty string, one user turn; read only when the row has no `messages` (a
  pipeline row may carry both, `ray.data.llm`'s templated `prompt` beside its `messages`).
* `system`: a non-empty string, put first as a system message.
* `context`: an object, or its JSON text: the run's `context=` (its contracts' `ctx.extra`,
  pydantic's validation context).
* `temperature`, `top_p` (numbers, sent as floats) and `max_tokens` (a positive integer):
  the row's own parameters, over the run's.

Every string of the request (a message's content or any other member, a key, the system text,
a context's keys and values) must be encodable as UTF-8: a lone surrogate (JSON's `"\\ud83d"`
without its pair) cannot be sent, so a row holding one is unusable, not an endpoint failure.

A field whose value is null (JSON `null`, an Arrow null, pandas' NaN or `NA`) is absent: Arrow
gives every row the union of the fields (and struct keys) of all rows, the absent ones as
nulls. For the same reason a null-valued key inside a message or a context object is dropped,
at any depth (a message's own `content` is kept, as null: an assistant turn with tool calls may
have none). Any other field is ignored. So one input line means one request, whichever runner
reads it. A row that breaks a rule is `Unusable`, never an exception.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "MAX_DEPTH",
    "MAX_MESSAGES_DEPTH",
    "ROW_FIELDS",
    "ROW_PARAMS",
    "Messages",
    "Request",
    "Unusable",
    "deeper_than",
    "missing",
    "not_utf8",
    "read_context",
    "read_messages",
    "read_request",
]

MAX_DEPTH: Final = 64
"""Deepest nesting accepted in a row's `messages` or `context` (chat messages need about 5)."""
MAX_MESSAGES_DEPTH: Final = MAX_DEPTH
ROW_PARAMS: Final = ("temperature", "top_p", "max_tokens")
"""The model parameters a row may set for its own request."""
ROW_FIELDS: Final = ("messages", "prompt", "system", "context", *ROW_PARAMS)
"""Every field a row's request is read from (an `id` is the runner's business)."""

Messages = tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Request:
    """A row's request: its messages, its context (None: none) and its own parameters."""

    messages: Messages
    context: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    """`temperature`, `top_p`, `max_tokens` as the row set them (over the run's)."""


@dataclass(frozen=True, slots=True)
class Unusable:
    """Why a row holds no usable request, and the field at fault (its value is the excerpt an
    `invalid_input` row shows)."""

    problem: str
    field: str


def read_request(row: Mapping[str, Any]) -> Request | Unusable:
    """The request of `row` (a mapping of field names to values; see the module's rules), or
    why it has none."""
    if not missing(row.get("messages")):
        messages, problem = read_messages(row["messages"])
        where = "messages"
    elif not missing(row.get("prompt")):
        messages, problem = _read_prompt(row["prompt"])
        where = "prompt"
    else:
        why = "the row has neither `messages` (chat messages) nor `prompt` (a string)"
        return Unusable(why, "")
    if problem is not None:
        return Unusable(problem, where)
    system = row.get("system")
    if not missing(system):
        if not isinstance(system, str) or not system.strip():
            return Unusable("`system` must be a non-empty string", "system")
        if not_utf8(system):
            return Unusable(_not_utf8_problem("`system`"), "system")
        messages = ({"role": "system", "content": system}, *messages)
    context, problem = read_context(row.get("context"))
    if problem is not None:
        return Unusable(problem, "context")
    params: dict[str, Any] = {}
    for name in ROW_PARAMS:
        value = row.get(name)
        if missing(value):
            continue
        read, problem = _read_param(name, value)
        if problem is not None:
            return Unusable(problem, name)
        params[name] = read
    return Request(messages, context, params)


def read_messages(value: Any) -> tuple[Messages, str | None]:
    """`(messages, None)` for a usable `messages` value (a list of chat messages or its JSON
    text), else `((), why not)`."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return (), "`messages` is text that is not JSON"
    if not isinstance(value, list) or not value:
        return (), "`messages` must be a non-empty list of chat messages"
    if deeper_than(value, MAX_DEPTH):
        return (), f"`messages` nest deeper than {MAX_DEPTH} levels"
    out: list[dict[str, Any]] = []
    for index, message in enumerate(value):
        if not isinstance(message, Mapping):
            return (), f"`messages[{index}]` must be an object with a `role`"
        kept = {key: _without_nulls(item) for key, item in message.items() if item is not None}
        if "content" in message:
            kept.setdefault("content", None)
        role = kept.get("role")
        if not isinstance(role, str) or not role:
            return (), f"`messages[{index}]` must be an object with a `role`"
        content = kept.get("content")
        if content is not None and not isinstance(content, str | list):
            return (), f"`messages[{index}].content` must be a string or a list of parts"
        if not_utf8(kept):
            return (), _not_utf8_problem(f"`messages[{index}]`")
        out.append(kept)
    return tuple(out), None


def read_context(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """`(context, None)`: the row's context object, None when it has none; else `(None, why
    not)`. An object (its null-valued keys dropped) or its JSON text."""
    if missing(value):
        return None, None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None, "`context` is text that is not JSON"
    elif isinstance(value, Mapping):
        if deeper_than(value, MAX_DEPTH):
            return None, f"`context` nests deeper than {MAX_DEPTH} levels"
        value = _without_nulls(value)
    if isinstance(value, dict):
        if not_utf8(value):
            return None, _not_utf8_problem("`context`")
        return value, None
    return None, "`context` must be an object (or its JSON text): the run's context="


def missing(value: Any) -> bool:
    """None, or how pandas marks a missing value: NaN (object columns), `pd.NA` (Arrow-backed
    columns, which Ray Data's pandas batches have)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    kind = type(value)
    return kind.__name__ == "NAType" and kind.__module__.startswith("pandas")


def deeper_than(value: Any, limit: int) -> bool:
    """True when lists / objects nest more than `limit` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, Mapping) else node
        for child in children:
            if isinstance(child, Mapping | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def not_utf8(value: Any) -> bool:
    """True when a string in `value` (a string, or lists / tuples / objects of them, keys
    included) cannot be encoded as UTF-8: it holds a lone surrogate. Iterative: no recursion."""
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not node.isascii():
                try:
                    node.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(node, Mapping):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return False


def _not_utf8_problem(where: str) -> str:
    return (
        f"{where} holds text that is not encodable as UTF-8 (a lone surrogate, such as "
        "`\\ud83d` without its pair): it cannot be sent"
    )


def _read_prompt(value: Any) -> tuple[Messages, str | None]:
    if isinstance(value, str) and value.strip():
        if not_utf8(value):
            return (), _not_utf8_problem("`prompt`")
        return ({"role": "user", "content": value},), None
    return (), "`prompt` must be a non-empty string"


def _read_param(name: str, value: Any) -> tuple[Any, str | None]:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if name == "max_tokens":
        whole = number and math.isfinite(value) and value == int(value) and value >= 1
        return (int(value), None) if whole else (None, "`max_tokens` must be a positive integer")
    if number and math.isfinite(value):
        return float(value), None
    return None, f"`{name}` must be a number"


def _without_nulls(value: Any) -> Any:
    """Drop the null-valued keys (Arrow's struct union adds them), at any depth (bounded by
    the callers' depth check)."""
    if isinstance(value, Mapping):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value
