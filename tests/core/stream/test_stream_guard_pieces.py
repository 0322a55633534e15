"""The degenerate-output guard reads every call's piece a chunk carries (`Delta.tool_pieces`, as
an OpenAI chat delta with several calls' pieces gives them), not only the first call's: a call
that degenerates in the further pieces of its chunks is cut off at once, as the same call
streamed alone is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

import healjson
from healjson import Degraded, Delta, HealPolicy, Reason

USER = [{"role": "user", "content": "Ann is 31."}]
POLICY = HealPolicy(max_attempts=1, max_whitespace_run=100)
RUN = " " * 300  # past the bound in one piece
MORE = 40  # chunks after the run: the guard must not read them


class Person(BaseModel):
    name: str
    age: int


class Counted:
    """Chunks handed out, counted as the reader takes them."""

    def __init__(self, chunks: list[Delta]) -> None:
        self.chunks = chunks
        self.read = 0

    def __iter__(self) -> Iterator[Delta]:
        for chunk in self.chunks:
            self.read += 1
            yield chunk


def _run(chunks: list[Delta]) -> tuple[Any, int]:
    """`Healer.stream` over `chunks`: its outcome, and how many chunks were read."""
    counted = Counted(chunks)
    stream = healjson.Healer(Person, policy=POLICY).stream(lambda messages, **_: counted, USER)
    for _ in stream:
        pass
    return stream.outcome, counted.read


def test_a_run_in_a_further_calls_piece_cuts_the_stream() -> None:
    """A whitespace run carried only by a chunk's further call piece trips the guard at once."""
    first = Delta(tool_name="Person", tool_index=0, tool_id="call_0",
                  tool_arguments='{"name": "Ann", "age": 31}',
                  tool_pieces=(Delta(tool_name="Person", tool_index=1, tool_id="call_1",
                                     tool_arguments='{"name": '),))  # fmt: skip
    loop = Delta(tool_index=0, tool_pieces=(Delta(tool_index=1, tool_arguments=RUN),))
    chunks = [first, *[loop] * MORE, Delta(finish_reason="tool_calls")]

    outcome, read = _run(chunks)

    assert isinstance(outcome, Degraded)
    assert outcome.reason == Reason.DEGENERATE_OUTPUT
    assert read == 2


def test_the_further_pieces_trip_where_the_same_call_alone_trips() -> None:
    """The same arguments trip the guard after as many chunks whether they come as a chunk's
    further pieces or as its first."""
    alone = [Delta(tool_name="lookup", tool_index=0, tool_id="call_0", tool_arguments="{")]
    alone += [Delta(tool_index=0, tool_arguments=" " * 30)] * MORE
    beside = [Delta(tool_pieces=(alone[0],))]
    beside += [Delta(tool_pieces=(piece,)) for piece in alone[1:]]

    _, read_alone = _run([*alone, Delta(finish_reason="tool_calls")])
    _, read_beside = _run([*beside, Delta(finish_reason="tool_calls")])

    assert read_alone == read_beside == 5
