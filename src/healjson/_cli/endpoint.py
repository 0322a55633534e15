"""The OpenAI-compatible endpoint a command talks to: the openai SDK, base URL and API key."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import typer

from healjson._extras import missing_extra

__all__ = ["Endpoint", "api_key", "endpoint_from_options", "import_openai"]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A real OpenAI-compatible endpoint (None everywhere means OpenAI's defaults)."""

    base_url: str | None = None
    api_key: str | None = None
    timeout: float | None = None

    def client(self) -> Any:
        """A sync `openai.OpenAI` for this endpoint."""
        import openai

        return openai.OpenAI(**self._options())

    def async_client(self) -> Any:
        """An `openai.AsyncOpenAI` for this endpoint."""
        import openai

        return openai.AsyncOpenAI(**self._options())

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"base_url": self.base_url, "api_key": self.api_key}
        if self.timeout is not None:
            options["timeout"] = self.timeout
        return options


def endpoint_from_options(
    base_url: str | None, key: str | None, timeout: float | None = None
) -> Endpoint:
    """The endpoint `--base-url` / `--api-key` / `--timeout` name, with OPENAI_BASE_URL and
    OPENAI_API_KEY as defaults; a missing openai package or API key is a usage error."""
    import_openai()
    checked = api_key(key)
    return Endpoint(base_url or os.environ.get("OPENAI_BASE_URL") or None, checked, timeout)


def import_openai() -> Any:
    """The openai module; its absence is a usage error."""
    try:
        import openai
    except ImportError as exc:
        raise typer.BadParameter(missing_extra("openai", "openai"), param_hint="openai") from exc
    return openai


def api_key(option: str | None) -> str:
    """`--api-key`, else OPENAI_API_KEY; neither is a usage error."""
    key = option or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise typer.BadParameter(
            "no API key: pass --api-key or set OPENAI_API_KEY (any string for an endpoint "
            "that needs none)",
            param_hint="'--api-key'",
        )
    return key
