"""The fast readers of the Anthropic `Message` and google-genai's `GenerateContentResponse` agree
with the generic readers on every response built with the SDKs' own types, and `to_reply` uses
them for those classes once one was read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic.types as at
from google.genai import types as gt
from hypothesis import given, settings
from hypothesis import strategies as st

from healjson._core.wire.reply import SDK_REPLIES, Reply, to_reply
from healjson._providers._unreadable import UnreadableReply
from healjson._providers.anthropic_messages import wire as anthropic_messages
from healjson._providers.gemini_generate import wire as gemini_generate

_counts = st.none() | st.integers(min_value=0, max_value=10**6)
_texts = st.text(max_size=20)

# --- Anthropic ------------------------------------------------------------------------------

_anthropic_blocks = st.one_of(
    st.builds(at.TextBlock, type=st.just("text"), text=_texts),
    st.builds(
        at.ThinkingBlock, type=st.just("thinking"), thinking=_texts, signature=st.just("sig")
    ),
    st.builds(
        at.ToolUseBlock,
        type=st.just("tool_use"),
        id=st.text(min_size=1, max_size=8),
        name=st.text(min_size=1, max_size=8),
        input=st.dictionaries(st.text(max_size=5), st.integers() | _texts, max_size=3),
    ),
)
_stop_reasons = st.sampled_from(
    [None, "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",
     "model_context_window_exceeded"]
)  # fmt: skip


@st.composite
def anthropic_messages_(draw: st.DrawFn) -> at.Message:
    stop = draw(_stop_reasons)
    details = None
    if stop == "refusal" and draw(st.booleans()):
        details = at.RefusalStopDetails(type="refusal", explanation=draw(st.none() | _texts))
    thinking = draw(st.none() | st.integers(min_value=0, max_value=100))
    usage = at.Usage(
        input_tokens=draw(st.integers(min_value=0, max_value=10**6)),
        output_tokens=draw(st.integers(min_value=0, max_value=10**6)),
        cache_read_input_tokens=draw(_counts),
        cache_creation_input_tokens=draw(_counts),
        output_tokens_details=None
        if thinking is None
        else at.OutputTokensDetails(thinking_tokens=thinking),
    )
    return at.Message(
        id="msg_1",
        type="message",
        role="assistant",
        model=draw(st.sampled_from(["claude-x", "claude-y"])),
        content=draw(st.lists(_anthropic_blocks, max_size=3)),
        stop_reason=stop,
        stop_details=details,
        usage=usage,
    )


@settings(max_examples=75, deadline=None)
@given(anthropic_messages_())
def test_anthropic_fast_reader_agrees_with_the_generic_one(message: at.Message) -> None:
    """For any Anthropic `Message`, the fast reader and `to_reply` give the generic reader's
    `Reply`."""
    generic = anthropic_messages._anthropic(message)
    assert anthropic_messages.read_message(message) == generic
    assert to_reply(message) == generic


def test_to_reply_reads_anthropic_messages_by_the_fast_reader() -> None:
    """`to_reply` reads an Anthropic `Message` by the fast reader, once one was read, with usage
    and stop reason mapped."""
    message = at.Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-x",
        content=[at.TextBlock(type="text", text='{"a": 1}')],
        stop_reason="end_turn",
        usage=at.Usage(input_tokens=5, output_tokens=3, cache_read_input_tokens=2),
    )
    reply = to_reply(message)
    assert SDK_REPLIES.get(at.Message) is anthropic_messages.read_message
    assert (reply.content, reply.finish_reason) == ('{"a": 1}', "stop")
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.cache_read_tokens) == (7, 2)


# --- Gemini ---------------------------------------------------------------------------------

_parts = st.one_of(
    st.builds(gt.Part, text=_texts, thought=st.none() | st.booleans()),
    st.builds(
        gt.Part,
        function_call=st.builds(
            gt.FunctionCall,
            name=st.text(min_size=1, max_size=8),
            args=st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
            id=st.none() | st.text(min_size=1, max_size=5),
        ),
    ),
)
_finishes = st.none() | st.sampled_from(
    [gt.FinishReason.STOP, gt.FinishReason.MAX_TOKENS, gt.FinishReason.SAFETY,
     gt.FinishReason.RECITATION, gt.FinishReason.MALFORMED_FUNCTION_CALL, gt.FinishReason.OTHER]
)  # fmt: skip


_contents = st.builds(
    gt.Content, role=st.just("model"), parts=st.none() | st.lists(_parts, max_size=3)
)


@st.composite
def gemini_responses(draw: st.DrawFn) -> gt.GenerateContentResponse:
    candidates: Any = draw(
        st.none()
        | st.lists(
            st.builds(
                gt.Candidate,
                content=st.none() | _contents,
                finish_reason=_finishes,
            ),
            max_size=2,
        )
    )
    usage = draw(
        st.none()
        | st.builds(
            gt.GenerateContentResponseUsageMetadata,
            prompt_token_count=_counts,
            candidates_token_count=_counts,
            thoughts_token_count=_counts,
            cached_content_token_count=_counts,
        )
    )
    feedback = None
    if not candidates and draw(st.booleans()):
        feedback = gt.GenerateContentResponsePromptFeedback(block_reason=gt.BlockedReason.SAFETY)
    return gt.GenerateContentResponse(
        candidates=candidates,
        usage_metadata=usage,
        prompt_feedback=feedback,
        model_version=draw(st.none() | st.sampled_from(["gemini-x", "gemini-y"])),
    )


@settings(max_examples=75, deadline=None)
@given(gemini_responses())
def test_gemini_fast_reader_agrees_with_the_generic_one(
    response: gt.GenerateContentResponse,
) -> None:
    """For any Gemini response, the fast reader (and again, with its finish reason remembered)
    and `to_reply` give the generic reader's `Reply`, or fail as it does (no candidates and no
    blocked prompt: no response)."""
    generic = verdict(gemini_generate._gemini, response)
    assert verdict(gemini_generate.read_response, response) == generic
    assert verdict(gemini_generate.read_response, response) == generic  # a finish remembered
    assert verdict(to_reply, response) == generic


def verdict(reader: Callable[[Any], Reply], response: Any) -> Reply | str:
    """What `reader` makes of `response`: its `Reply`, or the message of the `UnreadableReply`
    it raised (the provider's failure)."""
    try:
        return reader(response)
    except UnreadableReply as exc:
        return str(exc)


def test_to_reply_reads_gemini_responses_by_the_fast_reader() -> None:
    """`to_reply` reads a Gemini response by the fast reader, with usage, reasoning tokens and
    model mapped."""
    response = gt.GenerateContentResponse(
        candidates=[
            gt.Candidate(
                content=gt.Content(role="model", parts=[gt.Part(text='{"a": 1}')]),
                finish_reason=gt.FinishReason.STOP,
            )
        ],
        usage_metadata=gt.GenerateContentResponseUsageMetadata(
            prompt_token_count=4, candidates_token_count=3, thoughts_token_count=2
        ),
        model_version="gemini-x",
    )
    reply = to_reply(response)
    assert SDK_REPLIES.get(gt.GenerateContentResponse) is gemini_generate.read_response
    assert (reply.content, reply.finish_reason) == ('{"a": 1}', "stop")
    assert reply.usage is not None
    assert (reply.usage.completion_tokens, reply.usage.reasoning_tokens) == (5, 2)
