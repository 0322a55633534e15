"""`Healer`: the provider-agnostic entry point: configure once, then `run` or `arun` a request."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from pydantic_core import to_json

from healjson._core.judge.contracts import (
    Contract,
    ContractContext,
    Rule,
    as_contracts,
    check_policies,
    for_each_item,
)
from healjson._core.judge.enforcement import Enforcement, answer_shape
from healjson._core.judge.item_rules import path_problem
from healjson._core.observe import events as _events
from healjson._core.outcome.outcome import Outcome
from healjson._core.parse import check_ambiguity
from healjson._core.parse.read import Ambiguity
from healjson._core.redact import secrets_scope
from healjson._core.repair.example import Golden
from healjson._core.stream.reading import JsonReader
from healjson._core.stream.session import StreamSession
from healjson._core.target.target import SpecialForm, Target, list_item_type, target_for
from healjson._core.wire.effects import CacheStore, CallResult, ModelCall
from healjson._core.wire.reply import Reply, Usage

from .answers import HealSpec, ReplyReader
from .cache import CachedRuns
from .drive import drive_async, drive_sync
from .engine import heal_flow
from .given import given_text, marked_as_data
from .messages import make_context, normalise_messages
from .policy import HealPolicy
from .replay import replay
from .start import Quick, Run
from .streams import AsyncHealStream, HealStream, stream_async, stream_sync

__all__ = ["Healer", "Run", "validate"]

_NO_CONTRACTS = ContractContext()  # what a run without contracts hands L2 (which never reads it)

T = TypeVar("T")


class Healer(Generic[T]):
    """Heal one kind of answer: a target type, its contracts, a policy and a fallback.

    The target is a type pydantic validates or a JSON Schema dict (`Healer[Any]`: the value
    is the plain JSON value; contracts receive it; pydantic's validation `context` does not
    apply to it).

    `call` (for `run`) takes the chat messages plus any keyword parameters and returns a string,
    an OpenAI `ChatCompletion` (or anything shaped like one) or a `healjson.Reply`; it may raise.
    `context=` (a mapping) is the contracts' `ctx.extra` and pydantic's validation context
    (`info.context` in a validator) in every validation of the run, the very object passed.
    Whatever happens at call time, `run` returns `Healed` or `Degraded`. Mistakes in the
    configuration itself (an unknown contract field, an example that does not validate) raise here.
    `cache=` (a `healjson.ResponseCache`, or any store with `get` / `put`): a request answered
    before is served from it with no model call, once its answer passes today's schema and
    contracts again (`healjson._core.run.cache`); each healed answer is stored.
    """

    @overload
    def __init__(
        self: Healer[T],
        model: type[T],
        *,
        contracts: Iterable[Rule[T]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
        item_contracts: Iterable[Rule[Any]] = (),
        cache: CacheStore | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self: Healer[Any],
        model: SpecialForm | Mapping[str, Any],
        *,
        contracts: Iterable[Rule[Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
        item_contracts: Iterable[Rule[Any]] = (),
        cache: CacheStore | None = None,
    ) -> None: ...
    def __init__(
        self,
        model: Any,
        *,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
        item_contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        cache: CacheStore | None = None,
    ) -> None:
        policy = HealPolicy() if policy is None else policy
        if not isinstance(policy, HealPolicy):
            raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
        target = target_for(model)
        rules = as_contracts(contracts)
        check_policies(rules, items=False)
        per_item = as_contracts(item_contracts, "item_contracts")
        if per_item and list_item_type(target.type_) is None:
            raise TypeError(f"item_contracts need a list target (list[Item]), not {target.name}")
        every = (*rules, *(for_each_item(rule) for rule in per_item))
        _check_fields(target, every)
        checked = [_checked_example(target, index, ex) for index, ex in enumerate(examples)]
        self.target: Target[T] = target
        self.contracts = rules
        self.item_contracts = per_item
        self.policy = policy
        self.fallback = fallback
        self.examples = tuple(checked)
        self.spec = HealSpec(target, every, policy, fallback, Golden(target, checked, every))
        self.cache = cache
        self._cached = None if cache is None else _cached_runs(cache, self.spec)

    def run(
        self,
        call: Callable[..., Any],
        messages: Any,
        *,
        context: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Outcome[T]:
        """Call the model through `call` and heal its answer (blocking). The credentials in
        `params` are known to the run (`redact.secrets_scope`): nothing it stores, emits or
        returns holds them."""
        run = self.start(messages, context=context, params=params)
        outcome: Outcome[T] = drive_sync(run, call, _params_scope(params))
        return outcome

    async def arun(
        self,
        call: Callable[..., Awaitable[Any]] | Callable[..., Any],
        messages: Any,
        *,
        context: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Outcome[T]:
        """Like `run`, awaiting `call` (and any async contracts) on the running loop."""
        run = self.start(messages, context=context, params=params)
        outcome: Outcome[T] = await drive_async(run, call, _params_scope(params))
        return outcome

    def stream(
        self,
        call: Callable[..., Any],
        messages: Any,
        *,
        context: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> HealStream[T]:
        """Like `run`, for a `call` that streams: it returns the SDK's stream (or any iterable
        of text pieces or chunks). Iterate the result for `Partial[T]` snapshots (or
        `.items()` for a list target), then read `.outcome`. Nothing is called until the
        iteration starts."""
        run = self.start(messages, context=context, params=params)
        return stream_sync(run.flow, call, self.reader(run), _params_scope(params))

    def astream(
        self,
        call: Callable[..., Any],
        messages: Any,
        *,
        context: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> AsyncHealStream[T]:
        """`stream` for async code: `call` may return an awaitable of the stream, and the
        stream may be async (`async for` over the result)."""
        run = self.start(messages, context=context, params=params)
        return stream_async(run.flow, call, self.reader(run), _params_scope(params))

    # -- the hand-off to drivers: what adapters, runners and integrations call ----------------

    def start(
        self,
        messages: Any,
        *,
        context: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        enforcement: Enforcement | None = None,
        given: Reply | None = None,
        observed: bool = True,
    ) -> Run:
        """A run of this healer on `messages`, not yet driven: its flow, for any driver
        (`drive.drive_sync` / `drive_async`, the stream objects, `replay.replay`), and its
        context. `params` go to every model call; `enforcement`: the schema the adapter's
        request asks the endpoint to enforce; `given`: a reply already in hand, judged as the
        first attempt (no model call for it); `observed=False`: no events, spans or metrics
        (a run replayed from stored results: it would repeat them on every replay)."""
        original = normalise_messages(messages)
        ctx = _run_context(self.spec, context, original)
        params = {} if params is None else params
        cached = self._cached
        if (
            given is None
            and cached is None
            and observed
            and self.policy.deadline_s is None
            and self.policy.token_budget is None  # a budget is checked before the first call
            and _events.quiet()
        ):  # nothing listens, no cache, no deadline: the driver may make the first call itself
            return Quick(self.spec, original, params, ctx, enforcement)
        flow = heal_flow(
            self.spec,
            original,
            params,
            ctx,
            given=given,
            started=time.monotonic(),
            observed=observed,
            enforcement=enforcement,
            cache=None if cached is None or given is not None else cached.run(original, params),
        )
        return Run(flow, ctx, enforcement)

    def reader(self, run: Run, one_value: Callable[[], bool] | None = None) -> JsonReader:
        """The reader a driver is given for `run`'s streamed calls: a session per call.
        `one_value`: asked once a call has returned its stream, whether that call's request
        constrained the output to one JSON value (an adapter's JSON-mode tier)."""
        target, rules, per_item = self.target, self.contracts, self.item_contracts
        ctx = run.context

        def new_session(effect: ModelCall) -> StreamSession:
            one = one_value is not None and one_value()
            shape = answer_shape(run.enforcement, effect.params) if one else (None, None)
            return StreamSession(target, rules, per_item, ctx, one_value=one, shape=shape)

        # under on_truncation="degrade" a cut answer ends the run: a breach read before a cut
        # that may follow would repair instead, so nothing is stopped early; nor is a reply
        # reader's text, which is judged only once read whole
        policy = self.policy
        abort = (
            policy.stream_abort
            and policy.on_truncation != "degrade"
            and self.spec.reply_reader is None
        )
        return JsonReader(new_session, abort, (policy.max_whitespace_run, policy.max_repeats))

    def replay(
        self,
        messages: Any,
        results: Sequence[CallResult],
        *,
        context: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> ModelCall | Outcome[T]:
        """The run on `messages` given the results of its first model calls: its outcome, or
        the next model call it makes (see `replay.replay`). For work whose calls are made
        elsewhere and later: a provider batch round per call, a pipeline that calls the model
        itself. A replayed run emits no events, spans or metrics."""
        run = self.start(messages, context=context, params=params, observed=False)
        return replay(run.flow, results)

    def with_fallback(self, fallback: Any) -> Healer[T]:
        """A copy that differs only in its fallback: it shares the target, contracts, policy,
        examples and golden example, so it costs no synthesis and no contract checks."""
        twin = self._twin(dataclasses.replace(self.spec, fallback=fallback))
        twin.fallback = fallback
        if self._cached is not None:
            twin._cached = self._cached.for_spec(twin.spec)
        return twin

    def with_reply_reader(self, reader: ReplyReader | None) -> Healer[T]:
        """A copy whose runs read each reply's text with `reader` before judging it: for an
        integration whose model answers in a text format of its own (DSPy's `[[ ## field ## ]]`
        sections, XML tags), turned into the JSON text L1 and L2 judge (`answers.ReadReply`:
        the answers found, the local repairs made). The model's text stays the reply's
        everywhere else: the attempts' and the outcome's `raw_text`, the events, spans and
        trace, the answer a repair quotes, what a response cache stores. It shares the target,
        contracts, policy, examples and golden example; None: replies judged as they come."""
        twin = self._twin(dataclasses.replace(self.spec, reply_reader=reader))
        if self.cache is not None:  # a hit is judged again: with the reader too
            twin._cached = _cached_runs(self.cache, twin.spec)
        return twin

    def with_cache(self, cache: CacheStore | None) -> Healer[T]:
        """A copy that differs only in its response cache (`cache=`, as the constructor takes
        it; None: none): the same target, contracts, policy, fallback, examples, golden example
        and reply reader, so the same cache keys (an integration that routes a healer's lookups
        through its own steps keeps everything else the caller configured)."""
        twin = self._twin(self.spec)
        twin.cache = cache
        twin._cached = None if cache is None else _cached_runs(cache, twin.spec)
        return twin

    def _twin(self, spec: HealSpec) -> Healer[T]:
        """A shallow copy (without copy.copy's generic path) with `spec`."""
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        twin.spec = spec
        return twin

    def __repr__(self) -> str:
        return (
            f"Healer({self.target.name}, contracts={len(self.contracts)}, "
            f"max_attempts={self.policy.max_attempts})"
        )


def _params_scope(params: Mapping[str, Any]) -> secrets_scope | None:
    """The scope a `run` / `arun` is driven in: its call's parameters' credentials known (a
    key in `extra_headers`, an `api_key=`), added to any scope around it (a nested scope adds
    to the outer one); None for a call without parameters (nothing to know). The wrapped
    clients drive their runs in their own scope, never through here."""
    return secrets_scope(None, params) if params else None


def _cached_runs(cache: CacheStore, spec: HealSpec) -> CachedRuns:
    """The healer's runs through `cache` (checked: a store needs `get` and `put`)."""
    if not (callable(getattr(cache, "get", None)) and callable(getattr(cache, "put", None))):
        raise TypeError(
            f"cache must be a healjson.ResponseCache (or a store with get(key) and "
            f"put(key, value)), got {type(cache).__name__}"
        )
    return CachedRuns(cache, spec)


def _run_context(
    spec: HealSpec, context: Any, original: tuple[dict[str, Any], ...]
) -> ContractContext:
    """A run's context, by one rule for every entry point: built from the caller's `context=`
    and the request when anything may read it — a contract (whole-value or item: `spec.contracts`
    holds both) or pydantic (a `context=` given is its validation context); else the shared
    empty one (the run's L2 never reads it)."""
    if spec.contracts or context is not None:
        return make_context(context, original)
    return _NO_CONTRACTS


def _check_fields(target: Target[Any], rules: Iterable[Contract[Any]]) -> None:
    """A ValueError for a rule that names what the target does not have: a field (its first
    name) of a whole-value rule, or, for a rule over items, a segment of its `items=` path
    (each checked against what the path reaches: `item_rules.path_problem`), a path that
    reaches no list, or a field of the items."""
    names = target.field_names
    for rule in rules:
        if rule.item:
            prefix = f"{rule.items}[*]."
            own = tuple(name[len(prefix) :] for name in rule.fields if name.startswith(prefix))
            problem = path_problem(target, rule.items, own)
            if problem is not None:
                raise ValueError(f"contract {rule.name!r} {problem}")
            continue
        if names is None:
            continue
        for name in rule.fields:
            head = name.split(".", 1)[0].split("[", 1)[0]
            if head not in names:
                raise ValueError(
                    f"contract {rule.name!r} names field {name!r}, which {target.name} does not "
                    f"have; its fields are: {', '.join(sorted(names))}"
                )


def _checked_example(target: Target[Any], index: int, example: Any) -> Any:
    try:
        if isinstance(example, str | bytes):
            return target.adapter.validate_json(example)
        return target.adapter.validate_json(to_json(example))
    except Exception as exc:
        raise ValueError(
            f"examples[{index}] does not validate against {target.name}; golden examples must be "
            f"valid answers. pydantic said: {exc}"
        ) from exc


@overload
def validate(
    text: str,
    model: type[T],
    *,
    contracts: Iterable[Rule[T]] = (),
    context: Any = None,
    finish_reason: str | None = None,
    on_ambiguity: Ambiguity = "reask",
) -> Outcome[T]: ...
@overload
def validate(
    text: str,
    model: SpecialForm | Mapping[str, Any],
    *,
    contracts: Iterable[Rule[Any]] = (),
    context: Any = None,
    finish_reason: str | None = None,
    on_ambiguity: Ambiguity = "reask",
) -> Outcome[Any]: ...
def validate(
    text: str,
    model: Any,
    *,
    contracts: Iterable[Any] = (),
    context: Any = None,
    finish_reason: str | None = None,
    on_ambiguity: Ambiguity = "reask",
) -> Outcome[Any]:
    """L1 + L2 on a reply you already have (no model call): `Healed` or `Degraded`.

    `model` is a type pydantic validates or a JSON Schema dict (the value is then the plain
    JSON value, validated by `jsonschema`; a validation context has nothing to reach there).

    The engine's own run, with `text` as the one reply it judges (one attempt, no repair):
    degrades with `invalid_output` (or, more precisely, `empty_output`, `token_truncated`,
    `contract_error`), never raises on bad text. The degenerate-output guard does not apply
    (it bounds what a model call spends: a reply in hand cost what it cost). A bad `model`,
    contract or `on_ambiguity` raises at once: that is a programming error, not a runtime
    failure. `context`: a mapping of data (the contracts' `ctx.extra` and pydantic's
    validation context), a `ContractContext` (its `extra` is pydantic's), or the request's
    messages or prompt (no validation context then).
    """
    target = target_for(model)
    rules = as_contracts(contracts)
    check_policies(rules, items=False)
    if rules:  # what each rule names must be the target's, as a `Healer` checks
        _check_fields(target, rules)
    policy = _validate_policy(on_ambiguity)
    spec = HealSpec(target, rules, policy)
    ctx = _run_context(spec, context, ())
    text, as_data = given_text(text)  # text, or an answer already parsed (judged as data)
    given = Reply(text, finish_reason, usage=_NO_USAGE)  # no call was made: no tokens spent
    outcome: Outcome[Any] = drive_sync(heal_flow(spec, ctx.messages, {}, ctx, given=given))
    return marked_as_data(outcome) if as_data else outcome


# the degenerate-output guard bounds what a model call spends; a reply in hand (`validate`) cost
# what it cost already, and a long repetitive answer that validates is a value there
_NO_GUARD: dict[str, Any] = {"max_whitespace_run": None, "max_repeats": None}
# one attempt, judged under each ambiguity mode (built once: a policy checks its fields)
_VALIDATE_POLICIES: dict[str, HealPolicy] = {
    mode: HealPolicy(max_attempts=1, on_ambiguity=mode, **_NO_GUARD)
    for mode in ("reask", "first", "last")
}
_NO_USAGE = Usage()


def _validate_policy(mode: Any) -> HealPolicy:
    try:
        found = _VALIDATE_POLICIES.get(mode)
    except TypeError:  # unhashable: not a mode
        found = None
    if found is None:
        check_ambiguity(mode)  # raises for anything that is not a mode
        found = HealPolicy(max_attempts=1, on_ambiguity=mode, **_NO_GUARD)
    return found
