"""The command line: `demo` (offline and live), `heal` and the spec loader; `batch` and `trace`
are in test_batch.py."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from typer.testing import CliRunner

import healjson
from healjson import Degraded, Healed, Reply
from healjson._cli.app import app
from healjson._cli.demo_runs import GOOD, PROMPT, SupportTicket, demo_scenarios, run_demo
from healjson._cli.heal import heal_report
from healjson._cli.loading import SpecError, load_object
from healjson._core.run.answers import next_prompt
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES


def test_demo_outcomes_cover_the_four_layers() -> None:
    """The demo heals locally in one call, repairs Case #7 and a truncation in two, and degrades."""
    outcomes = [outcome for _, outcome in run_demo()]
    assert [True, True, True, False] == [o.ok for o in outcomes]
    assert [1, 2, 2, 3] == [o.calls for o in outcomes]
    assert "max_retries_exceeded" == outcomes[3].reason  # type: ignore[union-attr]


def test_demo_command_prints_traces_in_process() -> None:
    """`healjson demo` exits 0 and prints the repair prompt and the degradation reason."""
    result = CliRunner().invoke(app, ["demo"])
    assert 0 == result.exit_code
    assert "Repair prompt sent" in result.output
    assert "max_retries_exceeded" in result.output
    assert "code_fence" in result.output


