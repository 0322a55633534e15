"""What is no reply, below the HTTP layer: the readers' rules, one per wire format and one for
streams, and the well-formed answers beside them that keep their own verdicts.

- A whole response lacking its format's defining member (chat: a `choices` list, whose first
  choice holds a `message`; Responses: an `output` list; Anthropic: a `content` list; Gemini: a
  `candidates` list, or a blocked prompt's feedback; Ollama: a `message`), or whose text is not
  a string, is no reply: its reader raises `UnreadableReply` (the provider's failure,
  `api_error`), and the SDK's fast reader of a class already read does the same.
- A stream that carried nothing of a reply (no chunk, or only chunks with no text, tool call,
  refusal, reasoning, finish reason, usage or model) is the provider's failure (`api_error`).

An empty list of choices, output items, content blocks or candidates is a reply with no answer
(`empty_output`), as is an empty text; a blocked prompt, a refusal, a content filter keep theirs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anthropic
import ollama
import openai
import pytest
from anthropic import types as at
from google.genai import types as gt
from hypothesis import assume, example, given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy, Reason
from healjson._core.stream.reading import NO_EVENT
from healjson._core.wire.delta import Delta
from healjson._core.wire.reply import Reply, Usage, to_reply
from healjson._providers._unreadable import UnreadableReply
from healjson._providers.anthropic_messages import wire as anthropic_messages
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

ONE = HealPolicy(max_attempts=1)


class Person(BaseModel):
    name: str
    age: int


# --- whole replies: the rule per format -------------------------------------------------------

NOT_REPLIES: dict[str, tuple[Any, str]] = {
    "chat-choices-not-a-list": ({"choices": {"message": {}}}, "no `choices` list"),
    "chat-choice-none": ({"choices": [None]}, "holds no `message`"),
    "chat-choice-without-message": (
        {"choices": [{"index": 0, "finish_reason": "stop"}]},
        "holds no `message`",
    ),
    "chat-error-quoted": (
        {"choices": None, "error": {"message": "quota exceeded"}},
        "no `choices` list (error: quota exceeded)",
    ),
    "chat-text-a-number": ({"choices": [{"message": {"content": 5}}]}, "its text is int"),
    "chat-part-text-a-list": (
        {"choices": [{"message": {"content": [{"type": "text", "text": ["a"]}]}}]},
        "its text is list",
    ),
    "chat-part-a-number": ({"choices": [{"message": {"content": ["a", 5]}}]}, "its text is list"),
    "chat-message-dict-text-a-number": ({"content": 1.5}, "its text is float"),
    "responses-no-output": (
        {"object": "response", "status": "completed"},
        "not a Responses API response: no `output` list",
    ),
    "responses-output-a-number": (
        {"object": "response", "status": "completed", "output": 3},
        "no `output` list",
    ),
    "responses-text-a-number": (
        {
            "object": "response",
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": 5}]}],
        },
        "its text is int",
    ),
    "responses-output-text-without-text": (
        {
            "object": "response",
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text"}]}],
        },
        "its text is NoneType",
    ),
    "anthropic-text-a-number": (
        {"stop_reason": "end_turn", "content": [{"type": "text", "text": 5}]},
        "its text is int",
    ),
    "anthropic-text-block-without-text": (
        {"stop_reason": "end_turn", "content": [{"type": "text"}]},
        "its text is NoneType",
    ),
    "gemini-usage-only": (
        {"usageMetadata": {"promptTokenCount": 3}},
        "not a Gemini response: no `candidates` and no blocked prompt",
    ),
    "gemini-feedback-without-block": ({"promptFeedback": {}}, "no `candidates`"),
    "gemini-candidate-a-number": ({"candidates": [5]}, "its first candidate is no object"),
    "gemini-text-a-number": (
        {"candidates": [{"content": {"parts": [{"text": 5}]}}]},
        "its text is int",
    ),
    "ollama-message-none": ({"message": None, "done": True}, "not an Ollama chat response"),
    "ollama-message-a-text": ({"message": "hi", "done": True}, "no `message`"),
    "ollama-text-a-number": ({"message": {"content": 5}, "done": True}, "its text is int"),
}


@pytest.mark.parametrize(("body", "said"), NOT_REPLIES.values(), ids=NOT_REPLIES.keys())
def test_a_body_without_its_formats_part_is_no_reply(body: Any, said: str) -> None:
    """A response lacking its format's defining member, or whose text is no string, raises
    `UnreadableReply` saying what is missing or wrong (the run's `api_error`)."""
    with pytest.raises(UnreadableReply, match="the provider's answer is not") as raised:
        to_reply(body)

    assert said in str(raised.value)


NEIGHBOURS: dict[str, tuple[Any, Reply]] = {
    "chat-no-choice": ({"choices": []}, Reply(None)),
    "chat-empty-text": ({"choices": [{"message": {"content": ""}}]}, Reply("")),
    "chat-no-text": ({"choices": [{"message": {"role": "assistant"}}]}, Reply(None)),
    "chat-refusal": (
        {"choices": [{"message": {"content": None, "refusal": "no"}, "finish_reason": "stop"}]},
        Reply(None, "stop", "no"),
    ),
    "chat-content-filter": (
        {"choices": [{"message": {"content": None}, "finish_reason": "content_filter"}]},
        Reply(None, "content_filter"),
    ),
    "chat-parts-without-text": (
        {"choices": [{"message": {"content": [{"type": "image_url"}, {"text": "a"}]}}]},
        Reply("a"),
    ),
    "responses-no-item": (
        {"object": "response", "status": "completed", "output": []},
        Reply(None, "stop"),
    ),
    "responses-empty-text": (
        {
            "object": "response",
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": ""}]}],
        },
        Reply("", "stop"),
    ),
    "responses-content-filter": (
        {
            "object": "response",
            "status": "incomplete",
            "incomplete_details": {"reason": "content_filter"},
            "output": [],
        },
        Reply(None, "content_filter"),
    ),
    "anthropic-no-block": ({"stop_reason": "end_turn", "content": []}, Reply(None, "stop")),
    "anthropic-empty-text": (
        {"stop_reason": "end_turn", "content": [{"type": "text", "text": ""}]},
        Reply("", "stop"),
    ),
    "anthropic-refusal": (
        {"stop_reason": "refusal", "content": [], "stop_details": {"explanation": "no"}},
        Reply(None, "refusal", "no"),
    ),
    "gemini-no-candidate": ({"candidates": []}, Reply(None)),
    "gemini-blocked-prompt": (
        {"promptFeedback": {"blockReason": "SAFETY"}},
        Reply(None, "content_filter"),
    ),
    "gemini-safety-stop": (
        {"candidates": [{"finishReason": "SAFETY"}]},
        Reply(None, "content_filter"),
    ),
    "gemini-empty-text": (
        {"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}]},
        Reply(None, "stop"),
    ),
    "ollama-empty-text": (
        {"message": {"role": "assistant", "content": ""}, "done": True},
        Reply(""),
    ),
    "ollama-no-text": ({"message": {"role": "assistant"}, "done": True}, Reply(None)),
}


@pytest.mark.parametrize(("body", "expected"), NEIGHBOURS.values(), ids=NEIGHBOURS.keys())
def test_a_well_formed_answer_without_text_is_still_a_reply(body: Any, expected: Reply) -> None:
    """A reply of its format with no answer in it (an empty list, an empty or absent text), a
    refusal, a blocked prompt or a content filter is read as it always was: a `Reply`."""
    assert expected == to_reply(body)


# --- the same rule on the SDKs' own classes, before and after the fast reader is remembered ---


def _chat_completion(choices: Any) -> Any:
    return ChatCompletion.model_construct(
        id="c", object="chat.completion", created=0, model="m", choices=choices
    )


def _good_chat() -> Any:
    return ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "hi"},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def _message(content: Any) -> Any:
    return at.Message.model_construct(
        id="m",
        type="message",
        role="assistant",
        model="claude-test",
        content=content,
        stop_reason="end_turn",
        usage=at.Usage(input_tokens=1, output_tokens=1),
    )


SDK_OBJECTS: dict[str, tuple[Any, Any]] = {
    "chat-no-choices": (_good_chat(), _chat_completion(None)),
    "chat-text-a-number": (
        _good_chat(),
        _chat_completion([{"index": 0, "message": {"role": "assistant", "content": 7}}]),
    ),
    "anthropic-no-content": (_message([at.TextBlock(type="text", text="hi")]), _message(None)),
    "anthropic-text-a-number": (
        _message([at.TextBlock(type="text", text="hi")]),
        _message([at.TextBlock.model_construct(type="text", text=7)]),
    ),
    "gemini-empty-response": (
        gt.GenerateContentResponse(
            candidates=[gt.Candidate(content=gt.Content(role="model", parts=[gt.Part(text="hi")]))],
            usage_metadata=gt.GenerateContentResponseUsageMetadata(
                prompt_token_count=1, candidates_token_count=1
            ),
            model_version="gemini-x",
        ),
        gt.GenerateContentResponse(),
    ),
    "ollama-no-message": (
        ollama.ChatResponse(
            model="m",
            done=True,
            message=ollama.Message(role="assistant", content="hi"),
            prompt_eval_count=1,
            eval_count=1,
        ),
        ollama.ChatResponse.model_construct(model="m", done=True),
    ),
}


@pytest.mark.parametrize(("good", "bad"), SDK_OBJECTS.values(), ids=SDK_OBJECTS.keys())
def test_an_sdk_object_that_is_no_reply_is_none_once_its_class_was_read(
    good: Any, bad: Any
) -> None:
    """After a good response of an SDK class was read (its fast reader remembered), an object of
    that class lacking its format's part is no reply, as for the generic reader."""
    assert "hi" == to_reply(good).content

    for _ in range(2):  # the fast reader, then again
        with pytest.raises(UnreadableReply, match="the provider's answer is not"):
            to_reply(bad)


def test_anthropic_fast_reader_applies_the_rule() -> None:
    """The Anthropic fast reader hands a message with no `content` list to the generic one,
    which fails it (no lookup in between)."""
    with pytest.raises(UnreadableReply, match="not an Anthropic message: no `content` list"):
        anthropic_messages.read_message(_message({"type": "text", "text": "hi"}))


# --- the rule as properties -------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
not_texts = json_values.filter(lambda value: value is not None and not isinstance(value, str))


def with_member(provider: str, value: Any) -> dict[str, Any]:
    """A body of `provider`'s format (as dispatched by its keys) whose defining member is
    `value`."""
    if provider == "chat":
        return {"choices": value}
    if provider == "responses":
        return {"object": "response", "status": "completed", "output": value}
    if provider == "gemini":
        return {"candidates": value, "modelVersion": "gemini-x"}
    return {"message": value, "done": True}


def with_text(provider: str, text: Any) -> dict[str, Any]:
    """A body of `provider`'s format whose answer text is `text`."""
    if provider == "chat":
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
    if provider == "responses":
        part = {"type": "output_text", "text": text}
        return {"object": "response", "status": "completed",
                "output": [{"type": "message", "content": [part]}]}  # fmt: skip
    if provider == "anthropic":
        return {"stop_reason": "end_turn", "content": [{"type": "text", "text": text}]}
    if provider == "gemini":
        return {"candidates": [{"content": {"parts": [{"text": text}]}}]}
    return {"message": {"role": "assistant", "content": text}, "done": True}


@pinned(max_examples=100)
@given(provider=st.sampled_from(["chat", "responses", "gemini", "ollama"]), value=json_values)
@example(provider="ollama", value=[])
@example(provider="gemini", value={"content": {"parts": [{"text": "hi"}]}})
def test_a_defining_member_of_another_type_is_no_reply(provider: str, value: Any) -> None:
    """A body whose defining member is absent or not a list (Ollama's: not an object) is no
    reply."""
    assume(not isinstance(value, dict if provider == "ollama" else list))
    with pytest.raises(UnreadableReply, match="the provider's answer is not"):
        to_reply(with_member(provider, value))


PROVIDERS = ("chat", "responses", "anthropic", "gemini", "ollama")


def content_parts(value: Any) -> bool:
    """Whether `value` is a chat message's content parts: a list of objects, each with a
    string text or none (an image part)."""
    return isinstance(value, list) and all(
        isinstance(part, dict) and isinstance(part.get("text"), str | None) for part in value
    )


@pinned(max_examples=100)
@given(provider=st.sampled_from(PROVIDERS), text=not_texts)
@example(provider="gemini", text=False)
@example(provider="chat", text=0)
def test_a_text_of_another_type_is_no_reply(provider: str, text: Any) -> None:
    """A body whose answer text is a number, a boolean, a list or an object is no reply: the
    text is never stringified into an answer (a chat message's list is its content parts: each
    must be an object whose text is a string)."""
    assume(not (provider == "chat" and content_parts(text)))
    with pytest.raises(UnreadableReply, match="its text is"):
        to_reply(with_text(provider, text))


@pinned(max_examples=100)
@given(provider=st.sampled_from(PROVIDERS), text=st.text(max_size=20))
def test_any_text_is_read_as_it_is(provider: str, text: str) -> None:
    """A body whose answer text is any string (the empty one too) is a reply of that text."""
    assert text == (to_reply(with_text(provider, text)).content or "")


# --- streams: one that carried nothing is the provider's failure ------------------------------


def streamed(chunks: list[Any]) -> Any:
    """The outcome of a healing run whose one call streams `chunks`."""

    def call(messages: Any, **params: Any) -> Iterator[Any]:
        return iter(chunks)

    stream = Healer(Person, policy=ONE).stream(call, "Ann is 31")
    for _ in stream:
        pass
    return stream.outcome


def test_a_stream_with_no_chunk_is_the_providers_failure() -> None:
    """A stream that ends before its first chunk degrades with `api_error`, saying so."""
    outcome = streamed([])

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)
    assert NO_EVENT in str(outcome.errors[0].value)
    assert outcome.usage.requests == 1


