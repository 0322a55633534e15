"""Fixtures of the provider tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from healjson.testing import ScriptedServer


@pytest.fixture(scope="module")
def shared_server() -> Iterator[ScriptedServer]:
    """One scripted server for a whole module (every example of a property)."""
    with ScriptedServer() as server:
        yield server
