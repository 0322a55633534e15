"""The `healjson` command line: the Typer `app` and `main`, one module per command."""

from __future__ import annotations

from .app import app, main

__all__ = ["app", "main"]
