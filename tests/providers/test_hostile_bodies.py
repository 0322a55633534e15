"""A 200 body that is no reply, over real HTTP to every wrapped provider SDK: `api_error`.

What an SDK raises while it reads the answer (ollama's and google-genai's models refusing it, a
stream chunk of the wrong type) is the provider's failure: the run degrades with `api_error`.
Some bodies the SDKs read without complaint, and healjson's readers judge those by two rules:

- a whole response lacking its format's defining part (chat: a `choices` list whose first
  choice holds a `message`; Responses: an `output` list; Anthropic: a `content` list; Gemini:
  `candidates`, or a blocked prompt's feedback; Ollama: a `message`), or whose text is not a
  string, is no reply: the provider's failure, whether or not the SDK's response class was read
  before (its fast reader defers to the generic one, which applies the rule);
- a stream that carried nothing of a reply (no event at all: OpenAI's and Anthropic's SDKs skip
  what is not an event; or only empty ones: google-genai reads a JSON body as one empty
  response) is the provider's failure too.

A well-formed answer keeps its own verdict beside them: an empty text is `empty_output`, a
refusal a refusal, a content filter a content filter, a cut `token_truncated`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from healjson import Degraded, Healed, Reason
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned
from wrapped_calls import ask

# each provider's answer whose text is a number (the shape right, a field's type wrong)
WRONG_TYPE = {
    "chat": {"choices": [{"index": 0, "message": {"role": "assistant", "content": 5}}]},
    "responses": {"output": [{"type": "message", "content": [{"type": "output_text", "text": 5}]}]},
    "anthropic": {"type": "message", "role": "assistant", "content": [{"type": "text", "text": 5}]},
    "gemini": {"candidates": [{"content": {"role": "model", "parts": [{"text": 5}]}}]},
    "ollama": {"model": "m", "message": {"role": "assistant", "content": 5}, "done": True},
}
BODIES: dict[str, Callable[[str], str]] = {
    "object": lambda provider: '{"foo": 1}',
    "array": lambda provider: "[]",
    "null": lambda provider: "null",
    "string": lambda provider: '"x"',
    "wrong-type": lambda provider: json.dumps(WRONG_TYPE[provider]),
    "error": lambda provider: '{"error": "model \\"m\\" not found"}',
}
PROVIDERS = ("chat", "responses", "anthropic", "gemini", "ollama")


def served(server: ScriptedServer, body: str, *cell: Any) -> Any:
    """The outcome of one call whose answer is `body` (HTTP 200): any exception is a failure."""
    server.extend([ScriptedReply(body=body)])
    try:
        return ask(server, *cell)
    except Exception as exc:  # the promise broken: say which call raised what
        pytest.fail(f"{cell} raised {type(exc).__name__}: {exc}")


CELLS = [
    (provider, runner, streamed, body)
    for provider in PROVIDERS
    for runner in ("sync", "async")
    for streamed in (False, True)
    for body in BODIES
]


def _id(cell: tuple[str, str, bool, str]) -> str:
    provider, runner, streamed, body = cell
    return f"{provider}-{runner}-{'stream' if streamed else 'whole'}-{body}"


@pytest.mark.parametrize("cell", CELLS, ids=[_id(c) for c in CELLS])
def test_a_hostile_200_body_degrades_with_api_error(
    shared_server: ScriptedServer, cell: tuple[str, str, bool, str]
) -> None:
    """A 200 body that is no reply is the provider's failure on every provider and mode:
    `Degraded` with `api_error`, never an exception."""
    provider, runner, streamed, body = cell
    outcome = served(shared_server, BODIES[body](provider), provider, runner, streamed)

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)


ANSWER = '{"name": "Ann", "age": 31}'
WHOLE_CELLS = [
    (provider, runner, body)
    for provider in PROVIDERS
    for runner in ("sync", "async")
    for body in BODIES
]


@pytest.mark.parametrize("cell", WHOLE_CELLS, ids=[f"{p}-{r}-{b}" for p, r, b in WHOLE_CELLS])
def test_a_hostile_body_is_api_error_after_a_good_reply_too(
    shared_server: ScriptedServer, cell: tuple[str, str, str]
) -> None:
    """Once the SDK's response class was read (its fast reader remembered), a whole body that
    is no reply is still `api_error`: the verdict does not depend on what was read before."""
    provider, runner, body = cell
    shared_server.extend([ScriptedReply(content=ANSWER)])
    assert isinstance(ask(shared_server, provider, runner, False), Healed)

    outcome = served(shared_server, BODIES[body](provider), provider, runner, False)

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)


# well-formed answers of each format, beside the bodies that are none: the verdict each keeps
NEIGHBOURS: dict[str, dict[str, Any]] = {
    "answer": {"content": ANSWER},
    "empty-text": {"content": ""},
    "no-text": {"content": None},
    "refusal": {"refusal": "I can't help with that"},
    "filtered": {"content": None, "finish_reason": "content_filter"},
    "filtered-part-way": {"content": '{"name": "Ann"', "finish_reason": "content_filter"},
    "cut": {"content": '{"name": "An', "finish_reason": "length"},
}


def kept_verdict(kind: str, provider: str) -> Reason | None:
    """The verdict a well-formed answer of `kind` keeps on `provider` (None: healed). Gemini
    has no refusal (the scripted server sends a safety stop), Ollama neither (it sends the
    refusal as the text); Anthropic's content filter is its refusal stop."""
    if kind == "answer":
        return None
    if kind in ("empty-text", "no-text"):
        return Reason.EMPTY_OUTPUT
    if kind == "refusal":
        return {"gemini": Reason.CONTENT_FILTER, "ollama": Reason.INVALID_OUTPUT}.get(
            provider, Reason.REFUSAL
        )
    if kind.startswith("filtered"):
        return Reason.REFUSAL if provider == "anthropic" else Reason.CONTENT_FILTER
    return Reason.TOKEN_TRUNCATED


