"""Every JSON text healjson writes for others to read is strict JSON: a non-finite float (a
healed `NaN`, an `Infinity`) is written as pydantic's `ser_json_inf_nan="strings"` writes it,
which a strict parser accepts and pydantic reads back into a float field."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson._batch.output_file import OutputFile
from healjson._core.outcome.json_text import strict_dumps
from pinned import pinned


def strict_loads(text: str) -> Any:
    """`json.loads` as a strict parser reads: `NaN`, `Infinity` and `-Infinity` refused."""

    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def named(data: Any) -> Any:
    """`data` with each non-finite float as its name, tuples as lists (what JSON keeps)."""
    if isinstance(data, float) and not math.isfinite(data):
        return "NaN" if math.isnan(data) else ("Infinity" if data > 0 else "-Infinity")
    if isinstance(data, dict):
        return {key: named(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [named(value) for value in data]
    return data


json_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@pinned(max_examples=100)
@given(data=json_data, indent=st.sampled_from([None, 2]))
def test_any_data_is_written_as_strict_json_that_keeps_every_value(data: Any, indent: Any) -> None:
    """A strict parser reads what `strict_dumps` writes, and reads every value back (a
    non-finite float as its name); data without one is written exactly as `json.dumps` does."""
    text = strict_dumps(data, indent=indent)

    assert named(data) == strict_loads(text)
    if json.dumps(data) == json.dumps(named(data)):
        assert json.dumps(data, indent=indent) == text


class Reading(BaseModel):
    x: float
    series: list[float]


NON_FINITE = '{"x": NaN, "series": [Infinity, -Infinity, 1.5]}'


def test_the_json_trace_of_a_healed_nan_is_strict_and_reads_back_as_floats() -> None:
    """A reply's `NaN` and `Infinity` heal (pydantic reads them); the JSON trace is strict JSON,
    and `outcome_from_dict` reads it back to the same floats."""
    outcome = healjson.validate(NON_FINITE, Reading)

    data = strict_loads(outcome.trace(format="json"))
    back = healjson.outcome_from_dict(data, Reading)

    assert math.isnan(back.unwrap().x)
    assert [math.inf, -math.inf, 1.5] == back.unwrap().series


def test_a_batch_output_row_holding_a_nan_is_strict_json(tmp_path: Path) -> None:
    """`healjson batch`'s output file writes each row as strict JSON."""
    out = tmp_path / "rows.jsonl"
    writer = OutputFile(out)
    try:
        writer.write({"id": "r1", "ok": True, "value": {"x": math.nan, "y": [math.inf]}})
    finally:
        writer.close()

    (line,) = out.read_text(encoding="utf-8").splitlines()
    assert {"id": "r1", "ok": True, "value": {"x": "NaN", "y": ["Infinity"]}} == strict_loads(line)


def test_rays_value_column_writes_a_non_finite_float_that_validates_back() -> None:
    """Ray's `value` column (JSON text that validates back into the target) writes `Infinity`
    as the outcome column does, where pydantic's own JSON would write `null`."""
    from healjson._core.target.target import target_for
    from healjson._ray_rows import _value_text

    target = target_for(Reading)
    value = Reading(x=math.inf, series=[-math.inf, 2.0])

    text = _value_text(target, value)

    assert {"x": "Infinity", "series": ["-Infinity", 2.0]} == strict_loads(text)
    assert value == Reading.model_validate_json(text)


class Loose(BaseModel):
    """Fields typed `Any`: pydantic's JSON mode writes a non-finite float there as null."""

    x: Any
    xs: list[Any]
    table: dict[str, Any]
    maybe: float | None = None


UNBOUNDED = st.sampled_from([math.inf, -math.inf, math.nan])
LOOSE_ITEM = st.one_of(UNBOUNDED, st.none(), st.integers(-5, 5), st.text(max_size=3))


@pinned(max_examples=40)
@given(
    x=LOOSE_ITEM,
    xs=st.lists(LOOSE_ITEM, max_size=4),
    table=st.dictionaries(st.text(max_size=3), LOOSE_ITEM, max_size=3),
)
def test_a_non_finite_float_typed_any_is_kept_by_the_record(
    x: Any, xs: list[Any], table: dict[str, Any]
) -> None:
    """A healed value holding NaN or infinity under `Any` (alone, in a list, in a mapping) is
    written by `to_dict()` as its name, never as null, and a null stays null."""
    value = Loose(x=x, xs=xs, table=table)
    reply = json.dumps(value.model_dump(mode="python"), allow_nan=True)
    outcome = healjson.validate(reply, Loose)
    assert outcome.ok, outcome

    written = strict_loads(strict_dumps(outcome.to_dict()["value"]))

    assert named({"x": x, "xs": xs, "table": table, "maybe": None}) == written
