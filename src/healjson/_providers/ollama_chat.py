"""Ollama's chat API (`POST /api/chat`) and the official `ollama` SDK's clients: the provider.

- Reading: a `ChatResponse` (object or dict: `message` and `done`) as a `Reply`: the message's
  content, its `thinking` as the reasoning, its `tool_calls` (arguments an object, sent here as
  JSON text; no ids: each call gets `call_<i>`, its position), `done_reason` as the finish
  reason (`length` for a token cut), `prompt_eval_count` / `eval_count` as the usage. A
  streamed chunk is a `ChatResponse` too (`done` false until the last), read as a `Delta`.
- Requests: chat messages and parameters as `chat(...)` keywords (the engine's tool-call
  exchange as Ollama's turns; OpenAI's `max_tokens` as `options.num_predict`), in Ollama's
  tiers: `json_schema` (structured outputs: `format=<JSON Schema>`), `json_object`
  (`format="json"`, the schema in the prompt), `prompt`; an HTTP 400 naming `format` steps a
  tier down.
- Tools (`heal_tools=True`): function tools as dicts (`{"type": "function", "function":
  {...}}`), the SDK's `Tool`, a pydantic model class, or a Python function (the SDK reads its
  signature; its arguments are validated against it); a stream's chunks read call by call.
- `HealingOllama`: `wrap(ollama.Client())` / `wrap(ollama.AsyncClient())`, whose `chat(...,
  response_model=M)` returns `Outcome[M]` (a healed stream with `stream=True`).
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, create_model

from healjson._core.judge.check import caller_tools
from healjson._core.judge.contracts import Contract
from healjson._core.judge.enforcement import Enforcement
from healjson._core.redact import secrets_scope
from healjson._core.run.drive import drive_async, drive_sync, is_stream
from healjson._core.run.policy import HealPolicy
from healjson._core.wire.delta import Delta
from healjson._core.wire.formats import WireFormat
from healjson._core.wire.reply import (
    SDK_REPLIES,
    Reply,
    ToolCall,
    Usage,
    new_reply,
    new_usage,
    remember_reader,
)
from healjson.adapters._base import UNSET, Exchange, async_call, is_async_client, sync_call
from healjson.adapters._format import Enforcing
from healjson.adapters._proxy import Forwarding
from healjson.adapters._steps import SteppedAdapter, stepped
from healjson.adapters._tools import check_tool_call, heal_tool_calls, stream_tool_calls, tool_spec
from healjson.adapters._unreadable import ReadChecked

from ._fields import (
    MAX_COUNT,
    as_list,
    counts,
    get_field,
    is_record,
    json_text,
    message_text,
    opt_str,
)
from ._unreadable import (
    chunk_text,
    not_a_reply,
    unreadable_as_failure,
    unreadable_reply,
    wrong_text,
)
from .provider import Provider, ToolDialect
from .tiers import NATIVE_MODES, JsonMode, Shapeable, prompted

if TYPE_CHECKING:
    from healjson.adapters._parsed import Received

    from .provider import TypingRow

__all__ = [
    "FORMAT",
    "OLLAMA",
    "PROVIDER",
    "TYPING",
    "HealingOllama",
    "OllamaCollector",
    "ollama_request",
]

# -- replies ---------------------------------------------------------------------------------


def _usage(obj: Any, model: str | None) -> Usage | None:
    """The reply's counts; one that is no count is unreported (`_fields.counts`)."""
    found = counts(get_field(obj, "prompt_eval_count"), get_field(obj, "eval_count"))
    return None if found is None else new_usage(*found, requests=1, model=model)


def _calls(raw: Any) -> tuple[ToolCall, ...]:
    """Ollama's tool calls (arguments an object; ids only from newer servers)."""
    if not isinstance(raw, list | tuple):
        return ()
    calls = []
    for index, call in enumerate(raw):
        function = get_field(call, "function") or {}
        arguments = get_field(function, "arguments")
        whole = not isinstance(arguments, str)  # the server's object (see `ToolCall.as_object`)
        text = json_text(dict(arguments or {})) if whole else arguments
        name, call_id = str(get_field(function, "name") or ""), opt_str(get_field(call, "id"))
        calls.append(ToolCall(name, text, call_id or f"call_{index}", as_object=whole))
    return tuple(calls)


