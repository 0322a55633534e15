"""Hypothesis strategies for contract packs: valid instances and rule breakers.

- `valid(pack)`: instances that pass the schema and every contract.
- `violating(pack, contract)`: instances that pass the schema and break exactly that contract.
- `from_schema(model)` (`_schema_data`): instances built from the model's JSON schema alone.
- `corrupted(value)` (`_corruptions`): the value rendered the way language models break JSON.

Hypothesis is imported when a strategy is built, never when this module is imported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

from ._corruptions import KINDS, Corruption, corrupted
from ._internals import (
    NOTHING,
    Contract,
    ContractContext,
    ContractPack,
    Diagnostic,
    Source,
    Target,
    drive_sync,
    judge_value,
    make_context,
    target_for,
)
from ._mutations import mutations, repairs, variations
from ._schema_data import as_instance, from_schema, memo, require_hypothesis, small_instances

_SCHEMA_SHARE = 4  # one candidate of `violating` in this many is drawn from the schema alone
_EXAMPLE_SHARE = 2  # one candidate of `valid` in this many starts from the schema, with examples

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
    """Every diagnostic the pack's contracts give `instance` (async contracts are awaited),
    judged as a run judges it (`judge_value`: a contract that changes the value it checks is
    a `contract_error`)."""
    context = pack_context(pack) if ctx is None else ctx
    target = target_for(pack.model)
    groups = drive_sync(judge_value(target, pack.contracts, instance, context, each=True))
    return [diagnostic for group in groups for diagnostic in group]


def _resolve_rule(pack: ContractPack, contract: str | Contract[Any]) -> Contract[Any]:
    name = contract if isinstance(contract, str) else contract.name
    return pack.contract(name)


# --- what a search met ----------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """What the candidates of `valid(pack)` or `violating(pack, rule)` did, counted while they
    are drawn, so that `check_pack` can say why a strategy gave up: `judged` candidates, of
    which `kept` were kept; `rejected` counts each rule that rejected a candidate `valid`
    dropped. For `violating`, of the candidates its search made by changing a value that
    passes every rule: `quiet` broke no rule, and `along` counts each other rule that broke
    together with the rule; `bases` values that pass every rule were asked of `valid`'s draws,
    and `starved` times it had none."""

    judged: int = 0
    kept: int = 0
    quiet: int = 0
    bases: int = 0
    starved: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    along: Counter[str] = field(default_factory=Counter)
    crashes: dict[str, tuple[Diagnostic, Any]] = field(default_factory=dict)  # the first each

    def clear(self) -> None:
        self.judged = self.kept = self.quiet = self.bases = self.starved = 0
        self.rejected.clear()
        self.along.clear()
        self.crashes.clear()

    def saw(self, found: list[Diagnostic], instance: Any) -> None:
        """Remember the first input each contract raised on (it is rejected, not reported)."""
        for diagnostic in found:
            if diagnostic.source is Source.CONTRACT_ERROR and diagnostic.rule is not None:
                self.crashes.setdefault(diagnostic.rule, (diagnostic, instance))


def tally(pack: ContractPack, contract: str | Contract[Any] | None = None) -> Tally:
    """The (shared) tally of `valid(pack)`, or of `violating(pack, contract)`."""
    if contract is None:
        return memo("tally", (pack,), Tally)
    return memo("tally", (pack, _resolve_rule(pack, contract)), Tally)


# --- public strategies ---------------------------------------------------------------------------


def valid(pack: ContractPack) -> SearchStrategy[Any]:
    """Instances of `pack.model` that pass the schema and every contract of the pack.

    Uses `pack.strategies["valid"]()` when the pack supplies it (values that are not instances yet,
    such as dicts, are validated into instances). Otherwise values are derived from the model
    and the golden examples: half of them are a golden example with the fields no contract
    reads drawn afresh and one value a rule reads changed (another item in a list, a bound,
    another enum value, ... — kept when every contract still passes); the others are drawn from
    `from_schema(model)`, a value some contract rejects first repaired where one or two of the
    cheapest changes inside the fields they declare (another enum value, a bound, null, an
    emptied list, a field left out) make every contract pass. A pack without examples whose
    rules are tight (`total == sum(lines)`) may draw few values, or give up with hypothesis'
    `filter_too_much` health check: give it a golden example, or a `"valid"` strategy.
    Contracts see an empty `ContractContext` unless `pack.extra["context"]` provides one
    (messages, a prompt or a mapping), as the pack holds it when a value is drawn. The strategy
    is built once per pack (and `"valid"` function) and shared: call `valid(pack)` wherever it
    reads best, `data.draw(valid(pack))` included.
    """
    require_hypothesis()
    factory = pack.strategies.get("valid")
    if factory is not None:
        return memo("valid", (pack, factory), lambda: _from_pack(factory, target_for(pack.model)))
    candidates = _valid_candidates(pack)
    return memo("valid", (pack, None), lambda: candidates.filter(_something))


def _something(instance: Any) -> bool:
    return instance is not NOTHING


def _valid_candidates(pack: ContractPack) -> SearchStrategy[Any]:
    """`valid`'s draws before the filter: an instance, or NOTHING when a draw found none."""
    return memo("valid_candidates", (pack,), lambda: _derived_valid(pack, small=False))


