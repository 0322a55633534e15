"""The providers' Batch APIs, behind one small interface the rounds runner uses.

* OpenAI (`/v1/files` + `/v1/batches`): a round's requests are a JSONL file uploaded with
  `purpose="batch"`, then a batch over it; results come back as an output file (answered
  requests) and an error file (requests that failed, or expired with the 24 h window). Limits:
  50,000 requests and 200 MB per file.
* Anthropic Message Batches (`/v1/messages/batches`): the requests go inline in the create call
  (no upload); results are a JSONL stream of `succeeded` / `errored` / `expired` / `canceled`
  lines. Limits: 100,000 requests and 256 MB per batch.

Every result becomes a `Result`, the ledger's stored form of one model call: the provider's
response body (read later by the engine as any reply) or a failure kind and message. Result
files are read as raw bytes, line by line in bounded memory (`result_lines`): a hostile line
(huge, not JSON, nested too deeply) is its own request's `api_error`, never an exception; each
line's shape is its wire format's to read (`healjson._providers.BATCH`: `batch_result`).
Finding a batch whose create response was lost (the process was killed between the request and
the ledger's record): OpenAI batches carry our metadata (`healjson_run`, `healjson_part`), so
the batch is found by it; Anthropic's carry none, so a batch is adopted only when exactly one
batch created since the submission began has the part's request count (documented limit).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from healjson._providers import BATCH, batch_lines
from healjson._providers.openai_chat import BATCH_ENDPOINT
from healjson._providers.openai_responses import BATCH_ENDPOINT as RESPONSES_ENDPOINT

from .result_lines import Result, bounded_lines, read_result_line, unreadable

__all__ = [
    "BatchState",
    "Provider",
    "Result",
    "anthropic_provider",
    "openai_provider",
]

ProviderName = Literal["openai", "anthropic"]
_CLOCK_SKEW_S: Final = 600.0
"""How far the provider's clock may be behind ours when looking for a lost batch."""


@dataclass(frozen=True, slots=True)
class BatchState:
    """A submitted batch as last seen: whether it ended, its provider status, and counts."""

    ended: bool
    status: str
    counts: Mapping[str, int]
    error: str | None = None
    """Why the batch as a whole failed (OpenAI `failed`: the file was refused), if it did."""


class Provider(Protocol):
    """What the rounds runner needs of a provider's Batch API."""

    name: ProviderName
    max_requests: int
    max_bytes: int

    def request_line(self, custom_id: str, body: Mapping[str, Any]) -> bytes:
        """One request as the batch holds it (a JSONL line, with its newline)."""
        ...

    def upload(self, lines: Sequence[bytes], name: str) -> str | None:
        """Upload a part's lines; the file id (None: this provider takes requests inline)."""
        ...

    def create(
        self, file_id: str | None, lines: Sequence[bytes], metadata: Mapping[str, str]
    ) -> str:
        """Submit a batch over `file_id` (or the `lines` themselves); its batch id."""
        ...

    def find(
        self, metadata: Mapping[str, str], requests: int, since: float, known: frozenset[str]
    ) -> str | None:
        """The batch submitted at `since` (a `time.time()`) with `metadata` and `requests`
        requests whose create response was lost, or None; `known`: batch ids already recorded
        for other parts (never adopted)."""
        ...

    def retrieve(self, batch_id: str) -> BatchState: ...

    def results(self, batch_id: str) -> Iterator[tuple[str, Result]]:
        """Every answered request of an ended batch: `(custom_id, result)`."""
        ...

    def cancel(self, batch_id: str) -> None: ...


# -- OpenAI ----------------------------------------------------------------------------------

_OPENAI_ENDED: Final = frozenset({"completed", "failed", "expired", "cancelled"})


class _OpenAI:
    name: ProviderName = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024
    endpoint = BATCH_ENDPOINT

    def __init__(self, client: Any, endpoint: str = BATCH_ENDPOINT) -> None:
        self.client = client
        self.endpoint = endpoint
        self._lines = batch_lines(self.name, endpoint)

    def request_line(self, custom_id: str, body: Mapping[str, Any]) -> bytes:
        return _encoded(self._lines.line(custom_id, body))

    def upload(self, lines: Sequence[bytes], name: str) -> str | None:
        data = b"".join(lines)
        uploaded = self.client.files.create(file=(name, io.BytesIO(data)), purpose="batch")
        return str(uploaded.id)

    def create(
        self, file_id: str | None, lines: Sequence[bytes], metadata: Mapping[str, str]
    ) -> str:
        batch = self.client.batches.create(
            input_file_id=file_id,
            endpoint=self.endpoint,
            completion_window="24h",
            metadata=dict(metadata),
        )
        return str(batch.id)

    def find(
        self, metadata: Mapping[str, str], requests: int, since: float, known: frozenset[str]
    ) -> str | None:
        for batch in self.client.batches.list(limit=100):
            if float(batch.created_at) < since - _CLOCK_SKEW_S:  # newest first: older ones next
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
                yield from _read(response.iter_bytes(), self._lines.result)

    def cancel(self, batch_id: str) -> None:
        self.client.batches.cancel(batch_id)


def _read(chunks: Iterable[bytes], result_of: Any) -> Iterator[tuple[str, Result]]:
    """Each result line of a stream as `(custom_id, result)`; a line that cannot be read is its
    request's `api_error` (when it names one), and `result_of` makes the rest `Result`s."""
    for line, too_long in bounded_lines(chunks):
        custom_id, data, problem = read_result_line(line, too_long)
        if custom_id is None:
            continue
        if problem is not None:
            yield custom_id, unreadable(problem)
            continue
        result = result_of(data)
        if result is not None:
            yield custom_id, result


# -- Anthropic -------------------------------------------------------------------------------


class _Anthropic:
    name: ProviderName = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, client: Any) -> None:
        self.client = client

    def request_line(self, custom_id: str, body: Mapping[str, Any]) -> bytes:
        return _encoded(BATCH[self.name].line(custom_id, body))

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
            if batch.created_at.timestamp() < since - _CLOCK_SKEW_S:
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
            yield from _read(response.iter_bytes(), BATCH[self.name].result)

    def cancel(self, batch_id: str) -> None:
        self.client.messages.batches.cancel(batch_id)


def _encoded(line: Mapping[str, Any]) -> bytes:
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")


ENDPOINTS: Final = {"chat": BATCH_ENDPOINT, "responses": RESPONSES_ENDPOINT}
"""The OpenAI endpoints a batch's lines may name, by the name `run_batch_api` takes."""


def openai_provider(client: Any, endpoint: str = "chat") -> Provider:
    """The Batch API of an `openai.OpenAI` client, its lines for `endpoint` (`ENDPOINTS`)."""
    if endpoint not in ENDPOINTS:
        raise ValueError(f"endpoint must be one of {', '.join(ENDPOINTS)}; got {endpoint!r}")
    return _OpenAI(client, ENDPOINTS[endpoint])


def anthropic_provider(client: Any) -> Provider:
    """The Message Batches API of an `anthropic.Anthropic` client."""
    return _Anthropic(client)
