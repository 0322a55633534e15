"""A token count read from the wire counts only when it is an int from 0 to a billion (no call
reads or writes more) that is no bool.

Every provider's usage reader (OpenAI chat and Responses, Anthropic, Gemini, Ollama; whole replies
and streams, SDK objects and plain dicts) reads a count another way (negative, past a billion,
`true`, a float, a text) as unreported: it is estimated as a count the provider left out is,
and the usage is marked `estimated`. So a hostile or broken usage member can neither switch a
`token_budget` off (a negative prompt count) nor pass a guess for an exact count (`"lots"` read
as 0, `10**30` as exact). Over real HTTP
with each real SDK against `ScriptedServer` (raw bodies: the scripted replies' own usage must be
valid), and through `wrap_callable` (plain dicts, which no SDK coerced first).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import ollama
import openai
import pytest
from google import genai
from google.genai import types as gt
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healer, HealPolicy, Usage
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

ONE = HealPolicy(max_attempts=1)
SAID = [{"role": "user", "content": "Ann is 31"}]
GOOD = '{"name": "Ann", "age": 31}'
PROVIDERS = ("chat", "responses", "anthropic", "gemini", "ollama")
NAMES = {
    "chat": ("prompt_tokens", "completion_tokens"),
    "responses": ("input_tokens", "output_tokens"),
    "anthropic": ("input_tokens", "output_tokens"),
    "gemini": ("promptTokenCount", "candidatesTokenCount"),
    "ollama": ("prompt_eval_count", "eval_count"),
}


class Person(BaseModel):
    name: str
    age: int


def is_count(value: Any) -> bool:
    """The rule under test: an int from 0 to a billion that is no bool."""
    return type(value) is int and 0 <= value <= 10**9


ABSENT = "<absent>"
"""A count the usage member leaves out (`_usage` omits it): unreported, as one that is no count."""
WIRE_COUNTS = st.one_of(
    st.just(ABSENT),
    st.integers(0, 10**6),
    st.integers(-(10**6), -1),
    st.integers(10**9 + 1, 10**30),
    st.floats(-1e6, 1e6, allow_nan=False).filter(lambda x: not x.is_integer()),
    st.sampled_from(["lots", ""]),
)
"""What a usage member may hold over HTTP (the openai and anthropic SDKs read a bool, a float
with no fraction or a text of digits as an int before healjson sees it: the plain dicts' case)."""
COUNTS = st.one_of(
    WIRE_COUNTS, st.booleans(), st.integers(-5, 5).map(float), st.sampled_from(["12", "-3"])
)


# --- the bodies ----------------------------------------------------------------------------------


def _usage(provider: str, prompt: Any, completion: Any) -> dict[str, Any]:
    first, second = NAMES[provider]
    return {
        name: count for name, count in ((first, prompt), (second, completion)) if count != ABSENT
    }


def _sse(*events: tuple[str | None, dict[str, Any]]) -> str:
    lines = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        lines.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(lines)


def _message(provider: str, usage: dict[str, Any], text: str = GOOD) -> dict[str, Any]:
    """`provider`'s whole reply of `text` with `usage` as its usage member."""
    if provider == "chat":
        choice = {"index": 0, "finish_reason": "stop",
                  "message": {"role": "assistant", "content": text}}  # fmt: skip
        return {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [choice], "usage": usage}  # fmt: skip
    if provider == "responses":
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"type": "message", "id": "i", "role": "assistant", "status": "completed",
                "content": [part]}  # fmt: skip
        return {"id": "r", "object": "response", "created_at": 1, "status": "completed",
                "model": "m", "output": [item], "usage": usage}  # fmt: skip
    if provider == "anthropic":
        return {"id": "a", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": usage}  # fmt: skip
    if provider == "ollama":  # the counts at the top level, beside `done`
        return {"model": "m", "created_at": "2026-01-01T00:00:00Z", "done": True,
                "done_reason": "stop", "message": {"role": "assistant", "content": text},
                **usage}  # fmt: skip
    candidate = {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
    return {"candidates": [candidate], "modelVersion": "m", "usageMetadata": usage}


def _stream(provider: str, usage: dict[str, Any]) -> str:
    """`provider`'s stream of `GOOD` whose usage (the last event's) is `usage`."""
    if provider == "chat":
        head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        text = {"index": 0, "delta": {"role": "assistant", "content": GOOD}, "finish_reason": None}
        end = {"index": 0, "delta": {}, "finish_reason": "stop"}
        return (
            _sse(
                (None, {**head, "choices": [text]}),
                (None, {**head, "choices": [end]}),
                (None, {**head, "choices": [], "usage": usage}),
            )
            + "data: [DONE]\n\n"
        )
    if provider == "responses":
        whole = _message("responses", usage)
        started = {**whole, "status": "in_progress", "output": [], "usage": None}
        delta = {"type": "response.output_text.delta", "item_id": "i", "output_index": 0,
                 "content_index": 0, "delta": GOOD, "sequence_number": 1}  # fmt: skip
        return _sse(
            ("response.created", {"type": "response.created", "sequence_number": 0,
                                  "response": started}),
            ("response.output_text.delta", delta),
            ("response.completed", {"type": "response.completed", "sequence_number": 2,
                                    "response": whole}),
        )  # fmt: skip
    if provider == "anthropic":
        # the counts as the API sends them: `message_start`'s running ones, `message_delta`'s
        # final ones (the input's too)
        start = {"id": "a", "type": "message", "role": "assistant", "model": "m", "content": [],
                 "stop_reason": None, "usage": {**usage, "output_tokens": 0}}  # fmt: skip
        block = {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}}  # fmt: skip
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": GOOD}}  # fmt: skip
        return _sse(
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", block),
            ("content_block_delta", delta),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                               "usage": usage}),
            ("message_stop", {"type": "message_stop"}),
        )  # fmt: skip
    if provider == "ollama":  # NDJSON: the text, then the last line with the counts
        head = {"model": "m", "created_at": "2026-01-01T00:00:00Z", "done": False,
                "message": {"role": "assistant", "content": GOOD}}  # fmt: skip
        last = _message("ollama", usage, "")
        return json.dumps(head) + "\n" + json.dumps(last) + "\n"
    piece = {"candidates": [{"content": {"role": "model", "parts": [{"text": GOOD}]},
                             "finishReason": "STOP"}], "modelVersion": "m"}  # fmt: skip
    return _sse((None, piece), (None, {"modelVersion": "m", "usageMetadata": usage}))