def test_an_async_stream_with_no_chunk_is_the_providers_failure() -> None:
    """An async stream that ends before its first chunk degrades with `api_error`."""

    async def chunks() -> AsyncIterator[Any]:
        return
        yield

    def call(messages: Any, **params: Any) -> AsyncIterator[Any]:
        return chunks()

    async def run() -> Any:
        stream = Healer(Person, policy=ONE).astream(call, "Ann is 31")
        async for _ in stream:
            pass
        return stream.outcome

    outcome = asyncio.run(run())

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)


deltas = st.builds(
    Delta,
    text=st.sampled_from(["", "", " ", '{"name": "Ann", "age": 31}']),
    refusal=st.sampled_from(["", "", "no"]),
    finish_reason=st.sampled_from([None, None, "stop", "length"]),
    usage=st.none() | st.none() | st.just(Usage(3, 2, requests=1)),
    model=st.sampled_from([None, None, "m"]),
)


def carries_something(delta: Delta) -> bool:
    """Whether a chunk carries any part of a reply."""
    return bool(delta.text or delta.refusal or delta.finish_reason or delta.usage or delta.model)


@pinned(max_examples=60)
@given(chunks=st.lists(deltas, max_size=4))
@example(chunks=[])
@example(chunks=[Delta(), Delta()])
@example(chunks=[Delta(model="m")])
@example(chunks=[Delta(finish_reason="stop")])
def test_a_stream_is_the_providers_failure_exactly_when_it_carried_nothing(
    chunks: list[Delta],
) -> None:
    """A stream degrades with `api_error` when none of its chunks carried anything (no chunk at
    all, or only empty ones), and never when one did (an empty answer is `empty_output`)."""
    outcome = streamed(chunks)

    failed = isinstance(outcome, Degraded) and outcome.reason is Reason.API_ERROR
    assert failed == (not any(carries_something(delta) for delta in chunks))


