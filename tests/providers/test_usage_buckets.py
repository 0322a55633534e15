"""Token buckets end to end: what the scripted server reports, read back by healjson.

Every scenario drives a real provider SDK over HTTP against `ScriptedServer`: the openai SDK
wrapped by `healjson.wrap`, and the anthropic and google-genai SDKs behind instructor
(`from_anthropic` / `from_genai`, `Mode.JSON`) wrapped by healjson. The server reports prompt
caching as each provider does (OpenAI `prompt_tokens_details.cached_tokens`, Anthropic uncached
`input_tokens` beside `cache_read_input_tokens` / `cache_creation_input_tokens`, Gemini
`cachedContentTokenCount`), and `outcome.usage` must come back with the scripted buckets:
`prompt_tokens` counting every input token, cached ones included.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anthropic
import genai_prices
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healed, HealPolicy, Usage
from healjson._core.wire.reply import to_reply
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from healjson.testing._wire import anthropic_messages, gemini_generate, openai_chat
from healjson.testing._wire import usage as scripted_usage
from healjson.testing._wire._sse import rendered
from lanes import needs_instructor
from sdk_calls import TLS, close_gemini

USER: list[anthropic.types.MessageParam] = [
    {"role": "user", "content": "Ann is 31. Extract the person as JSON."}
]
GOOD = '{"name": "Ann", "age": 31}'
INVALID = '{"name": "Ann", "age": "lots"}'
INCOMPLETE = '{"name": "Ann"}'
PROVIDERS = ("openai", "anthropic", "gemini")
MODEL = {"openai": "gpt-test", "anthropic": "claude-test", "gemini": "gemini-test"}
# the task's usage: 120 prompt tokens of which 80 read from the cache and 20 written to it
CACHED = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "reasoning_tokens": 10,
    "cached_tokens": 80,
    "cache_write_tokens": 20,
}
SECOND = {
    "prompt_tokens": 50,
    "completion_tokens": 8,
    "reasoning_tokens": 2,
    "cached_tokens": 40,
    "cache_write_tokens": 5,
}


class Person(BaseModel):
    name: str
    age: int


def expected(provider: str, usage: dict[str, int], model: str | None = None) -> Usage:
    """What healjson reads for one request scripted with `usage`: every bucket as given, the
    cache writes only on Anthropic (the only provider reporting them)."""
    return Usage(
        usage["prompt_tokens"],
        usage["completion_tokens"],
        reasoning_tokens=usage.get("reasoning_tokens", 0),
        cache_read_tokens=usage.get("cached_tokens", 0),
        cache_write_tokens=usage.get("cache_write_tokens", 0) if provider == "anthropic" else 0,
        requests=1,
        model=model or MODEL[provider],
    )


def openai_sdk(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=TLS),
    )


def anthropic_sdk(server: ScriptedServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=anthropic.DefaultHttpxClient(verify=TLS),
    )


def genai_sdk(server: ScriptedServer) -> genai.Client:
    options = genai_types.HttpOptions(base_url=server.gemini_base_url, client_args={"verify": TLS})
    return genai.Client(api_key="test-key", http_options=options)


@contextlib.contextmanager
def wrapped(server: ScriptedServer, provider: str) -> Iterator[Any]:
    """`healjson.wrap` over the provider's real sync SDK (instructor for Anthropic and Gemini)."""
    if provider == "openai":
        with openai_sdk(server) as sdk:
            yield healjson.wrap(sdk)
        return
    import instructor

    if provider == "anthropic":
        with anthropic_sdk(server) as sdk:
            yield healjson.wrap(instructor.from_anthropic(sdk, mode=instructor.Mode.JSON))
    else:
        client = genai_sdk(server)
        try:
            yield healjson.wrap(instructor.from_genai(client, mode=instructor.Mode.JSON))
        finally:
            close_gemini(client)


def heal(provider: str, script: list[Any], **kwargs: Any) -> tuple[Any, ScriptedServer]:
    """One healing `create` for `Person` on a fresh server scripted with `script`."""
    kwargs.setdefault("model", MODEL[provider])
    kwargs.setdefault("messages", USER)
    kwargs.setdefault("max_tokens", 256)  # the Messages API requires it
    with ScriptedServer(script) as server, wrapped(server, provider) as client:
        outcome = client.chat.completions.create(response_model=Person, **kwargs)
    return outcome, server


