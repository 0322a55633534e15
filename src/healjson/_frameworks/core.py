"""healjson's internals as the framework integrations use them, imported in this one place.

The integrations drive healjson's own loop through the core's drivers (`drive_sync` /
`drive_async`): a JSON answer as a `Healer`'s run (`Healer.start`), a set of tool calls as the
same loop's tool-call answer kind (`start_tools`). Every model call of a run, the first one
included, is made by the driver (its deadline, its failures told from the caller's bugs). A
framework that can tell which run a first answer belongs to only once it has it (LangChain:
the structured response or the agent's tools, and which member of a union) hands that answer
on to the run it belongs to (`handed_over`): the first call was made by a driver already, and
the run goes on from its result, its deadline counted from when the step began; the run that
made the call hands its spans on to it (`handed_on`). A framework
whose model answers in a text format of its own (DSPy's sections) gives the healer a reply
reader (`Healer.with_reply_reader`: a `ReplyReader` returning a `ReadReply`): the run judges what
it reads and keeps the model's text as the reply everywhere. A framework that validates the
JSON data itself (LangChain's tool node) is handed the data an accepted value is the validation
of (`accepted_evaluations`, `Evaluation.data`), never a dump of the value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from healjson._core.diagnostic import Diagnostic, describe_exception
from healjson._core.judge.check import Evaluation, accepted_evaluations
from healjson._core.judge.contracts import Rule, as_contract, check_policies
from healjson._core.observe.events import handed_on
from healjson._core.outcome.calls import HealedCall, ToolCalls
from healjson._core.parse.shape import key_form
from healjson._core.parse.wrappers import names_the_value
from healjson._core.redact import redact_text, secrets_scope
from healjson._core.repair.quote import quote_answer, render_diagnostics
from healjson._core.run.answers import HealSpec, ReadReply, ReplyReader
from healjson._core.run.drive import PROVIDER_PACKAGES, drive_async, drive_sync, is_provider_error
from healjson._core.run.engine import heal_flow
from healjson._core.run.messages import make_context, normalise_messages
from healjson._core.run.policy import HealPolicy
from healjson._core.run.start import HandOver, Run
from healjson._core.run.tools import Tool, ToolSpec, start_tools
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target, target_for
from healjson._core.wire.effects import new_call_result
from healjson._core.wire.reply import Reply, to_reply
from healjson._extras import missing_extra
from healjson._providers._fields import get_field
from healjson._providers.openai_chat import chat_usage

__all__ = [
    "NOTHING",
    "PROVIDER_PACKAGES",
    "Evaluation",
    "HandOver",
    "HealSpec",
    "HealedCall",
    "ReadReply",
    "ReplyReader",
    "Run",
    "StoppedByRules",
    "Target",
    "ToolCalls",
    "ToolSpec",
    "accepted_evaluations",
    "chat_usage",
    "checked_policy",
    "describe_exception",
    "drive_async",
    "drive_sync",
    "get_field",
    "handed_on",
    "handed_over",
    "is_provider_error",
    "key_form",
    "missing_extra",
    "names_the_value",
    "quote_answer",
    "redact_text",
    "render_diagnostics",
    "rules_of",
    "secrets_scope",
    "start_tools",
    "target_for",
    "to_reply",
    "tool_spec",
]


class StoppedByRules:
    """What an integration's exception for a broken `on_fail="stop"` rule carries, mixed into
    its framework's own error class (listed first, before it): `diagnostics`, what broke (the
    value, the rule), and `rules`, the rules' names; it pickles as the framework's error does
    (its `message` and the diagnostics)."""

    message: str

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic] = ()) -> None:
        # the framework's error class, after this one in the subclass's bases, takes it
        super().__init__(message)  # type: ignore[call-arg]
        self.diagnostics = tuple(diagnostics)
        self.rules = tuple(dict.fromkeys(d.rule for d in self.diagnostics if d.rule))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.message, self.diagnostics)


def checked_policy(policy: HealPolicy | None) -> HealPolicy:
    """`policy`, or the default one; anything else is a configuration mistake."""
    if policy is None:
        return HealPolicy()
    if not isinstance(policy, HealPolicy):
        raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
    return policy


def rules_of(rules: Iterable[Rule[Any]]) -> tuple[Any, ...]:
    """Contracts (`@healjson.contract` rules or plain functions), checked as `Healer` checks
    them (a rule policy only a list target can have raises here)."""
    found = tuple(as_contract(rule) for rule in rules)
    check_policies(found, items=False)
    return found


def tool_spec(
    targets: Mapping[str, Target[Any]],
    tool_contracts: Mapping[str, tuple[Any, ...]],
    policy: HealPolicy,
) -> ToolSpec:
    """The tools one request declares, as the tool-call flow judges their calls."""
    declared = {
        name: Tool(name, target, tool_contracts.get(name, ())) for name, target in targets.items()
    }
    return ToolSpec(declared, policy)


def handed_over(
    spec: HealSpec | ToolSpec,
    messages: Any,
    context: Mapping[str, Any] | None,
    first: Reply,
    *,
    elapsed_s: float,
    started: float,
) -> Run:
    """A run (of a `Healer`'s `spec`, or of a tool-call `spec`) whose first model call a driver
    made already, for another run of the same step: `first` is its reply, `elapsed_s` the time
    it took; the loop judges it as the run's first attempt (recorded with that latency) and
    goes on from there. `started` (a `time.monotonic()`): when the step began, so the policy's
    deadline covers the call already made."""
    original = normalise_messages(messages)
    ctx = make_context(context, original)
    made = new_call_result(first, None, elapsed_s)
    return Run(heal_flow(spec, original, {}, ctx, started=started, made=made), ctx)
