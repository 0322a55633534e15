"""Reasoning is never the answer: inline blocks, harmony channels and providers' reasoning fields.

Drafts inside the reasoning are never returned; a reply that holds only reasoning is a
truncation; the reasoning is kept on the attempt, counted where the provider reports it, and
never sent back in a repair prompt. Driven through `parse`/`validate`, `Healer` (sync and async)
and the real openai, anthropic and google-genai SDKs over HTTP against `ScriptedServer`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import anthropic
import pytest
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Flag, Healed, Healer, HealPolicy, Reason, Reply, Source
from healjson._core.outcome.savings import tokens_saved
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer, from_schema
from pinned import pinned
from sdk_calls import gemini_client, wrapped_create


class Verdict(BaseModel):
    label: Literal["spam", "ham"]
    score: int


ANSWER = Verdict(label="spam", score=9)
ANSWER_JSON = ANSWER.model_dump_json()
DRAFT_JSON = '{"label": "ham", "score": 1}'
Mode = Literal["sync", "async"]


# --- inline reasoning forms --------------------------------------------------------------------

INLINE = {
    "think": f"<think>\nMaybe {DRAFT_JSON}? No.\n</think>\n{ANSWER_JSON}",
    "thinking": f"<thinking>Draft: {DRAFT_JSON}</thinking>\n\n{ANSWER_JSON}",
    "reasoning": f"<reasoning>\n{DRAFT_JSON}\n</reasoning>\n```json\n{ANSWER_JSON}\n```",
    "mixed_case": f"<THINK>{DRAFT_JSON}</Think>{ANSWER_JSON}",
    "attributes": f'<thinking type="hidden">{DRAFT_JSON}</thinking>\n{ANSWER_JSON}',
    "bracket_think": f"[THINK]{DRAFT_JSON}[/THINK]\n{ANSWER_JSON}",
    "closer_only": f"The user wants a verdict. {DRAFT_JSON} is wrong.\n</think>\n\n{ANSWER_JSON}",
    "two_blocks": f"<think>{DRAFT_JSON}</think>\n<think>still {DRAFT_JSON}</think>\n{ANSWER_JSON}",
    "harmony": (
        f"<|channel|>analysis<|message|>Try {DRAFT_JSON}.<|end|>"
        f"<|start|>assistant<|channel|>final<|message|>{ANSWER_JSON}<|return|>"
    ),
}


@pytest.mark.parametrize("text", INLINE.values(), ids=INLINE.keys())
def test_a_draft_inside_inline_reasoning_is_never_the_answer(text: str) -> None:
    """Whatever the reasoning form, the answer after it wins and the reasoning is kept."""
    outcome = healjson.validate(text, Verdict)
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert Flag.REASONING_SET_ASIDE in outcome.flags
    assert DRAFT_JSON in (outcome.attempts[0].reasoning or "")
    result = healjson.parse(text, Verdict)
    assert DRAFT_JSON in (result.reasoning or "")


REASONING_ONLY = {
    "unclosed_think": f"<think>\nLet me draft {DRAFT_JSON} and check it",
    "unclosed_thinking": f"<Thinking>\n{ANSWER_JSON}\n",
    "harmony_without_final": f"<|channel|>analysis<|message|>{ANSWER_JSON}",
    "closed_but_empty_answer": f"<think>{ANSWER_JSON}</think>\n",
}


@pytest.mark.parametrize("text", REASONING_ONLY.values(), ids=REASONING_ONLY.keys())
@pytest.mark.parametrize("finish_reason", ["length", "stop"])
def test_a_reply_that_is_only_reasoning_is_a_truncation(text: str, finish_reason: str) -> None:
    """Cut before the answer (or never finished): no value, not even as partial data."""
    outcome = healjson.validate(text, Verdict, finish_reason=finish_reason)
    assert isinstance(outcome, Degraded)
    assert Reason.TOKEN_TRUNCATED == outcome.reason
    assert None is outcome.partial
    assert Source.TRUNCATION == outcome.errors[0].source
    assert "only reasoning" in outcome.errors[0].constraint


def test_a_reasoning_tag_inside_a_json_string_is_text() -> None:
    """`<think>` quoted in a value (not at a line start) does not open a reasoning block."""
    text = 'Here: {"label": "spam", "score": 9, "note": "<think> tags are stripped"}'

    class Noted(Verdict):
        note: str

    outcome = healjson.validate(text, Noted)
    assert isinstance(outcome, Healed)
    assert "<think> tags are stripped" == outcome.value.note
    assert Flag.REASONING_SET_ASIDE not in outcome.flags


# --- the property ------------------------------------------------------------------------------

_PROSE = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="<>", exclude_categories=("Cs", "Cc")),
    max_size=40,
)


@st.composite
def reasoning_text(draw: st.DrawFn) -> str:
    """Prose interleaved with other valid answers, as a reasoning model drafts them."""
    drafts = draw(st.lists(from_schema(Verdict), max_size=3))
    pieces = [draw(_PROSE)]
    for draft in drafts:
        rendering = draw(st.sampled_from(["bare", "fenced", "indented"]))
        body = draft.model_dump_json(indent=2 if rendering == "indented" else None)
        pieces.append(f"```json\n{body}\n```" if rendering == "fenced" else body)
        pieces.append(draw(_PROSE))
    return "\n".join(pieces)


@pinned()
@given(
    value=from_schema(Verdict),
    reasoning=reasoning_text(),
    tag=st.sampled_from(["think", "thinking", "reasoning", "THINKING"]),
    after=st.sampled_from(["", "\n", "\n\n", " "]),
)
def test_validate_after_any_reasoning_yields_the_answer(
    value: Verdict, reasoning: str, tag: str, after: str
) -> None:
    """For any valid value v and reasoning holding other valid values, the answer is v."""
    text = f"<{tag}>\n{reasoning}\n</{tag}>{after}{value.model_dump_json()}"
    outcome = healjson.validate(text, Verdict)
    assert isinstance(outcome, Healed)
    assert value == outcome.value


# --- through Healer, sync and async ------------------------------------------------------------


def _run(mode: Mode, healer: Healer[Any], model: ScriptedModel) -> Any:
    if mode == "sync":
        return healer.run(model, "Classify the mail.")
    return asyncio.run(healer.arun(model.acall, "Classify the mail."))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_provider_reasoning_field_is_kept_apart_through_the_healer(mode: Mode) -> None:
    """A `Reply.reasoning` with drafts is recorded on the attempt and never parsed."""
    model = ScriptedModel([Reply(ANSWER_JSON, "stop", reasoning=f"Draft {DRAFT_JSON}")])
    outcome = _run(mode, Healer(Verdict), model)
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert f"Draft {DRAFT_JSON}" == outcome.attempts[0].reasoning
    assert (Flag.REASONING_SET_ASIDE,) == outcome.flags
    assert 0 == tokens_saved(outcome)  # a clean answer beside the reasoning: nothing mended


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_reasoning_is_not_sent_back_in_the_repair_prompt(mode: Mode) -> None:
    """The repair quotes the answer part only: the drafts stay out of the next request."""
    first = f'<think>{DRAFT_JSON} hmm</think>\n{{"label": "spam", "score": "high"}}'
    model = ScriptedModel([first, ANSWER_JSON])
    outcome = _run(mode, Healer(Verdict), model)
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    repair = model.calls[1].messages
    assert '{"label": "spam", "score": "high"}' == repair[-2]["content"]
    assert all(DRAFT_JSON not in str(message["content"]) for message in repair)
    assert first == outcome.attempts[0].raw_text  # nothing lost: the attempt keeps it all


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_empty_content_with_reasoning_is_a_truncation_not_an_empty_answer(mode: Mode) -> None:
    """A reasoning model that spent its budget thinking: a truncation, repaired with more room."""
    cut = Reply("", "length", reasoning=f"Long thought {DRAFT_JSON} ...")
    model = ScriptedModel([cut, ANSWER_JSON])
    healer = Healer(Verdict, policy=HealPolicy(on_truncation="raise_max_tokens"))
    if mode == "sync":
        outcome = healer.run(model, "Classify.", max_tokens=100)
    else:
        outcome = asyncio.run(healer.arun(model.acall, "Classify.", max_tokens=100))
    assert isinstance(outcome, Healed)
    assert Source.TRUNCATION == outcome.attempts[0].diagnostics[0].source
    assert 200 == model.calls[1].params["max_tokens"]


# --- real SDKs over HTTP -----------------------------------------------------------------------


def _openai(server: ScriptedServer, mode: Mode, **create: Any) -> Any:
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "Classify."}],
        "response_model": Verdict,
        **create,
    }
    return wrapped_create(server, mode, **kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_openai_reasoning_fields_are_set_aside_and_counted(
    scripted_server: ScriptedServer, mode: Mode, field: Literal["reasoning_content", "reasoning"]
) -> None:
    """DeepSeek/vLLM `reasoning_content` and OpenRouter/Ollama `reasoning`: one call, the
    drafts kept on the attempt, the reasoning tokens in their own usage bucket."""
    reasoning = f"Drafting {DRAFT_JSON} first."
    scripted_server.push(
        ScriptedReply(content=ANSWER_JSON, reasoning=reasoning, reasoning_field=field)
    )
    outcome = _openai(scripted_server, mode)
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert 1 == outcome.calls
    assert reasoning == outcome.attempts[0].reasoning
    assert len(reasoning) // 4 == outcome.usage.reasoning_tokens
    assert (Flag.REASONING_SET_ASIDE,) == outcome.flags


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_openai_inline_think_with_a_draft_heals_in_one_call(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """A raw `<think>` block in the content (a server without a reasoning parser)."""
    scripted_server.push(INLINE["think"])
    outcome = _openai(scripted_server, mode)
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert 1 == len(scripted_server.requests)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_openai_reasoning_only_reply_degrades_as_truncated(
    scripted_server: ScriptedServer, mode: Mode
) -> None:
    """Empty content, reasoning full of drafts, cut by the limit: `token_truncated`, no value."""
    scripted_server.push(
        ScriptedReply(content="", reasoning=f"I think {ANSWER_JSON}", finish_reason="length")
    )
    outcome = _openai(scripted_server, mode, policy=HealPolicy(max_attempts=1))
    assert isinstance(outcome, Degraded)
    assert Reason.TOKEN_TRUNCATED == outcome.reason
    assert None is outcome.partial


def test_anthropic_thinking_blocks_are_the_reasoning(scripted_server: ScriptedServer) -> None:
    """The real anthropic SDK over HTTP: a thinking block with a draft, then the answer."""
    scripted_server.push(ScriptedReply(content=ANSWER_JSON, reasoning=f"Maybe {DRAFT_JSON}"))
    client = anthropic.Anthropic(
        base_url=scripted_server.anthropic_base_url, api_key="test", max_retries=0
    )

    def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        return client.messages.create(model="claude-test", max_tokens=256, messages=messages)

    with client:
        outcome = Healer(Verdict).run(call, "Classify.")
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert f"Maybe {DRAFT_JSON}" == outcome.attempts[0].reasoning
    assert (Flag.REASONING_SET_ASIDE,) == outcome.flags


def test_gemini_thought_parts_are_the_reasoning(scripted_server: ScriptedServer) -> None:
    """The real google-genai SDK over HTTP: a thought part with a draft, then the answer."""
    reasoning = f"Maybe {DRAFT_JSON}"
    scripted_server.push(ScriptedReply(content=ANSWER_JSON, reasoning=reasoning))
    options = genai_types.HttpOptions(base_url=scripted_server.gemini_base_url)
    with gemini_client(api_key="test", http_options=options) as client:

        def call(messages: list[dict[str, Any]], **params: Any) -> Any:
            return client.models.generate_content(model="gemini-test", contents="Classify.")

        outcome = Healer(Verdict).run(call, "Classify.")
    assert isinstance(outcome, Healed)
    assert ANSWER == outcome.value
    assert reasoning == outcome.attempts[0].reasoning
    assert len(reasoning) // 4 == outcome.usage.reasoning_tokens
    assert (Flag.REASONING_SET_ASIDE,) == outcome.flags


def test_reasoning_appears_in_both_traces() -> None:
    """The Markdown trace shows the reasoning that was set aside; the JSON trace keeps it."""
    outcome = healjson.validate(INLINE["think"], Verdict)
    assert DRAFT_JSON in outcome.trace()
    attempt = json.loads(outcome.trace("json"))["attempts"][0]
    assert DRAFT_JSON in attempt["reasoning"]
