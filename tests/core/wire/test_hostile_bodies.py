"""Model and provider text never crashes the caller: answers nested 1,000 deep, provider bodies
(and stream chunks) with fields of the wrong type, nested past the decoder's limit or holding
huge arrays, through the real openai, anthropic and google-genai SDKs on the scripted server.

Each call ends in an outcome (`Healed` or `Degraded`), which is what the properties check. The
reasons, as they stand: a body a reader fails on, or one whose answer member is of another type
(a Responses `output` that is a number), is the provider's failure (`api_error`); what the model
wrote that cannot be read is
`invalid_output` (or a repair's last verdict), except a non-streamed Gemini answer nested past
the decoder's limit, which google-genai itself fails to decode (`json.loads` in its response
reader) before healjson sees the text: `api_error`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from typer.testing import CliRunner

import healjson
from healjson import Degraded, Healed, HealPolicy, Reason
from healjson._cli.app import app
from healjson._core.wire.delta import read_chunk
from healjson._core.wire.reply import to_reply
from healjson.testing import ScriptedReply, ScriptedServer
from sdk_calls import TLS

KINDS = ("chat", "responses", "anthropic", "gemini")
ONE = HealPolicy(max_attempts=1)
DEEP = "[" * 1000 + "]" * 1000
DEEP_ANSWER = '{"a": ' + DEEP + "}"


class Answer(BaseModel):
    a: int


# --- the four clients -------------------------------------------------------------------------


def ask(server: ScriptedServer, kind: str, *, stream: bool = False, **options: Any) -> Any:
    """One healing call on `kind`'s SDK (streamed: iterated to its end), returning the outcome."""
    options.setdefault("policy", ONE)
    if kind in ("chat", "responses"):
        http = openai.DefaultHttpxClient(verify=TLS)
        with openai.OpenAI(
            base_url=server.base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            client = healjson.wrap(sdk)
            if kind == "chat":
                result = client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "a"}],
                    response_model=Answer, stream=stream, **options,
                )  # fmt: skip
            else:
                result = client.responses.create(
                    model="gpt-4o", input="a", response_model=Answer, stream=stream, **options
                )
            return _finished(result, stream)
    if kind == "anthropic":
        http = anthropic.DefaultHttpxClient(verify=TLS)
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="test", max_retries=0, http_client=http
        ) as sdk:
            result = healjson.wrap(sdk).messages.create(
                model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "a"}],
                response_model=Answer, stream=stream, **options,
            )  # fmt: skip
            return _finished(result, stream)
    client = genai.Client(
        api_key="test",
        http_options=genai_types.HttpOptions(
            base_url=server.gemini_base_url, timeout=10_000, client_args={"verify": TLS}
        ),
    )
    try:
        models = healjson.wrap(client).models
        if stream:
            return _finished(
                models.generate_content_stream(
                    model="gemini-test", contents="a", response_model=Answer, **options
                ),
                True,
            )
        return models.generate_content(
            model="gemini-test", contents="a", response_model=Answer, **options
        )
    finally:
        client.close()


def _finished(result: Any, stream: bool) -> Any:
    if not stream:
        return result
    for _ in result:
        pass
    return result.outcome


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as started:
        yield started


# --- well-formed bodies, and the events of their streams --------------------------------------

TEXT = '{"a": 1}'
GOOD: dict[str, dict[str, Any]] = {
    "chat": {
        "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": TEXT}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    },
    "responses": {
        "id": "r", "object": "response", "created_at": 1, "status": "completed",
        "model": "gpt-4o",
        "output": [{"type": "message", "id": "m", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": TEXT, "annotations": []}]}],
        "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
    },
    "anthropic": {
        "id": "msg", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": TEXT}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    "gemini": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": TEXT}]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
        "modelVersion": "gemini-test",
    },
}  # fmt: skip

