"""The calls benchmark's scenario file: never stale, and every row is what its class claims."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

import healjson
from healjson._cli.app import app
from paths import BENCHMARKS

SCENARIO_FILE = BENCHMARKS / "scenarios" / "packs.jsonl"


def _load_module() -> ModuleType:
    # benchmarks/ is not a package: import the script from its path
    name = "healjson_bench_pack_scenarios"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "pack_scenarios.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


pack_scenarios = _load_module()


def _rows() -> list[dict[str, Any]]:
    text = SCENARIO_FILE.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


ROWS = _rows()


def test_committed_file_is_up_to_date() -> None:
    """The committed pack scenario file is what the generator writes today."""
    regenerated = pack_scenarios.render_file()
    committed = SCENARIO_FILE.read_text(encoding="utf-8")
    assert committed == regenerated, (
        "benchmarks/scenarios/packs.jsonl is stale: run `.venv/bin/python "
        "benchmarks/pack_scenarios.py` and commit the result"
    )


def test_every_pack_has_every_applicable_class() -> None:
    """Every example pack has a scenario of each applicable malformation class."""
    by_pack: dict[str, set[str]] = {}
    for row in ROWS:
        by_pack.setdefault(row["id"].split("/", 1)[0], set()).add(row["kind"])
    assert sorted(by_pack) == sorted(pack_scenarios.PACKS)
    for kinds in by_pack.values():
        assert {"contract_violation", "schema_violation", "truncated", "valid"} <= kinds
        assert {"fenced", "prose", "trailing_comma", "single_quotes"} <= kinds


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_first_reply_heals_exactly_when_locally_fixable(row: dict[str, Any]) -> None:
    # the row names an installed pack, which `healjson eval` loads from any directory
    """Each scenario's first reply heals locally exactly when its row says it is locally fixable."""
    assert row["id"].split("/", 1)[0] == row["contracts"]
    pack = healjson.load_contracts(row["contracts"])
    first = row["replies"][0]
    text, finish = (
        (first, None) if isinstance(first, str) else (first["content"], first.get("finish_reason"))
    )
    outcome = healjson.validate(
        text, pack.model, contracts=pack.contracts, context=row["messages"], finish_reason=finish
    )
    should_heal = row.get("locally_fixable", False) or row["kind"] == "valid"
    assert outcome.ok is should_heal, outcome
    if outcome.ok:
        # compared as instances: Decimal("120") == Decimal("120.0"), their JSON dumps differ
        assert outcome.value == pack.model.model_validate(row["expected"])
    # the last reply is the good answer: it always heals to the expected value
    last = healjson.validate(
        row["replies"][-1], pack.model, contracts=pack.contracts, context=row["messages"]
    )
    assert last.ok, last
    assert last.value == pack.model.model_validate(row["expected"])


def test_rows_run_under_healjson_eval_from_another_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the file elsewhere still runs: its rows name installed packs, not paths."""
    picked = [row for row in ROWS if row["kind"] == "contract_violation"]
    assert sorted(row["contracts"] for row in picked) == sorted(pack_scenarios.PACKS)
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(json.dumps(row) + "\n" for row in picked), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["eval", copy.name, "--a", "local", "--b", "healed"])
    assert 0 == result.exit_code, result.output
    assert "| `local` | 0/3 |" in result.stdout
    assert "| `healed` | 3/3 |" in result.stdout