def price(model: str, prompt: int, completion: int, read: int = 0, written: int = 0) -> float:
    """genai-prices' own total for one model's tokens."""
    usage = genai_prices.Usage(
        input_tokens=prompt,
        output_tokens=completion,
        cache_read_tokens=read or None,
        cache_write_tokens=written or None,
    )
    total: Decimal = genai_prices.calc_price(usage, model_ref=model).total_price
    return float(total)


# ---------------------------------------------------------------------------------------------
# One request, two requests, per provider
# ---------------------------------------------------------------------------------------------


@pytest.fixture(
    params=[
        "openai",
        pytest.param("anthropic", marks=needs_instructor),
        pytest.param("gemini", marks=needs_instructor),
    ]
)
def provider(request: pytest.FixtureRequest) -> str:
    """Which SDK healjson drives: openai, anthropic (instructor) or gemini (instructor)."""
    return request.param  # type: ignore[no-any-return]


def test_one_request_reports_every_bucket(provider: str) -> None:
    """Prompt tokens count the cached ones (Anthropic's uncached `input_tokens` plus its cache
    reads and writes), the cache reads and writes are their own buckets, the completion counts
    the reasoning, one request, on the reply's model."""
    outcome, server = heal(provider, [ScriptedReply(GOOD, usage=CACHED)])

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert 1 == len(server.requests)
    assert expected(provider, CACHED) == outcome.usage
    assert [expected(provider, CACHED)] == [attempt.usage for attempt in outcome.attempts]


def test_two_requests_sum_every_bucket(provider: str) -> None:
    """An invalid answer then a valid one: each bucket is the sum of the two, two requests."""
    script = [ScriptedReply(INVALID, usage=CACHED), ScriptedReply(GOOD, usage=SECOND)]

    outcome, server = heal(provider, script)

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls == len(server.requests)
    first, second = expected(provider, CACHED), expected(provider, SECOND)
    assert [first, second] == [attempt.usage for attempt in outcome.attempts]
    assert first + second == outcome.usage
    assert (
        Usage(
            170,
            38,
            reasoning_tokens=12,
            cache_read_tokens=120,
            cache_write_tokens=25 if provider == "anthropic" else 0,
            requests=2,
            model=MODEL[provider],
        )
        == outcome.usage
    )


def test_async_openai_reports_every_bucket() -> None:
    """The async openai client reads the same buckets."""

    async def main() -> Any:
        with ScriptedServer([ScriptedReply(INVALID, usage=CACHED), GOOD]) as server:
            async with openai.AsyncOpenAI(
                base_url=server.base_url,
                api_key="test",
                max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(verify=TLS),
            ) as sdk:
                client = healjson.wrap(sdk)
                return await client.chat.completions.create(
                    model="gpt-test", messages=USER, response_model=Person
                )

    outcome = asyncio.run(main())

    assert isinstance(outcome, Healed)
    assert expected("openai", CACHED) == outcome.attempts[0].usage
    assert 2 == outcome.usage.requests
    assert 80 == outcome.usage.cache_read_tokens


# ---------------------------------------------------------------------------------------------
# Streamed replies
# ---------------------------------------------------------------------------------------------


def test_openai_stream_reports_every_bucket() -> None:
    """`create(..., stream=True)` returns a `HealStream`; its outcome has the usage chunk's
    buckets (the wrapper asks for it with `stream_options.include_usage`)."""
    with ScriptedServer([ScriptedReply(GOOD, usage=CACHED, chunk_chars=5)]) as server:
        with openai_sdk(server) as sdk:
            stream = healjson.wrap(sdk).chat.completions.create(
                model="gpt-test", messages=USER, response_model=Person, stream=True
            )
            assert isinstance(stream, healjson.HealStream)
            snapshots = list(stream)
        outcome = stream.outcome
        server.wait_idle(5)  # the record is final once the handler has written its last event
        [request] = server.requests

    assert request.streamed
    assert request.stream_completed
    assert {"include_usage": True} == (request.body or {}).get("stream_options")
    assert len(snapshots) > 1
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert expected("openai", CACHED) == outcome.usage