EVENTS: dict[str, list[tuple[str | None, dict[str, Any]]]] = {
    "chat": [
        (None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": TEXT},
                             "finish_reason": None}]}),
        (None, {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ],
    "responses": [
        ("response.created", {"type": "response.created", "sequence_number": 0,
                              "response": {**GOOD["responses"], "status": "in_progress",
                                           "output": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta",
                                        "sequence_number": 1, "item_id": "m",
                                        "output_index": 0, "content_index": 0,
                                        "delta": TEXT}),
        ("response.completed", {"type": "response.completed", "sequence_number": 2,
                                "response": GOOD["responses"]}),
    ],
    "anthropic": [
        ("message_start", {"type": "message_start",
                           "message": {**GOOD["anthropic"], "content": [], "stop_reason": None}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": TEXT}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ],
    "gemini": [(None, GOOD["gemini"])],
}  # fmt: skip

# hostile values are spliced into the body's JSON text (json.dumps cannot write the deep ones)
_SPLICE = "\u0000splice\u0000"


def _paths(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a member of `node` (the root excluded)."""
    if not isinstance(node, dict | list):
        return
    for key, child in node.items() if isinstance(node, dict) else enumerate(node):
        yield (*at, key)
        yield from _paths(child, (*at, key))


def _replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(document)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


def _text(document: Any, splice: str) -> str:
    return json.dumps(document).replace(json.dumps(_SPLICE), splice)


def hostile_values(wide: int) -> st.SearchStrategy[Any]:
    """A member of the wrong type: every JSON type, a nesting past the decoder's limit, an
    array of `wide` to 5 * `wide` items, a string as long (the SDKs build an object per array
    item, at about a millisecond each: the SDK-level properties keep `wide` small)."""
    return st.one_of(
        st.sampled_from([None, True, 0, -1, 2.5, "", "x", [], {}, [1, "a"], {"k": [None]}]),
        st.integers(min_value=250, max_value=1500).map(lambda n: "[" * n + "]" * n),
        st.integers(min_value=250, max_value=1500).map(lambda n: '{"k":' * n + "1" + "}" * n),
        st.integers(min_value=wide, max_value=5 * wide).map(
            lambda n: "[" + ",".join(["0"] * n) + "]"
        ),
        st.integers(min_value=wide, max_value=5 * wide).map(lambda n: json.dumps("x" * n)),
    )


def _hostile(document: Any, path: tuple[Any, ...], value: Any) -> str:
    """`document` as JSON text with the member at `path` replaced by `value` (JSON text when a
    string made by `hostile_values`' splices, else a Python value)."""
    if isinstance(value, str) and value.startswith(("[", "{", '"')):
        return _text(_replaced(document, path, _SPLICE), value)
    return json.dumps(_replaced(document, path, value))


def _stream_body(kind: str, events: list[tuple[str | None, str]]) -> str:
    lines = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        lines.append(f"{head}data: {data}\n\n")
    if kind == "chat":
        lines.append("data: [DONE]\n\n")
    return "".join(lines)


PROPERTY = settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --- deep answers -------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_answer_nested_a_thousand_deep_degrades_instead_of_raising(
    server: ScriptedServer, kind: str, stream: bool
) -> None:
    """A 2 KB answer nested 1,000 deep (under a schema the endpoint was asked to enforce) ends
    in `Degraded`, on every client, streamed or not: no `RecursionError` reaches the caller."""
    server.push(ScriptedReply(content=DEEP_ANSWER))
    outcome = ask(server, kind, stream=stream)
    assert isinstance(outcome, Degraded)
    assert 0 == server.remaining


def test_a_batch_row_whose_answer_nests_a_thousand_deep_is_written_degraded(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """`healjson batch` writes the row of a 1,000-deep answer as a degraded row, with the other
    rows: none is skipped."""
    server.extend([ScriptedReply(content=DEEP_ANSWER), ScriptedReply(content=TEXT)])
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text('{"id": 1, "prompt": "a"}\n{"id": 2, "prompt": "b"}\n', encoding="utf-8")
    target = tmp_path / "answer.py"
    target.write_text("from pydantic import BaseModel\nclass Answer(BaseModel):\n    a: int\n")
    result = CliRunner().invoke(
        app,
        ["batch", str(source), "--out", str(out), "--model", "gpt-4o", "--concurrency", "1",
         "--response-model", f"{target}:Answer", "--max-attempts", "1",
         "--base-url", server.base_url, "--api-key", "test"],
    )  # fmt: skip
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert 0 == result.exit_code, result.output
    assert [1, 2] == sorted(rows)
    assert (False, True) == (rows[1]["ok"], rows[2]["ok"])


# --- provider bodies ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_body_nested_past_the_decoder_limit_is_the_providers_failure(
    server: ScriptedServer, kind: str
) -> None:
    """A body with a member nested 1,000 deep (the SDK's JSON decoder raises `RecursionError`)
    degrades with `api_error`, on every client."""
    server.push(ScriptedReply(body=_text({**GOOD[kind], "extra": _SPLICE}, DEEP)))
    outcome = ask(server, kind)
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_chunk_nested_past_the_decoder_limit_is_the_providers_failure(
    server: ScriptedServer, kind: str
) -> None:
    """A stream whose first chunk nests 1,000 deep degrades with `api_error`, on every
    client."""
    events = [(name, json.dumps(data)) for name, data in EVENTS[kind]]
    name, data = EVENTS[kind][0]
    events[0] = (name, _text({**data, "extra": _SPLICE}, DEEP))
    server.push(ScriptedReply(body=_stream_body(kind, events), content_type="text/event-stream"))
    outcome = ask(server, kind, stream=True)
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason


def test_an_empty_gemini_chunk_is_read_as_no_text(server: ScriptedServer) -> None:
    """An empty piece in a Gemini stream (`data: {}`) adds nothing: the stream heals."""
    events = [(None, "{}"), (None, json.dumps(GOOD["gemini"])), (None, "{}")]
    server.push(
        ScriptedReply(body=_stream_body("gemini", events), content_type="text/event-stream")
    )
    outcome = ask(server, "gemini", stream=True)
    assert isinstance(outcome, Healed)
    assert Answer(a=1) == outcome.value


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_bodies_never_raise(server: ScriptedServer, kind: str) -> None:
    """A body with any one member replaced by a hostile value (each JSON type, a nesting past
    the decoder's limit, a huge array or string) ends in an outcome on `kind`'s client."""
    paths = list(_paths(GOOD[kind]))

    @PROPERTY
    @given(path=st.sampled_from(paths), value=hostile_values(200))
    def check(path: tuple[Any, ...], value: Any) -> None:
        server.push(ScriptedReply(body=_hostile(GOOD[kind], path, value)))
        outcome = ask(server, kind)
        assert isinstance(outcome, Healed | Degraded)

    check()


@pytest.mark.parametrize("kind", KINDS)
def test_hostile_stream_chunks_never_raise(server: ScriptedServer, kind: str) -> None:
    """A stream with one member of one event replaced by a hostile value ends in an outcome on
    `kind`'s client."""
    spots = [(i, path) for i, (_, data) in enumerate(EVENTS[kind]) for path in _paths(data)]

    @PROPERTY
    @given(spot=st.sampled_from(spots), value=hostile_values(200))
    def check(spot: tuple[int, tuple[Any, ...]], value: Any) -> None:
        index, path = spot
        events = [(name, json.dumps(data)) for name, data in EVENTS[kind]]
        events[index] = (events[index][0], _hostile(EVENTS[kind][index][1], path, value))
        body = _stream_body(kind, events)
        server.push(ScriptedReply(body=body, content_type="text/event-stream"))
        outcome = ask(server, kind, stream=True)
        assert isinstance(outcome, Healed | Degraded)

    check()


# --- the readers themselves -------------------------------------------------------------------

_DOCUMENTS = [GOOD[kind] for kind in KINDS] + [data for kind in KINDS for _, data in EVENTS[kind]]
_SPOTS = [(document, path) for document in _DOCUMENTS for path in _paths(document)]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from(_SPOTS), hostile_values(10_000))
def test_the_readers_raise_nothing_but_their_documented_type_error(
    spot: tuple[dict[str, Any], tuple[Any, ...]], value: Any
) -> None:
    """The formats' reply and chunk readers, given a provider dict with a hostile member, read
    it or raise `TypeError` (what their callers turn into a failed call), nothing else."""
    document, path = spot
    try:
        hostile = json.loads(_hostile(document, path, value))
    except RecursionError:  # too deep for `json` itself: what the SDK's decoder meets
        return
    for read in (to_reply, read_chunk):
        with contextlib.suppress(TypeError):
            read(hostile)


def test_tool_arguments_nested_too_deep_are_not_json() -> None:
    """An Anthropic `tool_use` input nested past the bound is read as a call whose arguments
    are not JSON (asked again, never read as a value), not as a crash."""
    deep: Any = 1
    for _ in range(1200):  # past `json.dumps`' own recursion limit
        deep = [deep]
    block = {"type": "tool_use", "id": "t", "name": "f", "input": {"a": deep}}
    message = {**GOOD["anthropic"], "stop_reason": "tool_use", "content": [block]}
    (call,) = to_reply(message).tool_calls
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.arguments)


def test_a_deeply_nested_stream_ends_degraded() -> None:
    """An answer streamed 30,000 levels deep ends in an outcome, degraded."""

    class Anything(BaseModel):
        a: Any = None

    text = '{"a": ' + "[" * 30_000 + "]" * 30_000 + "}"
    chunks = [text[i : i + 50] for i in range(0, len(text), 50)]
    stream = healjson.Healer(Anything, policy=ONE).stream(lambda messages, **_: iter(chunks), "go")
    for _ in stream:
        pass
    assert isinstance(stream.outcome, Degraded)


def test_the_stream_readers_size_is_counted_not_walked() -> None:
    """The stream reader keeps the count of its open containers' members as they change: the
    session asks it at every piece, and walking 100,000 open levels each time made a deeply
    nested stream quadratic in its depth (15 s for 100,000 levels)."""
    from healjson._core.stream.reader import JsonStream

    reader = JsonStream()
    reader.feed('{"a": ' + "[" * 100_000)
    assert 100_000 == reader.open_size()  # each open level holds the next; the last none
    started = time.process_time()
    for _ in range(1_000):
        reader.open_size()
    assert time.process_time() - started < 0.1
    reader.feed("]" * 100_000 + "}")
    assert (True, 0) == (reader.done, reader.open_size())


def test_a_batch_row_whose_healing_recursed_too_deep_is_written_degraded(tmp_path: Path) -> None:
    """Whatever reader a row's answer still overflows, the batch writes that row, degraded
    (`invalid_output`), with the others: never skipped."""
    import asyncio

    from healjson._batch.run import Batch

    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text('{"id": 1, "prompt": "a"}\n{"id": 2, "prompt": "b"}\n', encoding="utf-8")

    async def heal(job: Any) -> Any:
        if job.id == 1:
            raise RecursionError("maximum recursion depth exceeded")
        return healjson.validate(TEXT, Answer)

    with Batch.open(source, out) as batch:
        stats = asyncio.run(batch.run(heal, concurrency=1))
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert (2, 0) == (stats.written, stats.failed)
    assert ("invalid_output", True) == (rows[1]["reason"], rows[2]["ok"])
