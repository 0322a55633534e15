"""`wrap(OpenAI()).responses`: the Responses API, healed.

`create(..., response_model=M)` returns `Outcome[M]`; `create(..., response_model=M,
stream=True)` a `HealStream[M]` (`AsyncHealStream[M]` for an async client); `parse(...,
text_format=M)` and `stream(..., text_format=M)` the SDK's own `ParsedResponse` and stream
manager, the parsed value healed (`_parsed`); without `response_model` / `text_format` each call
passes through to the wrapped client. The JSON tiers are chat's, as `text.format` (strict
`json_schema`, `json_object`, the schema in the prompt), stepped down on an HTTP 400 naming it.

Repairs (`repair_via`):

- `"input"` (the default): stateless, as on chat: each repair sends the caller's `instructions`
  and `input`, the previous answer and the repair message. Works with `store=False`, zero data
  retention and any replay; the whole conversation is sent each time.
- `"previous_response_id"` (needs `store=True`): a repair sends only the repair message,
  chained to the response that gave the answer being repaired: less sent on the wire, and a
  reasoning model keeps its reasoning items; the provider still bills the chained input as
  input tokens, and the repair depends on the stored response (it must not have been deleted
  or expired).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from pydantic import BaseModel

from healjson._core.judge.contracts import Contract
from healjson._core.redact import secrets_scope
from healjson._core.run.drive import drive_async, drive_sync, is_stream
from healjson._core.run.policy import HealPolicy
from healjson._core.run.streams import stream_async, stream_sync
from healjson._core.wire.effects import ModelCall, ProviderError
from healjson._providers import PROVIDERS
from healjson._providers._unreadable import sdk_reading_failure
from healjson._providers.caller_choices import responses_names_schema
from healjson._providers.openai_chat import enforced_schema
from healjson._providers.openai_responses import (
    SDK_RESPONSES,
    Conversation,
    aset_commentary_aside,
    is_response,
    read_response,
    read_sdk_response,
    set_commentary_aside,
)
from healjson._providers.openai_responses_tools import ResponsesCollector
from healjson._providers.tiers import Shapeable, prompted

from ._base import UNSET, Exchange, NotACompletion, Send, async_call, sync_call
from ._chat_tiers import build_request
from ._choices import check_tool_choice
from ._format import Enforcing, check_mode
from ._parsed import Received, afinish, finish, parsed_response
from ._parsed_streams import response_stream_manager
from ._proxy import Forwarding
from ._tools import check_tool_call, heal_tool_calls, stream_tool_calls, tool_spec
from ._unreadable import read_checked_call, read_checked_stream

__all__ = ["REPAIRS", "Responses"]

REPAIRS: Final = ("input", "previous_response_id")

# the provider's formats registered with its module, as `wrap` does for a provider it names: the
# core reads a Responses request's `max_output_tokens` (spans, a larger limit after a cut) from
# them, and this namespace reads its replies itself, so no reply would register them
PROVIDERS.load("openai_responses")

_NO_TARGET: Any = None  # a driver without a JSON tier never shapes a request for a target
_DEFAULT_POLICY = HealPolicy()


class _Read(Exchange):
    """A Responses call's answer: a `response` (its id noted, read into a `Reply` here), or a
    stream of events (read with commentary set aside); anything else, and a failed response,
    is the provider's failure."""

    __slots__ = ("conversation", "streamed")

    def __init__(self, conversation: Conversation, streamed: bool) -> None:
        self.conversation = conversation
        self.streamed = streamed

    def read(self, ok: bool, value: Any) -> tuple[bool, Any]:
        if not ok:
            return ok, sdk_reading_failure(value)
        if type(value) in SDK_RESPONSES:  # the SDK's `Response`: read by attribute
            identity = getattr(value, "id", None)
            if isinstance(identity, str):
                self.conversation.last_id = identity
            try:
                return ok, read_sdk_response(value)
            except ProviderError as exc:  # failed, or unreadable
                return False, exc
        if self.streamed and is_stream(value):
            return ok, read_checked_stream(value)
        if not is_response(value):
            return False, NotACompletion(
                f"the endpoint returned {type(value).__name__}, not a response: "
                f"{str(value)[:200]!r}"
            )
        identity = getattr(value, "id", None) if not isinstance(value, dict) else value.get("id")
        if isinstance(identity, str):
            self.conversation.seen(identity)
        if isinstance(value, BaseModel) and len(SDK_RESPONSES) < 16:
            SDK_RESPONSES.add(type(value))  # few classes: the SDK's `Response` (and subclasses)
        try:
            return ok, read_response(value)
        except ProviderError as exc:
            return False, exc


