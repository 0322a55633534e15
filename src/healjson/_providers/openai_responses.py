"""OpenAI's Responses API: what its replies, its stream events and its requests mean.

A reply (`Response`, the SDK's object or its JSON) is read from its `output` items: `message`
items' `output_text` parts are the answer (when the items carry a `phase`, only the
`final_answer` ones: `commentary` is set aside with the reasoning), `refusal` parts the refusal,
`reasoning` items (their summary or text) the reasoning, `function_call` items the tool calls,
and `custom_tool_call` items a custom tool's calls (`ToolCall.kind` `CUSTOM`: their `input` is
free text, kept exactly as sent; `openai_calls.responses_call`).
`status: incomplete` is a token cut (`length`, reason `max_output_tokens`) or a `content_filter`;
`status: failed` (and a stream's `response.failed` or `error` event) is the provider's failure,
raised as `ResponseFailed` (the run degrades with `api_error`, the API's message kept). Usage:
`input_tokens` (cached ones included: `input_tokens_details.cached_tokens`, cache writes
`cache_write_tokens`), `output_tokens` (reasoning included:
`output_tokens_details.reasoning_tokens`).

The healer works on chat-style messages: `Conversation` (its requests, in `openai_conversation`)
turns a call's `instructions` and `input` into them and each request back into a Responses one.
Its tool dialect (`heal_tools=True`) and tool-call streams: `openai_responses_tools`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel

from healjson._core.wire.delta import Delta
from healjson._core.wire.effects import ProviderError
from healjson._core.wire.formats import WireFormat
from healjson._core.wire.reply import Reply, ToolCall, Usage, new_reply, new_usage

from ._fields import (
    MAX_COUNT,
    as_int,
    as_list,
    counts,
    opt_str,
    output_token_limit,
    with_output_token_limit,
)
from ._unreadable import (
    chunk_text,
    not_a_reply,
    unreadable_as_failure,
    unreadable_reply,
    wrong_text,
)
from .openai_calls import CUSTOM_CALL, FUNCTION_CALL, responses_call
from .openai_chat import batch_body as chat_batch_body
from .openai_chat import batch_result
from .openai_conversation import Conversation, text_format
from .provider import BatchLines, Provider

__all__ = [
    "PROVIDER",
    "SDK_RESPONSES",
    "Conversation",
    "ResponseFailed",
    "error_text",
    "is_response",
    "read_event",
    "read_response",
    "read_sdk_response",
    "set_commentary_aside",
    "text_format",
]

_INCOMPLETE: Final = {"max_output_tokens": "length", "content_filter": "content_filter"}
_EMPTY: Final = Delta()


class ResponseFailed(ProviderError, TypeError):
    """A response whose `status` is `failed` (or a stream's `error` event): the provider's
    failure, with the API's message. A `TypeError` too: what the readers' callers already
    treat as a call that gave no reply."""


# pydantic classes seen (the SDK's): read by attribute without the slow `isinstance` check
_MODELS: set[type] = set()


def _field(obj: Any, name: str) -> Any:
    kind = type(obj)
    if kind is dict:
        return obj.get(name)
    if kind in _MODELS:
        return getattr(obj, name, None)
    if isinstance(obj, BaseModel):
        if len(_MODELS) < 256:
            _MODELS.add(kind)
        return getattr(obj, name, None)
    if not isinstance(obj, Mapping):
        return getattr(obj, name, None)
    return obj.get(name)


def is_response(obj: Any) -> bool:
    """True for a Responses API `response` (object or mapping)."""
    if _field(obj, "object") == "response":
        return True
    return isinstance(_field(obj, "output"), list | tuple) and _field(obj, "status") is not None


# -- the reply -------------------------------------------------------------------------------


# the SDK's `Response` classes seen: read by `read_sdk_response` (plain attribute access)
SDK_RESPONSES: set[type] = set()


def read_sdk_response(obj: Any) -> Reply:
    """The openai SDK's `Response`, read by plain attribute access when it is the common one (a
    completed response whose output is one message with one `output_text` part, no phases);
    anything else goes to `read_response`, which reads every case."""
    try:
        if obj.status != "completed":
            return read_response(obj)
        output = obj.output
        if type(output) is not list or len(output) != 1:
            return read_response(obj)
        item = output[0]
        content = item.content if item.type == "message" else None
        if type(content) is not list or len(content) != 1 or getattr(item, "phase", None):
            return read_response(obj)
        part = content[0]
        text = part.text if part.type == "output_text" else None
        model, raw = obj.model, obj.usage
        if type(text) is not str or raw is None:
            return read_response(obj)
        prompt, completion = raw.input_tokens, raw.output_tokens
        inputs, outputs = raw.input_tokens_details, raw.output_tokens_details
    except AttributeError:
        return read_response(obj)
    if (
        type(prompt) is not int
        or type(completion) is not int
        or not 0 <= prompt <= MAX_COUNT
        or not 0 <= completion <= MAX_COUNT
    ):
        return read_response(obj)  # a count that is no count: read (and estimated) there
    reasoning = getattr(outputs, "reasoning_tokens", None)
    cached = getattr(inputs, "cached_tokens", None)
    written = getattr(inputs, "cache_write_tokens", None)
    name = None if model is None else str(model)
    return new_reply(
        text,
        "stop",
        None,
        new_usage(
            prompt,
            completion,
            False,
            reasoning if type(reasoning) is int and 0 <= reasoning <= MAX_COUNT else 0,
            cached if type(cached) is int and 0 <= cached <= MAX_COUNT else 0,
            written if type(written) is int and 0 <= written <= MAX_COUNT else 0,
            1,
            name,
        ),
        name,
    )


@unreadable_reply(lambda obj: usage(_field(obj, "usage"), opt_str(_field(obj, "model"))))
def read_response(obj: Any) -> Reply:
    """A whole `Response` as a `Reply` (see the module's docstring); raises `ResponseFailed`
    for a failed one, `UnreadableReply` for one it cannot read or that is no response: no
    `output` list (an error body, `{}`), a message's text that is not a string."""
    return _response(obj, True)


def _response(obj: Any, whole: bool) -> Reply:
    """`read_response`; not `whole` (the response a stream's last event repeats, its text
    already streamed): a field of the wrong type is read as absent (a list that is not one
    holds no items, a text that is not one is no text)."""
    status = opt_str(_field(obj, "status"))
    model = opt_str(_field(obj, "model"))
    if status == "failed":
        raise ResponseFailed(error_text(_field(obj, "error"), "the response failed"))
    output = _field(obj, "output")
    if whole and not isinstance(output, list | tuple):
        raise not_a_reply("a Responses API response", "no `output` list", obj)
    items = as_list(output)
    phased = any(_field(item, "phase") is not None for item in items)
    texts: list[str] = []
    refusals: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for item in items:
        kind = _field(item, "type")
        if kind == "message":
            aside = phased and _field(item, "phase") != "final_answer"
            for part in as_list(_field(item, "content")):
                if _field(part, "type") == "refusal":
                    refusal = _field(part, "refusal")
                    refusals.append(refusal if isinstance(refusal, str) else "")
                elif isinstance(text := _field(part, "text"), str):
                    (thoughts if aside else texts).append(text)
                elif whole and (text is not None or _field(part, "type") == "output_text"):
                    raise wrong_text(text)
        elif kind == "reasoning":
            thoughts += _reasoning_texts(item)
        elif (call := responses_call(item, kind)) is not None:
            calls.append(call)
    refusal = "".join(refusals) if refusals else None
    return new_reply(
        "".join(texts) if texts else None,
        _finish(status, _field(obj, "incomplete_details"), bool(calls) and not texts),
        refusal,
        usage(_field(obj, "usage"), model),
        model,
        "\n\n".join(t for t in thoughts if t) or None,
        tuple(calls),
    )


def _reasoning_texts(item: Any) -> list[str]:
    parts = [*as_list(_field(item, "summary")), *as_list(_field(item, "content"))]
    return [text for part in parts if isinstance(text := _field(part, "text"), str) and text]


def _finish(status: str | None, details: Any, tool_calls: bool) -> str | None:
    if status == "completed":
        return "tool_calls" if tool_calls else "stop"
    if status == "incomplete":
        reason = opt_str(_field(details, "reason")) if details is not None else None
        return _INCOMPLETE.get(reason or "", reason or "length")
    return status


def error_text(error: Any, default: str) -> str:
    """A failure's words: an `error` object's message (`default` without one), its code first."""
    message = opt_str(_field(error, "message")) if error is not None else None
    code = opt_str(_field(error, "code")) if error is not None else None
    text = message or default
    return f"{code}: {text}" if code else text


def usage(raw: Any, model: str | None = None, *, requests: int = 1) -> Usage | None:
    """The Responses API's usage (input and output tokens, with their details); a count that is
    no count is unreported (`_fields.counts`)."""
    if raw is None:
        return None
    prompt, completion = _field(raw, "input_tokens"), _field(raw, "output_tokens")
    found = counts(prompt, completion)
    if found is None:
        return None
    prompt, completion, estimated = found
    inputs = _field(raw, "input_tokens_details")
    outputs = _field(raw, "output_tokens_details")
    return new_usage(
        prompt,
        completion,
        estimated,
        reasoning_tokens=as_int(_field(outputs, "reasoning_tokens")) if outputs is not None else 0,
        cache_read_tokens=as_int(_field(inputs, "cached_tokens")) if inputs is not None else 0,
        cache_write_tokens=as_int(_field(inputs, "cache_write_tokens"))
        if inputs is not None
        else 0,
        requests=requests,
        model=model,
    )


# -- the stream ------------------------------------------------------------------------------


def _arguments_piece(piece: str, event: Any) -> Delta:
    """A function call's arguments piece, with the identity of its call (`Delta.tool_index`):
    the event's `output_index`, the index its item's `response.output_item.added` gave (an
    event without one: no identity, the piece joins the call before it)."""
    index = _field(event, "output_index")
    return Delta(tool_arguments=piece, tool_index=index if type(index) is int else None)


def _call_start(event: Any, item: Any) -> Delta:
    """A function call's start (`response.output_item.added`): its name, and its identity
    (`Delta.tool_index`, `Delta.tool_id`): the event's `output_index`, the item's `call_id`
    (the call's id, as `read_response` reads it), else its item `id`."""
    index = _field(event, "output_index")
    return Delta(
        tool_name=opt_str(_field(item, "name")),
        tool_index=index if type(index) is int else None,
        tool_id=opt_str(_field(item, "call_id")) or opt_str(_field(item, "id")),
    )


# each text piece's `Delta`, from the piece and its event
_TEXT_DELTAS: Final[dict[str, Callable[[str, Any], Delta]]] = {
    "response.output_text.delta": lambda piece, _: Delta(text=piece),
    "response.refusal.delta": lambda piece, _: Delta(refusal=piece),
    "response.function_call_arguments.delta": _arguments_piece,
    "response.reasoning_summary_text.delta": lambda piece, _: Delta(reasoning=piece),
    "response.reasoning_text.delta": lambda piece, _: Delta(reasoning=piece),
}
_ENDS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})


