"""`HealPolicy`: how much healing a call may spend, and what to do in the special rounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["HealPolicy"]

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
      with `max_tokens` multiplied by `max_tokens_growth` (capped at `max_tokens_cap`); `both`
      does both; `degrade` stops with `token_truncated` at once.
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
      It bounds a provider that trickles its reply, which per-read SDK timeouts do not.
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

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            raise ValueError(
                f"HealPolicy.max_attempts must be an int >= 1 (calls in total), "
                f"got {self.max_attempts!r}"
            )
        if self.token_budget is not None and self.token_budget < 1:
            raise ValueError(
                f"HealPolicy.token_budget must be >= 1 or None, got {self.token_budget!r}"
            )
        if self.cost_budget is not None and not (
            isinstance(self.cost_budget, int | float) and self.cost_budget > 0
        ):
            raise ValueError(
                f"HealPolicy.cost_budget must be a number of USD > 0 or None, got "
                f"{self.cost_budget!r}"
            )
        if self.on_truncation not in ("compress", "raise_max_tokens", "both", "degrade"):
            raise ValueError(
                "HealPolicy.on_truncation must be 'compress', 'raise_max_tokens', 'both' or "
                f"'degrade', got {self.on_truncation!r}"
            )
        if self.on_refusal not in ("degrade", "retry"):
            raise ValueError(
                f"HealPolicy.on_refusal must be 'degrade' or 'retry', got {self.on_refusal!r}"
            )
        if self.history not in ("compact", "none"):
            raise ValueError(
                f"HealPolicy.history must be 'compact' or 'none', got {self.history!r}"
            )
        if self.max_tokens_growth < 1:
            raise ValueError(
                f"HealPolicy.max_tokens_growth must be >= 1, got {self.max_tokens_growth!r}"
            )
        if self.on_ambiguity not in ("reask", "first", "last"):
            raise ValueError(
                "HealPolicy.on_ambiguity must be 'reask', 'first' or 'last', "
                f"got {self.on_ambiguity!r}"
            )
        for name in ("deadline_s", "contract_timeout_s"):
            limit = getattr(self, name)
            if limit is not None and not (isinstance(limit, int | float) and limit > 0):
                raise ValueError(f"HealPolicy.{name} must be a number of seconds > 0 or None")
        errors = self.provider_errors
        if not isinstance(errors, tuple) or not all(
            isinstance(kind, type) and issubclass(kind, BaseException) for kind in errors
        ):
            raise ValueError(
                f"HealPolicy.provider_errors must be a tuple of exception types, got {errors!r}"
            )
        if self.example_from_repair < 1:
            raise ValueError(
                f"HealPolicy.example_from_repair must be >= 1, got {self.example_from_repair!r}"
            )
