"""What healjson opens, it closes: a user running under `python -X dev` (ResourceWarnings made
errors) sees no unclosed client, stream, socket, event loop or database on a representative
journey through the library and the command line, against the scripted server."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from paths import CLI_FIXTURES

pytestmark = pytest.mark.slow  # fresh interpreters under -X dev: the slow lane

DEV = [sys.executable, "-X", "dev", "-W", "error::ResourceWarning"]

JOURNEY = textwrap.dedent(
    """
    import asyncio
    import gc
    import sys

    import anthropic
    import openai
    from pydantic import BaseModel

    import healjson
    from healjson.batch_api import run_batch_api
    from healjson.testing import ScriptedReply, ScriptedServer


    class Ticket(BaseModel):
        urgency: int
        summary: str


    GOOD = '{"urgency": 2, "summary": "A parcel is late"}'
    CHUNKED = ScriptedReply(content=GOOD, chunk_chars=4)
    YES = '{"verdict": "yes", "reason": "it is short"}'
    USER = [{"role": "user", "content": "Triage: my parcel is late"}]
    SLOW = healjson.HealPolicy(deadline_s=30)  # a streamed call read on the pump thread
    # the model requests of the journey, in order
    SCRIPT = [GOOD, GOOD, CHUNKED, CHUNKED, CHUNKED, GOOD, YES, GOOD, GOOD, CHUNKED]


    def sync_journey(server: ScriptedServer) -> None:
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            client = healjson.wrap(sdk)
            assert client.chat.completions.create(model="m", messages=USER).choices
            healed = client.chat.completions.create(model="m", messages=USER, response_model=Ticket)
            assert healed.ok
            whole = client.chat.completions.create(
                model="m", messages=USER, response_model=Ticket, stream=True
            )
            assert whole.finish().ok
            for policy in (None, SLOW):  # a stream left after its first snapshot, then closed
                kwargs = {} if policy is None else {"policy": policy}
                left = client.chat.completions.create(
                    model="m", messages=USER, response_model=Ticket, stream=True, **kwargs
                )
                next(iter(left))
                left.close()
            assert client.responses.create(model="m", input="Triage", response_model=Ticket).ok
            judged = healjson.judge("Is the summary short?", client=sdk, model="judge")
            assert healjson.Healer(Ticket, contracts=[judged]).run(lambda m, **p: GOOD, USER).ok
        with anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        ) as claude:
            outcome = healjson.wrap(claude).messages.create(
                model="c", max_tokens=64, messages=USER, response_model=Ticket
            )
            assert outcome.ok


    async def async_journey(server: ScriptedServer) -> None:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            client = healjson.wrap(sdk)
            outcome = await client.chat.completions.create(
                model="m", messages=USER, response_model=Ticket
            )
            assert outcome.ok
            stream = await client.chat.completions.create(
                model="m", messages=USER, response_model=Ticket, stream=True
            )
            async for _ in stream:
                break
            await stream.aclose()


    def batch_api_journey(server: ScriptedServer, folder: str) -> None:
        source, out = f"{folder}/in.jsonl", f"{folder}/out.jsonl"
        with open(source, "w", encoding="utf-8") as rows:
            rows.write('{"id": 1, "prompt": "Triage: my parcel is late"}\\n')
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            report = run_batch_api(
                source, out, client=sdk, model="m", response_model=Ticket, poll_interval_s=0.0
            )
        assert report.complete


    with ScriptedServer(SCRIPT, batch_replies=lambda custom_id, body: GOOD) as server:
        sync_journey(server)
        asyncio.run(async_journey(server))
        batch_api_journey(server, sys.argv[1])
    gc.collect()
    print("JOURNEY DONE")
    """
)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def _no_resource_warning(result: subprocess.CompletedProcess[str]) -> None:
    said = result.stdout + result.stderr
    assert 0 == result.returncode, said
    assert "ResourceWarning" not in said, said
    assert "Exception ignored" not in said, said


def test_a_journey_through_the_library_leaves_nothing_open(tmp_path: Path) -> None:
    """Wrapped sync, async and Anthropic clients, healed and abandoned streams (with and without
    a deadline), a judge and a Batch API run, then a garbage collection: no ResourceWarning
    under `-X dev`."""
    script = tmp_path / "journey.py"
    script.write_text(JOURNEY, encoding="utf-8")
    result = _run([*DEV, str(script), str(tmp_path)], tmp_path)
    _no_resource_warning(result)
    assert "JOURNEY DONE" in result.stdout


def test_the_command_line_leaves_nothing_open(tmp_path: Path) -> None:
    """`healjson batch`, `healjson eval` and `healjson demo` close every client they open: no
    ResourceWarning under `-X dev`."""
    replies = tmp_path / "replies.json"
    good = {
        "urgency": 2, "category": "other", "summary": "Which sizes are there?",
        "orderId": "ORD-654321",
    }  # fmt: skip
    replies.write_text(json.dumps([json.dumps(good)]), encoding="utf-8")
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "prompt": "Which sizes?"}\n', encoding="utf-8")
    serve = subprocess.Popen(
        [*DEV, "-m", "healjson.testing", "--replies", str(replies), "--repeat"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        ready = serve.stdout.readline().split()
        assert "READY" == ready[0]
        batch = _run(
            [
                *DEV, "-m", "healjson", "batch", str(source), "--out", str(tmp_path / "out.jsonl"),
                "--contracts", str(CLI_FIXTURES / "ticket_pack.py"), "--model", "m",
                "--base-url", ready[1], "--api-key", "k", "--no-progress",
            ],
            tmp_path,
        )  # fmt: skip
        _no_resource_warning(batch)
    finally:
        serve.terminate()
        _, errors = serve.communicate(timeout=30)
    assert "ResourceWarning" not in errors
    for command in (["eval", "--no-progress"], ["demo"]):
        _no_resource_warning(_run([*DEV, "-m", "healjson", *command], tmp_path))