class Responses(Forwarding):
    """An adapter's `responses`: healed `create`, `parse` and `stream`; every other attribute
    is the wrapped client's."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner

    def forwarded(self) -> Any:
        return self._owner.wrapped.responses

    def create(
        self,
        *args: Any,
        response_model: Any = UNSET,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        json_mode: str | None = None,
        repair_via: str = "input",
        heal_tools: bool = False,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """`responses.create`; with `response_model=M` it returns `Outcome[M]` (an awaitable
        of it for an async client; a healed stream with `stream=True`); with `heal_tools=True`
        (and the caller's `tools=`) `Outcome[ToolCalls]` (see `_tools`). `repair_via`: see the
        module's docstring."""
        owner = self._owner
        core = owner._core  # a plain object: its attributes read fast (the adapter proxies)
        tools = heal_tools or tool_contracts is not None
        if response_model is UNSET and not tools:
            return core.wrapped.responses.create(*args, **kwargs)
        if args:
            raise TypeError("responses.create takes keyword arguments only")
        if tools:
            check_tool_call(kwargs, response_model, UNSET, "responses.create")
            if not heal_tools:
                raise TypeError("tool_contracts= needs heal_tools=True")
        elif "tool_choice" in kwargs:
            check_tool_choice(kwargs, "responses.create")
        conversation, text = _conversation(kwargs, repair_via)
        streamed = bool(kwargs.get("stream"))
        if tools:
            chosen = policy or core.policy or _DEFAULT_POLICY
            spec = tool_spec(kwargs, tool_contracts, chosen, style="responses")
            if streamed:
                return stream_tool_calls(
                    core.wrapped,
                    _stream_start(core.wrapped, conversation),
                    spec,
                    conversation.messages,
                    kwargs,
                    collector=ResponsesCollector,
                    is_async=core.is_async,
                    context=context,
                )
            driver = async_call if core.is_async else sync_call
            call = driver(None, None, _NO_TARGET, _sender(core, conversation, False))
            messages = conversation.messages
            return heal_tool_calls(
                core.wrapped, call, spec, messages, kwargs, is_async=core.is_async, context=context
            )
        return self.heal_text(
            response_model, conversation, kwargs, text=text, contracts=contracts, policy=policy,
            fallback=fallback, examples=examples, context=context, json_mode=json_mode,
        )  # fmt: skip

    def heal_text(
        self,
        response_model: Any,
        conversation: Conversation,
        kwargs: dict[str, Any],
        *,
        text: Any,
        contracts: Iterable[Contract[Any] | Callable[..., Any]],
        policy: HealPolicy | None,
        fallback: Any,
        examples: Iterable[Any],
        context: Mapping[str, Any] | None,
        json_mode: str | None,
        received: Received | None = None,
        first: Any = None,
    ) -> Any:
        """The run of `create(response_model=M, ...)` once its conversation is read: its
        outcome (awaitable for an async client) or, with `stream=True`, its healed stream.
        With `received`, the run's answers are noted there; with `first`, an answer already
        received is its first (only its repairs are calls)."""
        core = self._owner._core
        streamed = bool(kwargs.get("stream"))
        forced = check_mode(json_mode) if json_mode is not None else None
        own = text is not None and isinstance(text, Mapping) and "format" in text
        tiers = None if own else core.tiers
        chosen = policy or core.policy or _DEFAULT_POLICY
        # the SDK's own `parse` / `stream` (`received`): no cached answers (`adapters._parsed`)
        healers = core.healers if received is None else core.uncached
        healer = healers.get(response_model, contracts, chosen, fallback, examples)
        send = _sender(core, conversation, streamed)
        target = healer.target
        if own and not responses_names_schema(text):  # the schema stated, as `json_object`'s
            send = _prompting(send, target)
        if received is not None:
            send = received.recording(send, core.is_async)
        messages = conversation.messages
        checked = None
        if tiers is not None:  # judged against the schema its tier sends
            checked = Enforcing(
                tiers, forced, lambda mode, params: enforced_schema(mode, target, params)
            )
        if streamed:
            scope = secrets_scope(core.wrapped, kwargs)
            kinds = ("json_schema", "json_object")  # the `text.format` types

            def asks_json() -> bool:  # the tier the call just used (a rejected one stepped down)
                if own:
                    return str(text.get("format", {}).get("type")) in kinds
                return tiers is not None and (forced or tiers.mode) in kinds

            driver = async_call if core.is_async else sync_call
            call = driver(tiers, forced, healer.target, send)
            run = healer.start(messages, context=context, params=kwargs, enforcement=checked)
            reader = healer.reader(run, asks_json)
            if core.is_async:
                return stream_async(run.flow, call, reader, scope)
            return stream_sync(run.flow, call, reader, scope)
        run = healer.start(messages, context=context, params=kwargs, enforcement=checked)
        call = (async_call if core.is_async else sync_call)(tiers, forced, healer.target, send)
        if received is not None and first is not None:
            call = received.first(call, first, core.is_async)
        drive = drive_async if core.is_async else drive_sync
        return drive(run, call, secrets_scope(core.wrapped, kwargs))

    def parse(
        self,
        *args: Any,
        text_format: Any = UNSET,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        json_mode: str | None = None,
        repair_via: str = "input",
        **kwargs: Any,
    ) -> Any:
        """`responses.parse`; with `text_format=M` the answer is healed as
        `create(response_model=M)` heals it (L1, `contracts`, repairs) and the SDK's own
        `ParsedResponse[M]` comes back (awaitable for an async client): `output_parsed` (the
        `parsed` of the answer's output text) the healed value, or None when the run degraded
        (nothing is raised for what the model answered); the response is the run's last
        answer (a repair's, when one was needed). `healjson.outcome_of(response)` is the run's
        `Outcome`."""
        if text_format is UNSET:
            return self._owner.wrapped.responses.parse(*args, **kwargs)
        if args:
            raise TypeError("responses.parse takes keyword arguments only")
        if "tool_choice" in kwargs:
            check_tool_choice(kwargs, "responses.parse", model="text_format")
        core = self._owner._core
        conversation, text = _conversation(kwargs, repair_via)
        received = Received()
        run = self.heal_text(
            text_format, conversation, kwargs, text=text, contracts=contracts, policy=policy,
            fallback=None, examples=examples, context=context, json_mode=json_mode,
            received=received,
        )  # fmt: skip
        build = parsed_response(text_format)
        if core.is_async:
            return afinish(run, received, build)
        return finish(run, received, build)

    def stream(
        self,
        *args: Any,
        text_format: Any = UNSET,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        json_mode: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`responses.stream`; with `text_format=M` the SDK's own stream manager, whose stream
        yields the SDK's own events as they arrive (the SDK parses nothing on the way, so a
        prose-wrapped answer raises nothing); its `get_final_response()` is a
        `ParsedResponse[M]` whose `output_parsed` is the healed value (None when the run
        degraded), `healjson.outcome_of(...)` its outcome. When the streamed answer needs a
        repair, the repair is a plain (non-streamed) call and the final response is the
        repaired call's."""
        if text_format is UNSET:
            return self._owner.wrapped.responses.stream(*args, **kwargs)
        if args:
            raise TypeError("responses.stream takes keyword arguments only")
        if "tool_choice" in kwargs:
            check_tool_choice(kwargs, "responses.stream", model="text_format")
        core = self._owner._core
        conversation, text = _conversation(kwargs, "input")
        forced = check_mode(json_mode) if json_mode is not None else None
        own = text is not None and isinstance(text, Mapping) and "format" in text
        target = core.uncached.get(
            text_format, contracts, policy or core.policy or _DEFAULT_POLICY, None, examples
        ).target
        fresh = [dict(message) for message in conversation.messages]
        if own and not responses_names_schema(text):  # the schema stated, as `json_object`'s
            fresh = prompted(target, fresh)
        _, chat = build_request(None if own else core.tiers, forced, target, fresh, kwargs)
        build = parsed_response(text_format)

        def heal(response: Any) -> Any:
            received = Received()
            again = Conversation(conversation.instructions, conversation.input, text)
            run = self.heal_text(
                text_format, again, dict(kwargs), text=text, contracts=contracts,
                policy=policy, fallback=None, examples=examples, context=context,
                json_mode=json_mode, received=received, first=build(response, None),
            )  # fmt: skip
            if core.is_async:
                return afinish(run, received, build)
            return finish(run, received, build)

        inner = core.wrapped.responses.stream(**conversation.request(chat))
        return response_stream_manager(inner, heal, core.is_async)


def _conversation(kwargs: dict[str, Any], repair_via: str) -> tuple[Conversation, Any]:
    """The conversation of a Responses call (its `instructions`, `input` and `text` taken out
    of `kwargs`) and its `text`; a configuration mistake raises here."""
    previous = repair_via != "input"
    if previous and repair_via not in REPAIRS:
        raise ValueError(f"repair_via must be one of {', '.join(REPAIRS)}; got {repair_via!r}")
    if previous and kwargs.get("store") is not True:
        raise ValueError('repair_via="previous_response_id" needs store=True')
    instructions = kwargs.pop("instructions", None)
    given = kwargs.pop("input", None)
    if given is None and instructions is None:
        raise TypeError("responses.create needs input=...")
    text = kwargs.pop("text", None)
    return Conversation(instructions, given, text, previous=previous), text


def _stream_start(wrapped: Any, conversation: Conversation) -> Callable[[ModelCall], Any]:
    """A streamed tool-call run's request, as the Responses API's (the SDK's own events)."""

    create = read_checked_call(wrapped.responses.create)

    def start(effect: ModelCall) -> Any:
        chat = {"messages": [dict(m) for m in effect.messages], **effect.params}
        return create(**conversation.request(chat))

    return start


def _prompting(send: Send, target: Shapeable) -> Send:
    """`send` with the answer's schema stated first in each request's messages, as the
    `json_object` tier states it (`tiers.prompted`): the caller's own `text.format` names
    none."""

    def prompting(params: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
        params["messages"] = prompted(target, params["messages"])
        return send(params)

    return prompting


def _sender(
    core: Any, conversation: Conversation, streamed: bool
) -> Callable[[dict[str, Any]], tuple[Callable[..., Any], dict[str, Any], Exchange]]:
    exchange = _Read(conversation, streamed)
    wrapped = core.wrapped
    method: Callable[..., Any] = wrapped.responses.create  # a plain call: the SDK's own method
    if streamed:
        seen = conversation.seen

        def create(**request: Any) -> Any:
            value = wrapped.responses.create(**request)
            return set_commentary_aside(value, seen) if is_stream(value) else value

        async def acreate(**request: Any) -> Any:
            value = await wrapped.responses.create(**request)
            return aset_commentary_aside(value, seen) if is_stream(value) else value

        method = acreate if core.is_async else create
    request = conversation.request

    def send(params: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
        return method, request(params), exchange

    return send
