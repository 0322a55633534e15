"""What `check_pack` says: each problem with how to fix it, and the one message they make.

A problem is raised inside a hypothesis property as `Problem` (so that hypothesis shrinks the
input it quotes) or `Crash` (a contract that raised: reported once, then left out of the other
checks), and collected as a `Finding`.
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._internals import (
    CHANGED_BY,
    Contract,
    ContractContext,
    Diagnostic,
    Source,
    describe_exception,
    format_path,
    run_awaitables_sync,
    short_repr,
)
from ._strategies import Tally

__all__ = [
    "RARE",
    "Crash",
    "Finding",
    "Problem",
    "changed",
    "crash_finding",
    "failure_message",
    "generation_finding",
    "list_rules",
    "show",
    "show_text",
    "unsteady_finding",
]

_SHOWN = 240  # characters of an instance or a reply quoted in a problem
_FEW = 10  # values that pass every rule asked for before their scarcity explains a give-up
# under 1 in RARE kept: too few values pass every rule, for `valid(pack)` (check_pack) and for
# the bases a `violating` search drew alike. Tight rules often refuse about half of the draws,
# so a bar near one half flips with the draw (the derandomized seed changes with a property's
# source, and hypothesis' constants with the modules loaded: the test order)
RARE = 5
_HEALJSON = str(Path(__file__).resolve().parent.parent)  # frames in healjson are not the user's
_STRATEGY_FIX = (
    "ContractPack(strategies={{{key!r}: lambda: ...}}): a function returning a hypothesis "
    "strategy of {what} (healjson's docs/testing.md shows one)"
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong with the pack, and what to do about it."""

    text: str
    fix: str

    def render(self, number: int) -> str:
        head = f"  {number}. "
        indent = " " * len(head)
        body = self.text.replace("\n", "\n" + indent)
        return f"{head}{body}\n{indent}fix: {self.fix}"


class Problem(AssertionError):
    """A finding, raised inside a hypothesis property so that it shrinks the input;
    `unsteady`, the rules it finds non-deterministic (left out of the later checks when
    hypothesis cannot replay it)."""

    def __init__(self, text: str, fix: str, *, unsteady: tuple[str, ...] = ()) -> None:
        super().__init__(text)
        self.finding = Finding(text, fix)
        self.unsteady = unsteady


class Crash(Exception):
    """A contract raised (or returned something that is not a verdict) on `instance`."""

    def __init__(self, diagnostic: Diagnostic, instance: Any, where: str) -> None:
        super().__init__(diagnostic.constraint)
        self.diagnostic = diagnostic
        self.instance = instance
        self.where = where  # "the schema-valid input", "golden example examples[0]", ...


def failure_message(pack_name: str, findings: Sequence[Finding]) -> str:
    """The AssertionError's message: every finding, numbered, each with its fix."""
    numbered = "\n".join(finding.render(index) for index, finding in enumerate(findings, 1))
    return (
        f"healjson.testing.check_pack({pack_name!r}) found {len(findings)} problem(s):\n{numbered}"
    )


# --- a contract that raised ----------------------------------------------------------------------


def crash_finding(crash: Crash, rule: Contract[Any] | None, ctx: ContractContext) -> Finding:
    """The crash as one finding: the contract, what it raised, the input, the line it raised
    on (the contract is run again on the input to find it), and what to do."""
    changed_by = changed(crash.diagnostic)
    if changed_by:  # it changed the value: quote the value as it was, before the change
        names = " / ".join(f"`{name}`" for name in changed_by)
        text = f"{crash.diagnostic.constraint}\non {crash.where} {show(crash.diagnostic.value)}"
        return Finding(
            text,
            "a contract only reads the value it checks (a run degrades with contract_error "
            "otherwise): copy it before changing anything (`value.model_copy(update=...)`, "
            "`copy.deepcopy(value)`), or normalise the value in the model (a validator) "
            f"instead. {names} {'was' if len(changed_by) == 1 else 'were'} left out of the "
            "other checks.",
        )
    name = crash.diagnostic.rule or "?"
    text = f"{crash.diagnostic.constraint}\non {crash.where} {show(crash.instance)}"
    site = _raise_site(rule, crash.instance, ctx) if rule is not None else None
    if site:
        text += f"\nat {site}"
    fix = (
        "a contract gives a verdict on every value the schema allows: return None where the "
        f"rule does not apply (as on the input above), or narrow the model so that its schema "
        f"refuses that input. `{name}` was left out of the other checks."
    )
    if f"`{name}` raised " not in crash.diagnostic.constraint:  # it returned a non-verdict
        fix = (
            "a contract returns None, True / False, a message, a Violation or an iterable of "
            f"them. `{name}` was left out of the other checks."
        )
    return Finding(text, fix)


