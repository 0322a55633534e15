"""`healjson packs`: the installed contract packs (healjson's example packs and a third party's,
both entry points of `healjson.contracts`), and `healjson packs check NAME`."""

from __future__ import annotations

import enum
import importlib.metadata
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from healjson._cli.app import app
from healjson._cli.packs import _policy
from third_party_pack import install_pack_distribution

EXAMPLE_PACKS = {
    "support_ticket": ("SupportTicket", 5, 3),  # model, rules, golden examples
    "invoice": ("Invoice", 4, 2),
    "itinerary": ("Itinerary", 4, 2),
}
FIX_RULES = {  # the rules each example pack settles locally (`on_fail="fix"`)
    "support_ticket": ("summary_omits_order_number",),
    "invoice": ("line_totals_match",),
    "itinerary": (),
}


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def section(output: str, name: str) -> str:
    """The listing's block for one pack: from its heading to the next."""
    start = output.index(f"## {name}\n")
    end = output.find("\n## ", start + 1)
    return output[start : end if end != -1 else None]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on `sys.path` into which tests install third-party pack distributions."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(tmp_path)
    yield folder
    for name in [m for m in sys.modules if m.startswith("acme_")]:
        del sys.modules[name]


def test_packs_lists_the_example_packs_with_their_rules_and_policies() -> None:
    """Each example pack: its entry point, model, every rule with its failure policy, and the
    number of golden examples."""
    code, output = run("packs")
    assert 0 == code, output
    assert output.startswith("# Installed contract packs (")
    for name, (model, rules, examples) in EXAMPLE_PACKS.items():
        block = section(output, name)
        assert f"`healjson_contracts.{name}:pack`" in block
        assert f"- model: `{model}`" in block
        assert f"- golden examples: {examples}" in block
        assert f"- rules ({rules}):" in block
        assert rules - len(FIX_RULES[name]) == block.count("(on fail: reask)")
        for rule in FIX_RULES[name]:
            assert f"  - `{rule}` (on fail: fix)" in block
    ticket = section(output, "support_ticket")
    assert "  - `refund_is_urgent` (on fail: reask)" in ticket
    assert "  - `category_matches_defect_refund` (on fail: reask)" in ticket


def test_packs_lists_a_third_party_pack_beside_the_examples(site: Path) -> None:
    """A distribution that registers a pack is listed like healjson's own, in name order."""
    install_pack_distribution(site)
    code, output = run("packs")
    assert 0 == code, output
    block = section(output, "boxes")
    assert "`acme_boxes:make_pack`" in block
    assert "Boxes with ordered bounds." in block
    assert "- model: `Box`" in block
    assert "- golden examples: 1" in block
    assert "  - `ordered` (on fail: reask)" in block
    headings = [line[3:] for line in output.splitlines() if line.startswith("## ")]
    assert headings == sorted(headings)
    assert {"boxes", *EXAMPLE_PACKS} <= set(headings)


def test_a_pack_that_fails_to_load_is_listed_with_its_error(site: Path) -> None:
    """One broken pack does not hide the others; the exit code says something is wrong."""
    install_pack_distribution(site, distribution="acme_broken", pack_name="broken")
    (site / "acme_broken.py").write_text("raise RuntimeError('the pack is broken')\n")
    code, output = run("packs")
    assert 1 == code
    assert "- fails to load: RuntimeError: the pack is broken" in section(output, "broken")
    assert "- model: `SupportTicket`" in section(output, "support_ticket")


def test_packs_with_none_installed_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """`healjson packs` with no pack installed says so, naming the entry-point group."""
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    code, output = run("packs")
    assert 0 == code
    assert "no contract packs installed (entry-point group 'healjson.contracts')" in output


def test_packs_check_passes_an_example_pack() -> None:
    """`healjson packs check support_ticket` passes the example pack and says how many contracts
    it checked."""
    code, output = run("packs", "check", "support_ticket", "--max-examples", "5")
    assert 0 == code, output
    assert output.startswith("pack 'support_ticket' passed check_pack: support_ticket: 5 contract")


def test_packs_check_fails_a_broken_third_party_pack(site: Path) -> None:
    """A golden example that breaks the pack's own rule: check_pack's report, exit code 1."""
    install_pack_distribution(site, golden='{"low": 5, "high": 1}')
    code, output = run("packs", "check", "boxes", "--max-examples", "5")
    assert 1 == code, output
    assert "pack 'boxes' FAILED check_pack:" in output
    assert "golden example" in output
    assert "ordered" in output
    good = install_pack_distribution(site / "good", distribution="acme_good", pack_name="good")
    sys.path.insert(0, str(good))
    try:
        code, output = run("packs", "check", "good", "--max-examples", "5")
    finally:
        sys.path.remove(str(good))
    assert 0 == code, output


def test_packs_check_an_unknown_name_is_a_usage_error() -> None:
    """`healjson packs check` of an unknown name is a usage error that lists the installed packs."""
    code, output = run("packs", "check", "support_tickets")
    assert 2 == code
    assert "cannot load pack 'support_tickets'" in output
    assert "the installed packs are" in output


def test_packs_check_without_hypothesis_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`healjson packs check` without hypothesis is a usage error naming the `testing` extra."""
    monkeypatch.setitem(sys.modules, "hypothesis", None)  # `import hypothesis` raises
    code, output = run("packs", "check", "invoice")
    assert 2 == code
    assert "healjson[testing]" in output


class _Policy(enum.Enum):
    LOG = "log"


@pytest.mark.parametrize(
    ("rule", "shown"),
    [
        (SimpleNamespace(name="r"), "reask"),
        (SimpleNamespace(name="r", on_fail=None), "reask"),
        (SimpleNamespace(name="r", on_fail="drop"), "drop"),
        (SimpleNamespace(name="r", on_fail=_Policy.LOG), "log"),
    ],
)
def test_a_rules_policy_is_its_on_fail(rule: object, shown: str) -> None:
    """The policy shown is the rule's `on_fail` (a string or an enum's value), else `reask`."""
    assert shown == _policy(rule)
