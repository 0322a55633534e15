"""A secret spelled another way than its own is redacted all the same: written with escapes
(`\\u0073k-...`, `\\/`, `\\x73`), or cut at a text's end (a stream stopped inside it); the rest of
the text is kept as written. Through the renderers and the stored texts of a wrapped client's
outcome alike."""

from __future__ import annotations

import json

import openai
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson._core.redact import MARKER, unspelled
from healjson.testing import ScriptedReply, ScriptedServer, capture_events
from pinned import pinned

SECRET = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/+", min_size=8, max_size=40
)
AROUND = st.text('abc {}":,.\n', max_size=20)


def spell(char: str, how: int) -> str:
    """`char` as a JSON text may write it: plain, `\\uXXXX`, `\\xHH` (a lenient reader's), or
    `\\/` for a slash."""
    if how == 1:
        return f"\\u{ord(char):04x}"
    if how == 2:
        return f"\\x{ord(char):02x}"
    if how == 3 and char == "/":
        return "\\/"
    return char


def read(text: str) -> str:
    """`text` with every escape read (what a JSON reader, or a lenient one, gives back)."""
    return text.replace("\\/", "/").encode("latin-1", "backslashreplace").decode("unicode_escape")


@pinned(max_examples=75)
@given(secret=SECRET, before=AROUND, after=AROUND, data=st.data())
def test_a_secret_spelled_with_escapes_is_redacted_and_the_rest_kept(
    secret: str, before: str, after: str, data: st.DataObject
) -> None:
    """Whichever of its characters are written as escapes, the secret is replaced by the marker,
    and what comes before and after it is kept as written."""
    hows = data.draw(st.lists(st.integers(0, 3), min_size=len(secret), max_size=len(secret)))
    spelled = "".join(spell(char, how) for char, how in zip(secret, hows, strict=True))
    text = before + spelled + after

    redacted = unspelled(text, (secret,), MARKER)

    if spelled == secret:  # no escape: the plain redactor's, not this one's
        assert redacted == text
        return
    assert secret not in read(redacted.replace(MARKER, "|"))
    assert redacted.startswith(before)
    assert redacted.endswith(after)


@pinned(max_examples=50)
@given(secret=SECRET, before=AROUND, data=st.data())
def test_a_text_cut_inside_a_secret_loses_what_it_holds_of_it(
    secret: str, before: str, data: st.DataObject
) -> None:
    """A text that ends with the secret's first 8 or more characters (a stream cut inside it)
    ends with the marker instead, what came before kept."""
    size = data.draw(st.integers(8, len(secret)))
    redacted = unspelled(before + secret[:size], (secret,), MARKER)
    if size == len(secret):  # the whole secret: the plain redactor's
        return
    assert redacted.endswith(MARKER)
    kept = redacted[: -len(MARKER)]
    assert (before + secret[:size]).startswith(kept)  # what is kept is the text's, as written
    assert len(kept) <= len(before)  # and nothing of the cut secret


class Note(BaseModel):
    text: str


KEY = "sk-proj-Q7vLm2XbT9wPz4RkY8nH3cJd"
SLASHED = "tok-9f8e7d6c/5b4a3928+1716"


def run(key: str, message: str, body: str) -> dict[str, str]:
    """A wrapped client holding `key` asked with `message`, answered `body`: every place the
    outcome keeps or renders text."""
    with (
        ScriptedServer([ScriptedReply(body=body)]) as server,
        openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0) as sdk,
        capture_events(include_content=True) as events,
    ):
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=[{"role": "user", "content": message}], response_model=Note
        )
    return {
        "raw_text": outcome.attempts[0].raw_text or "",
        "to_dict": json.dumps(outcome.to_dict()),
        "trace": outcome.trace("json"),
        "events": json.dumps(events, default=str),
        "repr": repr(outcome),
    }


def completion(content: str, finish: str = "stop") -> str:
    """A chat completion body answering `content`."""
    choice = {
        "index": 0,
        "finish_reason": finish,
        "message": {"role": "assistant", "content": content},
    }
    usage = {"prompt_tokens": 1, "completion_tokens": 1}
    return json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                       "choices": [choice], "usage": usage})  # fmt: skip


def peeled(text: str) -> str:
    """`text` with two layers of JSON escapes read (a rendering's, then the model's)."""
    for _ in range(2):
        text = read(text.replace("\\\\", "\\"))
    return text


def test_a_key_the_model_spells_with_escapes_is_kept_nowhere() -> None:
    """A reply writing the client's key as `\\u0073k-...` (valid JSON for the key itself)."""
    places = run(KEY, "hi", completion('{"text": "\\u0073' + KEY[1:] + '"}'))
    assert [] == [name for name, text in places.items() if KEY in peeled(text)]


def test_a_key_the_callers_message_spells_with_escaped_slashes_is_kept_nowhere() -> None:
    """A caller's message holding the key in JSON that escapes `/` as `\\/` (PHP's)."""
    message = '{"cfg": "' + SLASHED.replace("/", "\\/") + '"} summarise'
    places = run(SLASHED, message, completion('{"text": "ok done"}'))
    assert [] == [name for name, text in places.items() if SLASHED in peeled(text)]


def test_a_reply_cut_inside_the_key_keeps_none_of_it() -> None:
    """A reply cut at the token limit after the key's first 28 characters."""
    places = run(KEY, "hi", completion('{"text": "' + KEY[:28], finish="length"))
    assert [] == [name for name, text in places.items() if KEY[:12] in peeled(text)]


class Echo(BaseModel):
    note: str
    n: int


def test_a_stream_cut_by_a_failure_hides_the_echoed_key_in_every_rendering() -> None:
    """A streamed reply echoing the client's key, its connection dropped before the end: the
    outcome degrades with the partial data, and no rendering of it (`repr`, `to_dict()`, the
    trace, the snapshots' `repr`) shows the key, as for the same reply cut unstreamed."""
    text = json.dumps({"note": f"your key is {KEY}", "n": 1})
    with (
        ScriptedServer([ScriptedReply(text, cut_after_chars=len(text) - 3)]) as server,
        openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            response_model=Echo,
            stream=True,
        )
        snapshots = [repr(snapshot) for snapshot in stream]
        outcome = stream.outcome
    assert [] == [shown for shown in snapshots if KEY in shown]  # the snapshots' `repr` too
    assert not outcome.ok
    assert KEY in repr(outcome.partial)  # the caller's object, as the model sent it
    shown = {
        "repr": repr(outcome),
        "to_dict": json.dumps(outcome.to_dict()),
        "trace": outcome.trace(),
    }
    assert [] == [name for name, rendered in shown.items() if KEY in rendered]
