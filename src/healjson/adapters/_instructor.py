"""`wrap(instructor_client)`: healjson owns the healing, instructor carries the request.

The shared adapter base (`_base`) checks the arguments and drives the healer, sync or async; this
module says only how one request reaches `create_with_completion` and how its answer is read.

Verified with instructor 1.17.x (1.17.0) in `Mode.JSON` and `Mode.TOOLS`, over the provider
SDKs the registry's providers name (`from_openai`, and instructor's constructors for the others'
clients).

Without `response_model` (or with `response_model=None`) `chat.completions.create(...)` — and its
instructor alias `create(...)` — passes straight through to the instructor client, positional
arguments included, and returns what instructor returns. Every other attribute
(`create_with_completion`, `create_partial`, `on`, `messages`, ...) delegates to it.

With `response_model=M` (plus `contracts=`, `policy=`, `fallback=`, `examples=`, `context=`) it
returns `Outcome[M]` and never raises at call time. A `healjson.Healer` drives the loop; each
model call is ONE instructor request with instructor's own retries off, and what healjson reads is
the raw completion, so L1 heals locally what instructor's strict validation rejected (a fenced,
trailing-comma or `"5"`-for-an-int answer) and L2 runs the contracts. How the request is shaped
(tools, JSON mode, the schema prompt) is decided by the instructor client's `Mode`; `json_mode`
is accepted for signature compatibility with `healjson.wrap` and has no effect here.

Public instructor APIs used (all from `instructor.core`):

* `Instructor.create_with_completion(messages=, response_model=, max_retries=0, hooks=)` (awaited
  for `AsyncInstructor`): instructor makes `max_retries + 1` attempts, so 0 means exactly one
  provider request; a successful parse returns `(obj, completion)`.
* `IncompleteOutputException.last_completion` (finish_reason `length`) and
  `InstructorRetryException.failed_attempts[-1].completion` / `.last_completion` (an answer that
  failed instructor's parsing or validation).
* `Hooks` with the `completion:response` hook, passed per call: it sees the raw completion before
  instructor parses it. Needed because instructor 1.17 loses the completion in two cases: a TOOLS
  mode refusal raises a bare `AssertionError` (wrapped in `InstructorRetryException` with no
  failed attempts), and for a simple-type `response_model` (`int`, `str`, ...)
  `create_with_completion` fails with `AttributeError` (`_raw_response`) after a successful parse.
* `InstructorRetryException.__cause__`: instructor 1.17 wraps every other exception of a call —
  API errors and timeouts included — in `InstructorRetryException` raised `from` the original. When
  no completion exists the original is re-raised, so healjson reports `api_error` / `timeout`.

instructor's keywords are translated at call time: `max_retries=N` is
`HealPolicy(max_attempts=N + 1)` (instructor itself always gets `max_retries=0`: healjson repairs)
and `validation_context=` is healjson's `context=`: the contracts' context and pydantic's
validation context in every validation healjson makes; `context=` is not used for instructor's
message templating. `create_with_completion` is healed too (it returns `(outcome, completion)`),
on the client and on `chat.completions` alike. `create_partial` and `create_iterable` are healed
streams over the provider client inside when the registry knows its provider (`Provider.streams`:
the request goes through healjson's own adapter on that client, in healjson's JSON tier, not
instructor's `Mode`), `create_partial` yields `Partial[M]` snapshots and `create_iterable` each
valid item; `.outcome` is the run's. Over other clients, and for `create_generator`, they are
refused with a message naming the healed call.
For a `response_model` that is not a pydantic model (`int`, `list[Item]`, ...) instructor asks for
a wrapper object (`{"content": ...}`, `{"tasks": [...]}`); L1 unwraps it. healjson reads the
raw response by its shape, as every registered wire format reads its provider's responses; a
response of any other shape degrades with `api_error`. The `assistant` role of the messages
healjson sends (the failed answer in a repair request) is renamed as the provider names it
(`Provider.assistant_role`): instructor 1.17's handlers for a provider that says `model` reject
`assistant` with a ValueError.

As with `healjson.wrap(openai_client)`, each healing call runs inside `secrets_scope`: the
credentials of the provider client inside the instructor client (`client.client`, where its
provider's registry line says they are) and of the call's parameters are redacted from
everything healjson stores or logs.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from typing import Any

from instructor.core import Hooks, IncompleteOutputException, InstructorRetryException

from healjson._core.run.policy import HealPolicy
from healjson._core.run.streams import AsyncItemStream, ItemStream
from healjson._core.target.json_schema import JsonSchema
from healjson._core.wire.reply import is_response
from healjson._providers import PROVIDERS, Provider, resolve

from ._base import Completions, Exchange, HealingAdapter, NotACompletion, Send
from ._format import check_mode

__all__ = ["InstructorClient"]


class _Completions(Completions):
    def create(self, *args: Any, **kwargs: Any) -> Any:
        """`chat.completions.create`; with `response_model=M` it returns `Outcome[M]`; with
        `heal_tools=True` the caller's own tool calls healed (`Outcome[ToolCalls]`)."""
        if kwargs.get("heal_tools") or kwargs.get("tool_contracts") is not None:
            if kwargs.get("response_model") is None:
                kwargs.pop("response_model", None)  # instructor's "no model": a plain call
            kwargs.pop("json_mode", None)
            _translate(kwargs, self._owner.policy)
            return super().create(*args, **kwargs)
        if kwargs.get("response_model") is None:  # `None` too: instructor's own plain call
            return self._owner.wrapped.chat.completions.create(*args, **kwargs)
        kwargs.pop("json_mode", None)  # the instructor client's `Mode` shapes the request
        _translate(kwargs, self._owner.policy)
        return super().create(*args, **kwargs)

    def create_with_completion(self, *args: Any, **kwargs: Any) -> Any:
        """instructor's `chat.completions.create_with_completion`: healed as the client's own
        (`(outcome, completion)`; without `response_model`, instructor's own call)."""
        return self._owner.create_with_completion(*args, **kwargs)

    def create_partial(self, *args: Any, **kwargs: Any) -> Any:
        """instructor's `chat.completions.create_partial`: healed as the client's own."""
        return self._owner.create_partial(*args, **kwargs)

    def create_iterable(self, *args: Any, **kwargs: Any) -> Any:
        """instructor's `chat.completions.create_iterable`: healed as the client's own."""
        return self._owner.create_iterable(*args, **kwargs)


