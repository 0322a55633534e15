"""What DSPy recorded of an LM call (its history entry: the LM's response), for `healjson.dspy`.

The finish reason (a cut answer), a refusal, the usage the provider reported (or a cache hit:
DSPy answered from its own cache, no request, no token), and the name the LM gives its
output-token limit. Imported by `healjson.dspy` only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

from healjson import Outcome, Reply, Usage

from .core import get_field, missing_extra
from .dspy_fields import lm_usage

try:
    from dspy.clients.base_lm import GLOBAL_HISTORY
except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(missing_extra("dspy", "dspy")) from exc

__all__ = ["LIMITS", "cache_hits_marked", "lm_reply", "recorded", "token_limit"]


# the names an output-token limit goes by (DSPy's LM uses the first two; the truncation
# strategy names the limit as the request's wire format does)
LIMITS: Final = ("max_completion_tokens", "max_tokens", "max_output_tokens")
_SEARCHED = 256  # history entries looked through for a call's own, newest first


def token_limit(lm: Any, lm_kwargs: Mapping[str, Any]) -> tuple[str, int | None]:
    """The name the LM gives its output-token limit, and the limit a call has (None: none)."""
    own = getattr(lm, "kwargs", None)
    defaults: Mapping[str, Any] = own if isinstance(own, Mapping) else {}
    for source in (lm_kwargs, defaults):
        for name in LIMITS[:2]:
            value = source.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return name, value
    return ("max_completion_tokens" if "max_completion_tokens" in defaults else "max_tokens"), None


def recorded(lm: Any, outputs: Any) -> Mapping[str, Any] | None:
    """DSPy's history entry of the call that returned `outputs` (the same list object), from
    the LM's history or DSPy's global one; None when DSPy keeps no history."""
    for history in (getattr(lm, "history", None), GLOBAL_HISTORY):
        if not isinstance(history, list):
            continue
        for entry in reversed(history[-_SEARCHED:]):
            if isinstance(entry, Mapping) and entry.get("outputs") is outputs:
                return entry
    return None


def lm_reply(content: str | None, entry: Mapping[str, Any] | None, reasoning: Any) -> Reply:
    """The healer's `Reply`: `content`, and what the response reported (finish reason,
    refusal, usage, model), read as healjson reads a chat completion."""
    thought = reasoning if isinstance(reasoning, str) and reasoning else None
    if entry is None:
        return Reply(content, reasoning=thought)
    response = entry.get("response")
    if isinstance(response, list | tuple):
        response = response[0] if response else None
    model = _text(entry.get("response_model")) or _text(get_field(response, "model"))
    finish, refusal = _stops(response)
    cached = _cache_hit(entry, response)
    return Reply(
        content,
        finish_reason=finish,
        refusal=refusal,
        usage=Usage(cache_hits=1, model=model) if cached else lm_usage(entry.get("usage"), model),
        model=model,
        reasoning=thought,
    )


def _cache_hit(entry: Mapping[str, Any], response: Any) -> bool:
    """Whether DSPy served the call's answer from its cache (no request, no token): the
    response says so (`cache_hit`, LiteLLM's path), or DSPy recorded no usage for a response
    that reports some (DSPy clears the usage of a cached answer: it bills nothing)."""
    if get_field(response, "cache_hit") is True:
        return True
    recorded = entry.get("usage")
    if not (isinstance(recorded, Mapping) and not recorded):
        return False
    reported = get_field(response, "usage")
    return any(
        type(get_field(reported, name)) is int and get_field(reported, name) > 0
        for name in ("input_tokens", "output_tokens", "prompt_tokens", "completion_tokens")
    )


def cache_hits_marked(outcome: Outcome[Any]) -> Outcome[Any]:
    """`outcome` with each attempt DSPy answered from its cache marked `cache_hit` (its usage
    is a cache hit's: no request, no token), as healjson's own response cache marks one."""
    if not outcome.usage.cache_hits:
        return outcome
    attempts = tuple(
        dataclasses.replace(attempt, cache_hit=True)
        if attempt.usage.cache_hits and not attempt.usage.requests
        else attempt
        for attempt in outcome.attempts
    )
    return dataclasses.replace(outcome, attempts=attempts)


def _stops(response: Any) -> tuple[str | None, str | None]:
    """The finish reason (OpenAI's names) and the refusal of an LM response: DSPy's own
    (`lm15.Response`: a refusal part) or a chat completion (LiteLLM's: the refusal among its
    provider-specific fields; a legacy LM's)."""
    message = get_field(response, "message")
    if message is not None and get_field(message, "parts") is not None:
        refused = [
            _text(get_field(part, "text")) or ""
            for part in get_field(message, "parts") or ()
            if get_field(part, "type") == "refusal"
        ]
        finish = _text(get_field(response, "finish_reason"))
        finish = "tool_calls" if finish == "tool_call" else finish
        return finish, "\n".join(refused) if refused else None
    choices = get_field(response, "choices")
    choice = choices[0] if isinstance(choices, list | tuple) and choices else None
    message = get_field(choice, "message")
    refusal = get_field(message, "refusal") or get_field(
        get_field(message, "provider_specific_fields"), "refusal"
    )
    return _text(get_field(choice, "finish_reason")), _text(refusal)  # LiteLLM keeps it apart


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
