"""The enforcement check: a request that asks the endpoint to enforce the schema (OpenAI strict,
a local server's constrained decoding, Anthropic's structured output or strict tool, Gemini's
`response_json_schema`) whose first answer is not JSON, or breaks the schema as sent, is
flagged `schema_not_enforced` (attempt and `Healed` outcome), and the client warns once."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Flag, Healed, Violation, contract
from healjson._providers.anthropic_messages.schema import anthropic_schema
from healjson._providers.gemini_generate.schema import gemini_schema
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS, close_gemini

USER = [{"role": "user", "content": "Ann is 31."}]
GOOD = '{"name": "Ann", "age": 31}'
BROKEN = '{"name": "Ann", "age": "lots"}'
EVENT = "healjson.schema_not_enforced"


class Person(BaseModel):
    name: str = Field(max_length=8)
    age: int


_OPEN: list[Any] = []


@pytest.fixture(autouse=True)
def _closed() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def _openai(server: ScriptedServer, **wrap: Any) -> Any:
    sdk = openai.OpenAI(
        base_url=server.base_url,
        api_key="test",
        max_retries=0,
        http_client=openai.DefaultHttpxClient(verify=TLS),
    )
    _OPEN.append(sdk)
    return healjson.wrap(sdk, **wrap)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "healjson_event", None) == EVENT]


def _ask(client: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("response_model", Person)
    return client.chat.completions.create(model="m", messages=USER, **kwargs)


def test_a_strict_request_answered_against_its_schema_is_flagged_and_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A strict-mode answer that breaks its schema flags its attempt `schema_not_enforced`, and
    the client warns once, naming the target."""
    caplog.set_level(logging.WARNING, logger="healjson")
    with ScriptedServer([BROKEN, GOOD, BROKEN, GOOD]) as server:
        client = _openai(server)
        first = _ask(client)
        second = _ask(client)
    assert isinstance(first, Healed)
    assert first.calls == 2
    assert Flag.SCHEMA_NOT_ENFORCED in first.attempts[0].flags
    assert Flag.SCHEMA_NOT_ENFORCED not in first.attempts[1].flags
    assert Flag.SCHEMA_NOT_ENFORCED not in first.flags  # the value is the repair's answer
    assert isinstance(second, Healed)
    assert Flag.SCHEMA_NOT_ENFORCED in second.attempts[0].flags
    warned = _warnings(caplog)
    assert len(warned) == 1  # once per client
    assert warned[0].levelno == logging.WARNING
    assert warned[0].healjson["target"] == "Person"  # type: ignore[attr-defined]


def test_prose_around_a_strict_answer_is_not_enforced_even_when_healed_at_once() -> None:
    """Prose around a strict-mode answer means the endpoint did not enforce the schema, even when
    L1 heals it in one call."""
    with ScriptedServer([f"Here it is: {GOOD}"]) as server:
        outcome = _ask(_openai(server))
    assert isinstance(outcome, Healed)
    assert outcome.calls == 1
    assert Flag.PROSE_AROUND in outcome.flags
    assert Flag.SCHEMA_NOT_ENFORCED in outcome.flags


def test_a_degraded_run_keeps_the_flag_on_its_first_attempt() -> None:
    """A degraded run keeps the `schema_not_enforced` flag on the first attempt only, where the
    strict request was answered."""
    with ScriptedServer([BROKEN], repeat=True) as server:
        outcome = _ask(_openai(server), policy=healjson.HealPolicy(max_attempts=2))
    assert isinstance(outcome, Degraded)
    assert Flag.SCHEMA_NOT_ENFORCED in outcome.attempts[0].flags
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[1].flags


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ('{"name": "Annabelle-Marie", "age": 31}', "only a bound the dialect moved out"),
        (ScriptedReply(content='{"name": "Ann", "age"', finish_reason="length"), "a token cut"),
        (ScriptedReply(refusal="I can't."), "a refusal"),
    ],
)
def test_what_the_endpoint_was_not_asked_to_enforce_is_not_flagged(reply: Any, why: str) -> None:
    """A bound the dialect moved into a description, a token cut and a refusal are not breaches
    of enforcement."""
    with ScriptedServer([reply, GOOD]) as server:
        outcome = _ask(_openai(server))
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[0].flags, why


def test_a_contract_failure_is_not_a_schema_breach() -> None:
    """A contract failure on a schema-valid strict answer is not flagged as unenforced."""

    @contract
    def adult(value: Person) -> Violation | None:
        return None if value.age >= 40 else Violation("must be 40 or more")

    with ScriptedServer([GOOD, '{"name": "Ann", "age": 41}']) as server:
        outcome = _ask(_openai(server), contracts=[adult])
    assert isinstance(outcome, Healed)
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.flags
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[0].flags


@pytest.mark.parametrize("json_mode", ["json_object", "prompt"])
def test_tiers_that_do_not_enforce_are_not_judged(json_mode: str) -> None:
    """JSON mode and the prompt tier promise no schema, so their answers are never judged for
    enforcement."""
    with ScriptedServer([BROKEN, GOOD]) as server:
        outcome = _ask(_openai(server, json_mode=json_mode))
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[0].flags


def test_the_callers_own_response_format_is_not_judged() -> None:
    """A caller's own `response_format` is not judged for enforcement."""
    with ScriptedServer([BROKEN, GOOD]) as server:
        outcome = _ask(_openai(server), response_format={"type": "json_object"})
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[0].flags


