"""A schema dialect computed once per schema object: the transform a provider's request needs
(Anthropic's, Gemini's), kept for the objects that live on (a target's schema) and shared by
every request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["PerSchema"]


class PerSchema:
    """`transform(schema)` (or the refusal it raises, of type `refusal`) computed once per schema
    object and shared (read it, never change it; the SDK only serializes it). At most 256 kept."""

    def __init__(
        self,
        transform: Callable[[Mapping[str, Any]], dict[str, Any]],
        refusal: type[Exception],
    ) -> None:
        self._transform = transform
        self._refusal = refusal
        self._seen: dict[int, tuple[Any, Any]] = {}  # id(schema) -> (schema, dialect or refusal)

    def __call__(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        found = self._seen.get(id(schema))
        if found is None or found[0] is not schema:
            try:
                result: Any = self._transform(schema)
            except self._refusal as exc:
                result = exc
            if len(self._seen) >= 256:
                self._seen.clear()
            found = self._seen[id(schema)] = (schema, result)  # the schema kept: its id stays
        if isinstance(found[1], self._refusal):
            raise found[1]
        return found[1]  # type: ignore[no-any-return]
