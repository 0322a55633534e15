"""google-genai clients: `wrap(genai.Client())` (`HealingGemini`: `models.generate_content` and
`generate_content_stream`, sync and through `aio`, heal given a `response_model`, in the tiers
of `wire.tier_request`, stepped down on a 400 naming their feature), and

Healed streams over a google-genai client: what `wrap(instructor.from_genai(...))` uses for
`create_partial`, `create_iterable` and `create(stream=True)`.

A healed stream reads the provider's own chunks (each a `GenerateContentResponse`, read by
`wire`), so the request goes to the
genai client itself (`models.generate_content_stream`, `aio.models.generate_content_stream`
for an async instructor client), in the prompt tier: the schema in the system instruction. The
chat messages become Gemini `contents` (`assistant` is `model`), the system messages the
`system_instruction`; OpenAI's parameter names are mapped (`max_tokens` to
`max_output_tokens`, `stop` to `stop_sequences`), any other goes into the config as given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from pydantic import BaseModel

from healjson._core.redact import secrets_scope
from healjson._core.run.drive import drive_async, drive_sync, is_stream
from healjson._core.run.policy import HealPolicy
from healjson._core.run.streams import stream_async, stream_sync
from healjson._core.target.target import Target
from healjson._providers.tiers import NATIVE_MODES, JsonMode
from healjson.adapters._base import (
    UNSET,
    Exchange,
    HealingAdapter,
    Send,
    check_one_answer,
)
from healjson.adapters._format import Enforcing, FormatState, check_mode
from healjson.adapters._parsed import Received, afinish, finish
from healjson.adapters._proxy import ContextPassthrough, Forwarding
from healjson.adapters._steps import stepped
from healjson.adapters._unreadable import ReadChecked

from .calls import check_call, forces_call
from .parsed import aparsed_chunks, parsed_chunks
from .system import system_text
from .wire import (
    chooses_format,
    content_messages,
    enforced_schema,
    gemini_request,
    is_tier_rejection,
    tier_request,
)

__all__ = ["GeminiStreams", "HealingGemini", "instructor_streams"]


class GeminiStreams(HealingAdapter):
    """Wraps a `google.genai.Client` for healed streams (`use_async`: through `client.aio`)."""

    def __init__(
        self, client: Any, *, use_async: bool = False, policy: HealPolicy | None = None
    ) -> None:
        self._use_async = use_async
        super().__init__(client, policy=policy)
        self._tiers = FormatState("prompt")

    def _accept(self, client: Any) -> bool:
        models = getattr(client, "aio", client) if self._use_async else client
        stream = getattr(getattr(models, "models", None), "generate_content_stream", None)
        if not callable(stream):
            raise TypeError(
                "a google-genai client with models.generate_content_stream is needed; got "
                f"{type(client).__name__}"
            )
        return self._use_async

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        models = self.wrapped.aio.models if self._use_async else self.wrapped.models
        stream = models.generate_content_stream

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            messages = request.pop("messages")
            return stream, gemini_request(messages, request), _READ_CHUNKS

        return send


# the answer of `generate_content_stream`: an iterator of responses (an awaitable of one, async)
_READ_CHUNKS = ReadChecked(
    lambda value: is_stream(value) or hasattr(value, "__await__"), "a stream of responses"
)


def instructor_streams(
    client: Any, *, is_async: bool, json_mode: str, policy: HealPolicy | None
) -> GeminiStreams:
    """The healed streams over the client inside an instructor client (through `client.aio`
    for an async one; always the prompt tier: see the module's docstring)."""
    return GeminiStreams(client, use_async=is_async, policy=policy)


_READ_RESPONSE = ReadChecked(lambda value: hasattr(value, "candidates"), "a Gemini response")
_READ_STREAM = ReadChecked(is_stream, "a stream of responses")


class Models(Forwarding):
    """`wrap(genai.Client()).models` (and `.aio.models`): `generate_content` and
    `generate_content_stream` heal when given a `response_model`; everything else is the
    wrapped client's."""

    def __init__(self, owner: HealingGemini, aio: bool) -> None:
        self._owner = owner
        self._aio = aio

    def _models(self) -> Any:
        client = self._owner.wrapped
        return client.aio.models if self._aio else client.models

    def forwarded(self) -> Any:
        return self._models()

    def generate_content(self, *args: Any, response_model: Any = UNSET, **kwargs: Any) -> Any:
        """With `response_model=M`: `Outcome[M]` (awaitable through `aio`). Without it, a
        pydantic model as the config's `response_schema` is the SDK's own structured call: the
        request is the caller's, and the SDK's own `GenerateContentResponse` comes back with
        `.parsed` the healed value (None when the run degraded), `healjson.outcome_of(...)` its
        outcome; the response is the run's last answer (a repair's, when one was needed)."""
        if response_model is UNSET:
            schema = _response_schema(kwargs.get("config"))
            if schema is None:
                return self._models().generate_content(*args, **kwargs)
            received = Received()
            run = self._owner._heal(self._aio, False, args, schema, kwargs, received=received)
            if self._aio:
                return afinish(run, received, _with_parsed)
            return finish(run, received, _with_parsed)
        return self._owner._heal(self._aio, False, args, response_model, kwargs)

    def generate_content_stream(
        self, *args: Any, response_model: Any = UNSET, **kwargs: Any
    ) -> Any:
        """With `response_model=M`: a `HealStream[M]` (`AsyncHealStream[M]` through `aio`).
        Without it, a pydantic model as the config's `response_schema` is the SDK's own
        structured stream: the request is the caller's, its chunks the SDK's as they arrive,
        and the chunk that ends the answer comes once the stream has ended, its `.parsed` the
        healed value of the whole answer (None when the run degraded), `healjson.outcome_of`
        its outcome (`parsed`); a repair is a plain `generate_content` call."""
        if response_model is UNSET:
            schema = _response_schema(kwargs.get("config"))
            if schema is None:
                return self._models().generate_content_stream(*args, **kwargs)
            return self._owner._parsed_stream(self._aio, args, schema, kwargs)
        return self._owner._heal(self._aio, True, args, response_model, kwargs)


class Aio(Forwarding, ContextPassthrough):
    """`wrap(genai.Client()).aio`: healing `models`, the rest the wrapped client's `aio` (an
    `async with` as the SDK's `aio` is one)."""

    def __init__(self, owner: HealingGemini) -> None:
        self._owner = owner
        self.models = Models(owner, aio=True)

    @property
    def wrapped(self) -> Any:
        """The SDK client's `aio`."""
        return self._owner.wrapped.aio

    def forwarded(self) -> Any:
        return self._owner.wrapped.aio


def _snake_case(config: Mapping[Any, Any]) -> bool:
    """Whether a config dict's keys are all snake_case (one C-level check: the common call)."""
    try:
        return "".join(config).islower()
    except TypeError:  # a key that is no string: the SDK's model says what is wrong
        return False


def config_type() -> Any:
    """google-genai's `GenerateContentConfig` (imported when a config dict is first read)."""
    from google.genai import types

    return types.GenerateContentConfig


class HealingGemini(HealingAdapter):
    """Wraps a `google.genai.Client`; see `healjson.wrap`. Tiers, in the chat tiers' names:
    `json_schema` (`response_json_schema`), `json_object` (`response_mime_type` JSON, the schema
    in the instruction), `prompt`."""

    def __init__(
        self, client: Any, *, json_mode: str = "json_schema", policy: HealPolicy | None = None
    ) -> None:
        super().__init__(client, policy=policy)
        self.format = FormatState(check_mode(json_mode, NATIVE_MODES))
        self.models = Models(self, aio=False)
        self.aio = Aio(self)

    def __repr__(self) -> str:
        return f"healjson.wrap({self.wrapped!r}, json_mode={self.format.mode!r})"

    def _accept(self, client: Any) -> bool:
        if not callable(getattr(getattr(client, "models", None), "generate_content", None)):
            raise TypeError(
                f"a google-genai client with models.generate_content is needed; got "
                f"{type(client).__name__}"
            )
        return False  # its async side is `client.aio`

    def _heal(
        self,
        aio: bool,
        stream: bool,
        args: tuple[Any, ...],
        response_model: Any,
        kwargs: dict[str, Any],
        *,
        received: Received | None = None,
        first: Any = None,
    ) -> Any:
        options: dict[str, Any] = {
            name: kwargs.pop(name, default) for name, default in _OPTIONS.items()
        }
        models = self.wrapped.aio.models if aio else self.wrapped.models
        create = models.generate_content_stream if stream else models.generate_content
        check_call(create, args, kwargs)  # the SDK's own TypeError for what it does not take
        if args:  # a method that takes them anyway (not google-genai's)
            raise TypeError("generate_content takes keyword arguments only")
        if "contents" not in kwargs:
            raise TypeError("generate_content needs contents=...")
        contents = kwargs.pop("contents")
        text = contents if type(contents) is str else None  # sent as given when alone
        originals, messages = content_messages(contents)
        config = kwargs.pop("config", None)
        if isinstance(config, Mapping) and not _snake_case(config):
            config = config_type().model_validate(config)  # read as the SDK reads camelCase
        system = getattr(config, "system_instruction", None)  # the caller's own object
        if hasattr(config, "model_dump"):
            config = config.model_dump(exclude_none=True)
        # the method's other keywords (none but `model` in google-genai today) stay its own
        own = {name: kwargs.pop(name) for name in list(kwargs) if name != "model"}
        params: dict[str, Any] = {**kwargs, **(dict(config) if config else {})}
        if "candidate_count" in params or "candidateCount" in params:
            check_one_answer(params, "candidate_count", "generate_content", "candidateCount")
        if "tool_config" in params and forces_call(params["tool_config"]):
            raise TypeError(
                f"generate_content: tool_config={params['tool_config']!r} forces a function "
                "call (mode ANY), so the model cannot give the JSON answer response_model= "
                "asks for. Drop the mode (or use AUTO) to heal the answer."
            )
        given = params.pop("system_instruction", None)
        system = given if system is None else system
        if system is not None:  # kept as a rendering; the caller's own is sent (`tier_request`)
            messages = [{"role": "system", "content": system_text(system)}, *messages]
        if received is None:
            healer = self.healer(
                response_model,
                options["contracts"],
                options["policy"],
                options["fallback"],
                options["examples"],
            )
        else:  # the SDK's own structured call: no cached answers, no fallback
            healer = self.sdk_healer(
                response_model, options["contracts"], options["policy"], options["examples"]
            )
        reader = _READ_STREAM if stream else _READ_RESPONSE
        chose, state, target = chooses_format(params), self.format, healer.target

        if received is not None:  # the SDK's own structured call: its answers kept
            create = received.recorded(create, aio)

        def shape(mode: JsonMode | None, turns: Any, request: dict[str, Any]) -> Any:
            used, body = tier_request(
                mode, target, turns, request, originals, text=text, system=system
            )
            return used, {**body, **own} if own else body

        driver = stepped(
            create,
            state,
            shape,
            is_tier_rejection,
            reader,
            is_async=aio,
            own=chose,
            prime=stream,
        )
        if received is not None and first is not None:  # a streamed answer, already read
            driver = received.first(driver, first, aio)
        context = options["context"]
        checked = Enforcing(state, None, self._schema_of(target))
        if stream:
            scope = secrets_scope(self.wrapped, params)

            def json_mode() -> bool:
                return not chose and state.mode in ("json_schema", "json_object")

            run = healer.start(messages, context=context, params=params, enforcement=checked)
            chunks = healer.reader(run, json_mode)
            if aio:
                return stream_async(run.flow, driver, chunks, scope)
            return stream_sync(run.flow, driver, chunks, scope)
        run = healer.start(messages, context=context, params=params, enforcement=checked)
        if aio:
            return drive_async(run, driver, secrets_scope(self.wrapped, params))
        return drive_sync(run, driver, secrets_scope(self.wrapped, params))

    def _parsed_stream(
        self, aio: bool, args: tuple[Any, ...], schema: type[Any], kwargs: dict[str, Any]
    ) -> Any:
        """`generate_content_stream` with `response_schema=M` in its config (see `parsed`): the
        SDK's stream of the caller's request, its last chunk's `.parsed` healed (an awaitable
        of the stream through `aio`, as the SDK's)."""
        if args:
            raise TypeError("generate_content_stream takes keyword arguments only")
        options = {name: kwargs.pop(name) for name in _OPTIONS if name in kwargs}
        request = dict(kwargs)
        models = self.wrapped.aio.models if aio else self.wrapped.models

        def heal(whole: Any, last: Any) -> Any:
            received = Received()
            given = {**request, **options}
            run = self._heal(aio, False, (), schema, given, received=received, first=whole)

            def build(answer: Any, value: Any) -> Any:
                return _with_parsed(last, value)

            return afinish(run, received, build) if aio else finish(run, received, build)

        if aio:

            async def opened() -> Any:
                return aparsed_chunks(await models.generate_content_stream(**request), heal)

            return opened()
        return parsed_chunks(models.generate_content_stream(**request), heal)

    @staticmethod
    def _schema_of(
        target: Target[Any],
    ) -> Callable[[JsonMode, Mapping[str, Any]], dict[str, Any] | None]:
        def schema_of(mode: JsonMode, params: Mapping[str, Any]) -> dict[str, Any] | None:
            return enforced_schema(mode, target, params)

        return schema_of


# healjson's keywords of a healing call, and their defaults
_OPTIONS: Final = {
    "contracts": (),
    "policy": None,
    "fallback": None,
    "examples": (),
    "context": None,
}


def _response_schema(config: Any) -> Any:
    """The pydantic model a `generate_content` config names as its `response_schema` (the
    SDK's own structured call, whose `.parsed` healjson heals), else None."""
    if config is None:
        return None
    schema = config.get("response_schema") if isinstance(config, Mapping) else None
    if schema is None and not isinstance(config, Mapping):
        schema = getattr(config, "response_schema", None)
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    return None


def _with_parsed(response: Any, value: Any) -> Any:
    """The SDK's response, its `.parsed` the healed value (None: the run degraded)."""
    response.parsed = value
    return response
