"""Field access the wire readers share: SDK objects and dicts alike, read defensively (the
names keep the underscore they had as the readers' own helpers: private to `_providers`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel

from healjson._core.wire.nesting import value_nests_deeper

from ._unreadable import wrong_text


def get_field(obj: Any, name: str) -> Any:
    # cheap checks first: the Mapping ABC check is slow for the SDK's pydantic objects
    if type(obj) is dict:
        return obj.get(name)
    if isinstance(obj, BaseModel) or not isinstance(obj, Mapping):
        return getattr(obj, name, None)
    return obj.get(name)


def get_field_either(obj: Any, name: str, camel: str) -> Any:
    """A field by its snake_case name (SDK objects, `model_dump()`) or its camelCase wire name."""
    value = get_field(obj, name)
    return get_field(obj, camel) if value is None else value


def is_record(value: Any) -> bool:
    """True for what holds a format's fields: a JSON object or an SDK object (not None, a
    scalar, a text or a list)."""
    return value is not None and not isinstance(value, str | bytes | int | float | list | tuple)


def as_list(value: Any) -> list[Any] | tuple[Any, ...]:
    """`value` when it is a list or tuple, else no items (a hostile field of another type is
    read as absent, never iterated)."""
    return value if isinstance(value, list | tuple) else ()


def first_item(items: Any) -> Any:
    """The first element of a non-empty list or tuple, else None."""
    return items[0] if isinstance(items, list | tuple) and items else None


UNREADABLE_ARGUMENTS = "<arguments nested too deep to be read>"
"""The text of a call's arguments (a JSON object the provider sent) nested past the reader's
bound: not JSON, so the call is judged broken and asked again, never read as a value."""


def json_text(value: Any) -> str:
    if value_nests_deeper(value):
        return UNREADABLE_ARGUMENTS
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        return UNREADABLE_ARGUMENTS
    except (TypeError, ValueError):
        return str(value)


MAX_COUNT: Final = 10**9
"""The largest token count read as one: no call reads or writes a billion tokens, so a larger
number on the wire (a corrupt or hostile body) is no count, as a negative one is."""


def as_int(value: Any) -> int:
    """A token count read from the wire: an int (no bool) from 0 to `MAX_COUNT` as it is;
    anything else (absent, negative, too large, a bool, a float, a text) is no count: 0."""
    return value if type(value) is int and 0 <= value <= MAX_COUNT else 0


def counts(prompt: Any, completion: Any) -> tuple[int, int, bool] | None:
    """A reply's two token counts (the prompt's, the answer's) as a usage reader keeps them:
    `(prompt, completion, estimated)`. A count is one only as an int from 0 to `MAX_COUNT` that
    is no bool; any other (absent, negative, too large, a bool, a float, a text) is unreported:
    0, and the usage marked `estimated`, so that the run estimates it as it does a usage no
    reply reported (`call_usage`; a provider that leaves a count out, as Ollama leaves out a
    prompt it read from its cache, did not report it). None when neither is a count: no usage.
    (A stream's pieces, which may carry some counts only, state what they leave out as 0 before
    they come here: `UsageTally`. The SDK objects' fast readers check the common case inline
    and come here for anything else.)"""
    prompt_ok = type(prompt) is int and 0 <= prompt <= MAX_COUNT
    completion_ok = type(completion) is int and 0 <= completion <= MAX_COUNT
    if not prompt_ok and not completion_ok:
        return None
    return (
        prompt if prompt_ok else 0,
        completion if completion_ok else 0,
        not (prompt_ok and completion_ok),
    )


def text_content(content: Any) -> str | None:
    """A chat message's `content`: a text, none, or content parts (`[{"type": "text", "text":
    ...}]`, their texts joined); any other type, a part that is no object or a part's text that
    is not a string, is no reply (`wrong_text`)."""
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise wrong_text(content)
    texts: list[str] = []
    for part in content:
        if not is_record(part):  # a list of anything but parts: the list is the wrong type
            raise wrong_text(content)
        text = get_field(part, "text")
        if isinstance(text, str):
            texts.append(text)
        elif text is not None:
            raise wrong_text(text)
    return "".join(texts)


def opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def message_text(content: Any) -> str:
    """A chat message's content as text (content parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def output_token_limit(params: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The request's token limit where it is named `max_output_tokens` (Responses, Gemini)."""
    return (
        ("max_output_tokens", params["max_output_tokens"])
        if "max_output_tokens" in params
        else None
    )


def with_output_token_limit(params: Mapping[str, Any], n: int) -> dict[str, Any]:
    return {**params, "max_output_tokens": n}
