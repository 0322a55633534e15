"""`to_reply` reads Anthropic and Gemini responses by shape: the SDKs' own objects, their
`model_dump()` dicts, and (for Gemini) the REST API's camelCase JSON all give the same `Reply`."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace
from typing import Any

import anthropic
import pytest
from google.genai import types as gt
from hypothesis import given
from hypothesis import strategies as st

from healjson._core.wire.reply import Reply, ToolCall, Usage, to_reply
from healjson._providers._unreadable import UnreadableReply
from healjson.adapters._openai import NotACompletion
from lanes import INSTRUCTOR_ONLY

# ---------------------------------------------------------------------------------------------
# Anthropic `Message`
# ---------------------------------------------------------------------------------------------


def message(
    *blocks: dict[str, Any], stop_reason: str | None = "end_turn", **extra: Any
) -> anthropic.types.Message:
    """A real `anthropic.types.Message`, validated by the SDK's own model."""
    return anthropic.types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(blocks),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 5},
            **extra,
        }
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": "Person", "input": arguments}


THINKING = {"type": "thinking", "thinking": "Ann... 31.", "signature": "sig"}

ANTHROPIC = {
    "text": (message(text('{"a": 1}')), Reply('{"a": 1}', "stop")),
    "text_blocks_joined_thinking_kept_apart": (
        message(THINKING, text('{"a": '), text("1}")),
        Reply('{"a": 1}', "stop", reasoning="Ann... 31."),
    ),
    "tool_use_input_as_json": (
        message(tool_use({"name": "Ann", "age": 31}), stop_reason="tool_use"),
        Reply(
            None,
            "tool_calls",
            tool_calls=(
                ToolCall("Person", '{"name": "Ann", "age": 31}', "toolu_1", as_object=True),
            ),
        ),
    ),
    "text_beside_tool_use": (
        message(text("x"), tool_use({"a": 1}), stop_reason="tool_use"),
        Reply(
            "x",
            "tool_calls",
            tool_calls=(ToolCall("Person", '{"a": 1}', "toolu_1", as_object=True),),
        ),
    ),
    "max_tokens": (message(text('{"a": '), stop_reason="max_tokens"), Reply('{"a": ', "length")),
    "context_window": (
        message(text("{"), stop_reason="model_context_window_exceeded"),
        Reply("{", "length"),
    ),
    "stop_sequence": (message(text("x"), stop_reason="stop_sequence"), Reply("x", "stop")),
    "refusal_explained": (
        message(
            text('{"na'),
            stop_reason="refusal",
            stop_details={"type": "refusal", "category": "cyber", "explanation": "Not this."},
        ),
        Reply(None, "refusal", "Not this."),
    ),
    "refusal_without_details_keeps_text": (
        message(text("I can't."), stop_reason="refusal"),
        Reply(None, "refusal", "I can't."),
    ),
    "refusal_without_anything": (message(stop_reason="refusal"), Reply(None, "refusal", "refused")),
    "no_content": (message(), Reply(None, "stop")),
}


@pytest.mark.parametrize(("sdk", "expected"), ANTHROPIC.values(), ids=ANTHROPIC.keys())
def test_anthropic_message(sdk: anthropic.types.Message, expected: Reply) -> None:
    """The SDK object and its `model_dump()` read the same: content, finish, refusal, usage."""
    full = dataclasses.replace(
        expected, usage=Usage(12, 5, requests=1, model="claude-test"), model="claude-test"
    )

    assert full == to_reply(sdk)
    assert full == to_reply(sdk.model_dump())
    assert full == to_reply(json.loads(sdk.model_dump_json()))


def test_anthropic_message_without_usage_or_stop_reason() -> None:
    """A partial Message (a stream's first event) has no finish; missing usage is None."""
    partial = anthropic.types.Message.model_construct(
        content=[anthropic.types.TextBlock(type="text", text="{")], stop_reason=None, usage=None
    )

    assert Reply("{", None, None, None, None) == to_reply(partial)
    assert Reply("{") == to_reply({"content": [text("{")], "stop_reason": None})


# ---------------------------------------------------------------------------------------------
# Gemini `GenerateContentResponse`
# ---------------------------------------------------------------------------------------------


