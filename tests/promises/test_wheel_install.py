"""The wheel, installed into a fresh virtual environment: from a directory that is not the
repository, `healjson.load_contracts("support_ticket")` and `healjson packs` work — the example
packs ship as `healjson_contracts` and register through the wheel's entry points.

Offline: the wheel is built with the hatchling of this environment (`--no-build-isolation`) and
installed without dependencies; the fresh environment borrows this one's site-packages (pydantic
and the rest) through a `.pth` line, appended after its own, so `healjson` and
`healjson_contracts` are the installed wheel's and nothing of the repository is on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from paths import ROOT

PROBE = """
import json, healjson, healjson_contracts
pack = healjson.load_contracts("support_ticket")
print(json.dumps({
    "healjson": healjson.__file__,
    "packs": healjson_contracts.__file__,
    "pack": pack.name,
    "model": pack.model.__name__,
    "rules": [rule.name for rule in pack.contracts],
}))
"""


def _sh(*args: str | Path, cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    command = [str(arg) for arg in args]
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert 0 == result.returncode, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.mark.slow
def test_the_wheel_ships_the_packs_and_their_entry_points(tmp_path: Path) -> None:
    """The built wheel, installed in a fresh environment, ships healjson, the example packs and
    their entry points, and loads them by name."""
    pytest.importorskip("hatchling", reason="builds the wheel offline with hatchling (dev extra)")
    wheels = tmp_path / "wheels"
    _sh(
        sys.executable,
        *("-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels, ROOT),
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("healjson-*.whl")
    venv = tmp_path / "venv"
    _sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    purelib = Path(
        _sh(
            python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp_path
        ).strip()
    )
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (purelib / "zz_borrowed_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    _sh(
        sys.executable,
        *("-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel),
        cwd=tmp_path,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    found = json.loads(_sh(python, "-c", PROBE, cwd=elsewhere))
    assert Path(found["healjson"]).is_relative_to(purelib)  # the wheel's, not the repository's
    assert Path(found["packs"]).is_relative_to(purelib)
    assert "support_ticket" == found["pack"]
    assert "SupportTicket" == found["model"]
    assert "refund_is_urgent" in found["rules"]

    listing = _sh(venv / "bin" / "healjson", "packs", cwd=elsewhere)
    for name in ("invoice", "itinerary", "support_ticket"):
        assert f"## {name}\n\n`healjson_contracts.{name}:pack`" in listing
    assert "  - `refund_is_urgent` (on fail: reask)" in listing