def served(provider: str, prompt: Any, completion: Any, streamed: bool) -> ScriptedReply:
    usage = _usage(provider, prompt, completion)
    if streamed:
        kind = "application/x-ndjson" if provider == "ollama" else "text/event-stream"
        return ScriptedReply(body=_stream(provider, usage), content_type=kind)
    return ScriptedReply(body=json.dumps(_message(provider, usage)))


# --- the calls -----------------------------------------------------------------------------------


def call(server: ScriptedServer, provider: str, streamed: bool) -> Any:
    """One wrapped sync SDK call of `provider` (a `Person` asked for): its outcome."""
    more: dict[str, Any] = {"policy": ONE, "response_model": Person}
    if provider in ("chat", "responses"):
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            client = healjson.wrap(sdk)
            if provider == "chat":
                answer = client.chat.completions.create(
                    model="m", messages=SAID, stream=streamed, **more
                )
            else:
                answer = client.responses.create(
                    model="m", input="Ann is 31", stream=streamed, **more
                )
            return drained(answer, streamed)
    if provider == "anthropic":
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        ) as sdk:
            answer = healjson.wrap(sdk).messages.create(
                model="m", max_tokens=64, messages=SAID, stream=streamed, **more
            )
            return drained(answer, streamed)
    if provider == "ollama":
        with ollama.Client(host=server.ollama_host) as local:
            answer = healjson.wrap(local).chat(model="m", messages=SAID, stream=streamed, **more)
            return drained(answer, streamed)
    options = gt.HttpOptions(base_url=server.gemini_base_url, timeout=10_000)
    client = genai.Client(api_key="k", http_options=options)
    try:
        models = healjson.wrap(client).models
        if not streamed:
            return models.generate_content(model="m", contents="Ann is 31", **more)
        with models.generate_content_stream(model="m", contents="Ann is 31", **more) as stream:
            return drained(stream, True)
    finally:
        client.close()


