"""`healjson trace`: render the rows of a `healjson batch` output as Markdown traces."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from healjson._core.diagnostic import short_repr

from .markdown_out import echo_markdown

__all__ = ["trace"]


def trace(
    out: Annotated[
        Path,
        typer.Argument(
            metavar="OUT.jsonl", exists=True, dir_okay=False, help="A `healjson batch` output."
        ),
    ],
    row_id: Annotated[str | None, typer.Option("--id", help="Only the row with this id.")] = None,
) -> None:
    """Render the rows of a batch output as Markdown traces.

    Rows written with `batch --full` show the whole self-healing log; others get one summary
    line. A line that is not a row (not UTF-8, not JSON, nested too deeply, too long, no `id`)
    is skipped with a note on stderr. Exit code 1 when --id matches no row.
    """
    from healjson._core.outcome import outcome_from_dict
    from healjson._core.record import render_markdown

    found = False
    for row in _rows(out):
        if row_id is not None and str(row.get("id")) != row_id:
            continue
        found = True
        stored = row.get("outcome")
        if isinstance(stored, Mapping):
            try:
                outcome = outcome_from_dict(stored)
            except ValueError as exc:  # the only error it raises on bad data
                echo_markdown(f"{_row_summary(row)} (stored outcome unreadable: {exc})")
                continue
            echo_markdown(render_markdown(outcome, title=f"id {row.get('id')}"))
        else:
            echo_markdown(_row_summary(row))
    if row_id is not None and not found:
        typer.echo(f"no row with id {row_id} in {out}", err=True)
        raise typer.Exit(1)


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of an output file; every other line is reported on stderr and skipped."""
    from healjson._batch.output_file import read_rows

    for number, row, problem in read_rows(path):
        if row is None:
            kind = "not a JSON line" if (problem or "").startswith("is not valid JSON") else problem
            typer.echo(f"{path}:{number}: {kind}, skipped", err=True)
        else:
            yield row


def _row_summary(row: Mapping[str, Any]) -> str:
    """One line for a row stored without its outcome: healed, or degraded and why."""
    calls = _shown(row.get("attempts", 0))
    usage = row.get("usage")
    tokens = _shown(usage.get("total_tokens", 0) if isinstance(usage, Mapping) else 0)
    spent = f"{calls} call(s), {tokens} token(s)"
    if row.get("ok"):
        return f"- id {row['id']}: healed in {spent}"
    errors = row.get("errors")
    first = ""
    if isinstance(errors, list) and errors and isinstance(errors[0], Mapping):
        path, constraint = errors[0].get("path"), errors[0].get("constraint")
        first = f": `{_shown(path)}` {_shown(constraint)}"
    return f"- id {row['id']}: degraded (`{_shown(row.get('reason'))}`) after {spent}{first}"


def _shown(value: Any) -> str:
    """A row's field as text: a string as it is, anything else (any JSON, however deep) through
    the safe renderer."""
    return value if isinstance(value, str) else short_repr(value, 120)
