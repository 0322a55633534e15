"""The `healjson` Typer app and `main`: registers `demo`, `heal`, `batch`, `trace`, `eval` and
`packs`.

Each command lives in its own module (`demo.py`, `heal.py`, `batch.py`, `trace.py`, `eval.py`,
`packs.py`).

Exit codes: 0 success (`heal`: healed); 1 `heal` degraded, a run that could not finish, or a
pack that fails `packs check` (or to load, for `packs`); 2 usage errors (bad options, a spec
that names nothing, a missing file).

Help is click's plain formatter (`rich_markup_mode=None`): it reflows every paragraph to the
terminal's width (at most 80 columns) and shows no metavar for a flag.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .batch import batch
from .demo import demo
from .eval import eval_command
from .heal import heal
from .packs import packs_app
from .trace import trace

__all__ = ["app", "main"]

app = typer.Typer(
    help="Self-healing middleware for structured LLM output.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("healjson")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree, not installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"healjson {_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """healjson: a validated value or an explicit Degraded, never an exception."""


app.command()(demo)
app.command()(heal)
app.command()(batch)
app.command()(trace)
app.command("eval")(eval_command)
app.add_typer(packs_app, name="packs")


def main() -> None:
    """Console-script entry point."""
    app()
