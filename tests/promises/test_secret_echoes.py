"""A secret the model or the provider echoes is never kept: refusals, judges' reasons, error
messages, answers and reasoning pass the one redactor before `to_dict()`, both traces, `repr`,
batch rows and Ray's columns keep them, on every client, streamed too.

The real openai and anthropic SDKs talk to the scripted server with the secret as their API
key; every form an echo may take (as written, URL-escaped, JSON-escaped) is searched for.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, quote_plus

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, HealPolicy, Violation, contract
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

KEY = "sk-proj-Echo/0123+456=789abcdefXYZ"
OTHER_KEY = "sk-judge-Other/9876+543=210zyxwvu"
ONE = HealPolicy(max_attempts=1)
USER = [{"role": "user", "content": "Extract the note."}]


class Note(BaseModel):
    note: str
    n: int = 0


def forms(secret: str) -> set[str]:
    """Every form an echo of `secret` may take in stored text."""
    return {
        secret,
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }


def kept(outcome: Any) -> dict[str, str]:
    """Every rendering of an outcome that is kept or shown."""
    return {
        "to_dict": json.dumps(outcome.to_dict(), ensure_ascii=False),
        "trace": outcome.trace(),
        "trace_json": outcome.trace("json"),
        "repr": repr(outcome),
    }


def leaks(texts: dict[str, str], *secrets: str) -> list[str]:
    """The renderings (by name) in which a form of a secret survives."""
    return [name for name, text in texts.items() for s in secrets if forms(s) & _in(text)]


def _in(text: str) -> set[str]:
    return {form for secret in (KEY, OTHER_KEY) for form in forms(secret) if form in text}


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as started:
        yield started


def openai_client(server: ScriptedServer, key: str = KEY) -> openai.OpenAI:
    http = openai.DefaultHttpxClient(verify=TLS)
    return openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0, http_client=http)


def create(server: ScriptedServer, kind: str, stream: bool, **options: Any) -> Any:
    """One healing call on `kind` with the secret as the SDK's key; the outcome."""
    options.setdefault("policy", ONE)
    if kind == "anthropic":
        http = anthropic.DefaultHttpxClient(verify=TLS)
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key=KEY, max_retries=0, http_client=http
        ) as sdk:
            result = healjson.wrap(sdk).messages.create(
                model="claude-test", max_tokens=64, messages=USER, response_model=Note,
                stream=stream, **options,
            )  # fmt: skip
            return _drained(result, stream)
    with openai_client(server) as sdk:
        client = healjson.wrap(sdk)
        if kind == "responses":
            result = client.responses.create(
                model="gpt-4o", input="Extract the note.", response_model=Note, stream=stream,
                **options,
            )  # fmt: skip
        elif kind == "tools":
            result = client.chat.completions.create(
                model="gpt-4o", messages=USER, tools=[Note], heal_tools=True, stream=stream,
                **options,
            )  # fmt: skip
        else:
            result = client.chat.completions.create(
                model="gpt-4o", messages=USER, response_model=Note, stream=stream, **options
            )
        return _drained(result, stream)


def _drained(result: Any, stream: bool) -> Any:
    if not stream:
        return result
    for _ in result:
        pass
    return result.outcome


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", ["chat", "tools", "responses", "anthropic"])
def test_a_refusal_that_echoes_the_key_is_kept_redacted(
    server: ScriptedServer, kind: str, stream: bool
) -> None:
    """A refusal quoting the client's API key degrades with the key in no form in `to_dict()`,
    the traces or `repr` (chat, tool calls, Responses, Anthropic; streamed or not)."""
    server.push(ScriptedReply(refusal=f"I will not. Your key is {KEY} ({quote(KEY, safe='')})."))
    outcome = create(server, kind, stream)
    assert isinstance(outcome, Degraded)
    assert "refusal" == outcome.reason
    assert [] == leaks(kept(outcome), KEY)