_ABSENT: Any = object()


def _translate(kwargs: dict[str, Any], default: HealPolicy | None) -> None:
    """instructor's own keywords in healjson's terms: `max_retries=N` is
    `HealPolicy(max_attempts=N + 1)` (healjson repairs; instructor's retry loop stays off) and
    `validation_context=` is `context=` (the contracts' context and pydantic's validation
    context). Anything else is refused at call time."""
    retries = kwargs.pop("max_retries", _ABSENT)
    if retries is not _ABSENT:
        if type(retries) is not int or retries < 0:
            raise TypeError(
                f"max_retries must be a whole number of retries, got {retries!r}: healjson does "
                "the retrying (max_retries=N is policy=HealPolicy(max_attempts=N + 1)); "
                "tenacity objects are not supported"
            )
        if kwargs.get("policy") is not None:
            raise TypeError("pass max_retries= or policy=HealPolicy(max_attempts=...), not both")
        kwargs["policy"] = dataclasses.replace(default or HealPolicy(), max_attempts=retries + 1)
    extra = kwargs.pop("validation_context", _ABSENT)
    if extra is not _ABSENT:
        if kwargs.get("context") is not None:
            raise TypeError("pass validation_context= or context=, not both (they are one)")
        if extra is not None and not isinstance(extra, Mapping):
            raise TypeError(f"validation_context must be a mapping, got {type(extra).__name__}")
        kwargs["context"] = extra
    for name in ("max_attempts", "retry"):
        if name in kwargs:
            raise TypeError(
                f"{name}= is not a healjson or instructor keyword here; set "
                "policy=HealPolicy(max_attempts=...) (or max_retries=)"
            )


