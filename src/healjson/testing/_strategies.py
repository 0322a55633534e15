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

from pydantic_core import to_json

from healjson._core.contracts import Contract, ContractContext, run_contracts
from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.drive import drive_sync
from healjson._core.messages import make_context
from healjson._core.sentinels import NOTHING
from healjson._core.target import Target, target_for
from healjson._packs import ContractPack

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

from ._corruptions import KINDS, Corruption, corrupted
from ._schema_data import as_instance, from_schema, memo, require_hypothesis, schema_strategies

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
    filtered by the contracts: that works for loose rules but can be slow, or give up with
    hypothesis' `filter_too_much` health check, for tight ones (`total == sum(lines)`); packs
    with such rules should supply a `"valid"` strategy. Contracts see an empty `ContractContext`
    unless `pack.extra["context"]` provides one (messages, a prompt or a mapping).
    """
    require_hypothesis()
    factory = pack.strategies.get("valid")
    return memo("valid", (pack, factory), lambda: _valid(pack, factory))


def _valid(pack: ContractPack, factory: Callable[[], Any] | None) -> SearchStrategy[Any]:
    target = target_for(pack.model)
    if factory is not None:
        return _from_pack(factory, target)
    return from_schema(target).filter(lambda instance: not judge(pack, instance))


def violating(pack: ContractPack, contract: str | Contract[Any]) -> SearchStrategy[Any]:
    """Instances that pass the schema and break exactly `contract` (a name or a `Contract`).

    Uses the pack's strategy for that contract when present. Otherwise the values are built
    constructively from the pack's golden examples: a field the contract declares is replaced
    with a schema-generated value, and a result is kept when that contract, and no other,
    reports a violation — so an arithmetic rule (`total == sum(...)`) is broken by changing
    `total`, not found by luck. Without examples (or declared fields) it falls back to
    `from_schema(model)` filtered the same way. A rule no such value breaks makes hypothesis
    give up (`FailedHealthCheck`); `check_pack` reports that as the rule to supply a strategy
    for (`pack.strategies[name]`). "Breaks" is judged under
    `pack.extra["contexts"][name]` when the pack gives that rule its own request, else under the
    pack-wide context (see `pack_context`). Raises `KeyError` for a contract the pack lacks.
    """
    require_hypothesis()
    rule = _resolve_rule(pack, contract)
    factory = pack.strategies.get(rule.name)
    return memo("violating", (pack, rule, factory), lambda: _violating(pack, rule, factory))


def _violating(
    pack: ContractPack, rule: Contract[Any], factory: Callable[[], Any] | None
) -> SearchStrategy[Any]:
    target = target_for(pack.model)
    if factory is not None:
        return _from_pack(factory, target)

    def breaks_only_this(instance: Any) -> bool:
        found = judge(pack, instance, pack_context(pack, rule.name))
        return bool(found) and all(
            d.rule == rule.name and d.source is Source.CONTRACT for d in found
        )

    mutations = _mutations(pack, rule, target, breaks_only_this)
    if mutations is not None:
        return mutations
    return from_schema(target).filter(breaks_only_this)


def _mutations(
    pack: ContractPack,
    rule: Contract[Any],
    target: Target[Any],
    breaks_only_this: Callable[[Any], bool],
) -> SearchStrategy[Any] | None:
    """Violating values built constructively: a golden example of the pack (valid by the
    pack's own checks) with some of the fields the rule declares replaced by schema-generated
    values, mixed with schema-generated values, kept when that breaks this rule and no other.
    None when the pack has no usable example or the rule names no top-level field of the
    schema (the plain filtering fallback is used then)."""
    from hypothesis import strategies as st

    bases: list[dict[str, Any]] = []
    for example in pack.examples:
        try:
            instance = as_instance(target, example)
            data = target.adapter.dump_python(instance, mode="json", by_alias=True)
        except Exception:  # an example that does not validate: check_pack reports it
            continue
        if isinstance(data, dict):
            bases.append(data)
    schema = target.json_schema
    builder = schema_strategies(target)
    properties = builder.resolve(schema).get("properties")
    heads = dict.fromkeys(_head(field) for field in rule.fields)
    fields = [head for head in heads if isinstance(properties, dict) and head in properties]
    if not bases or not fields:
        return None
    assert isinstance(properties, dict)
    replacement = st.one_of(
        [st.fixed_dictionaries({name: builder.build(properties[name], 1)}) for name in fields]
        + [st.fixed_dictionaries({n: builder.build(properties[n], 1) for n in fields})]
    )  # one field at a time first (the others' rules then stay kept), or all of them

    def rebuilt(base: dict[str, Any], changes: dict[str, Any]) -> Any:
        try:
            return target.adapter.validate_json(to_json({**base, **changes}))
        except Exception:  # the replacement broke the schema
            return NOTHING

    mutated = st.builds(rebuilt, st.sampled_from(bases), replacement)
    candidates = st.one_of(mutated, mutated, mutated, from_schema(target))
    return candidates.filter(lambda i: i is not NOTHING and breaks_only_this(i))


def _head(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


def _from_pack(factory: Callable[[], Any], target: Target[Any]) -> SearchStrategy[Any]:
    strategy: SearchStrategy[Any] = factory()
    return strategy.map(lambda value: as_instance(target, value))
