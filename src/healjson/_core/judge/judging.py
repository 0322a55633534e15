"""L2 on one schema-valid value: every contract run on it, as a run judges a reply's.

`judge_value` is the one judging of a value before `on_fail` policies are settled: the
engine's (`check.evaluate`) and the testing kit's (`healjson.testing.check_pack` and its
strategies), so that the kit reports any verdict a run would give. Besides the contracts' own
diagnostics, it gives a `contract_error` when a contract changed the value it was judging (a
contract only reads the value: one that normalises it in place would hand the caller a value
no rule, nor the schema, accepted). The value is compared by its `snapshot` (every field's own
value: an excluded one, one a serializer rewrites, a secret), not by its JSON dump, which
cannot see those. A run compares the value once, after every contract; the kit compares it
after each (`each=True`), to name the contract in its report.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from typing import Any

from healjson._core.diagnostic import ROOT, Diagnostic, Source
from healjson._core.parse.align import answer_key
from healjson._core.target.target import Target
from healjson._core.wire.effects import AwaitAll

from .contracts import Contract, ContractContext, run_contract_groups
from .snapshot import same_snapshot, snapshot

__all__ = ["CHANGED_BY", "judge_value"]

CHANGED_BY = "changed_by"
"""The key of a changed-value diagnostic's `extra`: the names of the contract(s) that did it."""


def judge_value(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    value: Any,
    ctx: ContractContext,
    *,
    timeout_s: float | None = None,
    each: bool = False,
) -> Generator[AwaitAll, list[Any], list[list[Diagnostic]]]:
    """Every contract on `value` (a valid `target`): each one's diagnostics in its own list, in
    declaration order (`run_contract_groups`, each contract limited to `timeout_s`).

    A contract that changed the value gets a `contract_error`: the value's `snapshot` (every
    field's real value, excluded, serialized and secret ones too) is compared before the
    contracts run and after (`same_snapshot`). Its constraint names the contract(s) and says
    that contracts must not change the value they check, its value is the value as it was
    before the change (its JSON dump, `answer_key`: a secret stays masked), and its
    `extra[CHANGED_BY]` holds the name(s). By default (a run) the snapshot is compared once,
    after every contract ran, and the diagnostic names the one contract, or all of them when
    several ran (it closes the last one's list). With `each` (the testing kit, which reports
    the rule), it is compared after each contract (after the async ones, which run together,
    once), and the diagnostic, in the list of the contract that did it, names that contract
    alone."""
    if not contracts:
        return []
    last = [(snapshot(value), answer_key(target, value))]

    def watch(ran: Sequence[Contract[Any]]) -> Diagnostic | None:
        now = snapshot(value)
        if same_snapshot(now, last[0][0]):
            return None
        before = last[0][1]
        last[0] = (now, answer_key(target, value) if each else before)
        return _changed(ran, before)

    groups = yield from run_contract_groups(
        contracts, value, ctx, timeout_s=timeout_s, watch=watch if each else None
    )
    if not each:
        changed = watch(contracts)
        if changed is not None:
            groups[-1].append(changed)
    return groups


def _changed(rules: Sequence[Contract[Any]], before: bytes) -> Diagnostic:
    """A contract (one of `rules`, when several ran at once) changed the value it checks."""
    names = ", ".join(f"`{rule.name}`" for rule in rules)
    who = (
        f"contract {names} changed the value it checks"
        if len(rules) == 1
        else f"one of the contracts {names} changed the value they check"
    )
    try:
        shown: Any = json.loads(before)
    except ValueError:  # a value with no JSON dump: its repr was compared
        shown = before.decode("utf-8", "replace")
    return Diagnostic(
        ROOT,
        shown,
        f"{who}: contracts must not change the value they check",
        "This is a bug in a contract, not in the model's answer: contracts must only read the "
        "value (copy it before changing anything).",
        Source.CONTRACT_ERROR,
        fields=rules[0].fields if len(rules) == 1 else (),
        rule=rules[0].name if len(rules) == 1 else None,
        extra={CHANGED_BY: tuple(rule.name for rule in rules)},
    )
