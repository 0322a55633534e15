"""The one message for an optional SDK that is not installed: which package, which extra."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["missing_extra", "require_extra"]


def missing_extra(package: str, extra: str) -> str:
    """`this needs the <package> package: pip install 'healjson[<extra>]'`."""
    return f"this needs the {package} package: pip install 'healjson[{extra}]'"


def require_extra(module: str, extra: str, package: str | None = None) -> ModuleType:
    """Import `module`, or raise `ImportError` with `missing_extra`'s message (`package`: the
    distribution's name when it differs from the module's)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(missing_extra(package or module.partition(".")[0], extra)) from exc