def test_openai_stream_sums_two_streamed_requests() -> None:
    """A streamed answer missing a field (found invalid only at its end, after the usage chunk)
    then a streamed valid one: the buckets add up."""
    script = [ScriptedReply(INCOMPLETE, usage=CACHED), ScriptedReply(GOOD, usage=SECOND)]
    with ScriptedServer(script) as server:
        with openai_sdk(server) as sdk:
            stream = healjson.wrap(sdk).chat.completions.create(
                model="gpt-test", messages=USER, response_model=Person, stream=True
            )
            for _ in stream:
                pass
        outcome = stream.outcome

    assert isinstance(outcome, Healed)
    assert expected("openai", CACHED) + expected("openai", SECOND) == outcome.usage
    assert 2 == outcome.usage.requests


def test_openai_stream_closed_early_has_an_estimated_usage_without_cost() -> None:
    """A stream closed as soon as its answer is known to be invalid (`"age": "lots"`) ends
    before the usage chunk: that attempt's usage is an estimate, so the run has no cost, even on
    a priced model."""
    script = [ScriptedReply(INVALID, usage=CACHED), ScriptedReply(GOOD, usage=CACHED)]
    with ScriptedServer(script) as server:
        with openai_sdk(server) as sdk:
            stream = healjson.wrap(sdk).chat.completions.create(
                model="gpt-4o-mini", messages=USER, response_model=Person, stream=True
            )
            for _ in stream:
                pass
        outcome = stream.outcome

    assert isinstance(outcome, Healed)
    aborted, answered = (attempt.usage for attempt in outcome.attempts)
    assert aborted.estimated
    assert 0 == aborted.cache_read_tokens
    assert expected("openai", CACHED, model="gpt-4o-mini") == answered
    assert outcome.usage.estimated
    assert 2 == outcome.usage.requests
    assert outcome.usage.cost is None


def test_gemini_stream_reports_every_bucket() -> None:
    """google-genai's `generate_content_stream` healed by `Healer.stream`: the last event's
    `usageMetadata` carries the buckets."""
    with ScriptedServer([ScriptedReply(GOOD, usage=CACHED, chunk_chars=5)]) as server:
        client = genai_sdk(server)
        try:
            stream = healjson.Healer(Person).stream(
                lambda messages, **_: client.models.generate_content_stream(
                    model="gemini-test", contents=messages[-1]["content"]
                ),
                USER,
            )
            for _ in stream:
                pass
        finally:
            close_gemini(client)

    assert isinstance(stream.outcome, Healed)
    assert expected("gemini", CACHED) == stream.outcome.usage


def test_anthropic_stream_events_carry_the_cache_buckets() -> None:
    """The anthropic SDK's own stream accumulation reads the cache counts the server sends in
    `message_start` (and, cumulative, in `message_delta`)."""
    script = [ScriptedReply(GOOD, usage=CACHED)] * 2
    with ScriptedServer(script) as server, anthropic_sdk(server) as sdk:
        events = list(
            sdk.messages.create(model="claude-test", max_tokens=64, messages=USER, stream=True)
        )
        with sdk.messages.stream(model="claude-test", max_tokens=64, messages=USER) as stream:
            final = stream.get_final_message().usage

    start, delta = events[0], events[-2]
    assert isinstance(start, anthropic.types.RawMessageStartEvent)
    assert isinstance(delta, anthropic.types.RawMessageDeltaEvent)
    opening = start.message.usage
    assert (20, 80, 20, 0) == (
        opening.input_tokens,
        opening.cache_read_input_tokens,
        opening.cache_creation_input_tokens,
        opening.output_tokens,
    )
    closing = delta.usage
    assert (20, 80, 20, 30) == (
        closing.input_tokens,
        closing.cache_read_input_tokens,
        closing.cache_creation_input_tokens,
        closing.output_tokens,
    )
    assert (20, 80, 20, 30, 10) == (
        final.input_tokens,
        final.cache_read_input_tokens,
        final.cache_creation_input_tokens,
        final.output_tokens,
        final.output_tokens_details.thinking_tokens,  # type: ignore[union-attr]
    )


def test_anthropic_stream_reports_every_bucket() -> None:
    """The anthropic SDK's raw event stream healed by `Healer.stream`."""
    with (
        ScriptedServer([ScriptedReply(GOOD, usage=CACHED)]) as server,
        anthropic_sdk(server) as sdk,
    ):
        stream = healjson.Healer(Person).stream(
            lambda messages, **_: sdk.messages.create(
                model="claude-test", max_tokens=64, messages=messages, stream=True
            ),
            USER,
        )
        for _ in stream:
            pass

    assert isinstance(stream.outcome, Healed)
    assert expected("anthropic", CACHED) == stream.outcome.usage


