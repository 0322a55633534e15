"""A key that spells a field left at its default is that field, on every path that validates.

pydantic ignores a key that is not a field and fills the field with its default, so a valid
reply could lose what the model wrote (`{"query": "x", "LIMIT": 7}` as `limit=5`). After a
validation succeeds, such a key is aligned to the field (`keys_aligned`) and the value validated
again; two keys for one field, or an aligned value that fails, is a failure, never the default.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import count
from typing import Any, NotRequired

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, create_model
from typing_extensions import TypedDict

import healjson
from healjson import Degraded, Flag, Healed
from healjson._core.parse.align import stands
from healjson._core.parse.defaults import left_out
from healjson._core.parse.shape import key_form
from healjson._core.target.target import target_for
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

MESSAGES = [{"role": "user", "content": "Search."}]
KEY = "sk-misnamed-0123456789abcdef"


class Search(BaseModel):
    query: str
    limit: int = 5


class Paged(BaseModel):
    query: str
    max_results: int = 10


class Aliased(BaseModel):
    query: str
    max_results: int = Field(10, alias="maxResults")


class ByName(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    query: str
    max_results: int = Field(10, alias="maxResults")


class Outer(BaseModel):
    name: str
    search: Search


class Batch(BaseModel):
    searches: list[Search]


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    query: str
    limit: int = 5


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    limit: int = 5


class Plain(TypedDict):
    query: str
    limit: NotRequired[int]


class Given(BaseModel):
    query: str
    limit: int


# -- the example and the spellings the key rule knows ---------------------------------------------


@pytest.mark.parametrize("key", ["LIMIT", "Limit", "limit_", " limit", "LiMiT"])
@pytest.mark.parametrize("limit", [7, 5])  # 5: the default's value, written: the field given
def test_a_misnamed_key_for_a_defaulted_field_is_the_field(key: str, limit: int) -> None:
    """A key spelling a defaulted field in another case or with stray spaces or underscores is
    that field, even when its value equals the default."""
    outcome = healjson.validate(json.dumps({"query": "x", key: limit}), Search)
    assert isinstance(outcome, Healed)
    assert Search(query="x", limit=limit) == outcome.value
    assert {"query", "limit"} == outcome.value.model_fields_set
    assert Flag.KEYS_ALIGNED in outcome.flags


@pytest.mark.parametrize(
    ("model", "text", "expected"),
    [
        (Paged, '{"query": "x", "maxResults": 3}', Paged(query="x", max_results=3)),
        (Paged, '{"query": "x", "Max-Results": 3}', Paged(query="x", max_results=3)),
        (Aliased, '{"query": "x", "max_results": 3}', Aliased(query="x", maxResults=3)),
        (Open, '{"query": "x", "LIMIT": 7}', Open(query="x", limit=7)),
        (Closed, '{"query": "x", "LIMIT": 7}', Closed(query="x", limit=7)),
    ],
)
def test_camel_snake_alias_and_extra_keys_are_read_as_the_field(
    model: type[BaseModel], text: str, expected: BaseModel
) -> None:
    """camelCase, kebab-case, alias spellings and case variants are read as the field, with no
    extra key kept beside it, whatever the model's `extra` setting."""
    outcome = healjson.validate(text, model)
    assert isinstance(outcome, Healed)
    assert expected == outcome.value
    assert expected.model_dump() == outcome.value.model_dump()  # no extra key kept beside it
    assert Flag.KEYS_ALIGNED in outcome.flags


def test_a_typed_dict_value_gets_the_field_too() -> None:
    """A `TypedDict` target reads a misnamed key as its field too."""
    outcome = healjson.validate('{"query": "x", "LIMIT": 7}', Plain)
    assert isinstance(outcome, Healed)
    assert {"query": "x", "limit": 7} == outcome.value
    assert Flag.KEYS_ALIGNED in outcome.flags