def test_a_stream_carrying_only_its_model_is_an_empty_answer() -> None:
    """A stream whose chunks name the model but carry no text is the model's empty answer."""
    outcome = streamed([Delta(model="m"), Delta(finish_reason="stop")])

    assert (Degraded, Reason.EMPTY_OUTPUT) == (type(outcome), outcome.reason)


# --- tool calls (`heal_tools=True`): the same rules -------------------------------------------


class Search(BaseModel):
    query: str


HOSTILE = {
    "object": '{"foo": 1}',
    "array": "[]",
    "null": "null",
    "error": '{"error": "model \\"m\\" not found"}',
    "chat-wrong-type": json.dumps(with_text("chat", 5)),
    "anthropic-wrong-type": json.dumps(
        {"type": "message", "role": "assistant", "content": [{"type": "text", "text": 5}]}
    ),
}
TOOL_CELLS = [
    (api, streamed_, body)
    for api in ("chat", "responses", "anthropic")
    for streamed_ in (False, True)
    for body in HOSTILE
]


def heal_tools(server: ScriptedServer, api: str, stream: bool) -> Any:
    """One `heal_tools=True` call on `api`'s wrapped sync client: its outcome."""
    keywords: dict[str, Any] = {"tools": [Search], "heal_tools": True, "policy": ONE}
    keywords["stream"] = stream
    said = [{"role": "user", "content": "shoes"}]
    if api == "anthropic":
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        ) as sdk:
            messages = healjson.wrap(sdk).messages
            answer = messages.create(model="c", max_tokens=64, messages=said, **keywords)
            return _outcome(answer, stream)
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
        client = healjson.wrap(sdk)
        if api == "chat":
            answer = client.chat.completions.create(model="g", messages=said, **keywords)
        else:
            answer = client.responses.create(model="g", input="shoes", **keywords)
        return _outcome(answer, stream)


