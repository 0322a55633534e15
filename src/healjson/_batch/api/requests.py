"""A row's next model call as a provider batch request: the body, and the `custom_id`.

`custom_id` is `row-<seq>_r<round>`: the row's number in the ledger and the round of the
request (the number of results the row has: 0 for the first call, then one more for each
repair or resubmission), so a result names the row and the request it answers (a late or
repeated line for an older round is ignored). The form fits every provider's custom ids (the
strictest allows only `[a-zA-Z0-9_-]{1,64}`).

The body asks for JSON as `healjson.wrap` does, as the provider's batch lines write it
(`Provider.batch`: in the configured tier where the provider has tiers in its batches, else
with the schema in the system prompt).
"""

from __future__ import annotations

import re
from typing import Any, Final

from healjson._core.target.target import Target
from healjson._core.wire.effects import ModelCall
from healjson._providers import batch_lines
from healjson._providers.tiers import JsonMode

__all__ = ["custom_id", "parse_custom_id", "request_body"]

_CUSTOM_ID: Final = re.compile(r"row-(\d{1,18})_r(\d{1,6})")


def custom_id(seq: int, round_: int) -> str:
    return f"row-{seq}_r{round_}"


def parse_custom_id(text: str) -> tuple[int, int] | None:
    """`(seq, round)` of a `custom_id` this module made, else None."""
    match = _CUSTOM_ID.fullmatch(text)
    return None if match is None else (int(match[1]), int(match[2]))


def request_body(
    provider: str,
    call: ModelCall,
    target: Target[Any],
    mode: JsonMode,
    endpoint: str | None = None,
) -> dict[str, Any]:
    """The request `call` stands for, as the provider's batch line body (for OpenAI's
    `/v1/responses` `endpoint`: the messages as `input`, the JSON tier as `text.format`)."""
    messages = [dict(message) for message in call.messages]
    return batch_lines(provider, endpoint).body(mode, target, messages, call.params)