# ---------------------------------------------------------------------------------------------
# Cost
# ---------------------------------------------------------------------------------------------


def test_cost_is_genai_prices_total_for_the_reported_buckets() -> None:
    """The server answers with the requested model; the cost is genai-prices' own total for the
    prompt (cached included), the completion and the cache reads."""
    outcome, _ = heal("openai", [ScriptedReply(GOOD, usage=CACHED)], model="gpt-4o-mini")

    assert isinstance(outcome, Healed)
    assert "gpt-4o-mini" == outcome.usage.model == outcome.attempts[0].model
    usage = genai_prices.Usage(input_tokens=120, output_tokens=30, cache_read_tokens=80)
    total = genai_prices.calc_price(usage, model_ref="gpt-4o-mini").total_price
    assert outcome.usage.cost is not None
    assert float(total) == pytest.approx(outcome.usage.cost)
    assert outcome.usage.cost == pytest.approx(price("gpt-4o-mini", 120, 30, 80))
    # the cache discount is priced: the same tokens uncached cost more
    assert outcome.usage.cost < price("gpt-4o-mini", 120, 30)


def test_cost_over_two_models_sums_the_per_model_parts() -> None:
    """An escalated last attempt runs on another model: the usage keeps one part per model and
    the cost is the sum of their prices."""
    policy = HealPolicy(escalate_model="gpt-4o")
    script = [ScriptedReply(INVALID, usage=CACHED)] * 2 + [ScriptedReply(GOOD, usage=SECOND)]

    outcome, _ = heal("openai", script, model="gpt-4o-mini", policy=policy)

    assert isinstance(outcome, Healed)
    assert outcome.usage.model is None
    mini = Usage(
        240, 60, reasoning_tokens=20, cache_read_tokens=160, requests=2, model="gpt-4o-mini"
    )
    big = expected("openai", SECOND, model="gpt-4o")
    assert (mini, big) == outcome.usage.parts
    assert outcome.usage.cost == pytest.approx(
        price("gpt-4o-mini", 240, 60, 160) + price("gpt-4o", 50, 8, 40)
    )


def test_unknown_model_has_no_cost(provider: str) -> None:
    """A model genai-prices does not know is priced None, never guessed."""
    outcome, _ = heal(provider, [ScriptedReply(GOOD, usage=CACHED)])

    assert isinstance(outcome, Healed)
    assert outcome.usage.model == MODEL[provider]
    assert outcome.usage.cost is None


def test_estimated_usage_has_no_cost() -> None:
    """A reply without usage is estimated as characters / 4: no cost, even on a priced model
    (the scripted server always reports usage, so a plain string call stands in)."""
    outcome = healjson.Healer(Person).run(lambda messages, **_: GOOD, "x", model="gpt-4o-mini")

    assert isinstance(outcome, Healed)
    assert outcome.usage.estimated
    assert 1 == outcome.usage.requests
    assert outcome.usage.cost is None


def test_scripted_model_counts_one_request_per_call() -> None:
    """`ScriptedModel` strings carry a usage of one request each."""
    model = ScriptedModel([INVALID, GOOD])

    outcome = healjson.Healer(Person).run(model, USER)

    assert isinstance(outcome, Healed)
    assert [1, 1] == [attempt.usage.requests for attempt in outcome.attempts]
    assert 2 == outcome.usage.requests


# ---------------------------------------------------------------------------------------------
# Serialised outcomes
# ---------------------------------------------------------------------------------------------


def test_usage_round_trips_through_the_outcome_record(provider: str) -> None:
    """`to_dict()["usage"]` has every bucket, and `outcome_from_dict` reads them all back."""
    outcome, _ = heal(provider, [ScriptedReply(INVALID, usage=CACHED), ScriptedReply(GOOD)])

    data = outcome.to_dict()
    usage = data["usage"]
    written = 20 if provider == "anthropic" else 0
    assert {
        "reasoning_tokens": 10,
        "cache_read_tokens": 80,
        "cache_write_tokens": written,
        "requests": 2,
        "model": MODEL[provider],
        "estimated": False,
        "cost": None,
    }.items() <= usage.items()
    rebuilt = healjson.outcome_from_dict(data, Person)
    assert outcome.usage == rebuilt.usage
    assert [a.usage for a in outcome.attempts] == [a.usage for a in rebuilt.attempts]