@pytest.mark.parametrize(
    ("model", "text", "expected"),
    [
        (Search, '{"query": "x"}', Search(query="x")),  # left out: the default, rightly
        (Search, '{"query": "x", "limit": 7, "LIMIT": 9}', Search(query="x", limit=7)),
        (Search, '{"query": "x", "offset": 2}', Search(query="x")),  # spells no field
        (ByName, '{"query": "x", "max_results": 3}', ByName(query="x", maxResults=3)),
    ],
)
def test_what_the_text_says_is_kept_unflagged(
    model: type[BaseModel], text: str, expected: BaseModel
) -> None:
    """A field rightly left at its default, an exact key beside a variant, a key spelling no
    field, and a populate-by-name key are kept as written and unflagged."""
    outcome = healjson.validate(text, model)
    assert isinstance(outcome, Healed)
    assert expected == outcome.value
    assert () == outcome.flags


def test_two_keys_for_one_defaulted_field_fail_and_say_which() -> None:
    """Two spellings of one defaulted field fail with a `misnamed_keys` diagnostic naming both
    keys and the field."""
    outcome = healjson.validate('{"query": "x", "LIMIT": 7, "Limit": 8}', Search)
    assert isinstance(outcome, Degraded)
    (diagnostic,) = outcome.attempts[-1].diagnostics
    assert "limit" == diagnostic.path
    assert "misnamed_keys" == diagnostic.rule
    assert "`LIMIT`" in diagnostic.constraint
    assert "`Limit`" in diagnostic.constraint
    assert "`limit`" in diagnostic.prescription


def test_an_aligned_value_that_fails_is_a_diagnostic_not_the_default() -> None:
    """A misnamed key whose value is invalid gives a diagnostic on the field, never the default
    in its place."""
    outcome = healjson.validate('{"query": "x", "LIMIT": "many"}', Search)
    assert isinstance(outcome, Degraded)
    (diagnostic,) = outcome.attempts[-1].diagnostics
    assert "limit" == diagnostic.path
    assert "many" == diagnostic.value


# -- at every depth, on every path ----------------------------------------------------------------


def test_nested_models_and_list_items() -> None:
    """Misnamed keys are read as their fields inside nested models, list items and a bare list
    target."""
    nested = healjson.validate('{"name": "n", "search": {"query": "x", "LIMIT": 7}}', Outer)
    assert isinstance(nested, Healed)
    assert 7 == nested.value.search.limit
    assert Flag.KEYS_ALIGNED in nested.flags

    text = '{"searches": [{"query": "a"}, {"query": "b", "Limit": 2}, {"query": "c", "limit": 3}]}'
    batch = healjson.validate(text, Batch)
    assert isinstance(batch, Healed)
    assert [5, 2, 3] == [search.limit for search in batch.value.searches]

    bare = healjson.validate('[{"query": "a", "LIMIT": 1}, {"query": "b"}]', list[Search])
    assert isinstance(bare, Healed)
    assert [1, 5] == [search.limit for search in bare.value]


def test_the_engine_first_step_and_parse_read_the_field() -> None:
    """The engine's first step and `parse`, fenced or not, read a misnamed key as its field."""
    healer = healjson.Healer(Search)
    outcome = healer.run(lambda msgs, **p: '{"query": "x", "LIMIT": 7}', MESSAGES)
    assert isinstance(outcome, Healed)
    assert 7 == outcome.value.limit
    assert Flag.KEYS_ALIGNED in outcome.flags

    parsed = healjson.parse('{"query": "x", "LIMIT": 7}', Search)
    assert parsed.valid
    assert 7 == parsed.instance.limit
    assert Flag.KEYS_ALIGNED in parsed.flags

    fenced = healjson.parse('```json\n{"query": "x", "LIMIT": 7}\n```', Search)
    assert 7 == fenced.instance.limit


def test_the_check_is_skipped_where_nothing_was_left_out() -> None:
    """The cheap test: every field given, or a target with no field to leave out."""
    search = target_for(Search)
    assert not left_out(search, Search(query="x", limit=1))
    assert left_out(search, Search(query="x"))
    assert not left_out(target_for(Given), Given.model_validate_json('{"query": "x", "limit": 1}'))
    assert not left_out(target_for(Batch), Batch(searches=[Search(query="a", limit=1)]))
    assert left_out(
        target_for(Batch), Batch(searches=[Search(query="a", limit=1), Search(query="b")])
    )
    # a value that left a field out but whose text has no spelling of it stands as it is
    assert stands(search, '{"query": "x"}', Search(query="x"))
    assert not stands(search, '{"query": "x", "LIMIT": 7}', Search(query="x"))