def response(
    *parts: gt.Part,
    finish: gt.FinishReason | None = gt.FinishReason.STOP,
    candidates: bool = True,
    **extra: Any,
) -> gt.GenerateContentResponse:
    """A real `GenerateContentResponse` with one candidate (or none)."""
    candidate = gt.Candidate(
        content=gt.Content(role="model", parts=list(parts)) if parts else None,
        finish_reason=finish,
    )
    return gt.GenerateContentResponse(
        candidates=[candidate] if candidates else None,
        usage_metadata=gt.GenerateContentResponseUsageMetadata(
            prompt_token_count=12, candidates_token_count=5, total_token_count=17
        ),
        model_version="gemini-test",
        **extra,
    )


def call(**args: Any) -> gt.Part:
    return gt.Part(function_call=gt.FunctionCall(name="Person", args=args))


FINISH = gt.FinishReason
GEMINI = {
    "text": (response(gt.Part(text='{"a": 1}')), Reply('{"a": 1}', "stop")),
    "parts_joined_thoughts_kept_apart": (
        response(
            gt.Part(text="thinking", thought=True), gt.Part(text='{"a": '), gt.Part(text="1}")
        ),
        Reply('{"a": 1}', "stop", reasoning="thinking"),
    ),
    "function_call_args_as_json": (
        response(call(name="Ann", age=31)),
        # Gemini's calls carry no id: each gets its position's
        Reply(
            None,
            "stop",
            tool_calls=(
                ToolCall("Person", '{"name": "Ann", "age": 31}', "call_0", as_object=True),
            ),
        ),
    ),
    "max_tokens": (response(gt.Part(text="{"), finish=FINISH.MAX_TOKENS), Reply("{", "length")),
    "safety": (response(finish=FINISH.SAFETY), Reply(None, "content_filter")),
    "recitation": (
        response(gt.Part(text="x"), finish=FINISH.RECITATION),
        Reply("x", "content_filter"),
    ),
    "prohibited": (response(finish=FINISH.PROHIBITED_CONTENT), Reply(None, "content_filter")),
    "other_finish_lowercased": (
        response(gt.Part(text="x"), finish=FINISH.OTHER),
        Reply("x", "other"),
    ),
    "no_finish": (response(gt.Part(text="x"), finish=None), Reply("x", None)),
    "blocked_prompt": (
        response(
            candidates=False,
            prompt_feedback=gt.GenerateContentResponsePromptFeedback(
                block_reason=gt.BlockedReason.PROHIBITED_CONTENT
            ),
        ),
        Reply(None, "content_filter"),
    ),
    "empty_candidates": (
        response(candidates=False).model_copy(update={"candidates": []}),
        Reply(None, None),
    ),
}


@pytest.mark.parametrize(("sdk", "expected"), GEMINI.values(), ids=GEMINI.keys())
def test_gemini_response(sdk: gt.GenerateContentResponse, expected: Reply) -> None:
    """The SDK object, its snake_case `model_dump()` and the REST API's camelCase JSON read the
    same: content, finish (MAX_TOKENS -> length, SAFETY & co -> content_filter), usage, model."""
    full = dataclasses.replace(
        expected, usage=Usage(12, 5, requests=1, model="gemini-test"), model="gemini-test"
    )
    wire = sdk.model_dump(mode="json", by_alias=True, exclude_none=True)

    assert "usageMetadata" in wire  # really the camelCase shape
    assert full == to_reply(sdk)
    assert full == to_reply(sdk.model_dump())
    assert full == to_reply(wire)


def test_gemini_response_without_candidates_is_no_response() -> None:
    """A response with no `candidates` and no blocked prompt (google-genai's reading of an
    error body) is the provider's failure, in every shape: not an empty answer."""
    sdk = response(candidates=False)
    wire = sdk.model_dump(mode="json", by_alias=True, exclude_none=True)

    for shape in (sdk, sdk.model_dump(), wire):
        with pytest.raises(UnreadableReply, match="not a Gemini response: no `candidates`"):
            to_reply(shape)


def test_gemini_finish_reason_as_plain_strings() -> None:
    """A finish reason given as a string (any case, or an enum's `str()`) maps the same way."""
    finishes = [
        "MAX_TOKENS",
        "max_tokens",
        "FinishReason.SAFETY",
        "STOP",
        "MALFORMED_FUNCTION_CALL",
    ]

    replies = [to_reply({"candidates": [{"finish_reason": finish}]}) for finish in finishes]

    assert ["length", "length", "content_filter", "stop", "malformed_function_call"] == [
        r.finish_reason for r in replies
    ]


