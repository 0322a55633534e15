"""Every page of `docs/` runs as written, for a user who copies it from the top.

Each page's ```python blocks run in order in one namespace (a reader's session), with
pytest-examples: a block that raises fails the page, and every `#>` line must be what the
`print` above it prints. Pages bring their own model: healjson's scripted server on 127.0.0.1
(`healjson.testing.ScriptedServer`), so nothing reaches the internet and no key is needed. A
page whose integration's extra is not installed is skipped with the extra named.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

from lanes import INSTRUCTOR_ONLY
from page_blocks import run_block
from paths import ROOT

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
# pages whose own module runs them and then the tests they show (with a bounded example count)
OWN_MODULES = {"testing.md": "test_docs_testing.py", "contracts.md": "test_docs_contracts.py"}
_IMPORT = re.compile(r"^(?:from|import) +([A-Za-z_][\w]*)", re.MULTILINE)


def blocks(page: Path) -> list[CodeExample]:
    return [example for example in find_examples(page) if example.prefix == "python"]


def imported(page: Path) -> set[str]:
    """The top-level packages a page's blocks import."""
    return {name for example in blocks(page) for name in _IMPORT.findall(example.source)}


# a page runs whole, as a reader runs it (some start Ray, a stdio server process or a durable
# engine): the slow lane, as the README run is; a page of instructor's runs where instructor
# is installed, the floor lane, which runs `-m "not slow"`
RUN = [
    page if "instructor" in imported(page) else pytest.param(page, marks=pytest.mark.slow)
    for page in PAGES
    if page.name not in OWN_MODULES
]


def missing_packages(page: Path) -> list[str]:
    """The top-level packages a page imports that are not installed."""
    return sorted(name for name in imported(page) if importlib.util.find_spec(name) is None)


def test_there_are_pages_and_each_has_a_runnable_block() -> None:
    """The docs folder is read (a test that found no page would pass vacuously)."""
    assert PAGES
    for page in PAGES:
        for example in blocks(page):
            compile(example.source, f"{page.name}:{example.start_line}", "exec")


@pytest.mark.parametrize("page", RUN, ids=lambda page: page.name)
def test_each_page_runs_from_the_top(
    page: Path, eval_example: EvalExample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block of the page runs after the ones above it, as printed; `#>` lines are checked
    output."""
    missing = missing_packages(page)
    if missing == ["instructor"]:  # the default lane has none: the floor lane runs the page
        pytest.skip(INSTRUCTOR_ONLY)
    assert [] == missing, f"{page.name} imports packages the dev extras do not install"
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.setenv(name, "")  # recorded first, so what the page sets is undone after
        monkeypatch.delenv(name)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # DSPy: no model list download
    # pytest-examples runs each block as `__main__`: pytest's own is put back afterwards
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    eval_example.set_config(line_length=100)
    namespace: dict[str, Any] = {}
    try:
        for example in blocks(page):
            namespace = run_block(eval_example, example, namespace)
    finally:
        server = namespace.get("server")
        stop = getattr(server, "stop", None)
        if callable(stop):
            stop()


def test_a_failing_block_fails_the_page(eval_example: EvalExample, tmp_path: Path) -> None:
    """The checks bite: a block that raises, and a `#>` line that is not what prints, fail."""
    broken = tmp_path / "broken.md"
    broken.write_text(
        "```python\nprint(undefined_name)\n```\n\n```python\nprint(1 + 1)\n#> 3\n```\n",
        encoding="utf-8",
    )
    raising, misprinted = blocks(broken)
    with pytest.raises(NameError, match="undefined_name"):
        eval_example.run_print_check(raising)
    with pytest.raises(pytest.fail.Exception, match=r"line 1 raised at line 2: NameError"):
        run_block(eval_example, raising, {})
    with pytest.raises(pytest.fail.Exception, match="Print output changed"):
        eval_example.run_print_check(misprinted)


def test_the_pages_run_elsewhere_have_their_module() -> None:
    """A page left out of the run above is run by a module of its own."""
    assert all((ROOT / "tests" / "promises" / module).exists() for module in OWN_MODULES.values())
    assert set(OWN_MODULES) <= {page.name for page in PAGES}
