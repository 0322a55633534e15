"""The benchmarks stay runnable on the default lane's install: every script imports without the
floor venv's instructor (its contenders import it when they run), and the scripted server the
overhead benchmarks launch in a child process starts."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from paths import ROOT

BENCH = ROOT / "benchmarks"


@pytest.mark.slow  # a fresh interpreter importing every script and its SDKs: about 10 s
def test_every_benchmark_script_imports_on_the_default_install() -> None:
    """Each `benchmarks/*.py` imports in one fresh interpreter (an import error names it)."""
    names = sorted(path.stem for path in BENCH.glob("*.py"))
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    done = subprocess.run(
        [sys.executable, "-c", code, *names],
        cwd=BENCH,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_overhead_benchmarks_scripted_server_starts() -> None:
    """`bench_overhead.ServerProcess` launches the scripted server and reads its address."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_overhead

        with tempfile.TemporaryDirectory() as workdir:
            server = bench_overhead.ServerProcess([bench_overhead.REPLY], Path(workdir), "one")
            try:
                assert server.base_url.startswith("http://127.0.0.1:")
            finally:
                server.stop()
    finally:
        sys.path.remove(str(BENCH))
