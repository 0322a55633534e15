"""L2 business contracts: plain functions that judge a schema-valid value.

A contract takes `(value, ctx)` (or just `value`) and returns None when the rule holds, or a
`Violation` (or several). It may be `async`. The engine only knows this protocol; domain rules
live in packs outside the engine. A contract that raises is a bug in the contract: it becomes a
`contract_error` diagnostic, never an exception for the caller. So does a result the engine
cannot read: a malformed `Violation` (one whose attributes were set past its constructor's
checks), something that is neither None, a bool, a string, a `Violation` nor an iterable of
them (a mapping, bytes, a number...: never iterated as if it held violations), or an iterable
nested deeper than `_MAX_NESTING`. At most `MAX_VIOLATIONS` items are read from one contract's
result (an endless generator ends there). The same holds for an item contract, on each item:
its bug is the list contract's `contract_error`, located at the item, never a violation the
model is asked to fix.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, Protocol, TypeAlias, TypeVar, get_args, overload

from healjson._core.diagnostic import (
    ROOT,
    Diagnostic,
    Source,
    describe_exception,
    short_repr,
    type_name,
)
from healjson._core.sentinels import MISSING
from healjson._core.wire.effects import AwaitAll

from .context import ContractContext
from .item_rules import attribute_name, list_path, lists_at, place
from .signatures import arity, check_callable
from .violation import UNSET as _UNSET
from .violation import Violation, malformation

__all__ = [
    "AwaitAll",
    "Contract",
    "ContractContext",
    "OnFail",
    "Rule",
    "Violation",
    "Watch",
    "as_contract",
    "as_contracts",
    "check_rule_list",
    "contract",
    "for_each_item",
    "run_contracts",
]

OnFail: TypeAlias = Literal["reask", "fix", "warn", "drop", "stop"]
"""What a broken rule does: re-ask the model (the default), fix the value locally (`fix=`),
keep the value with a warning, drop the failing items (an item contract), or stop the run."""
ON_FAIL: Final = frozenset(get_args(OnFail))
BLOCKING: Final = frozenset({"reask", "stop"})
"""The policies whose violations no local step can settle: the only ones a stream stops on."""
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
MAX_VIOLATIONS = 1000
"""Items read from one contract's result at most (violations, or Nones); the rest are not read."""
_MAX_NESTING = 4
"""Iterables of violations may nest this deep (a list of generators of lists...), no deeper."""
_NOT_VIOLATIONS = (str, Mapping, bytes, bytearray, memoryview)
"""Iterable results that are not collections of violations: a mapping's keys, bytes' numbers."""


T_contra = TypeVar("T_contra", contravariant=True)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Contract(Generic[T_contra]):
    """A named business rule over a validated value of type `T` (build one with `@contract`).

    Typed by the value it judges: `@contract` on `def rule(order: Order, ctx)` gives a
    `Contract[Order]`, which a type checker accepts for a `Healer(Order, ...)` and rejects for
    another model.
    """

    check: Callable[..., Any]
    fields: tuple[str, ...] = ()
    name: str = ""
    description: str = ""
    takes_context: bool = True
    on_fail: OnFail = "reask"
    """What a violation of this rule does (see `OnFail`)."""
    fix: Callable[[Any], Any] | None = None
    """With `on_fail="fix"`: the value (the item, for an item contract) -> the corrected value."""
    item: bool = False
    """A rule over each item of a list, run on the whole value (`item_rules.for_each_item`)."""
    items: str = ""
    """With `item`: where that list is in the value (`"lines"`, `"order.lines"`; "": the value
    is the list)."""

    def __call__(self, value: T_contra, ctx: ContractContext | None = None) -> Any:
        """Run the rule (returns its raw result, which may be awaitable)."""
        if self.takes_context:
            return self.check(value, ctx if ctx is not None else ContractContext())
        return self.check(value)


Rule: TypeAlias = "Contract[T] | Callable[[T, ContractContext], Any] | Callable[[T], Any]"
"""What `contracts=` accepts for a target `T`: `@contract` rules, or bare functions of the value
(and optionally the context)."""


class _ContractDecorator(Protocol):
    """What `@contract(fields=...)` returns: a decorator typed by the rule's value."""

    @overload
    def __call__(self, check: Callable[[T, ContractContext], Any], /) -> Contract[T]: ...
    @overload
    def __call__(self, check: Callable[[T], Any], /) -> Contract[T]: ...


