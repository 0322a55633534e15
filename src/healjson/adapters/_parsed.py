"""The SDK's own structured calls, healed in place: what `chat.completions.parse`,
`responses.parse` and their `stream` twins return on a wrapped OpenAI client.

A run heals the answer as `create(response_model=M)` does (L1, contracts, repair re-asks); what
the caller gets back is the SDK's own object — `ParsedChatCompletion[M]`, `ParsedResponse[M]` —
built from the last answer the run received, with the healed value where the SDK puts its
parsed value (`None` when the run degraded: what the SDK would raise on model output does not
raise). `healjson.outcome_of(obj)` returns the run's `Outcome`.

- `Received` records what a run's model calls returned (the last answer, the last error), and
  can hand a run an answer it already has as its first (a stream read by the SDK's own stream
  object): the repairs are the run's own calls.
- `parsed_completion` / `parsed_response`: the SDK's parsed types from a plain answer (another
  SDK's builder, in its provider's module, uses `fields_of`, `with_request_id`, `type_parameter`).
- `finish`: the run's outcome and its last answer made into the SDK's object (or, when no
  answer ever came, the provider's error raised as the bare SDK raises it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from healjson._attached import attach
from healjson._core.outcome.outcome import Healed

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from healjson._core.outcome.outcome import Outcome

__all__ = [
    "Received",
    "afinish",
    "fields_of",
    "finish",
    "parsed_completion",
    "parsed_response",
    "type_parameter",
    "with_request_id",
]

E = TypeVar("E")
Send = Callable[[dict[str, Any]], tuple[Callable[..., Any], dict[str, Any], E]]


class Received:
    """What one run's model calls got back: `last`, the newest answer (None: none yet), and
    `error`, the newest exception a call raised."""

    __slots__ = ("error", "last")

    def __init__(self) -> None:
        self.last: Any = None
        self.error: BaseException | None = None

    def recording(self, send: Send[E], is_async: bool) -> Send[E]:
        """`send` whose client method notes what it returned (or raised) here."""

        def recorded(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], E]:
            method, kwargs, exchange = send(request)
            return self.recorded(method, is_async), kwargs, exchange

        return recorded

    def recorded(self, method: Callable[..., Any], is_async: bool) -> Callable[..., Any]:
        """`method` (a client's, taking keywords) noting what it returns (or raises) here."""
        return self._async(method) if is_async else self._sync(method)

    def _sync(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(**kwargs: Any) -> Any:
            try:
                value = method(**kwargs)
            except Exception as exc:
                self.error = exc
                raise
            self.last = value
            return value

        return call

    def _async(self, method: Callable[..., Any]) -> Callable[..., Any]:
        async def call(**kwargs: Any) -> Any:
            try:
                value = await method(**kwargs)
            except Exception as exc:
                self.error = exc
                raise
            self.last = value
            return value

        return call

    def first(self, call: Callable[..., Any], answer: Any, is_async: bool) -> Callable[..., Any]:
        """`call` (a run's model call) whose first answer is `answer`, already received: the
        run's next calls (its repairs) are `call`'s."""
        self.last = answer
        pending = [answer]

        def sync(messages: list[dict[str, Any]], **params: Any) -> Any:
            return pending.pop() if pending else call(messages, **params)

        async def asynchronous(messages: list[dict[str, Any]], **params: Any) -> Any:
            return pending.pop() if pending else await call(messages, **params)

        return asynchronous if is_async else sync


def finish(
    outcome: Outcome[Any],
    received: Received,
    build: Callable[[Any, Any], Any],
) -> Any:
    """The SDK's object for a run: `build(last_answer, value)`, `value` the healed one (None
    when the run degraded), its outcome attached. A run that received no answer at all (every
    call failed) raises the provider's error, as the bare SDK would."""
    if received.last is None:
        if received.error is not None:
            raise received.error
        raise RuntimeError(f"the run received no answer: {outcome!r}")
    value = outcome.value if isinstance(outcome, Healed) else None
    result = build(received.last, value)
    attach(result, outcome)
    return result


async def afinish(
    outcome: Awaitable[Outcome[Any]], received: Received, build: Callable[[Any, Any], Any]
) -> Any:
    """`finish` for an async client's run."""
    return finish(await outcome, received, build)


def fields_of(model: Any) -> dict[str, Any]:
    """A pydantic object's fields and extra fields, shallow (its nested objects as they are)."""
    return dict(model)


def with_request_id(parsed: Any, answer: Any) -> Any:
    """`parsed` with the request id the SDK noted on `answer` (its documented `_request_id`)."""
    request_id = getattr(answer, "_request_id", None)
    if request_id is not None:
        parsed._request_id = request_id
    return parsed


def type_parameter(name: str, model: type[Any], *modules: str) -> Any:
    """The type parameter the SDK's own parse puts on its parsed types (its type variable: the
    bare SDK returns `ParsedChatCompletion[ResponseFormatT]`, whatever the model), so the
    wrapped call's object is of the very class the bare call's is; `model` where the SDK has
    none."""
    import importlib

    for module in modules:
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError:  # pragma: no cover - an SDK that moved them
            continue
        if found is not None:
            return found
    return model  # pragma: no cover - an SDK that moved them


def parsed_completion(model: type[Any]) -> Callable[[Any, Any], Any]:
    """`build(completion, value)`: the SDK's `ParsedChatCompletion[model]` of a chat completion
    (or a stream's snapshot), `value` as the first choice's `message.parsed` (the others'
    None); a refusal stays the message's `refusal`."""
    from openai.types.chat import (
        ParsedChatCompletion,
        ParsedChatCompletionMessage,
        ParsedChoice,
    )

    param = type_parameter("ResponseFormatT", model, "openai.lib._parsing")
    generics: tuple[Any, ...] = (ParsedChatCompletion, ParsedChoice, ParsedChatCompletionMessage)
    completion_type, choice_type, message_type = (generic[param] for generic in generics)

    def build(completion: Any, value: Any) -> Any:
        choices = []
        for index, choice in enumerate(completion.choices):
            message = {**fields_of(choice.message), "parsed": value if index == 0 else None}
            message["tool_calls"] = message.get("tool_calls") or None  # as the SDK has it
            choices.append(
                choice_type.construct(
                    **{**fields_of(choice), "message": message_type.construct(**message)}
                )
            )
        return with_request_id(
            completion_type.construct(**{**fields_of(completion), "choices": choices}), completion
        )

    return build


@functools.cache
def sdk_response_types() -> tuple[Any, Any, Any]:
    """The classes the SDK's own `responses.parse` builds (response, message, output text):
    found once by running its own builder on a one-message response with no format, since
    releases differ (older ones build `ParsedResponse[TextFormatT]`, newer ones the bare
    `ParsedResponse`); the type-variable form where the SDK's builder has moved."""
    from openai.types.responses import (
        ParsedResponse,
        ParsedResponseOutputMessage,
        ParsedResponseOutputText,
        Response,
    )

    try:
        from openai.lib._parsing._responses import parse_response

        text = {"type": "output_text", "text": "", "annotations": []}
        message = {"type": "message", "id": "m", "role": "assistant", "status": "completed"}
        response = Response.model_validate(
            {
                "id": "r",
                "object": "response",
                "created_at": 0,
                "model": "m",
                "parallel_tool_calls": False,
                "tool_choice": "auto",
                "tools": [],
                "output": [{**message, "content": [text]}],
            }
        )
        parsed: Any = parse_response(text_format=_omitted(), input_tools=None, response=response)
        item = parsed.output[0]
        return type(parsed), type(item), type(item.content[0])
    except Exception:  # pragma: no cover - an SDK whose builder moved or changed its shape
        param = type_parameter("TextFormatT", Any, "openai.lib._parsing._responses")
        generics = (ParsedResponse, ParsedResponseOutputMessage, ParsedResponseOutputText)
        first, second, third = (generic[param] for generic in generics)
        return first, second, third


def _omitted() -> Any:
    import openai

    return getattr(openai, "omit", None) or openai.NOT_GIVEN


def parsed_response(model: type[Any]) -> Callable[[Any, Any], Any]:
    """`build(response, value)`: the SDK's parsed response of a response (of the very classes
    the bare `responses.parse` returns), `value` as the `parsed` of the last message's output
    texts (so `output_parsed` is it); every other output text's `parsed` is None."""
    response_type, message_type, text_type = sdk_response_types()

    def build(response: Any, value: Any) -> Any:
        output = list(response.output or ())
        messages = [i for i, item in enumerate(output) if item.type == "message"]
        answer = messages[-1] if messages else -1
        items = []
        for index, item in enumerate(output):
            if item.type != "message":
                items.append(item)
                continue
            content = [
                text_type.construct(
                    **{**fields_of(part), "parsed": value if index == answer else None}
                )
                if part.type == "output_text"
                else part
                for part in item.content
            ]
            items.append(message_type.construct(**{**fields_of(item), "content": content}))
        return with_request_id(
            response_type.construct(**{**fields_of(response), "output": items}), response
        )

    return build
