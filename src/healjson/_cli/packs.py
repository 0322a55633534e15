"""`healjson packs`: list the installed contract packs; `healjson packs check NAME` checks one.

A pack is installed when a distribution registers it under the `healjson.contracts` entry-point
group (healjson's own example packs register there too). The listing loads each pack and shows
its model, its rules with their failure policy and its number of golden examples; a pack that
fails to load is listed with its error. `check` runs `healjson.testing.check_pack` (hypothesis,
from the `testing` extra) and exits 1 when the pack has a problem.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .markdown_out import echo_markdown

__all__ = ["packs_app"]

packs_app = typer.Typer(
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode=None,
)

DEFAULT_POLICY = "reask"  # a rule's failure policy when it declares none


@packs_app.callback()
def packs(ctx: typer.Context) -> None:
    """List the installed contract packs; `packs check NAME` checks one.

    A pack is installed when a package registers it as an entry point of the
    `healjson.contracts` group (healjson's example packs do). For each: its name, where it
    lives, its model, its rules with their failure policy, its golden examples. Exit code 1
    when a listed pack fails to load.
    """
    if ctx.invoked_subcommand is not None:
        return
    from healjson._packs import installed_packs

    installed = installed_packs()
    if not installed:
        typer.echo("no contract packs installed (entry-point group 'healjson.contracts')")
        return
    failed = False
    parts = [f"# Installed contract packs ({len(installed)})"]
    for name, where in installed.items():
        block, ok = _describe(name, where)
        parts.append(block)
        failed = failed or not ok
    echo_markdown("\n\n".join(parts))
    if failed:
        raise typer.Exit(1)


@packs_app.command()
def check(
    name: Annotated[
        str, typer.Argument(help="An installed pack's name (or any `--contracts` spec).")
    ],
    max_examples: Annotated[
        int | None,
        typer.Option(
            "--max-examples",
            min=1,
            help="Hypothesis examples per property (default: the hypothesis profile's).",
        ),
    ] = None,
) -> None:
    """Check a pack with `healjson.testing.check_pack`: golden examples, strategies, rules that
    never raise, L1 recovery of corrupted renderings.

    Exit code 0 when every check passed, 1 when the pack has a problem, 2 when it cannot load or
    hypothesis is not installed.
    """
    from .loading import load_pack

    try:
        pack = load_pack(name)
    except typer.BadParameter as exc:
        typer.echo(f"cannot load pack {name!r}: {exc.message}", err=True)
        raise typer.Exit(2) from exc
    except SystemExit as exc:  # the pack's own code exited: its failure, said as such
        typer.echo(f"cannot load pack {name!r}: it called sys.exit({exc.code!r})", err=True)
        raise typer.Exit(2) from None
    assert pack is not None  # a spec was given
    try:
        from healjson.testing import check_pack

        report = check_pack(pack, max_examples=max_examples)
    except ImportError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(2) from exc
    except AssertionError as exc:
        typer.echo(f"pack {name!r} FAILED check_pack:\n{exc}")
        raise typer.Exit(1) from exc
    except SystemExit as exc:  # a rule (or a strategy) of the pack exited
        typer.echo(f"pack {name!r} FAILED check_pack: its code called sys.exit({exc.code!r})")
        raise typer.Exit(1) from None
    typer.echo(f"pack {name!r} passed check_pack: {report}")


def _describe(name: str, where: str) -> tuple[str, bool]:
    """A pack's Markdown block, and whether it loaded."""
    from healjson._packs import load_contracts

    head = f"## {name}\n\n`{where}`"
    try:
        pack = load_contracts(name)
    except Exception as exc:  # a broken pack is reported, the others are still listed
        return f"{head}\n\n- fails to load: {type(exc).__name__}: {exc}", False
    except SystemExit as exc:  # a pack that exits is that pack's failure, not the listing's
        return f"{head}\n\n- fails to load: it called sys.exit({exc.code!r})", False
    model = getattr(pack.model, "__name__", repr(pack.model))
    lines = [
        head,
        "",
        f"- model: `{model}`",
        f"- golden examples: {len(pack.examples)}",
        f"- rules ({len(pack.contracts)}):",
    ]
    lines.extend(f"  - `{rule.name}` (on fail: {_policy(rule)})" for rule in pack.contracts)
    if pack.description:
        lines.insert(2, pack.description.strip().splitlines()[0])
        lines.insert(3, "")
    return "\n".join(lines), True


def _policy(rule: Any) -> str:
    """The rule's failure policy (`on_fail`), `reask` when it declares none."""
    policy = getattr(rule, "on_fail", None)
    if policy is None:
        return DEFAULT_POLICY
    return str(getattr(policy, "value", policy))
