"""A seeded, framework-neutral agent workload: scripted runs of tool calls and a final output,
some of them malformed the way models break JSON, each with its ticket (the intended value).

Not a benchmark by itself: the agent benchmarks (`bench_agents_*.py`) drive a framework alone
and the framework with healjson through the same runs against `healjson.testing.ScriptedServer`.

A run is a list of turns: 3 to 6 tool calls (one per model reply) of the tools in `TOOLS`, then
the final output (`Report`). Each turn is sent first as `Turn.text` (clean, or broken by its
`malformation`) and, if the framework asks again, as `Turn.reask` (the clean text, always). The
malformations (`MALFORMATIONS`), drawn with `WEIGHTS` from a seeded `random.Random`:

- `clean`: the ticket as JSON;
- `trailing_comma`: `{..., "limit": 5,}`;
- `fenced`: the JSON in a ```json fence;
- `single_quotes`: `{'query': 'x', 'limit': 5}`;
- `quoted_int`: one integer sent as a string (`"limit": "5"`);
- `key_case`: one (required) key capitalised (`"Query"`);
- `cut_string`: cut inside a string value, `finish_reason` `length` (nothing can restore it:
  a re-ask is the right answer);
- `contract_breach`: valid JSON whose value breaks the tool's own rule (`RULES`), which the
  framework or healjson must turn into a re-ask (tool calls only).

`ChatResponder` answers one run on the OpenAI chat route (a callable script item of a
`ScriptedServer(repeat=True)`): it serves the turns in order, each tool call with a fresh id,
and decides from the request itself whether the last turn succeeded (the tool's result for that
call id starts with `OK`, what `tool_result` returns) or is being asked again (any other answer
to that id: a retry prompt, an error). With `repeats=N` it plays a stubborn model, answering a
re-ask with the same malformed text N more times before the clean one. Usage is explicit on
every reply: prompt tokens = the request's `messages` and `tools` as JSON / 4, completion
tokens = the text sent / 4, so every framework is billed the same way for what it sent.

`check_run` compares what the tools executed and the output the run returned with the tickets:
the number of wrong values (the target: 0).
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from pydantic import BaseModel

from healjson.testing import ScriptedReply

__all__ = [
    "MALFORMATIONS",
    "OK",
    "OUTPUT_NAME",
    "RULES",
    "TOOLS",
    "WEIGHTS",
    "BookArgs",
    "ChatResponder",
    "Report",
    "Run",
    "SearchArgs",
    "Turn",
    "WeatherArgs",
    "breach",
    "check_run",
    "generate",
    "summary",
    "tool_result",
]


class SearchArgs(BaseModel):
    query: str
    limit: int


class WeatherArgs(BaseModel):
    city: str
    days: int


class BookArgs(BaseModel):
    guest: str
    nights: int
    room: Literal["single", "double", "suite"]


class Report(BaseModel):
    """The run's final output."""

    summary: str
    actions: int


TOOLS: Final[dict[str, type[BaseModel]]] = {
    "search": SearchArgs,
    "get_weather": WeatherArgs,
    "book_room": BookArgs,
}
TOOL_DESCRIPTIONS: Final[dict[str, str]] = {
    "search": "Search the catalogue.",
    "get_weather": "The forecast for a city.",
    "book_room": "Book a hotel room.",
}
OUTPUT_NAME: Final = "report"  # a turn's `name` for the final output

# each tool's own rule (a business rule the schema does not state): (field, low, high)
RULES: Final[dict[str, tuple[str, int, int]]] = {
    "search": ("limit", 1, 50),
    "get_weather": ("days", 1, 14),
    "book_room": ("nights", 1, 30),
}

MALFORMATIONS: Final = (
    "clean",
    "trailing_comma",
    "fenced",
    "single_quotes",
    "quoted_int",
    "key_case",
    "cut_string",
    "contract_breach",
)
WEIGHTS: Final = (44, 8, 8, 8, 8, 8, 8, 8)  # percent, in the order of MALFORMATIONS
OK: Final = "OK "  # how a tool's result starts (`tool_result`)

_WORDS = ("red", "shoes", "lamp", "oak", "table", "quiet", "hotel", "river", "map", "tent")
_CITIES = ("Lisbon", "Oslo", "Kyoto", "Lima", "Cairo", "Quito", "Perth", "Porto")
_GUESTS = ("Ana Silva", "Bo Chen", "Cy Diaz", "Dee Park", "Eli Roth", "Fay Moss")
_ROOMS = ("single", "double", "suite")

