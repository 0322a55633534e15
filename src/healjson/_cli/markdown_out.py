"""Print a command's output: Markdown rendered by rich on a terminal, as plain text when piped;
JSON as strict JSON. Whatever is printed can be written.

The plain text is exactly what `typer.echo` printed before rich rendering existed, so scripts
reading a pipe or a file see the same bytes — except a character the output's encoding cannot
write (a lone surrogate from a `\\ud83d` escape in a reply; an emoji on an ASCII terminal): it is
written as its JSON escape, `\\uXXXX` (a pair of them beyond U+FFFF), never a traceback. In JSON
output that escape stands for the same string, so the JSON stays strict and means the same.
"""

from __future__ import annotations

import sys

import typer

__all__ = ["echo_markdown", "echo_text", "printable"]


def echo_markdown(text: str, *, nl: bool = True) -> None:
    """`text` (Markdown) on stdout: rendered when stdout is a terminal, else as it is."""
    if not sys.stdout.isatty():
        echo_text(text, nl=nl)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    console = Console()
    console.print(Markdown(printable(text, console.encoding)))


def echo_text(text: str, *, nl: bool = True, err: bool = False) -> None:
    """`text` on stdout (stderr with `err`), every character the stream cannot encode written
    as its `\\uXXXX` escape (`printable`); JSON text stays valid JSON with the same meaning."""
    stream = sys.stderr if err else sys.stdout
    typer.echo(printable(text, getattr(stream, "encoding", None) or "utf-8"), nl=nl, err=err)


def printable(text: str, encoding: str) -> str:
    """`text` with each character `encoding` cannot write (strictly: a lone surrogate never
    fits) replaced by its JSON escape `\\uXXXX`, a surrogate pair beyond U+FFFF.

    Inside a JSON document a character needing this is in a string (JSON's syntax is ASCII),
    where the escape denotes the same character: JSON text stays valid and equal."""
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        pass
    except LookupError:  # an encoding Python does not know: the safe subset
        return printable(text, "ascii")
    else:
        return text
    fits: dict[str, bool] = {}
    parts: list[str] = []
    for char in text:
        ok = fits.get(char)
        if ok is None:
            ok = fits[char] = _fits(char, encoding)
        parts.append(char if ok else _escape(char))
    return "".join(parts)


def _fits(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _escape(char: str) -> str:
    """`char` as JSON escapes: `\\uXXXX`, or the UTF-16 surrogate pair beyond U+FFFF."""
    point = ord(char)
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"
