"""The environment the session's Ray instance is started with (`conftest.ray_cluster`)."""

from __future__ import annotations

RAY_KEY_VAR = "HEALJSON_RAY_TEST_API_KEY"
RAY_SECRET = "sk-ray-test-4f9c2d7e1b8a6035"
"""The API key Ray's workers read from their environment (set before the cluster starts: a
worker's environment is the one the cluster was started with)."""