def read_event(event: Any, kind: str) -> Delta | None:
    """The `Delta` of a Responses stream event of type `kind`; None when `kind` is not one
    (the text of commentary items is read as answer text here: `set_commentary_aside` tells
    them apart, keeping the items' phases). A custom tool's call is handed over whole, at its
    item's `response.output_item.done` (its input's deltas add nothing: they are no function
    call's arguments)."""
    make = _TEXT_DELTAS.get(kind)
    if make is not None:  # a `delta` of another type: no event of a reply (`chunk_text`)
        piece = _field(event, "delta")
        return _EMPTY if piece is None else make(chunk_text(piece, f"delta (of {kind})"), event)
    if not kind.startswith("response."):
        if kind == "error" and (
            _field(event, "sequence_number") is not None
            or isinstance(_field(event, "message"), str)
        ):
            raise ResponseFailed(error_text(_field(event, "error") or event, "the stream failed"))
        return None
    if kind == "response.output_item.added":
        item = _field(event, "item")
        return _call_start(event, item) if _field(item, "type") == FUNCTION_CALL else _EMPTY
    if kind == "response.output_item.done":  # a custom call whole (its input deltas: nothing)
        item = _field(event, "item")
        call = responses_call(item, CUSTOM_CALL) if _field(item, "type") == CUSTOM_CALL else None
        return _EMPTY if call is None else Delta(tool_calls=(call,))
    if kind in _ENDS:  # its text came in deltas: read for its status and usage
        reply = _response(_field(event, "response") or {}, False)
        return Delta(finish_reason=reply.finish_reason, usage=reply.usage, model=reply.model)
    if kind == "response.created":
        return Delta(model=opt_str(_field(_field(event, "response"), "model")))
    return _EMPTY


