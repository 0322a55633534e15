"""Measure what `import healjson` costs, in fresh interpreters.

Run from the repository root:

    .venv/bin/python benchmarks/bench_import.py

Four measurements, each in new subprocesses of this same interpreter:

0. CPU of `import healjson` once `from pydantic import BaseModel, TypeAdapter` has run (what
   healjson adds to the part of pydantic it cannot avoid): `time.process_time()` around the
   import inside each fresh interpreter, the median over the runs; and the same with the engine
   loaded too (`healjson.Healer` and `healjson.wrap` read: what a program that heals pays);
1. wall time of `python -c "import healjson"` minus `python -c "import pydantic"` (and minus
   `from pydantic import BaseModel, TypeAdapter`, which is what healjson really needs from
   pydantic), medians over the runs, the commands taking turns;
2. `python -X importtime -c "import healjson"`, parsed: healjson's cumulative time and the
   modules with the most self time in its import tree (medians over the runs);
3. `sys.modules` after `import healjson` must not hold the optional or heavy dependencies
   (`openai`, `instructor`, `json_repair`, `structlog`, `typer`, `rich`, `hypothesis`) nor a
   provider module but the default one (`healjson._providers.openai_chat`).

Bytecode is cached in a temporary `PYTHONPYCACHEPREFIX` directory, as it would be for an installed
package (the development environment may set PYTHONDONTWRITEBYTECODE, which makes every run
compile healjson's source); the wall times are also reported for the environment as inherited.

Results are printed and written to `benchmarks/results/import.md`; the exit status is 1 when a
forbidden module was imported.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from _machine import processor, publish, stamp, table

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "import.md"
RUNS = 15
FORBIDDEN = ("openai", "instructor", "json_repair", "structlog", "typer", "rich", "hypothesis")
WALL_COMMANDS = {
    "python (empty)": "pass",
    "import pydantic": "import pydantic",
    "from pydantic import BaseModel, TypeAdapter": "from pydantic import BaseModel, TypeAdapter",
    "import healjson": "import healjson",
}
TOP = 10
CPU_TARGET_MS = 50.0
CPU_CODE = (
    "import time\n"
    "from pydantic import BaseModel, TypeAdapter\n"
    "start = time.process_time()\n"
    "import healjson\n"
    "{more}"
    "print(time.process_time() - start)\n"
)
# provider modules `import healjson` may load (the registry's default)
DEFAULT_PROVIDER = "healjson._providers.openai_chat"


def cpu_times(env: dict[str, str], more: str = "") -> list[float]:
    """CPU seconds of `import healjson` (and `more`) after pydantic's own imports, per fresh
    interpreter (after one warm-up run)."""
    code = CPU_CODE.format(more=more)
    run_python(env, "-c", code)
    return [float(run_python(env, "-c", code).stdout) for _ in range(RUNS)]


def cpu_section(env: dict[str, str]) -> list[str]:
    import_only = cpu_times(env)
    engine = cpu_times(env, "healjson.Healer, healjson.wrap\n")
    rows = [
        ["`import healjson`", ms(statistics.median(import_only)), ms(min(import_only))],
        [
            "`import healjson` + `healjson.Healer`, `healjson.wrap` read (the engine loaded)",
            ms(statistics.median(engine)),
            ms(min(engine)),
        ],
    ]
    verdict = statistics.median(import_only) * 1e3 < CPU_TARGET_MS
    with open("/proc/loadavg", encoding="utf-8") as loadavg:
        load = ", ".join(loadavg.read().split()[:3])
    return [
        "## CPU of `import healjson` over `from pydantic import BaseModel, TypeAdapter`",
        "",
        f"`time.process_time()` around the import in each of {RUNS} fresh interpreters, after "
        f"`from pydantic import BaseModel, TypeAdapter` (bytecode cached); load average at the "
        f"end {load}.",
        "",
        *table(["CODE", "median", "min"], rows),
        "",
        f"- target: under {CPU_TARGET_MS:.0f} ms for `import healjson`: "
        + ("**met**" if verdict else "**not met**"),
        "",
    ]


def cached_env(pycache: str) -> dict[str, str]:
    """Bytecode cached in `pycache`, as for an installed package (this environment may set
    PYTHONDONTWRITEBYTECODE, which would make every run compile healjson from source)."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def inherited_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPROFILEIMPORTTIME"}


_NOT_INHERITED = ("PYTHONPROFILEIMPORTTIME", "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")


def run_python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=True, cwd=ROOT, env=env
    )


# --- wall time ---------------------------------------------------------------------------------


