"""`wrap(client)`: a drop-in OpenAI client whose `create(response_model=...)` heals.

Without `response_model` every call passes straight through to the wrapped client (same return
type, streaming included); every other attribute delegates to it. With `response_model=M`,
`chat.completions.create` returns `Outcome[M]` and never raises at call time; `responses` heals
the Responses API the same way (`_responses`). The SDK's own `chat.completions.parse` /
`.stream(response_format=M)` return the SDK's own types, the parsed value healed (`_parsed`).
Sync and async clients share one engine (`Healer`), one format negotiation and one adapter
(`_base`); this module says only how a request reaches `chat.completions.create` and how its
answer is read.

Each healing call runs inside `secrets_scope(client, params)`: the client's API key, the
credential values of its default headers and query, and credential-named values of the call's
parameters are known to the redactor, so an endpoint that echoes them in an error body leaves no
trace of them in the outcome, its traces or the events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from healjson._core.judge.contracts import Contract
from healjson._core.run.drive import is_stream
from healjson._core.run.policy import HealPolicy
from healjson._core.wire.effects import ModelCall
from healjson._core.wire.reply import SDK_COMPLETIONS

from ._base import (
    UNSET,
    Completions,
    Exchange,
    HealingAdapter,
    NotACompletion,
    Send,
    check_one_answer,
    is_async_client,
)
from ._chat_tiers import build_request
from ._choices import check_tool_choice
from ._format import FormatState, check_mode
from ._parsed import Received, afinish, finish, parsed_completion
from ._parsed_streams import chat_stream_manager
from ._proxy import BetaProxy
from ._responses import Responses
from ._unreadable import ReadChecked, read_checked_call

__all__ = ["HealingClient", "NotACompletion", "instructor_streams"]


class OpenAICompletions(Completions):
    """`chat.completions` of a wrapped OpenAI client: `create` heals with `response_model=M`;
    `parse` and `stream` with a type as `response_format` return the SDK's own types, healed."""

    def parse(
        self,
        *args: Any,
        response_format: Any = UNSET,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        json_mode: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`chat.completions.parse`; with a type as `response_format` (a pydantic model, ...)
        the answer is healed as `create(response_model=...)` heals it (L1, `contracts`,
        repairs), and the SDK's own `ParsedChatCompletion[M]` comes back (awaitable for an
        async client): `choices[0].message.parsed` the healed value, or None when the run
        degraded (no `LengthFinishReasonError` or validation error is raised for what the
        model answered); the completion is the run's last answer (a repair's, when one was
        needed). `healjson.outcome_of(completion)` is the run's `Outcome`."""
        if response_format is UNSET or isinstance(response_format, dict):
            if response_format is not UNSET:
                kwargs["response_format"] = response_format
            return self._core.wrapped.chat.completions.parse(*args, **kwargs)
        healer, forced, messages = self._prepare(
            args, response_format, kwargs, contracts=contracts, policy=policy,
            examples=examples, json_mode=json_mode,
        )  # fmt: skip
        received = Received()
        owner: HealingClient = self._owner
        run = owner.heal_recorded(
            healer, forced, messages, context=context, params=kwargs, received=received
        )
        build = parsed_completion(response_format)
        if self._core.is_async:
            return afinish(run, received, build)
        return finish(run, received, build)

    def stream(
        self,
        *args: Any,
        response_format: Any = UNSET,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        json_mode: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`chat.completions.stream`; with a type as `response_format` the SDK's own stream
        manager, whose stream yields the SDK's own events as they arrive (the SDK parses
        nothing on the way, so a prose-wrapped answer raises nothing); its
        `get_final_completion()` is a `ParsedChatCompletion[M]` with the healed value as
        `choices[0].message.parsed` (None when the run degraded), `healjson.outcome_of(...)`
        its outcome. When the streamed answer needs a repair, the repair is a plain
        (non-streamed) call and the final completion is the repaired call's."""
        if response_format is UNSET or isinstance(response_format, dict):
            if response_format is not UNSET:
                kwargs["response_format"] = response_format
            return self._core.wrapped.chat.completions.stream(*args, **kwargs)
        healer, forced, messages = self._prepare(
            args, response_format, kwargs, contracts=contracts, policy=policy,
            examples=examples, json_mode=json_mode, where="chat.completions.stream",
        )  # fmt: skip
        core = self._core
        owner: HealingClient = self._owner
        fresh = [dict(message) for message in messages]
        _, request = build_request(core.tiers, forced, healer.target, fresh, kwargs)
        build = parsed_completion(response_format)

        def heal(snapshot: Any) -> Any:
            received = Received()
            first = build(snapshot, None)
            run = owner.heal_recorded(
                healer, forced, messages, context=context, params=dict(kwargs),
                received=received, first=first,
            )  # fmt: skip
            if core.is_async:
                return afinish(run, received, build)
            return finish(run, received, build)

        inner = core.wrapped.chat.completions.stream(**request)
        return chat_stream_manager(inner, heal, core.is_async)

    def _prepare(
        self,
        args: tuple[Any, ...],
        response_format: Any,
        kwargs: dict[str, Any],
        *,
        contracts: Iterable[Contract[Any] | Callable[..., Any]],
        policy: HealPolicy | None,
        examples: Iterable[Any],
        json_mode: str | None,
        where: str = "chat.completions.parse",
    ) -> tuple[Any, Any, Any]:
        """The healer, the forced JSON tier and the messages of a `parse` / `stream` call (the
        messages taken out of `kwargs`; `where`: the method, as messages name it); a
        configuration mistake raises here."""
        if args:
            raise TypeError(f"{where} takes keyword arguments only")
        messages = kwargs.pop("messages", UNSET)
        if messages is UNSET:
            raise TypeError(f"{where} needs messages=[...]")
        check_one_answer(kwargs, "n", where)
        if "tool_choice" in kwargs:
            check_tool_choice(kwargs, where, model="response_format")
        forced = check_mode(json_mode) if json_mode is not None else None
        healer = self._owner.sdk_healer(response_format, contracts, policy, examples)
        return healer, forced, messages