# -- streams --------------------------------------------------------------------------------------


@contextmanager
def _client(server: ScriptedServer) -> Iterator[Any]:
    sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0, timeout=10)
    try:
        yield healjson.wrap(sdk)
    finally:
        sdk.close()


def _stream(wrapped: Any, model: Any) -> Any:
    return wrapped.chat.completions.create(
        model="gpt-test", messages=MESSAGES, response_model=model, stream=True
    )


def test_a_streamed_answer_and_its_streamed_items_read_the_field() -> None:
    """A streamed answer, and each item a stream hands out, read a misnamed key as its field."""
    answer = {"name": "n", "search": {"query": "x", "LIMIT": 7}}
    items = [{"query": "a", "LIMIT": 1}, {"query": "b"}, {"query": "c", "Limit": 3}]
    script = [
        ScriptedReply(content=json.dumps(answer), chunk_chars=5),
        ScriptedReply(content=json.dumps(items), chunk_chars=5),
    ]
    with ScriptedServer(script) as server, _client(server) as wrapped:
        whole = _stream(wrapped, Outer)
        list(whole)
        stream = _stream(wrapped, list[Search])
        streamed = list(stream.items())
        calls = len(server.requests)

    assert isinstance(whole.outcome, Healed)
    assert 7 == whole.outcome.value.search.limit
    assert Flag.KEYS_ALIGNED in whole.outcome.flags
    assert [1, 5, 3] == [item.limit for item in streamed]
    assert ["streamed"] * 3 == [stream.item_status[index] for index in range(3)]
    assert isinstance(stream.outcome, Healed)
    assert streamed == list(stream.outcome.value)
    assert 2 == calls


def test_a_streamed_item_with_two_keys_for_one_field_is_held() -> None:
    """A streamed item with two spellings of one field is held and repaired, never handed out
    with the default."""
    items = [{"query": "a", "LIMIT": 1, "Limit": 2}, {"query": "b"}]
    fixed = [{"query": "a", "limit": 1}, {"query": "b"}]
    script = [
        ScriptedReply(content=json.dumps(items), chunk_chars=5),
        ScriptedReply(content=json.dumps(fixed), chunk_chars=5),
    ]
    with ScriptedServer(script) as server, _client(server) as wrapped:
        stream = _stream(wrapped, list[Search])
        streamed = list(stream.items())
        calls = len(server.requests)

    assert [1, 5] == [item.limit for item in streamed]
    assert "repaired" == stream.item_status[0]
    assert 2 == calls


# -- JSON Schema targets --------------------------------------------------------------------------

_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
    "required": ["query"],
}


def _schema_targets() -> bool:
    try:
        target_for(_SCHEMA)
    except TypeError:
        return False
    return True


@pytest.mark.skipif(not _schema_targets(), reason="JSON Schema targets are not in this build")
def test_a_json_schema_target_reads_the_field() -> None:
    """A JSON Schema target reads a misnamed key as its field, in nested items too, and two
    spellings of one field fail."""
    outcome = healjson.validate('{"query": "x", "LIMIT": 7}', _SCHEMA)
    assert isinstance(outcome, Healed)
    assert {"query": "x", "limit": 7} == outcome.value
    assert Flag.KEYS_ALIGNED in outcome.flags
    nested = {"type": "array", "items": _SCHEMA}
    items = healjson.validate('[{"query": "a", "Limit": 1}, {"query": "b"}]', nested)
    assert isinstance(items, Healed)
    assert [{"query": "a", "limit": 1}, {"query": "b"}] == items.value
    clash = healjson.validate('{"query": "x", "LIMIT": 7, "Limit": 8}', _SCHEMA)
    assert isinstance(clash, Degraded)


# -- the property ---------------------------------------------------------------------------------

