"""Read a `healjson eval` scenario file (JSON Lines) into `EvalScenario`s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from healjson._batch.request import Unusable, read_request

from .loading import relative_spec
from .scenarios import EvalScenario, ScenarioError

__all__ = ["load_scenarios"]

_REPLY_KEYS = {"content", "finish_reason", "refusal", "tool_calls", "status", "body", "delay_s"}


def load_scenarios(path: Path) -> list[EvalScenario]:
    """Read a scenario file: one JSON object per line.

    Keys: `id` (default: the line number), `messages` (chat messages) or `prompt` (one user
    turn), optional `replies` (what the scripted model says, in order: strings, or objects with
    `content`, `finish_reason`, `refusal`, `status`, ...), `expected` (the right value),
    `kind`, and `contracts` / `response_model` for a row whose pack or target differs from the
    run's (a relative `.py` path is taken relative to the scenario file). Blank lines and lines
    starting with `//` are skipped. Raises `ScenarioError` naming the line of a bad row.
    """
    scenarios: list[EvalScenario] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
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


def _scenario(row: dict[str, Any], where: str, folder: Path, number: int) -> EvalScenario:
    request = read_request({name: row.get(name) for name in ("messages", "prompt", "system")})
    if isinstance(request, Unusable):
        raise ScenarioError(
            f"{where}: needs `messages` (chat messages) or `prompt` (a string): {request.problem}"
        )
    replies = row.get("replies", [])
    if not isinstance(replies, list):
        raise ScenarioError(f"{where}: `replies` must be a list")
    for reply in replies:
        if isinstance(reply, dict):
            bad = set(reply) - _REPLY_KEYS
            if bad:
                raise ScenarioError(f"{where}: unknown reply key(s) {', '.join(sorted(bad))}")
        elif not isinstance(reply, str):
            raise ScenarioError(f"{where}: a reply is a string or an object")
    return EvalScenario(
        id=str(row.get("id", number)),
        messages=request.messages,
        replies=tuple(replies),
        expected=row.get("expected"),
        has_expected="expected" in row,
        kind=str(row.get("kind", "")),
        locally_fixable=bool(row.get("locally_fixable", False)),
        contracts=relative_spec(row.get("contracts"), folder),
        response_model=relative_spec(row.get("response_model"), folder),
    )