def test_a_forced_tier_the_endpoint_refused_is_not_judged() -> None:
    """After the endpoint refuses a forced strict tier, the answer to the stepped-down request is
    not judged."""
    refused = ScriptedReply.error(400, "response_format json_schema is not supported")
    with ScriptedServer([refused, BROKEN, GOOD]) as server:
        outcome = _ask(_openai(server), json_mode="json_schema")
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[0].flags


def test_a_constrained_tier_is_judged_against_the_full_schema() -> None:
    """The `constrained` tier is judged against the full schema it sent, bounds included."""
    with ScriptedServer(['{"name": "Annabelle-Marie", "age": 31}', GOOD]) as server:
        outcome = _ask(_openai(server, json_mode="constrained"))
    # the server was sent maxLength 8: it did not enforce it
    assert Flag.SCHEMA_NOT_ENFORCED in outcome.attempts[0].flags


def test_a_streamed_strict_answer_is_judged_too() -> None:
    """A strict-mode answer read to its end from a stream is judged for enforcement too."""
    with ScriptedServer([BROKEN, GOOD]) as server:
        # read to its end (an answer closed early is not judged: it has no end to read)
        policy = healjson.HealPolicy(stream_abort=False)
        stream = _ask(_openai(server), stream=True, policy=policy)
        for _ in stream:
            pass
        outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert Flag.SCHEMA_NOT_ENFORCED in outcome.attempts[0].flags


def test_anthropic_structured_output_is_judged() -> None:
    """Anthropic's native structured output records its schema and is judged for enforcement."""
    with ScriptedServer([BROKEN, GOOD]) as server:
        sdk = anthropic.Anthropic(
            base_url=server.anthropic_base_url,
            api_key="sk-test",
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(verify=TLS),
        )
        _OPEN.append(sdk)
        outcome = healjson.wrap(sdk).messages.create(
            model="c", max_tokens=64, messages=USER, response_model=Person
        )
        sent = server.requests[0].body or {}
        recorded = server.requests[0].structured_output
    assert "output_config" in sent
    assert recorded == {"json": anthropic_schema(Person.model_json_schema())}
    assert isinstance(outcome, Healed)
    assert Flag.SCHEMA_NOT_ENFORCED in outcome.attempts[0].flags


def test_anthropic_prompt_tier_is_not_judged() -> None:
    """Anthropic's prompt tier is not judged for enforcement."""
    with ScriptedServer([BROKEN, GOOD]) as server:
        sdk = anthropic.Anthropic(
            base_url=server.anthropic_base_url,
            api_key="sk-test",
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(verify=TLS),
        )
        _OPEN.append(sdk)
        outcome = healjson.wrap(sdk, json_mode="prompt").messages.create(
            model="c", max_tokens=64, messages=USER, response_model=Person
        )
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[0].flags


def test_gemini_response_json_schema_is_judged() -> None:
    """Gemini's `responseJsonSchema` records its schema and is judged for enforcement."""
    with ScriptedServer([BROKEN, GOOD]) as server:
        client = genai.Client(
            api_key="test-key",
            http_options=genai_types.HttpOptions(
                base_url=server.gemini_base_url, client_args={"verify": TLS}
            ),
        )
        try:
            outcome = healjson.wrap(client).models.generate_content(
                model="g", contents="Ann is 31.", response_model=Person
            )
        finally:
            close_gemini(client)
        config = (server.requests[0].body or {}).get("generationConfig") or {}
        recorded = server.requests[0].structured_output
    assert "responseJsonSchema" in config
    assert recorded == {"json": gemini_schema(Person.model_json_schema())}
    assert isinstance(outcome, Healed)
    assert Flag.SCHEMA_NOT_ENFORCED in outcome.attempts[0].flags


def test_an_anthropic_native_stream_is_judged_early() -> None:
    """Native structured output constrains the answer to one JSON value: a complete field that
    breaks the schema closes the stream early (it did not before: the Anthropic adapter never
    told the stream its tier)."""
    broken = ScriptedReply(content='{"age": "lots", "name": "' + "x" * 400 + '"}', chunk_chars=8)
    with ScriptedServer([broken, GOOD]) as server:
        sdk = anthropic.Anthropic(
            base_url=server.anthropic_base_url,
            api_key="sk-test",
            max_retries=0,
            http_client=anthropic.DefaultHttpxClient(verify=TLS),
        )
        _OPEN.append(sdk)
        stream = healjson.wrap(sdk).messages.create(
            model="c", max_tokens=64, messages=USER, response_model=Person, stream=True
        )
        for _ in stream:
            pass
        outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert Flag.STREAM_ABORTED in outcome.attempts[0].flags


def test_a_call_of_the_callers_own_tool_is_not_judged() -> None:
    """A reply that calls the caller's own tool is not judged against the answer's schema."""
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    called = ScriptedReply(
        content=None,
        finish_reason="tool_calls",
        tool_calls=[{"id": "c1", "type": "function",
                     "function": {"name": "lookup", "arguments": '{"q": "x"}'}}],
    )  # fmt: skip
    with ScriptedServer([called, GOOD]) as server:
        outcome = _ask(_openai(server), tools=[tool])
    assert Flag.SCHEMA_NOT_ENFORCED not in outcome.attempts[0].flags
