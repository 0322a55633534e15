"""The pages of `docs/` run as written: every ```python block of a page, in order, in one
namespace, with each `#>` line checked against what the `print` above it prints (as the README's
test does)."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pytest_examples import EvalExample, find_examples

from paths import ROOT

DOCS = ROOT / "docs"
PAGES = ("caching.md", "durable.md")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_a_docs_page_runs_as_written(
    page: str, eval_example: EvalExample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block runs after the ones above it; the output is what the page shows."""
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    eval_example.set_config(line_length=100)
    examples = list(find_examples(DOCS / page))
    assert len(examples) >= 3
    namespace: dict[str, Any] = {}
    try:
        for example in examples:
            namespace = eval_example.run_print_check(example, module_globals=namespace)
    finally:
        if "server" in namespace:
            namespace["server"].stop()
