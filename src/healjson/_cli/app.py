"""The `healjson` Typer app and `main`: registers `demo`, `heal`, `batch`, `trace` and `eval`.

Each command lives in its own module (`demo.py`, `heal.py`, `batch.py`, `trace.py`, `eval.py`).

Exit codes: 0 success (`heal`: healed); 1 `heal` degraded, or a run that could not finish;
2 usage errors (bad options, a spec that names nothing, a missing file).
"""

from __future__ import annotations

import typer

from .batch import batch
from .demo import demo
from .eval import eval_command
from .heal import heal
from .trace import trace

__all__ = ["app", "main"]

app = typer.Typer(
    help="Self-healing middleware for structured LLM output.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """healjson: a validated value or an explicit Degraded, never an exception."""


app.command()(demo)
app.command()(heal)
app.command()(batch)
app.command()(trace)
app.command("eval")(eval_command)


def main() -> None:
    """Console-script entry point."""
    app()