@overload
def contract(check: Callable[[T, ContractContext], Any], /) -> Contract[T]: ...
@overload
def contract(check: Callable[[T], Any], /) -> Contract[T]: ...
@overload
def contract(
    *,
    fields: Sequence[str] = (),
    name: str | None = None,
    description: str | None = None,
    on_fail: OnFail = "reask",
    fix: Callable[[Any], Any] | None = None,
    items: str | None = None,
) -> _ContractDecorator: ...
def contract(
    check: Callable[..., Any] | None = None,
    /,
    *,
    fields: Sequence[str] = (),
    name: str | None = None,
    description: str | None = None,
    on_fail: OnFail = "reask",
    fix: Callable[[Any], Any] | None = None,
    items: str | None = None,
) -> Any:
    """Declare a business rule: `@contract(fields=("urgency", "summary"))` on
    `def rule(value, ctx) -> Violation | Iterable[Violation] | None` (sync or async).

    `fields` names every field the rule reads; they appear in the repair prescription so the model
    knows it may change any of them. `on_fail` says what a violation does: `"reask"` (ask the
    model again, the default), `"fix"` (apply `fix`, the value -> the corrected value, locally;
    the result is checked again against the schema and every rule, and re-asked when it still
    fails), `"warn"` (keep the value; the violation is on `Healed.warnings`), `"drop"` (an item
    contract only: remove the failing items, listed on `Healed.dropped`; the list is checked
    again) or `"stop"` (no re-ask: the run degrades with `contract_error`).

    `items` makes it a rule over each item of a list inside the value: `items="lines"` on
    `def rule(line: Line)` runs it on every item of the value's `lines` (a dotted path of field
    names reaches deeper: `"order.lines"`; a segment that reaches a list goes on in each of its
    items, so `"invoices.lines"` judges every line of every invoice), each item judged alone,
    its violations located under the item (`lines[3].qty`, `invoices[0].lines[1].qty`);
    `fields` then names the item's fields. It goes in `contracts=` like any rule, and every
    `on_fail` applies per item: `"drop"` removes the items that break it from their list (on
    `Healed.dropped`, with the list's place), `"fix"` corrects each such item (`fix`: the item
    -> the corrected item). A path that names no field of the target is refused where the
    `Healer` (or `validate`) is built. Calling the rule runs it over the whole value; its
    function over one item is `rule.check.__wrapped__`. A sync rule only, and a sync `fix`
    (an async one raises TypeError here).
    """
    if items is not None:
        list_path(items)  # a name or a dotted path, checked where it is written
    if on_fail not in ON_FAIL:
        raise TypeError(f"on_fail must be one of {sorted(ON_FAIL)}, got {short_repr(on_fail, 40)}")
    if on_fail == "fix" and not callable(fix):
        raise TypeError('on_fail="fix" needs fix=, a function: the value -> the corrected value')
    if on_fail != "fix" and fix is not None:
        raise TypeError(f'fix= is only used with on_fail="fix", not on_fail={on_fail!r}')
    if fix is not None and _is_async(fix):
        shown = getattr(fix, "__name__", None) or type_name(fix)
        raise TypeError(
            f"fix= must be a plain function (the value -> the corrected value), not an async "
            f"one ({shown}): nothing awaits a fix; do the async work in the rule, or re-ask"
        )
    if isinstance(fields, str):
        raise TypeError(f"contract fields must be a sequence of names, e.g. ({fields!r},)")
    fields = tuple(fields)
    for item in fields:
        if not isinstance(item, str):
            raise TypeError(f"contract fields must be names (strings), got {short_repr(item, 40)}")

    def build(fn: Callable[..., Any]) -> Contract[Any]:
        if not callable(fn):
            raise TypeError(f"@contract needs a function, got {fn!r}")
        rule_name = name or str(getattr(fn, "__name__", "contract"))
        takes_context = arity(fn) >= 2
        check_callable(fn, rule_name, takes_context)
        rule: Contract[Any] = Contract(
            check=fn,
            fields=tuple(fields),
            name=rule_name,
            description=description or inspect.getdoc(fn) or "",
            takes_context=takes_context,
            on_fail=on_fail,
            fix=fix,
        )
        return rule if items is None else for_each_item(rule, items)

    return build(check) if check is not None else build


def _is_async(fn: Any) -> bool:
    """A coroutine (or async generator) function, or an object whose `__call__` is one."""
    return any(
        inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f)
        for f in (fn, getattr(fn, "__call__", None))  # noqa: B004  (the call of an object)
    )


def as_contract(rule: Any) -> Contract[Any]:
    """Accept a `Contract` or a bare function (wrapped with no declared fields)."""
    if isinstance(rule, Contract):
        return rule
    if callable(rule):
        return contract(rule)
    raise TypeError(f"contracts must be functions or @contract rules, got {short_repr(rule, 80)}")


