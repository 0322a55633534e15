"""Which SDKs a lane has. instructor is installed in the floor lane only (`.venv-floor`, the
`dev-floor` extra): every instructor release pins `jiter<0.15`, which every openai from 3.4 on
refuses, so the default lane (the newest openai) runs without it and its tests skip there."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

INSTRUCTOR_ONLY = (
    "instructor runs in the floor lane (.venv-floor): no release accepts the newest openai"
)
"""Why an instructor test skips in the default lane."""

HAS_INSTRUCTOR = find_spec("instructor") is not None

needs_instructor = pytest.mark.skipif(not HAS_INSTRUCTOR, reason=INSTRUCTOR_ONLY)
"""Marks a test (or a parameter) that drives instructor."""
