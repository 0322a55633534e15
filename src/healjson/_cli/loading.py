"""Import an object named on the command line: `pkg.mod:Attr` or `path/to/file.py:Attr`."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["SpecError", "load_object"]


class SpecError(ValueError):
    """A `module:attribute` or `file.py:attribute` spec that does not name an object."""


def load_object(spec: str) -> Any:
    """The object `spec` names: `pkg.mod:Attr`, `pkg.mod.Attr` or `path/to/file.py:Attr`.

    `Attr` may be dotted (`Outer.Inner`). Modules are imported with the current directory on
    `sys.path`, as `python -m` would. Every failure raises `SpecError` with the reason.
    """
    text = spec.strip()
    if not text:
        raise SpecError("empty spec: use pkg.module:Name or path/to/file.py:Name")
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
    except Exception as exc:
        raise SpecError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") from exc
    return _attribute(module, attribute, f"module {module_name!r}")


def _from_file(text: str) -> Any:
    from healjson._packs import _load_file

    path_text, _, attribute = text.rpartition(":") if ".py:" in text else (text, "", "")
    if not attribute:
        raise SpecError(f"{text!r} names no attribute: use {text}:Name")
    path = Path(path_text)
    if not path.is_file():
        raise SpecError(f"no Python file at {path_text} (resolved to {path.resolve()})")
    try:
        module = _load_file(path)
    except Exception as exc:
        raise SpecError(f"importing {path_text} raised {type(exc).__name__}: {exc}") from exc
    return _attribute(module, attribute, f"file {path_text}")


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
