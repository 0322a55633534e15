"""The checks `check_pack` makes on one instance, each raising `Problem` (or `Crash`).

They run inside hypothesis properties, so the input a problem quotes is the shrunk one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_core import to_json

from ._corruptions import Corruption, model_data
from ._internals import (
    MISSING,
    NOTHING,
    ROOT,
    Contract,
    ContractContext,
    Diagnostic,
    Reason,
    Source,
    Target,
    correct,
    drive_sync,
    judge_value,
    set_logger,
    validate,
    value_at,
)
from ._pack_problems import Crash, Problem, explain, list_rules, show, show_text
from ._written import same_where_written

__all__ = [
    "check_fix",
    "check_recovery",
    "check_valid",
    "check_violation",
    "judged",
    "require_schema_valid",
]

_SUPPLIED_VALID = "make strategies['valid'] draw values that pass the schema and every rule"
_UNSTABLE = (
    "the kit kept this value because the rules judged it otherwise a moment before: make each "
    "rule depend on its value and context only (not on time, randomness or state)"
)
_ROUND_TRIP = (
    "the model does not accept what it dumps (L1 reads the JSON a model writes): make its "
    "validators and serializers agree"
)


def judged(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    instance: Any,
    ctx: ContractContext,
    where: str,
) -> list[Diagnostic]:
    """The contracts' diagnostics on `instance`, judged as a run judges it (`judge_value`);
    `Crash` when one of them is a `contract_error`: it raised, returned what is not a verdict,
    or changed the value it checks."""
    groups = drive_sync(judge_value(target, contracts, instance, ctx, each=True))
    found = [diagnostic for group in groups for diagnostic in group]
    crashed = [d for d in found if d.source is Source.CONTRACT_ERROR]
    if crashed:
        raise Crash(crashed[0], instance, where)
    return found


def require_schema_valid(target: Target[Any], instance: Any, where: str, fix: str) -> None:
    """The instance survives the round trip L1 makes: the JSON a model writes for it
    (`model_data`: every field, secrets by their value) validated again."""
    try:
        target.adapter.validate_json(to_json(model_data(target, instance)))
    except Exception as exc:
        raise Problem(f"{where}, which is not a valid {target.name}: {explain(exc)}", fix) from None


def check_valid(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    instance: Any,
    ctx: ContractContext,
    *,
    supplied: bool,
) -> None:
    """A value `valid(pack)` drew (from the pack's own strategy when `supplied`) passes the
    schema and every rule."""
    where = f"valid(pack) produced {show(instance)}"
    require_schema_valid(target, instance, where, _SUPPLIED_VALID if supplied else _ROUND_TRIP)
    found = judged(target, contracts, instance, ctx, "a value valid(pack) drew,")
    if found:
        fix = _SUPPLIED_VALID if supplied else _UNSTABLE
        raise Problem(f"{where}, which breaks {list_rules(found)}", fix)


def check_violation(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    rule: Contract[Any],
    instance: Any,
    ctx: ContractContext,
    *,
    supplied: bool,
) -> None:
    """A value `violating(pack, rule)` drew (from the pack's own strategy when `supplied`)
    passes the schema, breaks `rule` and no other, with well-formed diagnostics."""
    where = f"violating(pack, {rule.name!r}) produced {show(instance)}"
    fix = (
        f"make strategies[{rule.name!r}] draw values that pass the schema and break "
        f"`{rule.name}` and no other rule"
        if supplied
        else _UNSTABLE
    )
    require_schema_valid(target, instance, where, fix if supplied else _ROUND_TRIP)
    found = judged(
        target, contracts, instance, ctx, f"a value violating(pack, {rule.name!r}) drew,"
    )
    mine = [d for d in found if d.rule == rule.name]
    others = [d for d in found if d.rule != rule.name]
    if not mine:
        broken = f"; it breaks {list_rules(others)} instead" if others else ""
        raise Problem(f"{where}, which does not break `{rule.name}`{broken}", fix)
    if others:
        raise Problem(f"{where}, which also breaks {list_rules(others)}", fix)
    for diagnostic in mine:
        issue = malformed(target, instance, diagnostic)
        if issue:
            message, fix = issue
            raise Problem(
                f"contract `{rule.name}` gave a malformed diagnostic on {show(instance)}: "
                f"{message} (diagnostic: {diagnostic.describe(max_value_chars=80)})",
                fix,
            )


def malformed(target: Target[Any], instance: Any, diagnostic: Diagnostic) -> tuple[str, str] | None:
    """What is wrong with a contract's diagnostic, and how to fix it; None when nothing is."""
    if diagnostic.path != ROOT and value_at(instance, diagnostic.path) is MISSING:
        return (
            f"its path {diagnostic.path!r} does not exist in the {target.name} instance",
            "give Violation(path=...) a path that exists in the value (such as "
            "`lines[0].qty`, with the model's field names), or leave it out",
        )
    if not diagnostic.constraint.strip():
        return (
            "its constraint is empty",
            "give the Violation a message saying what the rule requires",
        )
    if not diagnostic.prescription.strip():
        return (
            "its prescription is empty",
            "give Violation(prescription=...) a text, or leave it out: healjson writes one",
        )
    names = target.field_names
    for name in diagnostic.fields:
        head = name.split(".", 1)[0].split("[", 1)[0]
        if names is not None and head not in names:
            return (
                f"it names field {name!r}, which {target.name} does not have",
                "name only the model's fields in Violation(fields=...) and @contract(fields=...)",
            )
    if len(diagnostic.fields) > 1:
        unnamed = [name for name in diagnostic.fields if name not in diagnostic.prescription]
        if unnamed:
            return (
                f"its prescription does not name the field(s) {unnamed} of this multi-field rule",
                "name every field the rule spans in its prescription (a repair may change any "
                "of them), or leave prescription out: healjson writes one that does",
            )
    return None


def check_fix(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    rule: Contract[Any],
    instance: Any,
    ctx: ContractContext,
) -> None:
    """A rule declared `on_fail="fix"`: its fix, on a value the rule rejects (and no other rule
    of the pack does), gives a value that passes the schema and every rule of the pack but
    `"warn"` ones (the engine re-asks the model otherwise), judged by the very function a run's
    `settle` judges it by (`policies.correct`, with every contract of the pack): the fix's own
    value checked as it stands, never dumped and validated again (a validator need not be
    idempotent), and every rule run on it as a run judges (one that changes it is reported)."""
    assert rule.fix is not None
    where = f"the fix of `{rule.name}` on {show(instance)}"
    fix = (
        f"make the fix of `{rule.name}` return a value that passes the schema and every rule of "
        'the pack, or declare the rule on_fail="reask"'
    )
    rules = tuple(contracts) if any(r.name == rule.name for r in contracts) else (*contracts, rule)
    groups = drive_sync(judge_value(target, rules, instance, ctx))
    made = drive_sync(correct(target, rules, groups, instance, ctx))
    if made.error:
        problem = made.error[0]
        if problem.rule == rule.name and "the fix of" in problem.constraint:
            text = problem.constraint.replace(f"the fix of contract `{rule.name}`", where, 1)
        else:  # a rule raised on the fixed value, or changed it
            text = f"{where} gave {show(made.value)}, on which {problem.constraint}"
        raise Problem(text, fix)
    if made.unfit is not None:
        gave = "data that" if made.value is NOTHING else show(made.value) + ", which"
        raise Problem(f"{where} gave {gave} fails the schema: {made.unfit}", fix)
    refused = [
        d
        for other, group in zip(made.contracts, made.groups, strict=True)
        if other.on_fail != "warn"
        for d in group
    ]
    still = [d for d in refused if d.rule == rule.name]
    if still:
        raise Problem(
            f"{where} gave {show(made.value)}, which still breaks `{rule.name}`: "
            f"{still[0].constraint}",
            fix,
        )
    if refused:
        raise Problem(
            f"{where} gave {show(made.value)}, which breaks {list_rules(refused)}: a run "
            f"refuses the fix of `{rule.name}` there and asks the model again",
            fix,
        )


def check_recovery(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    ctx: ContractContext,
    instance: Any,
    corruption: Corruption,
) -> bool:
    """L1 recovers a recoverable rendering of a valid instance to that instance, and refuses a
    truncated one as `token_truncated`; True for a recovered rendering."""
    names = target.field_names  # a rule naming what the model lacks is reported on its own
    if names is not None:
        contracts = [r for r in contracts if r.item or all(_head(f) in names for f in r.fields)]
    with set_logger(_QUIET):  # a refused truncation is what is checked, not news for the log
        outcome = validate(
            corruption.text,
            target.type_,
            contracts=contracts,
            context=ctx,
            finish_reason=corruption.finish_reason,
        )
    shown = (
        f"{'+'.join(corruption.kinds)} rendering of {show(instance)}\n"
        f"reply (finish_reason={corruption.finish_reason!r}): {show_text(corruption.text)}"
    )
    report = "this is a bug in healjson's L1, not in the pack: please report it with this reply"
    if not corruption.recoverable:
        if outcome.ok:
            raise Problem(
                f"L1 accepted a truncated reply, {shown}\ngot {show(outcome.value)}", report
            )
        if outcome.reason is not Reason.TOKEN_TRUNCATED:
            raise Problem(
                f"L1 did not report truncation ({outcome.reason}) for the {shown}"
                f"{_first_error(outcome.errors)}",
                report,
            )
        return False
    if not outcome.ok:
        _refused_by_unsteady_rule(target, instance, outcome, shown)
        raise Problem(
            f"L1 did not recover the {shown}\ndegraded with {outcome.reason}"
            f"{_first_error(outcome.errors)}",
            report,
        )
    if outcome.value != instance and not _same_where_written(target, instance, outcome.value):
        raise Problem(
            f"L1 recovered a different value from the {shown}\ngot {show(outcome.value)}", report
        )
    return True


def _refused_by_unsteady_rule(target: Target[Any], instance: Any, outcome: Any, shown: str) -> None:
    """A rule that refused (or raised on) the value L1 read from a rendering of `instance`,
    when that value is `instance`'s own data, judged the same value otherwise than a moment
    before (every rule passed `instance`): raise that, the pack's to fix, not a bug in L1."""
    names = [
        d.rule
        for d in outcome.errors
        if d.source in (Source.CONTRACT, Source.CONTRACT_ERROR) and d.rule
    ]
    if not names:
        return
    try:
        same = same_where_written(model_data(target, instance), outcome.partial)
    except Exception:  # a value the kit cannot dump: L1's part is not ruled out
        return
    if same:
        rules = " and ".join(f"`{name}`" for name in dict.fromkeys(names))
        raise Problem(
            f"contract {rules} is non-deterministic: it passed {show(instance)}, then refused "
            f"the same value, which L1 read unchanged from the {shown}\n"
            f"degraded with {outcome.reason}{_first_error(outcome.errors)}",
            f"make {rules} depend on its value and context only (not on time, randomness, a "
            "counter or other state that changes between calls): this is the pack's to fix, "
            "not a problem in healjson's L1",
            unsteady=tuple(dict.fromkeys(names)),
        )


def _same_where_written(target: Target[Any], instance: Any, got: Any) -> bool:
    """`got` equals `instance` in all that was written of it (a field whose real value cannot
    be written as JSON, such as a secret JSON cannot hold, is compared as written)."""
    try:
        return same_where_written(model_data(target, instance), model_data(target, got))
    except Exception:  # a value the kit cannot dump: compared as it stands only
        return False


class _Quiet:
    """A logger for healjson's events that keeps none of them."""

    def debug(self, event: str, **fields: Any) -> None:
        pass

    def info(self, event: str, **fields: Any) -> None:
        pass

    def warning(self, event: str, **fields: Any) -> None:
        pass


_QUIET = _Quiet()


def _first_error(errors: tuple[Diagnostic, ...]) -> str:
    return f": {errors[0].describe(max_value_chars=120)}" if errors else ""


def _head(name: str) -> str:
    """A field path's first name (`lines[*].sku` -> `lines`)."""
    return name.split(".", 1)[0].split("[", 1)[0]
