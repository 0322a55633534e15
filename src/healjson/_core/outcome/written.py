"""An outcome as a store that keeps no secret may write it (a `healjson batch` row, a Batch API
row, a Ray Data row): never a healed value the redactor changed."""

from __future__ import annotations

import json
from typing import Any, Final

from healjson._core.diagnostic import ROOT, Diagnostic, Source, value_data
from healjson._core.redact import redact_data

from .attempt import Reason
from .outcome import Degraded, Outcome
from .trace import revealing

__all__ = ["VALUE_ALTERED", "as_written"]

VALUE_ALTERED: Final = (
    "the healed value held what healjson never writes (the client's key, or a credential name "
    "or shape); it cannot be written as it is, so the row degrades rather than give a value "
    "the redaction changed"
)
"""The constraint of the `api_error` a written healed value degrades with."""

_PRESCRIPTION: Final = "Ask for output that holds no credential, or redact it yourself."


def as_written(outcome: Outcome[Any]) -> Outcome[Any]:
    """`outcome` as it may be written: a healed value whose record the redactor would change
    (the client's key echoed, a credential name or shape, as `to_dict` redacts it) degrades
    with `api_error` (one `redaction` diagnostic, `VALUE_ALTERED`), its raw text, attempts,
    usage, run id, target and contracts kept; any other outcome as it is. The row, its errors
    and its `outcome` member then all say the same."""
    if not outcome.ok:
        return outcome
    with revealing(outcome):
        data = value_data(outcome.value)
        redacted = redact_data(data, by_name=False, fields=True)
        if redacted == data or _text(redacted) == _text(data):  # a NaN is no change either
            return outcome
    error = Diagnostic(ROOT, None, VALUE_ALTERED, _PRESCRIPTION, Source.REDACTION)
    degraded: Degraded[Any] = Degraded(
        Reason.API_ERROR,
        outcome.raw_text,
        (error,),
        attempts=outcome.attempts,
        usage=outcome.usage,
        max_attempts=outcome.max_attempts,
        run_id=outcome.run_id,
        target=outcome.target,
        contracts=outcome.contracts,
        _secrets=outcome._secrets,  # what its run found in the caller's objects: still hidden
    )
    return degraded


def _text(data: Any) -> str:
    """JSON data as text, to compare where `==` cannot (a NaN is not equal to itself)."""
    return json.dumps(data, ensure_ascii=False, default=repr)