def drained(answer: Any, streamed: bool) -> Any:
    if not streamed:
        return answer
    for _ in answer:
        pass
    return answer.outcome


def check(usage: Usage, prompt: Any, completion: Any, parts: bool = False) -> None:
    """The rule, on the usage a call with these wire counts spent (`parts`: a stream whose
    events carry their counts in parts, where a count of 0 states nothing)."""
    if parts:
        prompt, completion = (ABSENT if count == 0 else count for count in (prompt, completion))
    assert usage.prompt_tokens >= 0, usage
    assert usage.completion_tokens >= 0, usage
    assert usage.requests == 1
    if is_count(prompt) and is_count(completion):
        assert (usage.prompt_tokens, usage.completion_tokens) == (prompt, completion)
        assert not usage.estimated, usage
        return
    assert usage.estimated, usage  # a count that was no count: never passed off as exact
    assert usage.cost is None
    if is_count(prompt) and prompt:
        assert usage.prompt_tokens == prompt  # the count that was one kept as reported
    else:
        assert usage.prompt_tokens > 0  # estimated from the request, as a missing one is
    if is_count(completion):
        assert usage.completion_tokens >= completion
    else:
        assert usage.completion_tokens >= len(GOOD) // 4


# --- over real HTTP ------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("provider", PROVIDERS)
@pinned(max_examples=12)
@given(prompt=WIRE_COUNTS, completion=WIRE_COUNTS)
@example(prompt=10**30, completion=12)
@example(prompt=50, completion=10**9 + 1)
@example(prompt=-100_000, completion=400)
@example(prompt="lots", completion=12)
@example(prompt=50, completion="lots")
@example(prompt=7, completion=-3)
@example(prompt=1.5, completion=12)
@example(prompt=50, completion=12)
@example(prompt=ABSENT, completion=12)
@example(prompt=50, completion=ABSENT)
def test_a_count_that_is_no_count_is_estimated(
    shared_server: ScriptedServer,
    provider: str,
    streamed: bool,
    prompt: Any,
    completion: Any,
) -> None:
    """Each provider's usage keeps the counts that are counts and estimates the others."""
    if provider in ("gemini", "ollama"):  # their SDKs validate counts as ints: the sign varies
        prompt = prompt if type(prompt) is int or prompt == ABSENT else -1
        completion = completion if type(completion) is int or completion == ABSENT else -1
    shared_server.extend([served(provider, prompt, completion, streamed)])
    outcome = call(shared_server, provider, streamed)
    assert outcome.ok, outcome
    check(outcome.usage, prompt, completion, parts=streamed and provider == "anthropic")


def test_a_negative_prompt_count_does_not_switch_a_token_budget_off() -> None:
    """A reply saying its prompt cost -100000 tokens stops the run at its budget all the same."""
    usage = {"prompt_tokens": -100_000, "completion_tokens": 400}
    body = json.dumps(_message("chat", usage, '{"name": "Ann"}'))  # no age: a repair is due
    with (
        ScriptedServer([ScriptedReply(body=body)] * 5) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m",
            messages=SAID,
            response_model=Person,
            policy=HealPolicy(max_attempts=5, token_budget=500),
        )
    assert not outcome.ok
    assert outcome.reason == healjson.Reason.BUDGET_EXCEEDED
    assert outcome.calls == 1
    assert outcome.usage.prompt_tokens > 0
    assert outcome.usage.estimated


# --- plain dicts (a model call's, `wrap_callable`'s): what no SDK coerced first -----------------


def _dict_reply(provider: str, prompt: Any, completion: Any) -> dict[str, Any]:
    return _message(provider, _usage(provider, prompt, completion))


@pytest.mark.parametrize("provider", PROVIDERS)
@pinned(max_examples=30)
@given(prompt=COUNTS, completion=COUNTS)
@example(prompt=True, completion=12)
@example(prompt=50, completion=False)
@example(prompt=10**30, completion=12)
@example(prompt="lots", completion=12)
def test_a_dict_reply_count_that_is_no_count_is_estimated(
    provider: str, prompt: Any, completion: Any
) -> None:
    """A plain dict reply of each format (a bool among its counts too) follows the same rule."""
    reply = _dict_reply(provider, prompt, completion)
    outcome = Healer(Person, policy=ONE).run(lambda messages, **_: reply, SAID)
    assert outcome.ok, outcome
    check(outcome.usage, prompt, completion)


