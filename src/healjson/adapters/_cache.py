"""A per-client cache of `Healer`s, safe to share between threads and asyncio tasks.

Building a `Healer` synthesises a golden example and runs every contract on it, so the cache
keeps that expensive part per configuration — target, contracts, policy, examples — and treats
the fallback as the cheap part: a call with its own `fallback=` gets a copy of the cached healer
that differs only in the fallback (`Healer.with_fallback`), never a rebuild.

Keys say what makes two configurations the same:

* examples by value (`pydantic_core.to_json`, which is also what the healer validates), so a
  fresh but equal `examples=[{...}]` list per call finds the same healer;
* contracts by identity: they are module-level functions or `@contract` objects in practice,
  and a function has no value to compare (the entry keeps them alive, so ids stay unique);
* the policy and the response model by value when hashable, else by identity; a JSON Schema
  dict by value (its canonical JSON text).

One lock guards the table (lookups, insertion, LRU order and eviction); each entry has its own
lock for the build, so a slow build never blocks hits on other configurations and concurrent
first calls with one configuration build it once. A call with no contracts, examples or
fallback of its own (the common one) is first looked up in a plain dict by (model, policy object),
without the lock: a dict read is atomic, and that table is only ever added to or cleared.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic_core import to_json

from healjson._core.judge.contracts import Contract, check_rule_list
from healjson._core.run.healer import Healer
from healjson._core.run.policy import HealPolicy
from healjson._core.target.json_schema import json_schema_of
from healjson._core.wire.effects import CacheStore

__all__ = ["HealerCache"]

_MAX_HEALERS = 256


class _Entry:
    """One configuration: its healer once built, and the objects its key refers to by id."""

    __slots__ = ("build_lock", "healer", "keep")

    def __init__(self, keep: tuple[Any, ...]) -> None:
        self.build_lock = threading.RLock()  # re-entrant: a contract may call the same client
        self.healer: Healer[Any] | None = None
        self.keep = keep


class HealerCache:
    """Builds each configuration's `Healer` once; evicts the least recently used past 256."""

    def __init__(self, cache: CacheStore | None = None) -> None:
        self.cache = cache  # the client's response cache: every healer it builds uses it
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        # (response_model, id(policy)) -> (policy, healer), for calls without contracts, examples
        # or fallback: hashing a policy (a frozen dataclass) per call costs more than the lookup,
        # and the entry holding the policy keeps its id from being reused
        self._plain: dict[tuple[Any, int], tuple[HealPolicy, Healer[Any]]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(
        self,
        response_model: Any,
        contracts: Iterable[Contract[Any] | Callable[..., Any]],
        policy: HealPolicy,
        fallback: Any,
        examples: Iterable[Any],
    ) -> Healer[Any]:
        """The `Healer` for this configuration (with `fallback`, a cheap copy of it)."""
        plain = fallback is None and contracts == () and examples == ()
        if plain:  # the common call: no per-call extras, one lock-free lookup
            try:
                found = self._plain.get((response_model, id(policy)))
            except TypeError:  # an unhashable target: the general path
                plain = False
            else:
                if found is not None and found[0] is policy:
                    return found[1]
        check_rule_list(contracts)  # one rule alone is refused, saying how to pass it
        rules = tuple(contracts)
        shots = tuple(examples)
        key, keep = _key(response_model, rules, policy, shots)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(keep)
                while len(self._entries) > _MAX_HEALERS:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
        healer = entry.healer
        if healer is None:
            with entry.build_lock:
                healer = entry.healer
                if healer is None:  # a configuration error raises here, and again next time
                    healer = entry.healer = Healer(
                        response_model,
                        contracts=rules,
                        policy=policy,
                        examples=shots,
                        cache=self.cache,
                    )
        if plain:
            with self._lock:
                if len(self._plain) >= _MAX_HEALERS:  # bounded like the table it shortcuts
                    self._plain.clear()
                self._plain[(response_model, id(policy))] = (policy, healer)
        return healer if fallback is None else healer.with_fallback(fallback)


def _key(
    response_model: Any, rules: tuple[Any, ...], policy: HealPolicy, shots: tuple[Any, ...]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The cache key, and the objects it names by id (the entry keeps them alive)."""
    keep: list[Any] = [rules]
    model_key = _hashable_or_id(response_model, keep)
    # a HealPolicy is a frozen dataclass of plain values: hashable, compared by value
    policy_key = policy if type(policy) is HealPolicy else _hashable_or_id(policy, keep)
    examples_key: Any = ()
    if shots:
        try:
            examples_key = ("json", to_json(shots))
        except Exception:  # not plain data (an arbitrary object): the same objects, then
            examples_key = ("id", *map(id, shots))
            keep.append(shots)
    return (model_key, policy_key, examples_key, *map(id, rules)), tuple(keep)


def _hashable_or_id(value: Any, keep: list[Any]) -> Any:
    try:
        hash(value)
    except TypeError:
        if isinstance(value, Mapping):  # a JSON Schema: by value (a fresh dict per call)
            return ("schema", json_schema_of(value).text)
        keep.append(value)
        return ("id", id(value))
    return ("value", value)
