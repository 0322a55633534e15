"""Loading contract packs: by file path, by `module:attribute`, and what a bad spec says."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import BaseModel

from healjson import ContractPack, Healer, load_contracts
from healjson.testing import ScriptedModel


class Point(BaseModel):
    x: int
    y: int


PACK_SOURCE = textwrap.dedent(
    """
    from pydantic import BaseModel
    from healjson import ContractPack, Violation, contract

    class Box(BaseModel):
        low: int
        high: int

    @contract(fields=("low", "high"))
    def ordered(box, ctx):
        if box.low > box.high:
            return Violation("low must not exceed high")

    pack = ContractPack(Box, (ordered,), ({"low": 1, "high": 2},), name="box")
    """
)


@pytest.fixture
def pack_file(tmp_path: Path) -> Path:
    path = tmp_path / "box_pack.py"
    path.write_text(PACK_SOURCE)
    return path


def test_pack_loads_from_a_file_path_and_heals(pack_file: Path) -> None:
    """A pack file loads by path and its contract drives a repair."""
    pack = load_contracts(pack_file)
    assert "box" == pack.name
    assert "ordered" == pack.contract("ordered").name
    healer = Healer(pack.model, contracts=pack.contracts, examples=pack.examples)
    model = ScriptedModel(['{"low": 5, "high": 1}', '{"low": 1, "high": 5}'])
    outcome = healer.run(model, "box")
    assert 2 == outcome.calls
    assert outcome.ok


def test_pack_loads_by_module_and_attribute(
    pack_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`module:attribute` and a bare module name both resolve a pack."""
    monkeypatch.syspath_prepend(str(pack_file.parent))
    try:
        assert "box" == load_contracts("box_pack:pack").name
        assert "box" == load_contracts("box_pack").name
        assert "box" == load_contracts(f"{pack_file}:pack").name
    finally:
        sys.modules.pop("box_pack", None)


def test_bad_pack_specs_say_what_was_tried(tmp_path: Path) -> None:
    """Missing files, modules and attributes raise LookupError naming what was tried."""
    with pytest.raises(LookupError, match="no contract pack file"):
        load_contracts(tmp_path / "nope.py")
    with pytest.raises(LookupError, match="entry point"):
        load_contracts("no_such_module_anywhere")
    with pytest.raises(KeyError, match="has no contract"):
        ContractPack(Point).contract("missing")
