"""docs/ollama.md runs as written: its python blocks in order, in one namespace, `#>` lines
checked (pytest-examples), against the scripted server the page itself starts."""

from __future__ import annotations

import sys

import pytest
from pytest_examples import EvalExample, find_examples

from paths import ROOT

PAGE = ROOT / "docs" / "ollama.md"


def test_the_ollama_page_runs_from_the_top(
    eval_example: EvalExample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block runs after the ones above it and prints what its `#>` lines say; the page
    stops its own server."""
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    eval_example.set_config(line_length=100)
    examples = list(find_examples(PAGE))
    assert 3 <= len(examples)
    namespace: dict[str, object] = {}
    try:
        for example in examples:
            namespace = eval_example.run_print_check(example, module_globals=namespace)
        server = namespace["server"]
        assert [r.path for r in server.requests] == ["/api/chat"] * 5  # type: ignore[attr-defined]
    finally:
        if "server" in namespace:
            namespace["server"].stop()  # type: ignore[attr-defined]
