"""The caller's `context=` is pydantic's validation context in every validation healjson makes,
on every entry point: a validator reading `info.context` sees the caller's very object, and a
validator that rejects a quote missing from `info.context["source"]` is never passed by an
invented quote (the run repairs, then degrades). The same object is the contracts' `ctx.extra`,
item contracts included, whichever entry point runs them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationInfo, field_validator, model_validator

import healjson
from healjson import ContractContext, Degraded, Healed, Healer, HealPolicy, Outcome
from healjson._core.run.replay import replied
from healjson.testing import ScriptedServer
from lanes import INSTRUCTOR_ONLY
from sdk_calls import TLS as _SSL

SEEN: list[Any] = []
"""Every `info.context` the validators saw, and every `ctx.extra` the contracts saw."""


class Quote(BaseModel):
    quote: str

    @field_validator("quote")
    @classmethod
    def _from_the_source(cls, value: str, info: ValidationInfo) -> str:
        SEEN.append(info.context)
        source = info.context.get("source") if isinstance(info.context, Mapping) else None
        if isinstance(source, str) and value not in source:
            raise ValueError("must be a quote from the source, word for word")
        return value

    @model_validator(mode="after")
    def _whole(self, info: ValidationInfo) -> Quote:
        SEEN.append(info.context)
        return self


def _extra(value: Any, ctx: ContractContext) -> None:
    SEEN.append(ctx.extra)


class Opaque:
    """A value only identity compares: the validators must get the caller's object."""


POLICY = HealPolicy(max_attempts=2)
PROMPT = [{"role": "user", "content": "Quote the source."}]
REPLY: list[str] = [""]
"""What the model answers, every time (set per example)."""

contexts = st.builds(
    lambda extra, source, opaque: {
        **extra,
        **({"source": source} if source is not None else {}),
        **({"opaque": Opaque()} if opaque else {}),
    },
    st.dictionaries(st.text(max_size=4), st.integers() | st.text(max_size=4), max_size=3),
    st.none() | st.text(alphabet="abc ", max_size=12),
    st.booleans(),
)
quotes = st.text(alphabet="abcd ", min_size=1, max_size=6)


def _answer(quote: str, fenced: bool, *, listed: bool = False) -> str:
    data: Any = [{"quote": quote}] if listed else {"quote": quote}
    text = json.dumps(data)
    return f"Here it is:\n```json\n{text}\n```" if fenced else text


def _holds(ctx: Mapping[str, Any], quote: str) -> bool:
    source = ctx.get("source")
    return not isinstance(source, str) or quote in source


def _model(messages: Any, **params: Any) -> str:
    return REPLY[0]


async def _amodel(messages: Any, **params: Any) -> str:
    await asyncio.sleep(0)
    return REPLY[0]


