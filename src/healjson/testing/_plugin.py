"""pytest plugin for healjson's test helpers: the `scripted_server` fixture.

Importing this module loads only pytest and the standard-library server (no openai), so
registering the plugin costs nothing for test suites that never use the fixture.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import ScriptedServer

__all__ = ["scripted_server"]


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A started, empty `ScriptedServer`; script it with `push`/`extend`. Stopped afterwards."""
    server = ScriptedServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