def _verdict(reason: str) -> ScriptedReply:
    return ScriptedReply(content=json.dumps({"verdict": "no", "reason": reason}))


@pytest.mark.parametrize("own_client", [False, True], ids=["same-client", "own-client"])
def test_a_judges_reason_that_echoes_a_key_is_kept_redacted(
    server: ScriptedServer, own_client: bool
) -> None:
    """A judge whose reason quotes its client's key (the run's own client, or a client of its
    own with another key) is a violation whose stored reason holds neither key."""
    judge_key = OTHER_KEY if own_client else KEY
    server.extend(
        [ScriptedReply(content='{"note": "fine"}'), _verdict(f"the key is {judge_key}, sorry")]
    )
    with openai_client(server, judge_key) as judge_sdk, openai_client(server) as sdk:
        rule = healjson.judge("Is the note fine?", client=judge_sdk, model="judge")
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="gpt-4o", messages=USER, response_model=Note, contracts=[rule], policy=ONE
        )
    assert isinstance(outcome, Degraded)
    assert any("[redacted]" in error.prescription for error in outcome.errors)
    assert [] == leaks(kept(outcome), KEY, OTHER_KEY)


def test_ray_columns_hold_no_echoed_key(server: ScriptedServer) -> None:
    """`HealBatch`'s `errors` and `outcome` columns hold a refusal's echoed key redacted."""
    from healjson.ray import HealBatch

    def factory() -> openai.AsyncOpenAI:
        http = openai.DefaultAsyncHttpxClient(verify=TLS)
        return openai.AsyncOpenAI(
            base_url=server.base_url, api_key=KEY, max_retries=0, http_client=http
        )

    server.push(ScriptedReply(refusal=f"no: {KEY}"))
    with HealBatch(
        factory, model="gpt-4o", response_model=Note, policy=ONE, include_outcome=True
    ) as heal:
        (row,) = heal({"prompt": ["Extract the note."]}).to_pylist()
    assert "refusal" == row["reason"]
    assert [] == leaks({"errors": row["errors"], "outcome": row["outcome"]}, KEY)


def test_heal_replies_history_columns_hold_no_credential() -> None:
    """`HealReplies`' `history` and `repair_messages` columns, which carry the model's last
    answer to the next pass, hold a credential it echoed redacted."""
    from healjson.ray import HealReplies

    answer = f"Authorization: Bearer {KEY} and no JSON"
    post = HealReplies(Note, policy=HealPolicy(max_attempts=2))
    (row,) = post({"prompt": ["Extract the note."], "generated_text": [answer]}).to_pylist()
    assert row["ok"] is None  # a repair is asked for: the columns carry the answer on
    assert [] == leaks({"history": row["history"], "repair": row["repair_messages"]}, KEY)


# --- the property: every text the model or the provider writes ---------------------------------

secrets = st.text(
    alphabet=st.sampled_from("abcdefghijkXYZ0123456789-_/+=.~"), min_size=12, max_size=40
).map(lambda tail: f"sk-{tail}")


def _variant(draw: st.DrawFn, secret: str) -> str:
    """A form of `secret` as an echo may write it, or no echo at all (so that a run's only echo
    may sit in any one of its texts)."""
    return draw(st.sampled_from(["(nothing)", *sorted(forms(secret))]))


@contract(fields=("note",))
def plain_note(value: Note) -> Violation | None:
    """A rule whose message quotes the model's text (as a judge's reason may); the scripted
    answers never number their note, so each is refused."""
    if value.n == 0:
        return Violation(f"the note {value.note!r} has no number", prescription=value.note)
    return None


