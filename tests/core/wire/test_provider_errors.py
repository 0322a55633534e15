"""A provider's error answer (404 model, 401 key, 400 parameter) is quoted, with the fix its
status calls for: in the outcome's diagnostic, each batch row, and both batch summaries."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

import healjson
from healjson import Degraded, Healer, HealPolicy
from healjson._batch.api.result_lines import Result
from healjson._cli.app import app
from healjson._core.wire.fault import ProviderFault, fault_from_body
from healjson._providers.anthropic_messages.batch_lines import batch_result as anthropic_result
from healjson._providers.openai_chat import batch_result as openai_result
from healjson.batch_api import run_batch_api
from healjson.testing import ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES
from sdk_calls import close_gemini

FIXTURES = CLI_FIXTURES
sys.path.insert(0, str(FIXTURES))

KEY = "sk-provider-errors-0123456789abcdef"


class Answer(BaseModel):
    value: int


# (reply, what the constraint quotes, what the prescription says)
CASES = {
    "404-model": (
        lambda: ScriptedReply.error(
            404, "The model `gpt-nope` does not exist or you do not have access to it.",
            code="model_not_found",
        ),
        "HTTP 404 (model_not_found): The model `gpt-nope` does not exist",
        "Check the model name",
    ),
    "401-key": (
        lambda: ScriptedReply.error(
            401, f"Incorrect API key provided: {KEY}.", code="invalid_api_key"
        ),
        "HTTP 401 (invalid_api_key): Incorrect API key provided: ",
        "Check the API key",
    ),
    "400-param": (
        lambda: ScriptedReply.error(
            400, "Unsupported value: 'temperature' does not support 0.2 with this model.",
            param="temperature", code="unsupported_value",
        ),
        "HTTP 400 (unsupported_value): Unsupported value: 'temperature'",
        "Fix the request parameter `temperature`",
    ),
}  # fmt: skip


def _api_diagnostic(outcome: Any) -> Any:
    assert isinstance(outcome, Degraded)
    assert str(outcome.reason) == "api_error"
    (diagnostic,) = outcome.errors
    return diagnostic


@pytest.mark.parametrize("case", CASES)
def test_a_wrapped_client_quotes_the_providers_error_and_its_fix(case: str) -> None:
    """A wrapped client's degraded outcome quotes the provider's error answer and the fix its
    status calls for, with no key in the record or trace."""
    reply, quoted, fix = CASES[case]
    with ScriptedServer([reply()]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], response_model=Answer
        )
        sdk.close()
    diagnostic = _api_diagnostic(outcome)
    assert quoted in diagnostic.constraint
    assert diagnostic.prescription.startswith(fix)
    assert "Check the provider, network and credentials" not in diagnostic.prescription
    assert KEY not in json.dumps(outcome.to_dict())
    assert KEY not in outcome.trace()


@pytest.mark.parametrize("case", CASES)
def test_healer_run_quotes_the_providers_error_and_its_fix(case: str) -> None:
    """`Healer.run` over a raw SDK call quotes the provider's error answer and the fix its status
    calls for."""
    reply, quoted, fix = CASES[case]
    with ScriptedServer([reply()]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)

        def call(messages: Any, **params: Any) -> Any:
            return sdk.chat.completions.create(model="m", messages=messages)

        outcome = Healer(Answer, policy=HealPolicy(max_attempts=2)).run(call, "hi")
        sdk.close()
    diagnostic = _api_diagnostic(outcome)
    assert quoted in diagnostic.constraint
    assert diagnostic.prescription.startswith(fix)


def test_an_anthropic_not_found_error_names_the_model() -> None:
    """Anthropic's 404 for an unknown model is quoted with its error type and advice to check the
    model name."""
    reply = ScriptedReply.error(404, "model: claude-nope")
    with ScriptedServer([reply]) as server:
        sdk = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key=KEY, max_retries=0)
        outcome = healjson.wrap(sdk).messages.create(
            model="claude-nope", max_tokens=100, messages=[{"role": "user", "content": "hi"}],
            response_model=Answer,
        )  # fmt: skip
        sdk.close()
    diagnostic = _api_diagnostic(outcome)
    assert "HTTP 404 (not_found_error): model: claude-nope" in diagnostic.constraint
    assert diagnostic.prescription.startswith("Check the model name")


def test_a_connection_failure_keeps_the_generic_advice() -> None:
    """A connection failure, with no error answer to quote, keeps the generic advice to check
    provider, network and credentials."""
    with openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0) as sdk:
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], response_model=Answer
        )
    diagnostic = _api_diagnostic(outcome)
    assert diagnostic.rule is None
    assert "Check the provider, network and credentials" in diagnostic.prescription


@pytest.mark.parametrize(
    ("status", "body", "advice"),
    [
        (403, {"error": {"message": "no access"}}, "Check what the API key may use"),
        (404, {"error": {"message": "Not found"}}, "Check the base URL and the model name"),
        (422, {"error": {"message": "bad"}}, "Fix the request the provider rejected"),
        (429, None, "Lower the request rate"),
        (503, "oops", "The provider failed on its side"),
        (418, {"error": {"message": "teapot"}}, "Check the request"),
    ],
)
def test_every_status_gets_its_advice(status: int, body: Any, advice: str) -> None:
    """Every HTTP status class gets its own advice (403, 404, 422, 429, 5xx, any other)."""
    assert fault_from_body(status, body).advice().startswith(advice)


def test_gemini_and_anthropic_bodies_are_read_alike() -> None:
    """Gemini's and Anthropic's error bodies are read into the same `ProviderFault` shape."""
    gemini = {"error": {"code": 404, "message": "models/x is not found", "status": "NOT_FOUND"}}
    assert fault_from_body(404, gemini) == ProviderFault(404, "NOT_FOUND", "models/x is not found")
    said = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    assert fault_from_body(401, said).label == "HTTP 401 (authentication_error)"


# -- batch lines -----------------------------------------------------------------------------


def test_batch_result_lines_keep_the_fault_through_the_ledger() -> None:
    """Batch result lines of OpenAI and Anthropic keep the provider's fault through the ledger's
    JSON, and an older ledger row still reads."""
    line = {
        "custom_id": "row-1_r0",
        "response": {"status_code": 404, "body": {"error": {
            "message": "The model `x` does not exist", "code": "model_not_found"}}},
    }  # fmt: skip
    result = openai_result(line)
    assert result.fault == ProviderFault(404, "model_not_found", "The model `x` does not exist")
    assert Result.from_json(result.to_json()) == result
    errored = {"custom_id": "row-1_r0", "result": {"type": "errored", "error": {
        "type": "error", "error": {"type": "not_found_error", "message": "model: y"}}}}  # fmt: skip
    found = anthropic_result(errored)
    assert found is not None
    assert found.fault == ProviderFault(404, "not_found_error", "model: y")
    old = {"failure": "api_error", "message": "HTTP 404: gone", "elapsed_s": 1.0}
    assert Result.from_json(old).fault is None  # a ledger from before faults still reads


# -- `healjson batch` and `--batch-api` summaries ---------------------------------------------


def _input(tmp_path: Path, count: int) -> Path:
    source = tmp_path / "in.jsonl"
    lines = [json.dumps({"id": f"t{n}", "prompt": f"ticket {n}"}) for n in range(count)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return source


def _args(server: ScriptedServer, source: Path, out: Path) -> list[str]:
    return [
        "batch", str(source), "--out", str(out), "--model", "gpt-nope",
        "--response-model", f"{FIXTURES / 'ticket_pack.py'}:Ticket",
        "--base-url", server.base_url, "--api-key", KEY,
    ]  # fmt: skip


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", ["400-param"])
def test_healjson_batch_names_the_most_common_provider_error(tmp_path: Path, case: str) -> None:
    """`healjson batch` quotes the provider's error in every row and names the most common one,
    with its fix, in its summary (an error every row would get stops the run instead:
    `tests/scale/test_batch_ids.py`)."""
    reply, quoted, fix = CASES[case]
    source, out = _input(tmp_path, 3), tmp_path / "out.jsonl"
    with ScriptedServer([reply()], repeat=True) as server:
        result = CliRunner().invoke(app, [*_args(server, source, out), "--no-progress"])
    assert result.exit_code == 1
    for row in _rows(out):
        assert quoted in row["errors"][0]["constraint"]
        assert row["errors"][0]["prescription"].startswith(fix)
    said = " ".join(result.stderr.split())
    assert f"the provider's most common error, 3 row(s): {quoted}" in said
    assert fix in said
    assert "check --base-url, --api-key and the endpoint" not in said
    assert KEY not in result.stderr
    assert KEY not in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES)
def test_batch_api_names_the_most_common_provider_error(tmp_path: Path, case: str) -> None:
    """`healjson batch --batch-api` quotes the provider's error in every row and names the most
    common one in its summary."""
    reply, quoted, fix = CASES[case]
    source, out = _input(tmp_path, 3), tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=lambda custom_id, body: reply()) as server:
        args = [*_args(server, source, out), "--batch-api", "--poll-interval", "0"]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for row in _rows(out):
        assert quoted in row["errors"][0]["constraint"]
        assert row["errors"][0]["prescription"].startswith(fix)
    said = " ".join(result.stderr.split())
    assert f"the provider's most common error, 3 row(s): {quoted}" in said
    assert KEY not in result.stderr
    assert KEY not in out.read_text(encoding="utf-8")


def test_run_batch_api_reports_the_provider_errors(tmp_path: Path) -> None:
    """`run_batch_api`'s report counts the rows of each provider error."""
    from ticket_pack import Ticket

    reply, quoted, _ = CASES["404-model"]
    source, out = _input(tmp_path, 2), tmp_path / "out.jsonl"
    with ScriptedServer(batch_replies=lambda custom_id, body: reply()) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        report = run_batch_api(
            source, out, client=client, model="gpt-nope", response_model=Ticket,
            poll_interval_s=0.0,
        )  # fmt: skip
        client.close()
    ((said, count),) = report.provider_errors.items()
    assert count == 2
    assert said.startswith(quoted)


def test_a_gemini_not_found_error_names_the_model() -> None:
    """Gemini's 404 for an unknown model is quoted with its status and advice to check the model
    name, with no key in the record."""
    from google import genai
    from google.genai import types as genai_types

    reply = ScriptedReply.error(404, "models/gemini-nope is not found for API version v1beta")
    with ScriptedServer([reply]) as server:
        options = genai_types.HttpOptions(base_url=server.gemini_base_url, timeout=10_000)
        client = genai.Client(api_key=KEY, http_options=options)
        try:
            outcome = healjson.wrap(client).models.generate_content(
                model="gemini-nope", contents="hi", response_model=Answer
            )
        finally:
            close_gemini(client)
    diagnostic = _api_diagnostic(outcome)
    assert "HTTP 404 (NOT_FOUND): models/gemini-nope is not found" in diagnostic.constraint
    assert diagnostic.prescription.startswith("Check the model name")
    assert KEY not in json.dumps(outcome.to_dict())
