"""A stream's token usage, from the pieces its chunks report (`UsageTally`)."""

from __future__ import annotations

from .reply import Usage

__all__ = ["UsageTally"]


class UsageTally:
    """The usage of one streamed call, from the `Usage` pieces its chunks carry (`Delta.usage`),
    by one rule for every provider:

    - a piece is final (not `estimated`: the provider's totals) or running (`estimated`: counts
      the provider may still revise, such as a stream's opening count);
    - a piece states every count it holds, zeros included, unless it is partial (`partial`: a
      provider that sends its counts in parts, the input's at the start and the output's at
      the end): a partial piece states the counts its `partial` mask names (five booleans:
      prompt, completion, reasoning, cache read, cache write; a 0 the provider sent is a
      count), or, given as True, its nonzero counts only;
    - each count (prompt, completion, reasoning, cache read, cache write) is the latest one a
      final piece stated, else the latest one a running piece stated: a final count is never
      replaced by a running one, and a later final one replaces it (a provider's closing totals
      revise what it said along the way);
    - the usage is exact only when its prompt and its completion counts both came from final
      pieces; else it is `estimated`, and the call's usage estimates what is missing
      (`call_usage`).
    """

    __slots__ = ("_counts", "_final", "_model", "_requests")

    def __init__(self) -> None:
        self._counts: list[int] | None = None  # None: no piece yet
        self._final = [False] * 5
        self._requests = 0
        self._model: str | None = None

    def add(self, piece: Usage, partial: bool | tuple[bool, ...] = False) -> None:
        """Take one piece (`partial`: the counts it states, as a mask; True: its nonzero
        counts only)."""
        counts = self._counts
        if counts is None:
            counts = self._counts = [0] * 5
        final, known = not piece.estimated, self._final
        stated = (
            piece.prompt_tokens,
            piece.completion_tokens,
            piece.reasoning_tokens,
            piece.cache_read_tokens,
            piece.cache_write_tokens,
        )
        mask = partial if isinstance(partial, tuple) else tuple(c or not partial for c in stated)
        for index, count in enumerate(stated):
            if mask[index] and (final or not known[index]):
                counts[index] = count
                known[index] = known[index] or final
        self._requests = max(self._requests, piece.requests)
        self._model = piece.model or self._model

    @property
    def usage(self) -> Usage | None:
        """The usage so far (None before any piece)."""
        counts = self._counts
        if counts is None:
            return None
        prompt, completion, reasoning, read, written = counts
        exact = self._final[0] and self._final[1]
        return Usage(
            prompt, completion, not exact, reasoning, read, written, self._requests, self._model
        )
