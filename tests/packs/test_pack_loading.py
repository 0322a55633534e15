"""Loading contract packs: by file path, installed name (entry point), `module:attribute`, in
that order, and what a bad spec says."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel
from pydantic_core import to_json
from typer.testing import CliRunner

import healjson_contracts
from healjson import ContractPack, Healer, load_contracts
from healjson._cli.app import app
from healjson._packs import ENTRY_POINT_GROUP, installed_packs
from healjson.testing import ScriptedModel
from third_party_pack import install_pack_distribution

BUILT_INS = ("invoice", "itinerary", "support_ticket")


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


# ---------------------------------------------------------------------------------------------
# Installed names (entry points) and the lookup order: file path, entry point, module
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def box_module(pack_file: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The box pack importable as the module `box_pack` *and* as `invoice` (a user's module that
    shares an installed pack's name)."""
    (pack_file.parent / "invoice.py").write_text(PACK_SOURCE)
    monkeypatch.syspath_prepend(str(pack_file.parent))
    yield pack_file
    for name in ("box_pack", "invoice"):
        sys.modules.pop(name, None)


def _fake_entry_points(monkeypatch: pytest.MonkeyPatch, **points: str) -> None:
    """Installed entry points in the `healjson.contracts` group: name -> `module:attribute`."""
    group = [
        importlib.metadata.EntryPoint(name=name, value=value, group=ENTRY_POINT_GROUP)
        for name, value in points.items()
    ]

    def entry_points(**selection: str) -> list[importlib.metadata.EntryPoint]:
        return group if selection == {"group": ENTRY_POINT_GROUP} else []

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


def test_the_example_packs_register_as_entry_points() -> None:
    """healjson's example packs are entry points of the `healjson.contracts` group, one per
    module of `healjson_contracts`, named as the module, and the package's docstring names each;
    no other lookup knows them."""
    folder = Path(healjson_contracts.__file__).parent
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    assert list(BUILT_INS) == modules
    installed = installed_packs()
    assert {name: f"healjson_contracts.{name}:pack" for name in BUILT_INS}.items() <= (
        installed.items()
    )
    doc = healjson_contracts.__doc__ or ""
    assert all(f"`healjson_contracts.{name}`" in doc for name in BUILT_INS)


def test_without_their_entry_points_the_example_packs_are_not_found_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Entry points are the one mechanism: with none installed, a bare example name finds nothing
    (the module path still imports)."""
    _fake_entry_points(monkeypatch)
    assert {} == installed_packs()
    with pytest.raises(LookupError, match="the installed packs are none"):
        load_contracts("support_ticket")
    assert "support_ticket" == load_contracts("healjson_contracts.support_ticket").name


@pytest.mark.parametrize("name", BUILT_INS)
def test_an_installed_name_loads_from_any_directory(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bare installed name needs no file next to the caller; it is the module's `pack`."""
    monkeypatch.chdir(tmp_path)
    pack = load_contracts(name)
    assert name == pack.name
    assert pack is load_contracts(f"healjson_contracts.{name}:pack")
    golden = to_json(pack.examples[0]).decode()
    assert pack.healer().run(ScriptedModel([golden]), "go").ok


def test_a_file_path_comes_before_an_installed_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`invoice.py` is the file in the working directory; `invoice` is the installed pack."""
    (tmp_path / "invoice.py").write_text(PACK_SOURCE)
    monkeypatch.chdir(tmp_path)
    assert "box" == load_contracts("invoice.py").name
    assert "invoice" == load_contracts("invoice").name


def test_an_installed_name_comes_before_a_module_of_the_same_name(
    box_module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module that shares an installed pack's name does not shadow it; `name:attr` is never an
    entry point, so it imports the module."""
    assert "invoice" == load_contracts("invoice").name
    assert "box" == load_contracts("invoice:pack").name


def test_an_entry_point_comes_before_a_module_of_the_same_name(
    box_module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that is both an installed entry point and an importable module is the entry
    point's pack; other names still import as modules."""
    module_pack = load_contracts("box_pack")
    other = ContractPack(Point, name="from the entry point")
    monkeypatch.setattr(healjson_contracts, "other", other, raising=False)
    _fake_entry_points(monkeypatch, box_pack="healjson_contracts:other")
    assert other is load_contracts("box_pack")
    assert module_pack is load_contracts("box_pack:pack")  # `name:attr` is never an entry point


def test_an_unknown_name_lists_the_installed_packs(tmp_path: Path) -> None:
    """The error for a name that matches nothing says which installed names exist."""
    with pytest.raises(LookupError) as raised:
        load_contracts("support_tickets")
    message = str(raised.value)
    assert "entry point 'support_tickets'" in message
    assert "the installed packs are invoice, itinerary, support_ticket" in message
    assert "module 'support_tickets'" in message


def test_the_command_line_takes_an_installed_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`healjson heal reply.txt --contracts support_ticket`, as docs/cli.md shows it, from a
    directory with no pack in it: the pack's model is the target and its rules run."""
    monkeypatch.chdir(tmp_path)
    ticket = {
        "urgency": 5,
        "category": "logistics",
        "summary": "Ship it now",
        "orderId": "ORD-123456",
    }
    reply = json.dumps(ticket)[:-1] + ",}"  # a trailing comma: L1 repairs it, L2 judges it
    (tmp_path / "reply.txt").write_text(reply, encoding="utf-8")
    result = CliRunner().invoke(app, ["heal", "reply.txt", "--contracts", "support_ticket"])
    assert 1 == result.exit_code, result.output  # degraded: the pack's rules caught it
    assert "- **L2 schema + contracts**: 2 problems" in result.stdout
    assert 'a ticket with category "logistics" has urgency <= 3' in result.stdout
    unknown = CliRunner().invoke(app, ["heal", "reply.txt", "--contracts", "support_tickets"])
    assert 2 == unknown.exit_code
    flat = " ".join(unknown.output.translate(str.maketrans("", "", "│╭╮╰╯─")).split())
    assert "entry point 'support_tickets'" in flat
    assert "the installed packs are invoice, itinerary, support_ticket" in flat


# ---------------------------------------------------------------------------------------------
# A third party's pack, installed as a distribution
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The `acme_boxes` distribution (a `boxes` pack) installed on `sys.path`."""
    folder = install_pack_distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("acme_boxes", None)


def test_a_third_party_pack_installed_as_a_distribution_loads_by_name(
    third_party: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A distribution that registers a pack under `healjson.contracts` (here: a function that
    returns it) is found by name from any directory, beside healjson's own example packs, which
    register the same way."""
    monkeypatch.chdir(tmp_path)
    assert "acme_boxes:make_pack" == installed_packs()["boxes"]
    assert set(BUILT_INS) < set(installed_packs())
    pack = load_contracts("boxes")
    assert "boxes" == pack.name
    assert ["ordered"] == [rule.name for rule in pack.contracts]
    model = ScriptedModel(['{"low": 5, "high": 1}', '{"low": 1, "high": 5}'])
    outcome = pack.healer().run(model, "a box")
    assert outcome.ok
    assert 2 == outcome.calls  # the pack's rule made the first answer fail


def test_an_entry_point_that_gives_no_pack_is_a_type_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed entry point naming something that is not a pack says so."""
    _fake_entry_points(monkeypatch, bogus="healjson_contracts:__doc__")
    with pytest.raises(TypeError, match=r"not a healjson\.ContractPack"):
        load_contracts("bogus")