def _outcome(answer: Any, stream: bool) -> Any:
    if not stream:
        return answer
    for _ in answer:
        pass
    return answer.outcome


@pytest.mark.parametrize(
    "cell", TOOL_CELLS, ids=[f"{a}-{'stream' if s else 'whole'}-{b}" for a, s, b in TOOL_CELLS]
)
def test_a_hostile_body_to_a_tool_call_is_api_error(
    shared_server: ScriptedServer, cell: tuple[str, bool, str]
) -> None:
    """A 200 body that is no reply, to a `heal_tools=True` call, whole or streamed, degrades
    with `api_error`: never an exception, never a healed answer with no call."""
    api, stream, body = cell
    shared_server.extend([ScriptedReply(body=HOSTILE[body])])
    try:
        outcome = heal_tools(shared_server, api, stream)
    except Exception as exc:  # the promise broken: say which call raised what
        pytest.fail(f"{cell} raised {type(exc).__name__}: {exc}")

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_an_empty_answer_to_a_tool_call_is_not_a_providers_failure(
    shared_server: ScriptedServer, api: str, stream: bool
) -> None:
    """A well-formed answer with no text and no call, to a tool call whose tools are not
    forced, heals as before (no call asked): the rules take no answer of the model's."""
    shared_server.extend([ScriptedReply(content="")])
    outcome = heal_tools(shared_server, api, stream)

    assert isinstance(outcome, Healed)
    assert () == outcome.value.calls