def set_commentary_aside(
    events: Iterator[Any], seen: Callable[[str], None] | None = None
) -> Iterator[Any]:
    """A stream's events with the text of `commentary` message items as reasoning; `seen`
    gets the response's id when the stream names it. Closing it closes `events`."""
    aside: set[Any] = set()
    try:
        for event in events:
            yield _phased(event, aside, seen)
    finally:
        _close(events)


async def aset_commentary_aside(
    events: Any, seen: Callable[[str], None] | None = None
) -> AsyncIterator[Any]:
    """`set_commentary_aside` for an async stream."""
    aside: set[Any] = set()
    try:
        async for event in events:
            yield _phased(event, aside, seen)
    finally:
        close = getattr(events, "close", None) or getattr(events, "aclose", None)
        if callable(close):
            result = close()
            if hasattr(result, "__await__"):
                await result


def _phased(event: Any, aside: set[Any], seen: Callable[[str], None] | None) -> Any:
    """The event, or its `Delta` when it is a text piece (most of a stream's events: read here
    as `read_event` reads them, the core's lookup by shape skipped)."""
    kind = _field(event, "type")
    make = _TEXT_DELTAS.get(kind) if type(kind) is str else None
    if make is not None:
        piece = _field(event, "delta")
        if type(piece) is not str:  # none: nothing; another type: `read_event` refuses it
            return _EMPTY if piece is None else event
        if aside and kind == "response.output_text.delta" and _text_id(event, "item_id") in aside:
            return Delta(reasoning=piece)
        return make(piece, event)
    if kind == "response.output_item.added":
        item = _field(event, "item")
        if _field(item, "phase") == "commentary":
            aside.add(_text_id(item, "id"))
    elif kind == "response.created" and seen is not None:
        identity = _field(_field(event, "response"), "id")
        if isinstance(identity, str):
            seen(identity)
    return event


