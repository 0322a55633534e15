"""`wrap(instructor_client)`: healjson owns the healing, instructor carries the request.

Verified with instructor 1.17.x (1.17.0) in `Mode.JSON` and `Mode.TOOLS`, over openai 3.x
(`from_openai`), anthropic 0.119 and 2.14 (`from_anthropic`) and google-genai 1.65 and 3.6
(`from_genai`).

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

A `max_retries=` given at the call site is ignored (healjson's `HealPolicy.max_attempts` is the
budget); `context=` goes to the contracts and is not used for instructor's message templating.
For a `response_model` that is not a pydantic model (`int`, `list[Item]`, ...) instructor asks for
a wrapper object (`{"content": ...}`, `{"tasks": [...]}`); L1 unwraps it. healjson reads the
raw response by its shape: OpenAI's `ChatCompletion` (and every OpenAI-compatible provider),
Anthropic's `Message` (text or `tool_use` blocks, `stop_reason`) and Gemini's
`GenerateContentResponse` (text or function-call parts, `finish_reason`); a response of any other
shape degrades with `api_error`. For a google-genai client (`instructor.from_genai`) the
`assistant` role of the messages healjson sends (the failed answer in a repair request) is renamed
`model`: instructor 1.17's genai handlers reject `assistant` with a ValueError.

As with `healjson.wrap(openai_client)`, each healing call runs inside `secrets_scope`: the
credentials of the provider client inside the instructor client (`client.client`: openai's or
anthropic's `api_key`, google-genai's `_api_client.api_key`) and of the call's parameters are
redacted from everything healjson stores or logs.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any

from instructor.core import Hooks, IncompleteOutputException, InstructorRetryException

from healjson._core.contracts import Contract
from healjson._core.healer import Healer
from healjson._core.outcome import Outcome
from healjson._core.policy import HealPolicy
from healjson._core.redact import secrets_scope
from healjson._core.reply import is_response

from ._cache import HealerCache
from ._format import check_mode
from ._openai import NotACompletion
from ._proxy import ChatProxy, CompletionsProxy

__all__ = ["InstructorClient"]

_HEAL_KEYWORDS = ("contracts", "policy", "fallback", "examples", "context", "json_mode")


_DEFAULT_POLICY = HealPolicy()


class InstructorClient:
    """Wraps an `instructor.Instructor` or `instructor.AsyncInstructor`; see `healjson.wrap`."""

    def __init__(
        self,
        client: Any,
        *,
        json_mode: str = "json_schema",
        policy: HealPolicy | None = None,
    ) -> None:
        if isinstance(client, InstructorClient):
            client = client.wrapped
        create_with_completion = getattr(client, "create_with_completion", None)
        completions = getattr(getattr(client, "chat", None), "completions", None)
        if not callable(create_with_completion) or not callable(
            getattr(completions, "create", None)
        ):
            raise TypeError(
                "wrap() needs an instructor client with chat.completions.create and "
                f"create_with_completion; got {type(client).__name__}"
            )
        self.wrapped: Any = client
        self.is_async = inspect.iscoroutinefunction(create_with_completion)
        provider = getattr(getattr(client, "provider", None), "value", None)
        self._assistant_role = "model" if provider == "genai" else "assistant"
        self.json_mode = check_mode(json_mode)
        self.policy = policy
        self.chat = ChatProxy(self, _Completions(self))
        self._healers = HealerCache()
        _install_log_filter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def __repr__(self) -> str:
        return f"healjson.wrap({self.wrapped!r})"

    def create(self, *args: Any, **kwargs: Any) -> Any:
        """instructor's alias of `chat.completions.create`; heals the same way."""
        return self.chat.completions.create(*args, **kwargs)

    def healer(
        self,
        response_model: Any,
        contracts: Iterable[Contract | Callable[..., Any]],
        policy: HealPolicy | None,
        fallback: Any,
        examples: Iterable[Any],
    ) -> Healer[Any]:
        """The cached `Healer` for this configuration (built once: it synthesises an example)."""
        chosen = policy or self.policy or _DEFAULT_POLICY
        return self._healers.get(response_model, contracts, chosen, fallback, examples)