NEIGHBOUR_CELLS = [
    (provider, runner, streamed, kind)
    for provider in PROVIDERS
    for runner in ("sync", "async")
    for streamed in (False, True)
    for kind in NEIGHBOURS
]


@pytest.mark.parametrize(
    "cell",
    NEIGHBOUR_CELLS,
    ids=[f"{p}-{r}-{'stream' if s else 'whole'}-{k}" for p, r, s, k in NEIGHBOUR_CELLS],
)
def test_a_well_formed_answer_keeps_its_verdict(
    shared_server: ScriptedServer, cell: tuple[str, str, bool, str]
) -> None:
    """An empty text stays `empty_output`, a refusal a refusal, a content filter a content
    filter and a cut `token_truncated`: the rules for bodies that are no reply take none."""
    provider, runner, streamed, kind = cell
    shared_server.extend([ScriptedReply(**NEIGHBOURS[kind])])
    try:
        outcome = ask(shared_server, provider, runner, streamed)
    except Exception as exc:  # the promise broken: say which call raised what
        pytest.fail(f"{cell} raised {type(exc).__name__}: {exc}")

    expected = kept_verdict(kind, provider)
    if expected is None:
        assert isinstance(outcome, Healed)
    else:
        assert (Degraded, expected) == (type(outcome), outcome.reason)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
# the keys the wire formats read, mixed in
keyed = st.dictionaries(
    st.sampled_from(["message", "done", "model", "error", "candidates", "role", "content"]),
    json_values,
)


@pinned(max_examples=40)
@given(value=json_values | keyed, provider=st.sampled_from(PROVIDERS), streamed=st.booleans())
@example(value={"error": "model not found"}, provider="gemini", streamed=True)
@example(value={"message": None, "error": [None]}, provider="ollama", streamed=True)
@example(value=[], provider="ollama", streamed=False)
def test_any_json_body_never_raises(
    shared_server: ScriptedServer, value: Any, provider: str, streamed: bool
) -> None:
    """Any JSON value as a 200 body, on every wire format, ends the run with an outcome."""
    outcome = served(shared_server, json.dumps(value), provider, "sync", streamed)

    assert outcome.ok or outcome.reason is not None


# the members the wire formats define, mixed into bodies
PARTS = ["choices", "output", "content", "candidates", "message", "error", "model", "done",
         "status", "object", "stop_reason", "type", "role"]  # fmt: skip
parted = st.dictionaries(st.sampled_from(PARTS), json_values, max_size=4)
DEFINING: dict[str, tuple[str, type]] = {
    "chat": ("choices", list),
    "responses": ("output", list),
    "anthropic": ("content", list),
    "gemini": ("candidates", object),
    "ollama": ("message", dict),
}
"""Each format's defining member and its type (any value of Gemini's: google-genai refuses a
`candidates` that is not a list)."""


def holds_its_part(provider: str, value: Any) -> bool:
    """Whether `value` holds `provider`'s defining member (a body that may be a reply)."""
    member, kind = DEFINING[provider]
    return isinstance(value, dict) and member in value and isinstance(value[member], kind)


@pinned(max_examples=40)
@given(
    value=json_values | parted,
    provider=st.sampled_from(PROVIDERS),
    runner=st.sampled_from(["sync", "async"]),
    streamed=st.booleans(),
)
@example(value={"choices": []}, provider="responses", runner="sync", streamed=False)
@example(value={"object": "response"}, provider="responses", runner="sync", streamed=False)
@example(value={"content": 5, "stop_reason": "end_turn"}, provider="anthropic", runner="async",
         streamed=False)  # fmt: skip
@example(value={"model": "m", "done": True}, provider="ollama", runner="sync", streamed=False)
@example(value={"choices": 3}, provider="chat", runner="sync", streamed=False)
def test_a_body_without_its_formats_part_degrades_with_api_error(
    shared_server: ScriptedServer, value: Any, provider: str, runner: str, streamed: bool
) -> None:
    """Any JSON body lacking its format's defining member, whole or streamed, sync or async, is
    the provider's failure: `api_error`."""
    assume(not holds_its_part(provider, value))
    outcome = served(shared_server, json.dumps(value), provider, runner, streamed)

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)


texts = st.text(st.characters(codec="utf-8"), max_size=12)


@pinned(max_examples=30)
@given(
    provider=st.sampled_from(PROVIDERS),
    streamed=st.booleans(),
    content=st.none() | st.sampled_from([ANSWER, "", " ", "{}"]) | texts,
    refusal=st.none() | texts,
    finish=st.sampled_from(["stop", "length", "content_filter"]),
)
@example(provider="chat", streamed=True, content=None, refusal=None, finish="stop")
@example(provider="gemini", streamed=True, content="", refusal=None, finish="stop")
def test_a_well_formed_reply_is_never_a_provider_failure(
    shared_server: ScriptedServer,
    provider: str,
    streamed: bool,
    content: str | None,
    refusal: str | None,
    finish: str,
) -> None:
    """A reply of its format, whatever its text (none, empty, blank, prose), refusal or finish,
    whole or streamed, is never `api_error`: the rules for bodies that are no reply take no
    answer of the model's."""
    reply = ScriptedReply(content=content, refusal=refusal, finish_reason=finish)
    shared_server.extend([reply])
    try:
        outcome = ask(shared_server, provider, "sync", streamed)
    except Exception as exc:  # the promise broken: say which call raised what
        pytest.fail(f"{provider} raised {type(exc).__name__}: {exc}")

    assert isinstance(outcome, Healed) or outcome.reason is not Reason.API_ERROR
