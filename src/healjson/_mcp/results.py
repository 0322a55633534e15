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
   says, each in its place: for each value the structured content holds (a string, a number,
   a boolean, at any depth; a list, its number of items, `[]` included; a `null` says
   nothing), the text's reading, aligned to the schema, holds an equal value at the same path
   (keys matched as L1 matches them: case and `_`/`-` aside; two strings are equal only as
   written, and a number equals a string only when the string is its JSON text: `21.5` and
   `"21.5"` are one value, `"007"` and `"7"` two, `1` and `true` two). The text then completes
   it (`{"temperature": 21.5}` beside the whole answer) and contradicts none of it: the value
   sent is the text's reading with what the structured content says and the text leaves out
   (an `[]`, a `{}`) put back in its place; a text saying something else (`"Bergen"` beside
   `"Oslo"`, `low` and `high` swapped) is another answer, never a replacement.
4. A result healjson cannot judge whole (structured content, or text, nested deeper than its
   validator reads) is judged where it can be: structured content is judged with its branches
   deeper than `PRUNE_DEPTH` set aside, and a problem found outside those branches (a required
   field missing, a value of the wrong type) makes it an error result, whose diagnostics are
   those problems only. When none is visible it passes through as given, with no outcome (the
   SDK's own check, which the client runs on a result healjson does not judge, still applies):
   never an error result with a diagnostic about something else.
5. Nothing else. What cannot be read from the result stays missing, and the verdict is an error
   result whose text is the diagnostics (for each problem: where, what was received, the rule,
   the fix) — what a model can act on. The diagnostics are those of the structured content when
   it had some, else those of the text.

The tool's contracts (`tool_contracts={name: [...]}`) judge the value after the schema, with
their `on_fail` policies (`fix`, `warn`, `drop` settle locally; `reask` and `stop` make the
error result). Their `ctx.extra` is `{"tool": name, "arguments": ...}`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import to_json

from .internals import (
    MISSING,
    Degraded,
    Flag,
    Healed,
    Reason,
    format_path,
    render_diagnostics,
    validate,
    value_data,
)
from .tools import ToolSchemas

__all__ = ["PRUNE_DEPTH", "Verdict", "conforms", "error_text", "judge_result", "passed"]

PRUNE_DEPTH: Final = 64
"""Where structured content too deep to judge whole is cut for judging the rest (rule 4)."""

_HEADER: Final = (
    "The result of tool `{name}` does not match the tool's outputSchema, and it could not be "
    "healed without inventing data (the server's output is at fault, not the call). Problems:"
)


_CHECK_HEADER: Final = (
    "The result of tool `{name}` could not be judged: a contract that checks it raised (a bug "
    "in that contract's code, not in the tool's output). Problems:"
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
    kwargs: dict[str, Any] = {"contracts": rules, "on_ambiguity": on_ambiguity}
    if rules:
        kwargs["context"] = context
    if structured is not MISSING:
        valid = _checked(target, structured)
        if valid is None:  # deeper than the validator reads: what can be judged is
            return _shallow_verdict(name, target, structured, kwargs)
        if valid and not rules:
            return Verdict(passed(target, structured), structured)  # no heal: no run to record
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
        if second.ok and first is not None and _completes(structured, second.value):
            second = _with_structured(target, structured, second, kwargs)
        if second.ok and (first is None or _completes(structured, second.value)):
            flags = (*second.flags, Flag.STRUCTURED_FROM_TEXT)
            healed = dataclasses.replace(second, flags=flags)
            return Verdict(healed, healed.value, changed=True)
        if first is None:
            first = second
    if first is None:  # neither structured content nor text: nothing to read
        first = validate("", target, **kwargs)
    assert isinstance(first, Degraded)
    if _refused_depth(first.errors):  # deeper than the validator reads: what can be judged is
        if structured is MISSING:
            return _UNJUDGED  # the text: as given, no claim
        return _shallow_verdict(name, target, structured, kwargs)
    return Verdict(first, error=error_text(name, first))


def _shallow_verdict(name: str, target: Any, structured: Any, kwargs: dict[str, Any]) -> Verdict:
    """Rule 4: structured content too deep to judge whole, judged with its branches deeper
    than `PRUNE_DEPTH` set aside (each replaced by a null); the problems found at none of those
    branches, nor at a place that holds one, make an error result."""
    cut: list[str] = []
    shallow = _pruned(structured, (), cut)
    try:
        text = to_json(shallow).decode()
    except Exception:  # not JSON data: nothing more to judge
        return _UNJUDGED
    outcome = validate(text, target, **kwargs)
    if outcome.ok:
        return _UNJUDGED
    assert isinstance(outcome, Degraded)
    errors = tuple(error for error in outcome.errors if not _near(error.path, cut))
    if not errors or _refused_depth(errors):
        return _UNJUDGED
    visible = dataclasses.replace(outcome, errors=errors)
    return Verdict(visible, error=error_text(name, visible))


def _pruned(value: Any, loc: tuple[str | int, ...], cut: list[str]) -> Any:
    """`value` with each object or array at depth `PRUNE_DEPTH` replaced by None (its path
    noted in `cut`)."""
    if isinstance(value, dict | list) and len(loc) >= PRUNE_DEPTH:
        cut.append(format_path(loc))
        return None
    if isinstance(value, dict):
        return {key: _pruned(item, (*loc, str(key)), cut) for key, item in value.items()}
    if isinstance(value, list):
        return [_pruned(item, (*loc, index), cut) for index, item in enumerate(value)]
    return value


def _near(path: str, cut: Sequence[str]) -> bool:
    """Whether `path` is a cut branch, inside one, or holds one (its problem may be the cut's)."""
    return any(_within(path, place) or _within(place, path) for place in cut)


def _within(inner: str, outer: str) -> bool:
    if outer in ("<root>", inner):
        return True
    return inner.startswith(outer) and inner[len(outer)] in ".["


def conforms(target: Any, value: Any) -> bool:
    """Whether `value` is valid for `target` as it is (the check a conforming result or set of
    arguments costs: no run, no events; what fails it goes to a `validate` run)."""
    return bool(_checked(target, value))


def _checked(target: Any, value: Any) -> bool | None:
    """`conforms`, and None when the validator refuses `value` for its depth alone (nested
    deeper than it reads: healjson cannot judge it)."""
    try:
        target.adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        return None if _refused_depth(exc.errors(include_input=False)) else False
    except Exception:  # not JSON data
        return False
    return True


def passed(target: Any, value: Any) -> Healed[Any]:
    """The outcome of a result that conformed as it came: its value, its JSON text, no flags,
    no model call, no run (`run_id` empty: nothing was healed, so no run was recorded)."""
    return Healed(value, to_json(value).decode(), target=target.name, max_attempts=1)


def _refused_depth(errors: Sequence[Any]) -> bool:
    """Whether a validator's errors (pydantic's or healjson's diagnostics) are its depth limit."""
    for error in errors:
        text = error.get("msg", "") if isinstance(error, dict) else getattr(error, "constraint", "")
        if _DEPTH in str(text):
            return True
    return False


_DEPTH: Final = "recursion limit exceeded"


def _completes(structured: Any, value: Any) -> bool:
    """Whether `value` (read from the text, aligned to the schema) says everything
    `structured` says, each in its place: at each path where the structured content holds a
    string, a number or a boolean, the value holds an equal one (see the module's rule 3)."""
    read = value_data(value)
    stack: list[tuple[Any, Any]] = [(structured, read)]
    while stack:
        said, found = stack.pop()
        if said is None:
            continue  # a null says nothing the text must repeat
        if isinstance(said, dict):
            if not isinstance(found, dict):
                return False
            for key, item in said.items():
                place = _place(found, key)
                if place is MISSING:
                    if item is None or item in ({}, []):
                        continue  # put back as it came (`_with_structured`)
                    return False
                stack.append((item, place))
        elif isinstance(said, list | tuple):
            # a list says how many items it holds, none included: `[]` is "none", never
            # completed by a text's items
            if not (isinstance(found, list | tuple) and len(found) == len(said)):
                return False
            stack.extend(zip(said, found, strict=False))
        elif not _same(said, found):
            return False
    return True


def _with_structured(target: Any, structured: Any, read: Any, kwargs: dict[str, Any]) -> Any:
    """The text's reading (`read`, a healed run) with the members of the structured content
    it leaves out put back where they were (an `[]` or a `{}` the text does not repeat: what
    the tool said stays said; a `null` says nothing), judged again as one value (a schema that
    refuses them makes it no completion); `read` itself when nothing was left out."""
    merged, added = _merged(structured, value_data(read.value))
    if not added:
        return read
    try:
        text = to_json(merged).decode()
    except Exception:  # pragma: no cover - both sides are JSON data
        return read
    return validate(text, target, **kwargs)


def _merged(said: Any, found: Any) -> tuple[Any, bool]:
    """`found` with each member of `said` it has no place for added (recursively through the
    objects both hold); whether any was."""
    if not (isinstance(said, dict) and isinstance(found, dict)):
        return found, False
    out, added = dict(found), False
    for key, item in said.items():
        name = _key_for(found, key)
        if name is MISSING:
            if item is not None:  # a null says nothing (rule 3): not put back
                out[key], added = item, True
            continue
        out[name], deeper = _merged(item, found[name])
        added = added or deeper
    return out, added


def _place(found: dict[str, Any], key: Any) -> Any:
    """The value under `key` in `found` (`_key_for`); `MISSING` when there is none."""
    name = _key_for(found, key)
    return MISSING if name is MISSING else found[name]


def _key_for(found: dict[str, Any], key: Any) -> Any:
    """The key of `found` that stands for `key`: the key itself, else the one key that matches
    it with case and separators aside (as L1 aligns keys); `MISSING` when there is none."""
    if key in found:
        return key
    wanted = _folded(key)
    matches = [name for name in found if _folded(name) == wanted]
    return matches[0] if len(matches) == 1 else MISSING


def _folded(key: Any) -> str:
    return str(key).casefold().replace("_", "").replace("-", "").replace(" ", "")


def _same(said: Any, found: Any) -> bool:
    """Whether the text's scalar `found` says what the structured content's `said` says: two
    strings or two booleans equal as they are, two numbers equal as numbers, and a number and
    a string only when the string is that number's JSON text (`"21.5"` for `21.5`; never
    `"007"` for `"7"`, `" 12"`, `"Infinity"`); a boolean is never a number (`1` is not
    `true`)."""
    said_number = isinstance(said, int | float) and not isinstance(said, bool)
    found_number = isinstance(found, int | float) and not isinstance(found, bool)
    if said_number and found_number:
        return bool(said == found)
    if said_number and isinstance(found, str):
        return bool(_number_text(found) == said)
    if found_number and isinstance(said, str):
        return bool(_number_text(said) == found)
    if isinstance(said, bool) or isinstance(found, bool):
        return type(said) is type(found) and said == found
    return isinstance(said, str) and isinstance(found, str) and said == found


def _number_text(text: str) -> int | float | None:
    """The number `text` spells in JSON's grammar, exactly (no blank, no sign `+`, no leading
    zero, no `Infinity` or `NaN`; an integer read whole, not as a float); None for any other
    text."""
    found = _JSON_NUMBER.fullmatch(text)
    if found is None:
        return None
    return int(text) if found.group(1) is None else float(text)


# JSON's number grammar (RFC 8259, section 6); linear, no backtracking across its groups
_JSON_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)((?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)")


def error_text(name: str, outcome: Degraded[Any]) -> str:
    """The error result's text: a line saying what failed (the tool's output, or a contract
    whose code raised: a bug in the check, never blamed on the output), then the diagnostics
    (bounded)."""
    broken_check = outcome.reason is Reason.CONTRACT_ERROR
    lines = [(_CHECK_HEADER if broken_check else _HEADER).format(name=name)]
    lines.extend(render_diagnostics(outcome.errors))
    if not outcome.errors:
        lines.append(f"1. {outcome.reason}")
    return "\n".join(lines)
