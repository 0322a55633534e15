"""How `healjson.agents` judges a value the SDK has in hand (no model call of its own): a reply's
text through a healer of one attempt per target type (`judge`; for an output type the SDK wraps
in `{"response": ...}`, a healer whose reply reader takes the wrapper off: `read_wrapper`), or the
final output itself under contracts and their `on_fail` policies (`judge_output`, for the
guardrail), what of the run the contracts see (`run_context_data`, `messages`), and the secrets
of the model client the run uses, which every record and event is redacted with
(`client_secrets`). For a function tool: the model its arguments are judged against
(`params_type`), the SDK's refusal of arguments that are no JSON object (`not_the_sdks`) and
its failure policy (`failure_formatter`)."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from ._agents_log import ContractReport
from ._core.diagnostic import ROOT, Diagnostic, Source
from ._core.flags import Flag
from ._core.judge.check import accepted_evaluations
from ._core.judge.contracts import ContractContext
from ._core.judge.judging import judge_value
from ._core.judge.policies import settle
from ._core.outcome.outcome import Healed, Outcome
from ._core.parse.read import Ambiguity, parse
from ._core.redact import secrets_scope
from ._core.redact.places import read_attribute
from ._core.run.drive import drive_async
from ._core.run.healer import Healer
from ._core.run.policy import HealPolicy
from ._core.sentinels import NOTHING
from ._core.wire.reply import Reply, Usage
from ._frameworks.core import ReadReply, ReplyReader

if TYPE_CHECKING:
    from agents import FunctionTool

__all__ = [
    "Judges",
    "client_secrets",
    "failure_formatter",
    "judge",
    "judge_output",
    "messages",
    "not_the_sdks",
    "one_attempt",
    "params_type",
    "read_wrapper",
    "run_context_data",
]

_WRAPPER_KEY = "response"  # the SDK's `agent_output._WRAPPER_DICT_KEY`


def one_attempt(policy: HealPolicy | None) -> HealPolicy:
    """The caller's policy with one attempt (the model is the SDK's to call, never healjson's)."""
    if policy is None:
        return HealPolicy(max_attempts=1)
    if not isinstance(policy, HealPolicy):
        raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
    return dataclasses.replace(policy, max_attempts=1)


def read_wrapper(on_ambiguity: Ambiguity) -> ReplyReader:
    """A reply reader for an output type the SDK wraps in `{"response": ...}`: the key is the
    SDK's, never data (judged with the value, it could fit as data, or make two readings fit),
    so a reply that is that wrapper is judged as the JSON text of the answer inside it.

    Taking the wrapper off is one more local reading, never a way around L1's verdict: a reply
    L1 reads with an error (cut by the token limit, ambiguous under `on_ambiguity`) is not
    unwrapped, and is judged as it came (a cut reply gives no result); the repairs L1 made to
    read the wrapper (a fence, prose, a trailing comma, single quotes) are the reading's flags,
    kept on the run (its events, the outcome, the log). A JSON answer without the wrapper
    (`[1, 2]`) is judged as it came, the wrapper it lacks a repair like any other: flag
    `wrapped` (the answer placed in the SDK's `response` field), every repair visible. A reply
    L1 reads no value from: None (judged as it came)."""

    def read(text: str) -> ReadReply | None:
        found = parse(text, on_ambiguity=on_ambiguity)
        value = found.value
        if found.error is not None or found.truncated:
            return None
        if not (isinstance(value, dict) and list(value) == [_WRAPPER_KEY]):
            return ReadReply((text,), (Flag.WRAPPED,))  # L1 reads the text itself, as it came
        return ReadReply((json.dumps(value[_WRAPPER_KEY], ensure_ascii=False),), found.flags)

    return read


class Judges:
    """The healers of one configuration, by target type and whether the SDK wraps it (built
    once each; a target that cannot be hashed gets a fresh one)."""

    def __init__(self, contracts: tuple[Any, ...], policy: HealPolicy) -> None:
        self.contracts = contracts
        self.policy = policy
        self._by_type: dict[tuple[Any, bool], Healer[Any]] = {}
        self._lock = threading.Lock()
        self._reader = read_wrapper(policy.on_ambiguity)

    def _new(self, target: Any, wrapped: bool) -> Healer[Any]:
        healer = Healer(target, contracts=self.contracts, policy=self.policy)
        return healer.with_reply_reader(self._reader) if wrapped else healer

    def for_type(self, target: Any, *, wrapped: bool = False) -> Healer[Any]:
        """The healer for `target`; `wrapped`: the SDK wraps it in `{"response": ...}` (its
        replies are read by `read_wrapper`)."""
        key = (target, wrapped)
        try:
            with self._lock:
                found = self._by_type.get(key)
        except TypeError:  # unhashable
            return self._new(target, wrapped)
        if found is None:
            found = self._new(target, wrapped)
            with self._lock:
                self._by_type[key] = found
        return found


_NO_USAGE = Usage()


async def judge(
    healer: Healer[Any], text: str, messages: Any = (), context: Any = None
) -> tuple[Outcome[Any], Any]:
    """healjson's verdict on a reply in hand, and the JSON data L1 read that a healed value is
    the validation of (NOTHING when none is: a `"fix"` or `"drop"` rule made the value)."""
    given = Reply(text, None, usage=_NO_USAGE)  # a reply in hand: no call, no tokens spent
    run = healer.start(messages, context=context, given=given)
    with accepted_evaluations() as accepted:
        outcome: Outcome[Any] = await drive_async(run.flow)
    if isinstance(outcome, Healed) and not (outcome.fixed or outcome.dropped):
        for evaluation in reversed(accepted):
            if evaluation.instance is outcome.value and not evaluation.fixed:
                return outcome, evaluation.data
    return outcome, NOTHING


