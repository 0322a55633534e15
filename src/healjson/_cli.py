"""The `healjson` command line."""

from __future__ import annotations

import typer

app = typer.Typer(
    help="Self-healing middleware for structured LLM output.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """healjson: a validated value or an explicit Degraded, never an exception."""


@app.command()
def demo() -> None:
    """Run the offline demo on the embedded scripted model (no network, no API key)."""
    from ._demo import run_demo
    from ._trace import render_markdown

    for index, (scenario, outcome) in enumerate(run_demo(), 1):
        typer.echo(f"\n## {index}. {scenario.title}\n")
        typer.echo(f"_{scenario.shows}_\n")
        typer.echo(render_markdown(outcome, title=scenario.title))


def main() -> None:
    """Console-script entry point."""
    app()
