"""`healjson.dspy` (extra `dspy`): heal what a DSPy program's LM answers.

    dspy.configure(lm=dspy.LM("openai/gpt-4o-mini"), adapter=HealAdapter())
    prediction = dspy.Predict(Extract)(text="...")
    outcome_of(prediction)  # Healed: how the answer was read, the calls it took

`HealAdapter(base=None, contracts=..., policy=..., context=...)` wraps a DSPy adapter (the chat
adapter by default, or the caller's: `JSONAdapter()`, ...). The base adapter still writes every
request (`format`: the same prompts, demos and history); healjson reads the answers:

* **Parsing** runs L1 and the alignments on each output field: a field under a header in
  another case, a typed field's value (a pydantic model, a list, a literal, a number) in a code
  fence, with prose around it, with a trailing comma, as a JSON string, with keys in another
  case, or wrapped in an object; a JSON answer with the same slips, or wrapped. A text field
  (`str`, `Optional[str]`) is the model's text, as DSPy's chat adapter reads it. Then the
  fields as one object are judged by a `healjson.Healer` built from the signature's output
  fields: the schema, the `contracts` (healjson rules over that object, a pydantic model with
  one attribute per output field), pydantic's validators with `context=`. The healer reads
  each answer itself (its reply reader, `dspy_fields.chat_reader`): each field's local repairs
  are on the outcome's and the attempt's `flags` (and the trace), and the model's text is the
  answer everywhere the run shows one (`raw_text`, the events, the OpenTelemetry spans, the
  repair's assistant turn); a field given twice with different values is several answers
  (`policy.on_ambiguity`: asked again by default).
* **The LM's response** is read whole, from DSPy's record of the call (its history): the
  finish reason (a cut answer), a refusal, the usage the provider reported (the budgets'). The
  run's parameters reach the LM: `policy.escalate_model` is a copy of the LM with that model
  (`lm.copy(model=...)`), the truncation strategy's larger token limit its `max_tokens`.
* **Repair**: an answer that still fails is asked again with healjson's bounded repair request
  (the request's messages, the model's answer as the assistant turn, its diagnostics), not by
  re-issuing the whole generation (the chat adapter's JSON fallback), within
  `policy.max_attempts` calls in all. A repair may be answered in the base adapter's format or
  as one JSON object.
* **Failure** raises DSPy's own `AdapterParseError` (its `outcome` attribute: the `Degraded`),
  so DSPy programs, `Evaluate` and the optimisers handle it as they handle any parse failure.

DSPy's adapter callbacks (the global ones, and the base's, which are this adapter's) see one
`format` and one `parse` per answer, as with the base alone (`_frameworks.dspy_callbacks`). The
`context=` callable is given the call's inputs on every path.

Each prediction carries its outcome: `outcome_of(prediction)` (the prediction's
`healjson_outcome` key holds a `HealReport`, which saves as the outcome's JSON data). A call
that asks for several generations (`n > 1`), uses native tool calls or native response types
(citations, reasoning) is read with the healed parse alone, without repair.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, create_model, model_serializer

from . import (
    Degraded,
    Healed,
    Healer,
    HealPolicy,
    Outcome,
    Reply,
    Usage,
    outcome_from_dict,
)
from ._frameworks.core import (
    checked_policy,
    drive_sync,
    missing_extra,
    redact_text,
    rules_of,
    secrets_scope,
)
from ._frameworks.dspy_callbacks import own, report_parse
from ._frameworks.dspy_fields import (
    LastRead,
    chat_reader,
    lm_secrets,
    model_name,
    one_value_per_field,
    read_answer,
)
from ._frameworks.dspy_lm import LIMITS, cache_hits_marked, lm_reply, recorded, token_limit

try:
    from dspy.adapters.base import Adapter
    from dspy.adapters.chat_adapter import ChatAdapter
    from dspy.clients._deprecation import adapter_message_call
    from dspy.utils.exceptions import AdapterParseError
except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(missing_extra("dspy", "dspy")) from exc

__all__ = ["OUTCOME_KEY", "HealAdapter", "HealReport", "outcome_of"]

OUTCOME_KEY = "healjson_outcome"
"""The prediction key that holds the answer's `HealReport`."""