def test_demo_runs_as_a_subprocess_offline() -> None:
    """`python -m healjson demo` works as a real process."""
    done = subprocess.run(
        [sys.executable, "-m", "healjson", "demo"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert 0 == done.returncode
    assert "cross-field repair" in done.stdout


# ---------------------------------------------------------------------------------------------
# demo: the four layers, offline and live (against a ScriptedServer on 127.0.0.1)
# ---------------------------------------------------------------------------------------------

FIXTURES = CLI_FIXTURES
PACK = str(FIXTURES / "ticket_pack.py")
TICKET = f"{PACK}:Ticket"


def _scripted_demo_items() -> list[Any]:
    """The offline demo's replies, in order, as ScriptedServer items."""
    items: list[Any] = []
    for scenario in demo_scenarios():
        for reply in scenario.replies:
            if isinstance(reply, Reply):
                items.append(
                    ScriptedReply(
                        content=reply.content, finish_reason=reply.finish_reason or "stop"
                    )
                )
            else:
                items.append(reply)
    return items


def test_demo_output_shows_the_four_layers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline (even with OPENAI_* set) `demo` shows all four scenarios and makes no call."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # would fail if it were used
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    result = CliRunner().invoke(app, ["demo"])
    assert 0 == result.exit_code
    for heading in ("## 1. L1 local heal", "## 2. L2 + L3", "## 3. Truncation", "## 4. L4"):
        assert heading in result.stdout
    assert "**Healed** in 1 round of 3 allowed (0 repairs)" in result.stdout
    assert "was cut off after" in result.stdout
    assert "**Degraded**: `max_retries_exceeded` after 3 rounds of 3 allowed" in result.stdout
    assert "Live demo" not in result.output


def test_live_demo_goes_through_wrap_to_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    """`demo --base-url` sends the four scenarios (8 calls) through healjson.wrap(openai.OpenAI)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer(_scripted_demo_items()) as server:
        result = CliRunner().invoke(
            app, ["demo", "--base-url", server.base_url, "--api-key", "test", "--model", "m-live"]
        )
        requests = server.requests
    assert 0 == result.exit_code, result.output
    assert 8 == len(requests)
    assert {"m-live"} == {r.body["model"] for r in requests if r.body}
    assert "response_format" not in (requests[0].body or {})  # the L1 scenario asks in the prompt
    assert "json_schema" == (requests[1].body or {})["response_format"]["type"]
    assert [40, 80] == [(r.body or {}).get("max_tokens") for r in requests[3:5]]
    assert "4-character pager" in requests[5].messages[0]["content"]
    assert "Live demo: m-live at http://127.0.0.1:" in result.stderr
    assert "**Healed** in 1 round" in result.stdout
    assert "- **Model**: `m-live`" in result.stdout  # each round names the model it called
    assert "**Degraded**: `max_retries_exceeded` after 3 rounds" in result.stdout


def test_live_demo_without_an_api_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """`demo --live` with no --api-key and no OPENAI_API_KEY exits 2 before any call."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["demo", "--live"])
    assert 2 == result.exit_code
    assert "OPENAI_API_KEY" in result.stderr


# ---------------------------------------------------------------------------------------------
# heal: L1 + L2 on a saved output, no model call
# ---------------------------------------------------------------------------------------------


def _unboxed(text: str) -> str:
    """Typer's rich error panel without its frame and line wrapping."""
    return " ".join(text.replace("│", " ").split())


def _heal(*args: str, input: str | None = None) -> Any:
    return CliRunner().invoke(app, ["heal", *args], input=input)


def test_heal_fenced_valid_answer_exits_0_with_the_value_and_flags() -> None:
    """A fenced answer with slips heals locally: exit 0, the value and the L1 flags."""
    result = _heal(str(FIXTURES / "fenced_valid.txt"), "--contracts", PACK)
    assert 0 == result.exit_code, result.output
    assert "`healjson heal`: healed locally (no model call)." in result.stdout
    assert "- **Target**: `Ticket`" in result.stdout
    assert "code_fence, prose_around, syntax_repaired, enum_case, coerced" in result.stdout
    assert '"orderId": "ORD-123456"' in result.stdout
    assert "Repair request" not in result.stdout


def test_heal_contract_violation_prints_diagnostics_and_the_repair_request() -> None:
    """A contract violation exits 1 and prints the diagnostic and the repair turn to be sent."""
    result = _heal(
        str(FIXTURES / "contract_violation.txt"),
        "--model",
        TICKET,
        "--contracts",
        PACK,
        "--messages",
        str(FIXTURES / "messages.json"),
    )
    assert 1 == result.exit_code
    out = result.stdout
    assert "**Degraded**: `invalid_output`" in out
    assert "constraint: a ticket with urgency >= 4 needs a summary of at least 15" in out
    trace, request = out.split("#### Repair request healjson would send next (`repair`)")
    assert "**system**" in trace.split("#### Request")[1]  # the original messages, in the trace
    assert "The original request (2 messages, under Request above), then:" in request
    assert '"summary": "Ship it now"' in request  # then the raw output, verbatim
    assert "Your previous answer (above) failed 1 check:" in request
    assert 'also involved: `summary` = "Ship it now"' in request


def test_heal_garbage_exits_1_with_a_syntax_repair_request() -> None:
    """Prose with no JSON exits 1 and the next request is the short syntax prompt."""
    result = _heal(str(FIXTURES / "garbage.txt"), "--model", TICKET)
    assert 1 == result.exit_code
    assert "must be valid JSON" in result.stdout
    assert "Your previous answer could not be read as JSON" in result.stdout
    assert "pass --messages FILE" in result.stdout


def test_heal_reads_stdin_and_honours_the_finish_reason() -> None:
    """`-` reads stdin; --finish-reason length turns a cut-off answer into a truncation repair."""
    result = _heal(
        "-", "--model", TICKET, "--finish-reason", "length", input='{"urgency": 5, "summ'
    )
    assert 1 == result.exit_code
    assert "**Degraded**: `token_truncated` (the output token limit was reached" in result.stdout
    assert "- **Finish reason**: `length`" in result.stdout
    assert "(`truncation`)" in result.stdout


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["missing-file.txt", "--model", TICKET], "cannot read missing-file.txt"),
        (["garbage.txt", "--model", "no_such_module_xyz:Model"], "no_such_module_xyz"),
        (["garbage.txt", "--model", f"{PACK}:Nope"], "no attribute 'Nope'"),
        (["garbage.txt", "--model", "missing.py:Model"], "no Python file"),
        (["garbage.txt", "--model", f"{PACK}:urgent_summary_explains"], "cannot validate against"),
        (["garbage.txt"], "name the target type"),
        (["garbage.txt", "--contracts", "no_such_pack_xyz"], "could not load contract pack"),
        (["garbage.txt", "--model", TICKET, "--format", "yaml"], "yaml"),
    ],
    ids=[
        "missing-file",
        "no-module",
        "no-attribute",
        "no-file",
        "not-a-type",
        "no-model",
        "bad-pack",
        "bad-format",
    ],
)
def test_heal_usage_errors_exit_2(
    args: list[str], hint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing file, a spec that names no type, a bad pack or format: exit 2 with the reason."""
    monkeypatch.chdir(FIXTURES)
    result = CliRunner().invoke(app, ["heal", *args])
    assert 2 == result.exit_code
    assert hint in _unboxed(result.stderr)


def test_heal_model_spec_forms_all_load_the_same_type() -> None:
    """`pkg.mod:Attr`, `pkg.mod.Attr` and `file.py:Attr` specs all name a type."""
    assert SupportTicket is load_object("healjson._cli.demo_runs:SupportTicket")
    assert SupportTicket is load_object("healjson._cli.demo_runs.SupportTicket")
    assert "Ticket" == load_object(TICKET).__name__
    with pytest.raises(SpecError, match="names no attribute"):
        load_object(PACK)
    with pytest.raises(SpecError, match="empty spec"):
        load_object("  ")


def test_heal_json_output_round_trips_through_outcome_from_dict() -> None:
    """`--format json` prints `outcome.to_dict()`, which `outcome_from_dict` rebuilds."""
    ticket_type = healjson.load_contracts(PACK).model
    healed = _heal(str(FIXTURES / "fenced_valid.txt"), "-c", PACK, "--format", "json")
    degraded = _heal(str(FIXTURES / "contract_violation.txt"), "-c", PACK, "--format", "json")
    assert (0, 1) == (healed.exit_code, degraded.exit_code)

    value = healjson.outcome_from_dict(json.loads(healed.stdout), model=ticket_type)
    assert isinstance(value, Healed)
    assert "ORD-123456" == value.value.orderId
    assert ("code_fence", "prose_around") == value.flags[:2]

    data = json.loads(degraded.stdout)
    rebuilt = healjson.outcome_from_dict(data)
    assert isinstance(rebuilt, Degraded)
    assert "urgent_summary_explains" == rebuilt.errors[0].rule
    assert "repair" == data["repair_request"]["strategy"]
    assert ["assistant", "user"] == [m["role"] for m in data["repair_request"]["messages"]]
    assert data["repair_request"]["prompt"] == data["repair_request"]["messages"][1]["content"]


@pytest.mark.parametrize(
    ("raw", "finish_reason"),
    [
        (
            '{"urgency": 5, "category": "refund", "summary": "Refund!", "orderId": "ORD-000001"}',
            None,
        ),
        ('{"urgency": 9, "category": "misc", "summary": "ok"}', None),
        ("Sorry, no JSON today.", None),
        ('{"urgency": 5, "category": "logi', "length"),
        ("", None),
    ],
    ids=["contract", "schema", "syntax", "truncated", "empty"],
)
def test_heal_repair_prompt_is_the_one_the_engine_sends(
    raw: str, finish_reason: str | None
) -> None:
    """The repair prompt `heal` prints equals the engine's second request for the same answer."""
    pack = healjson.load_contracts(PACK)
    engine = pack.healer().run(ScriptedModel([Reply(raw, finish_reason), GOOD]), PROMPT)
    local = healjson.validate(
        raw, pack.model, contracts=pack.contracts, finish_reason=finish_reason
    )
    assert engine.attempts[1].prompt == next_prompt(local)


def test_heal_contract_error_has_no_repair_request() -> None:
    """A raising contract degrades with `contract_error` and no repair request, as in the engine."""

    def broken(ticket: Any) -> None:
        raise RuntimeError("bug in the rule")

    outcome = healjson.validate(GOOD, SupportTicket, contracts=[broken])
    assert next_prompt(outcome) is None
    assert "#### No repair request" in heal_report(outcome, None)
    assert next_prompt(healjson.validate(GOOD, SupportTicket)) is None


def test_heal_runs_as_a_subprocess() -> None:
    """`python -m healjson heal` prints parseable JSON and exits 0 healed, 1 degraded."""
    base = [sys.executable, "-m", "healjson", "heal", "--contracts", PACK, "--format", "json"]
    pipes: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    # both processes start at once: each spends most of its time starting up
    with (
        subprocess.Popen([*base, str(FIXTURES / "fenced_valid.txt")], **pipes) as healed,
        subprocess.Popen([*base, "-"], stdin=subprocess.PIPE, **pipes) as degraded,
    ):
        degraded_out, _ = degraded.communicate("not json", timeout=60)
        healed_out, _ = healed.communicate(timeout=60)
    assert (0, 1) == (healed.returncode, degraded.returncode)
    assert json.loads(healed_out)["ok"] is True
    assert "syntax" == json.loads(degraded_out)["repair_request"]["strategy"]
