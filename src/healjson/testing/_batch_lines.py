"""A batch's lines answered: where each line's reply comes from (the server's script, or
`batch_replies`), and the line as its provider writes it, rendered once when the batch is created.

`Line.result` is the line's output, one line of JSON: OpenAI's output-file line (a status < 400)
or error-file line (an HTTP error, a script failure, an expired request), Anthropic's results
line. A script that cannot answer a line (exhausted, a broken item, a custom_id `batch_replies`
lacks) makes it an errored line saying why, with the HTTP 500 body the route would send; the
server keeps serving. A `batch_replies` item that is `bytes` is the line's result as is, a
provider's broken line (for testing a reader against one): any bytes, spliced into the result
file unchecked, counted as `succeeded`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ._replies import ScriptedReply, ScriptFailure, ScriptItem, resolve_item
from ._wire import anthropic_messages, openai_chat
from ._wire import batches as wire
from ._wire._common import WireFormat

__all__ = ["BatchReplies", "Line", "LineAnswerer", "NextReply"]

# a batch line's reply, by custom_id, or made from (custom_id, body or params); bytes: the
# line's result as is
BatchReplies = (
    Mapping[str, ScriptItem | bytes] | Callable[[str, dict[str, Any]], ScriptItem | bytes]
)
# the server's next script item for a request body: (reply, item number); names the asker
NextReply = Callable[[dict[str, Any], str], tuple[ScriptedReply, int]]


@dataclass(slots=True)
class Line:
    """One request of a batch, answered: `outcome` is its scripted fate (`succeeded`,
    `errored` or `expired`), `done` the delay after the batch's creation when it is answered
    (inf: never, it expires; the store makes it a monotonic time), `usage` the model reply's."""

    custom_id: str
    request: dict[str, Any]
    outcome: str
    done: float
    result: bytes
    usage: dict[str, int] | None


class LineAnswerer:
    """Answers batch lines from the server's script (`replies` None) or from `replies`."""

    def __init__(
        self, next_reply: NextReply, model: Callable[[], str], replies: BatchReplies | None
    ) -> None:
        if replies is not None and not (isinstance(replies, Mapping) or callable(replies)):
            raise ValueError("batch_replies must be a mapping by custom_id, a callable or None")
        self._next_reply = next_reply
        self._model = model
        self.replies = replies

    def openai(
        self,
        batch_number: int,
        index: int,
        custom_id: str,
        body: dict[str, Any],
        format_: WireFormat = openai_chat.FORMAT,
    ) -> Line:
        """Line `index` (from 1) of OpenAI batch number `batch_number`, answered by the route
        of the batch's endpoint (`format_`)."""
        answered, delay = self._answer(format_, custom_id, body, index)
        if isinstance(answered, bytes):
            return Line(custom_id, body, "succeeded", delay, answered, None)
        line_id = f"batch_req_scripted_{batch_number}_{index}"
        if answered is None:
            return Line(
                custom_id, body, "expired", delay, wire.expired_line(line_id, custom_id), None
            )
        request_id = f"req_scripted_batch_{batch_number}_{index}"
        result = wire.output_line(line_id, custom_id, request_id, answered)
        return Line(custom_id, body, _outcome(answered), delay, result, answered.usage)

    def anthropic(self, index: int, custom_id: str, params: dict[str, Any]) -> Line:
        """Line `index` (from 1) of an Anthropic Message Batch."""
        answered, delay = self._answer(anthropic_messages.FORMAT, custom_id, params, index)
        if isinstance(answered, bytes):
            return Line(custom_id, params, "succeeded", delay, answered, None)
        if answered is None:
            result = wire.unanswered_line(custom_id, "expired")
            return Line(custom_id, params, "expired", delay, result, None)
        result = wire.result_line(custom_id, answered)
        return Line(custom_id, params, _outcome(answered), delay, result, answered.usage)

    def _answer(
        self, format_: WireFormat, custom_id: str, request: dict[str, Any], index: int
    ) -> tuple[wire.Answer | bytes | None, float]:
        """A line's answer (`None`: it expires; bytes: the result line as is) and its delay
        after the batch's creation."""
        reply, number = self._reply(custom_id, request, index)
        if isinstance(reply, bytes):
            return reply, 0.0
        if isinstance(reply, ScriptFailure):
            return wire.failure(format_, str(reply), reply.code), 0.0
        if reply.batch_expired:
            return None, math.inf
        return wire.answer(format_, reply, number, self._model(), request), reply.delay_s

    def _reply(
        self, custom_id: str, request: dict[str, Any], index: int
    ) -> tuple[ScriptedReply | ScriptFailure | bytes, int]:
        """A line's reply and its number (the script item's, or the line's), or the failure
        that makes it an errored line, or the line's result as is (`batch_replies` bytes)."""
        label = f"batch reply for custom_id {custom_id!r}"
        replies = self.replies
        try:
            if replies is None:
                return self._next_reply(request, f"batch line {custom_id!r}, model request")
            if isinstance(replies, Mapping):
                if custom_id not in replies:
                    raise ScriptFailure(f"ScriptedServer batch_replies has no {label}")
                item = replies[custom_id]
            else:
                try:
                    item = replies(custom_id, request)
                except Exception as exc:
                    raise ScriptFailure(f"ScriptedServer batch_replies raised {exc!r}") from exc
            if isinstance(item, bytes):
                return item, index
            return resolve_item(item, request, label), index
        except ScriptFailure as failure:
            return failure, index


def _outcome(answered: wire.Answer) -> str:
    return "succeeded" if answered.ok else "errored"
