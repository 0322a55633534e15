"""A provider's answer that cannot be read: the provider's failure, never the caller's crash.

Two places read what a provider sent: healjson's own readers (the formats' reply and chunk
readers, `unreadable_as_failure`) and the provider SDK, which decodes the body before healjson
sees it (`sdk_reading_failure`). Hostile bodies make both fail in ways of their own: a body
nested past the decoder's recursion limit (`RecursionError`), a field of a type the reader does
not expect (`TypeError`, `AttributeError`, ...), a body the SDK's models refuse (pydantic's
`ValidationError`, raised by google-genai and ollama while they read a response). Each becomes
`UnreadableReply`: a `ProviderError` (the run degrades with `api_error`, the reader's words
kept) and a `TypeError` (what the readers' callers already treat as a call without a reply).

A body the SDK reads without complaint may still be no reply of its format (an HTTP 200 whose
JSON is `{"error": ...}`, `{}`, a list): each format's whole-reply reader asks for its format's
defining part (chat: a `choices` list, its first choice if any holding a `message`;
Responses: an `output` list; Anthropic: a `content` list; Gemini: a `candidates` list, or a
blocked prompt's feedback; Ollama: a `message`) and for its text as a string, and raises
`not_a_reply` / `wrong_text` (an `UnreadableReply`) when either is not there: the provider's
failure, never an empty answer of the model's (an empty list is one: a reply with no answer).
A stream chunk is held to the same rule: one whose text member (chat `delta.content`,
Anthropic `text_delta.text`, Gemini `parts[i].text`, Ollama `message.content`, a Responses
text event's `delta`, ...) is present and not a string raises `wrong_chunk_text`, naming the
member and its type, so the streamed call fails as the provider's (`api_error`) instead of
losing that piece of the answer.
A body that is no reply may still say what the call cost, in its format's usage member (chat
and Responses: `usage`, Anthropic: `usage`, Gemini: `usageMetadata`, Ollama:
`prompt_eval_count` / `eval_count`): each format's whole-reply reader is wrapped by
`unreadable_reply`, which reads that member with the format's own usage reader, on the failure
path only, into the `UnreadableReply`'s `reported_usage` (`wire.effects.reported_usage`), so
the failed call counts what the provider reported, not an estimate.
The formats' fast readers hand anything unusual to their generic reader, so the rule holds
whether or not a response class was read before.

Which SDK failures are the provider's is one rule for every provider: each declares the
functions of its SDK that read an answer (`Provider.reads`) and those its readers call to build
their own request (`Provider.builds`); an exception raised beneath a reader, and neither beneath
one of those builders nor beneath the HTTP client sending a request, was raised reading the
answer. Anything else the SDK raises (the caller's arguments refused before a request is sent,
a request that cannot be encoded) and anything the caller's own code raises (a transport, a
hook) is not, and propagates as it is.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, ParamSpec, TypeVar

from pydantic import BaseModel

from healjson._core.wire.effects import ProviderError
from healjson._core.wire.reply import Reply, Usage

__all__ = [
    "UnreadableReply",
    "chunk_text",
    "not_a_reply",
    "sdk_reading_failure",
    "unreadable_as_failure",
    "unreadable_reply",
    "wrong_chunk_text",
    "wrong_text",
]

_R = TypeVar("_R")
_P = ParamSpec("_P")

# what a reader raises on a field of the wrong type or shape, or on a body nested too deep
_READING_ERRORS: Final = (
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    RecursionError,
    OverflowError,
)

# the modules of the HTTP clients the SDKs use that build and send a request (the caller's
# arguments encoded, the caller's transport and hooks run): what fails beneath them, even inside
# a reader that sends its own request (ollama's streams, google-genai's), read no answer
_SENDING: Final = frozenset({"httpx._client", "aiohttp.client"})
_MAX_WORDS: Final = 200


class UnreadableReply(ProviderError, TypeError):
    """The provider's answer could not be read (too deep, a field of the wrong type, or no
    reply of its format at all). `reported_usage`: what the body said the call cost, when it
    said so in its format's usage member (set by `unreadable_reply`)."""

    reported_usage: Usage | None = None


def not_a_reply(kind: str, missing: str, body: Any = None) -> UnreadableReply:
    """A whole answer lacking its format's defining part (`missing`): not `kind` (a reply of
    that format), the provider's failure; the `error` the body holds, if any, is quoted."""
    said = _error_said(body)
    return UnreadableReply(
        f"the provider's answer is not {kind}: {missing}" + (f" (error: {said})" if said else "")
    )


def wrong_text(value: Any) -> UnreadableReply:
    """An answer whose text field holds `value`, not a string: no reply of its format."""
    return UnreadableReply(
        f"the provider's answer is not a reply: its text is {type(value).__name__}, not a string"
    )


def wrong_chunk_text(member: str, value: Any) -> UnreadableReply:
    """A stream chunk whose text `member` is present and holds `value`, not a string: no chunk
    of a reply (as a whole answer with such text is none), never a piece read as empty."""
    return UnreadableReply(
        f"the provider's stream chunk is not a reply's: its {member} is "
        f"{type(value).__name__}, not a string"
    )


