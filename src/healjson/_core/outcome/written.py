"""An outcome as a store that keeps no secret may write it (a `healjson batch` row, a Batch API
row, a Ray Data row): never a healed value the redactor changed."""

from __future__ import annotations

import json
from typing import Any, Final

from healjson._core.diagnostic import ROOT, Diagnostic, Source, value_form
from healjson._core.redact import redact_data

from .attempt import Reason
from .outcome import Degraded, Outcome
from .trace import revealing

__all__ = ["NO_JSON_FORM", "VALUE_ALTERED", "as_written"]

VALUE_ALTERED: Final = (
    "the healed value held what healjson never writes (the client's key, or a credential name "
    "or shape); it cannot be written as it is, so the row degrades rather than give a value "
    "the redaction changed"
)
"""The constraint of the `api_error` a written healed value degrades with."""

_PRESCRIPTION: Final = "Ask for output that holds no credential, or redact it yourself."
NO_JSON_FORM: Final = (
    "the healed value has no JSON form that validates back to it ({error}); it cannot be "
    "written as it is, so the row degrades rather than give another value"
)
"""The constraint of the `api_error` a healed value pydantic cannot write as JSON degrades with."""
_NO_FORM_PRESCRIPTION: Final = (
    "Give the target a type pydantic serializes to JSON (bytes that are not UTF-8: "
    "`ser_json_bytes`/`val_json_bytes` set to 'base64'), or write the value yourself."
)


def as_written(outcome: Outcome[Any]) -> Outcome[Any]:
    """`outcome` as it may be written: a healed value whose record the redactor would change
    (the client's key echoed, a credential name or shape, as `to_dict` redacts it) degrades
    with `api_error` (one `redaction` diagnostic, `VALUE_ALTERED`), its raw text, attempts,
    usage, run id, target and contracts kept; so does a healed value pydantic cannot write as
    JSON (`NO_JSON_FORM`: its record would hold a rendering of it, another value); any other
    outcome as it is. The row, its errors and its `outcome` member then all say the same."""
    if not outcome.ok:
        return outcome
    with revealing(outcome):
        data, unwritable = value_form(outcome.value)
        if unwritable is not None:  # its record would hold another value (a rendering of it)
            constraint = NO_JSON_FORM.format(error=unwritable)
            error = Diagnostic(ROOT, None, constraint, _NO_FORM_PRESCRIPTION, Source.SCHEMA)
            return _degraded(outcome, error)
        redacted = redact_data(data, by_name=False, fields=True)
        if redacted == data or _text(redacted) == _text(data):  # a NaN is no change either
            return outcome
    altered = Diagnostic(ROOT, None, VALUE_ALTERED, _PRESCRIPTION, Source.REDACTION)
    return _degraded(outcome, altered)


def _degraded(outcome: Outcome[Any], error: Diagnostic) -> Degraded[Any]:
    """`outcome` (healed) degraded with `api_error` and `error`, everything else kept."""
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
