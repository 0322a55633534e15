"""Hypothesis strategies for contract packs: valid instances and rule breakers.

- `valid(pack)`: instances that pass the schema and every contract.
- `violating(pack, contract)`: instances that pass the schema and break exactly that contract.
- `from_schema(model)` (`_schema_data`): instances built from the model's JSON schema alone.
- `corrupted(value)` (`_corruptions`): the value rendered the way language models break JSON.

Hypothesis is imported when a strategy is built, never when this module is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.judge.contracts import Contract, ContractContext, run_contracts
from healjson._core.run.drive import drive_sync
from healjson._core.run.messages import make_context
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target, target_for
from healjson._packs import ContractPack

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

from ._corruptions import KINDS, Corruption, corrupted
from ._mutations import mutations, repairs
from ._schema_data import as_instance, from_schema, memo, require_hypothesis

_SCHEMA_SHARE = 4  # one candidate of `violating` in this many is drawn from the schema alone

__all__ = [
    "KINDS",
    "Corruption",
    "corrupted",
    "from_schema",
    "valid",
    "violating",
]


# --- contracts -----------------------------------------------------------------------------------


def pack_context(pack: ContractPack, rule: str | None = None) -> ContractContext:
    """The context contracts see: `pack.extra["contexts"][rule]` when judging instances that
    break `rule` and the pack gives one (a rule that reads the request is broken only under its
    own request), else `pack.extra["context"]`, else an empty `ContractContext`. Each may be a
    `ContractContext`, a prompt string, a list of messages or a mapping of extra data."""
    per_rule = pack.extra.get("contexts")
    if rule is not None and isinstance(per_rule, Mapping) and rule in per_rule:
        return make_context(per_rule[rule])
    return make_context(pack.extra.get("context"))


def judge(
    pack: ContractPack, instance: Any, ctx: ContractContext | None = None
) -> list[Diagnostic]:
    """Every diagnostic the pack's contracts give `instance` (async contracts are awaited)."""
    context = pack_context(pack) if ctx is None else ctx
    return drive_sync(run_contracts(pack.contracts, instance, context))


def _resolve_rule(pack: ContractPack, contract: str | Contract[Any]) -> Contract[Any]:
    name = contract if isinstance(contract, str) else contract.name
    return pack.contract(name)


# --- public strategies ---------------------------------------------------------------------------


def valid(pack: ContractPack) -> SearchStrategy[Any]:
    """Instances of `pack.model` that pass the schema and every contract of the pack.

    Uses `pack.strategies["valid"]()` when the pack supplies it (values that are not instances yet,
    such as dicts, are validated into instances). Otherwise it falls back to `from_schema(model)`
    filtered by the contracts, a value that breaks some first repaired where one or two of the
    cheapest changes inside the fields they declare (another enum value, a bound, null, an
    emptied list, a field left out) make every contract pass: that works for loose rules but
    can be slow, give up with hypothesis' `filter_too_much` health check, or draw only a narrow
    set of values for tight ones (`total == sum(lines)`); packs with such rules should supply a
    `"valid"` strategy. Contracts see an empty `ContractContext`
    unless `pack.extra["context"]` provides one (messages, a prompt or a mapping), as the pack
    holds it when a value is drawn. The strategy is built once per pack (and `"valid"` function)
    and shared: call `valid(pack)` wherever it reads best, `data.draw(valid(pack))` included.
    """
    require_hypothesis()
    factory = pack.strategies.get("valid")
    return memo("valid", (pack, factory), lambda: _valid(pack, factory))


def _valid(pack: ContractPack, factory: Callable[[], Any] | None) -> SearchStrategy[Any]:
    target = target_for(pack.model)
    if factory is not None:
        return _from_pack(factory, target)

    def passes(instance: Any) -> bool:
        return not judge(pack, instance)

    repaired = repairs(pack, target, passes)

    def kept(instance: Any) -> Any:
        found = judge(pack, instance)
        if not found:
            return instance
        return repaired(instance, [d.rule for d in found if d.rule is not None])

    return from_schema(target).map(kept).filter(lambda instance: instance is not NOTHING)


def violating(pack: ContractPack, contract: str | Contract[Any]) -> SearchStrategy[Any]:
    """Instances that pass the schema and break exactly `contract` (a name or a `Contract`).

    Uses the pack's strategy for that contract when present. Otherwise the values are built
    constructively from the pack's golden examples: one or two values inside the fields the
    contract declares are changed (a field, an item of a list, a property of an item: to a
    bound, another enum value, null, an emptied list or a fresh value of the schema) while the
    fields no contract declares are drawn afresh, and a result is kept when that contract, and
    no other, reports a violation; so an arithmetic rule (`total == sum(...)`) is broken by
    changing `total`, and "a paid invoice lists a line" by dropping the lines, not found by luck
    (see `_mutations`). One candidate in four is drawn from `from_schema(model)` instead.
    Without examples (or declared fields) it falls back to `from_schema(model)` filtered the
    same way. A rule no such value breaks makes hypothesis give up (`FailedHealthCheck`);
    `check_pack` reports that as the rule to supply a strategy for (`pack.strategies[name]`).
    "Breaks" is judged under `pack.extra["contexts"][name]` when the pack gives that rule its
    own request, else under the pack-wide context (see `pack_context`), as the pack holds them
    when a value is drawn. The strategy is built once per pack and contract and shared.
    Raises `KeyError` for a contract the pack lacks.
    """
    require_hypothesis()
    rule = _resolve_rule(pack, contract)
    factory = pack.strategies.get(rule.name)
    return memo("violating", (pack, rule, factory), lambda: _violating(pack, rule, factory))


def _violating(
    pack: ContractPack, rule: Contract[Any], factory: Callable[[], Any] | None
) -> SearchStrategy[Any]:
    from hypothesis import strategies as st

    target = target_for(pack.model)
    if factory is not None:
        return _from_pack(factory, target)

    def breaks_only_this(instance: Any) -> bool:
        found = judge(pack, instance, pack_context(pack, rule.name))
        return bool(found) and all(
            d.rule == rule.name and d.source is Source.CONTRACT for d in found
        )

    schema_made = from_schema(target)
    built = mutations(pack, rule, target, breaks_only_this)
    if built is None:
        return schema_made.filter(breaks_only_this)
    arm = st.integers(0, _SCHEMA_SHARE - 1)

    def candidate(draw: DrawFn) -> Any:
        if draw(arm) < _SCHEMA_SHARE - 1:  # examples changed where the rule reads them
            return draw(built)  # (first: hypothesis starts from, and shrinks towards, 0)
        instance = draw(schema_made)
        return instance if breaks_only_this(instance) else NOTHING

    # one filter over both kinds: each of its tries picks the kind afresh
    return st.composite(candidate)().filter(lambda instance: instance is not NOTHING)


def _from_pack(factory: Callable[[], Any], target: Target[Any]) -> SearchStrategy[Any]:
    strategy: SearchStrategy[Any] = factory()
    return strategy.map(lambda value: as_instance(target, value))
