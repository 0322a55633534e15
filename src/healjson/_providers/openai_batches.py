"""OpenAI's Batch API (`/v1/files` + `/v1/batches`) as the rounds runner uses it.

A round's requests are a JSONL file uploaded with `purpose="batch"`, then a batch over it;
results come back as an output file (answered requests) and an error file (requests that
failed, or expired with the 24 h window). Limits: 50,000 requests and 200 MB per file. A batch
whose create response was lost is found by our metadata (`healjson_run`, `healjson_part`).
The lines are chat completions' or the Responses API's (the endpoint's provider module).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from healjson._batch.api.providers import (
    CLOCK_SKEW_S,
    BatchState,
    Result,
    encoded,
    read_results,
)

from .openai_chat import BATCH_ENDPOINT as CHAT_ENDPOINT
from .openai_responses import BATCH_ENDPOINT as RESPONSES_ENDPOINT
from .provider import BatchLines

__all__ = ["OpenAIBatches"]

_URLS: Final = {"chat": CHAT_ENDPOINT, "responses": RESPONSES_ENDPOINT}
"""The URL each endpoint's lines name."""

_OPENAI_ENDED: Final = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatches:
    """The Batch API of an `openai.OpenAI` client, its lines for one endpoint."""

    name = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, client: Any, endpoint: str, lines: BatchLines) -> None:
        self.client = client
        self.endpoint = endpoint
        self._url = _URLS[endpoint]
        self._lines = lines

    def request_line(self, custom_id: str, body: Mapping[str, Any]) -> bytes:
        return encoded(self._lines.line(custom_id, body))

    def upload(self, lines: Sequence[bytes], name: str) -> str | None:
        data = b"".join(lines)
        uploaded = self.client.files.create(file=(name, io.BytesIO(data)), purpose="batch")
        return str(uploaded.id)

    def create(
        self, file_id: str | None, lines: Sequence[bytes], metadata: Mapping[str, str]
    ) -> str:
        batch = self.client.batches.create(
            input_file_id=file_id,
            endpoint=self._url,
            completion_window="24h",
            metadata=dict(metadata),
        )
        return str(batch.id)

    def find(
        self, metadata: Mapping[str, str], requests: int, since: float, known: frozenset[str]
    ) -> str | None:
        for batch in self.client.batches.list(limit=100):
            if float(batch.created_at) < since - CLOCK_SKEW_S:  # newest first: older ones next
                return None
            tags = dict(batch.metadata or {})
            if batch.id not in known and all(tags.get(k) == v for k, v in metadata.items()):
                return str(batch.id)
        return None

    def retrieve(self, batch_id: str) -> BatchState:
        batch = self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        known = {"total": counts.total, "completed": counts.completed, "failed": counts.failed}
        error = None
        if batch.status == "failed":
            errors = batch.errors.data if batch.errors is not None else None
            error = "; ".join(str(e.message) for e in errors or ()) or "the batch failed"
        return BatchState(batch.status in _OPENAI_ENDED, str(batch.status), known, error)

    def results(self, batch_id: str) -> Iterator[tuple[str, Result]]:
        batch = self.client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            # streamed: a result file can be 200 MB, never held whole
            with self.client.files.with_streaming_response.content(file_id) as response:
                yield from read_results(response.iter_bytes(), self._lines.result)

    def cancel(self, batch_id: str) -> None:
        self.client.batches.cancel(batch_id)
