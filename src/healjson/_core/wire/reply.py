"""What a model call gives back, normalised: `Reply`, `Usage`, `ToolCall`.

`call` may return a string, a `Reply`, or a provider response (object or dict), read by the
wire format that recognises its shape (`healjson._core.wire.formats`: the formats of
`healjson._providers`, tried in their registration order). Finish reasons are OpenAI's names:
`stop`, `length` for a token cut, `content_filter` for a safety stop, `tool_calls`. Nothing here
imports a provider SDK or names a provider's fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from healjson._core.frozen import builder

from .formats import WireFormat, checked, formats, load_for, pending

_FORMATS = formats()  # the registry's own list: formats registered later are in it too
_PENDING = pending()  # the providers not imported yet (the registry's own list)
_CHECKED = checked()  # classes already looked up among them

__all__ = [
    "CUSTOM",
    "FUNCTION",
    "SDK_COMPLETIONS",
    "SDK_REPLIES",
    "Reply",
    "ToolCall",
    "Usage",
    "call_usage",
    "estimate_tokens",
    "is_response",
    "new_reply",
    "new_usage",
    "read_completion",
    "remember_reader",
    "to_reply",
]


@dataclass(frozen=True, slots=True)
class Usage:
    """What calls spent: tokens by bucket, requests, and the cost in USD when it can be known.

    - `prompt_tokens`: every input token, cached ones included (a provider that counts its
      uncached input apart has its cache reads and writes added back);
      `cache_read_tokens` / `cache_write_tokens`: the parts read from / written to the
      provider's prompt cache.
    - `completion_tokens`: every output token; `reasoning_tokens` the part spent reasoning.
    (Each wire format of `healjson._providers` says which of its provider's fields fill them.)
    - `requests`: model calls counted (a call made counts, whatever became of it);
      `estimated`: True when any count was estimated as characters / 4, what the provider did
      not report as final (`call_usage`). A provider's stream reader marks a running count it
      may still revise (a stream's opening count, say) `estimated` until a final one comes.
    - `cache_hits`: answers served from healjson's response cache (`healjson.ResponseCache`)
      instead of a model call (no request, no tokens).
    - `model`: the model the tokens were spent on (None: unknown, or several: then `parts`
      holds one `Usage` per model).
    - `cost` (a property): USD through `genai-prices` (extra `prices`), computed when read;
      None when it cannot be known (the package is missing, the model is unknown to it, or
      any count was estimated).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    model: str | None = None
    parts: tuple[Usage, ...] = ()
    cache_hits: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float | None:
        """USD spent, or None when it cannot be known (see the class docstring)."""
        from .cost import cost_of

        return cost_of(self)

    def __add__(self, other: Usage) -> Usage:
        if not other.requests and not other.total_tokens and not other.cache_hits:
            return self
        if not self.requests and not self.total_tokens and not self.cache_hits:
            return other
        same = self.model == other.model and not self.parts and not other.parts
        parts = () if same else (*(self.parts or (self,)), *(other.parts or (other,)))
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.requests + other.requests,
            self.model if same else None,
            parts,
            self.cache_hits + other.cache_hits,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts (and the cost, when known)."""
        data: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "requests": self.requests,
            "cache_hits": self.cache_hits,
            "estimated": self.estimated,
            "model": self.model,
            "cost": self.cost,
        }
        if self.parts:
            data["parts"] = [part.to_dict() for part in self.parts]
        return data


FUNCTION: Final = "function"
"""A function call's kind: its arguments are a JSON object's text."""
CUSTOM: Final = "custom"
"""A custom tool's call's kind: its arguments are free text, the tool's input as the model wrote
it (never read as JSON)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call in a reply: its name, its arguments (as the model sent them), its id (the
    one the next turn answers it by, as the provider names it; a format without ids gets
    `call_<i>`, its position in the reply; None: the reply gave none) and its `kind`:
    `FUNCTION` (the arguments are JSON text) or `CUSTOM` (a custom tool's free-text input, kept
    exactly as sent). `as_object`: the provider sent the arguments as an object its own parser
    made (a tool use's `input`, a function call's `args`: no text the model wrote), here as its
    JSON text: a reply cut at the token limit may have been closed by that parser, so a
    complete object does not prove complete arguments (text the model wrote does)."""

    name: str
    arguments: str
    id: str | None = None
    kind: str = FUNCTION
    as_object: bool = False


@dataclass(frozen=True, slots=True)
class Reply:
    """One model answer, provider-neutral."""

    content: str | None
    finish_reason: str | None = None
    refusal: str | None = None
    usage: Usage | None = None
    model: str | None = None
    reasoning: str | None = None
    """The model's reasoning, when the provider returns it beside the answer (a reasoning field
    or block of its own, read by its wire format)."""
    tool_calls: tuple[ToolCall, ...] = ()


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """The tokens of a request's messages, estimated (characters / 4, and 4 per message)."""
    return sum(len(str(m.get("content") or "")) for m in messages) // 4 + 4 * len(messages)


def call_usage(
    reported: Usage | None,
    sent: Sequence[Mapping[str, Any]],
    received: int,
    model: str | None = None,
) -> Usage:
    """What one model call that was made spent, whatever became of it (whole or streamed,
    answered, aborted, cut or failed): one request; the counts its provider reported as final,
    as they are (exact); else the counts it reported kept (`reported`: none, or running ones
    marked `estimated`) and the rest estimated from the request's messages (`sent`) and the
    characters received, characters / 4 (a running output count is at least as large as it
    said), the whole marked `estimated` (its `cost` is None; budgets count the estimate)."""
    if reported is None:
        return Usage(estimate_tokens(sent), received // 4, True, requests=1, model=model)
    model = model or reported.model
    if not reported.estimated:  # the provider's final counts
        if reported.requests == 1 and reported.model == model:
            return reported
        return Usage(
            reported.prompt_tokens,
            reported.completion_tokens,
            False,
            reported.reasoning_tokens,
            reported.cache_read_tokens,
            reported.cache_write_tokens,
            1,
            model,
        )
    return Usage(
        reported.prompt_tokens or estimate_tokens(sent),
        max(reported.completion_tokens, received // 4),
        True,
        reported.reasoning_tokens,
        reported.cache_read_tokens,
        reported.cache_write_tokens,
        1,
        model,
    )


new_usage: Final = builder(Usage)
"""`Usage(...)` for the hot paths (`frozen.builder`: the same object, built cheaper)."""
new_reply: Final = builder(Reply)
"""`Reply(...)` for the providers' readers (`frozen.builder`)."""


def to_reply(obj: Any) -> Reply:
    """Read a call's return value; raises TypeError for a shape it does not know."""
    kind = type(obj)
    if kind in SDK_COMPLETIONS:
        return read_completion(obj)  # the SDK's ChatCompletion: the hot path
    fast = SDK_REPLIES.get(kind)
    if fast is not None:  # another SDK's response class, read before: its format's fast reader
        return fast(obj)
    if isinstance(obj, Reply):
        return obj
    if isinstance(obj, str):
        return Reply(obj)
    if obj is None:  # a model call that returns nothing is a bug (a missing `return`), not a reply
        raise TypeError(
            "call returned None (a missing `return`?); return a str, a ChatCompletion or a "
            "healjson.Reply"
        )
    if isinstance(obj, bytes | bytearray):
        return Reply(bytes(obj).decode("utf-8", "replace"))
    if isinstance(obj, Mapping):
        if _PENDING:
            load_for(obj)  # a pending provider's dict: its module first
        for fmt in _FORMATS:
            if fmt.reads_dict(obj):
                return fmt.read_reply(obj)
    shaped = _format_of(obj)
    if shaped is not None:
        return shaped.read_reply(obj)
    raise TypeError(
        f"call returned {type(obj).__name__}; return a str, a ChatCompletion or a healjson.Reply"
    )


# the classes the registered fast reader reads (an SDK's pydantic completion, added when first
# read: `isinstance(obj, BaseModel)` costs a Python-level ABC check per call; a set lookup by
# the exact class does not)
SDK_COMPLETIONS: set[type] = set()


def _by_shape(obj: Any) -> Reply:
    fmt = _format_of(obj)
    if fmt is None:
        raise TypeError(f"no wire format reads {type(obj).__name__}")
    return fmt.read_reply(obj)


# other SDKs' response classes and the fast reader of each, added by a format's generic reader #
# when it first reads one (`remember_reader`): `to_reply` reads them with one lookup by the exact
# class, no dispatch
SDK_REPLIES: dict[type, Callable[[Any], Reply]] = {}
_MAX_REPLY_CLASSES: Final = 64  # a program makes few response classes: bounded all the same


def remember_reader(kind: type, reader: Callable[[Any], Reply]) -> None:
    """Read objects of exactly class `kind` with `reader` from now on (a format's fast reader,
    which must agree with its generic one on every object of that class)."""
    if kind not in SDK_REPLIES and len(SDK_REPLIES) < _MAX_REPLY_CLASSES:
        SDK_REPLIES[kind] = reader


# the fast reader of `SDK_COMPLETIONS`, the one a format names (`registry.register` installs
# it); until then a stand-in that reads by shape
read_completion: Callable[[Any], Reply] = _by_shape


def _format_of(obj: Any) -> WireFormat | None:
    """The format of a provider response object, chosen by its shape (None: not one); a
    pending provider whose SDK defines its class is imported first."""
    if _PENDING and type(obj) not in _CHECKED:
        load_for(obj)
    for fmt in _FORMATS:
        if fmt.reads_reply(obj):
            return fmt
    return None


def is_response(obj: Any) -> bool:
    """True for a provider response object `to_reply` can read (an SDK's, by its shape)."""
    return not isinstance(obj, str | bytes) and _format_of(obj) is not None