# the raw completions of the current `create_with_completion` call, in order
_COMPLETIONS: ContextVar[list[Any] | None] = ContextVar("healjson_completions", default=None)

_NOT_HEALED = {"create_generator": "a generator of objects"}


class InstructorClient(HealingAdapter):
    """Wraps an `instructor.Instructor` or `instructor.AsyncInstructor`; see `healjson.wrap`."""

    completions_type = _Completions

    def __init__(
        self,
        client: Any,
        *,
        json_mode: str = "json_schema",
        policy: HealPolicy | None = None,
    ) -> None:
        super().__init__(client, policy=policy)
        inner = _inner(self.wrapped)
        self._assistant_role = "assistant" if inner is None else inner.assistant_role
        self.json_mode = check_mode(json_mode)
        _install_log_filter()

    def __repr__(self) -> str:
        return f"healjson.wrap({self.wrapped!r})"

    def create(self, *args: Any, **kwargs: Any) -> Any:
        """instructor's alias of `chat.completions.create`; heals the same way."""
        return self.chat.completions.create(*args, **kwargs)

    def create_with_completion(self, *args: Any, **kwargs: Any) -> Any:
        """Healed like `create`; returns `(outcome, completion)`: the `Outcome[M]` and the raw
        completion of the last model call (None when no call returned one). Awaitable for an
        async client. Without `response_model` it is instructor's own call."""
        if kwargs.get("response_model") is None:
            return self.wrapped.create_with_completion(*args, **kwargs)
        if self.is_async:
            return self._acreate_with_completion(args, kwargs)
        seen: list[Any] = []
        token = _COMPLETIONS.set(seen)
        try:
            outcome = self.chat.completions.create(*args, **kwargs)
        finally:
            _COMPLETIONS.reset(token)
        return outcome, seen[-1] if seen else None

    async def _acreate_with_completion(self, args: Any, kwargs: dict[str, Any]) -> Any:
        seen: list[Any] = []
        token = _COMPLETIONS.set(seen)
        try:
            outcome = await self.chat.completions.create(*args, **kwargs)
        finally:
            _COMPLETIONS.reset(token)
        return outcome, seen[-1] if seen else None

    def create_partial(self, *args: Any, **kwargs: Any) -> Any:
        """Healed streaming of partial objects: a `HealStream[M]` (an `AsyncHealStream` for an
        async client) whose iteration yields `Partial[M]` snapshots and whose `.outcome` is the
        run's. Without `response_model` it is instructor's own call."""
        if kwargs.get("response_model") is None:
            return self.wrapped.create_partial(*args, **kwargs)
        return self._streaming_client("create_partial").chat.completions.create(
            *args, **self._stream_kwargs(kwargs)
        )

    def create_iterable(self, *args: Any, **kwargs: Any) -> Any:
        """Healed streaming of items: `response_model=Item` streams a `list[Item]`; iterating
        the result yields each item once it is complete and valid (a bad one is held and
        repaired after the stream); `.outcome` is the run's. Without `response_model` it is
        instructor's own call."""
        model = kwargs.get("response_model")
        if model is None:
            return self.wrapped.create_iterable(*args, **kwargs)
        client = self._streaming_client("create_iterable")
        stream = client.chat.completions.create(
            *args,
            **{**self._stream_kwargs(kwargs), "response_model": list[model]},  # type: ignore[valid-type]
        )
        return AsyncItemStream(stream) if self.is_async else ItemStream(stream)

    def _stream(
        self,
        healer: Any,
        forced: Any,
        messages: Any,
        context: Mapping[str, Any] | None,
        params: dict[str, Any],
    ) -> Any:
        """`create(..., stream=True)`: healed like `create_partial`."""
        params.pop("hooks", None)
        return self._streaming_client("create(stream=True)")._stream(
            healer, forced, messages, context, params
        )

    def _heal_tools(
        self,
        policy: HealPolicy,
        tool_contracts: Any,
        context: Mapping[str, Any] | None,
        params: dict[str, Any],
    ) -> Any:
        """`create(..., heal_tools=True)`: the request is the caller's own (their tools, no
        response model), so it goes to the provider client inside, healed by healjson's own
        adapter over it (OpenAI clients only: `instructor.from_openai`)."""
        inner = _inner(self.wrapped)
        if inner is not None and inner is not PROVIDERS.default:
            raise TypeError(
                "heal_tools=True heals the tool calls of OpenAI clients (instructor.from_openai), "
                f"not {inner.name!r}"
            )
        params.pop("hooks", None)  # instructor's hooks see instructor's own calls only
        inner = self._streaming_client("create(heal_tools=True)")
        return inner._heal_tools(policy, tool_contracts, context, params)

    def _stream_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        kwargs = dict(kwargs)
        kwargs.pop("json_mode", None)
        kwargs.pop("hooks", None)  # instructor's hooks see instructor's own calls only
        _translate(kwargs, self.policy)
        kwargs["stream"] = True
        return kwargs

    def _streaming_client(self, method: str) -> Any:
        """healjson's own adapter over the provider client inside (its provider's
        `Provider.streams`): a healed stream reads the provider's own chunks (instructor's
        partial parsing would validate each snapshot; healjson shows snapshots and validates
        once, at the end)."""
        found = self.__dict__.get("_streams")
        if found is not None:
            return found
        raw = getattr(self.wrapped, "client", None)
        inner = _inner(self.wrapped)
        if inner is None or inner.streams is None:
            named = getattr(getattr(self.wrapped, "provider", None), "value", None)
            known = [p.name for p in PROVIDERS if p.streams is not None]
            raise TypeError(
                f"healjson heals instructor's {method} over the clients of {', '.join(known)} "
                f"(instructor's from_<provider> constructors), not {named!r}: use the "
                f"instructor client itself (wrapped.{method})"
            )
        client: HealingAdapter = resolve(inner.streams)(
            raw, is_async=self.is_async, json_mode=self.json_mode, policy=self.policy
        )
        self.__dict__["_streams"] = client
        return client

    def __getattr__(self, name: str) -> Any:
        if name in _NOT_HEALED and "_core" in self.__dict__:
            raise AttributeError(
                f"healjson does not heal instructor's {name} ({_NOT_HEALED[name]}) yet: use "
                "chat.completions.create(response_model=M, ...) for a healed Outcome[M], or "
                f"the instructor client itself (wrapped.{name}) for instructor's own behaviour"
            )
        return super().__getattr__(name)

    def _accept(self, client: Any) -> bool:
        create_with_completion = getattr(client, "create_with_completion", None)
        completions = getattr(getattr(client, "chat", None), "completions", None)
        if not callable(create_with_completion) or not callable(
            getattr(completions, "create", None)
        ):
            raise TypeError(
                "wrap() needs an instructor client with chat.completions.create and "
                f"create_with_completion; got {type(client).__name__}"
            )
        return inspect.iscoroutinefunction(create_with_completion)

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        if isinstance(response_model, Mapping | JsonSchema):
            raise TypeError(
                "an instructor client validates with pydantic: give response_model a model "
                "class (for a JSON Schema dict, wrap the provider's own client instead)"
            )
        user_hooks = params.pop("hooks", None)
        create_with_completion = self.wrapped.create_with_completion
        role = self._assistant_role

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            attempt = _Attempt(user_hooks)
            messages = request.pop("messages")
            kwargs = {
                "messages": _with_role(messages, role),
                "response_model": response_model,
                "max_retries": 0,
                "hooks": attempt.hooks,
                **request,
            }
            return create_with_completion, kwargs, attempt

        return send