def _valid_bases(pack: ContractPack) -> SearchStrategy[Any]:
    """`_valid_candidates` with small lists: the values `violating` starts from."""
    return memo("valid_bases", (pack,), lambda: _derived_valid(pack, small=True))


def _derived_valid(pack: ContractPack, *, small: bool) -> SearchStrategy[Any]:
    from hypothesis import strategies as st

    target = target_for(pack.model)
    counts = tally(pack)

    def passes(instance: Any) -> bool:
        return not judge(pack, instance)

    repaired = repairs(pack, target, passes)
    near = variations(pack, target, passes)
    schema_made = small_instances(target) if small else from_schema(target)
    arm = st.integers(0, _EXAMPLE_SHARE - 1)

    def candidate(draw: DrawFn) -> Any:
        if near is not None and draw(arm) < _EXAMPLE_SHARE - 1:
            instance = draw(near)  # (first: hypothesis shrinks towards the examples)
            if instance is not NOTHING:
                counts.judged += 1
                counts.kept += 1
                return instance
        instance = draw(schema_made)
        counts.judged += 1
        found = judge(pack, instance)
        counts.saw(found, instance)
        if not found:
            counts.kept += 1
            return instance
        rules = [d.rule for d in found if d.rule is not None]
        mended = repaired(instance, rules)
        if mended is NOTHING:
            counts.rejected.update(set(rules))
        else:
            counts.kept += 1
        return mended

    return st.composite(candidate)()


def violating(pack: ContractPack, contract: str | Contract[Any]) -> SearchStrategy[Any]:
    """Instances that pass the schema and break exactly `contract` (a name or a `Contract`).

    Uses the pack's strategy for that contract when present. Otherwise the values are built
    constructively from values that pass every rule — the pack's golden examples, and values
    `valid(pack)` draws (every time when the pack has no example, one time in five when it
    has): one or two values inside the fields the contract declares are changed (a field, an
    item of a list, a property of an item: to a bound, another enum value, null, the value of
    the neighbouring item, an emptied, shortened, repeated-item or reversed list, or a fresh
    value of the schema) while the fields no contract declares are drawn afresh, and a result
    is kept when that contract, and no other, reports a violation; so an arithmetic rule
    (`total == sum(...)`) is broken by changing `total`, "a paid invoice lists a line" by
    dropping the lines and "titles are unique" by giving an item its neighbour's title, not
    found by luck (see `_mutations` and `_sites`). One candidate in four is drawn from
    `from_schema(model)` instead. A rule no such value breaks alone (for instance one whose
    fields another, tight rule also reads) makes hypothesis give up (`FailedHealthCheck`);
    `check_pack` reports that with the rules that broke along with it, as the rule to supply a
    strategy for (`pack.strategies[name]`).
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
    counts = tally(pack, rule)

    def judged_alone(instance: Any, searched: bool) -> bool:
        """Whether `instance` breaks this rule and no other (counted as a `searched` one)."""
        found = judge(pack, instance, pack_context(pack, rule.name))
        counts.judged += 1
        counts.saw(found, instance)
        others = {d.rule for d in found if d.rule != rule.name and d.rule is not None}
        mine = any(d.rule == rule.name and d.source is Source.CONTRACT for d in found)
        alone = mine and not others and all(d.source is Source.CONTRACT for d in found)
        if alone:
            counts.kept += 1
        elif not searched:
            pass
        elif not found:
            counts.quiet += 1
        elif mine:
            counts.along.update(others)
        return alone

    def breaks_only_this(instance: Any) -> bool:
        return judged_alone(instance, searched=True)

    def as_base(instance: Any) -> Any:
        counts.bases += 1
        if instance is NOTHING:
            counts.starved += 1
            return NOTHING
        return target.adapter.dump_python(instance, mode="json", by_alias=True)

    factory_valid = pack.strategies.get("valid")
    valid_made = valid(pack) if factory_valid is not None else _valid_bases(pack)
    bases = valid_made.map(as_base)
    schema_made = from_schema(target)
    built = mutations(pack, rule, target, breaks_only_this, drawn_bases=bases)
    if built is None:
        return schema_made.filter(breaks_only_this)  # the schema's values are all there is
    arm = st.integers(0, _SCHEMA_SHARE - 1)

    def candidate(draw: DrawFn) -> Any:
        if draw(arm) < _SCHEMA_SHARE - 1:  # values that pass, changed where the rule reads them
            return draw(built)  # (first: hypothesis starts from, and shrinks towards, 0)
        instance = draw(schema_made)
        return instance if judged_alone(instance, searched=False) else NOTHING

    # one filter over both kinds: each of its tries picks the kind afresh
    return st.composite(candidate)().filter(_something)


def _from_pack(factory: Callable[[], Any], target: Target[Any]) -> SearchStrategy[Any]:
    strategy: SearchStrategy[Any] = factory()
    return strategy.map(lambda value: as_instance(target, value))
