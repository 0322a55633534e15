"""The form of a tool-call repair: the answer's calls as they stand, and what to make again.

A request with the caller's own tools is repaired by one exchange after the original messages:
the model's turn sent back with its calls, each call answered by a tool message (an accepted
call "accepted, not yet run", a rejected one its problems), then a user message naming the
calls to make again. An answer that made no call where the request forces one gets its text
back and a user message asking for the call. `CallsForm` holds that exchange as data;
`RepairPrompt` carries it (`RepairPrompt.calls`), so the request, the attempt record, the
events and the trace all read the one rendering.

Bounded like every repair (`MAX_REPAIR_EXTRA_CHARS`), whatever the number or size of calls:

- at most `MAX_SHOWN_REJECTED` (20) rejected calls are sent back with their arguments and
  problems, each call's arguments within an equal share of `MAX_REJECTED_CHARS` (20,000) and
  its problems within a share of `MAX_PROBLEM_CHARS` (10,000); the others are named in the
  request by tool and id (at most `MAX_NAMED` of them);
- accepted calls are sent back while their count fits in `MAX_SHOWN_CALLS` (60), their
  arguments as sent while they fit in `MAX_ACCEPTED_CHARS` (12,000) in all, past that a short
  JSON placeholder saying how long they were; the rest are counted in one line;
- the message text within `MAX_TEXT_CHARS` (6,000).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from healjson._core.diagnostic import Diagnostic
from healjson._core.wire.reply import CUSTOM, FUNCTION

from .quote import elide, quote_answer, render_diagnostic

__all__ = [
    "ACCEPTED",
    "MAX_ACCEPTED_CHARS",
    "MAX_PROBLEM_CHARS",
    "MAX_REJECTED_CHARS",
    "MAX_SHOWN_CALLS",
    "MAX_SHOWN_REJECTED",
    "CallState",
    "CallsForm",
]

ACCEPTED: Final = "Accepted: this call passed every check; it has not been run yet."
MAX_SHOWN_REJECTED: Final = 20
MAX_SHOWN_CALLS: Final = 60
MAX_REJECTED_CHARS: Final = 20_000
MAX_ACCEPTED_CHARS: Final = 12_000
MAX_PROBLEM_CHARS: Final = 10_000
MAX_TEXT_CHARS: Final = 6_000
MAX_NAMED: Final = 40
_MIN_SHARE: Final = 600  # a call's arguments or problems are never cut below this


@dataclass(frozen=True, slots=True)
class CallState:
    """One call of the answer being repaired: its id, tool name and arguments text as the
    model sent them, its problems (none: the call was accepted), `tool`, the tool it must be
    made again to when that is not the one it called (a call made again to another tool), and
    its `kind` (`FUNCTION`, or `CUSTOM`: the arguments are a custom tool's free-text input, sent
    back as a custom call)."""

    id: str
    name: str
    arguments: str
    problems: tuple[Diagnostic, ...] = ()
    tool: str | None = None
    kind: str = FUNCTION

    @property
    def ok(self) -> bool:
        """True for an accepted call."""
        return not self.problems


@dataclass(frozen=True, slots=True)
class CallsForm:
    """A tool-call repair: the answer's `text` and `calls`, the indices of the calls to make
    again (`pending`), or — when the request forces a call and the answer made none —
    `missing` set, with `forced` (the tool it must call, True for any), the `declared` tools
    and, of those, the `custom` ones (their call's input is free text, asked for as such)."""

    text: str | None
    calls: tuple[CallState, ...] = ()
    pending: tuple[int, ...] = ()
    missing: bool = False
    forced: str | bool = False
    declared: tuple[str, ...] = ()
    custom: tuple[str, ...] = ()
    forbidden: bool = False
    """The request allows no tool call (`tool_choice="none"`): every call is rejected, and the
    model is asked to answer in text."""

    def render(self) -> str:
        """The repair as the model reads it after its turn: the tool message answering each
        call sent back (accepted, or its problems), then what to do now — the text the
        record, the events and the trace show."""
        if self.missing:
            return self.ask()
        blocks = [
            f"`{self.calls[index].name}` ({self.calls[index].id}): {self.tool_message(index)}"
            for index, _ in self._shown()
        ]
        return "\n\n".join([*blocks, self.ask()])

    def messages(self, original: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The repair request: the original messages and the exchange (see the module)."""
        out = [dict(message) for message in original]
        text = elide(quote_answer(self.text), MAX_TEXT_CHARS) if self.text else self.text
        if self.missing:
            out.append({"role": "assistant", "content": text or ""})
            out.append({"role": "user", "content": self.ask()})
            return out
        shown = self._shown()
        calls = [_sent_back(self.calls[index], arguments) for index, arguments in shown]
        out.append({"role": "assistant", "content": text, "tool_calls": calls})
        for index, _ in shown:
            call = self.calls[index]
            out.append(
                {"role": "tool", "tool_call_id": call.id, "content": self.tool_message(index)}
            )
        out.append({"role": "user", "content": self.ask()})
        return out

    def tool_message(self, index: int) -> str:
        """The tool message answering call `index`: accepted, or its problems (bounded)."""
        call = self.calls[index]
        if call.ok:
            return ACCEPTED
        count = len(call.problems)
        lines = [
            f"Rejected: this call of `{call.name}` failed {count} "
            f"check{'s' if count != 1 else ''} and was not run:"
        ]
        budget = self._problem_share()
        used = 0
        for number, diagnostic in enumerate(call.problems, 1):
            block = render_diagnostic(number, diagnostic)
            size = sum(len(line) + 1 for line in block)
            if number > 1 and used + size > budget:
                lines.append(f"... and {count - number + 1} more problems of the same kinds.")
                break
            lines.extend(block)
            used += size
        return elide("\n".join(lines), budget)

    def ask(self) -> str:
        """The user turn: the calls to make again (or the call to make), and nothing else."""
        if self.missing:
            return _ask_for_call(self.forced, self.declared, self.custom)
        if self.forbidden:
            return (
                "The request allows no tool call: your calls were rejected and not run. Answer "
                "in text only, and make no tool call."
            )
        broken = [self.calls[i] for i in self.pending]
        count, total = len(broken), len(self.calls)
        named = ", ".join(_named(call) for call in broken[:MAX_NAMED])
        if count > MAX_NAMED:
            named += f" and {count - MAX_NAMED} more"
        calls = "call" if count == 1 else "calls"
        lines = [
            f"Your tool call was rejected: {named}."
            if total == 1
            else f"{count} of your {total} tool calls {'was' if count == 1 else 'were'} "
            f"rejected: {named}."
        ]
        kept = total - count
        if kept:
            lines.append(
                "The other call was accepted as it is: do not make it again."
                if kept == 1
                else f"The other {kept} calls were accepted as they are: do not make them again."
            )
        hidden = len(self.calls) - len(self._shown())
        if hidden:
            lines.append(
                f"({hidden} of the calls are not repeated above, to keep this message short.)"
            )
        same = "the tool named here" if any(call.tool for call in broken) else "the same tool"
        complete = (
            "a function's every argument, as a JSON object matching its parameters; a custom "
            "tool's whole input, as free text"
            if any(call.kind == CUSTOM for call in broken)
            else "every argument, as a JSON object matching the tool's parameters"
        )
        lines.append(
            f"Make the rejected {calls} again{' in this order' if count > 1 else ''}, corrected "
            "as the tool messages above say, and no other call: each call complete "
            f"({complete}), to {same}."
        )
        return "\n".join(lines)

    def _shown_rejected(self) -> list[tuple[int, CallState]]:
        return [(i, self.calls[i]) for i in self.pending[:MAX_SHOWN_REJECTED]]

    def _problem_share(self) -> int:
        shown = max(min(len(self.pending), MAX_SHOWN_REJECTED), 1)
        return max(MAX_PROBLEM_CHARS // shown, _MIN_SHARE)

    def _shown(self) -> list[tuple[int, str]]:
        """The calls sent back, in the answer's order, each with its arguments as sent back:
        the shown rejected calls (within their share), then accepted calls while they fit."""
        rejected = {i for i, _ in self._shown_rejected()}
        share = max(MAX_REJECTED_CHARS // max(len(rejected), 1), _MIN_SHARE)
        room, count = MAX_ACCEPTED_CHARS, len(rejected)
        out: list[tuple[int, str]] = []
        for index, call in enumerate(self.calls):
            if index in rejected:
                out.append((index, elide(call.arguments, share)))
            elif call.ok and count < MAX_SHOWN_CALLS:
                count += 1
                if len(call.arguments) <= room:
                    room -= len(call.arguments)
                    out.append((index, call.arguments))
                else:
                    out.append((index, _placeholder(len(call.arguments), call.kind)))
        return out


def _sent_back(call: CallState, arguments: str) -> dict[str, Any]:
    """A call as the repair sends the model's turn back: a function call, or a custom tool's
    call with its input (`arguments`), as the model made it."""
    if call.kind == CUSTOM:
        return {"id": call.id, "type": CUSTOM, CUSTOM: {"name": call.name, "input": arguments}}
    return {
        "id": call.id,
        "type": FUNCTION,
        FUNCTION: {"name": call.name, "arguments": arguments},
    }


def _named(call: CallState) -> str:
    """A rejected call as the request names it: the tool to call again, and its id."""
    if call.tool is None or call.tool == call.name:
        return f"`{call.name}` ({call.id})"
    return f"`{call.tool}` ({call.id}, which called `{call.name}` instead)"


def _placeholder(size: int, kind: str = FUNCTION) -> str:
    """Accepted arguments left out of a repair request: still a JSON object (some APIs read
    the arguments of a call sent back as one); a custom call's input, a line of text."""
    if kind == CUSTOM:
        return f"[{size} characters of accepted input, not repeated]"
    return json.dumps({"omitted": f"{size} characters of accepted arguments, not repeated"})


def _ask_for_call(
    forced: str | bool, declared: tuple[str, ...], custom: tuple[str, ...] = ()
) -> str:
    """The call asked for when a forced one is missing, worded by its tool's kind: a custom
    tool's input is free text, a function's arguments a JSON object."""
    json_args = "with its arguments as a JSON object matching its parameters"
    free_text = "with its whole input as free text, as the tool takes it (not as JSON)"
    if isinstance(forced, str) and not isinstance(forced, bool):
        return (
            f"This request requires a call to the tool `{forced}`, and your answer made "
            f"none. Call it now, {free_text if forced in custom else json_args}."
        )
    names = ", ".join(f"`{name}`" for name in declared[:MAX_NAMED])
    if not custom:
        how = json_args
    elif all(name in custom for name in declared):
        how = free_text
    else:
        how = (
            "with a function's arguments as a JSON object matching its parameters, a custom "
            "tool's whole input as free text (not as JSON)"
        )
    return (
        "This request requires a tool call, and your answer made none. Call one of the "
        f"declared tools ({names}) now, {how}."
    )
