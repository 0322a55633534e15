"""docs/testing.md runs as written: every ```python block, in order, in one namespace (a
reader's session), with pytest-examples — a block that raises fails the test, and every `#>`
line must be what the `print` above it prints — and the tests it shows then pass."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import settings
from pytest_examples import CodeExample, EvalExample, find_examples

from paths import ROOT

DOC = ROOT / "docs" / "testing.md"
EXAMPLES: list[CodeExample] = list(find_examples(DOC))
DOC_TESTS = {
    "test_valid_orders_pass",
    "test_a_shipped_order_without_a_note_is_refused",
    "test_sloppy_json_heals_without_a_model_call",
}


@contextmanager
def hypothesis_examples(count: int) -> Iterator[None]:
    """Hypothesis runs `count` examples per property inside; the suite's profile afterwards."""
    previous = settings.get_current_profile_name()
    settings.register_profile("docs-testing", max_examples=count, deadline=None)
    settings.load_profile("docs-testing")
    try:
        yield
    finally:
        settings.load_profile(previous)


def test_every_python_block_is_collected() -> None:
    """No ```python block escapes the run: pytest-examples finds each one, whole."""
    text = DOC.read_text(encoding="utf-8")
    assert text.count("```python\n") == len(EXAMPLES) == 3
    for example in EXAMPLES:
        compile(example.source, f"docs/testing.md:{example.start_line}", "exec")


@pytest.mark.slow  # the page run whole, as a reader runs it: the slow lane, as the README run is
def test_docs_testing_runs_from_the_top(
    eval_example: EvalExample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block runs after the ones above it, as printed; the tests it defines pass."""
    # pytest-examples runs each block as `__main__`: pytest's own is put back afterwards
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    eval_example.set_config(line_length=100)
    namespace: dict[str, Any] = {}
    with hypothesis_examples(10):
        for example in EXAMPLES:
            namespace = eval_example.run_print_check(example, module_globals=namespace)
        shown = {name for name in namespace if name.startswith("test_")}
        assert DOC_TESTS == shown
        for name in sorted(shown):
            namespace[name]()