class HealingClient(HealingAdapter):
    """Wraps `openai.OpenAI` or `openai.AsyncOpenAI`; see `healjson.wrap`."""

    completions_type = OpenAICompletions

    def __init__(
        self,
        client: Any,
        *,
        json_mode: str = "json_schema",
        policy: HealPolicy | None = None,
    ) -> None:
        super().__init__(client, policy=policy)
        self._tiers = FormatState(check_mode(json_mode))
        self.responses = Responses(self)

    @property
    def beta(self) -> Any:
        """The wrapped client's `beta`, its `chat` this client's healing one (`BetaProxy`)."""
        if not hasattr(self.wrapped, "beta"):
            raise AttributeError(f"{type(self.wrapped).__name__} has no attribute 'beta'")
        return BetaProxy(self)

    @property
    def format(self) -> FormatState:
        """The JSON tier this client uses (shared with its `with_options` / `copy` twins)."""
        tiers = self._tiers
        assert tiers is not None  # set in __init__
        return tiers

    @format.setter
    def format(self, state: FormatState) -> None:
        self._tiers = state

    def __repr__(self) -> str:
        return f"healjson.wrap({self.wrapped!r}, json_mode={self.format.mode!r})"

    def with_options(self, **options: Any) -> HealingClient:
        """The wrapped client's `with_options(...)`, still healing (and sharing the JSON tier)."""
        return self._rewrap(self.wrapped.with_options(**options))

    def copy(self, **options: Any) -> HealingClient:
        """The wrapped client's `copy(...)`, still healing."""
        return self._rewrap(self.wrapped.copy(**options))

    def _rewrap(self, client: Any) -> HealingClient:
        twin = HealingClient(client, json_mode=self.format.mode, policy=self.policy)
        twin.format = self.format  # one endpoint: what it rejected stays rejected
        return twin

    def _accept(self, client: Any) -> bool:
        completions = getattr(getattr(client, "chat", None), "completions", None)
        if completions is None or not callable(getattr(completions, "create", None)):
            raise TypeError(
                f"wrap() needs an OpenAI-style client with chat.completions.create; "
                f"got {type(client).__name__}"
            )
        return is_async_client(client, completions.create)

    static_sender = True  # `send` reads the client's method per request

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        wrapped = self.wrapped
        reader = _READ_STREAM if params.get("stream") else _READ_COMPLETION

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            return wrapped.chat.completions.create, request, reader

        return send

    def _tool_sender(self, params: dict[str, Any]) -> Send:
        wrapped = self.wrapped

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            return wrapped.chat.completions.create, request, _READ_COMPLETION

        return send

    def _tool_stream_start(self, params: dict[str, Any]) -> Callable[[ModelCall], Any]:
        self._stream_params(params)
        wrapped = self.wrapped

        create = read_checked_call(wrapped.chat.completions.create)

        def start(effect: ModelCall) -> Any:
            messages = [dict(message) for message in effect.messages]
            return create(messages=messages, **effect.params)

        return start

    def _stream_params(self, params: dict[str, Any]) -> None:
        # the usage arrives in a last chunk only when asked for
        params.setdefault("stream_options", {"include_usage": True})


def instructor_streams(
    client: Any, *, is_async: bool, json_mode: str, policy: HealPolicy | None
) -> HealingClient:
    """The healed streams over the OpenAI client inside an instructor client (healjson's own
    JSON tier, `json_mode`, not instructor's `Mode`)."""
    return HealingClient(client, json_mode=json_mode, policy=policy)


_READ_COMPLETION = ReadChecked(
    lambda value: not isinstance(value, str | bytes) and hasattr(value, "choices"),
    "a chat completion",
    SDK_COMPLETIONS,
)
# a streamed `create(**request)`: a stream of chunks (or a whole completion, from an endpoint
# that does not stream)
_READ_STREAM = ReadChecked(
    lambda value: is_stream(value) or hasattr(value, "choices"), "a stream of chunks"
)
