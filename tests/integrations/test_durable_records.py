"""What a durable step records (`healjson._durable`, shared by `healjson.dbos` and
`healjson.temporal`): nothing the redactor would change, and the model's answer read back as the
model gave it, or not healed at all; `RetryableError`'s text redacted wherever it comes from."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from healjson import RetryableError
from healjson._core.redact import redact_text, secrets_scope
from healjson._core.wire.reply import Reply, ToolCall
from healjson._durable import RecordedFailure, reply_as_data, reply_from_data

SECRET = "sk-test-0123456789abcdefSECRET"


class _Keyed:
    """A client holding a key, for a secrets scope."""

    api_key = SECRET


_TEXTS = st.builds(
    lambda head, span, value: f"{head}{span}{value}",
    st.text(max_size=8),
    st.sampled_from(["", "password=", "Bearer ", "Authorization: ", '"api_key": "', "key "]),
    st.one_of(st.text(max_size=16), st.just(SECRET)),
)


def _strings(value: Any) -> Iterator[str]:
    """Every string in recorded data, at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


@settings(max_examples=40, deadline=None)
@given(content=_TEXTS, arguments=_TEXTS, reasoning=st.one_of(st.none(), _TEXTS))
def test_a_recorded_reply_holds_nothing_secret_and_reads_back_as_given_or_not_at_all(
    content: str, arguments: str, reasoning: str | None
) -> None:
    """Inside a client's secrets scope, every string a recorded reply holds is one the redactor
    leaves as it is; an answer (content, tool calls) it left as given reads back as given, and
    one the redaction changed reads back as a failure (the run degrades), never altered."""
    calls = (ToolCall("lookup", arguments, "call_0"),)
    reply = Reply(content, "stop", reasoning=reasoning, tool_calls=calls)
    with secrets_scope(_Keyed(), {}):
        data = reply_as_data(reply)
        untouched = redact_text(content) == content and redact_text(arguments) == arguments
        assert all(redact_text(text) == text for text in _strings(data))

    if untouched:
        back = reply_from_data(data)
        assert (content, calls) == (back.content, back.tool_calls)
    else:
        with pytest.raises(RecordedFailure, match="credential"):
            reply_from_data(data)


def test_a_retryable_error_says_nothing_secret_even_when_raised_by_your_code() -> None:
    """A `RetryableError` built with a bearer token in its text keeps it redacted, and so does
    its pickled copy (what a framework records)."""
    error = RetryableError(f"upstream said Authorization: Bearer {SECRET}", 503)
    copy = pickle.loads(pickle.dumps(error))

    assert SECRET not in str(error)
    assert (str(error), 503) == (str(copy), copy.status)
