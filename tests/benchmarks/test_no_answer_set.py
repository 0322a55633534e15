"""The generated no-answer set: never stale, and every row holds no answer of the kind it claims."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from paths import BENCHMARKS
from pinned import pinned

SET_FILE = BENCHMARKS / "scenarios" / "no_answer.jsonl"
PROSE_KINDS = ("prose", "bracket_noise")


def _load_module() -> ModuleType:
    # benchmarks/ is not a package: import the script from its path
    name = "healjson_bench_no_answer"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "no_answer.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


no_answer = _load_module()
ROWS: list[dict[str, Any]] = no_answer.load_rows(SET_FILE)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_committed_file_is_up_to_date() -> None:
    """The committed jsonl is exactly what the seeded generator writes."""
    committed = SET_FILE.read_text(encoding="utf-8")
    assert no_answer.render_file() == committed, (
        "benchmarks/scenarios/no_answer.jsonl is stale: run `.venv/bin/python "
        "benchmarks/no_answer.py` and commit the result"
    )


def test_every_kind_has_a_few_dozen_rows_with_known_fields() -> None:
    """Each of the five kinds has 36 rows, unique ids and a target the module defines."""
    assert list(no_answer.KINDS) == sorted({row["kind"] for row in ROWS}, key=no_answer.KINDS.index)
    for kind in no_answer.KINDS:
        assert 36 == sum(row["kind"] == kind for row in ROWS)
    assert len(ROWS) == len({row["id"] for row in ROWS})
    for row in ROWS:
        assert ["finish_reason", "id", "input", "kind", "note", "target"] == sorted(row)
        assert row["target"] in no_answer.TARGETS
        assert row["finish_reason"] in (None, "length")


@pytest.mark.parametrize(
    "row", [r for r in ROWS if r["kind"] in PROSE_KINDS], ids=lambda row: row["id"]
)
def test_prose_rows_hold_no_bracketed_span_that_json_loads_accepts(row: dict[str, Any]) -> None:
    """No `{`/`[` to `}`/`]` substring of a prose or bracket-noise reply is a JSON value."""
    assert [] == no_answer.json_spans(row["input"])


def test_prose_rows_have_no_bracket_at_all() -> None:
    """Kind 1 replies contain none of `()[]{}<>`."""
    offending = [
        r["id"] for r in ROWS if r["kind"] == "prose" and re.search(r"[()\[\]{}<>]", r["input"])
    ]
    assert [] == offending


def test_prose_kinds_never_use_a_string_target() -> None:
    """For a string target prose is a legitimate answer, so kinds 1-2 never have one."""
    targets = {row["target"] for row in ROWS if row["kind"] in PROSE_KINDS}
    assert set() == targets & {"order_code"}


def test_no_generated_reply_is_a_whole_json_document() -> None:
    """`json.loads` fails on every generated reply, so the baseline never invents here."""
    assert [] == [row["id"] for row in ROWS if _is_json(row["input"])]


def test_reasoning_rows_are_cut_inside_an_unclosed_block() -> None:
    """Kind 4 replies open a reasoning tag, never close it, and say the model ran out."""
    for row in (r for r in ROWS if r["kind"] == "reasoning_only"):
        assert "length" == row["finish_reason"]
        opened = re.match(r"\s*<(think|thinking|reasoning)>", row["input"], re.IGNORECASE)
        assert opened is not None, row["id"]
        assert f"</{opened.group(1).lower()}" not in row["input"].lower()


def test_half_the_cut_renderings_say_length() -> None:
    """Cut renderings alternate between finish reason `length` and none."""
    cuts = [r for r in ROWS if r["kind"] == "fragment" and "cut after" in r["note"]]
    assert len(cuts) // 2 == sum(r["finish_reason"] == "length" for r in cuts)


@pinned(max_examples=10)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_any_seed_keeps_every_kind_free_of_an_answer(seed: int) -> None:
    """Whatever the seed, prose holds no JSON span and no reply is a whole JSON document."""
    rows = no_answer.build(seed)
    assert [] == [r.id for r in rows if r.kind in PROSE_KINDS and no_answer.json_spans(r.input)]
    assert [] == [r.id for r in rows if _is_json(r.input)]
