"""`healjson trace`: render the rows of a `healjson batch` output as Markdown traces."""

from __future__ import annotations

from collections import Counter
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
    row_id: Annotated[
        str | None, typer.Option("--id", help="Open the row with this id: its full trace.")
    ] = None,
    every: Annotated[
        bool, typer.Option("--all", help="After the index, every row's trace.")
    ] = False,
) -> None:
    """Render the rows of a batch output as Markdown traces.

    A file of more than one row first gets an index (id, verdict, calls, reason) and the
    totals; `--id ID` opens one row, `--all` adds every row after the index. Rows written with
    `batch --full` show the whole self-healing log; others get one summary line. A line that is
    not a row (not UTF-8, not JSON, nested too deeply, too long, no `id`) is skipped with a note
    on stderr; a row whose `ok` is not true or false is shown as unreadable. A file with no
    rows says so on stderr. Exit code 1 when --id matches no row.
    """
    if row_id is None:
        entries = [_entry(row) for row in _rows(out)]
        if not entries:
            typer.echo(f"no rows in {out}", err=True)
            return
        if len(entries) > 1:
            echo_markdown(_index(entries, out, every))
            if not every:
                return
        _traces(_rows(out, report=False), None)
        return
    if not _traces(_rows(out), row_id):
        typer.echo(f"no row with id {row_id} in {out}", err=True)
        raise typer.Exit(1)


def _traces(rows: Iterator[dict[str, Any]], row_id: str | None) -> bool:
    """Print each row's trace (only the row `row_id` when given); whether any was printed."""
    from healjson._core.outcome.outcome import outcome_from_dict
    from healjson._core.outcome.record import render_markdown

    found = False
    for row in rows:
        if row_id is not None and str(row.get("id")) != row_id:
            continue
        found = True
        stored = row.get("outcome")
        if isinstance(stored, Mapping) and _verdict(row) != _UNREADABLE:
            try:
                outcome = outcome_from_dict(stored)
            except ValueError as exc:  # the only error it raises on bad data
                echo_markdown(f"{_row_summary(row)} (stored outcome unreadable: {exc})")
                continue
            echo_markdown(render_markdown(outcome, title=f"id {row.get('id')}"))
        else:
            echo_markdown(_row_summary(row))
    return found


# one index line: id, verdict, calls (None: unknown), reason ("" unless degraded), tokens
_Entry = tuple[str, str, int | None, str, int]
_HEALED, _DEGRADED, _UNREADABLE = "healed", "degraded", "unreadable"


def _verdict(row: Mapping[str, Any]) -> str:
    """healed (`ok` is true), degraded (false), or unreadable: an `ok` that is not a boolean
    is no verdict, and the index and the row's trace both say so."""
    ok = row.get("ok")
    if ok is True:
        return _HEALED
    return _DEGRADED if ok is False else _UNREADABLE


def _entry(row: Mapping[str, Any]) -> _Entry:
    usage = row.get("usage")
    tokens = _count(usage.get("total_tokens") if isinstance(usage, Mapping) else None)
    verdict = _verdict(row)
    reason = _shown(row.get("reason") or "unknown") if verdict == _DEGRADED else ""
    return (_shown(row.get("id")), verdict, _count(row.get("attempts")), reason, tokens or 0)


def _count(value: Any) -> int | None:
    """A row's count (`attempts`, tokens) when it is one, a non-negative integer; else None."""
    return value if type(value) is int and value >= 0 else None


def _index(entries: list[_Entry], out: Path, every: bool) -> str:
    """The index of a many-row file: one table line per row, then the totals."""
    lines = ["| id | verdict | calls | reason |", "|---|---|---|---|"]
    for key, verdict, calls, reason, _ in entries:
        shown = "?" if calls is None else str(calls)
        cells = (_cell(key), verdict, shown, f"`{_cell(reason)}`" if reason else "")
        lines.append(f"| {' | '.join(cells)} |")
    verdicts = Counter(entry[1] for entry in entries)
    reasons = Counter(entry[3] for entry in entries if entry[1] == _DEGRADED)
    # the reasons escaped as the table's cells are: on one line, pipes escaped
    why = ", ".join(f"{_cell(reason)} {count}" for reason, count in reasons.most_common())
    counted = [entry[2] for entry in entries if entry[2] is not None]
    unknown = len(entries) - len(counted)
    spent = f"{sum(counted)} call(s)" + (
        f" ({unknown} row(s) without a call count)" if unknown else ""
    )
    tokens = sum(entry[4] for entry in entries)
    lines += [
        "",
        f"**{len(entries)} rows**: {verdicts[_HEALED]} healed, {verdicts[_DEGRADED]} degraded"
        + (f" ({why})" if why else "")
        + (f", {verdicts[_UNREADABLE]} unreadable" if verdicts[_UNREADABLE] else "")
        + f"; {spent}, {tokens} token(s).",
    ]
    if not every:
        lines += ["", f"One row's full trace: `healjson trace {out} --id ID` (every row: `--all`)."]
    return "\n".join([*lines, ""])


def _cell(text: str) -> str:
    """Text for one table cell: on one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _rows(path: Path, *, report: bool = True) -> Iterator[dict[str, Any]]:
    """The rows of an output file; every other line is skipped (and reported on stderr)."""
    from healjson._batch.output_file import read_rows

    for number, row, problem in read_rows(path):
        if row is None:
            if not report:
                continue
            kind = "not a JSON line" if (problem or "").startswith("is not valid JSON") else problem
            typer.echo(f"{path}:{number}: {kind}, skipped", err=True)
        else:
            yield row


def _row_summary(row: Mapping[str, Any]) -> str:
    """One line for a row stored without its outcome: healed, degraded and why, or unreadable
    (its `ok` is not a boolean); a count that is not a non-negative integer shows `?`, as in
    the index."""
    verdict = _verdict(row)
    if verdict == _UNREADABLE:
        return (
            f"- id {_shown(row.get('id'))}: unreadable row (`ok` is "
            f"{short_repr(row.get('ok'), 60)}, not true or false)"
        )
    usage = row.get("usage")
    calls = _count(row.get("attempts", 0))
    tokens = _count(usage.get("total_tokens", 0) if isinstance(usage, Mapping) else 0)
    spent = f"{_or_unknown(calls)} call(s), {_or_unknown(tokens)} token(s)"
    if verdict == _HEALED:
        return f"- id {row['id']}: healed in {spent}"
    errors = row.get("errors")
    first = ""
    if isinstance(errors, list) and errors and isinstance(errors[0], Mapping):
        path, constraint = errors[0].get("path"), errors[0].get("constraint")
        first = f": `{_shown(path)}` {_shown(constraint)}"
    return f"- id {row['id']}: degraded (`{_shown(row.get('reason'))}`) after {spent}{first}"


def _or_unknown(count: int | None) -> str:
    return "?" if count is None else str(count)


def _shown(value: Any) -> str:
    """A row's field as text: a string as it is, anything else (any JSON, however deep) through
    the safe renderer."""
    return value if isinstance(value, str) else short_repr(value, 120)