@pytest.mark.parametrize("bad", [-1, True, "lots", 2.0], ids=repr)
def test_a_streamed_dict_chunk_count_that_is_no_count_is_estimated(bad: Any) -> None:
    """A chat stream's usage chunk whose prompt count is no count: estimated, never exact."""
    head = {"object": "chat.completion.chunk", "model": "m"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"content": GOOD}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**head, "choices": [], "usage": {"prompt_tokens": bad, "completion_tokens": 9}},
    ]
    stream = healjson.wrap_callable(lambda **_: iter(chunks), policy=ONE)(
        model="m", messages=SAID, response_model=Person, stream=True
    )
    for _ in stream:
        pass
    check(stream.outcome.usage, bad, 9)


# --- a stream's counts in parts, revised along the way ------------------------------------------


def _anthropic_stream(start_usage: dict[str, Any], end_usage: dict[str, Any]) -> ScriptedReply:
    """An Anthropic stream of `GOOD` whose `message_start` and `message_delta` carry these."""
    start = {"id": "a", "type": "message", "role": "assistant", "model": "m", "content": [],
             "stop_reason": None, "usage": start_usage}  # fmt: skip
    delta = {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": GOOD}}  # fmt: skip
    body = _sse(
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", delta),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": end_usage}),
        ("message_stop", {"type": "message_stop"}),
    )  # fmt: skip
    return ScriptedReply(body=body, content_type="text/event-stream")


@pytest.mark.parametrize("opening", [-5, None, "lots"], ids=["negative", "null", "text"])
def test_an_input_count_no_event_stated_is_estimated_in_a_stream(
    shared_server: ScriptedServer, opening: Any
) -> None:
    """`message_start` with an input count that is no count, then `message_delta` with the
    output's alone: the prompt was never reported, so it is estimated, never an exact 0."""
    shared_server.extend([_anthropic_stream({"input_tokens": opening, "output_tokens": 1},
                                            {"output_tokens": 5})])  # fmt: skip
    outcome = call(shared_server, "anthropic", True)
    assert outcome.ok, outcome
    assert outcome.usage.estimated
    assert outcome.usage.prompt_tokens > 0


def test_the_closing_counts_of_a_stream_replace_its_opening_ones(
    shared_server: ScriptedServer,
) -> None:
    """A stream's closing totals revise what it said before: Anthropic's `message_delta`
    input count replaces `message_start`'s, and Gemini's last piece's counts replace a running
    piece's, exact."""
    shared_server.extend([_anthropic_stream({"input_tokens": 100, "output_tokens": 1},
                                            {"input_tokens": 50, "output_tokens": 5})])  # fmt: skip
    anthropic_usage = call(shared_server, "anthropic", True).usage
    running = {"candidates": [{"content": {"role": "model", "parts": [{"text": GOOD[:5]}]}}],
               "modelVersion": "m",
               "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 30}}  # fmt: skip
    closing = {"candidates": [{"content": {"role": "model", "parts": [{"text": GOOD[5:]}]},
                               "finishReason": "STOP"}], "modelVersion": "m",
               "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 7}}  # fmt: skip
    body = _sse((None, running), (None, closing))
    shared_server.extend([ScriptedReply(body=body, content_type="text/event-stream")])
    gemini_usage = call(shared_server, "gemini", True).usage
    assert [(50, 5, False), (10, 7, False)] == [
        (usage.prompt_tokens, usage.completion_tokens, usage.estimated)
        for usage in (anthropic_usage, gemini_usage)
    ]


def test_a_closing_event_with_cache_counts_but_no_input_count_keeps_the_opening_prompt(
    shared_server: ScriptedServer,
) -> None:
    """`message_delta` repeating the cache reads without the input's count states no prompt
    count: the prompt stays `message_start`'s (its input plus its cache reads), exact."""
    shared_server.extend([_anthropic_stream(
        {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 40},
        {"output_tokens": 7, "cache_read_input_tokens": 40},
    )])  # fmt: skip
    usage = call(shared_server, "anthropic", True).usage
    assert (140, 7, 40, False) == (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.cache_read_tokens,
        usage.estimated,
    )
