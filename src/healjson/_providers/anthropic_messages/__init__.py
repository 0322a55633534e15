"""Anthropic: the Messages API (`POST /v1/messages`) and the `anthropic` SDK's clients.

- `wire`: the wire format (requests in Anthropic's tiers, messages and stream events read,
  Message Batches lines);
- `schema`: a JSON schema in Anthropic's structured-output dialect;
- `tools`: client tools and a stream read call by call (`heal_tools=True`);
- `client`: `wrap(Anthropic())` / `wrap(AsyncAnthropic())`, and the healed streams under an
  instructor client;
- `batches`: Message Batches as the rounds runner uses it.
"""

from __future__ import annotations

from healjson._providers.provider import BatchApi, BatchLines, Provider
from healjson._providers.tiers import NATIVE_MODES

from .wire import DEFAULT_MAX_TOKENS, FORMAT, batch_body, batch_line, batch_result

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    "anthropic",
    formats=(FORMAT,),
    adapter=f"{__name__}.client:HealingAnthropic",
    streams=f"{__name__}.client:instructor_streams",
    tools=f"{__name__}.tools:ANTHROPIC",
    batch=BatchLines(batch_body, batch_line, batch_result),
    batch_api=BatchApi(
        client=f"{__name__}.batches:MessageBatches",
        endpoints={"chat": "anthropic"},
        sdk="anthropic:Anthropic",
        extra="anthropic",
        api_key_env="ANTHROPIC_API_KEY",
        base_url_env="ANTHROPIC_BASE_URL",
        max_tokens=DEFAULT_MAX_TOKENS,
    ),
    tiers=NATIVE_MODES,
)
