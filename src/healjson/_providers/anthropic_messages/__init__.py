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

from typing import TYPE_CHECKING, Final

from healjson._providers.provider import BatchApi, BatchLines, Provider
from healjson._providers.tiers import NATIVE_MODES

from .batch_lines import batch_body, batch_line, batch_result
from .wire import DEFAULT_MAX_TOKENS, FORMAT

if TYPE_CHECKING:
    from healjson._providers.provider import TypingRow

__all__ = ["PROVIDER", "TYPING"]

_MESSAGE: Final = "anthropic.types.Message"
_EVENT: Final = "anthropic.types.RawMessageStreamEvent"
_MESSAGES: Final = (("messages", "Iterable[Any]"),)
_BETA_MESSAGE: Final = "anthropic.types.beta.BetaMessage"
_BETA_EVENT: Final = "anthropic.types.beta.BetaRawMessageStreamEvent"

TYPING: Final[TypingRow] = {
    "name": "Anthropic",
    "sync": "anthropic.Anthropic",
    "async_": "anthropic.AsyncAnthropic",
    "contexts": {"sync": ("with",), "async_": ("async with",)},
    "imports": (
        "anthropic",
        "anthropic.lib.streaming",
        "anthropic.types",
        "anthropic.types.beta",
        "anthropic.types.beta.parsed_beta_message",
    ),
    "completion": _MESSAGE,
    "summary": (
        "`anthropic.Anthropic` / `anthropic.AsyncAnthropic`: `messages.create(response_model=M)` "
        "and `messages.stream(response_model=M)` heal the same way, in Anthropic's tiers named "
        "like the chat ones: `json_schema` (native structured output), `json_object` (a forced "
        "strict tool), `prompt`. The SDK's own `messages.parse(output_format=M)` returns its "
        "`ParsedMessage`, `parsed_output` healed, and `messages.stream(output_format=M)` its "
        "stream manager, the final message's `parsed_output` healed (`healjson.outcome_of`). "
        "`beta.messages` heals the same way on the beta API (`betas=[...]`, the SDK's beta types)."
    ),
    "methods": (
        {
            "path": "messages.create",
            "needs": _MESSAGES,
            "tools": True,
            "returns": (_MESSAGE, _MESSAGE),
            "stream_returns": (f"anthropic.Stream[{_EVENT}]", f"anthropic.AsyncStream[{_EVENT}]"),
        },
        {
            "path": "messages.parse",
            "kind": "sdk_parse",
            "target": "output_format",
            "needs": _MESSAGES,
            "parsed": ("anthropic.types.ParsedMessage[T]",) * 2,
        },
        {
            "path": "messages.stream",
            "kind": "stream",
            "needs": _MESSAGES,
            "awaits": False,
            "returns": (
                "anthropic.lib.streaming.MessageStreamManager[Any]",
                "anthropic.lib.streaming.AsyncMessageStreamManager[Any]",
            ),
            "sdk_target": "output_format",
            "parsed": (
                "anthropic.lib.streaming.MessageStreamManager[T]",
                "anthropic.lib.streaming.AsyncMessageStreamManager[T]",
            ),
        },
        {
            "path": "beta.messages.create",
            "needs": _MESSAGES,
            "tools": True,
            "returns": (_BETA_MESSAGE, _BETA_MESSAGE),
            "stream_returns": (
                f"anthropic.Stream[{_BETA_EVENT}]",
                f"anthropic.AsyncStream[{_BETA_EVENT}]",
            ),
        },
        {
            "path": "beta.messages.parse",
            "kind": "sdk_parse",
            "target": "output_format",
            "needs": _MESSAGES,
            "parsed": ("anthropic.types.beta.parsed_beta_message.ParsedBetaMessage[T]",) * 2,
        },
        {
            "path": "beta.messages.stream",
            "kind": "stream",
            "needs": _MESSAGES,
            "awaits": False,
            "returns": (
                "anthropic.lib.streaming.BetaMessageStreamManager[Any]",
                "anthropic.lib.streaming.BetaAsyncMessageStreamManager[Any]",
            ),
            "sdk_target": "output_format",
            "parsed": (
                "anthropic.lib.streaming.BetaMessageStreamManager[T]",
                "anthropic.lib.streaming.BetaAsyncMessageStreamManager[T]",
            ),
        },
    ),
}
"""`messages` of an Anthropic client, in the typed face of `wrap`."""

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
    typing=f"{__name__}:TYPING",
    # the SDK's stream decoding and its responses' parsing
    reads=(
        "anthropic._streaming:*",
        "anthropic._decoders.*:*",
        "anthropic._response:*._parse",
        "anthropic._legacy_response:*._parse",
    ),
)
