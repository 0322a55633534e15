"""Run a Markdown page's python blocks as a reader would (README.md, docs/*.md), one at a time.

pytest-examples runs each block from code it rewrites; when a block raises, Python 3.11's
traceback formatting can fail on that code's positions (`StopIteration` inside `traceback`),
which turns a failing block into a pytest INTERNALERROR instead of a failed test. A block that
raises is reported here as a plain failure naming the page, the block's line, the line that
raised and the exception, with no traceback of the rewritten code to format.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest
from pytest_examples import CodeExample, EvalExample


def run_block(
    eval_example: EvalExample, example: CodeExample, namespace: dict[str, Any]
) -> dict[str, Any]:
    """The namespace after `example` ran in it, `#>` lines checked; a raise fails the test."""
    try:
        return eval_example.run_print_check(example, module_globals=namespace)
    except pytest.fail.Exception:
        raise  # a `#>` line that is not what printed: pytest-examples' own diff
    except Exception as error:  # any exception of the page's code fails the test
        failure = _describe(example, error)
    pytest.fail(failure, pytrace=False)


def _describe(example: CodeExample, error: BaseException) -> str:
    page = Path(example.path)
    lines = [
        lineno
        for frame, lineno in traceback.walk_tb(error.__traceback__)
        if Path(frame.f_code.co_filename).name == page.name
    ]
    where = f"line {lines[-1]}" if lines else "a call inside it"
    return (
        f"{page.name}: the block at line {example.start_line} raised at {where}: "
        f"{type(error).__name__}: {error}"
    )
