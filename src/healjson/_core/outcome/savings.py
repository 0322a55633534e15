"""What healing saved, estimated: the model calls and tokens a run did not spend.

Two savings are counted, each a lower-bound estimate stated as such wherever it is shown:

* local healing: a first reply L1 healed (fences, prose, syntax slips...) made a repair call
  unnecessary, and such a call costs at least the healed call's own tokens;
* an early stream abort: a streamed answer closed as soon as a complete part broke a rule more
  tokens could not fix would have run on to about the length of the answer that finally healed;
  the completion tokens it did not produce are counted (the healed value's JSON, at the usual
  four characters per token, less what the aborted stream had produced).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_core import from_json, to_json

from healjson._core.flags import Flag

if TYPE_CHECKING:
    from .outcome import Outcome

__all__ = ["tokens_saved"]

_CHARS_PER_TOKEN = 4


def tokens_saved(outcome: Outcome[Any]) -> int:
    """The tokens `outcome`'s run did not spend thanks to healing (0 when nothing was saved or
    it cannot be estimated: a degraded run)."""
    if not outcome.ok or not outcome.attempts:
        return 0
    first = outcome.attempts[0]
    if outcome.calls == 1:
        return first.usage.total_tokens if _healed_locally(first, outcome.flags) else 0
    aborted = [a for a in outcome.attempts if Flag.STREAM_ABORTED in a.flags]
    if not aborted:
        return 0
    try:
        full = len(to_json(outcome.value)) // _CHARS_PER_TOKEN
    except Exception:  # a value its own serializer refuses: no estimate
        return 0
    return sum(max(full - a.usage.completion_tokens, 0) for a in aborted)


def _healed_locally(first: Any, flags: tuple[Flag, ...]) -> bool:
    """True when L1 mended the first reply. Reasoning set aside from the provider's own field
    (the flag alone, and the reply's text JSON as it came) mended nothing: no plain reader
    would have needed a repair call for it."""
    if set(flags) != {Flag.REASONING_SET_ASIDE}:
        return bool(flags)
    try:
        from_json(first.raw_text or "")
    except ValueError:
        return True  # the reasoning was inline: a plain reader would have failed
    return False
