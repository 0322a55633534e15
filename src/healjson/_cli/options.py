"""The options several commands share, each declared once: its flags, checks and usual help.

Each function returns the `typer.Option` for one flag; a command puts it in its parameter's
`Annotated[...]` and passes its own `help` where the option means something particular there
(e.g. `eval --contracts` is the pack for the rows that name none).
"""

from __future__ import annotations

import enum
from typing import Any

import typer

__all__ = [
    "EndpointChoice",
    "JsonModeChoice",
    "api_key_option",
    "base_url_option",
    "cache_option",
    "choice",
    "concurrency_option",
    "contracts_option",
    "endpoint_model_option",
    "json_mode_option",
    "live_option",
    "max_tokens_help",
    "progress_option",
    "provider_option",
    "response_model_option",
    "timeout_option",
]


class JsonModeChoice(enum.StrEnum):
    """`--json-mode`: the strongest JSON mode the endpoint supports (see `healjson.wrap`)."""

    JSON_SCHEMA = "json_schema"
    STRUCTURED_OUTPUTS = "structured_outputs"
    CONSTRAINED = "constrained"
    JSON_OBJECT = "json_object"
    PROMPT = "prompt"


class EndpointChoice(enum.StrEnum):
    """`batch --batch-api --endpoint`: the OpenAI endpoint a batch's lines name."""

    CHAT = "chat"
    RESPONSES = "responses"


def provider_option() -> Any:
    """`batch --batch-api --provider`: whose Batch API a run goes through (the registry's
    providers with one; each names the environment its client reads)."""
    from healjson._providers import PROVIDERS

    names, needs = [], []
    for provider in PROVIDERS:
        api = provider.batch_api
        if api is None:
            continue
        names.append(provider.name)
        if provider is not PROVIDERS.default:
            places = ", ".join(name for name in (api.api_key_env, api.base_url_env) if name)
            needs.append(f"{provider.name}: {places}")

    def known(value: str) -> str:
        if value not in names:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(names)}")
        return value

    return typer.Option(
        "--provider",
        parser=known,
        metavar=f"[{'|'.join(names)}]",
        help=f"--batch-api: whose Batch API ({'; '.join(needs)}).",
        rich_help_panel="Batch API",
    )


def max_tokens_help() -> str:
    """`batch --max-tokens`'s help: the defaults of the providers that require a limit."""
    from healjson._providers import PROVIDERS

    required = [
        f"{provider.name} default: {provider.batch_api.max_tokens}"
        for provider in PROVIDERS
        if provider.batch_api is not None and provider.batch_api.max_tokens is not None
    ]
    return f"--batch-api: completion limit per request ({'; '.join(required)})."


def live_option(help: str) -> Any:
    """`--live`: send the command's requests to a real endpoint."""
    return typer.Option("--live", help=help)


def base_url_option(help: str = "OpenAI-compatible endpoint (default: OPENAI_BASE_URL).") -> Any:
    """`--base-url`: the OpenAI-compatible endpoint."""
    return typer.Option("--base-url", help=help)


def api_key_option(help: str = "API key (default: OPENAI_API_KEY).") -> Any:
    """`--api-key`: the endpoint's API key."""
    return typer.Option("--api-key", help=help)


def endpoint_model_option(help: str = "The endpoint's model name.") -> Any:
    """`--model`: the model name sent to the endpoint."""
    return typer.Option("--model", help=help)


def choice(names: tuple[str, ...], choices: type[enum.StrEnum], help: str, **more: Any) -> Any:
    """An option whose value is one of `choices`: a value that is not says which ones are,
    in the command line's words (typer's own check reads "Value error, ... is not one of")."""
    allowed = [str(member) for member in choices]

    def one_of(value: Any) -> Any:
        if isinstance(value, choices):
            return value
        try:
            return choices(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}") from None

    metavar = f"[{'|'.join(allowed)}]"
    return typer.Option(*names, parser=one_of, metavar=metavar, help=help, **more)


def json_mode_option(help: str = "Strongest JSON mode the endpoint supports.") -> Any:
    """`--json-mode`: a `JsonModeChoice`."""
    return choice(("--json-mode",), JsonModeChoice, help)


def timeout_option() -> Any:
    """`--timeout`: seconds per HTTP request."""
    return typer.Option("--timeout", min=0.001, help="Seconds per HTTP request.")


def concurrency_option(help: str) -> Any:
    """`--concurrency` / `-j`: requests in flight at once (at least 1)."""
    return typer.Option("--concurrency", "-j", min=1, help=help)


def progress_option() -> Any:
    """`--progress/--no-progress`: the progress bar on stderr."""
    return typer.Option(
        "--progress/--no-progress", help="Progress bar on stderr (default: when a TTY)."
    )


def contracts_option(help: str) -> Any:
    """`--contracts` / `-c`: a contract pack spec."""
    return typer.Option("--contracts", "-c", help=help)


def cache_option() -> Any:
    """`--cache PATH`: a response cache file (SQLite): answers healed before are served again,
    judged again, with no model call."""
    return typer.Option(
        "--cache",
        metavar="PATH",
        dir_okay=False,
        help="A response cache (SQLite file, created if missing): a request answered before "
        "is served from it with no model call once its answer passes the checks again; "
        "every healed answer is stored.",
    )


def response_model_option(help: str) -> Any:
    """`--response-model`: the target type spec."""
    return typer.Option("--response-model", help=help)
