"""The caller's `system_instruction` of a Gemini call: sent as given, rendered as text.

google-genai accepts a system instruction in many forms (a text, a list of texts and parts, a
`Part`, a `Content`, their dict forms, a `File`, an image). A healed call sends it as the
caller gave it, on the first call and on every repair call (`wire.tier_request`); what
healjson adds to it (a tier's schema instruction) is a text part of its own, first, beside the
caller's parts (`with_instruction`). healjson's records and repair messages keep a text
rendering of it (`system_text`), never sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from healjson._providers._fields import get_field, get_field_either

__all__ = ["system_text", "with_instruction"]


def system_text(system: Any) -> str:
    """A system instruction in any form google-genai accepts as text, for healjson's records
    (never sent): its text parts as they are, each other part a bracketed note naming it (inline
    data by its type, size and digest, so different data never reads the same), parts apart by
    a blank line."""
    if isinstance(system, str):
        return system
    if isinstance(system, list | tuple):
        items: Any = system
    elif _is_content(system):
        items = get_field(system, "parts") or ()
    else:
        items = (system,)
    return "\n\n".join(_part_text(item) for item in items)


def _is_content(value: Any) -> bool:
    """A `Content` (object or dict): `parts` and `role` are its fields, no part's."""
    if isinstance(value, Mapping):
        return "parts" in value or "role" in value
    return hasattr(value, "parts") and hasattr(value, "role")


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    text = get_field(part, "text")
    if isinstance(text, str):
        return text
    blob = get_field_either(part, "inline_data", "inlineData")
    if blob is not None:
        mime = get_field_either(blob, "mime_type", "mimeType")
        return f"[inline data: {mime}, {_digest(get_field(blob, 'data'))}]"
    file = get_field_either(part, "file_data", "fileData")
    if file is not None:
        uri = get_field_either(file, "file_uri", "fileUri")
        return f"[file: {uri} ({get_field_either(file, 'mime_type', 'mimeType')})]"
    uri = get_field(part, "uri")  # a `File`
    if isinstance(uri, str):
        return f"[file: {uri} ({get_field_either(part, 'mime_type', 'mimeType')})]"
    if callable(getattr(part, "tobytes", None)) and hasattr(part, "size"):  # an image (PIL)
        width, height = part.size
        return f"[image: {width}x{height}, {_digest(part.tobytes())}]"
    return f"[part: {_json(part)}]"


def _digest(data: Any) -> str:
    """The size and a short digest of inline data (bytes, or the wire's base64 text)."""
    raw = data.encode() if isinstance(data, str) else data
    if not isinstance(raw, bytes | bytearray):
        return "no data"
    return f"{len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:16]}"


def _json(part: Any) -> str:
    dump = getattr(part, "model_dump", None)
    value = dump(mode="json", exclude_none=True) if callable(dump) else part
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def with_instruction(system: Any, instruction: str) -> Any:
    """The caller's system instruction with healjson's `instruction` as a text part first: a
    `Content` of the caller's role (the one google-genai gives the caller's form) whose other
    parts are the caller's, each the very part google-genai would send."""
    from google.genai import types

    value = types.GenerateContentConfig(system_instruction=system).system_instruction
    if isinstance(value, types.Content):
        content = value
    elif isinstance(value, types.Part) and value.function_call is not None:
        content = types.ModelContent(parts=[value])
    else:  # a text, a part, a file, an image, a list of them: one user content, as google-genai
        content = types.UserContent(parts=value)
    parts = [types.Part(text=instruction), *(content.parts or ())]
    return types.Content(role=content.role, parts=parts)
