"""Anthropic clients: `wrap(Anthropic())` / `wrap(AsyncAnthropic())` (`HealingAnthropic`), and the
healed streams of `wrap(instructor.from_anthropic(...))` (`AnthropicStreams`, `instructor_streams`).

`HealingAnthropic`: `client.messages.create(..., response_model=M)` returns `Outcome[M]`
(`stream=True`, or `client.messages.stream(..., response_model=M)`: a healed stream); without
`response_model` everything passes through, but for the SDK's own structured calls,
`messages.parse(output_format=M)` and `messages.stream(output_format=M)`, which return the
SDK's own types with the healed value in place (`parsed`; asked for in a tier that answers in
text). The JSON is asked for in Anthropic's tiers
(`wire.tier_request`: native structured output, a forced strict tool,
the schema in the system prompt), negotiated per client by a `FormatState`: a tier refused
with an HTTP 400 naming its feature is stepped down, within the same model call, and remembered.

`AnthropicStreams`: healed streams over an Anthropic client, what
`wrap(instructor.from_anthropic(...))` uses for `create_partial`, `create_iterable` and
`create(stream=True)`.

A healed stream reads the provider's own stream events (`message_start`, `content_block_delta`,
... : `wire` reads them), so the request goes to the Anthropic client
itself, not through instructor (whose partial parsing validates each snapshot and retries on its
own). The JSON is asked for as for any client whose JSON mode healjson chooses, in the prompt
tier: the schema in the system prompt (Anthropic has no JSON response format), the system
messages moved to the top-level `system`. Anthropic requires `max_tokens`: 4096 when the call
gives none.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from healjson._core.judge.contracts import Contract
from healjson._core.judge.enforcement import Enforcement
from healjson._core.redact import secrets_scope
from healjson._core.run.drive import drive_async, drive_sync, is_stream
from healjson._core.run.policy import HealPolicy
from healjson._core.wire.effects import ModelCall
from healjson._core.wire.reply import SDK_REPLIES
from healjson._providers.tiers import JsonMode, Shapeable
from healjson.adapters._base import (
    UNSET,
    Exchange,
    HealingAdapter,
    Send,
    async_call,
    is_async_client,
    sync_call,
)
from healjson.adapters._choices import check_tool_choice
from healjson.adapters._format import Enforcing, FormatState
from healjson.adapters._parsed import Received, afinish, finish
from healjson.adapters._proxy import Forwarding
from healjson.adapters._steps import SteppedAdapter, stepped
from healjson.adapters._tools import check_tool_call, heal_tool_calls, stream_tool_calls, tool_spec
from healjson.adapters._unreadable import ReadChecked, read_checked_call

from .parsed import message_stream_manager, parsed_message, stream_entering, streamed_message
from .tools import ANTHROPIC, forces_call
from .wire import (
    chooses_format,
    enforced_schema,
    is_tier_rejection,
    messages_request,
    tier_request,
    used_tier,
)

__all__ = ["AnthropicStreams", "HealingAnthropic", "instructor_streams"]


class AnthropicStreams(HealingAdapter):
    """Wraps `anthropic.Anthropic` or `anthropic.AsyncAnthropic` for healed streams."""

    def __init__(self, client: Any, *, policy: HealPolicy | None = None) -> None:
        super().__init__(client, policy=policy)
        self._tiers = FormatState("prompt")

    def _accept(self, client: Any) -> bool:
        create = getattr(getattr(client, "messages", None), "create", None)
        if not callable(create):
            raise TypeError(
                f"an Anthropic client with messages.create is needed; got {type(client).__name__}"
            )
        return is_async_client(client, create)

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        create = self.wrapped.messages.create

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            messages = request.pop("messages")
            return create, messages_request(messages, request), _READ_EVENTS

        return send


# the answer of `messages.create(stream=True)`: a stream of events (or a whole message)
_READ_EVENTS = ReadChecked(
    lambda value: is_stream(value) or hasattr(value, "stop_reason"), "a stream of message events"
)


def instructor_streams(
    client: Any, *, is_async: bool, json_mode: str, policy: HealPolicy | None
) -> AnthropicStreams:
    """The healed streams over the client inside an instructor client (always the prompt
    tier: see the module's docstring)."""
    return AnthropicStreams(client, policy=policy)


# the SDK's `Message` class, once read, needs no check (its fast reader is remembered)
_READ_MESSAGE = ReadChecked(
    lambda value: hasattr(value, "stop_reason"), "an Anthropic message", SDK_REPLIES
)
_OPENED = Exchange()  # the SDK's stream manager, opened: the SDK reads its events itself
_DEFAULT_POLICY = HealPolicy()
_NO_TARGET: Any = None  # a driver without a JSON tier never shapes a request for a target


class Messages(Forwarding):
    """`wrap(Anthropic()).messages`: healjson's `create` and `stream` when given a
    `response_model`; everything else is the wrapped client's `messages`."""

    def __init__(self, owner: HealingAnthropic) -> None:
        self._owner = owner

    def forwarded(self) -> Any:
        return self._owner.sdk_messages()

    def create(
        self,
        *args: Any,
        response_model: Any = UNSET,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        heal_tools: bool = False,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """`messages.create`; with `response_model=M` it returns `Outcome[M]` (an awaitable of
        it for an async client; with `stream=True` a `HealStream[M]` / `AsyncHealStream[M]`);
        with `heal_tools=True` (and the caller's `tools=`) `Outcome[ToolCalls]` (`_tools`)."""
        owner = self._owner
        tools = heal_tools or tool_contracts is not None
        if response_model is UNSET and not tools:
            return owner.sdk_messages().create(*args, **kwargs)
        if args:
            raise TypeError("messages.create takes keyword arguments only")
        messages = kwargs.pop("messages", UNSET)
        if messages is UNSET:
            raise TypeError("messages.create needs messages=[...]")
        if tools:
            check_tool_call(kwargs, response_model, UNSET, "messages.create")
            if not heal_tools:
                raise TypeError("tool_contracts= needs heal_tools=True")
            chosen = policy or owner.policy or _DEFAULT_POLICY
            return self._heal_tools(chosen, tool_contracts, messages, context, kwargs)
        if "tool_choice" in kwargs:
            check_tool_choice(kwargs, "messages.create", forces_call)
        core = owner._core  # a plain object: its attributes read fast (the adapter proxies)
        chosen = policy or core.policy or _DEFAULT_POLICY
        healer = core.healers.get(response_model, contracts, chosen, fallback, examples)
        if kwargs.get("stream"):
            return owner._stream(healer, None, messages, context, kwargs)
        call, checked = owner._route(healer.target, response_model, kwargs)
        run = healer.start(messages, context=context, params=kwargs, enforcement=checked)
        scope = secrets_scope(core.wrapped, kwargs)
        if core.is_async:
            return drive_async(run, call, scope)
        return drive_sync(run, call, scope)

    def _heal_tools(
        self,
        policy: HealPolicy,
        tool_contracts: Mapping[str, Iterable[Any]] | None,
        messages: Any,
        context: Mapping[str, Any] | None,
        params: dict[str, Any],
    ) -> Any:
        """`create(..., heal_tools=True)`: the caller's own tool calls healed (`_tools`); each
        request is the caller's, its messages as Anthropic turns (a repair's tool exchange as
        `tool_use` and `tool_result` blocks)."""
        owner = self._owner
        spec = tool_spec(params, tool_contracts, policy, style=ANTHROPIC)
        create = owner.sdk_messages().create
        if params.get("stream"):
            create = read_checked_call(create)

            def start(effect: ModelCall) -> Any:
                sent = [dict(message) for message in effect.messages]
                return create(**messages_request(sent, dict(effect.params)))

            return stream_tool_calls(
                owner.wrapped,
                start,
                spec,
                messages,
                params,
                collector=ANTHROPIC.collector,
                is_async=owner.is_async,
                context=context,
            )

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            sent = request.pop("messages")
            return create, messages_request(sent, request), _READ_MESSAGE

        driver = async_call if owner.is_async else sync_call
        call = driver(None, None, _NO_TARGET, send)
        return heal_tool_calls(
            owner.wrapped, call, spec, messages, params, is_async=owner.is_async, context=context
        )

    def parse(
        self,
        *args: Any,
        output_format: Any = None,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        """`messages.parse`; with a type as `output_format` the answer is healed as
        `create(response_model=M)` heals it (L1, `contracts`, repairs) and the SDK's own
        `ParsedMessage[M]` comes back (awaitable for an async client): `parsed_output` the
        healed value, or None when the run degraded (nothing is raised for what the model
        answered); the message is the run's last answer (a repair's, when one was needed).
        `healjson.outcome_of(message)` is the run's `Outcome`."""
        owner = self._owner
        if output_format is None:
            return owner.sdk_messages().parse(*args, **kwargs)
        healer, messages = self._sdk_call(
            "parse", args, kwargs, output_format, contracts=contracts, policy=policy,
            examples=examples,
        )  # fmt: skip
        received = Received()
        run = owner.heal_recorded(
            healer, None, messages, context=context, params=kwargs, received=received
        )
        build = parsed_message(output_format, beta=owner.beta_api)
        if owner.is_async:
            return afinish(run, received, build)
        return finish(run, received, build)

    def stream(
        self, *args: Any, response_model: Any = UNSET, output_format: Any = None, **kwargs: Any
    ) -> Any:
        """`messages.stream`; with `response_model=M` the healed stream of
        `create(..., stream=True)` (a context manager too). With a type as `output_format` the
        SDK's own stream manager (`parsed`): its stream yields the SDK's own events as they
        arrive (the SDK parses nothing on the way, so a prose-wrapped answer raises nothing);
        its `get_final_message()` is a `ParsedMessage[M]` whose `parsed_output` is the healed
        value (None when the run degraded), `healjson.outcome_of(...)` its outcome. When the
        streamed answer needs a repair, the repair is a plain (non-streamed) call and the final
        message is the repaired call's. `contracts`, `policy`, `examples` and `context` as for
        `parse`."""
        if response_model is not UNSET:
            if output_format is not None:
                raise TypeError("messages.stream takes response_model= or output_format=, not both")
            return self.create(*args, response_model=response_model, stream=True, **kwargs)
        if output_format is None:
            return self._owner.sdk_messages().stream(*args, **kwargs)
        return self._parsed_stream(args, output_format, **kwargs)

    def _parsed_stream(
        self,
        args: tuple[Any, ...],
        output_format: Any,
        *,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Any:
        owner = self._owner
        healer, messages = self._sdk_call(
            "stream", args, kwargs, output_format, contracts=contracts, policy=policy,
            examples=examples,
        )  # fmt: skip
        is_async = owner.is_async

        def heal(snapshot: Any) -> Any:
            received = Received()
            run = owner.heal_recorded(
                healer, None, messages, context=context, params=dict(kwargs),
                received=received, first=snapshot,
            )  # fmt: skip
            build = streamed_message(snapshot)
            return afinish(run, received, build) if is_async else finish(run, received, build)

        # the SDK's stream opened as `create` is called: in the client's tier, stepped down
        enter = stream_entering(owner.sdk_messages().stream, is_async=is_async)
        call = owner._stepped(enter, healer.target, kwargs, _OPENED, text_only=True)
        opened = functools.partial(call, [dict(message) for message in messages], **kwargs)
        return message_stream_manager(opened, heal, is_async, beta=owner.beta_api)

    def _sdk_call(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        output_format: Any,
        *,
        contracts: Iterable[Contract[Any] | Callable[..., Any]],
        policy: HealPolicy | None,
        examples: Iterable[Any],
    ) -> tuple[Any, Any]:
        """The healer of the SDK's own `messages.<name>(output_format=M)` and the call's
        messages (taken out of `kwargs`); a call the SDK's method would not take is refused."""
        if args:
            raise TypeError(f"messages.{name} takes keyword arguments only")
        messages = kwargs.pop("messages", UNSET)
        if messages is UNSET:
            raise TypeError(f"messages.{name} needs messages=[...]")
        if "tool_choice" in kwargs:
            check_tool_choice(kwargs, f"messages.{name}", forces_call, "output_format")
        return self._owner.sdk_healer(output_format, contracts, policy, examples), messages


class Beta(Forwarding):
    """`wrap(Anthropic()).beta`: its `messages` healed as the client's own `messages` are, on the
    SDK's beta API (`betas=[...]` sent as given, the SDK's `BetaMessage` read, `parse` and
    `stream(output_format=M)` returning the SDK's beta types); everything else is the wrapped
    client's `beta`."""

    def __init__(self, owner: HealingAnthropic) -> None:
        self._owner = owner
        twin = object.__new__(type(owner))  # one client, one tier state and healer cache
        twin.__dict__.update(owner.__dict__)
        twin.beta_api = True
        twin._routes = {}  # its drivers send to the beta resource
        twin.messages = Messages(twin)
        self.messages = twin.messages

    def forwarded(self) -> Any:
        return self._owner.wrapped.beta


class HealingAnthropic(SteppedAdapter):
    """Wraps `anthropic.Anthropic` or `anthropic.AsyncAnthropic`; see `healjson.wrap`.

    `json_mode` names the strongest tier the endpoint supports, in the chat tiers' names:
    `json_schema` (native structured output), `json_object` (a forced tool), `prompt`."""

    beta_api = False
    """True for the view `beta` keeps: its calls go to the SDK's `beta.messages`."""

    _chooses_format = staticmethod(chooses_format)

    def __init__(
        self, client: Any, *, json_mode: str = "json_schema", policy: HealPolicy | None = None
    ) -> None:
        super().__init__(client, json_mode=json_mode, policy=policy)
        self.messages = Messages(self)
        self.beta = Beta(self)

    def sdk_messages(self) -> Any:
        """The SDK's messages resource this adapter sends to: the client's `messages`, or its
        `beta.messages` for the view `beta` keeps."""
        wrapped = self.wrapped
        return wrapped.beta.messages if self.beta_api else wrapped.messages

    def __repr__(self) -> str:
        return f"healjson.wrap({self.wrapped!r}, json_mode={self.format.mode!r})"

    def with_options(self, **options: Any) -> HealingAnthropic:
        """The wrapped client's `with_options(...)`, still healing (and sharing the tier)."""
        return self._rewrap(self.wrapped.with_options(**options))

    def copy(self, **options: Any) -> HealingAnthropic:
        """The wrapped client's `copy(...)`, still healing (and sharing the tier)."""
        return self._rewrap(self.wrapped.copy(**options))

    def _rewrap(self, client: Any) -> HealingAnthropic:
        twin = HealingAnthropic(client, json_mode=self.format.mode, policy=self.policy)
        twin.format = self.format  # one endpoint: what it refused stays refused
        twin.beta = Beta(twin)  # its view shares that tier state too
        return twin

    def _accept(self, client: Any) -> bool:
        create = getattr(getattr(client, "messages", None), "create", None)
        if not callable(create):
            raise TypeError(
                f"an Anthropic client with messages.create is needed; got {type(client).__name__}"
            )
        return is_async_client(client, create)

    def _one_value(
        self, target: Shapeable, forced: JsonMode | None, params: Mapping[str, Any]
    ) -> Callable[[], bool]:
        """Native structured output and a forced tool (whose input is the answer) constrain the
        answer to one JSON value; the prompt tier (where thinking sends a tool's) does not."""
        state = self.format

        def json_mode() -> bool:  # the tier the call used (a refused one was stepped down)
            return used_tier(state.mode, target, params) in ("json_schema", "json_object")

        return json_mode

    def _enforcement(
        self, target: Shapeable, forced: JsonMode | None, *, text_only: bool = False
    ) -> Enforcement | None:
        def schema_of(mode: JsonMode, params: Mapping[str, Any]) -> dict[str, Any] | None:
            return enforced_schema(mode, target, params, text_only=text_only)

        return Enforcing(self.format, None, schema_of)

    def _sdk_enforcement(self, target: Shapeable, forced: JsonMode | None) -> Enforcement | None:
        return self._enforcement(target, forced, text_only=True)

    def _whole_call(self, target: Shapeable, params: dict[str, Any]) -> Callable[..., Any]:
        return self._stepped(self.sdk_messages().create, target, params, _READ_MESSAGE)

    def _run_call(
        self,
        target: Shapeable,
        forced: JsonMode | None,
        params: dict[str, Any],
        received: Received | None = None,
    ) -> Callable[..., Any]:
        """A stream's call (`create(stream=True)`, its events read), or the call of the SDK's
        own `parse` (`received`: its answers noted there), which reads its value off a text
        block: its requests skip the forced tool's tier (`wire.tier_request`'s `text_only`)."""
        create = self.sdk_messages().create
        exchange = _READ_EVENTS if params.get("stream") else _READ_MESSAGE
        if received is None:
            return self._stepped(create, target, params, exchange)
        create = received.recorded(create, self.is_async)
        return self._stepped(create, target, params, exchange, text_only=True)

    def _stepped(
        self,
        create: Callable[..., Any],
        target: Shapeable,
        params: dict[str, Any],
        exchange: Exchange,
        *,
        text_only: bool = False,
    ) -> Callable[..., Any]:
        """`create` (`messages.create`, or a method taking its keywords: the SDK's stream opened,
        `parsed.stream_entering`) in the client's JSON tier, stepped down and remembered when
        the endpoint refuses it (`text_only`: never the forced tool's tier), or the caller's
        own format as given; its answer taken through `exchange`."""

        def shape(mode: JsonMode | None, messages: Any, request: dict[str, Any]) -> Any:
            return tier_request(mode, target, messages, request, text_only=text_only)

        return stepped(
            create,
            self.format,
            shape,
            is_tier_rejection,
            exchange,
            is_async=self.is_async,
            own=chooses_format(params),
        )