def as_contracts(rules: Any, keyword: str = "contracts") -> tuple[Contract[Any], ...]:
    """The rules of a `contracts=` argument (`keyword` names it in the error): a list (any
    iterable) of `@contract` rules or functions. One rule given alone, a string or a mapping is
    refused with a message that says how to pass it (`check_rule_list`), as is a rule whose
    signature cannot be called with the value (and the context)."""
    check_rule_list(rules, keyword)
    return tuple(as_contract(rule) for rule in rules)


def check_rule_list(rules: Any, keyword: str = "contracts") -> None:
    """A TypeError, saying how to pass them, unless `rules` is a list (an iterable) of rules:
    one rule alone, a string, a mapping or a non-iterable is refused."""
    if isinstance(rules, Contract) or callable(rules):
        shown = getattr(rules, "name", None) or getattr(rules, "__name__", None) or "rule"
        raise TypeError(
            f"{keyword}= takes a list of rules, got one rule ({shown}) alone: pass "
            f"{keyword}=[{shown}]"
        )
    if isinstance(rules, str | bytes | Mapping) or not isinstance(rules, Iterable):
        raise TypeError(
            f"{keyword}= takes a list of rules (@contract rules or functions), got "
            f"{type_name(rules)}: pass {keyword}=[rule, ...]"
        )


def for_each_item(rule: Contract[Any], at: str = "") -> Contract[Any]:
    """`rule` (over one item) as a rule over the whole value: run on every item of every list
    the path `at` reaches ("": the value is the list; a segment that reaches a list goes on in
    each of its items: `item_rules`), each violation located under its item (`[3].qty`,
    `lines[3].qty`, `invoices[0].lines[3].qty`). A sync rule only."""
    if inspect.iscoroutinefunction(rule.check):
        raise TypeError(f"item contract {rule.name!r} must be a sync function")
    if rule.item:
        where = f"the items at {rule.items!r}" if rule.items else "items"
        raise TypeError(
            f"contract {rule.name!r} judges {where} already: give it in contracts=, not "
            "item_contracts="
        )
    parts = list_path(at) if at else ()

    def each(value: Any, ctx: ContractContext) -> list[Violation | _ContractBug]:
        found: list[Violation | _ContractBug] = []
        for loc, items in lists_at(value, parts):
            where = place(loc)
            for index, item in enumerate(items):
                try:
                    diagnostics = _diagnose(rule, item, rule(item, ctx))
                except Exception as exc:
                    diagnostics = [_crashed(rule, exc)]
                for diagnostic in diagnostics:
                    if diagnostic.source is Source.CONTRACT_ERROR:  # the caller's bug
                        return [_ContractBug(_diagnostic_under(where, index, diagnostic))]
                    found.append(_violation_under(where, index, diagnostic))
        return found

    each.__wrapped__ = rule.check  # type: ignore[attr-defined]  # the rule over one item
    return Contract(
        check=each,
        fields=tuple(f"{at}[*].{name}" for name in rule.fields) or ((at,) if at else ()),
        name=rule.name,
        description=rule.description,
        takes_context=True,
        on_fail=rule.on_fail,
        fix=rule.fix,
        item=True,
        items=at,
    )


def _under(at: str, index: int, path: str) -> str:
    if path in ("", ROOT):
        return f"{at}[{index}]"
    return f"{at}[{index}]{path}" if path.startswith("[") else f"{at}[{index}].{path}"


def _violation_under(at: str, index: int, diagnostic: Diagnostic) -> Violation:
    return Violation(
        diagnostic.constraint,
        fields=tuple(_under(at, index, name) for name in diagnostic.fields),
        path=_under(at, index, diagnostic.path),
        value=diagnostic.value,
        prescription=diagnostic.prescription,
    )


def _diagnostic_under(at: str, index: int, diagnostic: Diagnostic) -> Diagnostic:
    return dataclasses.replace(
        diagnostic,
        path=_under(at, index, diagnostic.path),
        fields=tuple(_under(at, index, name) for name in diagnostic.fields),
        constraint=f"{diagnostic.constraint} (on item {at}[{index}])",
    )


def check_policies(rules: Sequence[Contract[Any]], *, items: bool) -> None:
    """A TypeError for a policy these rules cannot have: `"drop"` only on item contracts."""
    if items:
        return
    for rule in rules:
        if rule.on_fail == "drop" and not rule.item:
            raise TypeError(
                f'contract {rule.name!r}: on_fail="drop" removes failing items of a list, so it '
                "is for item contracts: item_contracts= on a list target, or "
                '@contract(..., items="lines") for the list at `lines` inside the value'
            )


