"""A custom tool's call judged: its input is free text, the tool's to read, never JSON.

A call to a custom tool (`ToolCall.kind` `CUSTOM`) carries the text the tool takes as it is:
L1 does not read it (no JSON is recovered, no local repair applies, no flag is set) and L2 has
no schema and no contract to hold it to. It is accepted exactly as sent, unless the reply was
cut by the token limit with it as the last thing written (the text is then known to be
incomplete). A call of one kind to a tool of the other (a custom tool called as a function, or
a function as a custom tool) is judged by neither: the tool's kind is part of its declaration.

A custom tool may declare a `format` (a grammar: Lark or a regular expression) its input must
match; enforcing it is the provider's (constrained decoding): it is not checked here.
"""

from __future__ import annotations

from healjson._core.diagnostic import ROOT, Diagnostic, Source
from healjson._core.parse import ParseResult
from healjson._core.wire.reply import CUSTOM, ToolCall

from .check import Evaluation
from .verdict import Verdict

__all__ = ["free_text_call", "wrong_kind"]

_TAIL = 120  # the end of a cut input shown in its diagnostic


def free_text_call(call: ToolCall, finish_reason: str | None) -> Evaluation:
    """The verdict on a custom tool's call: accepted with its input as sent (the instance, the
    input text itself), or, when `finish_reason` says the token limit cut it, truncated."""
    text = call.arguments
    if finish_reason == "length":
        cut = Diagnostic(
            ROOT,
            text[-_TAIL:],
            f"must be complete; the input was cut off after {len(text)} characters: the token "
            "limit was reached (finish_reason=length)",
            "Write the complete input again, as short as it can be.",
            Source.TRUNCATION,
            extra={"cause": "token_limit"},
        )
        return Evaluation(Verdict.TRUNCATED, ParseResult(error=cut), (cut,), answer=text)
    return Evaluation(Verdict.OK, ParseResult(answer=text), (), text, answer=text)


def wrong_kind(kind: str, call: ToolCall) -> Diagnostic:
    """A call of `call.kind` to a tool declared of `kind`: to be made again as that tool's."""
    if kind == CUSTOM:
        said, fix = "a custom tool: its call carries free-text input", "as a custom tool call"
    else:
        said, fix = "a function: its call carries JSON arguments", "as a function call"
    return Diagnostic(
        ROOT,
        call.name,
        f"must be a call of the kind its tool is declared; `{call.name}` is {said}",
        f"Call `{call.name}` again {fix}.",
        Source.TOOL_CALL,
    )
