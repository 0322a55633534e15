"""A contract pack's failure is that pack's: a name that is no module path is a `LookupError`
like any unknown pack, and a pack whose code calls `sys.exit` is its own row in `healjson
packs` (and a failed `packs check`), never the end of the command."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import healjson
from healjson._cli.app import app
from third_party_pack import install_pack_distribution


@pytest.mark.parametrize("spec", ["../x", ".x", "", "a..b", "pkg/mod", ":attr"])
def test_a_spec_that_names_no_pack_is_a_lookup_error(spec: str) -> None:
    """`load_contracts` says "could not load" (`LookupError`) for a spec that is no file, no
    installed name and no module path, instead of `import_module`'s TypeError / ValueError."""
    with pytest.raises(LookupError, match="could not load contract pack"):
        healjson.load_contracts(spec)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on `sys.path` holding a pack distribution whose module calls `sys.exit(3)`."""
    folder = tmp_path / "site"
    install_pack_distribution(folder, distribution="acme_exits", pack_name="exits")
    (folder / "acme_exits.py").write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(tmp_path)
    yield folder
    sys.modules.pop("acme_exits", None)


def test_a_pack_that_exits_is_listed_as_failing_and_the_others_still_are(site: Path) -> None:
    """`healjson packs` lists the exiting pack with its failure, lists the other packs, and
    exits 1 (a listed pack failed), not the pack's 3."""
    result = CliRunner().invoke(app, ["packs"])
    assert 1 == result.exit_code, result.output
    assert "- fails to load: it called sys.exit(3)" in result.output
    assert "## support_ticket" in result.output


def test_checking_a_pack_that_exits_says_so(site: Path) -> None:
    """`healjson packs check` of that pack exits 2 (it cannot load), saying it called
    `sys.exit`."""
    result = CliRunner().invoke(app, ["packs", "check", "exits"])
    assert 2 == result.exit_code
    assert "called sys.exit(3)" in result.output