def test_plain_message_dict_with_usage_metadata_is_not_gemini() -> None:
    """LangChain's message dicts carry `usage_metadata` too: they still read as a message."""
    langchain_like = {"content": "hi", "finish_reason": "stop", "usage_metadata": {"x": 1}}

    assert Reply("hi", "stop") == to_reply(langchain_like)


# ---------------------------------------------------------------------------------------------
# the instructor adapter accepts exactly the shapes to_reply reads
# ---------------------------------------------------------------------------------------------


def test_instructor_adapter_accepts_provider_responses() -> None:
    """`_checked` passes Anthropic and Gemini responses on and rejects what no reader knows."""
    pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)
    from healjson.adapters._instructor import _checked

    claude, gemini = message(text("{}")), response(gt.Part(text="{}"))

    assert claude is _checked(claude)
    assert gemini is _checked(gemini)
    for other in ("{}", b"{}", SimpleNamespace(stop_reason="end_turn", content="{}"), object()):
        with pytest.raises(NotACompletion):
            _checked(other)


# ---------------------------------------------------------------------------------------------
# property: any JSON-ish dict or object is a Reply or a TypeError, nothing else
# ---------------------------------------------------------------------------------------------

KEYS = (
    "choices", "message", "content", "refusal", "tool_calls", "function", "arguments", "usage",
    "prompt_tokens", "completion_tokens", "finish_reason", "model", "candidates", "parts", "text",
    "thought", "function_call", "functionCall", "args", "finishReason", "usage_metadata",
    "usageMetadata", "prompt_token_count", "promptTokenCount", "candidates_token_count",
    "candidatesTokenCount", "model_version", "modelVersion", "prompt_feedback", "promptFeedback",
    "block_reason", "blockReason", "stop_reason", "stop_details", "explanation", "type", "input",
    "input_tokens", "output_tokens", "name",
)  # fmt: skip
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["text", "tool_use", "refusal", "max_tokens", "SAFETY", "MAX_TOKENS"])
)
JSONISH = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=25,
)


def as_objects(value: Any, flags: list[bool]) -> Any:
    """`value` with some of its dicts (chosen by `flags`, cycled) turned into attribute objects."""
    if isinstance(value, list):
        return [as_objects(item, flags) for item in value]
    if not isinstance(value, dict):
        return value
    converted = {key: as_objects(item, flags) for key, item in value.items()}
    flags.append(flags.pop(0))
    return SimpleNamespace(**converted) if flags[-1] else converted


@given(
    st.dictionaries(st.sampled_from(KEYS), JSONISH, max_size=6),
    st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_to_reply_returns_a_reply_or_raises_type_error(
    data: dict[str, Any], flags: list[bool]
) -> None:
    """Whatever shape-alike a provider (or a mock) returns, `to_reply` gives a well-typed Reply
    or says TypeError; it never fails with KeyError, IndexError, AttributeError, ..."""
    obj = as_objects(data, list(flags))

    try:
        reply = to_reply(obj)
    except TypeError:
        return

    assert isinstance(reply, Reply)
    for field in (reply.content, reply.finish_reason, reply.refusal, reply.model):
        assert field is None or isinstance(field, str)
    assert reply.usage is None or isinstance(reply.usage, Usage)


_FINISH = st.sampled_from(["stop", "length", "tool_calls", "content_filter"])


@given(
    content=st.none() | st.text(max_size=20),
    refusal=st.none() | st.text(max_size=10),
    finish=_FINISH,
    usage=st.none() | st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    arguments=st.none() | st.text(max_size=20),
)
def test_the_sdk_fast_reader_agrees_with_the_generic_one(
    content: str | None,
    refusal: str | None,
    finish: str,
    usage: tuple[int, int] | None,
    arguments: str | None,
) -> None:
    """`to_reply` reads the openai SDK's ChatCompletion by direct attribute access; whatever the
    completion holds, the result equals the generic shape reader's."""
    from openai.types.chat import ChatCompletion

    from healjson._providers.openai_chat import _completion

    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if arguments is not None:
        message["tool_calls"] = [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
        ]
    data: dict[str, Any] = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        data["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    completion = ChatCompletion.model_validate(data)
    assert _completion(completion) == to_reply(completion)
