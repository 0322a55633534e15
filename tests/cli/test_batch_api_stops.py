"""`healjson batch --batch-api` when the provider gives a final answer: a clean stop (exit 1, the
provider's words and the fix, no traceback), never a row paid twice without being asked.

- An endpoint without a Batch API (404 on `/v1/files`), a refused key (401), a refused create
  (400): the run stops before anything is submitted; after the fix the same command runs.
- A batch the provider no longer knows (404 on poll: another key or project, a deleted batch)
  or whose results it cannot give (an expired output file): the part is closed, its rows are
  `lost` and sent again only with `--resubmit-lost`.
- `--cancel` of a batch the provider does not know cancels it here and exits 0.
- A refused key on poll (401) keeps the batch: the next run with the right key collects it.

Everything runs the real command line (click's runner) against `ScriptedServer` on loopback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest
from typer.testing import CliRunner

from batch_kit import GOOD, batch_input
from healjson._cli.app import app
from healjson.testing import ScriptedServer


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """The model and the three rows' input, in the test's folder."""
    return batch_input(tmp_path)


def batch_api(source: Path, base_url: str, *more: str, provider: str = "openai") -> Any:
    """`healjson batch --batch-api` of `source` into `out.jsonl` beside it, against `base_url`."""
    args = ["batch", str(source), "--out", str(source.with_name("out.jsonl")), "--batch-api"]
    args += ["--model", "m", "--response-model", f"{source.with_name('m.py')}:M"]
    args += ["--base-url", base_url, "--api-key", "sk-test-key", "--poll-interval", "0"]
    if provider != "openai":
        args += ["--provider", provider]
    return CliRunner().invoke(app, [*args, *more])


def said(result: Any, code: int) -> str:
    """The command's stderr on one line, after checking its exit code and that no traceback."""
    assert result.exit_code == code, result.output
    assert isinstance(result.exception, SystemExit | None), result.exception
    assert "Traceback" not in result.output
    return " ".join(result.stderr.split())


def written(source: Path) -> dict[str, dict[str, Any]]:
    out = source.with_name("out.jsonl")
    lines = out.read_text().splitlines() if out.exists() else []
    return {row["id"]: row for row in map(json.loads, lines)}


def submitted_elsewhere(source: Path) -> None:
    """Submit the input's batch to a server that then goes away (a batch another key, project
    or account holds: the next server does not know it)."""
    with ScriptedServer([GOOD], repeat=True, batch_delay_s=60) as elsewhere:
        said(batch_api(source, elsewhere.base_url, "--no-wait"), 1)  # rows pending
        assert len(elsewhere.batches) == 1


# -- no Batch API, a refused key, a refused create ---------------------------------------------


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (404, "this endpoint has no Batch API; run without --batch-api"),
        (401, "Check the API key"),
        (400, "Fix the request the provider rejected"),
    ],
)
def test_an_endpoint_refusing_the_batch_api_stops_cleanly(
    source: Path, status: int, words: str
) -> None:
    """A 404, 401 or 400 on the upload stops the run with the provider's status and the fix, and
    once the endpoint answers, the same command submits one batch and writes every row."""
    with ScriptedServer([GOOD], repeat=True) as server:
        server.refuse_batch_requests(status)
        stopped = said(batch_api(source, server.base_url), 1)
        assert server.batches == []
        server.refuse_batch_requests(None)
        resumed = batch_api(source, server.base_url)
        sent = len(server.batches)

    assert f"batch stopped: uploading a batch was refused: HTTP {status}" in stopped
    assert words in stopped
    assert "sk-test-key" not in stopped
    said(resumed, 0)
    assert sent == 1
    assert all(row["ok"] for row in written(source).values())


def test_a_refused_create_stops_cleanly_and_is_not_submitted_twice(source: Path) -> None:
    """Anthropic's Message Batches refusing the create (HTTP 400) stop the run with its words;
    the next run submits the batch once."""
    with ScriptedServer([GOOD], repeat=True) as server:
        base = server.base_url.removesuffix("/v1")
        server.refuse_batch_requests(400)
        stopped = said(batch_api(source, base, provider="anthropic"), 1)
        server.refuse_batch_requests(None)
        resumed = batch_api(source, base, provider="anthropic")
        sent = len(server.batches)

    assert "batch stopped: creating a batch was refused: HTTP 400" in stopped
    said(resumed, 0)
    assert sent == 1
    assert len(written(source)) == 3


