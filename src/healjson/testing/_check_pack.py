"""`check_pack`: every property a contract pack should have, checked in one call.

Put `healjson.testing.check_pack(pack)` in a test. It checks the golden examples, the `valid` and
`violating` strategies, that no contract raises on schema-valid input, and that L1 recovers
corrupted renderings of valid instances (and refuses truncated ones). Problems are collected
across all checks and reported together in one `AssertionError`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic_core import to_json

from healjson._core.diagnostic import (
    ROOT,
    Diagnostic,
    Source,
    describe_exception,
    format_path,
    short_repr,
)
from healjson._core.judge.contracts import Contract, ContractContext, run_contracts, value_at
from healjson._core.outcome.outcome import Reason
from healjson._core.run.drive import drive_sync
from healjson._core.run.healer import validate
from healjson._core.sentinels import MISSING
from healjson._core.target.target import Target, target_for
from healjson._packs import ContractPack

from ._corruptions import Corruption, corrupted
from ._schema_data import as_instance, from_schema, require_hypothesis
from ._strategies import judge, pack_context, valid, violating

__all__ = ["PackReport", "check_pack"]

_SHOWN = 240  # characters of an instance or a reply quoted in a problem


@dataclass(frozen=True, slots=True)
class PackReport:
    """What `check_pack` checked, as counts (every check passed when you hold one).

    `examples`: golden examples checked; `valid`: instances from `valid(pack)`; `violating`:
    instances from `violating(pack, name)`, per contract; `schema_inputs`: schema-valid instances
    every contract ran on without raising; `recovered` / `truncated`: corrupted renderings that
    L1 recovered / truncated renderings it refused.
    """

    pack: str
    contracts: int
    examples: int
    valid: int
    violating: Mapping[str, int] = field(default_factory=dict)
    schema_inputs: int = 0
    recovered: int = 0
    truncated: int = 0

    def __str__(self) -> str:
        broken = ", ".join(f"{name}: {count}" for name, count in self.violating.items())
        return (
            f"{self.pack}: {self.contracts} contract(s), {self.examples} golden example(s), "
            f"{self.valid} valid instance(s), violating ({broken or 'none'}), "
            f"{self.schema_inputs} schema-valid input(s), {self.recovered} recovered and "
            f"{self.truncated} truncated rendering(s)"
        )


class _Problem(AssertionError):
    """One thing wrong with the pack (raised inside hypothesis so that it shrinks the input)."""


def check_pack(pack: ContractPack, *, max_examples: int | None = None) -> PackReport:
    """Check a contract pack end to end; raise `AssertionError` listing every problem found.

    1. Every contract's declared fields exist in the model.
    2. Golden examples validate against the model and pass every contract.
    3. `valid(pack)` instances are schema-valid and pass every contract.
    4. For each contract, `violating(pack, contract)` instances are schema-valid and break that
       contract and no other (judged under `pack.extra["contexts"][name]` when the pack gives
       the rule its own request, else under `pack.extra["context"]`), with well-formed
       diagnostics: a path that exists in the instance
       (`lines[2].line_total` is resolved against it), a non-empty constraint and prescription,
       declared fields that exist, and — for a rule over several fields — a prescription that
       names every one of them. For a rule declared `on_fail="fix"`, its `fix` on each such
       instance gives a value that passes the schema and the rule.
    5. No contract raises (or returns something that is not a verdict) on any schema-valid
       input: `from_schema(model)` instances, contracts ignored.
    6. `corrupted` renderings of `valid(pack)` instances: `healjson.validate` recovers each
       recoverable one to an equal instance without a model call, and refuses each truncated one
       (`Degraded` with reason `token_truncated`).

    Each property runs `max_examples` hypothesis examples (default: the current hypothesis
    profile's); shrunk counterexamples are quoted in the message. Returns a `PackReport` of what
    was checked when everything passed.
    """
    require_hypothesis()
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings

    if not isinstance(pack, ContractPack):
        raise TypeError(f"check_pack needs a healjson.ContractPack, got {type(pack).__name__}")
    examples = max_examples if max_examples is not None else settings().max_examples
    config = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=[phase for phase in Phase if phase is not Phase.explain],  # explaining is slow
        suppress_health_check=[HealthCheck.too_slow],
    )
    target = target_for(pack.model)
    ctx = pack_context(pack)
    problems: list[str] = []
    counts: Counter[str] = Counter()

    def run(what: str, check: Callable[[], None]) -> None:
        try:
            check()
        except _Problem as problem:
            problems.append(str(problem))
        except Exception as exc:  # a strategy that cannot be built or drawn from, a health check
            problems.append(f"{what}: {_describe_failure(exc)}")

    problems.extend(_field_problems(pack, target))
    counts["examples"] = _check_examples(pack, target, ctx, problems)

    def check_valid() -> None:
        @config
        @given(valid(pack))
        def valid_instances_pass(instance: Any) -> None:
            counts["valid"] += 1
            where = f"valid(pack) produced {_show(instance)}"
            _require_schema_valid(target, instance, where)
            found = judge(pack, instance, ctx)
            if found:
                raise _Problem(f"{where}, which breaks {_list_rules(found)}")

        valid_instances_pass()

    run("valid(pack)", check_valid)

    for rule in pack.contracts:

        def check_violating(rule: Contract[Any] = rule) -> None:
            @config
            @given(violating(pack, rule))
            def violating_instances_break_the_rule(instance: Any) -> None:
                counts[f"violating:{rule.name}"] += 1
                rule_ctx = pack_context(pack, rule.name)
                _check_violation(pack, target, rule, instance, rule_ctx)
                if rule.fix is not None:
                    counts[f"fixed:{rule.name}"] += 1
                    _check_fix(target, rule, instance, rule_ctx)

            violating_instances_break_the_rule()

        run(f"violating(pack, {rule.name!r})", check_violating)

    def check_no_crash() -> None:
        @config
        @given(from_schema(target))
        def contracts_never_raise(instance: Any) -> None:
            counts["schema_inputs"] += 1
            crashed = [d for d in judge(pack, instance, ctx) if d.source is Source.CONTRACT_ERROR]
            if crashed:
                raise _Problem(
                    f"contract `{crashed[0].rule}` raised on the schema-valid input "
                    f"{_show(instance)}: {crashed[0].constraint}"
                )

        contracts_never_raise()

    if pack.contracts:
        run("contracts on schema-valid input", check_no_crash)

    def check_corruptions() -> None:
        pairs = valid(pack).flatmap(
            lambda instance: corrupted(instance, model=target).map(lambda c: (instance, c))
        )

        @config
        @given(pairs)
        def corruptions_are_recovered(pair: tuple[Any, Corruption]) -> None:
            instance, corruption = pair
            _check_recovery(
                pack,
                target=target,
                ctx=ctx,
                instance=instance,
                corruption=corruption,
                counts=counts,
            )

        corruptions_are_recovered()

    run("corrupted(valid instance)", check_corruptions)

    if problems:
        numbered = "\n".join(
            f"  {index}. " + problem.replace("\n", "\n     ")
            for index, problem in enumerate(problems, 1)
        )
        raise AssertionError(
            f"healjson.testing.check_pack({pack.name!r}) found {len(problems)} problem(s):\n"
            f"{numbered}"
        )
    return PackReport(
        pack=pack.name,
        contracts=len(pack.contracts),
        examples=counts["examples"],
        valid=counts["valid"],
        violating=MappingProxyType(
            {rule.name: counts[f"violating:{rule.name}"] for rule in pack.contracts}
        ),
        schema_inputs=counts["schema_inputs"],
        recovered=counts["recovered"],
        truncated=counts["truncated"],
    )


def _field_problems(pack: ContractPack, target: Target[Any]) -> list[str]:
    names = target.field_names
    if names is None:
        return []
    out: list[str] = []
    for rule in pack.contracts:
        for name in rule.fields:
            head = name.split(".", 1)[0].split("[", 1)[0]
            if head not in names:
                out.append(
                    f"contract `{rule.name}` declares field {name!r}, which {target.name} does "
                    f"not have (its fields: {', '.join(sorted(names))})"
                )
    return out


def _check_examples(
    pack: ContractPack, target: Target[Any], ctx: ContractContext, problems: list[str]
) -> int:
    for index, example in enumerate(pack.examples):
        try:
            instance = as_instance(target, example)
        except Exception as exc:
            problems.append(
                f"golden example examples[{index}] does not validate against {target.name}: "
                f"{_explain(exc)}"
            )
            continue
        found = judge(pack, instance, ctx)
        if found:
            problems.append(
                f"golden example examples[{index}] {_show(instance)} breaks {_list_rules(found)}"
            )
    return len(pack.examples)


def _require_schema_valid(target: Target[Any], instance: Any, where: str) -> None:
    """The instance survives the round trip L1 makes: dumped to JSON and validated again."""
    try:
        data = target.adapter.dump_python(instance, mode="json", by_alias=True)
        target.adapter.validate_json(to_json(data))
    except Exception as exc:
        raise _Problem(f"{where}, which is not a valid {target.name}: {_explain(exc)}") from None


def _check_violation(
    pack: ContractPack,
    target: Target[Any],
    rule: Contract[Any],
    instance: Any,
    ctx: ContractContext,
) -> None:
    where = f"violating(pack, {rule.name!r}) produced {_show(instance)}"
    _require_schema_valid(target, instance, where)
    found = judge(pack, instance, ctx)
    crashed = [d for d in found if d.source is Source.CONTRACT_ERROR]
    if crashed:
        raise _Problem(
            f"{where}, on which contract `{crashed[0].rule}` raised: {crashed[0].constraint}"
        )
    mine = [d for d in found if d.rule == rule.name]
    others = [d for d in found if d.rule != rule.name]
    if not mine:
        broken = f"; it breaks {_list_rules(others)} instead" if others else ""
        raise _Problem(f"{where}, which does not break `{rule.name}`{broken}")
    if others:
        raise _Problem(f"{where}, which also breaks {_list_rules(others)}")
    for diagnostic in mine:
        issue = _malformed(target, instance, diagnostic)
        if issue:
            raise _Problem(
                f"contract `{rule.name}` gave a malformed diagnostic on {_show(instance)}: "
                f"{issue} (diagnostic: {diagnostic.describe(max_value_chars=80)})"
            )


def _check_fix(
    target: Target[Any], rule: Contract[Any], instance: Any, ctx: ContractContext
) -> None:
    """A rule declared `on_fail="fix"`: its fix, on a value the rule rejects, gives a value
    that passes the schema and the rule (the engine re-asks the model otherwise)."""
    assert rule.fix is not None
    where = f"the fix of `{rule.name}` on {_show(instance)}"
    try:
        fixed = rule.fix(instance)
        data = target.adapter.dump_python(fixed, mode="json", by_alias=True, warnings=False)
    except Exception as exc:
        raise _Problem(f"{where} raised {describe_exception(exc)}") from None
    try:
        again = target.adapter.validate_python(data, context=ctx.validation_context)
    except Exception as exc:
        raise _Problem(
            f"{where} gave {_show(data)}, which fails the schema: {describe_exception(exc)}"
        ) from None
    still = [d for d in drive_sync(run_contracts((rule,), again, ctx)) if d.rule == rule.name]
    if still:
        raise _Problem(
            f"{where} gave {_show(again)}, which still breaks `{rule.name}`: {still[0].constraint}"
        )


def _malformed(target: Target[Any], instance: Any, diagnostic: Diagnostic) -> str | None:
    if diagnostic.path != ROOT and value_at(instance, diagnostic.path) is MISSING:
        return f"its path {diagnostic.path!r} does not exist in the {target.name} instance"
    if not diagnostic.constraint.strip():
        return "its constraint is empty"
    if not diagnostic.prescription.strip():
        return "its prescription is empty"
    names = target.field_names
    for name in diagnostic.fields:
        head = name.split(".", 1)[0].split("[", 1)[0]
        if names is not None and head not in names:
            return f"it names field {name!r}, which {target.name} does not have"
    if len(diagnostic.fields) > 1:
        unnamed = [name for name in diagnostic.fields if name not in diagnostic.prescription]
        if unnamed:
            return f"its prescription does not name the field(s) {unnamed} of this multi-field rule"
    return None


def _check_recovery(
    pack: ContractPack,
    *,
    target: Target[Any],
    ctx: ContractContext,
    instance: Any,
    corruption: Corruption,
    counts: Counter[str],
) -> None:
    outcome = validate(
        corruption.text,
        target.type_,
        contracts=pack.contracts,
        context=ctx,
        finish_reason=corruption.finish_reason,
    )
    shown = (
        f"{'+'.join(corruption.kinds)} rendering of {_show(instance)}\n"
        f"reply (finish_reason={corruption.finish_reason!r}): {_show_text(corruption.text)}"
    )
    if not corruption.recoverable:
        if outcome.ok:
            raise _Problem(f"L1 accepted a truncated reply, {shown}\ngot {_show(outcome.value)}")
        if outcome.reason is not Reason.TOKEN_TRUNCATED:
            raise _Problem(
                f"L1 did not report truncation ({outcome.reason}) for the {shown}"
                f"{_first_error(outcome.errors)}"
            )
        counts["truncated"] += 1
        return
    if not outcome.ok:
        raise _Problem(
            f"L1 did not recover the {shown}\ndegraded with {outcome.reason}"
            f"{_first_error(outcome.errors)}"
        )
    if outcome.value != instance:
        raise _Problem(
            f"L1 recovered a different value from the {shown}\ngot {_show(outcome.value)}"
        )
    counts["recovered"] += 1


def _first_error(errors: tuple[Diagnostic, ...]) -> str:
    return f": {errors[0].describe(max_value_chars=120)}" if errors else ""


def _list_rules(found: list[Diagnostic]) -> str:
    parts: list[str] = []
    for diagnostic in found:
        if diagnostic.source is Source.CONTRACT_ERROR:
            parts.append(f"`{diagnostic.rule}` (it raised: {diagnostic.constraint})")
        else:
            parts.append(f"`{diagnostic.rule}` ({diagnostic.describe(max_value_chars=80)})")
    return ", ".join(dict.fromkeys(parts))


def _show(value: Any) -> str:
    """`Range(low=5, high=1)` for a model instance, JSON-ish for data; cut to a readable size."""
    try:
        shown = repr(value) if hasattr(type(value), "model_fields") else short_repr(value, _SHOWN)
    except Exception:  # a hostile __repr__ must not hide the problem being reported
        shown = short_repr(value, _SHOWN)
    return _cut(shown)


def _show_text(text: str) -> str:
    return _cut(repr(text))


def _cut(shown: str) -> str:
    if len(shown) <= _SHOWN:
        return shown
    return f"{shown[: _SHOWN - 12]}…(+{len(shown) - _SHOWN + 12} chars)"


def _explain(exc: BaseException) -> str:
    """A validation error as `loc: message; ...` on one line; other errors as `Type: message`."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            parts = [
                f"{format_path(tuple(e.get('loc', ())))}: {e.get('msg', '')}" for e in errors()
            ]
        except Exception:
            parts = []
        if parts:
            return "; ".join(parts)
    return describe_exception(exc).splitlines()[0]


def _describe_failure(exc: BaseException) -> str:
    name = type(exc).__name__
    text = describe_exception(exc)
    if name in ("Unsatisfiable", "FailedHealthCheck"):
        return (
            f"hypothesis could not generate enough examples ({text.splitlines()[0]}); "
            "when a rule is tight, supply a strategy in ContractPack.strategies "
            "(see healjson.testing.valid)"
        )
    if callable(getattr(exc, "errors", None)):  # a strategy drew data the model rejects
        return f"it drew a value that is not valid: {name}: {_explain(exc)}"
    return text
