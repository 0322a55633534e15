"""The house the code lives in, checked on the source: `_core/` reads as the layers, folder by
folder, with no import circle between folders (type-only imports included); nobody outside the
`Healer` calls its private methods, and no module takes another's private names; one sync, one
async and one replay driver send results to a flow; no module is over 600 lines."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from paths import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "healjson"
CORE = PACKAGE / "_core"
# the layers, bottom first: a folder imports only folders before it (and the loose modules)
LAYERS = ("wire", "target", "parse", "judge", "repair", "outcome", "observe", "stream", "run")
LOOSE = ("sentinels", "frozen", "flags", "redact", "diagnostic")


@functools.cache
def tree_of(path: Path) -> ast.Module:
    """The parsed source of `path` (each file parsed once for all the checks)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def every_import(path: Path) -> Iterator[tuple[str, tuple[str, ...]]]:
    """`(module, names)` of every import of `path`, as absolute names, type-only ones and
    those inside functions included."""
    tree = tree_of(path)
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            yield stem, tuple(alias.name for alias in node.names)


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def entry_of(module: str) -> str | None:
    """The `_core/` entry (a folder or a loose module) a module of the core belongs to."""
    prefix = "healjson._core."
    if not module.startswith(prefix):
        return None
    return module[len(prefix) :].split(".", 1)[0]


@functools.cache
def entry_edges() -> dict[str, set[str]]:
    """Which `_core/` entries import which (type-only imports included)."""
    modules = {module_name(p) for p in sources()}
    edges: dict[str, set[str]] = {}
    for path in CORE.rglob("*.py"):
        source = entry_of(module_name(path))
        if source is None:
            continue
        for module, names in every_import(path):
            targets = [module, *(f"{module}.{name}" for name in names)]
            for target in targets:
                entry = entry_of(target)
                if (
                    entry is not None
                    and entry != source
                    and target in modules | {f"healjson._core.{entry}"}
                ):
                    edges.setdefault(source, set()).add(entry)
    return edges


def test_core_has_at_most_fifteen_entries_named_for_the_layers() -> None:
    """`_core/` is the layers' folders, bottom to top, plus a few loose modules below them all."""
    entries = sorted(
        p.stem if p.is_file() else p.name
        for p in CORE.iterdir()
        if p.name != "__pycache__" and (p.is_dir() or p.suffix == ".py")
    )
    assert len(entries) <= 15
    assert sorted(["__init__", *LAYERS, *LOOSE]) == entries


def test_the_core_folders_import_only_the_layers_below_them() -> None:
    """No arrow runs back up between `_core/` entries, so there is no circle across folders,
    type-only imports included (a loose module imports no folder)."""
    rank = {name: index for index, name in enumerate(("__init__", *LOOSE, *LAYERS))}
    upward = [
        f"{source} -> {target}"
        for source, targets in sorted(entry_edges().items())
        for target in sorted(targets)
        if rank[target] >= rank[source] and not (source in LOOSE and target in LOOSE)
    ]
    assert [] == upward


def test_the_loose_modules_import_no_folder() -> None:
    """The loose modules sit below every folder."""
    assert {} == {
        source: targets
        for source, targets in entry_edges().items()
        if source in LOOSE and targets - set(LOOSE)
    }


def healer_private_methods() -> set[str]:
    tree = tree_of(CORE / "run" / "healer.py")
    (healer,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Healer"]
    return {
        node.name
        for node in healer.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("_")
        and not node.name.startswith("__")
    }


def test_nobody_outside_the_healer_calls_its_private_methods() -> None:
    """Adapters, runners and integrations hand flows to drivers through public methods."""
    private = healer_private_methods()
    offences = []
    for path in [*sources(), *sorted((ROOT / "tests").rglob("*.py"))]:
        if path == CORE / "run" / "healer.py":
            continue
        text = path.read_text(encoding="utf-8")
        if not any(f".{name}" in text for name in private):  # read the text before the tree
            continue
        offences.extend(
            f"{path.name}: .{node.attr}"
            for node in ast.walk(tree_of(path))
            if isinstance(node, ast.Attribute) and node.attr in private
        )
    assert [] == offences


def flow_senders() -> list[str]:
    """The functions of the package that send results into a flow (`flow.send(...)`)."""
    out = []
    for path in sources():
        tree = tree_of(path)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "send"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "flow"
                ):
                    out.append(f"{module_name(path)}.{function.name}")
                    break
    return sorted(set(out))


def test_there_are_three_flow_drivers() -> None:
    """One driver per mode: sync, async, replay (a stream is a reader the driver is given)."""
    assert [
        "healjson._core.run.drive.async_steps",
        "healjson._core.run.drive.sync_steps",
        "healjson._core.run.replay.replay",
    ] == flow_senders()


def private_reach(path: Path) -> list[str]:
    """healjson's private names `path` takes from another of its modules: `from m import _x`,
    or `m._x` on a healjson module it imported."""
    own = module_name(path)
    found = [
        f"{module}.{name}"
        for module, names in every_import(path)
        if module != own and module.startswith("healjson")
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    tree = tree_of(path)
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name.startswith("healjson")
            )
        elif isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").startswith("healjson")
        ):
            base = node.module or ""
            modules.update(
                alias.asname or alias.name
                for alias in node.names
                if (PACKAGE.parent / f"{base}.{alias.name}".replace(".", "/"))
                .with_suffix(".py")
                .exists()
                or (node.level and alias.name.islower())
            )
    found.extend(
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    )
    return found


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_takes_another_modules_private_names(path: Path) -> None:
    """A module's private names are its own: the others use its public ones."""
    assert [] == private_reach(path)


def test_the_private_reach_check_sees_offences() -> None:
    """The check is not vacuous: a private name imported, or read off an imported module."""
    module = PACKAGE / "_probe_for_the_house_test.py"
    module.write_text(
        "from healjson._core.run import drive\nfrom healjson._core.redact import _walk\n"
        "x = drive._awaitable\n",
        encoding="utf-8",
    )
    try:
        assert {"healjson._core.redact._walk", "drive._awaitable"} == set(private_reach(module))
    finally:
        module.unlink()


GENERATED = {PACKAGE / "_typing" / "face.pyi"}


def test_no_module_is_over_600_lines() -> None:
    """Small modules named for what they do: none over 600 lines, generated files aside."""
    sizes = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines())
        for path in [*sources(), *PACKAGE.rglob("*.pyi")]
        if path not in GENERATED
    }
    assert {} == {name: lines for name, lines in sizes.items() if lines > 600}
