"""Batch API runs on `/v1/responses` lines (`run_batch_api(..., endpoint="responses")`,
`healjson batch --batch-api --endpoint responses`), over real HTTP against the scripted
server: lines name the endpoint, carry the row's messages as `input` and the JSON tier as
`text.format`, and their results heal as chat lines do, over rounds and a resumed run."""

from __future__ import annotations

import contextlib
import json
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from healjson._cli.app import app
from healjson.batch_api import batch_api_status, default_ledger, run_batch_api
from healjson.testing import ScriptedReply, ScriptedServer
from healjson.testing._wire import openai_responses

KEY = "sk-batch-secret-0123456789abcdef"
MODULE = Path(__file__)


class Invoice(BaseModel):
    number: str
    total: int


def invoice(number: int) -> str:
    return json.dumps({"number": f"INV-{number}", "total": number})


def answer(custom_id: str, body: dict[str, Any]) -> ScriptedReply:
    """Row `invoice N`: 1 valid; 2 fenced; 3 cut in round 0; 4 refused; 5 invalid in round 0."""
    round_ = int(re.search(r"_r(\d+)$", custom_id).group(1))  # type: ignore[union-attr]
    assert "messages" not in body  # a Responses body
    user = next(m["content"] for m in openai_responses.messages(body) if m["role"] == "user")
    number = int(re.search(r"invoice (\d+)", user).group(1))  # type: ignore[union-attr]
    if number == 2:
        return ScriptedReply(content=f"Sure:\n```json\n{invoice(2)}\n```")
    if number == 3 and round_ == 0:
        return ScriptedReply(content=invoice(3)[:12], finish_reason="length")
    if number == 4:
        return ScriptedReply(refusal="I cannot help with that.")
    if number == 5 and round_ == 0:
        return ScriptedReply(content='{"number": "INV-5"}')
    return ScriptedReply(content=invoice(number))


def write_input(path: Path, numbers: list[int]) -> Path:
    lines = [json.dumps({"id": f"i{n}", "prompt": f"invoice {n}"}) for n in numbers]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(path: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        assert row["id"] not in found
        found[row["id"]] = row
    return found


def endpoints(server: ScriptedServer) -> list[str]:
    """The `endpoint` of each batch created on `server`."""
    return [
        request.body["endpoint"]
        for request in server.requests
        if request.path == "/v1/batches" and request.method == "POST"
    ]


def test_a_responses_batch_heals_and_repairs_over_rounds(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """A Batch API run on `/v1/responses` heals and repairs its rows over rounds, every line a
    Responses request."""
    with ScriptedServer(batch_replies=answer) as server:
        out = tmp_path / "out.jsonl"
        report = run_batch_api(
            write_input(tmp_path / "in.jsonl", [1, 2, 3, 4, 5]),
            out,
            client=closing.enter_context(
                openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
            ),
            model="gpt-test",
            response_model=Invoice,
            endpoint="responses",
            poll_interval_s=0.0,
        )
        batches = list(server.batches)
    assert report.complete
    written = rows(out)
    assert {"i1", "i2", "i3", "i5"} == {key for key, row in written.items() if row["ok"]}
    assert "refusal" == written["i4"]["reason"]
    assert (1, 1, 2, 2) == tuple(written[f"i{n}"]["attempts"] for n in (1, 2, 3, 5))
    assert 2 == len(batches)
    first = batches[0].requests[0]
    assert ["/v1/responses"] * 2 == endpoints(server)
    assert "json_schema" == first["text"]["format"]["type"]
    assert "Invoice" == first["text"]["format"]["name"]
    assert "response_format" not in first
    repair = next(r for r in batches[1].requests if "invoice 5" in json.dumps(r))
    roles = [item["role"] for item in repair["input"]]
    assert ["user", "assistant", "user"] == roles  # the row, the answer, the repair message
    assert KEY not in out.read_text(encoding="utf-8")


def test_a_responses_batch_submitted_then_resumed(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """A Responses batch submitted without waiting is collected by a later run."""
    with ScriptedServer(batch_replies=answer, batch_delay_s=0.3) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 3])
        out = tmp_path / "out.jsonl"
        common: dict[str, Any] = {
            "client": closing.enter_context(
                openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
            ),
            "model": "gpt-test",
            "response_model": Invoice,
            "endpoint": "responses",
        }
        first = run_batch_api(source, out, wait=False, **common)
        assert 2 == first.pending
        done = run_batch_api(source, out, poll_interval_s=0.05, **common)
        assert done.complete
        assert {"i1", "i3"} == {key for key, row in rows(out).items() if row["ok"]}
        assert 2 == len(server.batches)
        assert ["/v1/responses"] * 2 == endpoints(server)


def test_the_endpoint_is_checked_and_kept_by_the_ledger(
    tmp_path: Path, closing: contextlib.ExitStack
) -> None:
    """An unknown endpoint is refused, and the ledger keeps the run's endpoint, refusing another
    one on resume."""
    with ScriptedServer(batch_replies=answer) as server:
        client = closing.enter_context(
            openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        )
        source = write_input(tmp_path / "in.jsonl", [1])
        out = tmp_path / "out.jsonl"
        with pytest.raises(ValueError, match="endpoint"):
            run_batch_api(
                source, out, client=client, model="m", response_model=Invoice, endpoint="x"
            )
        run_batch_api(
            source, out, client=client, model="m", response_model=Invoice, endpoint="responses",
            poll_interval_s=0.0,
        )  # fmt: skip
        from healjson.batch_api import LedgerError

        with pytest.raises(LedgerError):  # the same run with chat lines is another run
            run_batch_api(source, out, client=client, model="m", response_model=Invoice)


def test_the_command_line_sends_responses_lines(tmp_path: Path) -> None:
    """`healjson batch --batch-api --endpoint responses` sends Responses lines and heals the
    rows."""
    with ScriptedServer(batch_replies=answer) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 2])
        out = tmp_path / "out.jsonl"
        args = ["batch", str(source), "--out", str(out), "--batch-api", "--endpoint",
                "responses", "--model", "m", "--response-model", f"{MODULE}:Invoice",
                "--base-url", server.base_url, "--api-key", KEY,
                "--poll-interval", "0"]  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert 0 == result.exit_code, result.output
        assert ["/v1/responses"] == endpoints(server)
    assert {"i1", "i2"} == {key for key, row in rows(out).items() if row["ok"]}


