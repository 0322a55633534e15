"""The promise at the MCP boundary, as properties over the real SDK (in memory): a structured
value healjson returns is always one the result holds, and a result it heals is never wrong.

"Holds", precisely: every leaf (string, number, boolean, null) of the structured content a
healed call returns equals a leaf of the data the server sent — its structured content, or the
JSON in its text blocks — read through one of L1's documented coercions: a number written as a
string (`"21.5"`) or as an English word (`"seven"`), `"true"` / `"false"` for a boolean, a
number for a string field, and a string matched ignoring case (an enum's). Keys may be renamed
to the schema's and wrappers removed; no leaf may come from anywhere else (no default, no
made-up value). A call that cannot keep that is an error result.
"""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from mcp import Client

import healjson
from healjson.testing import ScriptedToolResult, from_schema
from mcp_kit import WEATHER, run, weather_server

_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip


def leaves(value: Any) -> list[Any]:
    """The scalars of a JSON value, at any depth."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]


def readings(leaf: Any) -> set[tuple[str, Any]]:
    """Every value a leaf may become under L1's documented coercions."""
    if leaf is None:
        return {("null", None)}
    if isinstance(leaf, bool):
        return {("bool", leaf), ("str", str(leaf).casefold())}
    if isinstance(leaf, int | float):
        shown = {json.dumps(leaf), str(leaf), repr(leaf)}
        return {("num", float(leaf))} | {("str", text.casefold()) for text in shown}
    found = {("str", leaf.casefold())}
    text = leaf.strip().casefold()
    try:
        number = float(text)
        if math.isfinite(number):
            found.add(("num", number))
    except ValueError:
        pass
    if text in ("true", "false"):
        found.add(("bool", text == "true"))
    if text in _WORDS:
        found.add(("num", float(_WORDS[text])))
    return found


def canonical(leaf: Any) -> tuple[str, Any]:
    """A healed leaf as one reading."""
    if leaf is None:
        return ("null", None)
    if isinstance(leaf, bool):
        return ("bool", leaf)
    if isinstance(leaf, int | float):
        return ("num", float(leaf))
    return ("str", leaf.casefold())


def held(healed: Any, sent: Any) -> bool:
    """Whether every leaf of `healed` is a reading of a leaf of `sent`."""
    available = set().union(*(readings(leaf) for leaf in leaves(sent))) if leaves(sent) else set()
    return all(canonical(leaf) in available for leaf in leaves(healed))


def call(sent: ScriptedToolResult) -> Any:
    """One healed `get_weather` call answered with `sent`."""
    server = weather_server(sent)

    async def go() -> Any:
        async with healjson.wrap(Client(server.server)) as client:
            return await client.call_tool("get_weather", {"city": "Oslo"})

    return run(go)


# the data a sloppy server may send: weather values, mangled, or anything JSON
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
    st.sampled_from(["21.5", " 7 ", "seven", "true", "warm", "OSLO"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["temperature", "Temperature", "city", "CITY", "conditions", "weather"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=8,
)


@st.composite
def mangled(draw: st.DrawFn) -> Any:
    """A weather value with one or more of the failure families applied."""
    value: Any = dict(draw(from_schema(WEATHER)))
    for step in draw(st.lists(st.sampled_from(MANGLES), min_size=1, max_size=3)):
        value = step(value, draw)
    return value


def _keys_case(value: Any, draw: st.DrawFn) -> Any:
    if not isinstance(value, dict):
        return value
    style = draw(st.sampled_from([str.upper, str.title, str.capitalize]))
    return {style(key): item for key, item in value.items()}


def _numbers_as_strings(value: Any, draw: st.DrawFn) -> Any:
    if isinstance(value, dict):
        return {key: _numbers_as_strings(item, draw) for key, item in value.items()}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return json.dumps(value)
    return value


def _wrapped(value: Any, draw: st.DrawFn) -> Any:
    return {draw(st.sampled_from(["weather", "result", "data"])): value}


def _field_dropped(value: Any, draw: st.DrawFn) -> Any:
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        return {k: v for k, v in value.items() if k != key}
    return value


def _value_replaced(value: Any, draw: st.DrawFn) -> Any:
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: draw(scalars)}
    return value


MANGLES = (_keys_case, _numbers_as_strings, _wrapped, _field_dropped, _value_replaced)


@st.composite
def results(draw: st.DrawFn) -> tuple[ScriptedToolResult, Any]:
    """A scripted result and the data it carries (structured content, or JSON in its text)."""
    data = draw(st.one_of(mangled(), json_values))
    if draw(st.booleans()):
        return ScriptedToolResult(structured=data, text=()), data
    prose = draw(st.sampled_from(["{}", "Result: {}", "```json\n{}\n```", "here {} done"]))
    return ScriptedToolResult(text=prose.replace("{}", json.dumps(data), 1)), data


@settings(
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(results())
@example((ScriptedToolResult(structured={"city": "Oslo"}, text=()), {"city": "Oslo"}))
@example(
    (
        ScriptedToolResult(text='{"Temperature": "seven", "City": "Oslo"}'),
        {"Temperature": "seven", "City": "Oslo"},
    )
)
def test_a_healed_value_is_always_one_the_result_holds(drawn: tuple[Any, Any]) -> None:
    """Whatever the server sends, a success result's structured content conforms to the
    schema and each of its leaves is a leaf the server sent (through a documented coercion);
    everything else is an error result, with no structured content."""
    sent, data = drawn
    result = call(sent)
    if result.is_error:
        assert None is result.structured_content
        return
    jsonschema.validate(result.structured_content, WEATHER)
    assert held(result.structured_content, data), (result.structured_content, data)


HEALABLE = (_keys_case, _numbers_as_strings, _wrapped)


@settings(derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(from_schema(WEATHER), st.sampled_from(HEALABLE), st.booleans(), st.data())
def test_a_healable_family_heals_to_exactly_the_value_meant(
    value: Any, mangle: Any, as_text: bool, data: st.DataObject
) -> None:
    """One healable family applied to a valid value: the healed structured content is that
    value, never another one."""
    sent_data = mangle(dict(value), data.draw)
    sent = (
        ScriptedToolResult(text=f"Weather: {json.dumps(sent_data)}")
        if as_text
        else ScriptedToolResult(structured=sent_data, text=())
    )
    result = call(sent)
    assert False is result.is_error
    assert value == result.structured_content


@settings(derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(from_schema(WEATHER), st.sampled_from(["temperature", "city"]))
def test_a_missing_required_field_is_an_error_result_naming_it(value: Any, field: str) -> None:
    """A required field the result does not hold is never filled in: the call is an error
    result whose text names it."""
    sent = ScriptedToolResult(structured={k: v for k, v in value.items() if k != field}, text=())
    result = call(sent)
    assert True is result.is_error
    assert f"`{field}`" in result.content[0].text
