"""`healjson demo`: the four healing layers on one support ticket, offline or live."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .endpoint import endpoint_from_options
from .options import (
    JsonModeChoice,
    api_key_option,
    base_url_option,
    endpoint_model_option,
    json_mode_option,
    live_option,
)

__all__ = ["demo"]


def demo(
    live: Annotated[
        bool,
        live_option("Run the four prompts against a real endpoint (OPENAI_BASE_URL, or OpenAI's)."),
    ] = False,
    base_url: Annotated[
        str | None,
        base_url_option(
            "OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (implies --live)."
        ),
    ] = None,
    model: Annotated[str, endpoint_model_option("Model name for --live.")] = "gpt-4o-mini",
    api_key: Annotated[
        str | None, api_key_option("API key for --live (default: OPENAI_API_KEY).")
    ] = None,
    json_mode: Annotated[JsonModeChoice, json_mode_option()] = JsonModeChoice.JSON_SCHEMA,
) -> None:
    """Show the four layers on one support ticket: an L1 local heal, a cross-field repair, a
    truncation and a graceful degradation, each with its trace.

    Offline by default (a scripted model: no network, no API key); --live or --base-url sends
    the same four prompts to a real OpenAI-compatible endpoint through healjson.wrap.
    """
    from healjson._core.outcome.record import render_markdown

    from .demo_runs import run_demo
    from .markdown_out import echo_markdown

    if live or base_url is not None:
        results = _live_demo(base_url, model, api_key, json_mode)
    else:
        results = run_demo()
    parts = []
    for index, (scenario, outcome) in enumerate(results, 1):
        parts.append(f"\n## {index}. {scenario.title}\n")
        parts.append(f"_{scenario.shows}_\n")
        parts.append(render_markdown(outcome, title="What happened"))
    echo_markdown("\n".join(parts))


def _live_demo(
    base_url: str | None, model: str, api_key: str | None, json_mode: JsonModeChoice
) -> list[Any]:
    """The four runs through `healjson.wrap(openai.OpenAI(...))` at the endpoint."""
    import healjson
    from healjson.adapters._format import check_mode

    from .demo_runs import run_live_demo

    endpoint = endpoint_from_options(base_url, api_key)
    where = endpoint.base_url or "OpenAI's default endpoint"
    typer.echo(
        f"Live demo: {model} at {where}. A real model answers its own way, so the layers a "
        "scenario shows may differ from the offline run.",
        err=True,
    )
    with endpoint.client() as raw:
        client = healjson.wrap(raw, json_mode=check_mode(str(json_mode)))
        return run_live_demo(client, model)