def wall_times(env: dict[str, str]) -> dict[str, list[float]]:
    """Seconds per fresh interpreter, per command; the commands take turns (rotated)."""
    names = list(WALL_COMMANDS)
    for code in WALL_COMMANDS.values():  # warm the OS file cache (and the bytecode cache)
        run_python(env, "-c", code)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(RUNS):
        k = r % len(names)
        for name in [*names[k:], *names[:k]]:
            start = time.perf_counter_ns()
            run_python(env, "-c", WALL_COMMANDS[name])
            samples[name].append((time.perf_counter_ns() - start) / 1e9)
    return samples


def wall_section(title: str, samples: dict[str, list[float]]) -> list[str]:
    med = {name: statistics.median(values) for name, values in samples.items()}
    lines = [
        f"### {title}",
        "",
        f"Median (min to max) over {RUNS} runs of `python -c CODE`, the commands taking turns.",
        "",
    ]
    lines += table(
        ["CODE", "median", "min", "max"],
        [
            [f"`{WALL_COMMANDS[name]}`", ms(med[name]), ms(min(v)), ms(max(v))]
            for name, v in samples.items()
        ],
    )
    total = med["import healjson"]
    lines += [
        "",
        f"- `import healjson` minus `import pydantic`: **{ms(total - med['import pydantic'])}**",
        "- `import healjson` minus `from pydantic import BaseModel, TypeAdapter` (the part of "
        "pydantic healjson cannot avoid): "
        f"**{ms(total - med['from pydantic import BaseModel, TypeAdapter'])}**",
        f"- `import healjson` minus an empty interpreter: {ms(total - med['python (empty)'])}",
        "",
    ]
    return lines


# --- -X importtime -----------------------------------------------------------------------------


@dataclass
class Node:
    name: str
    self_us: int
    cumulative_us: int
    depth: int
    children: list[Node] = field(default_factory=list)

    def walk(self) -> list[Node]:
        out = [self]
        for child in self.children:
            out += child.walk()
        return out


def parse_importtime(stderr: str) -> list[Node]:
    """The import tree(s) from `-X importtime` output (post-order lines, indented names)."""
    pending: list[Node] = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        head, cumulative_part, name_part = line.split("|")
        indent = len(name_part) - len(name_part.lstrip(" "))
        depth = (indent - 1) // 2
        node = Node(name_part.strip(), int(head.split(":", 1)[1]), int(cumulative_part), depth)
        while pending and pending[-1].depth > node.depth:
            node.children.insert(0, pending.pop())
        pending.append(node)
    return pending


def importtime_runs(env: dict[str, str]) -> list[Node]:
    """The `healjson` node of each `-X importtime` run."""
    roots = []
    for _ in range(RUNS):
        proc = run_python(env, "-X", "importtime", "-c", "import healjson")
        found = [n for n in parse_importtime(proc.stderr) if n.name == "healjson"]
        if not found:
            raise SystemExit("healjson not found in -X importtime output")
        roots.append(found[0])
    return roots


def pulled_in(root: Node) -> list[Node]:
    """Modules imported directly by a healjson module that are not healjson's own."""
    out = []
    for node in root.walk():
        if node.name.split(".")[0] == "healjson":
            out += [c for c in node.children if c.name.split(".")[0] != "healjson"]
    return out


# --- sys.modules -------------------------------------------------------------------------------


def loaded_modules(env: dict[str, str]) -> list[str]:
    code = "import sys, healjson; print('\\n'.join(sorted(sys.modules)))"
    return run_python(env, "-c", code).stdout.split()


# --- report ------------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def median_by_name(nodes: Sequence[Node]) -> dict[str, tuple[float, float]]:
    """module -> (median self ms, median cumulative ms) over the runs it appeared in."""
    selfs: dict[str, list[int]] = defaultdict(list)
    cumulative: dict[str, list[int]] = defaultdict(list)
    for node in nodes:
        selfs[node.name].append(node.self_us)
        cumulative[node.name].append(node.cumulative_us)
    return {
        name: (statistics.median(selfs[name]) / 1e3, statistics.median(cumulative[name]) / 1e3)
        for name in selfs
    }


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="healjson-pycache-") as pycache:
        return report(cached_env(pycache))


