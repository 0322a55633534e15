"""`HealPolicy`: how much healing a call may spend, and what to do in the special rounds."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, NoReturn

from healjson._core.diagnostic import safe_repr

__all__ = ["HealPolicy", "time_left"]

TruncationMode = Literal["compress", "raise_max_tokens", "both", "degrade"]
RefusalMode = Literal["degrade", "retry"]
HistoryMode = Literal["compact", "none"]
AmbiguityMode = Literal["reask", "first", "last"]


@dataclass(frozen=True, slots=True)
class HealPolicy:
    """Limits and strategies for one healing run. Invalid settings raise at construction.

    - `max_attempts`: model calls in total, the first included (the default 3: 1 + 2 repairs).
    - `token_budget`: stop with `budget_exceeded` before a call that would pass this many
      prompt + completion tokens in total (None: no limit). Unreported usage is estimated as
      characters / 4.
    - `cost_budget`: stop with `budget_exceeded` before a repair call once the run's cost in USD
      (`Usage.cost`) plus the next request's input would pass this (None: no limit). Needs
      known prices (the `prices` extra and a model genai-prices knows); while the cost cannot
      be known, this limit is not applied.
    - `on_truncation`: `compress` asks for a compact complete object; `raise_max_tokens` resends
      with `max_tokens` multiplied by `max_tokens_growth` (1 to 100; capped at
      `max_tokens_cap`); `both` does both; `degrade` stops with `token_truncated` at once.
    - `on_refusal`: `degrade` stops with `refusal`; `retry` re-asks like an invalid answer.
    - `escalate_model`: a stronger model for the final attempt (passed as the `model` param).
    - `history`: `compact` adds one line per earlier failed attempt to each repair prompt (stops
      the model oscillating between two wrong answers); `none` leaves it out.
    - `example_from_repair`: from which repair round on the golden example and the JSON schema
      are included (1 = every repair; the default 2 keeps the first repair short).
    - `on_ambiguity`: what a reply holding several *different* valid answers (an example, then
      the answer; a self-correction; two objects) gets. `reask` (the default) takes none of
      them and asks for exactly one; `last` or `first` takes that one (flag `ambiguous_choice`).
      Identical repeats are one answer under every mode.
    - `deadline_s`: wall-clock seconds for the whole run, every call and contract included.
      No call starts after it; a call still running at it is cancelled (async) or abandoned
      (sync: its worker thread finishes in the background); the run degrades with `timeout`.
      It bounds a provider that trickles its reply, which per-read SDK timeouts do not, and a
      stream whatever its wire does (a slow first byte, keep-alives or pings the SDK drops,
      silence after the answer): what had arrived is kept on the `Degraded`. A JSON stream
      whose finish reason had come before the deadline was whole: it is judged as ended there.
    - `contract_timeout_s`: seconds an async contract (or an async fallback factory) may run
      before it is cancelled and counted as a `contract_error`; a sync contract that returns
      later than this is a `contract_error` too (it cannot be interrupted while it runs).
    - `provider_errors`: exception types your model call raises for provider or transport
      failures, on top of those healjson recognises (any `OSError` or `TimeoutError`, and the
      exceptions of the provider SDKs and HTTP libraries): the run degrades on them. Any other
      exception from the call is a bug in your code and propagates unchanged.
    - `stream_abort`: on a streamed call, close the stream as soon as a complete part of the
      answer breaks a rule no later text can repair (in an answer that is one JSON value by
      construction: a closed field its own validation rejects beyond any alignment, a sync
      contract on declared fields that have all arrived; see `healjson._core.stream.judge`)
      and go straight to the repair, saving the rest of the answer's tokens (flag
      `stream_aborted`). False reads every stream to its end, and so does
      `on_truncation="degrade"` (a cut that may follow the breach would end the run instead).
    - `max_whitespace_run`, `max_repeats`: the degenerate-output guard. An answer that turns
      into more than `max_whitespace_run` whitespace characters in a row (default 2,048), or
      into one passage (of up to 512 characters) repeated more than `max_repeats` times in a
      row over at least 8,192 characters (default 64), is degenerate: a streamed one is cut
      off at once (the rest is not read), one read whole is judged so before it is parsed,
      and both are repaired like a cut answer (a compact rewrite; `Reason.DEGENERATE_OUTPUT`
      when the attempts run out). None turns a check off. Local models under a grammar loop
      on whitespace until the token limit; this saves those tokens and that time.
    """

    max_attempts: int = 3
    token_budget: int | None = None
    cost_budget: float | None = None
    on_truncation: TruncationMode = "compress"
    max_tokens_growth: float = 2.0
    max_tokens_cap: int | None = 16_384
    on_refusal: RefusalMode = "degrade"
    escalate_model: str | None = None
    history: HistoryMode = "compact"
    example_from_repair: int = 2
    on_ambiguity: AmbiguityMode = "reask"
    deadline_s: float | None = None
    contract_timeout_s: float | None = None
    provider_errors: tuple[type[BaseException], ...] = ()
    stream_abort: bool = True
    max_whitespace_run: int | None = 2_048
    max_repeats: int | None = 64

    def __post_init__(self) -> None:
        # every field checked, by kind: a bad value must fail here, naming the field and what
        # it accepts, not inside a run (a NaN growth on the first truncated reply) or never
        for name in ("max_attempts", "example_from_repair"):
            _count(name, getattr(self, name))
        for name in ("token_budget", "max_tokens_cap", "max_whitespace_run", "max_repeats"):
            if getattr(self, name) is not None:
                _count(name, getattr(self, name), " or None")
        _number("cost_budget", self.cost_budget, lambda x: x > 0, "a number of USD > 0 or None")
        _number(
            "max_tokens_growth",
            self.max_tokens_growth,
            lambda x: 1 <= x <= MAX_TOKENS_GROWTH,
            f"a number >= 1 and <= {MAX_TOKENS_GROWTH:g} (the factor a cut answer's token "
            "limit is multiplied by; cap the limit itself with max_tokens_cap)",
        )
        for name in ("deadline_s", "contract_timeout_s"):
            _number(name, getattr(self, name), lambda x: x > 0, "a number of seconds > 0 or None")
        for name, allowed in _CHOICES.items():
            _choice(name, getattr(self, name), allowed)
        model = self.escalate_model
        if model is not None and not (isinstance(model, str) and model):
            _bad("escalate_model", model, "a model name (a non-empty string) or None")
        if not isinstance(self.stream_abort, bool):
            _bad("stream_abort", self.stream_abort, "True or False")
        errors = self.provider_errors
        if not isinstance(errors, tuple) or not all(
            isinstance(kind, type) and issubclass(kind, BaseException) for kind in errors
        ):
            _bad("provider_errors", errors, "a tuple of exception types")


MAX_TOKENS_GROWTH: Final = 100.0
"""The largest `max_tokens_growth`: a limit grown further per repair says nothing more (and a
factor like 1e308 would overflow the limit it multiplies)."""

_CHOICES: dict[str, tuple[str, ...]] = {
    "on_truncation": ("compress", "raise_max_tokens", "both", "degrade"),
    "on_refusal": ("degrade", "retry"),
    "history": ("compact", "none"),
    "on_ambiguity": ("reask", "first", "last"),
}


def time_left(policy: HealPolicy, started: float) -> float | None:
    """Seconds before `policy`'s deadline for a run that began at `started` (a
    `time.monotonic()`); None: no deadline."""
    deadline = policy.deadline_s
    return None if deadline is None else deadline - (time.monotonic() - started)


def _bad(name: str, value: object, accepted: str) -> NoReturn:
    raise ValueError(f"HealPolicy.{name} must be {accepted}, got {safe_repr(value, 80)}")


def _count(name: str, value: object, more: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _bad(name, value, f"an int >= 1{_COUNTS.get(name, '')}{more}")


_COUNTS: dict[str, str] = {"max_attempts": " (calls in total)"}


def _number(name: str, value: object, ok: Callable[[float], bool], accepted: str) -> None:
    if value is None and accepted.endswith("or None"):
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not ok(value)
    ):
        _bad(name, value, f"a finite {accepted.removeprefix('a ')}")


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value not in allowed:
        _bad(name, value, " or ".join(", ".join(map(repr, allowed)).rsplit(", ", 1)))