@unreadable_reply(lambda obj: _usage(obj, opt_str(get_field(obj, "model"))))
def _chat(obj: Any) -> Reply:
    """A `ChatResponse`; the SDK's own class is read by `read_chat` from now on. One with no
    `message` (an error body, `{}`), or whose content is not a string, is no chat response
    (`UnreadableReply`)."""
    if type(obj).__module__.startswith("ollama.") and isinstance(obj, BaseModel):
        remember_reader(type(obj), read_chat)
    message = get_field(obj, "message")
    if not is_record(message):
        raise not_a_reply("an Ollama chat response", "no `message`", obj)
    model = opt_str(get_field(obj, "model"))
    calls = _calls(get_field(message, "tool_calls"))
    content = get_field(message, "content")
    if content is not None and not isinstance(content, str):
        raise wrong_text(content)
    text = None if content is None or (content == "" and calls) else content
    return new_reply(
        text,
        opt_str(get_field(obj, "done_reason")),
        None,
        _usage(obj, model),
        model,
        get_field(message, "thinking") or None,
        calls,
    )


def read_chat(obj: Any) -> Reply:
    """The SDK's `ChatResponse` with a text answer, by plain attribute access; anything else goes
    to the generic reader (`_chat`), with which it agrees on every response."""
    try:
        message, finish, model = obj.message, obj.done_reason, obj.model
        content, calls, thinking = message.content, message.tool_calls, message.thinking
        prompt, completion = obj.prompt_eval_count, obj.eval_count
    except AttributeError:
        return _chat(obj)
    if (
        type(content) is not str
        or not content
        or calls
        or thinking
        or type(model) is not str
        or type(prompt) is not int
        or type(completion) is not int
        or not (0 <= prompt <= MAX_COUNT and 0 <= completion <= MAX_COUNT)
    ):
        return _chat(obj)
    usage = new_usage(prompt, completion, False, 0, 0, 0, 1, model)
    return new_reply(content, None if finish is None else str(finish), None, usage, model)


def _read_chunk(chunk: Any) -> Delta:
    message = get_field(chunk, "message") or {}
    model = opt_str(get_field(chunk, "model"))
    calls = _calls(get_field(message, "tool_calls"))
    done = get_field(chunk, "done") is True
    return Delta(
        text=chunk_text(get_field(message, "content"), "message.content"),
        reasoning=str(get_field(message, "thinking") or ""),
        tool_calls=calls,  # each call comes whole
        finish_reason=opt_str(get_field(chunk, "done_reason")) if done else None,
        usage=_usage(chunk, model) if done else None,
        model=model,
    )


def _token_limit(params: Mapping[str, Any]) -> tuple[str, Any] | None:
    options = params.get("options")
    if isinstance(options, Mapping) and "num_predict" in options:
        return "num_predict", options["num_predict"]
    return None


def _with_token_limit(params: Mapping[str, Any], n: int) -> dict[str, Any]:
    return {**params, "options": {**dict(params.get("options") or {}), "num_predict": n}}


FORMAT: Final = WireFormat(
    "ollama_chat",
    lambda obj: hasattr(obj, "message") and hasattr(obj, "done_reason"),
    _chat,
    reads_dict=lambda obj: "message" in obj and "done" in obj,
    reads_chunk=lambda chunk: (
        get_field(chunk, "message") is not None and get_field(chunk, "done") is not None
    ),
    read_chunk=_read_chunk,
    fast_reply=read_chat,
    token_limit=_token_limit,
    with_token_limit=_with_token_limit,
)
"""(Its client's credentials and error package: its line in the registry.)"""

# -- requests ----------------------------------------------------------------------------------

_LIMITS: Final = ("max_completion_tokens", "max_tokens")  # OpenAI's names, as the engine sets


def ollama_request(
    messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Chat messages and parameters as `chat(...)` keywords: the engine's tool-call exchange as
    Ollama's turns (an assistant turn's calls with object arguments, each answer a `tool` turn
    naming its tool), a content-parts message as its text, OpenAI's token limit as
    `options.num_predict`."""
    body = dict(params)
    limit = None
    for key in _LIMITS:
        if key in body:
            limit = body.pop(key)
    if limit is not None:
        body["options"] = {**dict(body.get("options") or {}), "num_predict": limit}
    for message in messages:
        if type(message.get("content")) is not str or "tool_calls" in message:
            break
    else:  # the common request: text turns, sent as they are
        body["messages"] = list(messages)
        return body
    names: dict[str, str] = {}
    turns: list[dict[str, Any]] = []
    for message in messages:
        turn = {**message, "content": message_text(message.get("content"))}
        calls = turn.pop("tool_calls", None)
        if turn.get("role") == "assistant" and calls:
            turn["tool_calls"] = [_ollama_call(call, names) for call in calls]
        answered = turn.pop("tool_call_id", None)
        if turn.get("role") == "tool" and answered is not None:
            turn.setdefault("tool_name", names.get(str(answered), ""))
        turns.append(turn)
    body["messages"] = turns
    return body


def _ollama_call(call: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    function = get_field(call, "function") or {}
    name = str(get_field(function, "name") or "")
    names[str(get_field(call, "id") or "")] = name
    arguments = get_field(function, "arguments")
    try:
        found = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        found = None
    return {"function": {"name": name, "arguments": found if isinstance(found, dict) else {}}}


def chooses_format(params: Mapping[str, Any]) -> bool:
    """True when the caller's parameters choose the output themselves (`format`, or tools)."""
    return bool(params.get("format")) or caller_tools(params)


