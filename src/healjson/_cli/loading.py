"""Load what the command line names: a target type, a contract pack, and the `Setup` they make.

A target is `pkg.mod:Attr`, `pkg.mod.Attr`, `path/to/file.py:Attr` or a JSON Schema file
`path/to/schema.json` (`load_object`); a pack is
whatever `healjson.load_contracts` accepts. `load_pack`, `load_target` and `load_setup` turn a
spec that names nothing into a usage error on the option that gave it.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from healjson._packs import ContractPack

__all__ = [
    "Setup",
    "SpecError",
    "load_object",
    "load_pack",
    "load_setup",
    "load_target",
    "relative_spec",
]


class SpecError(ValueError):
    """A `module:attribute` or `file.py:attribute` spec that does not name an object."""


@dataclass(frozen=True, slots=True)
class Setup:
    """What a request is checked against: the target type, contracts and golden examples."""

    target: Any
    contracts: tuple[Any, ...] = ()
    examples: tuple[Any, ...] = ()

    @classmethod
    def of(cls, target: Any, pack: ContractPack | None) -> Setup:
        """`target` with the pack's contracts and examples (none without a pack)."""
        if pack is None:
            return cls(target)
        return cls(target, tuple(pack.contracts), tuple(pack.examples))


def load_setup(contracts: str | None, target: str | None, option: str = "'--model'") -> Setup:
    """The `--contracts` pack and the target type (`option` names the target's option; without
    one the pack's model is the target)."""
    pack = load_pack(contracts)
    return Setup.of(load_target(target, pack, option), pack)


def load_pack(spec: str | None) -> ContractPack | None:
    """The contract pack `spec` names (None for no spec); a failure is a `--contracts` error."""
    from healjson._packs import load_contracts

    if spec is None:
        return None
    try:
        return load_contracts(spec)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # LookupError, ImportError, the pack's own error, SystemExit
        said = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, SystemExit) or spec not in said:
            said = f"loading {spec} {_raised(exc)}"
        raise typer.BadParameter(said, param_hint="'--contracts'") from exc


def load_target(spec: str | None, pack: ContractPack | None, option: str = "'--model'") -> Any:
    """The type (or JSON Schema) `spec` names, or the pack's model when there is no spec; a
    failure, or an object healjson cannot validate against (a module, a function), is an error
    on `option`."""
    if spec is None:
        if pack is None:
            raise typer.BadParameter(
                "name the target type (pkg.mod:Model or file.py:Model), or give --contracts "
                "with a pack whose model is the default",
                param_hint=option,
            )
        return pack.model
    try:
        found = load_object(spec)
    except SpecError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from exc
    from healjson._core.target.target import target_for

    try:
        target_for(found)  # what healjson cannot validate against is a usage error here
    except (TypeError, ValueError) as exc:
        raise typer.BadParameter(f"{spec}: {exc}", param_hint=option) from exc
    return found


def load_object(spec: str) -> Any:
    """The object `spec` names: `pkg.mod:Attr`, `pkg.mod.Attr` or `path/to/file.py:Attr`; or
    the JSON Schema (a dict) in `path/to/schema.json`.

    `Attr` may be dotted (`Outer.Inner`). Modules are imported with the current directory on
    `sys.path`, as `python -m` would. Every failure raises `SpecError` with the reason: a
    module that raises anything while importing (`sys.exit()` included) names nothing.
    """
    text = spec.strip()
    if not text:
        raise SpecError("empty spec: use pkg.module:Name or path/to/file.py:Name")
    if text.endswith(".json"):
        return _schema_file(text)
    if text.endswith(".py") or ".py:" in text:
        return _from_file(text)
    module_name, colon, attribute = text.partition(":")
    if not colon:
        module_name, _, attribute = text.rpartition(".")
    if not module_name or not attribute:
        raise SpecError(f"{spec!r} names no attribute: use pkg.module:Name or file.py:Name")
    _current_directory_on_path()
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(f"cannot import module {module_name!r}: {exc}") from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: a module that exits names nothing
        raise SpecError(f"importing {module_name!r} {_raised(exc)}") from exc
    return _attribute(module, attribute, f"module {module_name!r}")


def relative_spec(spec: Any, folder: Path) -> str | None:
    """A `file.py[:Attr]` or `schema.json` spec made relative to `folder` when the file is there
    (a scenario file's own folder); any other spec as text, None as None."""
    if spec is None:
        return None
    text = str(spec)
    file, colon, rest = text.partition(":") if ".py:" in text else (text, "", "")
    local = file.endswith((".py", ".json")) and not Path(file).is_absolute()
    if local and (folder / file).is_file():
        return str(folder / file) + colon + rest
    return text


def _schema_file(text: str) -> dict[str, Any]:
    """The JSON Schema in a `.json` file, checked (a target healjson can validate against)."""
    import json

    from healjson._core.target.target import target_for

    path = Path(text)
    if not path.is_file():
        raise SpecError(f"no JSON Schema file at {text} (resolved to {path.resolve()})")
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError(f"cannot read {text} as JSON: {exc}") from exc
    if not isinstance(schema, dict):
        raise SpecError(f"{text} holds {type(schema).__name__}, not a JSON Schema object")
    try:
        target_for(schema)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"{text}: {exc}") from exc
    return schema


def _from_file(text: str) -> Any:
    from healjson._packs import load_file

    path_text, _, attribute = text.rpartition(":") if ".py:" in text else (text, "", "")
    if not attribute:
        raise SpecError(f"{text!r} names no attribute: use {text}:Name")
    path = Path(path_text)
    if not path.is_file():
        raise SpecError(f"no Python file at {path_text} (resolved to {path.resolve()})")
    try:
        module = load_file(path)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: a file that exits names nothing
        raise SpecError(f"importing {path_text} {_raised(exc)}") from exc
    return _attribute(module, attribute, f"file {path_text}")


def _raised(exc: BaseException) -> str:
    """What an import did instead of finishing: `called sys.exit(0)` or `raised Name: text`."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    return f"raised {type(exc).__name__}: {exc}"


def _attribute(module: Any, dotted: str, where: str) -> Any:
    value = module
    for part in dotted.split("."):
        if not part.isidentifier() or not hasattr(value, part):
            raise SpecError(f"{where} has no attribute {dotted!r}")
        value = getattr(value, part)
    return value


def _current_directory_on_path() -> None:
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
