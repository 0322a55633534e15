"""Anthropic's Message Batches (`/v1/messages/batches`) as the rounds runner uses it.

The requests go inline in the create call (no upload); results are a JSONL stream of
`succeeded` / `errored` / `expired` / `canceled` lines. Limits: 100,000 requests and 256 MB per
batch. Batches carry no metadata of ours, so a batch whose create response was lost is adopted
only when exactly one batch created since the submission began has the part's request count
(a documented limit).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from healjson._batch.api.providers import (
    CLOCK_SKEW_S,
    BatchState,
    Result,
    encoded,
    read_results,
)
from healjson._providers.provider import BatchLines

__all__ = ["MessageBatches"]


class MessageBatches:
    """The Message Batches API of an `anthropic.Anthropic` client."""

    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, client: Any, endpoint: str, lines: BatchLines) -> None:
        self.client = client
        self.endpoint = endpoint
        self._lines = lines

    def request_line(self, custom_id: str, body: Mapping[str, Any]) -> bytes:
        return encoded(self._lines.line(custom_id, body))

    def upload(self, lines: Sequence[bytes], name: str) -> str | None:
        return None  # the requests go inline in `create`

    def create(
        self, file_id: str | None, lines: Sequence[bytes], metadata: Mapping[str, str]
    ) -> str:
        requests = [json.loads(line) for line in lines]
        batch = self.client.messages.batches.create(requests=requests)
        return str(batch.id)

    def find(
        self, metadata: Mapping[str, str], requests: int, since: float, known: frozenset[str]
    ) -> str | None:
        found: list[str] = []
        for batch in self.client.messages.batches.list(limit=100):
            if batch.created_at.timestamp() < since - CLOCK_SKEW_S:
                break
            counts = batch.request_counts
            total = (
                counts.processing
                + counts.succeeded
                + counts.errored
                + counts.canceled
                + counts.expired
            )
            if total == requests and batch.id not in known:
                found.append(str(batch.id))
        return found[0] if len(found) == 1 else None

    def retrieve(self, batch_id: str) -> BatchState:
        batch = self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        known = {
            "processing": counts.processing,
            "succeeded": counts.succeeded,
            "errored": counts.errored,
            "canceled": counts.canceled,
            "expired": counts.expired,
        }
        return BatchState(batch.processing_status == "ended", str(batch.processing_status), known)

    def results(self, batch_id: str) -> Iterator[tuple[str, Result]]:
        # raw bytes, not the SDK's decoder: one hostile line would end its iteration
        with self.client.messages.batches.with_streaming_response.results(batch_id) as response:
            yield from read_results(response.iter_bytes(), self._lines.result)

    def cancel(self, batch_id: str) -> None:
        self.client.messages.batches.cancel(batch_id)
