"""Print a command's Markdown: rendered by rich on a terminal, as plain text when piped.

The plain text is exactly what `typer.echo` printed before rich rendering existed, so scripts
reading a pipe or a file see the same bytes.
"""

from __future__ import annotations

import sys

import typer

__all__ = ["echo_markdown"]


def echo_markdown(text: str, *, nl: bool = True) -> None:
    """`text` (Markdown) on stdout: rendered when stdout is a terminal, else as it is."""
    if not sys.stdout.isatty():
        typer.echo(text, nl=nl)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console().print(Markdown(text))
