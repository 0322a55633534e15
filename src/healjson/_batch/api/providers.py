"""The providers' Batch APIs, behind one small interface the rounds runner uses (`Provider`).

Each provider with a Batch API says so in its module (`healjson._providers`: its
`Provider.batch_api`): the class that reaches it through the SDK's client, the endpoints its
lines may name and how the command line builds a client. `batch_api_for(client)` finds the
provider of a client (also one wrapped by `healjson.wrap` or instructor) in the registry.

Every result becomes a `Result`, the ledger's stored form of one model call: the provider's
response body (read later by the engine as any reply) or a failure kind and message. Result
files are read as raw bytes, line by line in bounded memory (`result_lines`, `read_results`):
a hostile line (huge, not JSON, nested too deeply) is its own request's `api_error`, never an
exception; each line's shape is its wire format's to read (its `BatchLines.result`).
A batch whose create response was lost (the process was killed between the request and the
ledger's record) is looked for by the provider's own means (`find`: batch metadata where the
provider keeps it, else the part's request count).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from healjson._providers import PROVIDERS, batch_lines, resolve

from .result_lines import Result, bounded_lines, not_run, read_result_line, unreadable

__all__ = [
    "CLOCK_SKEW_S",
    "BatchState",
    "Provider",
    "Result",
    "batch_api_for",
    "encoded",
    "read_results",
]

CLOCK_SKEW_S: Final = 600.0
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

    name: str
    """The provider's name in the registry (the ledger keeps it)."""
    endpoint: str
    """The endpoint its lines name (one of its `BatchApi.endpoints`)."""
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
        """Every request of an ended batch with a result line: `(custom_id, result)`."""
        ...

    def cancel(self, batch_id: str) -> None: ...


_CANCELED: Final = not_run("the batch was cancelled before this request ran (canceled)")


def read_results(chunks: Iterable[bytes], result_of: Any) -> Iterator[tuple[str, Result]]:
    """Each result line of a stream as `(custom_id, result)`; a line that cannot be read is its
    request's `api_error` (when it names one), and `result_of` makes the rest `Result`s (a line
    it reads as no result, a request the batch did not run, is `not_run`: the runner sends it
    again after its own cancel, and degrades it, at no cost, after anyone else's)."""
    for line, too_long in bounded_lines(chunks):
        custom_id, data, problem = read_result_line(line, too_long)
        if custom_id is None:
            continue
        if problem is not None:
            yield custom_id, unreadable(problem)
            continue
        result = result_of(data)
        yield custom_id, _CANCELED if result is None else result


def encoded(line: Mapping[str, Any]) -> bytes:
    """A batch line as JSON Lines bytes (its newline included)."""
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")


def batch_api_for(client: Any, endpoint: str | None = None) -> Provider:
    """The Batch API behind `client` (an SDK's client, or one wrapped by `healjson.wrap` or
    instructor: the client beneath is looked for); `endpoint`, one its lines may name (default:
    its first). Raises TypeError for a client of no provider with a Batch API, ValueError for
    an endpoint it has not."""
    raw = client
    for _ in range(3):  # healjson.wrap(...) -> instructor -> the SDK's client
        if PROVIDERS.claims(raw):
            provider = PROVIDERS.for_client(raw)
            api = provider.batch_api
            if api is None:
                break
            chosen = next(iter(api.endpoints)) if endpoint is None else endpoint
            if chosen not in api.endpoints:
                known = ", ".join(api.endpoints)
                raise ValueError(f"endpoint={endpoint!r}: {provider.name}'s Batch API has {known}")
            found: Provider = resolve(api.client)(raw, chosen, batch_lines(provider.name, chosen))
            return found
        raw = getattr(raw, "wrapped", None) or getattr(raw, "client", None)
        if raw is None:
            break
    with_api = [f"{p.batch_api.sdk.replace(':', '.')}" for p in PROVIDERS if p.batch_api]
    raise TypeError(
        f"run_batch_api needs a client with a Batch API ({' or '.join(with_api)}), got "
        f"{type(client).__name__}"
    )
