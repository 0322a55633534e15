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
  case, or wrapped in an object; a JSON answer with the same slips, or wrapped. Then the fields
  as one object are judged by a `healjson.Healer` built from the signature's output fields: the
  schema, the `contracts` (healjson rules over that object, a pydantic model with one attribute
  per output field), pydantic's validators with `context=`.
* **Repair**: an answer that still fails is asked again with healjson's bounded repair request
  (the request's messages, the model's answer as the assistant turn, its diagnostics), not by
  re-issuing the whole generation (the chat adapter's JSON fallback), within
  `policy.max_attempts` calls in all. A repair may be answered in the base adapter's format or
  as one JSON object.
* **Failure** raises DSPy's own `AdapterParseError` (its `outcome` attribute: the `Degraded`),
  so DSPy programs, `Evaluate` and the optimisers handle it as they handle any parse failure.

Each prediction carries its outcome: `outcome_of(prediction)` (the prediction's
`healjson_outcome` key holds a `HealReport`, which saves as the outcome's JSON data). A call
that asks for several generations (`n > 1`), uses native tool calls or native response types
(citations, reasoning) is read with the healed parse alone, without repair.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model, model_serializer
from pydantic_core import to_json

from . import Degraded, Healed, Healer, HealPolicy, Outcome, Reply, outcome_from_dict, validate
from ._frameworks.core import checked_policy, missing_extra, quote_answer, rules_of
from ._frameworks.dspy_fields import read_fields

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

ContextArg = Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any] | None] | None


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
        # the base's own callbacks run on its `format` and `parse`; none twice
        super().__init__(
            callbacks=[],
            use_native_function_calling=base.use_native_function_calling,
            native_response_types=base.native_response_types,
            parallel_tool_calls=base.parallel_tool_calls,
        )
        self.base = base
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

    # -- the base writes the requests -------------------------------------------------------

    def format(self, signature: Any, demos: list[dict[str, Any]], inputs: dict[str, Any]) -> Any:
        return self.base.format(signature, demos, inputs)

    def __getattr__(self, name: str) -> Any:  # the base's other formatting helpers
        base = self.__dict__.get("base")
        if base is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(base, name)

    # -- healjson reads the answers ---------------------------------------------------------

    def parse(self, signature: Any, completion: str) -> dict[str, Any]:
        """The output fields of one answer: the base's parse when it succeeds (and there are
        no contracts), else healjson's L1 and alignments per field, then the schema and the
        contracts; `AdapterParseError` (with `outcome`) when the answer cannot be healed."""
        if not self.contracts:
            try:
                found: dict[str, Any] = self.base.parse(signature, completion)
            except AdapterParseError:
                pass
            else:
                return found
        fields = _fields(signature)
        outcome = validate(
            self._answer_text(completion, fields),
            self._model(signature),
            contracts=self.contracts,
            context=self._context_of(None),
        )
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
        processed = self._call_preprocess(lm, lm_kwargs, signature, inputs)
        if not _repairable(processed, signature, lm_kwargs):
            return super().__call__(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[no-any-return]
        messages = self.format(processed, demos, inputs)
        run = _Run(self, processed, messages)

        def call(sent: list[dict[str, Any]]) -> Reply:
            request = run.request(sent)
            with adapter_message_call(lm, request):
                outputs = lm(messages=request, **lm_kwargs)
            return run.read(outputs)

        healer = self._healer(processed)
        outcome = healer.run(call, messages, context=self._context_of(inputs))
        return run.result(outcome, signature)

    async def acall(
        self,
        lm: Any,
        lm_kwargs: dict[str, Any],
        signature: Any,
        demos: list[dict[str, Any]],
        inputs: dict[str, Any],
    ) -> list[dict[str, Any]]:
        processed = self._call_preprocess(lm, lm_kwargs, signature, inputs)
        if not _repairable(processed, signature, lm_kwargs):
            return await super().acall(lm, lm_kwargs, signature, demos, inputs)  # type: ignore[no-any-return]
        messages = self.format(processed, demos, inputs)
        run = _Run(self, processed, messages)

        async def call(sent: list[dict[str, Any]]) -> Reply:
            request = run.request(sent)
            with adapter_message_call(lm, request):
                outputs = await lm.acall(messages=request, **lm_kwargs)
            return run.read(outputs)

        healer = self._healer(processed)
        outcome = await healer.arun(call, messages, context=self._context_of(inputs))
        return run.result(outcome, signature)

    # -- helpers ----------------------------------------------------------------------------

    def _answer_text(self, completion: str, fields: Mapping[str, Any]) -> str:
        """The answer as the text healjson judges: the chat format's sections as one JSON
        object (each field read by L1), or the completion itself (a JSON answer)."""
        found = read_fields(completion, fields)
        return completion if found is None else to_json(found, fallback=str).decode()

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

    def _healer(self, signature: Any) -> Healer[Any]:
        return Healer(self._model(signature), contracts=self.contracts, policy=self.policy)

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
            lm_response=completion,
            message=f"healjson could not heal the answer ({reason}): {described}",
        )
        error.outcome = outcome
        found: Exception = error
        return found


class _Run:
    """One prediction's calls: the request's messages (the base's), the model's answers as
    DSPy returned them, and the answers as healjson judges them."""

    __slots__ = ("adapter", "fields", "messages", "outputs", "signature", "texts")

    def __init__(self, adapter: HealAdapter, signature: Any, messages: list[Any]) -> None:
        self.adapter = adapter
        self.signature = signature
        self.fields = _fields(signature)
        self.messages = messages
        self.outputs: list[Any] = []
        self.texts: list[str] = []

    def request(self, sent: list[dict[str, Any]]) -> list[Any]:
        """The messages of a call: the base's own, then a repair's turns, the assistant turn
        being the model's answer as it was (healjson quoted the object it judged)."""
        extra = [dict(message) for message in sent[len(self.messages) :]]
        if extra and extra[0].get("role") == "assistant" and self.texts:
            extra[0]["content"] = quote_answer(self.texts[-1])
        return [*self.messages, *extra]

    def read(self, outputs: Any) -> Reply:
        output = outputs[0] if isinstance(outputs, list) and outputs else None
        text = output.get("text") if isinstance(output, dict) else output
        self.outputs.append(output)
        self.texts.append(text if isinstance(text, str) else "")
        if not isinstance(text, str) or not text:
            return Reply(None)
        return Reply(self.adapter._answer_text(text, self.fields))

    def result(self, outcome: Outcome[Any], signature: Any) -> list[dict[str, Any]]:
        last = self.texts[-1] if self.texts else ""
        if not isinstance(outcome, Healed):
            assert isinstance(outcome, Degraded)
            raise self.adapter._failure(signature, last, outcome)
        value = _values(outcome.value, self.fields)
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
