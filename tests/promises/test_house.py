"""The suite's own house rules, checked on its source: every test says what it shows."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from paths import TESTS

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _tests_of(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The functions pytest collects from a module: `test*` functions at its top level and
    `test*` methods of its `Test*` classes (a `test*` function nested in a test is no test)."""
    for node in tree.body:
        if isinstance(node, FUNCTIONS) and node.name.startswith("test"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for member in node.body:
                if isinstance(member, FUNCTIONS) and member.name.startswith("test"):
                    yield f"{node.name}.{member.name}", member


def _modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


@functools.cache
def _parsed() -> tuple[tuple[Path, ast.Module], ...]:
    """Every test module's source tree, parsed once for the checks that read them all."""
    return tuple((path, ast.parse(path.read_text(encoding="utf-8"))) for path in _modules())


def test_every_test_function_has_a_docstring() -> None:
    """Every test function and test method in the suite has a docstring saying what it shows."""
    missing = [
        f"{path.relative_to(TESTS)}::{name}"
        for path, tree in _parsed()
        for name, node in _tests_of(tree)
        if not (ast.get_docstring(node) or "").strip()
    ]
    assert [] == missing


def test_the_check_sees_the_whole_suite() -> None:
    """The docstring check reads every test folder, so a module moved into a new one is still
    checked."""
    folders = {
        path.parent.relative_to(TESTS).parts[0] for path in _modules() if path.parent != TESTS
    }
    assert {"core", "providers", "adapters", "integrations", "scale", "kit", "cli"} <= folders
    assert sum(1 for _, tree in _parsed() for _ in _tests_of(tree)) > 1000


def test_a_test_without_a_docstring_is_found() -> None:
    """A top-level test and a test method without a docstring are both reported, a documented
    one and a nested helper are not."""
    source = '''
def test_bare():
    pass

def test_said():
    """Says it."""

class TestGroup:
    def test_method(self):
        def test_inner():
            pass

def helper():
    pass
'''
    found = {name for name, node in _tests_of(ast.parse(source)) if not ast.get_docstring(node)}
    assert {"test_bare", "TestGroup.test_method"} == found