_WORDS = ("answer", "city", "total", "label", "score", "owner", "level", "ticket", "amount")
_WORDS += ("region", "weight", "price", "note", "size", "color", "rank", "step", "limit")
_MODEL_IDS = count()


def _camel(words: list[str]) -> str:
    return words[0] + "".join(word.title() for word in words[1:])


def _snake(key: str) -> str:
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in key).lstrip("_")


_RESPELLINGS = (
    str.upper,
    str.title,
    lambda key: key[:1].upper() + key[1:],
    lambda key: key + "_",
    lambda key: _camel(key.split("_")) if "_" in key else _snake(key),
    lambda key: key.replace("_", "-").upper(),
)


_NAMES = tuple(
    name
    for first in _WORDS
    for words in ([first], *([first, second] for second in _WORDS[:6] if second != first))
    for name in {"_".join(words), _camel(words)}
)


def _names(size: int) -> st.SearchStrategy[list[str]]:
    """`size` field names, snake or camel case, no two with one key form."""
    return st.lists(st.sampled_from(_NAMES), min_size=size, max_size=size, unique_by=key_form)


# built once: a strategy built inside a composite is built and validated again on every draw
_FIELD_COUNT = st.integers(2, 4)
_NAME_LISTS = {size: _names(size) for size in (2, 3, 4)}
_FLAT_KIND = st.sampled_from(["int", "str"])
_ANY_KIND = st.sampled_from(["int", "str", "model", "models"])
_SHORT_TEXT = st.text("abcxyz", min_size=1, max_size=4)


@st.composite
def _object(draw: Any, depth: int) -> tuple[type[BaseModel], dict[str, Any]]:
    """A model (some fields defaulted, maybe a nested model or a list of them) and data that
    writes every field with a value other than its default."""
    names = draw(_NAME_LISTS[draw(_FIELD_COUNT)])
    fields: dict[str, Any] = {}
    data: dict[str, Any] = {}
    for name in names:
        kind = draw(_ANY_KIND if depth else _FLAT_KIND)
        defaulted = draw(st.booleans())
        if kind == "int":
            fields[name] = (int, 0) if defaulted else (int, ...)
            data[name] = draw(st.integers(1, 99))
        elif kind == "str":
            fields[name] = (str, "") if defaulted else (str, ...)
            data[name] = draw(_SHORT_TEXT)
        elif kind == "model":
            inner, value = draw(_object(depth - 1))
            fields[name] = (inner, ...)
            data[name] = value
        else:
            pairs = draw(st.lists(_object(depth - 1), min_size=1, max_size=1))
            inner = pairs[0][0]
            fields[name] = (list[inner], ...)  # type: ignore[valid-type]
            data[name] = [pairs[0][1]] + [
                draw(_object_of(inner)) for _ in range(draw(st.integers(0, 2)))
            ]
    model = create_model(f"Generated{next(_MODEL_IDS)}", **fields)
    return model, data


@st.composite
def _object_of(draw: Any, model: type[BaseModel]) -> dict[str, Any]:
    """Another value of a generated model (every field written, no default's value)."""
    data: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if annotation is int:
            data[name] = draw(st.integers(1, 99))
        elif annotation is str:
            data[name] = draw(_SHORT_TEXT)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            data[name] = draw(_object_of(annotation))
        else:
            (inner,) = annotation.__args__  # type: ignore[union-attr]
            data[name] = [draw(_object_of(inner))]
    return data


_RESPELLING = st.sampled_from(_RESPELLINGS)


@st.composite
def _respelled(draw: Any, data: Any) -> Any:
    """`data` with some keys spelled otherwise (case, separators, camel / snake case)."""
    if isinstance(data, list):
        return [draw(_respelled(item)) for item in data]
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        spelled = draw(_RESPELLING)(key) if draw(st.booleans()) else key
        out[spelled] = draw(_respelled(value))
    return out