def test_usage_parts_and_cost_round_trip() -> None:
    """A two-model usage keeps its parts and its cost through the record."""
    policy = HealPolicy(escalate_model="gpt-4o")
    script = [ScriptedReply(INVALID, usage=CACHED)] * 2 + [ScriptedReply(GOOD, usage=SECOND)]
    outcome, _ = heal("openai", script, model="gpt-4o-mini", policy=policy)

    data = outcome.to_dict()
    rebuilt = healjson.outcome_from_dict(data, Person)

    assert 2 == len(data["usage"]["parts"])
    assert outcome.usage == rebuilt.usage
    assert rebuilt.usage.cost == pytest.approx(data["usage"]["cost"])


# ---------------------------------------------------------------------------------------------
# Any valid combination of buckets, through each wire format and healjson's reader
# ---------------------------------------------------------------------------------------------


@st.composite
def bucket_usages(draw: st.DrawFn) -> dict[str, int]:
    """A valid scripted usage: reasoning within the completion, cache reads and writes within
    the prompt; the optional keys sometimes left out."""
    prompt = draw(st.integers(0, 10**7))
    completion = draw(st.integers(0, 10**6))
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    if draw(st.booleans()):
        usage["reasoning_tokens"] = draw(st.integers(0, completion))
    if draw(st.booleans()):
        usage["cached_tokens"] = draw(st.integers(0, prompt))
    if draw(st.booleans()):
        usage["cache_write_tokens"] = draw(st.integers(0, prompt - usage.get("cached_tokens", 0)))
    return usage


@pytest.fixture(scope="module")
def sdks(shared_server: ScriptedServer) -> Iterator[dict[str, Any]]:
    with openai_sdk(shared_server) as oai, anthropic_sdk(shared_server) as anth:
        gem = genai_sdk(shared_server)
        try:
            yield {"openai": oai, "anthropic": anth, "gemini": gem}
        finally:
            close_gemini(gem)


def raw_response(sdks: dict[str, Any], provider: str) -> Any:
    """The provider SDK's own response object for one request."""
    if provider == "openai":
        return sdks["openai"].chat.completions.create(model="gpt-test", messages=USER)
    if provider == "anthropic":
        return sdks["anthropic"].messages.create(model="claude-test", max_tokens=64, messages=USER)
    return sdks["gemini"].models.generate_content(model="gemini-test", contents="hi")


@given(usage=bucket_usages(), provider=st.sampled_from(PROVIDERS))
def test_any_valid_buckets_read_back_unchanged(
    shared_server: ScriptedServer, sdks: dict[str, Any], usage: dict[str, int], provider: str
) -> None:
    """Whatever valid usage a reply scripts, the SDK's response object read by healjson gives
    the same buckets (the cache writes only on Anthropic)."""
    shared_server.push(ScriptedReply(GOOD, usage=usage))

    reply = to_reply(raw_response(sdks, provider))

    assert expected(provider, usage) == reply.usage


@given(usage=bucket_usages())
def test_any_valid_buckets_survive_an_openai_stream(
    shared_server: ScriptedServer, sdks: dict[str, Any], usage: dict[str, int]
) -> None:
    """The same through a healed OpenAI stream (the usage chunk at its end)."""
    shared_server.push(ScriptedReply(GOOD, usage=usage))

    stream = healjson.wrap(sdks["openai"]).chat.completions.create(
        model="gpt-test", messages=USER, response_model=Person, stream=True
    )
    for _ in stream:
        pass

    assert expected("openai", usage) == stream.outcome.usage


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------

INVALID_USAGES = {
    "cached_over_prompt": {"prompt_tokens": 10, "cached_tokens": 11},
    "cached_without_prompt": {"completion_tokens": 3, "cached_tokens": 1},
    "cached_plus_written_over_prompt": {
        "prompt_tokens": 10,
        "cached_tokens": 6,
        "cache_write_tokens": 5,
    },
    "negative_cached": {"prompt_tokens": 10, "cached_tokens": -1},
    "negative_written": {"prompt_tokens": 10, "cache_write_tokens": -1},
    "float_cached": {"prompt_tokens": 10, "cached_tokens": 1.5},
    "bool_written": {"prompt_tokens": 10, "cache_write_tokens": True},
}