@dataclass(frozen=True, slots=True)
class _ContractBug:
    """An item contract's `contract_error` (it raised, or returned what is not a result), as
    the list contract's result: read as that diagnostic, never as a violation."""

    diagnostic: Diagnostic


def run_contracts(
    contracts: Sequence[Contract[Any]],
    value: Any,
    ctx: ContractContext,
    *,
    timeout_s: float | None = None,
) -> Generator[AwaitAll, list[Any], list[Diagnostic]]:
    """Run every contract on `value` (see `run_contract_groups`): their diagnostics in one list."""
    found = yield from run_contract_groups(contracts, value, ctx, timeout_s=timeout_s)
    return [diagnostic for group in found for diagnostic in group]


Watch: TypeAlias = Callable[[Sequence[Contract[Any]]], Diagnostic | None]
"""Called by `run_contract_groups` each time contracts have run on the value, with the ones
that just ran: a `contract_error` diagnostic when they did something a contract must not (the
judge's `judge_value` watches for a changed value), else None."""


def run_contract_groups(
    contracts: Sequence[Contract[Any]],
    value: Any,
    ctx: ContractContext,
    *,
    timeout_s: float | None = None,
    watch: Watch | None = None,
) -> Generator[AwaitAll, list[Any], list[list[Diagnostic]]]:
    """Run every contract on `value`, each one's diagnostics in its own list (in declaration
    order); async ones are handed to the driver in one batch.

    With `timeout_s`, an async contract still running after it is cancelled by the driver, and
    a sync one that returns after it (it cannot be interrupted) is a `contract_error` too: a
    verdict that came too late is not trusted, whatever it says. With `watch`, it is called
    after each contract is called (and its result read), and after the async batch with the
    contracts in it; what it returns goes in the list of the (first) contract it was given."""
    found: list[list[Diagnostic]] = [[] for _ in contracts]  # kept in declaration order
    pending: list[tuple[int, Awaitable[Any]]] = []
    for index, rule in enumerate(contracts):
        started = time.perf_counter()
        try:
            result = rule(value, ctx)
        except Exception as exc:
            found[index].append(_crashed(rule, exc))
            _watched(watch, (rule,), found[index])
            continue
        if inspect.isawaitable(result):
            pending.append((index, result))
            _watched(watch, (rule,), found[index])  # its sync part has run
            continue
        elapsed = time.perf_counter() - started
        if timeout_s is not None and elapsed > timeout_s:
            found[index].append(_late(rule, elapsed, timeout_s))
        else:
            found[index].extend(_diagnose(rule, value, result))
        _watched(watch, (rule,), found[index])
    if pending:
        results = yield AwaitAll(tuple(awaitable for _, awaitable in pending), timeout_s)
        for (index, _), result in zip(pending, results, strict=True):
            rule = contracts[index]
            if isinstance(result, Exception):
                found[index].append(_crashed(rule, result))
            else:
                found[index].extend(_diagnose(rule, value, result))
        ran = tuple(contracts[index] for index, _ in pending)
        _watched(watch, ran, found[pending[0][0]])
    return found


def _watched(watch: Watch | None, ran: Sequence[Contract[Any]], into: list[Diagnostic]) -> None:
    if watch is not None:
        diagnostic = watch(ran)
        if diagnostic is not None:
            into.append(diagnostic)


def _diagnose(rule: Contract[Any], value: Any, result: Any) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    try:
        _read(rule, value, result, out, nesting=_MAX_NESTING, seen=[0])
    except Exception as exc:  # a generator contract can raise half-way through
        out.append(_crashed(rule, exc))
    return out


def _read(
    rule: Contract[Any],
    value: Any,
    result: Any,
    out: list[Diagnostic],
    *,
    nesting: int,
    seen: list[int],
) -> None:
    """Append the diagnostics of one contract result to `out`. `seen[0]` counts the items read
    from iterables: at most MAX_VIOLATIONS in all, so an endless generator (even of Nones) ends."""
    if result is None or result is True:
        return
    if result is False:
        out.append(_violation(rule, value, Violation(rule.description or f"rule {rule.name}")))
    elif isinstance(result, str):
        out.append(_violation(rule, value, Violation(str.__str__(result))))
    elif isinstance(result, Violation):
        out.append(_violation(rule, value, result))
    elif isinstance(result, _ContractBug):
        out.append(result.diagnostic)
    elif isinstance(result, Iterable) and nesting > 0 and not isinstance(result, _NOT_VIOLATIONS):
        for item in result:
            seen[0] += 1
            if seen[0] > MAX_VIOLATIONS:
                break
            _read(rule, value, item, out, nesting=nesting - 1, seen=seen)
    else:
        out.append(_unreadable(rule, result))