def chunk_text(value: Any, member: str, parts: bool = False) -> str:
    """A stream chunk's text `member`, read as `value`: itself when a string, "" when absent
    (None); with `parts` (a chat delta's `content`), content parts too (`[{"type": "text",
    "text": ...}]`: their texts joined, as a message's are; a part without a text, such as a
    reasoning part, adds none); any other type is no chunk of a reply (`wrong_chunk_text`,
    naming `member`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if not parts or not isinstance(value, list):
        raise wrong_chunk_text(member, value)
    texts: list[str] = []
    for part in value:
        if isinstance(part, Mapping):
            text = part.get("text")
        elif isinstance(part, BaseModel):
            text = getattr(part, "text", None)
        else:  # a list of anything but parts (texts among them): the list is the wrong type
            raise wrong_chunk_text(member, value)
        if isinstance(text, str):
            texts.append(text)
        elif text is not None:
            raise wrong_chunk_text(f"{member}[].text", text)
    return "".join(texts)


def _error_said(body: Any) -> str:
    """The `error` member of a body that is no reply (a text, or an object's `message`)."""
    if body is None or isinstance(body, str | bytes | int | float | list | tuple):
        return ""
    try:
        error = body.get("error") if isinstance(body, dict) else getattr(body, "error", None)
        if error is not None and not isinstance(error, str):
            error = error.get("message") if isinstance(error, dict) else None
    except Exception:  # a hostile body: its error is not worth a crash
        return ""
    if not isinstance(error, str) or not error:
        return ""
    return error if len(error) <= _MAX_WORDS else error[:_MAX_WORDS] + "…"


def _described(exc: BaseException) -> str:
    try:
        said = str(exc).split("\n", 1)[0]
    except Exception:  # an exception whose `__str__` raises: its type says enough
        said = ""
    said = said if len(said) <= _MAX_WORDS else said[:_MAX_WORDS] + "…"
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def unreadable(exc: BaseException) -> UnreadableReply:
    """`exc` (raised reading a provider's answer) as the provider's failure."""
    if isinstance(exc, RecursionError):
        error = UnreadableReply("the provider's answer nests too deep to be read")
    else:
        error = UnreadableReply(f"the provider's answer could not be read ({_described(exc)})")
    error.__cause__ = exc
    return error


def unreadable_as_failure(reader: Callable[_P, _R]) -> Callable[_P, _R]:
    """`reader` (a format's reply or chunk reader, a collector's `feed`), its failures on a
    hostile answer raised as `UnreadableReply` (a `ProviderError` it raises on purpose passes
    unchanged)."""

    @functools.wraps(reader)
    def read(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return reader(*args, **kwargs)
        except ProviderError:
            raise
        except _READING_ERRORS as exc:
            raise unreadable(exc) from exc

    return read


def unreadable_reply(
    usage_of: Callable[[Any], Usage | None],
) -> Callable[[Callable[_P, Reply]], Callable[_P, Reply]]:
    """`unreadable_as_failure` for a format's whole-reply reader (its body the first argument):
    the `UnreadableReply` it raises carries the usage the body reported (`usage_of(body)`, the
    format's usage reader; none when the body reports none or it cannot be read). Read on the
    failure path only."""

    def wrap(reader: Callable[_P, Reply]) -> Callable[_P, Reply]:
        @functools.wraps(reader)
        def read(*args: _P.args, **kwargs: _P.kwargs) -> Reply:
            try:
                return reader(*args, **kwargs)
            except UnreadableReply as exc:
                _report(exc, usage_of, args[0])
                raise
            except ProviderError:
                raise
            except _READING_ERRORS as exc:
                error = unreadable(exc)
                _report(error, usage_of, args[0])
                raise error from exc

        return read

    return wrap


def _report(error: UnreadableReply, usage_of: Callable[[Any], Usage | None], body: Any) -> None:
    """`error` made to carry the usage `body` reported (one it carries already is kept)."""
    if error.reported_usage is not None:
        return
    try:
        usage = usage_of(body)
    except Exception:  # a hostile usage member: none reported
        return
    if isinstance(usage, Usage) and not usage.estimated:
        error.reported_usage = usage


def sdk_reading_failure(exc: BaseException) -> BaseException:
    """What a provider SDK's call raised, as the run should see it: `UnreadableReply` when the
    SDK failed reading the provider's answer (a body nested past the decoder's limit, a
    response its models refuse), else `exc` unchanged."""
    if isinstance(exc, ProviderError | UnreadableReply):
        return exc
    if isinstance(exc, RecursionError):
        return unreadable(exc)
    if isinstance(exc, _READING_ERRORS) and _raised_reading(exc):
        return unreadable(exc)
    return exc


@functools.cache
def _sdk_readers() -> tuple[re.Pattern[str], re.Pattern[str], frozenset[str]]:
    """Every provider's SDK readers and request builders (`Provider.reads`, `Provider.builds`),
    each as one pattern over `module:qualname`, and the SDKs' top packages (read once: the
    registry is fixed when healjson is imported)."""
    from healjson._providers import PROVIDERS  # here: the registry loads modules that use this

    providers = list(PROVIDERS)
    readers = [reader for provider in providers for reader in provider.reads]
    builders = [builder for provider in providers for builder in provider.builds]
    packages = frozenset(name.partition(".")[0] for name in (*readers, *builders))
    return _either(readers), _either(builders), packages


def _either(patterns: list[str]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in patterns) or r"(?!)")


def _raised_reading(exc: BaseException) -> bool:
    """True when `exc` was raised beneath a provider SDK's reader, and neither beneath one of
    its request builders nor beneath an HTTP client sending a request (see the module)."""
    readers, builders, packages = _sdk_readers()
    reading = False
    trace = exc.__traceback__
    while trace is not None:  # outermost first
        frame = trace.tb_frame
        module = frame.f_globals.get("__name__", "")
        if isinstance(module, str):
            if module.partition(".")[0] in packages:
                name = f"{module}:{frame.f_code.co_qualname}"
                if readers.match(name):
                    reading = True
                elif builders.match(name):
                    reading = False
            elif module in _SENDING:
                reading = False
        trace = trace.tb_next
    return reading
