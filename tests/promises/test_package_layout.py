"""The package's layering, checked on the source: `_core` imports nothing above itself, no
module of the library imports the example packs (`contracts/healjson_contracts`, shipped as
`healjson_contracts`) nor reads a repository folder such as `contracts/`, the packs import only
healjson's public names, and no two modules import each other (directly or in a circle), not
even through an import inside a function."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from paths import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "healjson"
PACKS = ROOT / "contracts" / "healjson_contracts"
ABOVE_CORE = ("adapters", "testing", "_cli", "_decorator", "_wrap", "_packs")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(path: Path) -> Iterator[str]:
    """Every module `path` imports at run time (module level or inside functions; not the
    imports under `if TYPE_CHECKING:`), as absolute names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking_only(node):
            skipped.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            yield stem
            # `from . import events`: the imported names may be modules themselves
            yield from (f"{stem}.{alias.name}" for alias in node.names)


@functools.cache  # read once for the tests that share it (none changes it)
def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges[name] = {target for target in imports(path) if target in modules and target != name}
    return edges


def test_the_graph_is_read() -> None:
    """The checks below see the real imports (a reader that found none would pass them all)."""
    edges = graph()
    assert "healjson._core.run.engine" in edges
    assert "healjson._core.judge.check" in edges["healjson._core.run.engine"]
    assert (
        "healjson._core.observe.events" in edges["healjson._core.run.engine"]
    )  # `from . import events`


def test_core_imports_nothing_above_itself() -> None:
    """No `_core` module imports anything above the core (adapters, testing, the command line,
    `healjson` itself)."""
    above = tuple(f"healjson.{name}" for name in ABOVE_CORE)
    offences = [
        f"{module} imports {target}"
        for module, targets in graph().items()
        if module.startswith("healjson._core")
        for target in targets
        if target.startswith(above) or target == "healjson"
    ]
    assert [] == offences


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_no_module_depends_on_the_example_packs(path: Path) -> None:
    """The example packs (`contracts/healjson_contracts`, installed as `healjson_contracts`) are
    for users; the library must not depend on them. Only `load_contracts` finds one, through its
    entry point, when asked: no module of `src/healjson` imports one or even names its package,
    and none reads a folder outside the package (a wheel has no `contracts/`)."""
    text = path.read_text(encoding="utf-8")
    targets = list(imports(path))
    assert not any(t.split(".")[0] in {"healjson_contracts", "contracts"} for t in targets)
    assert not any(t.startswith("healjson.packs") for t in targets)
    assert "healjson_contracts" not in text
    assert '"contracts/' not in text
    assert "'contracts/" not in text


def test_there_are_no_packs_inside_the_package() -> None:
    """The packs' source lives in the top-level `contracts/`, not in `src/healjson/packs/`."""
    assert not (PACKAGE / "packs").exists()
    assert sorted(p.name for p in PACKS.glob("*.py")) == [
        "__init__.py",
        "invoice.py",
        "itinerary.py",
        "support_ticket.py",
    ]