def report(env: dict[str, str]) -> int:
    lines = [
        "# `import healjson` benchmark",
        "",
        *stamp(" (the venv)"),
        f"- pydantic {version('pydantic')}, pydantic_core {version('pydantic_core')}, "
        f"json_repair {version('json_repair')}, healjson {version('healjson')}",
        f"- platform: {platform.platform()}",
        f"- processor: {processor()} ({os.cpu_count()} logical CPUs)",
        f"- runs: {RUNS} fresh interpreters per measurement (after one warm-up run each); "
        "bytecode cached in a temporary PYTHONPYCACHEPREFIX unless said otherwise",
        "",
    ]
    header_len = len(lines)

    modules = loaded_modules(env)
    present = {
        name: [m for m in modules if m == name or m.startswith(name + ".")] for name in FORBIDDEN
    }
    bad = {name: found for name, found in present.items() if found}
    from healjson._providers import PROVIDERS

    registered = {f"healjson._providers.{name}" for name in PROVIDERS.modules()}
    providers = sorted(set(modules) & registered - {DEFAULT_PROVIDER})
    if providers:
        bad["provider modules"] = providers
    third_party = sorted(
        {m.split(".")[0] for m in modules}
        - set(sys.stdlib_module_names)
        - {"__main__", "_distutils_hack"}
    )
    third_party = [m for m in third_party if not m.startswith("_sysconfigdata")]
    lines += ["## Modules loaded by `import healjson`", ""]
    lines += table(
        ["module", "in sys.modules?"],
        [[f"`{name}`", "**YES**" if present[name] else "no"] for name in FORBIDDEN],
    )
    lines += [
        "",
        f"{len(modules)} modules in `sys.modules` in total; top-level non-stdlib packages: "
        + ", ".join(f"`{m}`" for m in third_party)
        + ".",
        "",
    ]
    print("  sys.modules checked", file=sys.stderr)

    lines += cpu_section(env)
    print("  CPU measured", file=sys.stderr)

    wall = wall_times(env)
    inherited = wall_times(inherited_env())
    lines += ["## Wall time of a fresh interpreter", ""]
    lines += wall_section("With a bytecode cache (as for an installed package)", wall)
    lines += wall_section(
        "Environment as inherited "
        f"(PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')!s}: "
        "healjson's source has no `__pycache__`, so it is compiled on every run)",
        inherited,
    )
    print("  wall time measured", file=sys.stderr)

    roots = importtime_runs(env)
    cumulative = statistics.median(r.cumulative_us for r in roots) / 1e3
    subtree = median_by_name([n for r in roots for n in r.walk()])
    direct = median_by_name([n for r in roots for n in pulled_in(r)])
    own = {name: v for name, v in subtree.items() if name.split(".")[0] == "healjson"}
    lines += [
        '## `python -X importtime -c "import healjson"`',
        "",
        f"With the bytecode cache; medians over {RUNS} runs (importtime's own bookkeeping "
        "inflates every figure). "
        f"`healjson` cumulative: **{cumulative:.1f} ms**; its own modules' self time sums to "
        f"{sum(s for s, _ in own.values()):.1f} ms.",
        "",
        f"Top {TOP} modules by self time in healjson's import tree:",
        "",
    ]
    lines += table(
        ["module", "self", "cumulative"],
        [
            [f"`{name}`", f"{s:.1f} ms", f"{c:.1f} ms"]
            for name, (s, c) in sorted(subtree.items(), key=lambda kv: -kv[1][0])[:TOP]
        ],
    )
    lines += ["", f"Top {TOP} of healjson's own modules by self time:", ""]
    lines += table(
        ["module", "self", "cumulative"],
        [
            [f"`{name}`", f"{s:.1f} ms", f"{c:.1f} ms"]
            for name, (s, c) in sorted(own.items(), key=lambda kv: -kv[1][0])[:TOP]
        ],
    )
    lines += [
        "",
        f"Top {TOP} imports healjson's modules trigger directly (cumulative, first import only):",
        "",
    ]
    importers: dict[str, str] = {}
    for node in roots[0].walk():
        if node.name.split(".")[0] == "healjson":
            for child in node.children:
                importers.setdefault(child.name, node.name)
    lines += table(
        ["module", "imported by", "cumulative"],
        [
            [f"`{name}`", f"`{importers.get(name, '?')}`", f"{c:.1f} ms"]
            for name, (_, c) in sorted(direct.items(), key=lambda kv: -kv[1][1])[:TOP]
        ],
    )
    lines.append("")
    print("  importtime parsed", file=sys.stderr)

    verdict = (
        "PASS: none of " + ", ".join(FORBIDDEN) + " is imported by `import healjson`, nor a "
        "provider module but the default one."
        if not bad
        else "FAIL: `import healjson` imports "
        + "; ".join(f"{name} ({', '.join(found[:5])})" for name, found in bad.items())
    )
    lines[header_len:header_len] = ["## Verdict", "", verdict, ""]
    publish(lines, RESULTS)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
