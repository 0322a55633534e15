"""pytest plugin for healjson's test helpers (registered through the `pytest11` entry point).

A top-level module on purpose: importing it must not import `healjson`, so that a test run's
coverage (started after plugins load) sees healjson's modules being imported, and so that test
suites that never use these fixtures do not pay for importing healjson and pydantic.

- Fixtures: `scripted_server` (a started `ScriptedServer`) and `healjson_check_pack` (the
  `healjson.testing.check_pack` function).
- Hypothesis profiles `healjson-ci` (25 examples, derandomized) and `healjson-thorough` (1000
  examples). They are registered when hypothesis is already loaded, and
  `HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough` (or any registered profile name, one your
  conftest registers included) registers and loads one for the whole run. It is healjson's only
  profile variable (healjson's own test suite reads it too); the generic `HYPOTHESIS_PROFILE`
  is left alone, for your own conftest to use.

Importing this module loads only pytest and the standard-library server (no openai, no
hypothesis), so registering the plugin costs nothing for test suites that never use it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from healjson.testing import ScriptedServer


__all__ = [
    "PROFILE_ENV",
    "healjson_check_pack",
    "pytest_configure",
    "register_profiles",
    "scripted_server",
]

PROFILE_ENV = "HEALJSON_HYPOTHESIS_PROFILE"


def register_profiles() -> None:
    """Register the `healjson-ci` and `healjson-thorough` hypothesis profiles (imports hypothesis;
    raises `ImportError` with the install hint when it is missing)."""
    try:
        from hypothesis import HealthCheck, settings
    except ImportError as exc:
        from healjson._extras import missing_extra

        raise ImportError(missing_extra("hypothesis", "testing")) from exc
    slow = [HealthCheck.too_slow]
    settings.register_profile(
        "healjson-ci", max_examples=25, deadline=None, derandomize=True, suppress_health_check=slow
    )
    settings.register_profile(
        "healjson-thorough", max_examples=1000, deadline=None, suppress_health_check=slow
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register healjson's hypothesis profiles; load the one `HEALJSON_HYPOTHESIS_PROFILE` names."""
    name = os.environ.get(PROFILE_ENV, "").strip()
    if not name:
        if "hypothesis" in sys.modules:  # already paid for: registering is free
            register_profiles()
        return
    try:
        register_profiles()
        from hypothesis import settings

        settings.load_profile(name)
    except ImportError as exc:
        raise pytest.UsageError(f"{PROFILE_ENV}={name}: {exc}") from exc
    except Exception as exc:  # hypothesis' InvalidArgument for an unknown profile
        raise pytest.UsageError(
            f"{PROFILE_ENV}={name!r} is not a registered hypothesis profile; "
            "use healjson-ci or healjson-thorough"
        ) from exc


@pytest.fixture
def scripted_server() -> Iterator[ScriptedServer]:
    """A started, empty `ScriptedServer`; script it with `push`/`extend`. Stopped afterwards."""
    from healjson.testing._server import ScriptedServer

    server = ScriptedServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def healjson_check_pack() -> Callable[..., Any]:
    """`healjson.testing.check_pack`: `healjson_check_pack(pack)` checks a contract pack."""
    from healjson.testing._check_pack import check_pack

    return check_pack
