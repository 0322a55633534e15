"""Read a `healjson eval` scenario file (JSON Lines) into `EvalScenario`s."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from healjson._batch.request import Unusable, read_request

from .loading import relative_spec
from .scenarios import EvalScenario, ScenarioError
from .text_in import NotUtf8, decode_utf8

__all__ = ["load_scenarios"]

_TEXT, _NUMBER = "a string or null", "a number >= 0"
_REPLY_FIELDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    # key: (what it must be, in words; whether a value is that)
    "content": (_TEXT, lambda v: v is None or isinstance(v, str)),
    "finish_reason": (_TEXT, lambda v: v is None or isinstance(v, str)),
    "refusal": (_TEXT, lambda v: v is None or isinstance(v, str)),
    "tool_calls": (
        "a list of objects or null",
        lambda v: v is None or (isinstance(v, list) and all(isinstance(c, dict) for c in v)),
    ),
    "status": (
        "an HTTP status code (an integer 100-599)",
        lambda v: type(v) is int and 100 <= v <= 599,
    ),
    "body": (_TEXT, lambda v: v is None or isinstance(v, str)),
    "delay_s": (
        _NUMBER,
        lambda v: type(v) in (int, float) and 0 <= v < math.inf,
    ),
}
_REPLY_KEYS = set(_REPLY_FIELDS)


def load_scenarios(path: Path) -> list[EvalScenario]:
    """Read a scenario file: one JSON object per line.

    Keys: `id` (default: the line number), `messages` (chat messages) or `prompt` (one user
    turn), optional `replies` (what the scripted model says, in order: strings, or objects with
    `content`, `finish_reason`, `refusal`, `status`, ...), `expected` (the right value),
    `kind`, and `contracts` / `response_model` for a row whose pack or target differs from the
    run's (a relative `.py` path is taken relative to the scenario file). Blank lines and lines
    starting with `//` are skipped. Raises `ScenarioError` naming the line of a bad row (JSON
    nested too deeply included), or the first bad byte of a file that is not UTF-8.
    """
    scenarios: list[EvalScenario] = []
    seen: set[str] = set()
    try:
        text = decode_utf8(path.read_bytes(), str(path))
    except OSError as exc:
        raise ScenarioError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except NotUtf8 as exc:
        raise ScenarioError(str(exc)) from exc
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except RecursionError as exc:
            raise ScenarioError(f"{where}: JSON nested too deeply to read") from exc
        except ValueError as exc:
            raise ScenarioError(f"{where}: not a JSON object ({exc})") from exc
        if not isinstance(row, dict):
            raise ScenarioError(f"{where}: a row must be a JSON object")
        scenario = _scenario(row, where, path.parent, number)
        if scenario.id in seen:
            raise ScenarioError(f"{where}: id {scenario.id!r} appears twice")
        seen.add(scenario.id)
        scenarios.append(scenario)
    if not scenarios:
        raise ScenarioError(f"{path}: no scenarios")
    return scenarios


def _reply_problem(reply: dict[str, Any]) -> str | None:
    """What is wrong with a reply object, after `replies[i]`: a field of the wrong type
    (`.content must be a string or null, got 5`), or a value the scripted reply refuses (its
    tool calls' shape...); None when it can be served."""
    from healjson.testing import ScriptedReply

    for key, value in reply.items():
        expected, fits = _REPLY_FIELDS[key]
        if not fits(value):
            return f".{key} must be {expected}, got {_shown(value)}"
    try:
        ScriptedReply(**reply)
    except (TypeError, ValueError) as exc:
        return f": {exc}"
    return None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _scenario(row: dict[str, Any], where: str, folder: Path, number: int) -> EvalScenario:
    request = read_request({name: row.get(name) for name in ("messages", "prompt", "system")})
    if isinstance(request, Unusable):
        raise ScenarioError(
            f"{where}: needs `messages` (chat messages) or `prompt` (a string): {request.problem}"
        )
    replies = row.get("replies", [])
    if not isinstance(replies, list):
        raise ScenarioError(f"{where}: `replies` must be a list")
    scenario_id = str(row.get("id", number))
    for index, reply in enumerate(replies):
        if isinstance(reply, dict):
            bad = set(reply) - _REPLY_KEYS
            if bad:
                raise ScenarioError(f"{where}: unknown reply key(s) {', '.join(sorted(bad))}")
            problem = _reply_problem(reply)
            if problem is not None:
                raise ScenarioError(f"{where}: scenario {scenario_id!r}: replies[{index}]{problem}")
        elif not isinstance(reply, str):
            raise ScenarioError(f"{where}: a reply is a string or an object")
    return EvalScenario(
        id=scenario_id,
        messages=request.messages,
        replies=tuple(replies),
        expected=row.get("expected"),
        has_expected="expected" in row,
        kind=str(row.get("kind", "")),
        locally_fixable=bool(row.get("locally_fixable", False)),
        contracts=relative_spec(row.get("contracts"), folder),
        response_model=relative_spec(row.get("response_model"), folder),
    )
