"""google-genai's own streamed structured call on a wrapped client, healed in place:
`models.generate_content_stream(config={"response_schema": M})` (and under `aio`).

The bare SDK tries `.parsed` on every chunk alone (`GenerateContentResponse._from_response`:
the chunk's own text validated against `M`, a failure swallowed), so a JSON answer streamed in
several chunks, or wrapped in prose, leaves every `.parsed` None; it raises nothing. On a
wrapped client the chunks are the SDK's own, passed on as they arrive, except the chunk that
ends the answer (its first candidate has a finish reason, or it has no candidate: a blocked
prompt) and any after it: those are held until the stream has ended. Then the streamed answer
(every chunk's parts joined into one response, `joined`) is the first answer of a healing run
(`heal`), which may make repair calls (plain `generate_content`); the last chunk's `.parsed` is
the healed value (None when the run degraded) and `healjson.outcome_of(chunk)` the run's
outcome. A stream that ends without such a chunk (cut short) is passed on as it came.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = ["aparsed_chunks", "joined", "parsed_chunks"]

Heal = Callable[[Any, Any], Any]
"""`heal(streamed answer, last chunk)` -> the last chunk, `.parsed` healed (an awaitable of it
for an async stream)."""


def _ends(chunk: Any) -> bool:
    """True for a chunk that ends the answer: a finish reason, or no candidate at all."""
    candidates = chunk.candidates
    return not candidates or candidates[0].finish_reason is not None


def _parts(chunk: Any) -> list[Any]:
    candidates = chunk.candidates
    content = candidates[0].content if candidates else None
    return list(content.parts or ()) if content is not None else []


def joined(chunks: Sequence[Any]) -> Any:
    """The streamed answer as one response: the last chunk (its usage, which Gemini counts for
    the whole stream) with one candidate holding every chunk's parts, and the last finish
    reason streamed; the last chunk itself when no chunk had a candidate."""
    from google.genai import types

    candidate, finish = None, None
    for chunk in chunks:
        if chunk.candidates:
            candidate = chunk.candidates[0]
            finish = candidate.finish_reason or finish
    last = chunks[-1]
    if candidate is None:
        return last
    parts = [part for chunk in chunks for part in _parts(chunk)]
    content = candidate.content or types.Content(role="model")
    whole = candidate.model_copy(
        update={"content": content.model_copy(update={"parts": parts}), "finish_reason": finish}
    )
    return last.model_copy(update={"candidates": [whole], "parsed": None})


def parsed_chunks(chunks: Iterable[Any], heal: Heal) -> Iterator[Any]:
    """The SDK's `chunks` as they arrive, the last one's `.parsed` healed (see the module's
    docstring)."""
    seen: list[Any] = []
    held: list[Any] = []
    try:
        for chunk in chunks:
            seen.append(chunk)
            if held or _ends(chunk):
                held.append(chunk)
            else:
                yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
    if held:
        held[-1] = heal(joined(seen), held[-1])
        yield from held


async def aparsed_chunks(
    chunks: AsyncIterator[Any], heal: Callable[[Any, Any], Awaitable[Any]]
) -> AsyncIterator[Any]:
    """`parsed_chunks` for an async stream."""
    seen: list[Any] = []
    held: list[Any] = []
    try:
        async for chunk in chunks:
            seen.append(chunk)
            if held or _ends(chunk):
                held.append(chunk)
            else:
                yield chunk
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()
    if held:
        held[-1] = await heal(joined(seen), held[-1])
        for chunk in held:
            yield chunk