def _pieces(messages: Any, **params: Any) -> Iterator[str]:
    text = REPLY[0]
    return iter([text[: len(text) // 2], text[len(text) // 2 :]])


async def _apieces(messages: Any, **params: Any) -> AsyncIterator[str]:
    async def gen() -> AsyncIterator[str]:
        for piece in _pieces(messages):
            await asyncio.sleep(0)
            yield piece

    return gen()


def _drain(stream: Any) -> Outcome[Any]:
    for _ in stream:
        pass
    outcome: Outcome[Any] = stream.outcome
    return outcome


def _adrain(stream: Any) -> Outcome[Any]:
    async def main() -> Outcome[Any]:
        async for _ in stream:
            pass
        outcome: Outcome[Any] = stream.outcome
        return outcome

    return asyncio.run(main())


def _parsed(ctx: Mapping[str, Any]) -> Outcome[Any]:
    """`healjson.parse` with a schema, judged as an outcome would be."""
    result = healjson.parse(REPLY[0], Quote, context=ctx)
    if result.valid:
        return Healed(value=result.instance, raw_text=REPLY[0])
    return Degraded(reason=healjson.Reason.INVALID_OUTPUT, raw_text=REPLY[0])


def _replayed(healer: Healer[Any], ctx: Mapping[str, Any]) -> Outcome[Any]:
    step = healer.replay(PROMPT, [replied(REPLY[0])] * POLICY.max_attempts, context=ctx)
    assert isinstance(step, Healed | Degraded)  # every call it makes has its result
    return step


def _streamed_items(ctx: Mapping[str, Any]) -> Outcome[Any]:
    """The items a stream hands out were validated under the caller's context too."""
    stream = ITEMS.stream(_pieces, PROMPT, context=ctx)
    list(stream.items())
    outcome: Outcome[Any] = stream.outcome
    return outcome


PLAIN = Healer(Quote, policy=POLICY)
WITH_CONTRACT = Healer(Quote, policy=POLICY, contracts=[_extra])
ITEMS = Healer(list[Quote], policy=POLICY, item_contracts=[_extra])
DECORATED = healjson.heal(Quote, policy=POLICY)(_model)
ADECORATED = healjson.heal(Quote, policy=POLICY)(_amodel)
STREAM_DECORATED = healjson.heal(Quote, policy=POLICY, stream=True)(_pieces)

Entry = Callable[[Mapping[str, Any]], Outcome[Any]]
ENTRY_POINTS: dict[str, Entry] = {
    "validate": lambda ctx: healjson.validate(REPLY[0], Quote, context=ctx),
    "validate with a contract": lambda ctx: healjson.validate(
        REPLY[0], Quote, contracts=[_extra], context=ctx
    ),
    "parse": _parsed,
    "Healer.run": lambda ctx: PLAIN.run(_model, PROMPT, context=ctx),
    "Healer.run with a contract": lambda ctx: WITH_CONTRACT.run(_model, PROMPT, context=ctx),
    "Healer.arun": lambda ctx: asyncio.run(PLAIN.arun(_amodel, PROMPT, context=ctx)),
    "Healer.arun with a contract": lambda ctx: asyncio.run(
        WITH_CONTRACT.arun(_amodel, PROMPT, context=ctx)
    ),
    "Healer.stream": lambda ctx: _drain(PLAIN.stream(_pieces, PROMPT, context=ctx)),
    "Healer.astream": lambda ctx: _adrain(PLAIN.astream(_apieces, PROMPT, context=ctx)),
    "Healer.stream with a contract": lambda ctx: _drain(
        WITH_CONTRACT.stream(_pieces, PROMPT, context=ctx)
    ),
    "@heal": lambda ctx: DECORATED(PROMPT, context=ctx),
    "@heal async": lambda ctx: asyncio.run(ADECORATED(PROMPT, context=ctx)),
    "@heal(stream=True)": lambda ctx: _drain(STREAM_DECORATED(PROMPT, context=ctx)),
    "replay": lambda ctx: _replayed(PLAIN, ctx),
    "replay with a contract": lambda ctx: _replayed(WITH_CONTRACT, ctx),
}
LIST_ENTRY_POINTS: dict[str, Entry] = {
    "Healer.run, item contracts": lambda ctx: ITEMS.run(_model, PROMPT, context=ctx),
    "Healer.arun, item contracts": lambda ctx: asyncio.run(
        ITEMS.arun(_amodel, PROMPT, context=ctx)
    ),
    "Healer.stream, item contracts": lambda ctx: _drain(ITEMS.stream(_pieces, PROMPT, context=ctx)),
    "Healer.stream items": _streamed_items,
    "replay, item contracts": lambda ctx: _replayed(ITEMS, ctx),
}


def _check(name: str, entry: Entry, ctx: Mapping[str, Any], holds: bool) -> None:
    SEEN.clear()
    outcome = entry(ctx)
    assert SEEN, f"{name}: no validator ran"
    strangers = [seen for seen in SEEN if seen is not ctx]
    assert not strangers, f"{name}: a validation ran under {strangers[0]!r}, not the caller's"
    if holds:
        assert isinstance(outcome, Healed), f"{name}: {outcome!r}"
    else:  # the invented quote is never Healed: repaired, then degraded
        assert isinstance(outcome, Degraded), f"{name}: {outcome!r}"


@settings(max_examples=10, deadline=None)
@given(ctx=contexts, quote=quotes, fenced=st.booleans())
def test_every_entry_point_validates_under_the_callers_context(
    ctx: dict[str, Any], quote: str, fenced: bool
) -> None:
    """Every entry point validates under the caller's context object, and never heals with a
    quote the context does not hold."""
    holds = _holds(ctx, quote)
    REPLY[0] = _answer(quote, fenced)
    for name, entry in ENTRY_POINTS.items():
        _check(name, entry, ctx, holds)
    REPLY[0] = _answer(quote, fenced, listed=True)
    for name, entry in LIST_ENTRY_POINTS.items():
        _check(name, entry, ctx, holds)
    # `heal(..., context=...)`: every call's context, for a prompt builder (style b) too; built
    # before the checks (building a healer validates its golden example, under no context)
    REPLY[0] = _answer(quote, fenced)
    builder = healjson.heal(Quote, policy=POLICY, call=_model, context=ctx)(lambda: PROMPT)
    streamed = healjson.heal(Quote, policy=POLICY, call=_pieces, context=ctx, stream=True)(
        lambda: PROMPT
    )
    model_call = healjson.heal(Quote, policy=POLICY, context=ctx)(_model)
    replaced = healjson.heal(Quote, policy=POLICY, context={"source": ""})(_model)
    decorated: dict[str, Entry] = {
        "@heal(call=..., context=...)": lambda c: builder(),
        "@heal(call=..., context=..., stream=True)": lambda c: _drain(streamed()),
        "@heal(context=...)": lambda c: model_call(PROMPT),
        "@heal(context=...) replaced by the call's": lambda c: replaced(PROMPT, context=c),
    }
    for name, entry in decorated.items():
        _check(name, entry, ctx, holds)


def test_an_invented_quote_is_not_healed_when_a_source_is_given() -> None:
    """The issue's example, on the first entry point a user meets."""
    source = {"source": "The quick brown fox jumps over the lazy dog."}
    assert isinstance(
        healjson.validate('{"quote": "quick brown fox"}', Quote, context=source), Healed
    )
    out = healjson.validate('{"quote": "a slow red fox"}', Quote, context=source)
    assert isinstance(out, Degraded)
    assert "must be a quote from the source" in out.errors[0].constraint


def test_a_context_contract_passed_to_validate_gives_pydantic_its_extra() -> None:
    """A `ContractContext` passed to `validate` gives pydantic's validators its `extra` object
    itself."""
    extra = {"source": "abc"}
    SEEN.clear()
    out = healjson.validate('{"quote": "zzz"}', Quote, context=ContractContext(extra=extra))
    assert isinstance(out, Degraded)
    assert SEEN
    assert all(seen is extra for seen in SEEN)


def test_without_a_context_the_validators_see_none() -> None:
    """Without a context (the prompt is not one), pydantic's validators see `None`."""
    SEEN.clear()
    assert isinstance(PLAIN.run(lambda m, **k: '{"quote": "x"}', PROMPT), Healed)
    assert SEEN
    assert all(seen is None for seen in SEEN)
    SEEN.clear()
    assert isinstance(healjson.validate('{"quote": "x"}', Quote, context=PROMPT), Healed)
    assert SEEN
    assert all(seen is None for seen in SEEN)


# -- wrap(OpenAI()) over real HTTP ------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer([lambda request: REPLY[0]], repeat=True) as running:
        yield running


@pytest.fixture(scope="module")
def wrapped(server: ScriptedServer) -> Iterator[Any]:
    sdk = openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=_SSL),
    )
    with sdk:
        client = healjson.wrap(sdk, policy=POLICY)
        REPLY[0] = '{"quote": "x"}'
        for rules in ((), (_extra,)):  # the healers built once, outside the checks (see below)
            client.chat.completions.create(
                model="m", messages=PROMPT, response_model=Quote, contracts=rules
            )
        yield client


@pytest.fixture(scope="module")
def awrapped(server: ScriptedServer) -> Iterator[tuple[asyncio.AbstractEventLoop, Any]]:
    """A wrapped `AsyncOpenAI` on one event loop kept for the module (its healer is built once,
    outside the checks: a healer's golden example is validated when it is built, with no
    request's context)."""
    loop = asyncio.new_event_loop()
    sdk = openai.AsyncOpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=_SSL),
    )
    client = healjson.wrap(sdk, policy=POLICY)
    REPLY[0] = '{"quote": "x"}'
    loop.run_until_complete(
        client.chat.completions.create(model="m", messages=PROMPT, response_model=Quote)
    )
    yield loop, client
    loop.run_until_complete(sdk.close())
    loop.close()


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ctx=contexts, quote=quotes, fenced=st.booleans())
def test_a_wrapped_openai_client_validates_under_the_callers_context(
    wrapped: Any,
    awrapped: tuple[asyncio.AbstractEventLoop, Any],
    ctx: dict[str, Any],
    quote: str,
    fenced: bool,
) -> None:
    """A wrapped openai client, sync and async, validates under the caller's context object."""
    holds = _holds(ctx, quote)
    REPLY[0] = _answer(quote, fenced)
    create = wrapped.chat.completions.create
    loop, aclient = awrapped
    entries: dict[str, Entry] = {
        "wrap(OpenAI())": lambda c: create(
            model="m", messages=PROMPT, response_model=Quote, context=c
        ),
        "wrap(OpenAI()) with a contract": lambda c: create(
            model="m", messages=PROMPT, response_model=Quote, contracts=(_extra,), context=c
        ),
        "wrap(OpenAI()) stream": lambda c: _drain(
            create(model="m", messages=PROMPT, response_model=Quote, context=c, stream=True)
        ),
        "wrap(AsyncOpenAI())": lambda c: loop.run_until_complete(
            aclient.chat.completions.create(
                model="m", messages=PROMPT, response_model=Quote, context=c
            )
        ),
    }
    for name, entry in entries.items():
        _check(name, entry, ctx, holds)


# -- a wrapped instructor client: `validation_context=` is `context=` -------------------------


@pytest.mark.parametrize("keyword", ["validation_context", "context"])
def test_a_wrapped_instructor_client_validates_under_the_callers_context(
    server: ScriptedServer, keyword: str
) -> None:
    """instructor's own parse of each reply runs without it (healjson gives instructor no
    context: instructor would template the messages with it); healjson's verdict does."""
    instructor = pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

    source = {"source": "to be or not to be"}
    sdk = openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=_SSL),
    )
    with sdk:
        client = healjson.wrap(instructor.from_openai(sdk, mode=instructor.Mode.JSON))
        outcomes = {}
        for quote in ("not to be", "to see or not"):
            REPLY[0] = json.dumps({"quote": quote})
            SEEN.clear()
            outcomes[quote] = client.chat.completions.create(
                model="m", messages=PROMPT, response_model=Quote, max_retries=1, **{keyword: source}
            )
            assert any(seen is source for seen in SEEN)
            assert all(seen is source or seen is None for seen in SEEN)
    assert isinstance(outcomes["not to be"], Healed)
    invented = outcomes["to see or not"]
    assert isinstance(invented, Degraded)
    assert 2 == invented.calls