# -- a batch the provider no longer knows ------------------------------------------------------


def test_a_batch_the_provider_does_not_know_marks_its_rows_lost(source: Path) -> None:
    """A 404 on poll stops the run cleanly and marks the batch's rows lost; a re-run sends
    nothing for them and says so; `--resubmit-lost` sends them again, once."""
    submitted_elsewhere(source)
    with ScriptedServer([GOOD], repeat=True) as server:
        stopped = said(batch_api(source, server.base_url), 1)
        again = said(batch_api(source, server.base_url), 1)
        assert server.batches == []
        resubmitted = said(batch_api(source, server.base_url, "--resubmit-lost"), 0)
        sent = len(server.batches)

    assert "batch stopped: checking batch batch_scripted_1 was refused: HTTP 404" in stopped
    assert "No batch found with id 'batch_scripted_1'" in stopped
    assert "3 row(s) marked lost; they may have run and been billed" in stopped
    assert "--resubmit-lost" in stopped
    assert "0 pending, 3 lost" in again
    assert "3 row(s) lost: the provider no longer knows their batch" in again
    assert "resubmitted 3 lost row(s) (--resubmit-lost)" in resubmitted
    assert sent == 1
    assert sorted(written(source)) == ["t1", "t2", "t3"]


def test_results_the_provider_cannot_give_mark_the_rows_lost(source: Path) -> None:
    """A batch that ended but whose output file is gone (expired: 404 on download) stops the run
    cleanly and marks its rows lost, never re-sent silently."""
    with ScriptedServer([GOOD], repeat=True) as server:
        said(batch_api(source, server.base_url, "--no-wait"), 1)
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test-key", max_retries=0)
        ended = client.batches.retrieve(server.batches[0].id)
        assert ended.status == "completed"
        assert ended.output_file_id
        client.files.delete(ended.output_file_id)
        client.close()
        stopped = said(batch_api(source, server.base_url), 1)
        status = said(batch_api(source, server.base_url, "--status"), 0)
        sent = len(server.batches)

    assert f"reading the results of batch {ended.id} was refused: HTTP 404" in stopped
    assert "3 row(s) marked lost" in stopped
    assert "3 lost" in status
    assert sent == 1
    assert written(source) == {}


def test_cancel_of_a_batch_the_provider_does_not_know_exits_0(source: Path) -> None:
    """`--cancel` of a batch the provider does not know cancels it here, says its rows are
    lost, and exits 0; the next run sends nothing for them."""
    submitted_elsewhere(source)
    with ScriptedServer([GOOD], repeat=True) as server:
        cancelled = said(batch_api(source, server.base_url, "--cancel"), 0)
        again = said(batch_api(source, server.base_url), 1)
        sent = len(server.batches)

    assert "cancelling batch batch_scripted_1 was refused: HTTP 404" in cancelled
    assert "it is cancelled here, and its 3 row(s) marked lost" in cancelled
    assert "in flight" not in again
    assert "3 row(s) lost" in again
    assert sent == 0


def test_a_refused_key_on_poll_keeps_the_batch(source: Path) -> None:
    """A 401 on poll (a wrong key) stops the run saying to check the key, and leaves the batch:
    the next run with a working key collects it, sending nothing again."""
    with ScriptedServer([GOOD], repeat=True) as server:
        said(batch_api(source, server.base_url, "--no-wait"), 1)
        server.refuse_batch_requests(401)
        stopped = said(batch_api(source, server.base_url), 1)
        cancel = said(batch_api(source, server.base_url, "--cancel"), 1)
        server.refuse_batch_requests(None)
        resumed = said(batch_api(source, server.base_url), 0)
        sent = len(server.batches)

    assert "batch stopped: checking batch batch_scripted_1 was refused: HTTP 401" in stopped
    assert "Check the API key" in stopped
    assert "lost" not in stopped
    assert "cancelling batch batch_scripted_1 was refused: HTTP 401" in cancel
    assert "3 of 3 row(s) done" in resumed
    assert sent == 1
    assert all(row["ok"] for row in written(source).values())
