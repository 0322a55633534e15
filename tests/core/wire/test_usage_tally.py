"""A stream's usage adds up from its pieces by one rule (`UsageTally`): a final count beats a
running one, the latest of each kind wins, a partial piece states its nonzero counts only, and
the usage is exact only once final prompt and completion counts came."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from healjson import Usage
from healjson._core.wire.tally import UsageTally
from pinned import pinned

COUNT = st.integers(0, 10_000)
PIECE = st.builds(
    Usage,
    prompt_tokens=COUNT,
    completion_tokens=COUNT,
    estimated=st.booleans(),
    reasoning_tokens=COUNT,
    cache_read_tokens=COUNT,
    cache_write_tokens=COUNT,
)
PIECES = st.lists(st.tuples(PIECE, st.booleans()), max_size=6)


def tally(pieces: list[tuple[Usage, bool]]) -> Usage | None:
    """The usage of a stream whose chunks carried `pieces` (each with its `partial` flag)."""
    found = UsageTally()
    for piece, partial in pieces:
        found.add(piece, partial)
    return found.usage


def counts(usage: Usage) -> tuple[int, ...]:
    """A usage's five counts."""
    return (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.reasoning_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    )


def test_no_piece_is_no_usage() -> None:
    """A stream that reported no usage has none."""
    assert tally([]) is None


@pinned(max_examples=50)
@given(before=PIECES, closing=PIECE)
def test_closing_totals_are_the_usage_whatever_came_before(
    before: list[tuple[Usage, bool]], closing: Usage
) -> None:
    """A last piece of final totals (every count stated) is the stream's usage, exact, whatever
    running or earlier final counts came before it."""
    final = Usage(*counts(closing)[:2], False, *counts(closing)[2:])
    usage = tally([*before, (final, False)])
    assert usage is not None
    assert (counts(final), False) == (counts(usage), usage.estimated)


@pinned(max_examples=50)
@given(pieces=PIECES)
def test_the_usage_is_exact_only_when_final_pieces_stated_prompt_and_completion(
    pieces: list[tuple[Usage, bool]],
) -> None:
    """The usage is exact exactly when a final piece stated the prompt and one stated the
    completion (a partial piece states a count only when it is not 0)."""
    usage = tally(pieces)
    finals = [(piece, partial) for piece, partial in pieces if not piece.estimated]
    prompt = any(piece.prompt_tokens or not partial for piece, partial in finals)
    completion = any(piece.completion_tokens or not partial for piece, partial in finals)
    assert usage is None or usage.estimated == (not (prompt and completion))


@pinned(max_examples=50)
@given(pieces=PIECES, late=PIECE)
def test_a_running_piece_never_replaces_a_final_count(
    pieces: list[tuple[Usage, bool]], late: Usage
) -> None:
    """A running piece after the final totals changes no count and leaves the usage exact."""
    final = Usage(5, 7, False, 1, 2, 3)
    usage = tally(
        [*pieces, (final, False), (Usage(*counts(late)[:2], True, *counts(late)[2:]), False)]
    )
    assert usage is not None
    assert ((5, 7, 1, 2, 3), False) == (counts(usage), usage.estimated)


@pinned(max_examples=30)
@given(prompt=st.integers(1, 10_000), completion=st.integers(1, 10_000), flip=st.booleans())
def test_parts_stated_apart_add_up_in_either_order(
    prompt: int, completion: int, flip: bool
) -> None:
    """The input's count stated at the start and the output's at the end (each a partial final
    piece that leaves the other out as 0) add up to an exact usage, in either order."""
    parts = [(Usage(prompt, 0), True), (Usage(0, completion), True)]
    usage = tally(parts[::-1] if flip else parts)
    assert usage is not None
    assert (prompt, completion, False) == (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.estimated,
    )


def test_a_count_no_piece_stated_leaves_the_usage_estimated() -> None:
    """An opening piece with no count (one that was no count) and closing totals that leave the
    input out: the prompt was never stated, so the usage is estimated, not an exact 0."""
    usage = tally([(Usage(0, 0, True), True), (Usage(0, 5), True)])
    assert usage is not None
    assert (0, 5, True) == (usage.prompt_tokens, usage.completion_tokens, usage.estimated)