async def judge_output(healer: Healer[Any], value: Any, extra: Mapping[str, Any] | None) -> Any:
    """The contracts (and their `on_fail` policies) on `value` itself, the output the SDK
    validated: never validated again (its JSON read back could be another value, a validator
    that is not idempotent running twice), as a run judges a reply's value."""
    rules, target = healer.contracts, healer.target
    ctx = ContractContext() if extra is None else ContractContext(extra=extra)
    timeout = healer.policy.contract_timeout_s
    # judged as a run judges: a contract that changed the value is a `contract_error` too
    groups = await drive_async(judge_value(target, rules, value, ctx, timeout_s=timeout))
    found = [d for group in groups for d in group]
    if any(d.source is Source.CONTRACT_ERROR for d in found):
        return ContractReport(False, tuple(found))
    rule_of = [(rule, d) for rule, group in zip(rules, groups, strict=True) for d in group]
    warned = tuple(d for rule, d in rule_of if rule.on_fail == "warn")
    blocking = tuple(d for rule, d in rule_of if rule.on_fail != "warn")
    if not blocking:
        return ContractReport(True, (), warned)
    settled = await drive_async(settle(target, rules, groups, value, ctx, timeout_s=timeout))
    if settled.error:
        return ContractReport(False, settled.error)
    fixed = None if settled.instance is NOTHING else settled.instance
    return ContractReport(False, blocking, warned, fixed)


def run_context_data(wrapper: Any) -> Mapping[str, Any] | None:
    """The run's own context, for the contracts' `ctx.extra` (and pydantic's validation
    context), when it is a mapping."""
    data = getattr(wrapper, "context", None)
    return data if isinstance(data, Mapping) else None


def messages(run_input: Any) -> tuple[dict[str, Any], ...]:
    """The run's input as chat messages for the contracts' `ctx.messages`: a prompt string, or
    its items that are messages with text content (tool calls and outputs left out)."""
    if isinstance(run_input, str):
        return ({"role": "user", "content": run_input},)
    out = []
    for item in run_input if isinstance(run_input, list) else ():
        if isinstance(item, Mapping) and isinstance(item.get("role"), str):
            content = item.get("content")
            if isinstance(content, str):
                out.append({"role": item["role"], "content": content})
    return tuple(out)


def client_secrets(agent: Any) -> AbstractContextManager[Any]:
    """The secrets scope of the model client `agent` runs on, as far as healjson can reach it,
    so that what it records and emits of the run (log entries, events, an error's message)
    never holds the client's key, which a model can echo: the client an SDK model object holds
    (`OpenAIChatCompletionsModel(openai_client=...)`, `OpenAIResponsesModel`; a model object
    holding an `api_key` itself, such as LiteLLM's), or for a model given by name the SDK's
    default client (`set_default_openai_client`) or key (`set_default_openai_key`, else
    `OPENAI_API_KEY`). A provider the caller gives `RunConfig` is out of the handler's reach:
    only credential names and shapes are redacted then."""
    model = getattr(agent, "model", None)
    if model is not None and not isinstance(model, str):
        client = read_attribute(model, "_client") or read_attribute(model, "openai_client")
        if client is None and read_attribute(model, "api_key") is not None:
            client = model
        return nullcontext() if client is None else secrets_scope(client)
    try:
        from agents.models import _openai_shared as shared
    except ImportError:  # pragma: no cover - another SDK release
        return nullcontext()
    default = shared.get_default_openai_client()
    if default is not None:
        return secrets_scope(default)
    key = shared.get_default_openai_key() or os.environ.get("OPENAI_API_KEY")
    return nullcontext() if not key else secrets_scope(None, {"api_key": key})


def params_type(tool: FunctionTool) -> Any:
    """The pydantic model the SDK validates this tool's arguments with: rebuilt from the function
    `@function_tool` wrapped (the same `function_schema`), kept only when its fields are the
    tool's declared parameters; else any JSON object."""
    from agents.function_schema import function_schema  # the extra, checked by `agents`

    fallback = dict[str, Any]
    try:
        func = tool.__wrapped__
    except AttributeError:
        return fallback
    try:
        schema = function_schema(
            func, use_docstring_info=False, strict_json_schema=tool.strict_json_schema
        )
    except Exception:  # a callable the SDK reads some other way: judge the JSON alone
        return fallback
    model = schema.params_pydantic_model
    declared = tool.params_json_schema.get("properties")
    names = {info.alias or name for name, info in model.model_fields.items()}
    if not isinstance(declared, Mapping) or set(declared) != names:
        return fallback
    return model


def not_the_sdks(text: str) -> Diagnostic:
    """The SDK refuses arguments that are not a JSON object of the tool's parameters."""
    return Diagnostic(
        ROOT,
        text,
        "must be a JSON object of the tool's parameters",
        "Send the arguments as one JSON object.",
        Source.SCHEMA,
    )


def failure_formatter(tool: FunctionTool, ctx: Any) -> Any:
    """The tool's failure policy, as the SDK resolves it (default: its generic text)."""
    from agents import default_tool_error_function
    from agents import tool as tool_module

    resolve = getattr(tool_module, "resolve_function_tool_failure_error_function", None)
    if resolve is None:
        return default_tool_error_function
    return resolve(tool, ctx)
