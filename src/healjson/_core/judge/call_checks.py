"""Why a tool call is rejected before its arguments are read, or an answer for the calls it
did or did not make: a call to a tool the request does not declare, to another tool than the
one the request forces or than the rejected call it replaces, a call where the request allows
none (`tool_choice="none"`), and no call where it forces one. Each is a `Source.TOOL_CALL`
diagnostic, a model can act on."""

from __future__ import annotations

from collections.abc import Sequence

from healjson._core.diagnostic import ROOT, Diagnostic, Source
from healjson._core.wire.reply import ToolCall

__all__ = ["missing_call", "not_again", "not_allowed", "not_forced", "unknown_tool"]


def unknown_tool(declared: Sequence[str], call: ToolCall) -> Diagnostic:
    """`call` names a tool the request does not declare."""
    names = ", ".join(f"`{name}`" for name in declared) or "(none)"
    return Diagnostic(
        ROOT,
        call.name,
        f"must call a declared tool; `{call.name}` is not one (declared: {names})",
        f"Call one of the declared tools instead: {names}.",
        Source.TOOL_CALL,
    )


def not_forced(forced: str, call: ToolCall) -> Diagnostic:
    """`call` is to another tool than `forced`, the one the request forces."""
    return Diagnostic(
        ROOT,
        call.name,
        f"must be a call to `{forced}` (the request forces that tool)",
        f"Call `{forced}` instead of `{call.name}`.",
        Source.TOOL_CALL,
    )


def not_again(wanted: str, call: ToolCall) -> Diagnostic:
    """`call` replaces a rejected call to `wanted` with a call to another tool."""
    return Diagnostic(
        ROOT,
        call.name,
        f"must be the call to `{wanted}` made again (the call it replaces); "
        f"`{call.name}` is another tool",
        f"Make the rejected call to `{wanted}` again, corrected; make no other call.",
        Source.TOOL_CALL,
    )


def not_allowed(call: ToolCall) -> Diagnostic:
    """`call` was made where the request allows none."""
    return Diagnostic(
        ROOT,
        call.name,
        "must not be made: the request allows no tool call (its tool_choice)",
        "Answer in text, without calling any tool.",
        Source.TOOL_CALL,
        extra={"cause": "tool_call_not_allowed"},
    )


def missing_call(required: bool | str, text: str | None) -> Diagnostic:
    """An answer (`text`) with no call where the request forces one (`required`: some call,
    True, or the named tool's)."""
    wanted = (
        f"a call to `{required}`"
        if isinstance(required, str) and not isinstance(required, bool)
        else "a tool call"
    )
    return Diagnostic(
        ROOT,
        text or "",
        f"must be {wanted} (the request forces one); the answer made no call",
        f"Answer with {wanted}, not with text.",
        Source.TOOL_CALL,
        extra={"cause": "tool_call_missing"},
    )
