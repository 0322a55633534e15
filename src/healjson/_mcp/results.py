"""A tool result judged against the tool's `outputSchema`, and healed where that takes nothing
the result does not hold: `judge_result(...) -> Verdict`.

The rules, in order:

1. An error result (`isError`) is never judged against the success schema; a tool without a
   usable `outputSchema` has nothing to judge: both pass through (`Verdict.outcome` is None).
2. Structured content, when the result has some (JSON `null` included: the spec allows any JSON
   value), that is valid as it is passes with a clean outcome (`passed`: checked, nothing to
   heal, so no run is recorded); otherwise it is one `healjson.validate` run on its JSON text
   (a run that judges it again with the tool's contracts, when there are any), healed by L1's
   alignments (keys in another case, `"5"` for a number, one wrapping object too many, a value
   JSON-encoded in a string, ...).
3. Structured content that is missing, or that could not be healed, is looked for in the
   result's text blocks (joined by newlines; L1 finds the JSON among prose or fences and keeps
   the candidate that fits): flag `structured_from_text`. A text block stands in for
   structured content that could not be healed only when it holds everything that content
   says (each of its values, a string, a number or a boolean, is among the text's): the text
   completes it (`{"temp": 21.5}` beside the whole answer) and contradicts none of it; a text
   saying something else (`"Bergen"` beside `"Oslo"`) is another answer, never a replacement.
4. Nothing else. What cannot be read from the result stays missing, and the verdict is an error
   result whose text is the diagnostics (for each problem: where, what was received, the rule,
   the fix) — what a model can act on. The diagnostics are those of the structured content when
   it had some, else those of the text.

The tool's contracts (`tool_contracts={name: [...]}`) judge the value after the schema, with
their `on_fail` policies (`fix`, `warn`, `drop` settle locally; `reask` and `stop` make the
error result). Their `ctx.extra` is `{"tool": name, "arguments": ...}`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic_core import to_json

from .internals import MISSING, Degraded, Flag, Healed, render_diagnostics, validate, value_data
from .tools import ToolSchemas

__all__ = ["Verdict", "conforms", "error_text", "judge_result", "passed"]

_HEADER: Final = (
    "The result of tool `{name}` does not match the tool's outputSchema, and it could not be "
    "healed without inventing data (the server's output is at fault, not the call). Problems:"
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to send on: `outcome` is the run that judged the result (None: nothing judged);
    `value` the structured content to send (the result's own when `changed` is False);
    `error` set: send an error result with this text instead."""

    outcome: Healed[Any] | Degraded[Any] | None
    value: Any = MISSING
    changed: bool = False
    error: str | None = None


_UNJUDGED: Final = Verdict(None)


def judge_result(
    name: str,
    schemas: ToolSchemas | None,
    *,
    structured: Any,
    texts: Sequence[str],
    is_error: bool,
    rules: Sequence[Any] = (),
    context: Any = None,
    on_ambiguity: Any = "reask",
) -> Verdict:
    """Judge one result (`structured`: its structured content, `MISSING` when it has none;
    `texts`: its text blocks, in order) by the rules in this module's documentation."""
    target: Any = None if schemas is None else schemas.output
    if is_error or target is None:
        return _UNJUDGED
    if structured is not MISSING and not rules and conforms(target, structured):
        return Verdict(passed(target, structured), structured)  # no heal: no run to record
    kwargs: dict[str, Any] = {"contracts": rules, "on_ambiguity": on_ambiguity}
    if rules:
        kwargs["context"] = context
    first: Any = None  # the structured content's run
    if structured is not MISSING:
        try:
            text = to_json(structured).decode()
        except Exception:  # not JSON data (an SDK object would be): judged from its text
            text = None
        if text is not None:
            first = validate(text, target, **kwargs)
            if first.ok:
                return Verdict(first, first.value, changed=bool(first.flags))
    if texts:
        second = validate("\n".join(texts), target, **kwargs)
        if second.ok and (first is None or _completes(structured, second.value)):
            flags = (*second.flags, Flag.STRUCTURED_FROM_TEXT)
            healed = dataclasses.replace(second, flags=flags)
            return Verdict(healed, healed.value, changed=True)
        if first is None:
            first = second
    if first is None:  # neither structured content nor text: nothing to read
        first = validate("", target, **kwargs)
    assert isinstance(first, Degraded)
    return Verdict(first, error=error_text(name, first))


def conforms(target: Any, value: Any) -> bool:
    """Whether `value` is valid for `target` as it is (the check a conforming result or set of
    arguments costs: no run, no events; what fails it goes to a `validate` run)."""
    try:
        target.adapter.validate_python(value, strict=True)
    except Exception:  # invalid, or not JSON data
        return False
    return True


def passed(target: Any, value: Any) -> Healed[Any]:
    """The outcome of a result that conformed as it came: its value, its JSON text, no flags,
    no model call, no run (`run_id` empty: nothing was healed, so no run was recorded)."""
    return Healed(value, to_json(value).decode(), target=target.name, max_attempts=1)


def _completes(structured: Any, value: Any) -> bool:
    """Whether `value` (read from the text) says everything `structured` says: each of the
    structured content's values (strings, numbers, booleans, at any depth) is among the value's
    (a number and its decimal text count as one)."""
    said = set(_leaves(value_data(value)))
    return all(leaf in said for leaf in _leaves(structured))


def _leaves(data: Any) -> Iterator[str]:
    """The scalar values in JSON data, at any depth, as comparable text (`None` left out: a
    null says nothing the text must repeat)."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, bool):
            yield "true" if item else "false"
        elif isinstance(item, int | float):
            yield repr(float(item))
        elif isinstance(item, str):
            try:
                yield repr(float(item)) if item.strip() else item
            except ValueError:
                yield item


def error_text(name: str, outcome: Degraded[Any]) -> str:
    """The error result's text: a line saying what failed, then the diagnostics (bounded)."""
    lines = [_HEADER.format(name=name)]
    lines.extend(render_diagnostics(outcome.errors))
    if not outcome.errors:
        lines.append(f"1. {outcome.reason}")
    return "\n".join(lines)
