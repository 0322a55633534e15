"""docs/mcp.md runs as written: every ```python block, in order, in one namespace (a reader's
session), each `#>` line the output of the `print` above it (pytest-examples)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import CodeExample, EvalExample, find_examples

from healjson.testing import ScriptedMCPServer

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
EXAMPLES: list[CodeExample] = list(find_examples(DOC))


def test_every_python_block_of_the_mcp_doc_is_collected() -> None:
    """Each ```python block is found whole (and there are the client, arguments, rules,
    server and frameworks examples)."""
    text = DOC.read_text(encoding="utf-8")
    assert text.count("```python\n") == len(EXAMPLES) == 5
    for example in EXAMPLES:
        compile(example.source, f"mcp.md:{example.start_line}", "exec")


@pytest.mark.slow
def test_the_mcp_doc_runs_from_the_top(
    eval_example: EvalExample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block runs after the ones above it; its `#>` lines are what it prints."""
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    eval_example.set_config(line_length=100)
    namespace: dict[str, Any] = {}
    for example in EXAMPLES:
        namespace = eval_example.run_print_check(example, module_globals=namespace)
    # the frameworks' example: both calls reached the stdio subprocess, arguments as given
    recorded = ScriptedMCPServer.recorded_calls(namespace["params"].cwd)
    assert [("get_weather", {"city": "Oslo"})] * 2 == [(c.name, c.arguments) for c in recorded]
