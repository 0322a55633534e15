"""`healjson eval` checks the types of a scripted reply's fields as it checks their names: a
reply whose `content` is a number (or any field of the wrong type) is a usage error (exit 2)
naming the scenario, the reply and the field, never a run scored `api_error` after a traceback
from the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st
from typer.testing import CliRunner

from healjson._cli.app import app
from healjson._cli.scenario_file import load_scenarios
from healjson._cli.scenarios import ScenarioError
from pinned import pinned

_GOOD: dict[str, Any] = {  # a value of the right type for every reply field
    "content": "{}",
    "finish_reason": "stop",
    "refusal": None,
    "tool_calls": None,
    "status": 200,
    "body": None,
    "delay_s": 0,
}
_TEXT_FIELDS = ("content", "finish_reason", "refusal", "body")
_NOT_TEXT = st.integers() | st.booleans() | st.lists(st.integers(), max_size=2) | st.just({})
_WRONG: dict[str, st.SearchStrategy[Any]] = {
    **dict.fromkeys(_TEXT_FIELDS, _NOT_TEXT),
    "tool_calls": st.text(max_size=5) | st.integers() | st.lists(st.integers(), min_size=1),
    "status": st.text(max_size=3) | st.booleans() | st.floats() | st.integers(-5, 99),
    "delay_s": st.text(max_size=3) | st.booleans() | st.integers(max_value=-1),
}


def scenario_file(folder: Path, reply: dict[str, Any], *, index: int = 0) -> Path:
    """A one-row scenario file whose `replies[index]` is `reply` (a good reply before it)."""
    replies: list[Any] = ['{"a": 1}'] * index + [reply]
    row = {"id": "late", "prompt": "x", "replies": replies, "contracts": "support_ticket"}
    path = folder / "s.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ({"content": 5}, "replies[1].content must be a string or null, got 5"),
        ({"refusal": ["no"]}, 'replies[1].refusal must be a string or null, got ["no"]'),
        ({"finish_reason": 1}, "replies[1].finish_reason must be a string or null, got 1"),
        ({"tool_calls": "call"}, 'tool_calls must be a list of objects or null, got "call"'),
        ({"status": "500"}, 'status must be an HTTP status code (an integer 100-599), got "500"'),
        ({"status": True}, "replies[1].status must be an HTTP status code"),
        ({"body": {"a": 1}}, "replies[1].body must be a string or null"),
        ({"delay_s": -1}, "replies[1].delay_s must be a number >= 0, got -1"),
        ({"tool_calls": [{"function": 3}]}, "replies[1]: "),
    ],
)  # fmt: skip
def test_a_reply_field_of_the_wrong_type_names_scenario_reply_and_field(
    tmp_path: Path, reply: dict[str, Any], message: str
) -> None:
    """The loader refuses a reply whose field has the wrong type (or a value the scripted reply
    refuses), naming the line, the scenario, the reply's index and the field."""
    with pytest.raises(ScenarioError) as info:
        load_scenarios(scenario_file(tmp_path, reply, index=1))
    assert f"{tmp_path / 's.jsonl'}:1: scenario 'late': " in str(info.value)
    assert message in str(info.value)


def test_replies_of_the_right_types_load(tmp_path: Path) -> None:
    """A reply with every field of the right type still loads as written."""
    [scenario] = load_scenarios(scenario_file(tmp_path, _GOOD))
    assert (_GOOD,) == scenario.replies


@pinned(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), field=st.sampled_from(sorted(_WRONG)), index=st.integers(0, 2))
def test_any_wrong_typed_reply_field_is_a_usage_error_without_a_traceback(
    tmp_path: Path, data: st.DataObject, field: str, index: int
) -> None:
    """`healjson eval` on a reply with one field of the wrong type exits 2 with a message naming
    the scenario, the reply and the field, and prints no traceback."""
    keep = data.draw(st.lists(st.sampled_from(sorted(_GOOD)), unique=True))
    reply = {key: _GOOD[key] for key in keep} | {field: data.draw(_WRONG[field])}
    result = CliRunner().invoke(app, ["eval", str(scenario_file(tmp_path, reply, index=index))])
    assert 2 == result.exit_code, result.output
    flat = " ".join(result.output.translate(str.maketrans("", "", "│╭╮╰╯─")).split())
    assert f"scenario 'late': replies[{index}].{field} must be" in flat
    assert "Traceback" not in result.output
