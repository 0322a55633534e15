"""The markers shared by the layers, one family: each a singleton that is not a JSON value.

- `NOTHING`: no value could be recovered from a reply (distinct from JSON null); falsy.
- `MISSING`: a field was not there (distinct from an explicit null); shown as `<missing>`.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["MISSING", "NOTHING"]


class _Nothing:
    """Sentinel: no value could be recovered (distinct from JSON null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOTHING"

    def __bool__(self) -> bool:
        return False


NOTHING: Final = _Nothing()


class _Missing(enum.Enum):
    """Marker for "the field was not there" (distinct from an explicit null)."""

    MISSING = "<missing>"

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing.MISSING
