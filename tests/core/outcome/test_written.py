"""An outcome as a store that keeps no secret writes it (`as_written`), and a changed copy of an
outcome (`dataclasses.replace`) that still hides what its run found."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator

import healjson
from healjson import Flag, Healer, outcome_from_dict
from healjson._core.diagnostic import Source
from healjson._core.outcome.written import NO_JSON_FORM, VALUE_ALTERED, as_written
from healjson._core.redact import redact_data, secrets_scope
from healjson.testing import ScriptedModel
from pinned import pinned

KEY = "sk-live-Q7w8E9r0T1y2U3i4O5p6A7s8"


class Doc(BaseModel):
    snippet: str


def _healed(snippet: str) -> Any:
    outcome = Healer(Doc).run(ScriptedModel([json.dumps({"snippet": snippet})]), "p")
    assert outcome.ok
    return outcome


def _echoing_escaped() -> Any:
    """A healed outcome whose value holds the key that its raw text only spells escaped: the
    run found the key in the caller's object (`seal`), not in any text."""
    escaped = KEY.replace("-", "\\u002d", 1)
    with secrets_scope(forms=(KEY,)):
        outcome = Healer(Doc).run(ScriptedModel(['{"snippet": "' + escaped + '"}']), "p")
    assert outcome.ok
    assert outcome.value.snippet == KEY
    return outcome


def _shown(outcome: Any) -> str:
    return "\n".join(
        [repr(outcome), json.dumps(outcome.to_dict()), outcome.trace(), outcome.trace("json")]
    )


def test_a_changed_copy_of_an_outcome_still_hides_the_key_its_value_holds() -> None:
    """`dataclasses.replace` of an outcome keeps what its run found: no rendering shows it."""
    outcome = _echoing_escaped()
    assert KEY not in _shown(outcome)
    changed = dataclasses.replace(outcome, flags=(*outcome.flags, Flag.STRUCTURED_FROM_TEXT))
    assert changed.value.snippet == KEY  # the caller's value, unaltered
    assert KEY not in _shown(changed)


def test_a_value_holding_the_key_is_written_degraded_and_hidden() -> None:
    """A healed value the redactor would change is written as an `api_error` that hides it."""
    written = as_written(_echoing_escaped())
    assert not written.ok
    assert written.reason == "api_error"
    (error,) = written.errors
    assert (error.source, error.constraint) == (Source.REDACTION, VALUE_ALTERED)
    assert KEY not in _shown(written)


TEXTS = st.lists(
    st.sampled_from(["plain words", "Bearer ", "abcdefghijklmnopqrstuvwx", "sk-", KEY, " ", "="]),
    min_size=1,
    max_size=4,
).map("".join)


@given(text=TEXTS)
@pinned(max_examples=20)
def test_a_written_outcome_is_the_value_as_said_or_an_explicit_api_error(text: str) -> None:
    """Whatever the value holds: written as it is exactly when the redactor leaves it alone,
    else degraded with one `redaction` diagnostic, the run's attempts, usage and id kept; the
    written record always reads back."""
    outcome = _healed(text)
    written = as_written(outcome)
    data = {"snippet": text}
    if redact_data(data, by_name=False, fields=True) == data:
        assert written is outcome
    else:
        assert not written.ok
        assert written.reason == "api_error"
        assert [e.source for e in written.errors] == [Source.REDACTION]
        assert (written.attempts, written.usage) == (outcome.attempts, outcome.usage)
        assert (written.run_id, written.target) == (outcome.run_id, outcome.target)
    assert outcome_from_dict(written.to_dict()).ok is written.ok


def test_a_degraded_outcome_is_written_as_it_is() -> None:
    """A degraded outcome has no value to alter: it is written as it is."""
    outcome = Healer(Doc).run(ScriptedModel(["no json", "still none", "none"]), "p")
    assert not outcome.ok
    assert as_written(outcome) is outcome


def test_a_nan_value_is_written_as_it_is() -> None:
    """A healed NaN (a float target reads `NaN`) is no value the redactor changed."""
    outcome = healjson.validate("NaN", float)
    assert outcome.ok
    assert as_written(outcome) is outcome


def test_a_key_the_model_uses_as_a_mapping_key_is_hidden() -> None:
    """A secret the run knows, as a key of a mapping the caller's request holds, is in no
    rendering of the record."""
    with secrets_scope(forms=(KEY,)):
        messages = [{"role": "user", "content": [{"type": "text", "text": "x", KEY: 1}]}]
        model = ScriptedModel(['{"snippet": "plain"}'])
        outcome = Healer(Doc).run(model, messages)
    assert outcome.ok
    assert KEY not in _shown(outcome)


class Blob(BaseModel):
    """A field whose validator makes bytes from hex: JSON mode writes bytes as UTF-8 text."""

    data: bytes

    @field_validator("data", mode="before")
    @classmethod
    def _from_hex(cls, value: Any) -> Any:
        return bytes.fromhex(value) if isinstance(value, str) else value


@pinned(max_examples=20)
@given(raw=st.binary(min_size=1, max_size=8))
def test_a_value_with_no_json_form_is_written_as_an_explicit_api_error(raw: bytes) -> None:
    """A healed value pydantic cannot write as JSON (bytes that are no UTF-8) is written as an
    `api_error` saying so, never as a rendering of it; one it can write is written as it is."""
    outcome = healjson.validate(json.dumps({"data": raw.hex()}), Blob)
    assert outcome.ok, outcome

    written = as_written(outcome)

    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        assert healjson.Reason.API_ERROR == written.reason
        assert written.errors[0].constraint.startswith(NO_JSON_FORM.split("(", 1)[0])
    else:
        assert written is outcome