@st.composite
def echoing_runs(draw: st.DrawFn) -> tuple[str, list[ScriptedReply], bool]:
    """A secret, and two replies echoing forms of it in every text the model or the provider
    writes: an answer (its prose, its value, its reasoning) that a rule quoting it refuses,
    then a provider's error message, a refusal or another such answer."""
    secret = draw(secrets)

    def answer() -> ScriptedReply:
        note = _variant(draw, secret)
        return ScriptedReply(
            content=f"Sure ({_variant(draw, secret)}): " + json.dumps({"note": note}),
            reasoning=f"the key {_variant(draw, secret)} is in the prompt",
        )

    last = draw(st.sampled_from(["error", "refusal", "answer"]))
    if last == "error":
        end = ScriptedReply.error(500, f"upstream refused key {_variant(draw, secret)}")
    elif last == "refusal":
        end = ScriptedReply(refusal=f"I refuse to repeat {_variant(draw, secret)}")
    else:
        end = answer()
    return secret, [answer(), end], draw(st.booleans())


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(echoing_runs())
@example((KEY, [ScriptedReply(content=json.dumps({"note": quote_plus(KEY, safe="")}))], False))
@example((KEY, [ScriptedReply(content="{}"), ScriptedReply(refusal=f"no: {KEY}")], False))
def test_no_form_of_an_echoed_secret_survives_in_any_rendering(
    server: ScriptedServer, run: tuple[str, list[ScriptedReply], bool]
) -> None:
    """Whatever text the model or the provider echoes a secret in (answer, value, reasoning,
    error message, refusal, a rule's message quoting the answer), in whichever form, no form
    survives in `to_dict()`, the traces, `repr` or a batch row's record."""
    secret, replies, stream = run
    server.extend(replies)
    with openai_client(server, secret) as sdk:
        client = healjson.wrap(sdk)
        result = client.chat.completions.create(
            model="gpt-4o", messages=USER, response_model=Note, contracts=[plain_note],
            policy=HealPolicy(max_attempts=len(replies)), stream=stream,
        )  # fmt: skip
        outcome = _drained(result, stream)
    texts = kept(outcome)
    texts["record"] = json.dumps(healjson.outcome_from_dict(outcome.to_dict(), Note).to_dict())
    found = [name for name, text in texts.items() for form in forms(secret) if form in text]
    assert [] == found
    assert 0 == server.remaining


def test_an_async_run_seals_an_echoed_refusal(server: ScriptedServer) -> None:
    """The async client's outcome keeps a refusal's echoed key redacted as well."""
    server.push(ScriptedReply(refusal=f"I refuse: {KEY}"))

    async def main() -> Any:
        http = openai.DefaultAsyncHttpxClient(verify=TLS)
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key=KEY, max_retries=0, http_client=http
        ) as sdk:
            return await healjson.wrap(sdk).chat.completions.create(
                model="gpt-4o", messages=USER, response_model=Note, policy=ONE
            )

    outcome = asyncio.run(main())
    assert [] == leaks(kept(outcome), KEY)


@given(
    raw=st.lists(
        st.sampled_from(['{"note": "', KEY, json.dumps(KEY)[1:-1], "\\u0073k", "x", '"}', "\\"]),
        max_size=6,
    ).map("".join),
    known=st.booleans(),
)
def test_a_first_answer_is_sealed_as_any_outcome(raw: str, known: bool) -> None:
    """`seal_first` (a first reply's outcome, sealed in one look at its text) gives what `seal`
    gives, secrets remembered included, for any text and any known secrets."""
    from healjson._core.outcome.attempt import first_attempt
    from healjson._core.outcome.seal import seal, seal_first
    from healjson._core.redact import secrets_scope

    with secrets_scope(type("Client", (), {"api_key": KEY})(), {}):
        from healjson._core.redact import run_secrets

        secrets = run_secrets() if known else ()
    usage = healjson.Usage(prompt_tokens=1, completion_tokens=1)
    attempt = first_attempt(tuple(USER), {"model": "m"}, raw, "stop", (), usage, "m", 0.1, None)
    outcome = healjson.Healed(value=raw, raw_text=raw, attempts=(attempt,), usage=usage)
    quick, general = seal_first(outcome, secrets), seal(outcome, secrets)
    assert quick == general
    assert quick._secrets == general._secrets
    assert (quick is outcome) == (general is outcome)
