"""Every exception healjson raises to its users survives pickle, fields and outcome intact.

A durable framework (DBOS, Temporal, Ray, a process pool) records a failed step's exception by
pickling it and reads it back in another process: what it reads back must be the same exception,
with the same message and the same data, or the caller sees an internal `AttributeError` where
`DegradedError` was raised.
"""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from pydantic import BaseModel

import healjson
from healjson import DegradedError, Healer, HealPolicy, ProviderError, RetryableError
from healjson._core.wire.effects import DeadlineExceeded
from healjson._core.wire.reply import Usage
from healjson._judge import JudgeError
from healjson._providers._unreadable import UnreadableReply
from healjson._providers.openai_responses import ResponseFailed
from healjson.adapters._base import NotACompletion
from healjson.testing import ScriptedModel


class Row(BaseModel):
    value: int


def _degraded(*replies: str, **policy: Any) -> healjson.Degraded[Row]:
    outcome = Healer(Row, policy=HealPolicy(**policy)).run(ScriptedModel(list(replies)), "x")
    assert not outcome.ok
    return outcome


def _round_trip(exc: BaseException) -> Any:
    return pickle.loads(pickle.dumps(exc))


def test_degraded_error_round_trips_with_its_outcome() -> None:
    """A `DegradedError` read back from pickle has an equal outcome and the same message."""
    outcome = _degraded("not json", '{"value": "x"}', max_attempts=2)
    error = DegradedError(outcome)
    back = _round_trip(error)
    assert type(back) is DegradedError
    assert back.outcome == outcome
    assert back.outcome.reason == outcome.reason
    assert back.outcome.calls == 2
    assert str(back) == str(error)
    assert back.args == error.args


def test_degraded_error_from_unwrap_round_trips_with_every_protocol() -> None:
    """The error `Degraded.unwrap()` raises round-trips under every pickle protocol."""
    with pytest.raises(DegradedError) as caught:
        _degraded("no", max_attempts=1).unwrap()
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(caught.value, protocol=protocol))
        assert isinstance(back, DegradedError)
        assert back.outcome == caught.value.outcome
        assert back.outcome.to_dict() == caught.value.outcome.to_dict()


def test_degraded_error_keeps_what_was_added_to_it() -> None:
    """Notes and attributes a framework adds to a `DegradedError` survive the round trip."""
    error = DegradedError(_degraded("no", max_attempts=1))
    error.add_note("step 3 of workflow wf-1")
    error.step = 3  # type: ignore[attr-defined]
    back = _round_trip(error)
    assert back.__notes__ == ["step 3 of workflow wf-1"]
    assert back.step == 3
    assert back.outcome == error.outcome


def test_degraded_error_keeps_its_outcome_redaction() -> None:
    """A rebuilt `DegradedError` still hides the secrets its outcome's rendering hid."""
    secret = "sk-proj-" + "a1B2c3D4" * 5
    outcome = dataclasses.replace(
        _degraded("no", max_attempts=1), fallback={"key": secret}, _secrets=(secret,)
    )
    assert secret not in repr(outcome)
    back = _round_trip(DegradedError(outcome))
    assert back.outcome._secrets == (secret,)
    assert back.outcome.fallback == {"key": secret}
    assert secret not in repr(back.outcome)
    assert secret not in str(back)


def _unreadable() -> UnreadableReply:
    error = UnreadableReply("the provider's answer is not a chat completion")
    error.reported_usage = Usage(prompt_tokens=12, completion_tokens=3)
    return error


@pytest.mark.parametrize(
    "make",
    [
        lambda: ProviderError("gateway said no"),
        lambda: RetryableError("rate limited", 429, "api_error"),
        lambda: RetryableError("timed out", None, "timeout"),
        lambda: DeadlineExceeded("model call ran past 3.0 s"),
        lambda: JudgeError("the judge's answer was no verdict"),
        lambda: ResponseFailed("server_error: boom"),
        lambda: NotACompletion("an HTML page"),
        _unreadable,
    ],
    ids=lambda make: type(make()).__name__,
)
def test_raised_exceptions_round_trip(make: Any) -> None:
    """Each other exception healjson raises round-trips with its type, message and fields."""
    error = make()
    back = _round_trip(error)
    assert type(back) is type(error)
    assert back.args == error.args
    assert str(back) == str(error)
    assert vars(back) == vars(error)
