"""Markers shared by the layers."""

from __future__ import annotations

from typing import Final

__all__ = ["NOTHING"]


class _Nothing:
    """Sentinel: no value could be recovered (distinct from JSON null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOTHING"

    def __bool__(self) -> bool:
        return False


NOTHING: Final = _Nothing()