def changed(diagnostic: Diagnostic) -> tuple[str, ...]:
    """The contract(s) a `contract_error` says changed the value they checked (none for
    another contract_error)."""
    names = diagnostic.extra.get(CHANGED_BY)
    return tuple(names) if isinstance(names, tuple | list) else ()


def _raise_site(rule: Contract[Any], instance: Any, ctx: ContractContext) -> str | None:
    """`file.py:12, in rule: the line` where `rule` raises on `instance` (None when it does not
    raise again: a contract that depends on more than its input)."""
    try:
        result = rule(instance, ctx)
        if inspect.isawaitable(result):
            [result] = run_awaitables_sync((result,), None)
            if isinstance(result, BaseException):
                raise result
        if inspect.isgenerator(result):
            for _ in zip(range(1000), result, strict=False):
                pass
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        own = getattr(getattr(rule.check, "__code__", None), "co_filename", None)
        mine = [f for f in frames if f.filename == own] or [
            f for f in frames if not f.filename.startswith(_HEALJSON)
        ]
        if not mine:
            return None
        frame = mine[-1]
        line = f": {frame.line.strip()}" if frame.line else ""
        return f"{frame.filename}:{frame.lineno}, in {frame.name}{line}"
    return None


# --- a strategy that gave up ---------------------------------------------------------------------


def generation_finding(
    what: str,
    exc: BaseException,
    *,
    kind: str,
    rule: str | None,
    supplied: bool,
    counts: Tally,
    reads: Mapping[str, frozenset[str]],
) -> Finding | None:
    """A strategy that could not generate enough values (or raised while drawing): why, from
    what its search met (`counts`), and what to give the pack; None when it gave up because
    too few values pass every rule (`scarcity_finding` says that once for all of them).
    `kind` is "schema" (the schema-driven values every contract runs on), "valid" or
    "violating" (for `rule`); `reads` maps each rule to the top-level fields it declares."""
    name = type(exc).__name__
    if kind == "schema":
        return Finding(
            f"{what}: hypothesis could not draw enough values the model accepts from its JSON "
            f"schema ({describe_exception(exc).splitlines()[0]})",
            "the model's validators refuse most of what its JSON schema allows: say the "
            "constraints in the schema too (Field(ge=..., pattern=...), Literal[...]) where "
            "you can",
        )
    key = rule or "valid"
    if name == "FailedHealthCheck" and "filtering out" not in str(exc):  # too large, too slow
        return Finding(
            f"{what}: hypothesis' health check failed: {str(exc).strip().splitlines()[0]}",
            "the values drawn are too large: give long lists and strings a max_length "
            f"(Field(max_length=...)), or supply strategies[{key!r}] drawing smaller ones",
        )
    if name not in ("Unsatisfiable", "FailedHealthCheck"):
        if callable(getattr(exc, "errors", None)):  # a strategy drew data the model rejects
            return Finding(
                f"{what}: it drew a value that is not valid: {name}: {explain(exc)}",
                f"make strategies[{key!r}] draw values that {_model_accepts()}",
            )
        return Finding(
            f"{what}: {describe_exception(exc)}",
            "make the strategy draw without raising" if supplied else _report_it(),
        )
    if supplied:
        return Finding(
            f"{what}: hypothesis could not generate enough values from the pack's "
            f"strategies[{key!r}] (most were filtered out or rejected)",
            "build the values constructively instead of filtering them "
            "(`st.builds`, `st.composite`), so that nearly every draw is kept",
        )
    starved = counts.bases >= _FEW and (counts.bases - counts.starved) * RARE < counts.bases
    if rule is None or (starved and not counts.along):
        return None
    tried = f"{counts.judged:,} value(s) tried"
    if counts.along:
        ranked = counts.along.most_common()
        along = ", ".join(f"`{r}` ({_times(n)})" for r, n in ranked)
        text = (
            f"{what}: no value broke `{rule}` alone ({tried}); the ones that broke it also "
            f"broke {along}"
        )
        coupled = [r for r, n in ranked if 2 * n >= ranked[0][1]]
        shared = sorted(set().union(*(reads.get(r, frozenset()) for r in coupled)) & reads[rule])
        keep = " and ".join(f"`{r}`" for r in coupled)
        why = (
            f"`{rule}` and {keep} read {', '.join(f'`{f}`' for f in shared)}, so the changes "
            "that break the one break the other too"
            if shared
            else f"the changes that break `{rule}` break {keep} too"
        )
        fix = f"{why}: supply " + _STRATEGY_FIX.format(
            key=rule, what=f"values that break `{rule}` and keep {keep}"
        )
        return Finding(text, fix)
    text = (
        f"{what}: no change the kit tried broke `{rule}` ({tried}: golden examples and "
        f"valid values changed where `{rule}` reads them, schema-drawn values)"
    )
    fix = (
        f"check that `{rule}` declares the fields it reads (@contract(fields=...)) and can be "
        f"broken at all; give the pack a golden example near where it breaks, or supply "
        + _STRATEGY_FIX.format(key=rule, what=f"values that break only `{rule}`")
    )
    return Finding(text, fix)


