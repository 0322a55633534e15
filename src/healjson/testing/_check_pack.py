"""`check_pack`: every property a contract pack should have, checked in one call.

Put `healjson.testing.check_pack(pack)` in a test. It checks the golden examples, that no
contract raises on schema-valid input, the `valid` and `violating` strategies, and that L1
recovers corrupted renderings of valid instances (and refuses truncated ones). Problems are
collected across all checks and reported together in one `AssertionError`, each with how to fix
it; a contract that raises is reported once and left out of the checks that follow.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ._corruptions import corrupted
from ._internals import Contract, ContractPack, Target, target_for
from ._pack_checks import check_fix, check_recovery, check_valid, check_violation, judged
from ._pack_problems import (
    RARE,
    Crash,
    Finding,
    Problem,
    changed,
    crash_finding,
    explain,
    failure_message,
    generation_finding,
    list_rules,
    scarcity_finding,
    show,
    unsteady_finding,
)
from ._schema_data import as_instance, from_schema, require_hypothesis
from ._strategies import Tally, pack_context, tally, valid, violating

if TYPE_CHECKING:
    from hypothesis import settings as Settings

__all__ = ["PackReport", "check_pack"]

_KIT_EXAMPLES = 25  # examples per property under hypothesis' own default settings
_HYPOTHESIS_DEFAULT = 100
_SAMPLE = 20  # valid(pack) keeping under 1 in RARE of 20+ draws: too few valid values
_RECENT = 8  # the last values judged, on which a rule is run again when hypothesis saw a flake
_AGAIN = 4  # runs of each rule on each such value, looking for verdicts that differ


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


def check_pack(pack: ContractPack, *, max_examples: int | None = None) -> PackReport:
    """Check a contract pack end to end; raise `AssertionError` listing every problem found,
    each with how to fix it.

    1. Every contract's declared fields exist in the model.
    2. Golden examples validate against the model and pass every contract, judged as a run
       judges a value (`judge_value`): a contract that changes the value it checks is the
       `contract_error` a run degrades with, reported (and left out) as a crash is.
    3. No contract raises (or returns something that is not a verdict, or changes the value)
       on any schema-valid input: `from_schema(model)` instances, contracts ignored. A
       contract that raises — here or in any later check — is reported once, as the problem
       it is (its exception, the input, the line it raised on), and the later checks run
       without it, so that its exception is not reported again as every strategy's failure.
    4. `valid(pack)` instances are schema-valid and pass every contract, and their `corrupted`
       renderings are recovered by `healjson.validate` to an equal instance without a model
       call (truncated ones refused: `Degraded` with reason `token_truncated`).
    5. For each contract, `violating(pack, contract)` instances are schema-valid and break that
       contract and no other (judged under `pack.extra["contexts"][name]` when the pack gives
       the rule its own request, else under `pack.extra["context"]`), with well-formed
       diagnostics: a path that exists in the instance
       (`lines[2].line_total` is resolved against it), a non-empty constraint and prescription,
       declared fields that exist, and — for a rule over several fields — a prescription that
       names every one of them. For a rule declared `on_fail="fix"`, its `fix` on each such
       instance gives a value that passes the schema and the rule, judged as a run's `settle`
       judges it (the same function: the fix's own value checked as it stands, never
       validated again; a rule over items fixed item by item). When no value breaks a rule
       alone, the problem names the rules that broke along with it. When `valid(pack)` keeps
       fewer than one in five of the values it draws (tight rules and no golden example),
       that is one problem, whether hypothesis gave up this time or not, and the `violating`
       checks of rules without a strategy of their own, which start from such values, do not
       run.

    Each property runs `max_examples` hypothesis examples. By default that is the current
    hypothesis profile's count, except under hypothesis' own defaults (100 examples, a new seed
    each run), where it is 25 with a fixed seed (`derandomize`): a small pack is checked in a
    few seconds, with the same verdict on every run. `HEALJSON_HYPOTHESIS_PROFILE=
    healjson-thorough` gives 1000. Shrunk counterexamples are quoted in the message. Returns a
    `PackReport` of what was checked when everything passed.
    """
    __tracebackhide__ = True  # pytest shows the test's line and the problems, not this frame
    require_hypothesis()
    if not isinstance(pack, ContractPack):
        raise TypeError(f"check_pack needs a healjson.ContractPack, got {type(pack).__name__}")
    run = _Run(pack, _settings(max_examples))
    run.check_fields()
    run.check_examples()
    run.check_no_crash()
    run.check_valid()
    for rule in pack.contracts:
        run.check_violating(rule)
    run.recheck_violating()
    run.report_scarcity()
    if run.findings:
        raise AssertionError(failure_message(pack.name, run.findings))
    return run.report()


def _settings(max_examples: int | None) -> Settings:
    """The settings of every property: the current profile's, except that under hypothesis'
    own defaults (100 examples, a new seed each run) a pack is checked with `_KIT_EXAMPLES`
    examples per property and a fixed seed: the same verdict on every run, in a few seconds."""
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    current = settings()
    defaults = current.max_examples == _HYPOTHESIS_DEFAULT
    if max_examples is None:
        max_examples = _KIT_EXAMPLES if defaults else current.max_examples
    return settings(
        max_examples=max_examples,
        derandomize=True if defaults else current.derandomize,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=[phase for phase in Phase if phase is not Phase.explain],  # explaining is slow
        suppress_health_check=[HealthCheck.too_slow],
    )


class _Run:
    """One `check_pack` call: the findings so far, and the pack without the contracts that
    raised (`live`), which every later check uses."""

    def __init__(self, pack: ContractPack, config: Settings) -> None:
        self.pack = pack
        self.config = config
        self.target: Target[Any] = target_for(pack.model)
        self.findings: list[Finding] = []
        self.counts: Counter[str] = Counter()
        self.crashed: set[str] = set()
        self.live = pack
        self.scarce: list[str] = []  # the strategies that gave up for want of valid values
        # per rule: the rules left out when its violating check ran, and what that check found
        self.violated: dict[str, tuple[int, list[Finding]]] = {}
        self.crashes: list[Finding] = []  # the findings of rules left out (never checked again)
        self.recent: deque[Any] = deque(maxlen=_RECENT)  # the last values the checks judged
        self.unsteady = False  # a flake no rule could be named for was reported

    # --- the checks ------------------------------------------------------------------------------

    def check_fields(self) -> None:
        names = self.target.field_names
        if names is None:
            return
        for rule in self.pack.contracts:
            for name in rule.fields:
                if _head(name) not in names:
                    self.findings.append(
                        Finding(
                            f"contract `{rule.name}` declares field {name!r}, which "
                            f"{self.target.name} does not have (its fields: "
                            f"{', '.join(sorted(names))})",
                            f"declare the fields `{rule.name}` reads, by the model's names, in "
                            "@contract(fields=...)",
                        )
                    )

    def check_examples(self) -> None:
        for index, example in enumerate(self.pack.examples):
            where = f"golden example examples[{index}]"
            try:
                instance = as_instance(self.target, example)
            except Exception as exc:
                self.findings.append(
                    Finding(
                        f"{where} does not validate against {self.target.name}: {explain(exc)}",
                        "correct the example so that the model accepts it",
                    )
                )
                continue
            found = self._judged_without_crashes(instance, where)
            if found:
                self.findings.append(
                    Finding(
                        f"{where} {show(instance)} breaks {list_rules(found)}",
                        "a golden example passes every rule: correct the example (or the rule)",
                    )
                )
        self.counts["examples"] = len(self.pack.examples)

    def check_no_crash(self) -> None:
        if not self.pack.contracts:
            return

        def check() -> None:
            from hypothesis import given

            self.counts["schema_inputs"] = 0
            live, ctx = self.live, pack_context(self.live)

            @self.config
            @given(from_schema(self.target))
            def contracts_never_raise(instance: Any) -> None:
                self.counts["schema_inputs"] += 1
                self.recent.append(instance)
                judged(self.target, live.contracts, instance, ctx, "the schema-valid input")

            if live.contracts:
                contracts_never_raise()

        self._run("from_schema(model), on which every contract runs", check, kind="schema")

    def check_valid(self) -> None:
        def check() -> None:
            from hypothesis import given
            from hypothesis import strategies as st

            live, ctx = self.live, pack_context(self.live)
            supplied = "valid" in live.strategies
            for key in ("valid", "recovered", "truncated"):
                self.counts[key] = 0

            @self.config
            @given(valid(live), st.data())
            def valid_instances_pass_and_survive_corruption(
                instance: Any, data: st.DataObject
            ) -> None:
                self.counts["valid"] += 1
                self.recent.append(instance)
                check_valid(self.target, live.contracts, instance, ctx, supplied=supplied)
                corruption = data.draw(corrupted(instance, model=self.target))
                recovered = check_recovery(self.target, live.contracts, ctx, instance, corruption)
                self.counts["recovered" if recovered else "truncated"] += 1

            valid_instances_pass_and_survive_corruption()

        self._run("valid(pack)", check, kind="valid")
        counts = tally(self.live)
        rare = counts.judged >= _SAMPLE and counts.kept * RARE < counts.judged
        if rare and "valid" not in self.live.strategies and "valid(pack)" not in self.scarce:
            self.scarce.append("valid(pack)")  # it passed by luck: the next run may give up

    def check_violating(self, rule: Contract[Any]) -> None:
        if "valid(pack)" in self.scarce and rule.name not in self.live.strategies:
            self.scarce.append(f"violating(pack, {rule.name!r})")  # it would start from them
            return

        def check() -> None:
            from hypothesis import given

            live = self.live
            mine = live.contract(rule.name)
            ctx = pack_context(live, rule.name)
            supplied = rule.name in live.strategies
            key = f"violating:{rule.name}"
            self.counts[key] = 0

            @self.config
            @given(violating(live, mine))
            def violating_instances_break_the_rule(instance: Any) -> None:
                self.counts[key] += 1
                self.recent.append(instance)
                check_violation(self.target, live.contracts, mine, instance, ctx, supplied=supplied)
                if mine.fix is not None:
                    check_fix(self.target, live.contracts, mine, instance, ctx)

            violating_instances_break_the_rule()

        left_out, before = len(self.crashed), len(self.findings)
        self._run(f"violating(pack, {rule.name!r})", check, kind="violating", rule=rule)
        mine = [f for f in self.findings[before:] if all(f is not g for g in self.crashes)]
        self.violated[rule.name] = (left_out, mine)

    def recheck_violating(self) -> None:
        """A rule's violating check that found a problem while a rule left out later was still
        live (which may have hidden it: no value broke the rule alone) runs again without it;
        what it finds now replaces what it found then."""
        for rule in self.pack.contracts:
            left_out, found = self.violated.get(rule.name, (0, []))
            if found and left_out < len(self.crashed) and rule.name not in self.crashed:
                self.findings = [f for f in self.findings if all(f is not g for g in found)]
                self.check_violating(rule)

    def report_scarcity(self) -> None:
        """One finding for every strategy that gave up because too few values pass every
        rule (they share the cause, and the fix)."""
        if self.scarce:
            examples = bool(self.pack.examples)
            finding = scarcity_finding(self.scarce, tally(self.live), examples=examples)
            self.findings.append(finding)

    def report(self) -> PackReport:
        return PackReport(
            pack=self.pack.name,
            contracts=len(self.pack.contracts),
            examples=self.counts["examples"],
            valid=self.counts["valid"],
            violating=MappingProxyType(
                {rule.name: self.counts[f"violating:{rule.name}"] for rule in self.pack.contracts}
            ),
            schema_inputs=self.counts["schema_inputs"],
            recovered=self.counts["recovered"],
            truncated=self.counts["truncated"],
        )

    # --- running a check -------------------------------------------------------------------------

    def _run(
        self,
        what: str,
        check: Callable[[], None],
        *,
        kind: str,
        rule: Contract[Any] | None = None,
    ) -> None:
        """Run one check; again without a contract it found raising (reported once)."""
        for _ in range(len(self.pack.contracts) + 1):
            if rule is not None and rule.name in self.crashed:
                return  # its crash is the problem; a strategy for it would only repeat it
            counts = self._tally(kind, rule)
            try:
                check()
                return
            except Crash as crash:
                self._leave_out(crash)
            except Problem as problem:
                self.findings.append(problem.finding)
                return
            except Exception as exc:  # a strategy that gave up or raised, a health check
                if _flaky(exc):
                    if self._unsteady(what, exc):
                        continue  # the rule is left out: run the check again without it
                    return
                live = self._live_names()
                seen = [c for name, c in (counts.crashes if counts else {}).items() if name in live]
                if seen:  # it gave up because a contract raised on what it drew
                    diagnostic, instance = seen[0]
                    self._leave_out(Crash(diagnostic, instance, "a value the kit drew,"))
                    continue
                supplied = (rule.name if rule else "valid") in self.live.strategies
                finding = generation_finding(
                    what,
                    exc,
                    kind=kind,
                    rule=rule.name if rule else None,
                    supplied=supplied,
                    counts=counts or Tally(),
                    reads={r.name: frozenset(map(_head, r.fields)) for r in self.live.contracts},
                )
                if finding is None:
                    self.scarce.append(what)
                else:
                    self.findings.append(finding)
                return

    def _tally(self, kind: str, rule: Contract[Any] | None) -> Tally | None:
        if kind == "schema":
            return None
        if kind == "violating" and rule is not None:
            counts = tally(self.live, rule.name)
        else:
            counts = tally(self.live)
        counts.clear()
        return counts

    def _live_names(self) -> set[str]:
        return {rule.name for rule in self.live.contracts}

    def _judged_without_crashes(self, instance: Any, where: str) -> list[Any]:
        ctx = pack_context(self.pack)
        for _ in range(len(self.pack.contracts)):
            try:
                return judged(self.target, self.live.contracts, instance, ctx, where)
            except Crash as crash:
                self._leave_out(crash)
        return []

    def _unsteady(self, what: str, exc: BaseException) -> bool:
        """Hypothesis could not replay a failure it found: report the rule that judges a
        value differently from one run to the next (run again on the values the checks
        judged last), or the contract the failure was its raising, left out of the other
        checks (True: run the check again without it); else that the pack is
        non-deterministic, once."""
        raised = [c for c in _inner(exc) if isinstance(c, Crash) and c.diagnostic.rule]
        values = [c.instance for c in raised] + list(reversed(self.recent))
        for rule in self.live.contracts:
            ctx = pack_context(self.live, rule.name)
            for instance in values:
                verdicts = {self._verdict(rule, instance, ctx) for _ in range(_AGAIN)}
                if len(verdicts) > 1:
                    finding = unsteady_finding(what, exc, rule.name, instance, sorted(verdicts))
                    self._without((rule.name,), finding)
                    return True
        live = self._live_names()
        for problem in _inner(exc):  # a problem that named the rules already
            if isinstance(problem, Problem) and set(problem.unsteady) & live:
                self._without(problem.unsteady, problem.finding)
                return True
        for crash in raised:
            if crash.diagnostic.rule in live:
                name = str(crash.diagnostic.rule)
                self._without((name,), unsteady_finding(what, exc, name, crash.instance))
                return True
        if not self.unsteady:
            self.unsteady = True
            self.findings.append(unsteady_finding(what, exc, None))
        return False

    def _verdict(self, rule: Contract[Any], instance: Any, ctx: Any) -> str:
        """How `rule` judges `instance`, in a word or two (what it raised, when it did)."""
        try:
            found = judged(self.target, (rule,), instance, ctx, "a value the kit drew,")
        except Crash as crash:
            return f"raised {crash.diagnostic.constraint.splitlines()[0]}"
        except Exception as exc:  # judging itself failed: no verdict to compare
            return f"failed {type(exc).__name__}"
        return "broken" if found else "passed"

    def _leave_out(self, crash: Crash) -> None:
        """Report the contract that raised (or changed the value it checks: the contracts
        that may have, when async ones ran together), once, and go on without it."""
        names = changed(crash.diagnostic) or (crash.diagnostic.rule or "",)
        if all(name in self.crashed for name in names):
            return
        name = names[0]
        rule = next((r for r in self.pack.contracts if r.name == name), None)
        self._without(names, crash_finding(crash, rule, pack_context(self.pack, name)))

    def _without(self, names: tuple[str, ...], finding: Finding) -> None:
        """Report `finding` and leave the contracts `names` out of every later check."""
        self.crashed.update(names)
        self.crashes.append(finding)
        self.findings.append(finding)
        self.live = dataclasses.replace(
            self.pack,
            contracts=tuple(r for r in self.pack.contracts if r.name not in self.crashed),
            strategies={k: v for k, v in self.pack.strategies.items() if k not in self.crashed},
        )


def _head(name: str) -> str:
    return name.split(".", 1)[0].split("[", 1)[0]


def _flaky(exc: BaseException) -> bool:
    """Hypothesis could not replay what it found (`FlakyFailure`, `FlakyStrategyDefinition`)."""
    from hypothesis.errors import Flaky

    return isinstance(exc, Flaky)


def _inner(exc: BaseException) -> list[BaseException]:
    """The exceptions a group holds, however deep, and the exception itself."""
    found: list[BaseException] = [exc]
    for sub in getattr(exc, "exceptions", ()) or ():
        if isinstance(sub, BaseException):
            found.extend(_inner(sub))
    return found
