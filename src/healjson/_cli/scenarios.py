"""The eval's scenarios: `EvalScenario`, and the malformation set derived from a good answer.

A scenario is what a model says, in order, to one request: a malformed (or wrong) first reply
followed by the clean answer a model re-asked usually gives. `malformations` derives the whole
set from one valid value, checking against the target type that every derived reply really is
what its class claims (a "schema violation" fails the schema, a "valid" reply validates), so a
scenario file can never quietly test the wrong thing.

The same set drives `healjson eval`'s offline default and the calls benchmark; a scenario file
is read by `scenario_file.load_scenarios`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from healjson._core.target.target import target_for

__all__ = [
    "CLASSES",
    "EvalScenario",
    "ScenarioError",
    "ScriptedAnswer",
    "builtin_scenarios",
    "json_like",
    "malformations",
]

ScriptedAnswer = str | Mapping[str, Any]
"""One scripted reply: its text, or the fields of a `healjson.testing.ScriptedReply`."""

CLASSES = (
    "fenced",
    "prose",
    "trailing_comma",
    "single_quotes",
    "python_literals",
    "quoted_number",
    "two_candidates",
    "truncated",
    "schema_violation",
    "contract_violation",
    "valid",
)
"""The malformation classes, in the order `malformations` yields them."""


class ScenarioError(ValueError):
    """A scenario file or configuration that cannot be used (a usage error, with its line)."""


@dataclass(frozen=True, slots=True)
class EvalScenario:
    """One scripted request: the messages, the model's replies in order, the expected value.

    `kind` is the malformation class; `locally_fixable` says the first reply already holds the
    expected value in a malformed form (a healer that fixes it locally needs one call).
    `contracts` / `response_model` name the pack and target for rows of a scenario file that
    differ from the run's defaults.
    """

    id: str
    messages: tuple[Mapping[str, Any], ...]
    replies: tuple[ScriptedAnswer, ...] = ()
    expected: Any = None
    has_expected: bool = False
    kind: str = ""
    locally_fixable: bool = False
    contracts: str | None = None
    response_model: str | None = None

    def script(self, calls: int) -> list[ScriptedAnswer]:
        """The replies, padded with the last one up to `calls` (so no contender runs out)."""
        replies = list(self.replies)
        if not replies:
            return []
        return replies + [replies[-1]] * max(0, calls - len(replies))

    def to_dict(self) -> dict[str, Any]:
        """The scenario-file row for this scenario."""
        row: dict[str, Any] = {"id": self.id, "kind": self.kind, "messages": list(self.messages)}
        if self.contracts is not None:
            row["contracts"] = self.contracts
        if self.response_model is not None:
            row["response_model"] = self.response_model
        row["replies"] = [r if isinstance(r, str) else dict(r) for r in self.replies]
        if self.has_expected:
            row["expected"] = self.expected
        if self.locally_fixable:
            row["locally_fixable"] = True
        return row


# -- JSON-like text -------------------------------------------------------------------------------


def json_like(
    value: Any, *, quote: str = '"', literals: str = "json", indent: int | None = None
) -> str:
    """JSON-like text for `value` with a chosen string quote and literal spelling.

    `quote="'"` writes single-quoted keys and strings; `literals="python"` writes
    `True`/`False`/`None`. With the defaults the result is `json.dumps`-compatible JSON.
    """
    words = (
        {True: "True", False: "False", None: "None"}
        if literals == "python"
        else {True: "true", False: "false", None: "null"}
    )

    def string(text: str) -> str:
        if quote == '"':
            return json.dumps(text, ensure_ascii=False)
        inner = json.dumps(text, ensure_ascii=False)[1:-1].replace('\\"', '"')
        return "'" + inner.replace("'", "\\'") + "'"

    def go(node: Any, depth: int) -> str:
        if node is None or isinstance(node, bool):
            return words[node]
        if isinstance(node, int | float):
            if isinstance(node, float) and not math.isfinite(node):
                raise ValueError(f"cannot render {node!r} as JSON")
            return json.dumps(node)
        if isinstance(node, str):
            return string(node)
        pad = "" if indent is None else "\n" + " " * (indent * (depth + 1))
        end = "" if indent is None else "\n" + " " * (indent * depth)
        sep = ", " if indent is None else ","
        if isinstance(node, Mapping):
            if not node:
                return "{}"
            items = [f"{pad}{string(str(k))}: {go(v, depth + 1)}" for k, v in node.items()]
            return "{" + sep.join(items) + end + "}"
        if isinstance(node, list | tuple):
            if not node:
                return "[]"
            return "[" + sep.join(f"{pad}{go(v, depth + 1)}" for v in node) + end + "]"
        raise TypeError(f"cannot render {type(node).__name__} as JSON")

    return go(value, 0)


# -- the classes ----------------------------------------------------------------------------------


def _first_number_path(node: Any) -> list[Any] | None:
    """The path of the first non-boolean number in `node` (depth first), or None."""
    if isinstance(node, Mapping):
        items: Iterator[tuple[Any, Any]] = iter(node.items())
    elif isinstance(node, list):
        items = iter(enumerate(node))
    else:
        return None
    for key, child in items:
        if isinstance(child, int | float) and not isinstance(child, bool):
            return [key]
        found = _first_number_path(child)
        if found is not None:
            return [key, *found]
    return None


def _with_text_number(data: Any, path: Sequence[Any]) -> Any:
    copy = json.loads(json.dumps(data))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = str(node[path[-1]])
    return copy


def _without_first_key(data: Any) -> Any:
    if not isinstance(data, Mapping) or not data:
        return None
    first = next(iter(data))
    return {k: v for k, v in data.items() if k != first}


def malformations(
    good: Any,
    target: Any,
    *,
    violation: Any = None,
    contracts: Sequence[Any] = (),
    prefix: str = "",
    messages: Sequence[Mapping[str, Any]] = (),
    pack: str | None = None,
) -> list[EvalScenario]:
    """One scenario per applicable malformation class, derived from the valid value `good`.

    `target` is the type the answers must validate against; `violation` a value that passes the
    schema but breaks one of `contracts` (the `contract_violation` class is left out without
    it). Classes that do not apply to `good` (no number to quote, not an object) are left out.
    Raises `ValueError` when `good` is not valid, or a derived reply is not what its class says.
    """
    from healjson._core.run.healer import validate

    adapter = target_for(target)
    if hasattr(good, "model_dump"):
        good = good.model_dump(mode="json")
    expected = json.loads(json.dumps(good))  # JSON data as the model would write it
    checked = validate(json.dumps(expected), target, contracts=contracts, context=list(messages))
    if not checked.ok:
        raise ValueError(f"the good value does not pass the schema and contracts: {checked}")
    compact = json.dumps(expected, ensure_ascii=False)

    def scenario(kind: str, replies: Sequence[ScriptedAnswer], fixable: bool) -> EvalScenario:
        return EvalScenario(
            id=f"{prefix}{kind}",
            messages=tuple(messages),
            replies=tuple(replies),
            expected=expected,
            has_expected=True,
            kind=kind,
            locally_fixable=fixable,
            contracts=pack,
        )

    out: list[EvalScenario] = []

    def malformed(kind: str, reply: str) -> None:
        """A locally fixable class, kept only if its reply is really not strict JSON."""
        if not _strict_json(reply):
            out.append(scenario(kind, [reply, compact], True))

    # A bare scalar in prose, quoted or cut is a different answer, not a malformed one
    # ("'ok'" is a string with quotes in it, "12" of "123" another number): those classes
    # apply to objects and arrays only.
    container = isinstance(expected, dict | list)
    malformed("fenced", f"```json\n{json.dumps(expected, indent=2, ensure_ascii=False)}\n```")
    if container:
        malformed("prose", f"Sure! Here is the JSON:\n\n{compact}\n\nAnything else I can do?")
        malformed("trailing_comma", compact[:-1] + "," + compact[-1])
        malformed("single_quotes", json_like(expected, quote="'"))
        malformed("python_literals", json_like(expected, literals="python"))
    number = _first_number_path(expected)
    if number is not None:
        quoted = json.dumps(_with_text_number(expected, number), ensure_ascii=False)
        out.append(scenario("quoted_number", [quoted, compact], True))
    broken = _without_first_key(expected)
    if broken is not None and not _validates(adapter, broken):
        draft = json.dumps(broken, ensure_ascii=False)
        out.append(
            scenario("two_candidates", [f"Draft:\n{draft}\n\nCorrected:\n{compact}", compact], True)
        )
    if container:
        cut = {"content": compact[: len(compact) // 2], "finish_reason": "length"}
        out.append(scenario("truncated", [cut, compact], False))
    if broken is not None and not _validates(adapter, broken):
        out.append(
            scenario("schema_violation", [json.dumps(broken, ensure_ascii=False), compact], False)
        )
    if violation is not None:
        bad = json.dumps(violation, ensure_ascii=False)
        verdict = validate(bad, target, contracts=contracts, context=list(messages))
        if verdict.ok or not _validates(adapter, violation):
            raise ValueError("the violation must pass the schema and break a contract")
        out.append(scenario("contract_violation", [bad, compact], False))
    out.append(scenario("valid", [compact], False))
    return out


def _strict_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _validates(adapter: Any, data: Any) -> bool:
    try:
        adapter.adapter.validate_python(data)
    except ValidationError:
        return False
    return True


def builtin_scenarios() -> tuple[list[EvalScenario], Any, tuple[Any, ...]]:
    """The offline default of `healjson eval`: every class on the demo's support ticket.

    Returns the scenarios, the target type and the contracts.
    """
    from .demo_runs import GOOD, PROMPT, SupportTicket, urgent_tickets_explain

    violation = {**json.loads(GOOD), "summary": "Ship it now"}
    scenarios = malformations(
        json.loads(GOOD),
        SupportTicket,
        violation=violation,
        contracts=(urgent_tickets_explain,),
        prefix="ticket/",
        messages=PROMPT,
    )
    return scenarios, SupportTicket, (urgent_tickets_explain,)
