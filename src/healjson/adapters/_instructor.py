"""Placeholder: the instructor adapter."""

from __future__ import annotations

from typing import Any

__all__ = ["InstructorClient"]


class InstructorClient:
    """Not yet available."""

    def __init__(self, client: Any, **options: Any) -> None:
        raise NotImplementedError("instructor clients are not supported yet")
