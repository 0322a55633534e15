"""Where the suite's files are, wherever a test module sits in `tests/`."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
"""The repository's root (pyproject.toml, README.md, src/, benchmarks/)."""
BENCHMARKS = ROOT / "benchmarks"
CLI_FIXTURES = TESTS / "fixtures" / "cli"
"""The command line's fixtures: `ticket_pack.py`, targets and input files."""
CORPUS = TESTS / "corpus"
