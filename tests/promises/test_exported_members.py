"""The public surface: `__all__` is complete, sorted, and importing healjson stays light."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

import healjson
from healjson._providers import PROVIDERS


def test_all_is_sorted_and_complete() -> None:
    """Every public name in the package namespace is listed in a sorted `__all__`."""
    public = {
        name
        for name in dir(healjson)  # the names read when first used included (`_LAZY`)
        if not name.startswith("_")
        and name not in {"annotations", "Any", "Final", "TYPE_CHECKING"}
        and not isinstance(getattr(healjson, name), types.ModuleType)
    }

    def isort_style(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert sorted(healjson.__all__, key=isort_style) == healjson.__all__
    assert public == set(healjson.__all__)


def test_every_exported_name_resolves() -> None:
    """Each name in `__all__` is an attribute of the package."""
    for name in healjson.__all__:
        assert getattr(healjson, name) is not None


def test_version_is_read_lazily_from_metadata() -> None:
    """`__version__` comes from the installed distribution's metadata."""
    from importlib.metadata import version

    assert version("healjson") == healjson.__version__


def test_unknown_attribute_raises_attribute_error() -> None:
    """Module `__getattr__` only knows `__version__`."""
    with pytest.raises(AttributeError, match="does_not_exist"):
        _ = healjson.does_not_exist  # type: ignore[attr-defined]


def test_import_does_not_load_heavy_optional_dependencies() -> None:
    """`import healjson` leaves openai, instructor, json_repair, structlog and rich unloaded."""
    code = (
        "import json, sys, healjson; "
        "print(','.join(m for m in ('openai','instructor','json_repair','structlog','rich',"
        "'typer','hypothesis','asyncio') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert "" == loaded


def test_import_leaves_the_engine_until_a_name_of_it_is_read() -> None:
    """`import healjson` loads the outcome types but not the parser, the run loop or any
    provider module but the default one; reading `healjson.Healer` loads the engine."""
    code = (
        "import json, sys, healjson; "
        "before = {m for m in sys.modules if m.startswith('healjson')}; "
        "healjson.Healer; "
        "after = {m for m in sys.modules if m.startswith('healjson')}; "
        "print(json.dumps([sorted(before), sorted(after - before)]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, added = json.loads(out.stdout)
    assert "healjson._core.outcome.outcome" in before
    engine = {"healjson._core.run.engine", "healjson._core.run.drive", "healjson._core.parse.read"}
    assert set() == engine & set(before)
    modules = {f"healjson._providers.{name}" for name in PROVIDERS.modules()}
    assert {"healjson._providers.openai_chat"} == modules & set(before)
    assert "healjson._core.run.engine" in added


def test_the_tool_call_answer_types_are_public() -> None:
    """`create(..., heal_tools=True)` returns `Outcome[ToolCalls]`: its value types are public
    names a caller can annotate with and construct (a test double)."""
    answer = healjson.ToolCalls("text", (healjson.HealedCall("call_1", "search", {"q": 1}, "{}"),))
    assert ("call_1", "search") == (answer.calls[0].id, answer.calls[0].name)
    assert answer.calls == answer.named("search")
    assert () == answer.named("other")