_MAX_KEPT = 256  # output models remembered per adapter (one per signature)
# `parse` judges one answer in hand, as `healjson.validate` does: one attempt, ambiguity asked
# about, no degenerate-output guard (the answer cost what it cost)
_PARSE_POLICY: Final = HealPolicy(max_attempts=1, max_whitespace_run=None, max_repeats=None)
_NO_USAGE: Final = Usage()

ContextArg = Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any] | None] | None
# the inputs of the prediction DSPy's own pipeline runs (several generations, native tool
# calls), for the `context=` callable of the `parse` it calls
_INPUTS: ContextVar[dict[str, Any] | None] = ContextVar("healjson_dspy_inputs", default=None)


class HealReport(BaseModel):
    """A prediction's healjson outcome (`outcome`), kept as a prediction field: saved with a
    program's demos as the outcome's JSON data (`Outcome.to_dict`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    outcome: Any

    @model_serializer
    def _as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = self.outcome.to_dict()
        return data

    def __repr__(self) -> str:
        return f"HealReport({self.outcome!r})"


def outcome_of(prediction: Any) -> Outcome[Any] | None:
    """The outcome of the answer a `HealAdapter` read for `prediction` (None: none did)."""
    getter = getattr(prediction, "get", None)
    found = getter(OUTCOME_KEY) if callable(getter) else None
    if isinstance(found, HealReport):
        return found.outcome  # type: ignore[no-any-return]
    if isinstance(found, Mapping):  # a demo loaded back from a saved program
        return outcome_from_dict(dict(found))
    return None


class HealAdapter(Adapter):  # type: ignore[misc]
    """A DSPy adapter that heals the answers of `base` (default: `ChatAdapter()`); see the
    module's documentation. `contracts`: healjson rules over the output fields as one object.
    `policy`: a `healjson.HealPolicy` (`max_attempts`: LM calls per prediction, the first one
    included). `context`: pydantic's validation context (and the contracts' `ctx.extra`): a
    mapping, or a callable given the call's inputs."""

    def __init__(
        self,
        base: Any = None,
        *,
        contracts: Iterable[Any] = (),
        policy: HealPolicy | None = None,
        context: ContextArg = None,
    ) -> None:
        base = ChatAdapter() if base is None else base
        if not isinstance(base, Adapter):
            raise TypeError(f"base must be a DSPy adapter, got {type(base).__name__}")
        if isinstance(base, HealAdapter):
            raise TypeError("base is a HealAdapter already: wrap the adapter it wraps once")
        if context is not None and not isinstance(context, Mapping) and not callable(context):
            raise TypeError(
                "context must be a mapping, a callable (inputs) -> mapping, or None, got "
                f"{type(context).__name__}"
            )
        self.base = base
        super().__init__(  # its callbacks are the base's (`callbacks`)
            callbacks=base.callbacks,
            use_native_function_calling=base.use_native_function_calling,
            native_response_types=base.native_response_types,
            parallel_tool_calls=base.parallel_tool_calls,
        )
        self.policy = checked_policy(policy)
        self.contracts = rules_of(contracts)
        self.context = context
        self._models: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HealAdapter({self.base!r}, contracts={len(self.contracts)})"

    def __getstate__(self) -> dict[str, Any]:  # copied or pickled: the caches start anew
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_models")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._models = {}
        self._lock = threading.Lock()

    @property
    def callbacks(self) -> list[Any]:
        """The base's callbacks: DSPy runs them, and its global ones, once on each `format`
        and `parse` of this adapter (`_frameworks.dspy_callbacks`), the base's own methods
        called without its wrappers."""
        found: list[Any] = self.base.callbacks
        return found

    @callbacks.setter
    def callbacks(self, value: list[Any]) -> None:
        self.base.callbacks = value

    # -- the base writes the requests -------------------------------------------------------

    def format(self, signature: Any, demos: list[dict[str, Any]], inputs: dict[str, Any]) -> Any:
        return own(self.base, "format")(signature, demos, inputs)

    def __getattr__(self, name: str) -> Any:  # the base's other helpers (its own methods)
        base = self.__dict__.get("base")
        if base is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(base, name)

    def _call_postprocess(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """DSPy's reading of a call's outputs (several generations, native tool calls), with
        this adapter's `parse`: healjson reads the answers."""
        found: list[dict[str, Any]] = Adapter._call_postprocess(self, *args, **kwargs)
        return found

    # -- healjson reads the answers ---------------------------------------------------------

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        """The output fields of one answer: the base's parse when it succeeds (and there are
        no contracts, nor a field given twice with different values), else healjson's L1 and
        alignments per field, then the schema and the contracts; `AdapterParseError` (with
        `outcome`) when the answer cannot be healed. The `context=` callable is given the
        inputs of the prediction DSPy is reading (several generations, native tool calls);
        called directly, outside a prediction, it is given an empty dict (no inputs known)."""
        fields = _fields(signature)
        answer = read_answer(completion, fields)
        if not self.contracts and (answer is None or not answer.ambiguous):
            try:
                found: dict[str, Any] = own(self.base, "parse")(signature, completion)
            except AdapterParseError:
                pass
            else:
                return found
        healer = self._healer(signature, _PARSE_POLICY)
        given = Reply(completion, usage=_NO_USAGE)  # a reply in hand: no call, no tokens spent
        run = healer.start((), context=self._context_of(_INPUTS.get()), given=given)
        outcome: Outcome[Any] = drive_sync(run)
        if isinstance(outcome, Healed):
            return _values(outcome.value, fields)
        raise self._failure(signature, completion, outcome)

    def __call__(
        self,
        lm: Any,
        lm_kwargs: dict[str, Any],
        signature: Any,
        demos: list[dict[str, Any]],
        inputs: dict[str, Any],
    ) -> list[dict[str, Any]]:
        _plan_request(self.base, lm, lm_kwargs, signature)
        processed = self._call_preprocess(lm, lm_kwargs, signature, inputs)
        if not _repairable(processed, signature, lm_kwargs):
            with _reading(inputs):
                return super().__call__(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[no-any-return]
        messages = self.format(processed, demos, inputs)
        if lm_kwargs.get("parallel_tool_calls") is not None:  # as `Adapter.__call__` asks
            lm_kwargs.setdefault("tool_choice", "auto")
        run = _Run(self, processed, messages, lm, lm_kwargs)

        def call(sent: list[dict[str, Any]], **params: Any) -> Reply:
            request = run.request(sent)
            model, kwargs = run.lm_for(params)
            with adapter_message_call(model, request):
                outputs = model(messages=request, **kwargs)
            return run.read(model, outputs)

        healer = self._healer(processed, self.policy)
        with secrets_scope(None, lm_secrets(lm, lm_kwargs)):  # the LM's key: never kept
            outcome = healer.run(call, messages, context=self._context_of(inputs), **run.params)
            return run.result(outcome, signature)

    async def acall(
        self,
        lm: Any,
        lm_kwargs: dict[str, Any],
        signature: Any,
        demos: list[dict[str, Any]],
        inputs: dict[str, Any],
    ) -> list[dict[str, Any]]:
        _plan_request(self.base, lm, lm_kwargs, signature)
        processed = self._call_preprocess(lm, lm_kwargs, signature, inputs)
        if not _repairable(processed, signature, lm_kwargs):
            with _reading(inputs):
                return await super().acall(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[no-any-return]
        messages = self.format(processed, demos, inputs)
        if lm_kwargs.get("parallel_tool_calls") is not None:  # as `Adapter.__call__` asks
            lm_kwargs.setdefault("tool_choice", "auto")
        run = _Run(self, processed, messages, lm, lm_kwargs)

        async def call(sent: list[dict[str, Any]], **params: Any) -> Reply:
            request = run.request(sent)
            model, kwargs = run.lm_for(params)
            with adapter_message_call(model, request):
                outputs = await model.acall(messages=request, **kwargs)
            return run.read(model, outputs)

        healer = self._healer(processed, self.policy)
        with secrets_scope(None, lm_secrets(lm, lm_kwargs)):  # the LM's key: never kept
            context = self._context_of(inputs)
            outcome = await healer.arun(call, messages, context=context, **run.params)
            return run.result(outcome, signature)

    # -- helpers ----------------------------------------------------------------------------

    def _model(self, signature: Any) -> Any:
        """The output fields as one pydantic model (built once per signature)."""
        slot = id(signature)
        with self._lock:
            known = self._models.get(slot)
            if known is not None and known[0] is signature:
                return known[1]
        definitions: dict[str, Any] = {
            name: (field.rebuild_annotation(), ... if field.is_required() else field.default)
            for name, field in signature.output_fields.items()
        }
        made = create_model(f"{signature.__name__}Output", **definitions)
        with self._lock:
            if len(self._models) >= _MAX_KEPT:
                self._models.clear()
            self._models[slot] = (signature, made)
        return made

    def _healer(self, signature: Any, policy: HealPolicy) -> Healer[Any]:
        """The signature's healer: its output fields as one model, the contracts, `policy`,
        each answer read in the chat format (`chat_reader`) before it is judged."""
        last = LastRead()
        contracts = self.contracts
        if policy.on_ambiguity == "reask":  # a field said two ways is asked again, valid or not
            contracts = (*contracts, one_value_per_field(last))
        healer = Healer(self._model(signature), contracts=contracts, policy=policy)
        return healer.with_reply_reader(chat_reader(_fields(signature), last))

    def _context_of(self, inputs: dict[str, Any] | None) -> Mapping[str, Any] | None:
        given = self.context
        if given is None or isinstance(given, Mapping):
            return given
        return given(dict(inputs or {}))

    def _failure(self, signature: Any, completion: str, outcome: Outcome[Any]) -> Exception:
        errors = getattr(outcome, "errors", ())
        described = "; ".join(d.describe(max_value_chars=80) for d in errors[:5])
        reason = getattr(outcome, "reason", "invalid_output")
        error = AdapterParseError(
            adapter_name=f"HealAdapter({type(self.base).__name__})",
            signature=signature,
            lm_response=redact_text(completion),
            message=f"healjson could not heal the answer ({reason}): {described}",
        )
        error.outcome = outcome
        found: Exception = error
        return found


def _forwarded(name: str) -> Callable[..., Any]:
    """`Adapter.<name>` as the wrapped adapter's own (`HealAdapter.base`)."""

    def method(self: HealAdapter, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.base, name)(*args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"HealAdapter.{name}"
    method.__doc__ = f"The wrapped adapter's `{name}`."
    return method


# Every method of DSPy's `Adapter` that `HealAdapter` does not implement itself is the wrapped
# adapter's (its formatting helpers: `format_user_message_content`, ...; the call's planning,
# `_call_preprocess`), read from the installed DSPy: a method a release adds is forwarded too.
# `__getattr__` alone would never reach them: `HealAdapter` inherits the base class's stubs.
_FORWARDED: Final = tuple(
    name
    for name, member in vars(Adapter).items()
    if callable(member) and not name.startswith("__") and name not in vars(HealAdapter)
)
for _name in _FORWARDED:
    setattr(HealAdapter, _name, _forwarded(_name))
del _name


@contextmanager
def _reading(inputs: dict[str, Any]) -> Iterator[None]:
    """DSPy's own pipeline reading a prediction of `inputs` (with this adapter's `parse`)."""
    token = _INPUTS.set(dict(inputs))
    try:
        yield
    finally:
        _INPUTS.reset(token)


def _plan_request(base: Any, lm: Any, lm_kwargs: dict[str, Any], signature: Any) -> None:
    """What the wrapped adapter's own `__call__` sets on a request before its pipeline runs,
    so that it is sent as the adapter alone would send it: DSPy's JSON adapter asks for
    structured output (`response_format`: the signature's JSON schema, or JSON mode). The one
    place HealAdapter reads a DSPy internal (`_prepare_response_format(lm, lm_kwargs,
    signature)`); a DSPy release without it (or with another signature) sets nothing here."""
    prepare = getattr(base, "_prepare_response_format", None)
    if not callable(prepare):
        return
    try:
        bound = inspect.signature(prepare).bind(lm, lm_kwargs, signature)
    except (TypeError, ValueError):  # another shape than this DSPy's: not ours to guess
        return
    prepare(*bound.args, **bound.kwargs)


class _Run:
    """One prediction's calls: the request's messages (the base's), the LM and its keyword
    arguments, the model's answers as DSPy returned them (with the response DSPy recorded for
    each)."""

    __slots__ = (
        "adapter",
        "escalated",
        "fields",
        "last",
        "limit",
        "lm",
        "lm_kwargs",
        "messages",
        "outputs",
        "params",
        "signature",
    )

    def __init__(
        self,
        adapter: HealAdapter,
        signature: Any,
        messages: list[Any],
        lm: Any,
        lm_kwargs: Mapping[str, Any],
    ) -> None:
        self.adapter = adapter
        self.signature = signature
        self.fields = _fields(signature)
        self.messages = messages
        self.lm = lm
        self.lm_kwargs = dict(lm_kwargs)
        self.outputs: list[Any] = []
        self.last = ""  # the model's last text
        self.escalated: dict[str, Any] = {}
        # the LM's output-token limit, as the run's parameter: the truncation strategy grows it
        self.limit, current = token_limit(lm, self.lm_kwargs)
        self.params: dict[str, Any] = {} if current is None else {self.limit: current}

    def request(self, sent: list[dict[str, Any]]) -> list[Any]:
        """A call's messages: the base's own (as it wrote them), then a repair's turns (the
        assistant turn quotes the model's text: the healer reads the chat format itself)."""
        return [*self.messages, *(dict(message) for message in sent[len(self.messages) :])]

    def lm_for(self, params: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """The LM a call goes to and its keyword arguments, with the run's parameters: `model`
        (`HealPolicy.escalate_model`) is a copy of the LM with that model; an output-token
        limit (the truncation strategy's) is set under the name the LM uses; any other
        parameter is passed on."""
        kwargs = dict(self.lm_kwargs)
        limits = [params[name] for name in LIMITS if params.get(name) is not None]
        kwargs.update(
            (name, value)
            for name, value in params.items()
            if name != "model" and name not in LIMITS
        )
        if limits:
            for name in LIMITS:
                kwargs.pop(name, None)
            kwargs[self.limit] = max(limits)
        model = params.get("model")
        if not isinstance(model, str) or not model or model == self.lm.model:
            return self.lm, kwargs
        name = model_name(self.lm.model, model)
        found = self.escalated.get(name)
        if found is None:
            found = self.escalated[name] = self.lm.copy(model=name)
        return found, kwargs

    def read(self, lm: Any, outputs: Any) -> Reply:
        """A call's answer: the model's text (the healer reads its sections), with the finish
        reason, refusal and usage the LM's response reported (DSPy's record of the call)."""
        output = outputs[0] if isinstance(outputs, list) and outputs else None
        text = output.get("text") if isinstance(output, dict) else output
        self.outputs.append(output)
        self.last = text if isinstance(text, str) else ""
        reasoning = output.get("reasoning_content") if isinstance(output, dict) else None
        return lm_reply(self.last or None, recorded(lm, outputs), reasoning)

    def result(self, outcome: Outcome[Any], signature: Any) -> list[dict[str, Any]]:
        """The prediction's values, its one parse reported to DSPy's callbacks (or the
        failure, raised there)."""
        outcome = cache_hits_marked(outcome)
        found: Any = _values(outcome.value, self.fields) if isinstance(outcome, Healed) else None
        if not isinstance(outcome, Healed):
            assert isinstance(outcome, Degraded)
            found = self.adapter._failure(signature, self.last, outcome)
        value = dict(report_parse(self.adapter, self.signature, self.last, found))
        for name in signature.output_fields:
            value.setdefault(name, None)
        output = self.outputs[-1] if self.outputs else None
        if isinstance(output, dict) and output.get("logprobs"):
            value["logprobs"] = output["logprobs"]
        value[OUTCOME_KEY] = HealReport(outcome=outcome)
        return [value]


def _fields(signature: Any) -> dict[str, Any]:
    return {name: field.annotation for name, field in signature.output_fields.items()}


def _values(instance: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    return {name: getattr(instance, name) for name in fields}


def _repairable(processed: Any, signature: Any, lm_kwargs: Mapping[str, Any]) -> bool:
    """Whether this call's one answer can be healed and repaired: a single generation whose
    output fields are all the adapter's to read."""
    if (lm_kwargs.get("n") or 1) > 1 or lm_kwargs.get("num_generations", 1) > 1:
        return False
    return set(processed.output_fields) == set(signature.output_fields)