def _text_id(obj: Any, name: str) -> str | None:
    """An item id (a string; any other type is no id: ids are compared in a set)."""
    identity = _field(obj, name)
    return identity if isinstance(identity, str) else None


def _close(events: Any) -> None:
    close = getattr(events, "close", None)
    if callable(close):
        close()


def _reads_dict(obj: Mapping[str, Any]) -> bool:
    return is_response(obj)


def _reads_chunk(chunk: Any) -> bool:
    kind = _field(chunk, "type")
    if not isinstance(kind, str):
        return False
    if kind.startswith("response."):
        return True
    return kind == "error" and (
        _field(chunk, "sequence_number") is not None or isinstance(_field(chunk, "message"), str)
    )


@unreadable_as_failure
def _read_chunk(chunk: Any) -> Delta:
    return read_event(chunk, str(_field(chunk, "type"))) or _EMPTY


FORMAT = WireFormat(
    "openai_responses",
    is_response,
    read_response,
    reads_dict=_reads_dict,
    reads_chunk=_reads_chunk,
    read_chunk=_read_chunk,
    token_limit=output_token_limit,
    with_token_limit=with_output_token_limit,
)
"""(Its SDK methods: its line in the registry.)"""


# -- the Batch API's lines ----------------------------------------------------------------------

BATCH_ENDPOINT: Final = "/v1/responses"


def batch_body(
    mode: Any, target: Any, messages: Sequence[dict[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """A request as a `/v1/responses` batch line's body: the chat body's messages as `input`,
    its JSON tier as `text.format`."""
    return Conversation(None, None).request(chat_batch_body(mode, target, messages, params))


def batch_line(custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One line of a Batch API input file for `/v1/responses`."""
    return {"custom_id": custom_id, "method": "POST", "url": BATCH_ENDPOINT, "body": body}


PROVIDER = Provider(
    "openai_responses",
    formats=(FORMAT,),
    tools="healjson._providers.openai_responses_tools:RESPONSES",
    # the same output and error file lines as chat's: a `response` (a Response as its body)
    batch=BatchLines(batch_body, batch_line, batch_result),
)
"""OpenAI's Responses API (reached through an OpenAI client's `responses`)."""