@pinned(max_examples=60)
@given(st.data())
def test_a_respelled_key_never_gives_way_to_the_default(data: st.DataObject) -> None:
    """For generated models, a healed value holds every value the text wrote under any respelling
    of its keys, never a default."""
    model, written = data.draw(_object(2))
    respelled = data.draw(_respelled(written))
    outcome = healjson.validate(json.dumps(respelled), model)
    if isinstance(outcome, Healed):
        assert written == outcome.value.model_dump()  # what the text says, every value
        if respelled != written:
            assert Flag.KEYS_ALIGNED in outcome.flags


# -- pydantic-ai -------------------------------------------------------------------------------


def _agent_run(replies: list[tuple[str, str]]) -> tuple[Any, list[int], Any, int]:
    """A pydantic-ai agent with `HealCapability` whose model sends `replies` (tool name,
    arguments) in turn: its output, the limits its tool ran with, the records, the calls."""
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from healjson.pydantic_ai import HealCapability

    calls: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        name, arguments = replies[len(calls)]
        calls.append(1)
        return ModelResponse(parts=[ToolCallPart(name, arguments, f"call_{len(calls)}")])

    capability: Any = HealCapability()
    agent: Any = Agent(FunctionModel(model), output_type=Search, capabilities=[capability])
    limits: list[int] = []

    @agent.tool_plain
    def search_tool(query: str, limit: int = 5) -> str:
        limits.append(limit)
        return "found"

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        output = agent.run_sync("Find.").output
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    return output, limits, capability.records(), len(calls)


def test_pydantic_ai_tool_arguments_and_output_read_the_field() -> None:
    """pydantic-ai's own validation accepts both (the tool's default, the model's default):
    the capability aligns the key, and pydantic-ai validates the aligned value."""
    replies = [
        ("search_tool", '{"query": "x", "LIMIT": 7}'),
        ("final_result", '{"query": "x", "Limit": 8}'),
    ]
    output, limits, records, calls = _agent_run(replies)
    assert Search(query="x", limit=8) == output
    assert [7] == limits
    assert [("healed", "tool"), ("healed", "output")] == [(r.action, r.kind) for r in records]
    assert all(Flag.KEYS_ALIGNED in record.flags for record in records)
    assert 2 == calls


def test_pydantic_ai_two_keys_for_one_field_are_a_retry() -> None:
    """In pydantic-ai, a tool call with two spellings of one field is retried, so the tool never
    runs with the default."""
    replies = [
        ("search_tool", '{"query": "x", "LIMIT": 7, "Limit": 8}'),
        ("search_tool", '{"query": "x", "limit": 7}'),
        ("final_result", '{"query": "x"}'),
    ]
    output, limits, records, calls = _agent_run(replies)
    assert Search(query="x") == output
    assert [7] == limits  # the tool never ran with the default
    assert "retry" == records[0].action
    assert 3 == calls


SPELLINGS = st.sampled_from(["A_B", "aB", "AB", "a-b", "A B", "a__b", "Ab"])


@given(key=SPELLINGS, value=st.integers(-99, 99), given_ab=st.booleans())
@pinned(max_examples=20)
def test_a_key_spelling_two_fields_alike_is_never_dropped_silently(
    key: str, value: int, given_ab: bool
) -> None:
    """A key that is no field but spells two fields alike (`a_b`, `ab`), one of them left out,
    is a diagnostic naming both, never a value with the key's data dropped for the defaults."""
    model = create_model("Alike", a_b=(int, 0), ab=(int, 0))
    data = {"ab": 3, key: value} if given_ab else {key: value}
    outcome = healjson.validate(json.dumps(data), model)
    assert isinstance(outcome, Degraded)
    (error,) = [e for e in outcome.errors if e.path == key]
    assert "`a_b`" in error.constraint
    assert "`ab`" in error.constraint


def test_a_key_spelling_two_fields_both_given_is_an_extra_key() -> None:
    """With both fields alike written under their own names, a third spelling is an extra key
    (pydantic ignores it) and the value stands as written."""
    model = create_model("Alike", a_b=(int, 0), ab=(int, 0))
    outcome = healjson.validate('{"ab": 3, "a_b": 4, "AB": 9}', model)
    assert isinstance(outcome, Healed)
    assert (outcome.value.a_b, outcome.value.ab) == (4, 3)
