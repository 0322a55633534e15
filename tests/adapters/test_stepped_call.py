"""`adapters._steps.stepped`, a whole answer's call in one frame, does what the layered call it
replaces does (`sync_call` over a sender whose `stepping` call shapes each tier): the same
requests sent, the same tiers remembered, the same answer or the same exception, sync and
async, for any pattern of refused tiers, failures and answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from healjson.adapters._base import ShapeCheck, async_call, sync_call
from healjson.adapters._format import FormatState
from healjson.adapters._steps import stepped, stepping


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


_FATES = st.sampled_from(["refused", "broken", "answer", "unreadable", "known"])


def _client(fates: list[str], sent: list[dict[str, Any]]) -> Any:
    """`create(**body)`: each call records its body and meets the next fate (the last repeats)."""

    def create(**body: Any) -> Any:
        sent.append(body)
        fate = fates[min(len(sent) - 1, len(fates) - 1)]
        if fate == "refused":
            raise Refused(body["mode"])
        if fate == "broken":
            raise Broken("down")
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


EXCHANGE = ShapeCheck(lambda value: getattr(value, "ok", False), "an answer", {Known})


def _layered(create: Any, state: FormatState, own: bool, is_async: bool) -> Any:
    """The composition `stepped` replaces: a sender whose `stepping` call shapes each tier."""

    def attempt(mode: Any, *, messages: Any, request: dict[str, Any]) -> Any:
        return _shape(None if own else mode, messages, request)

    call = stepping(create, state, attempt, _rejects, is_async=is_async)

    def send(request: dict[str, Any]) -> Any:
        return call, {"messages": request.pop("messages"), "request": request}, EXCHANGE

    return (async_call if is_async else sync_call)(None, None, None, send)


def _outcome(call: Any, is_async: bool) -> Any:
    """The call's answer, or its exception's class and message (an async call is run to its end
    at once: nothing in it waits)."""
    messages = [{"role": "user", "content": "x"}]
    try:
        if not is_async:
            return "value", call(messages, model="m", n=1)
        coroutine = call(messages, model="m", n=1)
        try:
            coroutine.send(None)
        except StopIteration as done:
            return "value", done.value
        raise AssertionError("the call waited")
    except Exception as exc:
        return type(exc).__name__, str(exc)


@settings(max_examples=40)
@given(fates=st.lists(_FATES, min_size=1, max_size=4), own=st.booleans(), aio=st.booleans())
def test_one_frame_does_what_the_layers_do(fates: list[str], own: bool, aio: bool) -> None:
    """For any fates of the calls, `stepped` sends the same bodies, leaves the same tier, and
    ends with the same answer or the same exception as the layered call."""
    results = []
    for build in ("layers", "frame"):
        sent: list[dict[str, Any]] = []
        state = FormatState("json_schema")
        create = _client(fates, sent)
        if aio:
            create = _awaited(create)
        if build == "layers":
            call = _layered(create, state, own, aio)
        else:
            call = stepped(create, state, _shape, _rejects, EXCHANGE, is_async=aio, own=own)
        results.append((_outcome(call, aio), sent, state.mode))
    assert results[0] == results[1]