def unsteady_finding(
    what: str,
    exc: BaseException,
    rule: str | None,
    instance: Any = None,
    verdicts: Sequence[str] = (),
) -> Finding:
    """Hypothesis could not replay what it found (`Flaky`): the same value fared differently
    on two runs. `rule` is the contract that judged it differently (on `instance`, giving
    `verdicts`), when the kit found one; else a rule or a strategy of the pack is (the kit
    draws and judges a value the same way every time)."""
    said = describe_exception(exc).splitlines()[0]
    if rule is None:
        return Finding(
            f"{what}: hypothesis saw the same value fare differently on two runs, so it could "
            f"not replay what it found ({said}): a rule of the pack, or a strategy it supplies, "
            "is non-deterministic",
            "make every rule and strategy of the pack depend on its value and context only (not "
            "on time, randomness, a counter or other state that changes between calls): this "
            "is the pack's to fix, not a problem in healjson",
        )
    if verdicts:
        how = f"it judged {show(instance)} as {' / '.join(verdicts)} on runs of the same value"
    else:
        how = f"it raised on {show(instance)} once and not when the same value ran again"
    return Finding(
        f"{what}: contract `{rule}` is non-deterministic: {how}, so hypothesis could not "
        f"replay what it found ({said})",
        f"make `{rule}` depend on its value and context only (not on time, randomness, a "
        "counter or other state that changes between calls): this is the pack's to fix, not "
        f"a problem in healjson. `{rule}` was left out of the other checks.",
    )


def scarcity_finding(whats: Sequence[str], valid_counts: Tally, *, examples: bool) -> Finding:
    """Too few values pass every rule: `valid` gives up (or passes by luck), and the
    `violating` checks that start from such values have little to change. With golden
    `examples`, that means the rules read fields they do not declare (the examples' other
    fields are drawn afresh)."""
    rejected = ", ".join(f"`{r}` {n:,}" for r, n in valid_counts.rejected.most_common())
    kept = (
        f"valid(pack) kept {valid_counts.kept:,} of the {valid_counts.judged:,} value(s) it "
        f"drew (rejected by {rejected or 'no rule'})"
    )
    others = [what for what in whats if what != "valid(pack)"]
    if len(others) < len(whats):
        text = f"valid(pack): too few values pass every rule: {kept}"
        if others:
            text += f"; {', '.join(others)} start from such values and did not run"
    else:
        text = (
            f"{', '.join(others)}: hypothesis could not generate enough values: they start "
            f"from values that pass every rule, and {kept}"
        )
    strategy = _STRATEGY_FIX.format(key="valid", what="values that pass every rule")
    if examples:
        fix = (
            "the golden examples, with the fields no rule declares drawn afresh, break the "
            "rules: declare every field each rule reads (@contract(fields=...)); or supply "
            + strategy
        )
    else:
        fix = (
            "give the pack a golden example (ContractPack(examples=[...])), a value that passes "
            "every rule: the kit draws valid values around it and breaks each rule from it; or "
            "supply " + strategy
        )
    return Finding(text, fix)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count:,} times"


def _model_accepts() -> str:
    return "the model accepts (validate them with `Model.model_validate` while writing it)"


def _report_it() -> str:
    return "this is a problem in healjson's kit: please report it with the pack"


# --- showing values ------------------------------------------------------------------------------


def list_rules(found: Sequence[Diagnostic]) -> str:
    parts: list[str] = []
    for diagnostic in found:
        if diagnostic.source is Source.CONTRACT_ERROR and changed(diagnostic):
            parts.append(f"`{diagnostic.rule}` ({diagnostic.constraint})")
        elif diagnostic.source is Source.CONTRACT_ERROR:
            parts.append(f"`{diagnostic.rule}` (it raised: {diagnostic.constraint})")
        else:
            parts.append(f"`{diagnostic.rule}` ({diagnostic.describe(max_value_chars=80)})")
    return ", ".join(dict.fromkeys(parts))


def show(value: Any) -> str:
    """`Range(low=5, high=1)` for a model instance, JSON-ish for data; cut to a readable size."""
    try:
        shown = repr(value) if hasattr(type(value), "model_fields") else short_repr(value, _SHOWN)
    except Exception:  # a hostile __repr__ must not hide the problem being reported
        shown = short_repr(value, _SHOWN)
    return _cut(shown)


def show_text(text: str) -> str:
    return _cut(repr(text))


def _cut(shown: str) -> str:
    if len(shown) <= _SHOWN:
        return shown
    return f"{shown[: _SHOWN - 12]}…(+{len(shown) - _SHOWN + 12} chars)"


def explain(exc: BaseException) -> str:
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