def _inner(client: Any) -> Provider | None:
    """The provider of the SDK client inside an instructor client (None: none the registry
    knows, or no client: instructor over a bare function)."""
    raw = getattr(client, "client", None)
    if raw is None:
        return None
    if PROVIDERS.claims(raw) or _chat_shaped(raw):  # an OpenAI-compatible client: the default's
        return PROVIDERS.for_client(raw)
    return None


def _chat_shaped(client: Any) -> bool:
    completions = getattr(getattr(client, "chat", None), "completions", None)
    return callable(getattr(completions, "create", None))


def _with_role(messages: list[dict[str, Any]], assistant_role: str) -> list[dict[str, Any]]:
    """The messages with the `assistant` role renamed as the provider names it."""
    if assistant_role == "assistant":
        return messages
    return [
        {**message, "role": assistant_role} if message.get("role") == "assistant" else message
        for message in messages
    ]


# instructor logs an ERROR for every answer its own validation rejects ("API call failed on
# attempt 1", "Max retries exceeded") — including answers healjson then heals locally. Inside
# healjson's calls those records are dropped; healjson's own events report what happened.
_QUIET: ContextVar[bool] = ContextVar("healjson_instructor_quiet", default=False)
_INSTRUCTOR_LOGGERS = ("instructor", "instructor.v2", "instructor.v2.retry")