Kind = Literal["tool", "output"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One model reply of a run: a tool call, or the final output (`kind="output"`, `name`
    `OUTPUT_NAME`). `ticket` is the intended value (the arguments, or the output's fields);
    `text` is what the model sends first (with `finish_reason`), `reask` what it sends when
    asked again (the ticket as JSON)."""

    kind: Kind
    name: str
    ticket: dict[str, Any]
    malformation: str
    text: str
    finish_reason: str
    reask: str


@dataclass(frozen=True, slots=True)
class Run:
    """One agent run: its index, the user's prompt and its turns (tool calls, then the output)."""

    index: int
    prompt: str
    turns: tuple[Turn, ...]

    @property
    def tool_turns(self) -> tuple[Turn, ...]:
        return tuple(turn for turn in self.turns if turn.kind == "tool")

    @property
    def output(self) -> Turn:
        return self.turns[-1]


def breach(tool: str, args: Mapping[str, Any]) -> str | None:
    """The tool's rule broken by `args`, as a sentence, or None (no rule, or it holds)."""
    rule = RULES.get(tool)
    if rule is None:
        return None
    name, low, high = rule
    value = args.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return None
    return f"{name} must be between {low} and {high}, got {value!r}"


def tool_result(tool: str, args: Mapping[str, Any]) -> str:
    """What a tool of the workload returns: `OK`, its name and its arguments as JSON."""
    return f"{OK}{tool} {json.dumps(dict(args), sort_keys=True)}"


# ---------------------------------------------------------------------------------------------
# Generating runs
# ---------------------------------------------------------------------------------------------


def generate(
    runs: int = 200,
    seed: int = 25,
    *,
    weights: Sequence[int] = WEIGHTS,
    min_calls: int = 3,
    max_calls: int = 6,
) -> list[Run]:
    """`runs` runs, the same for the same arguments (one `random.Random(seed)`)."""
    if len(weights) != len(MALFORMATIONS):
        raise ValueError(f"weights: one per malformation ({len(MALFORMATIONS)}), got {weights}")
    rng = random.Random(seed)
    out = []
    for index in range(runs):
        turns = []
        for _ in range(rng.randint(min_calls, max_calls)):
            tool = rng.choice(tuple(TOOLS))
            ticket = _ticket(rng, tool)
            how = rng.choices(MALFORMATIONS, weights)[0]
            turns.append(_turn("tool", tool, ticket, how, rng))
        output = {
            "summary": " ".join(rng.sample(_WORDS, 3)),
            "actions": len(turns),
        }
        how = rng.choices(MALFORMATIONS[:-1], weights[:-1])[0]  # no rule on the output
        turns.append(_turn("output", OUTPUT_NAME, output, how, rng))
        prompt = f"Run {index}: plan my trip, {len(turns) - 1} steps."
        out.append(Run(index, prompt, tuple(turns)))
    return out


def _ticket(rng: random.Random, tool: str) -> dict[str, Any]:
    if tool == "search":
        return {"query": " ".join(rng.sample(_WORDS, 2)), "limit": rng.randint(1, 50)}
    if tool == "get_weather":
        return {"city": rng.choice(_CITIES), "days": rng.randint(1, 14)}
    return {
        "guest": rng.choice(_GUESTS),
        "nights": rng.randint(1, 30),
        "room": rng.choice(_ROOMS),
    }


def _turn(kind: Kind, name: str, ticket: dict[str, Any], how: str, rng: random.Random) -> Turn:
    clean = json.dumps(ticket)
    finish = "stop" if kind == "output" else "tool_calls"
    text = _render(name, ticket, how, rng)
    if how == "cut_string":
        finish = "length"
    return Turn(kind, name, ticket, how, text, finish, clean)


def _render(name: str, ticket: dict[str, Any], how: str, rng: random.Random) -> str:
    keys = list(ticket)
    if how == "clean":
        return json.dumps(ticket)
    if how == "trailing_comma":
        return json.dumps(ticket)[:-1] + ",}"
    if how == "fenced":
        return "```json\n" + json.dumps(ticket, indent=2) + "\n```"
    if how == "single_quotes":
        # the generated strings hold no quote of either kind
        return json.dumps(ticket).replace('"', "'")
    if how == "quoted_int":
        ints = [key for key in keys if isinstance(ticket[key], int)]
        key = rng.choice(ints)
        return json.dumps({**ticket, key: str(ticket[key])})
    if how == "key_case":
        key = rng.choice(keys)  # every field of every model is required
        return json.dumps({(k.capitalize() if k == key else k): v for k, v in ticket.items()})
    if how == "cut_string":
        strings = [key for key in keys if isinstance(ticket[key], str)]
        key = rng.choice(strings)
        whole = json.dumps(ticket)
        start = whole.index(json.dumps(key) + ": ") + len(json.dumps(key)) + 3
        return whole[: start + max(1, len(ticket[key]) // 2)]
    if how == "contract_breach":
        field_name, low, high = RULES[name]
        bad = rng.choice((low - 1, high * 10))
        return json.dumps({**ticket, field_name: bad})
    raise ValueError(f"unknown malformation {how!r}")


# ---------------------------------------------------------------------------------------------
# Serving a run on the OpenAI chat route
# ---------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Served:
    turn: int
    call_id: str | None
    reask: bool
    prompt_tokens: int
    completion_tokens: int


@dataclass
class ChatResponder:
    """Answers one run's model requests on the chat route (use it as the callable item of a
    `ScriptedServer(repeat=True)`, or swap runs with `set_run`). `output_tool`: the final
    output is sent as a call of this tool (a framework's output tool, e.g. pydantic-ai's
    `final_result`); None: as the reply's content (JSON text). `repeats`: a stubborn model,
    which answers a re-ask with its first (malformed) text this many more times before the
    clean one (0: the clean one at once)."""

    run: Run
    output_tool: str | None = None
    repeats: int = 0
    served: list[_Served] = field(default_factory=list)
    _turn: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def set_run(self, run: Run) -> None:
        """Start serving `run` from its first turn (the log is cleared)."""
        with self._lock:
            self.run, self._turn, self.served = run, 0, []

    @property
    def calls(self) -> int:
        """Model requests answered for this run."""
        return len(self.served)

    @property
    def tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens billed for this run."""
        return (
            sum(s.prompt_tokens for s in self.served),
            sum(s.completion_tokens for s in self.served),
        )

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        with self._lock:
            reask = False
            if self.served:
                last = self.served[-1]
                turns = self.run.turns
                if last.call_id is not None and _succeeded(body, last.call_id):
                    self._turn = min(last.turn + 1, len(turns) - 1)
                else:
                    reask = True  # anything but the tool's result: the same turn asked again
            turn = self.run.turns[self._turn]
            attempt = sum(1 for s in self.served if s.turn == self._turn)
            clean = reask and attempt > self.repeats  # a stubborn model repeats itself first
            text = turn.reask if clean else turn.text
            finish = "stop" if turn.kind == "output" else "tool_calls"
            finish = finish if clean else turn.finish_reason
            prompt = len(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", [])))
            usage = {"prompt_tokens": prompt // 4, "completion_tokens": len(text) // 4}
            as_tool = turn.kind == "tool" or self.output_tool is not None
            call_id = f"call_{self.run.index}_{self._turn}_{attempt}" if as_tool else None
            self.served.append(_Served(self._turn, call_id, reask, *usage.values()))
            if call_id is None:
                return ScriptedReply(content=text, finish_reason=finish, usage=usage)
            name = turn.name if turn.kind == "tool" else self.output_tool
            function = {"name": name, "arguments": text}
            call = {"id": call_id, "type": "function", "function": function}
            return ScriptedReply(tool_calls=[call], finish_reason=finish, usage=usage)


def _succeeded(body: Mapping[str, Any], call_id: str) -> bool:
    for message in body.get("messages") or ():
        if isinstance(message, dict) and message.get("tool_call_id") == call_id:
            content = message.get("content")
            if isinstance(content, list):  # text parts
                content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return isinstance(content, str) and content.startswith(OK)
    return False


# ---------------------------------------------------------------------------------------------
# Checking a run against its tickets
# ---------------------------------------------------------------------------------------------


def check_run(
    run: Run,
    executed: Sequence[tuple[str, Mapping[str, Any]]],
    output: Mapping[str, Any] | None,
) -> int:
    """Wrong values in a run: each tool execution whose (name, arguments) is not the next
    ticket's, an execution beyond the tickets, and an `output` (None: the run returned none)
    that is not the output ticket. A run that stopped early is not wrong, only incomplete."""
    tickets = [(turn.name, turn.ticket) for turn in run.tool_turns]
    wrong = sum(
        1
        for i, (name, args) in enumerate(executed)
        if i >= len(tickets) or (name, dict(args)) != tickets[i]
    )
    if output is not None and dict(output) != run.output.ticket:
        wrong += 1
    return wrong


def summary(runs: Sequence[Run]) -> dict[str, int]:
    """How many turns of each malformation the runs hold (tool calls and outputs together)."""
    counts = dict.fromkeys(MALFORMATIONS, 0)
    for run in runs:
        for turn in run.turns:
            counts[turn.malformation] += 1
    return counts


def arm_table(arms: Sequence[Any], runs: int, alone: str, healed: str) -> list[str]:
    """The per-arm table both agent benchmarks print: arm `A` is the framework alone (`alone`),
    the other with healjson (`healed`); each arm counts calls, tokens, failures, wrong values."""
    from _machine import table  # the benchmarks' own table renderer (beside this module)

    return table(
        [
            "arm",
            "runs",
            "failed",
            "model calls",
            "calls / run",
            "prompt tok",
            "completion tok",
            "wrong values",
            "wall s (indicative)",
        ],
        [
            [
                alone if arm.name == "A" else healed,
                str(runs),
                str(arm.failed) + (f" ({dict(arm.failures)})" if arm.failures else ""),
                f"{arm.calls:,}",
                f"{arm.calls / runs:.2f}",
                f"{arm.prompt_tokens:,}",
                f"{arm.completion_tokens:,}",
                str(arm.wrong),
                f"{arm.wall_s:.1f}",
            ]
            for arm in arms
        ],
    )