class _Completions(CompletionsProxy):
    def create(self, *args: Any, **kwargs: Any) -> Any:
        """`chat.completions.create`; with `response_model=M` it returns `Outcome[M]`."""
        owner: InstructorClient = self._owner
        if kwargs.get("response_model") is None:
            return owner.wrapped.chat.completions.create(*args, **kwargs)
        if args:
            raise TypeError("chat.completions.create takes keyword arguments only")
        if kwargs.get("stream"):
            raise ValueError("stream=True cannot be combined with response_model")
        if "messages" not in kwargs:
            raise TypeError("chat.completions.create needs messages=[...]")
        response_model = kwargs.pop("response_model")
        heal = {name: kwargs.pop(name) for name in _HEAL_KEYWORDS if name in kwargs}
        kwargs.pop("max_retries", None)  # instructor's retries stay off: healjson repairs
        user_hooks = kwargs.pop("hooks", None)
        messages = kwargs.pop("messages")
        healer = owner.healer(
            response_model,
            heal.get("contracts", ()),
            heal.get("policy"),
            heal.get("fallback"),
            heal.get("examples", ()),
        )
        context: Mapping[str, Any] | None = heal.get("context")
        create_with_completion = owner.wrapped.create_with_completion
        role = owner._assistant_role
        if owner.is_async:
            return _heal_async(
                healer,
                create_with_completion,
                response_model,
                user_hooks,
                messages,
                client=owner.wrapped,
                role=role,
                context=context,
                params=kwargs,
            )

        def call(msgs: list[dict[str, Any]], **params: Any) -> Any:
            capture = _Capture(user_hooks)
            failure: Exception | None = None
            quiet = _QUIET.set(True)
            try:
                _, completion = create_with_completion(
                    messages=_with_role(msgs, role),
                    response_model=response_model,
                    max_retries=0,
                    hooks=capture.hooks,
                    **params,
                )
            except Exception as exc:
                completion, failure = capture.settle(exc)
            finally:
                _QUIET.reset(quiet)
            if failure is not None:
                raise failure
            return _checked(completion)

        with secrets_scope(owner.wrapped, kwargs):  # what healjson stores or logs is redacted
            return healer.run(call, messages, context=context, **kwargs)


async def _heal_async(
    healer: Healer[Any],
    create_with_completion: Callable[..., Any],
    response_model: Any,
    user_hooks: Any,
    messages: Any,
    *,
    client: Any,
    role: str,
    context: Mapping[str, Any] | None,
    params: dict[str, Any],
) -> Outcome[Any]:
    async def call(msgs: list[dict[str, Any]], **call_params: Any) -> Any:
        capture = _Capture(user_hooks)
        failure: Exception | None = None
        quiet = _QUIET.set(True)
        try:
            _, completion = await create_with_completion(
                messages=_with_role(msgs, role),
                response_model=response_model,
                max_retries=0,
                hooks=capture.hooks,
                **call_params,
            )
        except Exception as exc:
            completion, failure = capture.settle(exc)
        finally:
            _QUIET.reset(quiet)
        if failure is not None:
            raise failure
        return _checked(completion)

    with secrets_scope(client, params):  # entered in the awaiting task's context
        return await healer.arun(call, messages, context=context, **params)


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


class _Capture:
    """Per-request `completion:response` hook: the raw completion, whatever instructor raises."""

    def __init__(self, user_hooks: Any) -> None:
        self.seen: list[Any] = []
        own = Hooks()
        own.on("completion:response", self.seen.append)
        self.hooks: Hooks = own if user_hooks is None else user_hooks + own

    def settle(self, exc: Exception) -> tuple[Any, Exception | None]:
        """The completion behind an instructor failure, or the exception to raise instead."""
        completion = _carried(exc)
        if completion is None and self.seen:
            completion = self.seen[-1]
        if completion is not None:
            return completion, None
        return None, _original(exc)


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
    """The provider's raw response, if healjson can read its shape (OpenAI, Anthropic, Gemini)."""
    if not is_response(value):
        raise NotACompletion(
            f"the endpoint returned {type(value).__name__}, not a chat completion: "
            f"{str(value)[:200]!r}"
        )
    return value
