"""How the properties that guard a promise run: pinned in the default suite, random on request.

A property that guards a promise ("never invent", "never throw", "linear work") must not make a
run red or green by chance: in the default suite (the one CI runs, and the README's test
command) it is derandomized, so every run tries the same examples, and each counterexample
found, then or in the randomized lane, is kept as an explicit `@example` beside it.

The randomized lane runs the same properties with fresh random examples, many more of them
(1000 each), and is not part of the default suite:

    HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough .venv/bin/python -m pytest tests/

(or any test file). It is the one profile variable healjson's own tests and
its users' share (`_healjson_pytestplugin`); a profile it names that is itself derandomized
(`healjson-ci`) keeps them pinned.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

from _healjson_pytestplugin import PROFILE_ENV

__all__ = ["RANDOMIZED", "pinned"]

RANDOMIZED = bool(os.environ.get(PROFILE_ENV, "").strip()) and not settings.default.derandomize
"""True in the randomized lane: a profile was asked for by name, and it is not derandomized."""


def pinned(**overrides: Any) -> settings:
    """Settings for a property that guards a promise: derandomized with `overrides`
    (`max_examples=...`) in the default suite; the named profile's own (random, many examples)
    in the randomized lane."""
    if RANDOMIZED:
        return settings(deadline=None)
    return settings(derandomize=True, deadline=None, **overrides)