class _MuteInsideHealjson(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _QUIET.get()


_MUTE = _MuteInsideHealjson()


def _install_log_filter() -> None:
    for name in _INSTRUCTOR_LOGGERS:
        logger = logging.getLogger(name)
        if _MUTE not in logger.filters:
            logger.addFilter(_MUTE)


class _Attempt(Exchange):
    """One instructor request: instructor's log records muted while it runs, and a per-request
    `completion:response` hook that captures the raw completion whatever instructor raises."""

    __slots__ = ("hooks", "quiet", "seen")

    def __init__(self, user_hooks: Any) -> None:
        self.seen: list[Any] = []
        own = Hooks()
        own.on("completion:response", self.seen.append)
        self.hooks: Hooks = own if user_hooks is None else user_hooks + own
        self.quiet: Token[bool] | None = None

    def open(self) -> None:
        self.quiet = _QUIET.set(True)

    def close(self) -> None:
        if self.quiet is not None:
            _QUIET.reset(self.quiet)
            self.quiet = None

    def read(self, ok: bool, value: Any) -> tuple[bool, Any]:
        """`create_with_completion`'s `(obj, completion)`, or the completion behind its failure;
        else the exception to raise instead."""
        if ok:
            try:
                _, completion = value
            except Exception as exc:
                ok, value = False, exc
        if not ok:
            completion = _carried(value)
            if completion is None and self.seen:
                completion = self.seen[-1]
            if completion is None:
                return False, _original(value)
        try:
            checked = _checked(completion)
        except NotACompletion as exc:
            return False, exc
        sink = _COMPLETIONS.get()
        if sink is not None:
            sink.append(checked)
        return True, checked


def _carried(exc: Exception) -> Any:
    if isinstance(exc, IncompleteOutputException):
        return exc.last_completion
    if isinstance(exc, InstructorRetryException):
        if exc.failed_attempts:
            return exc.failed_attempts[-1].completion
        return exc.last_completion
    return None


def _original(exc: Exception) -> Exception:
    """Undo instructor's wrapping of an error that carries no completion (API error, timeout)."""
    cause = exc.__cause__
    if isinstance(exc, InstructorRetryException) and isinstance(cause, Exception):
        return cause
    return exc


def _checked(value: Any) -> Any:
    """The provider's raw response, if healjson can read its shape (a registered format's)."""
    if not is_response(value):
        raise NotACompletion(
            f"the endpoint returned {type(value).__name__}, not a chat completion: "
            f"{str(value)[:200]!r}"
        )
    return value
