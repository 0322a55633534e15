"""The pytest plugin's fixtures and hooks, importable from inside the package.

The plugin itself lives in the top-level module `_healjson_pytestplugin` (so that loading it
does not import healjson); this module re-exports it for code that refers to it here.
"""

from __future__ import annotations

from _healjson_pytestplugin import (
    PROFILE_ENV,
    healjson_check_pack,
    pytest_configure,
    register_profiles,
    scripted_server,
)

__all__ = [
    "PROFILE_ENV",
    "healjson_check_pack",
    "pytest_configure",
    "register_profiles",
    "scripted_server",
]
