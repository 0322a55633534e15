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


# the modules that test logger routing itself (`set_logger`, structlog's own configuration)
LOGGER_TESTS = {
    "test_logger_scope.py",
    "test_events.py",
    "test_observability.py",
    "test_first_day.py",
}


def hand_rolled_sinks(tree: ast.Module) -> list[str]:
    """Where a module collects events by hand instead of with `capture_events()`: structlog's
    `capture_logs` (it leaves structlog configured for the tests after it) or a logger passed to
    `healjson.set_logger`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "structlog.testing":
            found.extend(f"line {node.lineno}: structlog.testing.{a.name}" for a in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "set_logger"
            and node.args
            and not (isinstance(node.args[0], ast.Constant) and node.args[0].value is None)
        ):
            found.append(f"line {node.lineno}: set_logger(...)")
    return found


def test_events_are_captured_with_capture_events() -> None:
    """Tests see healjson's events through `healjson.testing.capture_events()`, not a sink of
    their own (the modules that test logger routing aside)."""
    offences = {
        str(path.relative_to(TESTS)): sinks
        for path, tree in _parsed()
        if path.name not in LOGGER_TESTS and path.name != "test_capture_events.py"
        if (sinks := hand_rolled_sinks(tree))
    }
    assert {} == offences


def test_the_sink_check_sees_both_kinds() -> None:
    """structlog's `capture_logs` and a logger given to `set_logger` are both found."""
    tree = ast.parse(
        "from structlog.testing import capture_logs\n"
        "with healjson.set_logger(Sink()):\n    pass\n"
        "healjson.set_logger(None)\n"
    )
    assert ["line 1: structlog.testing.capture_logs", "line 2: set_logger(...)"] == (
        hand_rolled_sinks(tree)
    )
