"""Shared fixtures and hypothesis profiles.

One environment variable picks the hypothesis profile, `HEALJSON_HYPOTHESIS_PROFILE`: the one
healjson's pytest plugin reads for users (`_healjson_pytestplugin.PROFILE_ENV`).
`HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough` runs many more examples (1000 per property);
unset, the suite runs its fast default, `ci` (60 examples), which CI uses.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from _healjson_pytestplugin import PROFILE_ENV

settings.register_profile("ci", max_examples=60, deadline=None)
if not os.environ.get(PROFILE_ENV, "").strip():  # otherwise the plugin loads the one named
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _structlog_left_as_found() -> Iterator[None]:
    """A test that configures structlog (`structlog.testing.capture_logs` does, and leaves it
    so) must not make healjson's events print in the tests after it."""
    import structlog

    configured = structlog.is_configured()
    yield
    if not configured and structlog.is_configured():
        structlog.reset_defaults()
