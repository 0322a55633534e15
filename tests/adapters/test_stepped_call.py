"""`adapters._steps.stepped`, the one call a provider module's adapter makes (a whole answer, a
stream, the SDK's own structured calls), does what its docstring says for any pattern of refused
tiers, failures and answers, sync and async: each request in the tier the client is at (none
for the caller's own format), a refused tier stepped down within the call and remembered, any
other failure raised, the answer taken through the exchange; with `prime`, a stream read up to
its first piece inside the call, so a tier refused at that read is stepped down too."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from healjson.adapters._base import NotACompletion, ShapeCheck
from healjson.adapters._format import FormatState
from healjson.adapters._steps import stepped


class Refused(Exception):
    """A 400 that names the tier's feature."""


class Broken(Exception):
    """Any other failure of the call."""


class Answer:
    """What the client returns: readable or not, by its `ok`."""

    def __init__(self, ok: bool) -> None:
        self.ok = ok

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Answer) and other.ok == self.ok

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ok})"

    __hash__ = None  # type: ignore[assignment]


class Known(Answer):
    """A class the exchange knows: taken without a read."""


class Stream:
    """A streamed answer whose request is sent at its first read: it raises its fate there."""

    def __init__(self, fate: str, chunks: list[str]) -> None:
        self.fate = fate
        self.chunks = chunks
        self.ok = True

    def __iter__(self) -> Iterator[str]:
        if self.fate == "refused_at_read":
            raise Refused("at the first read")
        if self.fate == "broken_at_read":
            raise Broken("down at the first read")
        yield from self.chunks

    async def __aiter__(self) -> AsyncIterator[str]:
        for chunk in self:
            yield chunk


_WHOLE = ["refused", "broken", "answer", "unreadable", "known"]
_STREAMED = ["refused", "broken", "refused_at_read", "broken_at_read", "stream"]
_CHUNKS = ["a", "b", "c"]
EXCHANGE = ShapeCheck(lambda value: getattr(value, "ok", False), "an answer", {Known})
STREAMS = ShapeCheck(
    lambda value: hasattr(value, "__iter__") or hasattr(value, "__aiter__"), "a stream"
)
MESSAGES = [{"role": "user", "content": "x"}]


def _client(fates: list[str], sent: list[dict[str, Any]]) -> Any:
    """`create(**body)`: each call records its body and meets the next fate (the last repeats)."""

    def create(**body: Any) -> Any:
        sent.append(body)
        fate = fates[min(len(sent) - 1, len(fates) - 1)]
        if fate == "refused":
            raise Refused(body["mode"])
        if fate == "broken":
            raise Broken("down")
        if fate in ("stream", "refused_at_read", "broken_at_read"):
            return Stream(fate, list(_CHUNKS))
        return Known(True) if fate == "known" else Answer(fate == "answer")

    return create


def _awaited(create: Any) -> Any:
    async def acreate(**body: Any) -> Any:
        return create(**body)

    return acreate


def _shape(mode: Any, messages: Any, request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    return mode, {"mode": mode, "messages": list(messages), **request}


def _rejects(exc: BaseException, mode: Any) -> bool:
    return isinstance(exc, Refused)


def _expected(fates: list[str], own: bool, prime: bool) -> tuple[Any, list[Any], Any]:
    """What the docstring promises: the outcome, the tiers the requests were sent in, and the
    tier the client is left at."""
    state = FormatState("json_schema")
    mode = None if own else state.mode
    tiers: list[Any] = []
    while True:
        tiers.append(mode)
        fate = fates[min(len(tiers) - 1, len(fates) - 1)]
        refused = fate == "refused" or (prime and fate == "refused_at_read")
        if refused:
            weaker = None if mode is None else state.step_down(mode)
            if weaker is None:
                message = "at the first read" if fate == "refused_at_read" else str(mode)
                return ("Refused", message), tiers, state.mode
            mode = weaker
            continue
        if fate == "broken" or (prime and fate == "broken_at_read"):
            message = "down at the first read" if fate == "broken_at_read" else "down"
            return ("Broken", message), tiers, state.mode
        if fate == "unreadable":
            return ("NotACompletion", None), tiers, state.mode
        if fate in ("stream", "refused_at_read", "broken_at_read"):
            return ("stream", fate), tiers, state.mode
        return ("value", Known(True) if fate == "known" else Answer(True)), tiers, state.mode


def _outcome(call: Any, is_async: bool, prime: bool) -> Any:
    """The call's answer (a primed stream's pieces read), or its exception's class and message
    (an async call is run to its end at once: nothing in it waits)."""
    try:
        if not is_async:
            value = call(MESSAGES, model="m", n=1)
        else:
            coroutine = call(MESSAGES, model="m", n=1)
            try:
                coroutine.send(None)
            except StopIteration as done:
                value = done.value
            else:
                raise AssertionError("the call waited")
    except NotACompletion:
        return "NotACompletion", None
    except Exception as exc:
        return type(exc).__name__, str(exc)
    if isinstance(value, Stream):
        return "stream", value.fate
    if prime:
        return "pieces", _read(value, is_async)
    return "value", value


def _read(stream: Any, is_async: bool) -> list[str]:
    if not is_async:
        return list(stream)

    async def collect() -> list[str]:
        return [piece async for piece in stream]

    coroutine = collect()
    try:
        coroutine.send(None)
    except StopIteration as done:
        return list(done.value)
    raise AssertionError("the stream waited")


@settings(max_examples=150)
@given(
    data=st.data(),
    own=st.booleans(),
    aio=st.booleans(),
    prime=st.booleans(),
)
def test_stepped_keeps_its_promise(data: st.DataObject, own: bool, aio: bool, prime: bool) -> None:
    """For any fates of the calls, `stepped` sends each request in the promised tier, leaves the
    client at the promised tier, and ends with the promised answer or exception; a primed
    stream comes back whole (its first piece read, none lost)."""
    kinds = _STREAMED if prime else _WHOLE
    fates = data.draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=5), label="fates")
    sent: list[dict[str, Any]] = []
    state = FormatState("json_schema")
    create = _client(fates, sent)
    if aio:
        create = _awaited(create)
    exchange = STREAMS if prime else EXCHANGE
    call = stepped(create, state, _shape, _rejects, exchange, is_async=aio, own=own, prime=prime)
    outcome = _outcome(call, aio, prime)
    expected, tiers, left_at = _expected(fates, own, prime)
    if prime and expected[0] == "stream":
        expected = ("pieces", _CHUNKS)
    assert outcome == expected
    assert [body["mode"] for body in sent] == tiers
    assert all(body["messages"] == MESSAGES and body["model"] == "m" for body in sent)
    assert state.mode == left_at