@pytest.mark.parametrize("usage", INVALID_USAGES.values(), ids=INVALID_USAGES.keys())
def test_impossible_cache_counts_are_refused(usage: dict[str, Any]) -> None:
    """Cache reads and writes are ints >= 0 within the prompt tokens."""
    with pytest.raises(ValueError, match=r"cached_tokens|cache_write_tokens"):
        ScriptedReply(GOOD, usage=usage)


def test_cache_counts_up_to_the_whole_prompt_are_accepted() -> None:
    """All of the prompt may come from (or go to) the cache."""
    ScriptedReply(GOOD, usage={"prompt_tokens": 10, "cached_tokens": 4, "cache_write_tokens": 6})
    ScriptedReply(GOOD, usage={"prompt_tokens": 10, "cached_tokens": 10})


# ---------------------------------------------------------------------------------------------
# The wire shapes themselves
# ---------------------------------------------------------------------------------------------


def test_wire_shapes_of_the_cache_counts() -> None:
    """Each route sends the cache counts in its provider's own fields."""
    reply = ScriptedReply(GOOD, usage=CACHED)
    counts = scripted_usage(reply, 0)

    assert {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "completion_tokens_details": {"reasoning_tokens": 10},
        "prompt_tokens_details": {"cached_tokens": 80, "audio_tokens": 0},
    } == openai_chat.completion("c", "m", reply, counts)["usage"]
    openai_events = openai_chat.stream_events("c", "m", reply, counts)
    assert openai_chat.completion("c", "m", reply, counts)["usage"] == openai_events[-1]["usage"]

    anthropic_usage = {
        "input_tokens": 20,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": 80,
        "output_tokens": 30,
        "output_tokens_details": {"thinking_tokens": 10},
    }
    assert anthropic_usage == anthropic_messages.message("m", "m", reply, counts)["usage"]
    events = rendered(anthropic_messages.stream(1, "m", reply, counts, {}).events)
    start = {**anthropic_usage, "output_tokens": 0}
    del start["output_tokens_details"]
    assert start == events[0]["message"]["usage"]
    assert anthropic_usage == events[-2]["usage"]

    metadata = {
        "promptTokenCount": 120,
        "candidatesTokenCount": 20,
        "totalTokenCount": 150,
        "thoughtsTokenCount": 10,
        "cachedContentTokenCount": 80,
    }
    assert metadata == gemini_generate.response("r", "m", reply, counts)["usageMetadata"]
    gemini_events = rendered(gemini_generate.stream(1, "m", reply, counts, {}).events)
    assert metadata == gemini_events[-1]["usageMetadata"]


def test_only_anthropic_sends_the_cache_writes() -> None:
    """Cache writes alone: Anthropic's both cache fields (reads 0), nothing on OpenAI or Gemini."""
    reply = ScriptedReply(GOOD, usage={"prompt_tokens": 10, "cache_write_tokens": 4})
    counts = scripted_usage(reply, 0)

    assert {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10} == (
        openai_chat.completion("c", "m", reply, counts)["usage"]
    )
    assert {
        "input_tokens": 6,
        "cache_creation_input_tokens": 4,
        "cache_read_input_tokens": 0,
        "output_tokens": 0,
    } == anthropic_messages.message("m", "m", reply, counts)["usage"]
    metadata = gemini_generate.response("r", "m", reply, counts)["usageMetadata"]
    assert "cachedContentTokenCount" not in metadata


def test_no_cache_counts_no_cache_fields() -> None:
    """A usage without cache keys (or an estimate) is sent as before: no cache fields at all."""
    for reply in (ScriptedReply(GOOD, usage={"prompt_tokens": 7}), ScriptedReply(GOOD)):
        counts = scripted_usage(reply, 28)
        assert (
            "prompt_tokens_details" not in openai_chat.completion("c", "m", reply, counts)["usage"]
        )
        assert {"input_tokens", "output_tokens"} == set(
            anthropic_messages.message("m", "m", reply, counts)["usage"]
        )
        metadata = gemini_generate.response("r", "m", reply, counts)["usageMetadata"]
        assert "cachedContentTokenCount" not in metadata


def test_cache_counts_need_an_int_prompt() -> None:
    """Cache counts beside a prompt count that is not an int (a reply file) are refused."""
    with pytest.raises(ValueError, match="cached_tokens"):
        ScriptedReply(GOOD, usage={"prompt_tokens": "many", "cached_tokens": 1})  # type: ignore[dict-item]