def _violation(rule: Contract[Any], value: Any, violation: Violation) -> Diagnostic:
    problem = malformation(violation)
    if problem is not None:
        return _malformed(rule, problem)
    fields = tuple(str.__str__(name) for name in violation.fields or rule.fields)
    path = str.__str__(violation.path) if violation.path else (fields[0] if fields else ROOT)
    found = violation.value if violation.value is not _UNSET else value_at(value, path)
    values = {name: value_at(value, name) for name in fields}
    return Diagnostic(
        path=path,
        value=found,
        constraint=str.__str__(violation.constraint),
        prescription=_prescription(violation, fields, path),
        source=Source.CONTRACT,
        fields=fields,
        rule=rule.name,
        extra={"values": values},
    )


def _malformed(rule: Contract[Any], problem: str) -> Diagnostic:
    return Diagnostic(
        path=ROOT,
        value=problem,
        constraint=f"contract `{rule.name}` returned a malformed Violation: {problem}",
        prescription="This is a bug in the contract, not in the model's answer: fix the contract.",
        source=Source.CONTRACT_ERROR,
        fields=rule.fields,
        rule=rule.name,
    )


def _prescription(violation: Violation, fields: tuple[str, ...], path: str) -> str:
    constraint = str.__str__(violation.constraint)
    given = None if violation.prescription is None else str.__str__(violation.prescription)
    if len(fields) <= 1:
        target = fields[0] if fields else path
        return given or f"Change `{target}` so that: {constraint}."
    named = ", ".join(f"`{name}`" for name in fields)
    if given is None:
        return (
            f"This rule spans {named}: change any of them — including fields that already passed "
            f"their own checks — so that: {constraint}."
        )
    if all(name in given for name in fields):
        return given
    return f"{given} Fields involved: {named}; any of them may change."


def _late(rule: Contract[Any], elapsed: float, limit: float) -> Diagnostic:
    return Diagnostic(
        path=ROOT,
        value=f"{elapsed:.3g} s",
        constraint=f"contract `{rule.name}` must return within {limit:.3g} s "
        "(HealPolicy.contract_timeout_s, or what was left of deadline_s)",
        prescription="This is a problem in the contract, not in the model's answer: make it "
        "faster (or async, so it can be cancelled), or raise contract_timeout_s.",
        source=Source.CONTRACT_ERROR,
        fields=rule.fields,
        rule=rule.name,
    )


def _unreadable(rule: Contract[Any], result: Any) -> Diagnostic:
    """A result that is none of the accepted ones: a bug in the contract, reported as one."""
    shown = short_repr(result, 80)
    if isinstance(result, _NOT_VIOLATIONS):
        why = f" (a {type_name(result)} is not read as violations)"
    elif isinstance(result, Iterable):
        why = " nested too deeply"
    else:
        why = ""
    return Diagnostic(
        path=ROOT,
        value=shown,
        constraint=f"contract `{rule.name}` returned {shown}{why}: a contract returns None, "
        "True / False, a message, a Violation, or an iterable of them",
        prescription="This is a bug in the contract, not in the model's answer: fix the contract.",
        source=Source.CONTRACT_ERROR,
        fields=rule.fields,
        rule=rule.name,
    )


def _crashed(rule: Contract[Any], exc: BaseException) -> Diagnostic:
    return Diagnostic(
        path=ROOT,
        value=short_repr(describe_exception(exc), 300),
        constraint=f"contract `{rule.name}` raised {describe_exception(exc)}",
        prescription="This is a bug in the contract, not in the model's answer: fix the contract.",
        source=Source.CONTRACT_ERROR,
        fields=rule.fields,
        rule=rule.name,
    )


def value_at(value: Any, path: str) -> Any:
    """The value at `items[2].price` inside a model instance or plain data (MISSING if absent)."""
    if path == ROOT:
        return value
    node = value
    for match in _PATH_PART.finditer(path):
        key, index = match.groups()
        try:
            if index is not None:
                node = node[int(index)]
            elif isinstance(node, Mapping):
                node = node[key]
            else:
                node = getattr(node, attribute_name(node, key))
        except Exception:  # absent, or a property / __getitem__ that raises: not readable here
            return MISSING
    return node