def _pack_imports(path: Path) -> Iterator[tuple[str, tuple[str, ...], int]]:
    """(module, imported names, level) of every import statement of a pack module."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((alias.name, (), 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", tuple(alias.name for alias in node.names), node.level


def _non_public_imports(path: Path) -> list[str]:
    """The imports of healjson in `path` that are not `from healjson import <public name>`."""
    import healjson

    return [
        f"{module} {list(names)}"
        for module, names, level in _pack_imports(path)
        if not level
        and module.split(".")[0] == "healjson"
        and (module != "healjson" or not set(names) <= set(healjson.__all__))
    ]


@pytest.mark.parametrize("path", sorted(PACKS.glob("*.py")), ids=lambda p: p.name)
def test_the_packs_import_only_healjsons_public_names(path: Path) -> None:
    """A pack is written the way a third party writes one: `from healjson import ...` of names
    in `healjson.__all__`, never a submodule (`healjson._core...`, `healjson.testing` included)."""
    assert [] == _non_public_imports(path)
    if path.name != "__init__.py":
        assert "healjson" in {module for module, _, level in _pack_imports(path) if not level}


def test_the_public_import_check_sees_offences(tmp_path: Path) -> None:
    """The check above is not vacuous: a submodule, a private module and a private name offend;
    public names and other libraries do not."""
    pack = tmp_path / "pack.py"
    pack.write_text(
        "import json\nimport healjson._core.run.engine\nfrom healjson import contract, Violation\n"
        "from healjson._packs import ContractPack\nfrom healjson import _packs\n"
        "from pydantic import BaseModel\n"
    )
    assert {
        "healjson._core.run.engine []",
        "healjson._packs ['ContractPack']",
        "healjson ['_packs']",
    } == set(_non_public_imports(pack))


def test_there_is_no_import_circle() -> None:
    """No healjson module imports another in a circle."""
    edges = graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges[node]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert [] == [" -> ".join(cycle) for cycle in cycles]


# what only a wire format may name: its parameters, response fields, stream events and SDK
# packages (each lives in one module of `healjson._providers`)
PROVIDER_NAMES = frozenset(
    {
        "max_completion_tokens",
        "max_output_tokens",
        "maxOutputTokens",
        "response_format",
        "output_config",
        "generationConfig",
        "generation_config",
        "stop_reason",
        "stop_details",
        "finishReason",
        "usageMetadata",
        "usage_metadata",
        "promptFeedback",
        "prompt_feedback",
        "candidatesTokenCount",
        "prompt_tokens_details",
        "completion_tokens_details",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "reasoning_content",
        "content_block_delta",
        "message_delta",
        "tool_use",
        "_azure_ad_token",
        "_custom_headers",
        "_custom_query",
        "_http_options",
        "_api_client",
        "openai",
        "anthropic",
        "google",
    }
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def named(path: Path) -> set[str]:
    """The names a module's code uses: identifiers, attributes, keywords, and the words of its
    string constants (docstrings and comments left out: prose may speak of a provider)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    # attribute docstrings: a string statement after an assignment
    docstrings.update(
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    )
    words: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            words.add(node.arg)
        elif isinstance(node, ast.alias):
            words.update(node.name.split("."))
        elif isinstance(node, ast.ImportFrom) and node.module:
            words.update(node.module.split("."))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            words.update(_WORD.findall(node.value))
    return words


def test_core_imports_no_provider_module() -> None:
    """The boundary: the core reads replies, chunks and requests through the registry
    (`_core/wire/formats.py`); it imports no wire format and no adapter."""
    offences = [
        f"{module} imports {target}"
        for module, targets in graph().items()
        if module.startswith("healjson._core")
        for target in targets
        if target.startswith(("healjson._providers", "healjson.adapters"))
    ]
    assert [] == offences


@pytest.mark.parametrize(
    "path", sorted((PACKAGE / "_core").rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_core_names_no_provider_parameter(path: Path) -> None:
    """No `_core` module names a provider's parameter, response field, stream event or SDK
    package: a new wire format is one module of `healjson._providers`, not edits in the core."""
    assert set() == named(path) & PROVIDER_NAMES


def test_the_provider_check_reads_code(tmp_path: Path) -> None:
    """The check sees names in code and in string constants, not in docstrings or comments."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Reads `stop_reason`."""\n'
        "def f(params, reply):  # response_format\n"
        '    """Sets `usage_metadata`."""\n'
        '    key = "max_completion_tokens" if params else "x.finishReason"\n'
        "    return reply.choices, dict(tool_use=1)\n",
        encoding="utf-8",
    )
    assert {"max_completion_tokens", "finishReason", "choices", "tool_use"} <= named(sample)
    assert not {"stop_reason", "response_format", "usage_metadata"} & named(sample)
    assert {"max_completion_tokens", "reasoning_content"} <= named(
        PACKAGE / "_providers" / "openai_chat.py"
    )


# a Batch API result line's shape: OpenAI's output / error lines, Anthropic's result types
BATCH_RESULT_NAMES = frozenset(
    {
        "batch_expired",
        "status_code",
        "response",
        "succeeded",
        "errored",
        "overloaded_error",
        "rate_limit_error",
        "timeout_error",
    }
)


def test_the_batch_result_reader_names_no_line_shape() -> None:
    """The Batch API runner reads a result file generically (bounded lines, a `custom_id`);
    what a line says is its provider's `batch_result` (`Provider.batch`)."""
    reader = PACKAGE / "_batch" / "api" / "result_lines.py"
    assert set() == named(reader) & BATCH_RESULT_NAMES
    shapes = named(PACKAGE / "_providers" / "openai_chat.py")
    shapes |= named(PACKAGE / "_providers" / "anthropic_messages" / "batch_lines.py")
    assert BATCH_RESULT_NAMES - {"status_code"} <= shapes
