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
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Generic, Literal, Protocol, TypeAlias, TypeVar, get_args, overload

from healjson._core.diagnostic import (
    ROOT,
    Diagnostic,
    Source,
    describe_exception,
    safe_repr,
    short_repr,
    type_name,
)
from healjson._core.sentinels import MISSING
from healjson._core.wire.effects import AwaitAll

__all__ = [
    "AwaitAll",
    "Contract",
    "ContractContext",
    "OnFail",
    "Rule",
    "Violation",
    "as_contract",
    "contract",
    "for_each_item",
    "run_contracts",
]

_UNSET: Any = object()
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


@dataclass(frozen=True, slots=True)
class Violation:
    """A broken rule: what must hold (`constraint`), and optionally where and how to fix it.

    `fields` defaults to the contract's declared fields, `path` to the first of them, `value` to
    the value found there, and `prescription` to an instruction that names every field involved.

    The constructor raises TypeError for wrong attribute types (`constraint`, `path` and
    `prescription` must be strings, `fields` a sequence of strings): a misuse fails where it is
    written, and inside a contract that becomes a `contract_error` naming it. The engine checks
    again what a contract returns, since a Violation can be altered past these checks (a
    subclass, `object.__setattr__`); a malformed one becomes a `contract_error` too.
    """

    constraint: str
    fields: tuple[str, ...] = ()
    path: str | None = None
    value: Any = _UNSET
    prescription: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.fields, str):
            raise TypeError(
                f"Violation.fields must be a sequence of names, e.g. ({self.fields!r},)"
            )
        try:
            fields = tuple(self.fields)
        except TypeError:
            raise TypeError(
                f"Violation.fields must be a sequence of names, got {type_name(self.fields)}"
            ) from None
        object.__setattr__(self, "fields", fields)
        problem = malformation(self)
        if problem is not None:
            raise TypeError(problem)

    def __repr__(self) -> str:
        # every attribute through the safe renderer: asyncio and pytest repr results, and a
        # value may be unprintable, cyclic or (a shared structure) exponentially long to print
        value = "<unset>" if self.value is _UNSET else short_repr(self.value, 200)
        return (
            f"Violation(constraint={safe_repr(self.constraint, 200)}, "
            f"fields={safe_repr(self.fields, 200)}, path={safe_repr(self.path, 200)}, "
            f"value={value}, prescription={safe_repr(self.prescription, 200)})"
        )


def malformation(violation: Violation) -> str | None:
    """What is wrong with a Violation's attribute types (None when nothing is)."""
    constraint, fields = violation.constraint, violation.fields
    if not isinstance(constraint, str):
        return f"Violation.constraint must be a string, got {type_name(constraint)}"
    if isinstance(fields, str) or not isinstance(fields, tuple | list):
        return f"Violation.fields must be a sequence of names, got {type_name(fields)}"
    for name in fields:
        if not isinstance(name, str):
            return f"Violation.fields must hold names (strings), got {short_repr(name, 40)}"
    for attribute in ("path", "prescription"):
        value = getattr(violation, attribute)
        if value is not None and not isinstance(value, str):
            return f"Violation.{attribute} must be a string or None, got {type_name(value)}"
    return None


_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})
"""The `extra` of a context the caller gave no data for (shared, read-only)."""


def _no_extra() -> Mapping[str, Any]:
    return _NO_EXTRA


