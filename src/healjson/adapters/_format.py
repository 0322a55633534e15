"""L1 on the request side: ask for JSON in the strongest mode the endpoint supports.

The tiers and how a request asks for each are the wire format's (`healjson._providers`:
`openai_chat.shape_request`, strongest first: a strict `json_schema`, `json_object`, the schema
in the prompt). What an adapter keeps is the negotiation: an endpoint that rejects a tier is
stepped down once (`FormatState`), and the wrapper remembers the tier that worked for the rest
of its life.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from healjson._providers.openai_chat import MODES, JsonMode

__all__ = ["MODES", "FormatState", "JsonMode", "check_mode"]


@dataclass
class FormatState:
    """The tier a wrapped client currently uses (shared by its calls, thread-safe)."""

    mode: JsonMode = "json_schema"
    _lock: threading.Lock | None = None

    def step_down(self, failed: JsonMode) -> JsonMode | None:
        """Move below `failed` (once per tier); None when there is nothing weaker."""
        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            index = MODES.index(failed)
            if index + 1 >= len(MODES):
                return None
            if MODES.index(self.mode) <= index:
                self.mode = MODES[index + 1]
            return self.mode


def check_mode(mode: str) -> JsonMode:
    """Validate a user-supplied mode name (configuration error: raises)."""
    if mode not in MODES:
        raise ValueError(f"json_mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode  # narrowed by the membership test above