def tier_request(
    mode: JsonMode | None,
    target: Shapeable,
    messages: Sequence[dict[str, Any]],
    params: Mapping[str, Any],
) -> tuple[JsonMode | None, dict[str, Any]]:
    """`chat(...)` keywords asking for `target` in tier `mode`, and the tier used (`mode` None:
    the caller's own format, sent as given; the schema stated as in the `json_object` tier
    unless that format names one: `format="json"`, or the caller's tools, which a `format`
    would keep the model from calling)."""
    if mode is None:
        named = isinstance(params.get("format"), Mapping)
        return None, ollama_request(messages if named else prompted(target, messages), params)
    if mode == "json_schema":
        body = ollama_request(messages, params)  # a fresh dict: the format set in it
        body["format"] = target.json_schema
        return mode, body
    body = ollama_request(prompted(target, messages), params)
    if mode == "json_object":
        body["format"] = "json"
        return mode, body
    return "prompt", body


def enforced_schema(
    mode: JsonMode, target: Shapeable, params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The schema a request in tier `mode` asks Ollama to enforce (structured outputs'), None
    for the weaker tiers and the caller's own format."""
    if mode != "json_schema" or chooses_format(params):
        return None
    return dict(target.json_schema)


def is_tier_rejection(exc: BaseException, mode: JsonMode | None) -> bool:
    """True for an HTTP 400 whose message names the `format` a tier asked for."""
    if mode not in ("json_schema", "json_object") or getattr(exc, "status_code", None) != 400:
        return False
    text = str(getattr(exc, "error", "") or exc).lower()
    return any(word in text for word in ("format", "schema", "grammar"))


# -- tools -------------------------------------------------------------------------------------


def _read_tool(tool: Any) -> tuple[str, Any, Any] | None:
    """A function tool's name, its arguments' model or schema, and the tool as sent."""
    if callable(tool) and not isinstance(tool, type | Mapping | BaseModel):
        return tool.__name__, _signature_model(tool), tool  # the SDK writes its tool itself
    if isinstance(tool, BaseModel):  # the SDK's `Tool`
        tool = tool.model_dump(exclude_none=True, by_alias=True)
    if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
        return None
    function = tool.get("function")
    if not isinstance(function, Mapping) or not function.get("name"):
        raise ValueError(f"tools: a function tool needs a function with a name, got {tool!r}")
    return str(function["name"]), function.get("parameters"), tool


def _signature_model(func: Callable[..., Any]) -> type[BaseModel]:
    """A Python function's parameters as a model its calls' arguments are validated as."""
    hints = typing.get_type_hints(func)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(func).parameters.items():
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[name] = (hints.get(name, Any), default)
    return create_model(func.__name__, **fields)


def _wire_tool(model: type[BaseModel]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": model.__name__, "parameters": model.model_json_schema()}
    doc = (model.__doc__ or "").strip()
    if doc:
        function["description"] = doc
    return {"type": "function", "function": function}


class OllamaCollector:
    """Streamed chunks read whole: the text pieces joined, each call as sent (Ollama streams a
    call whole, in one chunk), the finish and usage from the last chunk, `thinking` joined."""

    __slots__ = ("_calls", "_last", "_text", "_thinking")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._thinking: list[str] = []
        self._calls: list[Any] = []
        self._last: Any = None

    @unreadable_as_failure
    def feed(self, chunk: Any) -> str:
        """Take one chunk; the answer text it carries ("" for none)."""
        message = get_field(chunk, "message") or {}
        self._calls.extend(as_list(get_field(message, "tool_calls")))
        if get_field(chunk, "done") is True:
            self._last = chunk
        if isinstance(thinking := get_field(message, "thinking"), str) and thinking:
            self._thinking.append(thinking)  # the reasoning, as the whole reply's reader keeps it
        text = chunk_text(get_field(message, "content"), "message.content")
        if text:
            self._text.append(text)
            return text
        return ""

    def reply(self) -> Reply:
        """The whole answer read so far."""
        last, calls = self._last or {}, _calls(self._calls)
        model, finish = opt_str(get_field(last, "model")), opt_str(get_field(last, "done_reason"))
        text, thinking = "".join(self._text) or None, "".join(self._thinking) or None
        return new_reply(text, finish, None, _usage(last, model), model, thinking, calls)


OLLAMA: Final = ToolDialect("ollama", _read_tool, _wire_tool, lambda choice: False, OllamaCollector)
"""Ollama's function tools (it has no `tool_choice`: nothing is forced)."""

# -- the client adapter --------------------------------------------------------------------


_READ_CHUNKS = ReadChecked(lambda value: is_stream(value) or hasattr(value, "message"), "chunks")
# the SDK's `ChatResponse` class, once read, needs no check (its fast reader is remembered)
_READ_REPLY = ReadChecked(lambda v: hasattr(v, "message"), "an Ollama chat response", SDK_REPLIES)
_DEFAULT_POLICY = HealPolicy()
_NO_TARGET: Any = None  # a driver without a JSON tier never shapes a request for a target


class Chat(Forwarding):
    """`wrap(ollama.Client()).chat`: healjson's when given a `response_model` (or
    `heal_tools=True`); the client's own `chat` otherwise."""

    def __init__(self, owner: HealingOllama) -> None:
        self._owner = owner

    def forwarded(self) -> Any:
        return self._owner.wrapped.chat

    def __call__(
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
        """`chat`; with `response_model=M` it returns `Outcome[M]` (an awaitable of it for an
        async client; with `stream=True` a `HealStream[M]` / `AsyncHealStream[M]`); with
        `heal_tools=True` (and the caller's `tools=`) `Outcome[ToolCalls]`."""
        owner = self._owner
        tools = heal_tools or tool_contracts is not None
        if response_model is UNSET and not tools:
            return owner.wrapped.chat(*args, **kwargs)
        if args:
            raise TypeError("chat takes keyword arguments only when it heals")
        messages = kwargs.pop("messages", UNSET)
        if messages is UNSET:
            raise TypeError("chat needs messages=[...]")
        core = owner._core  # a plain object: its attributes read fast (the adapter proxies)
        chosen = policy or core.policy or _DEFAULT_POLICY
        if tools:
            check_tool_call(kwargs, response_model, UNSET, "chat")
            if not heal_tools:
                raise TypeError("tool_contracts= needs heal_tools=True")
            return owner._tools(chosen, tool_contracts, messages, context, kwargs)
        healer = core.healers.get(response_model, contracts, chosen, fallback, examples)
        if kwargs.get("stream"):
            return owner._stream(healer, None, messages, context, kwargs)
        call, checked = owner._route(healer.target, response_model, kwargs)
        run = healer.start(messages, context=context, params=kwargs, enforcement=checked)
        scope = secrets_scope(core.wrapped, kwargs)
        if core.is_async:
            return drive_async(run, call, scope)
        return drive_sync(run, call, scope)


class HealingOllama(SteppedAdapter):
    """Wraps `ollama.Client` or `ollama.AsyncClient`; see `healjson.wrap`. Tiers, in the chat
    tiers' names: `json_schema` (`format=<schema>`), `json_object` (`format="json"`, the schema
    in the prompt), `prompt`."""

    _chooses_format = staticmethod(chooses_format)

    def __init__(
        self, client: Any, *, json_mode: str = "json_schema", policy: HealPolicy | None = None
    ) -> None:
        super().__init__(client, json_mode=json_mode, policy=policy)
        self.chat = Chat(self)  # type: ignore[assignment]  # a method here, not a namespace

    def __repr__(self) -> str:
        return f"healjson.wrap({self.wrapped!r}, json_mode={self.format.mode!r})"

    def _accept(self, client: Any) -> bool:
        chat = getattr(client, "chat", None)
        if not callable(chat):
            raise TypeError(f"an Ollama client with chat is needed; got {type(client).__name__}")
        return is_async_client(client, chat)

    def _one_value(
        self, target: Shapeable, forced: JsonMode | None, params: Mapping[str, Any]
    ) -> Callable[[], bool]:
        state = self.format

        def json_mode() -> bool:  # the tier in use (a refused one was stepped down)
            return not chooses_format(params) and state.mode in ("json_schema", "json_object")

        return json_mode

    def _enforcement(self, target: Shapeable, forced: JsonMode | None) -> Enforcement | None:
        return Enforcing(
            self.format, None, lambda mode, params: enforced_schema(mode, target, params)
        )

    def _whole_call(self, target: Shapeable, params: dict[str, Any]) -> Callable[..., Any]:
        return self._stepped(self.wrapped.chat, target, params, _READ_REPLY, stream=False)

    def _run_call(
        self,
        target: Shapeable,
        forced: JsonMode | None,
        params: dict[str, Any],
        received: Received | None = None,
    ) -> Callable[..., Any]:
        """A stream's call (`chat(stream=True)`, its chunks read: its request is sent when the
        stream is first read, inside the call)."""
        chat, stream = self.wrapped.chat, bool(params.get("stream"))
        if received is not None:  # a structured call's answers, noted
            chat = received.recorded(chat, self.is_async)
        exchange = _READ_CHUNKS if stream else _READ_REPLY
        return self._stepped(chat, target, params, exchange, stream=stream)

    def _stepped(
        self,
        chat: Callable[..., Any],
        target: Shapeable,
        params: dict[str, Any],
        exchange: Exchange,
        *,
        stream: bool,
    ) -> Callable[..., Any]:
        """`chat` in the client's tier, stepped down and remembered when the server refuses it,
        or the caller's own format as given; its answer taken through `exchange`."""

        def shape(mode: JsonMode | None, messages: Any, request: dict[str, Any]) -> Any:
            return tier_request(mode, target, messages, request)

        return stepped(
            chat,
            self.format,
            shape,
            is_tier_rejection,
            exchange,
            is_async=self.is_async,
            own=chooses_format(params),
            prime=stream,
        )

    def _tools(
        self,
        policy: HealPolicy,
        tool_contracts: Mapping[str, Iterable[Any]] | None,
        messages: Any,
        context: Mapping[str, Any] | None,
        params: dict[str, Any],
    ) -> Any:
        """`chat(..., heal_tools=True)`: the caller's own tool calls healed (each request the
        caller's, its messages as Ollama's turns)."""
        spec = tool_spec(params, tool_contracts, policy, style=OLLAMA)
        chat = self.wrapped.chat
        if params.get("stream"):

            def start(effect: Any) -> Any:
                return chat(**ollama_request(effect.messages, dict(effect.params)))

            return stream_tool_calls(
                self.wrapped,
                start,
                spec,
                messages,
                params,
                collector=OLLAMA.collector,
                is_async=self.is_async,
                context=context,
            )

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            sent = request.pop("messages")
            return chat, ollama_request(sent, request), _READ_REPLY

        call = (async_call if self.is_async else sync_call)(None, None, _NO_TARGET, send)
        return heal_tool_calls(
            self.wrapped, call, spec, messages, params, is_async=self.is_async, context=context
        )


_RESPONSE: Final = "ollama.ChatResponse"
TYPING: Final[TypingRow] = {
    "name": "Ollama",
    "sync": "ollama.Client",
    "async_": "ollama.AsyncClient",
    "contexts": {"sync": ("with", "async with"), "async_": ("with", "async with")},
    "imports": ("ollama",),
    "completion": _RESPONSE,
    "summary": (
        "`ollama.Client` / `ollama.AsyncClient`: `chat(response_model=M)` heals the same way, "
        "in Ollama's tiers: `json_schema` (structured outputs, `format=<JSON Schema>`), "
        '`json_object` (`format="json"`), `prompt`.'
    ),
    "methods": (
        {
            "path": "chat",
            "needs": (("messages", "Iterable[Any]"),),
            "tools": True,
            "returns": (_RESPONSE, _RESPONSE),
            "stream_returns": (f"Iterator[{_RESPONSE}]", f"AsyncIterator[{_RESPONSE}]"),
        },
    ),
}
"""`chat` of an Ollama client, in the typed face of `wrap`."""

PROVIDER: Final = Provider(
    "ollama",
    formats=(FORMAT,),
    adapter=f"{__name__}:HealingOllama",
    tools=f"{__name__}:OLLAMA",
    tiers=NATIVE_MODES,
    typing=f"{__name__}:TYPING",
    reads=("ollama._client:*._request*", "ollama._types:ResponseError.*"),  # an answer, an error
)
"""Ollama (the official `ollama` client)."""