@dataclass(frozen=True, slots=True)
class ContractContext:
    """What a contract may read besides the value: the original request and caller data.

    `extra` is the caller's `context=` mapping itself (not a copy); the same object is
    pydantic's validation context (`info.context` in a validator) in every validation of the
    run: see `validation_context`."""

    messages: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=_no_extra)
    raw_text: str = ""
    spent: list[Any] = field(default_factory=list, repr=False, compare=False)
    """Model calls the contracts made during the run (`record_usage`), not yet counted in it."""

    def record_usage(self, usage: Any) -> None:
        """Count what a contract's own model call spent (a `Usage`, e.g. `healjson.judge`'s)
        in the run's usage: the run adds it after the contracts ran."""
        self.spent.append(usage)

    @property
    def validation_context(self) -> Any:
        """pydantic's validation context for the run: `extra` (the caller's `context=`
        mapping, the very object), or None when the caller gave no data."""
        extra = self.extra
        return None if extra is _NO_EXTRA else extra

    @property
    def input_text(self) -> str:
        """The text of the user turns of the original messages, joined by blank lines."""
        parts: list[str] = []
        for message in self.messages:
            if message.get("role", "user") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(
                    str(part.get("text", ""))
                    for part in content
                    if isinstance(part, Mapping) and part.get("type") == "text"
                )
        return "\n\n".join(parts)


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
    """A rule over each item of a list, run on the whole list (`for_each_item`)."""

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
    """
    if on_fail not in ON_FAIL:
        raise TypeError(f"on_fail must be one of {sorted(ON_FAIL)}, got {short_repr(on_fail, 40)}")
    if on_fail == "fix" and not callable(fix):
        raise TypeError('on_fail="fix" needs fix=, a function: the value -> the corrected value')
    if on_fail != "fix" and fix is not None:
        raise TypeError(f'fix= is only used with on_fail="fix", not on_fail={on_fail!r}')
    if isinstance(fields, str):
        raise TypeError(f"contract fields must be a sequence of names, e.g. ({fields!r},)")
    fields = tuple(fields)
    for item in fields:
        if not isinstance(item, str):
            raise TypeError(f"contract fields must be names (strings), got {short_repr(item, 40)}")

    def build(fn: Callable[..., Any]) -> Contract[Any]:
        if not callable(fn):
            raise TypeError(f"@contract needs a function, got {fn!r}")
        return Contract(
            check=fn,
            fields=tuple(fields),
            name=name or str(getattr(fn, "__name__", "contract")),
            description=description or inspect.getdoc(fn) or "",
            takes_context=_arity(fn) >= 2,
            on_fail=on_fail,
            fix=fix,
        )

    return build(check) if check is not None else build


def as_contract(rule: Any) -> Contract[Any]:
    """Accept a `Contract` or a bare function (wrapped with no declared fields)."""
    if isinstance(rule, Contract):
        return rule
    if callable(rule):
        return contract(rule)
    raise TypeError(f"contracts must be functions or @contract rules, got {rule!r}")


def for_each_item(rule: Contract[Any]) -> Contract[Any]:
    """A rule over one item, as a rule over a whole list: it runs on every item, and what it
    finds is located under the item (`[3].qty`). A sync rule only (`item_contracts`)."""
    if inspect.iscoroutinefunction(rule.check):
        raise TypeError(f"item contract {rule.name!r} must be a sync function")

    def each(items: Any, ctx: ContractContext) -> list[Violation | _ContractBug]:
        found: list[Violation | _ContractBug] = []
        for index, item in enumerate(items if isinstance(items, list | tuple) else ()):
            try:
                diagnostics = _diagnose(rule, item, rule(item, ctx))
            except Exception as exc:
                diagnostics = [_crashed(rule, exc)]
            for diagnostic in diagnostics:
                if diagnostic.source is Source.CONTRACT_ERROR:  # the caller's bug, not the model's
                    return [_ContractBug(_diagnostic_under(index, diagnostic))]
                found.append(_violation_under(index, diagnostic))
        return found

    return Contract(
        check=each,
        fields=tuple(f"[*].{name}" for name in rule.fields),
        name=rule.name,
        description=rule.description,
        takes_context=True,
        on_fail=rule.on_fail,
        fix=rule.fix,
        item=True,
    )


def check_policies(rules: Sequence[Contract[Any]], *, items: bool) -> None:
    """A TypeError for a policy these rules cannot have: `"drop"` only on item contracts."""
    if items:
        return
    for rule in rules:
        if rule.on_fail == "drop" and not rule.item:
            raise TypeError(
                f'contract {rule.name!r}: on_fail="drop" removes failing items of a list, so it '
                "is for item contracts (item_contracts=), not for a whole-value rule"
            )


@dataclass(frozen=True, slots=True)
class _ContractBug:
    """An item contract's `contract_error` (it raised, or returned what is not a result), as
    the list contract's result: read as that diagnostic, never as a violation."""

    diagnostic: Diagnostic


def _under(index: int, path: str) -> str:
    if path in ("", ROOT):
        return f"[{index}]"
    return f"[{index}]{path}" if path.startswith("[") else f"[{index}].{path}"


def _violation_under(index: int, diagnostic: Diagnostic) -> Violation:
    return Violation(
        diagnostic.constraint,
        fields=tuple(_under(index, name) for name in diagnostic.fields),
        path=_under(index, diagnostic.path),
        value=diagnostic.value,
        prescription=diagnostic.prescription,
    )


def _diagnostic_under(index: int, diagnostic: Diagnostic) -> Diagnostic:
    return dataclasses.replace(
        diagnostic,
        path=_under(index, diagnostic.path),
        fields=tuple(_under(index, name) for name in diagnostic.fields),
        constraint=f"{diagnostic.constraint} (on item [{index}])",
    )


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if any(p.kind is p.VAR_POSITIONAL for p in positional):
        return 2
    return len(positional)


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


def run_contract_groups(
    contracts: Sequence[Contract[Any]],
    value: Any,
    ctx: ContractContext,
    *,
    timeout_s: float | None = None,
) -> Generator[AwaitAll, list[Any], list[list[Diagnostic]]]:
    """Run every contract on `value`, each one's diagnostics in its own list (in declaration
    order); async ones are handed to the driver in one batch.

    With `timeout_s`, an async contract still running after it is cancelled by the driver, and
    a sync one that returns after it (it cannot be interrupted) is a `contract_error` too: a
    verdict that came too late is not trusted, whatever it says."""
    found: list[list[Diagnostic]] = [[] for _ in contracts]  # kept in declaration order
    pending: list[tuple[int, Awaitable[Any]]] = []
    for index, rule in enumerate(contracts):
        started = time.perf_counter()
        try:
            result = rule(value, ctx)
        except Exception as exc:
            found[index].append(_crashed(rule, exc))
            continue
        if inspect.isawaitable(result):
            pending.append((index, result))
            continue
        elapsed = time.perf_counter() - started
        if timeout_s is not None and elapsed > timeout_s:
            found[index].append(_late(rule, elapsed, timeout_s))
        else:
            found[index].extend(_diagnose(rule, value, result))
    if pending:
        results = yield AwaitAll(tuple(awaitable for _, awaitable in pending), timeout_s)
        for (index, _), result in zip(pending, results, strict=True):
            rule = contracts[index]
            if isinstance(result, Exception):
                found[index].append(_crashed(rule, result))
            else:
                found[index].extend(_diagnose(rule, value, result))
    return found


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
                node = getattr(node, _attribute_name(node, key))
        except Exception:  # absent, or a property / __getitem__ that raises: not readable here
            return MISSING
    return node


def _attribute_name(node: Any, key: str) -> str:
    """The Python attribute for `key`, which may be a field's alias (`orderId` for `order_id`)."""
    fields = getattr(type(node), "model_fields", None)
    if isinstance(fields, Mapping) and key not in fields:
        for name, info in fields.items():
            if key in (getattr(info, "alias", None), getattr(info, "validation_alias", None)):
                return str(name)
    return key
