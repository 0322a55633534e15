"""What every benchmark record shares: when, how it was started and on what; its Markdown
tables; and how it is printed and written to `benchmarks/results/`."""

from __future__ import annotations

import datetime as dt
import os
import platform
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["machine", "processor", "publish", "stamp", "table"]

ROOT = Path(__file__).resolve().parent.parent


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


def machine() -> list[str]:
    """The platform and processor lines of a results header, with the load at the start."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"- platform: {platform.platform()}",
        f"- processor: {processor()} ({os.cpu_count()} logical CPUs); load average at start {load}",
    ]


def stamp(python_note: str = "") -> list[str]:
    """The date, command and Python lines of a results header."""
    return [
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"- command: `{shlex.join(sys.orig_argv)}` (from the repository root)",
        f"- python: {platform.python_implementation()} {platform.python_version()}{python_note}",
    ]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table, as lines."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def publish(lines: Sequence[str], path: Path, note: str = "") -> None:
    """Print the report and write it to `path` (a `note` ends the stderr line)."""
    report = "\n".join(lines).rstrip() + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report, encoding="utf-8")
    print(report)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path  # `--results` anywhere
    print(f"written to {shown}{note}", file=sys.stderr)
