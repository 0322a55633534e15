"""L1 on the request side: ask for JSON in the strongest mode the endpoint supports.

The tiers are named in `healjson._providers.tiers`; how a request asks for each is its wire
format's (`healjson._providers`: `openai_chat.shape_request`, ...). What an adapter keeps is the
negotiation: an endpoint that rejects a tier is stepped down once (`FormatState`, to the tier
`WEAKER` names), and the wrapper remembers the tier that worked for the rest of its life — and
whether it already warned that the endpoint does not enforce the schema it was asked to.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from healjson._providers.tiers import MODES, NATIVE_MODES, WEAKER, JsonMode

__all__ = ["MODES", "NATIVE_MODES", "Enforcing", "FormatState", "JsonMode", "check_mode"]


@dataclass
class FormatState:
    """The tier a wrapped client currently uses (shared by its calls, thread-safe)."""

    mode: JsonMode = "json_schema"
    _lock: threading.Lock | None = None
    warned: bool = False
    """True once the client warned that its endpoint did not enforce a schema it was sent."""
    refused: set[JsonMode] = field(default_factory=set)
    """Tiers the endpoint refused when a call forced them (`json_mode=` on the call): the
    client's own tier is not moved for them, but a forced one's request was sent weaker."""

    def step_down(self, failed: JsonMode) -> JsonMode | None:
        """Move below `failed` (once per tier); None when there is nothing weaker."""
        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            lower = WEAKER[failed]
            if lower is None:
                return None
            if MODES.index(self.mode) <= MODES.index(failed):
                self.mode = lower
            return self.mode

    def warn_once(self) -> bool:
        """True the first time only (the caller warns then)."""
        if self.warned:
            return False
        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            first, self.warned = not self.warned, True
            return first


def check_mode(mode: str, modes: Sequence[JsonMode] = MODES) -> JsonMode:
    """Validate a user-supplied mode name (configuration error: raises)."""
    for known in modes:
        if mode == known:
            return known
    raise ValueError(f"json_mode must be one of {', '.join(modes)}; got {mode!r}")


class Enforcing:
    """The schema a client's request asks its endpoint to enforce, for the run to judge
    (`healjson._core.judge.enforcement.Enforcement`): the tier the client uses (or the call forced,
    below any it saw refused), as `schema_of(tier, the caller's params)` says (None for the
    caller's own format); the client's once-only warning."""

    __slots__ = ("forced", "schema_of", "state")

    def __init__(
        self,
        state: FormatState,
        forced: JsonMode | None,
        schema_of: Callable[[JsonMode, Mapping[str, Any]], Mapping[str, Any] | None],
    ) -> None:
        self.state = state
        self.forced = forced
        self.schema_of = schema_of

    def schema(self, params: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The schema the tier in use sends (read after the call: a tier only steps down, so
        a concurrent step-down can only hide a breach, never invent one)."""
        state = self.state
        mode: JsonMode | None = self.forced or state.mode
        while mode is not None and mode in state.refused:
            mode = WEAKER[mode]
        return None if mode is None else self.schema_of(mode, params)

    def first_breach(self) -> bool:
        """True the first time for this client."""
        return self.state.warn_once()