def test_the_endpoint_option_goes_with_batch_api(tmp_path: Path) -> None:
    """`--endpoint` without `--batch-api` is a usage error naming the option."""
    source = write_input(tmp_path / "in.jsonl", [1])
    args = ["batch", str(source), "--out", str(tmp_path / "out.jsonl"), "--endpoint",
            "responses", "--model", "m", "--response-model", f"{MODULE}:Invoice"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert 2 == result.exit_code
    assert "--endpoint" in result.output


# -- killed, then resumed -------------------------------------------------------------------------

# One run in a child forked from the session's warm process (`zygote`), killed (SIGKILL: what a
# crash or an OOM kill looks like) the nth time the runner reports `phase`; "never" runs to the
# end.


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize(
    ("phase", "nth"),
    [
        ("created", 1),  # round 0's batch created on /v1/responses, the ledger not told yet
        ("written", 1),  # round 0's rows written, the ledger not told yet
    ],
)
def test_a_responses_batch_killed_resumes_without_loss_or_repeats(
    tmp_path: Path, phase: str, nth: int, zygote: Any
) -> None:
    """A Responses batch run killed with SIGKILL resumes with every row written once and no batch
    sent twice."""
    with ScriptedServer(batch_replies=answer) as server:
        source = write_input(tmp_path / "in.jsonl", [1, 2, 3, 4, 5])
        out = tmp_path / "out.jsonl"
        task = {"base_url": server.base_url, "source": str(source), "out": str(out)}
        run, errors = "victims:invoices_responses_batch_api", tmp_path / "stderr.txt"
        killed = zygote.run(run, errors, phase=phase, nth=nth, **task)
        assert {"signal": signal.SIGKILL, "code": None} == killed, errors.read_text()
        assert {"signal": 0, "code": 0} == zygote.run(run, errors, phase="never", nth=1, **task)
        batches = list(server.batches)
        sent = endpoints(server)
    written = rows(out)  # raises if any id was written twice
    assert {f"i{n}" for n in range(1, 6)} == set(written)
    assert {"i1", "i2", "i3", "i5"} == {key for key, row in written.items() if row["ok"]}
    assert "refusal" == written["i4"]["reason"]
    # one batch per round, each row once in it: the killed run's batch was found, not resent
    assert [5, 2] == [len(batch.custom_ids) for batch in batches]
    assert 1 == max(Counter(c for batch in batches for c in batch.custom_ids).values())
    assert ["/v1/responses"] * 2 == sent
    assert batch_api_status(default_ledger(out)).complete
