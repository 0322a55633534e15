"""One structured response per model turn, for `healjson.langchain`.

A turn that calls the structured-response tools (a `ToolStrategy`'s, each member of a union its
own tool) more than once gives one answer when every call gives the same one (the same member,
the same arguments: L1 keeps it, with a flag of its own), and several otherwise (different
members, or one member with different arguments): never a pick among them, the turn is asked
again (as LangChain's own "multiple structured responses" error does). The step notes the
turn's answers as it reads it (`note_answers`); `one_answer`, a rule every structured
response's healer holds, breaks on a turn of several, so the run asks again with its
prescription, whatever value L1 could have kept.

Needs nothing of LangChain; imported by `healjson.langchain` only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Any

from healjson import Violation, contract

__all__ = ["distinct_answers", "note_answers", "one_answer"]

_SEVERAL: ContextVar[tuple[str, ...] | None] = ContextVar("healjson_lc_answers", default=None)


def _answer(call: Mapping[str, Any]) -> tuple[str, str]:
    """A call's answer: its tool's name and its arguments as canonical JSON (the text as sent
    when it is no JSON)."""
    args = call.get("args")
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return str(call.get("name") or ""), args.strip()
    text = json.dumps(args if args is not None else {}, sort_keys=True, ensure_ascii=False)
    return str(call.get("name") or ""), text


def distinct_answers(calls: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The different answers of a turn's structured calls, in order."""
    return list(dict.fromkeys(map(_answer, calls)))


def note_answers(calls: Iterable[Mapping[str, Any]]) -> None:
    """Note the structured calls of the turn the run judges next (every member's)."""
    found = distinct_answers(calls)
    _SEVERAL.set(tuple(name for name, _ in found) if len(found) > 1 else None)


@contract(name="one_structured_response")
def one_answer(value: Any, ctx: Any) -> Violation | None:
    """One structured response per turn: a turn of several different answers is asked again."""
    names = _SEVERAL.get()
    if names is None:
        return None
    called = ", ".join(f"`{name}`" for name in names)
    return Violation(
        f"must be one structured response; the turn gave {len(names)} different answers "
        f"(calls to {called})",
        prescription="Call exactly one of the response tools, once, with the one answer.",
    )
