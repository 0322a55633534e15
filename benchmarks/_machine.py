"""What every benchmark record states about the run: when, how it was started, on what."""

from __future__ import annotations

import datetime as dt
import platform
import shlex
import sys
from pathlib import Path

__all__ = ["processor", "stamp"]


def processor() -> str:
    """The CPU model name (platform.processor() is empty on Linux)."""
    name = platform.processor()
    if name:
        return name
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def stamp(python_note: str = "") -> list[str]:
    """The date, command and Python lines of a results header."""
    return [
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"- command: `{shlex.join(sys.orig_argv)}` (from the repository root)",
        f"- python: {platform.python_implementation()} {platform.python_version()}{python_note}",
    ]
