"""A per-client cache of `Healer`s, keyed by call configuration (a `Healer` synthesises a golden
example when built, so rebuilding one per call would waste time on the hot path)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from healjson._contracts import Contract
from healjson._healer import Healer
from healjson._policy import HealPolicy

__all__ = ["HealerCache"]

_MAX_HEALERS = 256


class HealerCache:
    """Builds each configuration's `Healer` once; evicts the oldest past 256 entries."""

    def __init__(self) -> None:
        self._healers: dict[tuple[Any, ...], tuple[Healer[Any], tuple[Any, ...]]] = {}

    def get(
        self,
        response_model: Any,
        contracts: Iterable[Contract | Callable[..., Any]],
        policy: HealPolicy,
        fallback: Any,
        examples: Iterable[Any],
    ) -> Healer[Any]:
        """The `Healer` for this configuration."""
        rules = tuple(contracts)
        shots = tuple(examples)
        key = (response_model, *map(id, rules), policy, id(fallback), *map(id, shots))
        cached = self._healers.get(key)
        if cached is None:
            built = Healer(
                response_model, contracts=rules, policy=policy, fallback=fallback, examples=shots
            )
            if len(self._healers) >= _MAX_HEALERS:
                self._healers.pop(next(iter(self._healers)))
            # keep the keyed objects alive so that their ids cannot be reused by other objects
            cached = self._healers[key] = (built, (rules, fallback, shots))
        return cached[0]
