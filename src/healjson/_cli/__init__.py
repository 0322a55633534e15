"""The `healjson` command line: one module per command, shared options and reports."""

from __future__ import annotations

from .app import app, main

__all__ = ["app", "main"]
