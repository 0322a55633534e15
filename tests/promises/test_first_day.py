"""A user's first day: what installing, wrapping, logging and reading a trace look like."""

from __future__ import annotations

import json
import logging
import sys
import tomllib
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel, Field

import healjson
import healjson.ray as healjson_ray
from healjson import Degraded, Healed, Healer, HealPolicy, Violation, contract
from healjson._extras import missing_extra
from healjson.testing import ScriptedServer, _schema_data
from paths import ROOT


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


@contract(fields=("urgency", "summary"))
def urgent_explains(ticket: Ticket) -> Violation | None:
    if ticket.urgency >= 4 and len(ticket.summary) < 10:
        return Violation("an urgent ticket explains itself", prescription="write 10+ characters")
    return None


GOOD = '{"urgency": 5, "summary": "Order stuck for a week"}'
TOO_URGENT = '{"urgency": 9, "summary": "Order stuck for a week"}'
SHORT = '{"urgency": 5, "summary": "help"}'


def scripted(*replies: str) -> Any:
    items = list(replies)

    def call(messages: Any, **params: Any) -> str:
        return items.pop(0)

    return call


# -- installation: openai is required, every other SDK names its extra ---------------------------


def test_openai_is_a_required_dependency_and_its_extra_an_empty_alias() -> None:
    """openai is a required dependency, its extra is an empty alias, and no other extra pins
    openai."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("openai") for dep in project["dependencies"])
    extras = project["optional-dependencies"]
    assert extras["openai"] == []
    assert extras["anthropic"]
    assert all(
        not dep.startswith("openai") for name in ("instructor", "anthropic") for dep in extras[name]
    )


def test_missing_extra_names_the_package_and_the_extra() -> None:
    """The missing-extra message names the package and the `pip install 'healjson[...]'` line."""
    said = missing_extra("anthropic", "anthropic")
    assert said == "this needs the anthropic package: pip install 'healjson[anthropic]'"


def test_a_missing_anthropic_sdk_names_the_anthropic_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--batch-api --provider anthropic` without the anthropic SDK says to install the
    `anthropic` extra."""
    import typer

    from healjson._cli.batch_api import BatchApiOptions, _client

    monkeypatch.setitem(sys.modules, "anthropic", None)  # `import anthropic` raises ImportError
    options = BatchApiOptions(
        "anthropic", "m", None, "k", None, None, "json_schema", None, None, 0, 1.0,
        True, False, False, False,
    )  # fmt: skip
    with pytest.raises(typer.BadParameter) as raised:
        _client(options)
    assert missing_extra("anthropic", "anthropic") in str(raised.value)


@pytest.mark.parametrize(
    ("module", "make", "extra"),
    [
        ("pyarrow", lambda: healjson_ray.HealReplies(Ticket), "ray"),
        ("hypothesis", _schema_data.require_hypothesis, "testing"),
    ],
)
def test_a_missing_optional_sdk_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, make: Any, extra: str
) -> None:
    """`healjson.ray` without pyarrow and the hypothesis kit without hypothesis each name the
    extra to install."""
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"pip install 'healjson\[" + extra + r"\]'"):
        make()


# -- a retry count of another library is a clear TypeError ---------------------------------------


@pytest.mark.parametrize("name", ["max_retries", "max_attempts", "retry"])
def test_a_retry_keyword_on_create_says_to_use_the_policy(name: str) -> None:
    """A retry keyword on `create` is refused before any call, saying to use
    `policy=HealPolicy(max_attempts=...)`."""
    with ScriptedServer([GOOD]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        client = healjson.wrap(sdk)
        with pytest.raises(TypeError, match=r"policy=HealPolicy\(max_attempts=\.\.\.\)") as raised:
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], response_model=Ticket,
                **{name: 3},
            )  # fmt: skip
        assert f"{name}=" in str(raised.value)
        assert server.requests == []  # refused before any call
        sdk.close()


# -- logging by severity --------------------------------------------------------------------------


def _events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int]]:
    return [(r.healjson_event, r.levelno) for r in caplog.records if r.name == "healjson"]


def test_degraded_logs_a_warning_healed_info_attempts_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A degraded run is logged at WARNING, a healed one at INFO, and each attempt's events at
    DEBUG."""
    caplog.set_level(logging.DEBUG, logger="healjson")
    healed = Healer(Ticket, contracts=[urgent_explains]).run(scripted(SHORT, GOOD), "go")
    assert isinstance(healed, Healed)
    levels = dict(_events(caplog))
    assert levels["healjson.healed"] == logging.INFO
    for name in ("healjson.attempt", "healjson.diagnostic", "healjson.repair_request"):
        assert levels[name] == logging.DEBUG
    caplog.clear()
    policy = HealPolicy(max_attempts=1)
    degraded = Healer(Ticket, policy=policy).run(scripted(TOO_URGENT), "go")
    assert isinstance(degraded, Degraded)
    assert ("healjson.degraded", logging.WARNING) in _events(caplog)


def test_at_warning_only_the_degraded_run_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """At WARNING, only a degraded run's event is logged."""
    caplog.set_level(logging.WARNING, logger="healjson")
    Healer(Ticket).run(scripted(GOOD), "go")
    Healer(Ticket, policy=HealPolicy(max_attempts=1)).run(scripted(TOO_URGENT), "go")
    assert [("healjson.degraded", logging.WARNING)] == _events(caplog)


def test_a_sink_with_info_alone_still_gets_every_event() -> None:
    """A logger with only `.info` still gets every event, DEBUG and WARNING ones included."""

    class Sink:
        def __init__(self) -> None:
            self.events: list[str] = []

        def info(self, event: str, **fields: Any) -> None:
            self.events.append(event)

    sink = Sink()
    with healjson.set_logger(sink):
        Healer(Ticket, policy=HealPolicy(max_attempts=1)).run(scripted(TOO_URGENT), "go")
    assert sink.events[0] == "healjson.attempt"
    assert sink.events[-1] == "healjson.degraded"


# -- trace labels ---------------------------------------------------------------------------------


def test_trace_labels_a_schema_rule_schema_and_a_contract_contract() -> None:
    """The trace labels a schema rule as `schema` and a contract as `contract`."""
    schema = Healer(Ticket, policy=HealPolicy(max_attempts=1)).run(scripted(TOO_URGENT), "go")
    text = schema.trace()
    assert "- schema: `less_than_equal`" in text
    assert "contract: `less_than_equal`" not in text
    broken = Healer(Ticket, contracts=[urgent_explains], policy=HealPolicy(max_attempts=1))
    text = broken.run(scripted(SHORT), "go").trace()
    assert "- contract: `urgent_explains`" in text


# -- `healjson trace` on a many-row file ----------------------------------------------------------


def _batch_rows(path: Path) -> Path:
    from healjson._core.outcome.outcome import Healed as HealedOutcome

    healed = Healer(Ticket, contracts=[urgent_explains]).run(scripted(SHORT, GOOD), "go")
    degraded = Healer(Ticket, policy=HealPolicy(max_attempts=1)).run(scripted(TOO_URGENT), "go")
    assert isinstance(healed, HealedOutcome)
    rows = [
        {"id": "a|1", "ok": True, "attempts": 2, "usage": {"total_tokens": 7},
         "outcome": healed.to_dict()},
        {"id": 2, "ok": False, "reason": "max_retries_exceeded", "attempts": 1,
         "usage": {"total_tokens": 5}, "outcome": degraded.to_dict()},
        {"id": "c", "ok": False, "reason": "api_error", "attempts": 3, "usage": {}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + "junk\n", encoding="utf-8")
    return path


def test_trace_of_many_rows_prints_an_index_and_totals(tmp_path: Path) -> None:
    """`healjson trace` of a batch output prints an index table of the rows and their totals."""
    from typer.testing import CliRunner

    from healjson._cli import app

    out = _batch_rows(tmp_path / "out.jsonl")
    result = CliRunner().invoke(app, ["trace", str(out)])

    assert 0 == result.exit_code, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "| id | verdict | calls | reason |"
    assert "| a\\|1 | healed | 2 |  |" in lines
    assert "| 2 | degraded | 1 | `max_retries_exceeded` |" in lines
    assert "| c | degraded | 3 | `api_error` |" in lines
    assert (
        "**3 rows**: 1 healed, 2 degraded (max_retries_exceeded 1, api_error 1); "
        "6 call(s), 12 token(s)."
    ) in lines
    assert "--id ID" in result.stdout
    assert "### id" not in result.stdout  # no trace unless asked
    assert result.stderr.count("not a JSON line, skipped") == 1

    one = CliRunner().invoke(app, ["trace", str(out), "--id", "2"])
    assert one.stdout.startswith("### id 2\n")
    assert "| id |" not in one.stdout

    every = CliRunner().invoke(app, ["trace", str(out), "--all"])
    assert every.stdout.startswith("| id | verdict")
    assert "### id a|1" in every.stdout
    assert "### id 2" in every.stdout
    assert "- id c: degraded (`api_error`)" in every.stdout
    assert every.stderr.count("not a JSON line, skipped") == 1  # reported once


def test_trace_of_one_row_shows_its_trace_without_an_index(tmp_path: Path) -> None:
    """`healjson trace` of a one-row output shows that row's trace without an index."""
    from typer.testing import CliRunner

    from healjson._cli import app

    out = tmp_path / "one.jsonl"
    out.write_text(json.dumps({"id": "x", "ok": True, "attempts": 1}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["trace", str(out)])
    assert result.stdout.startswith("- id x: healed in 1 call(s)")


# -- `healjson batch`: an input that is not JSON Lines, options of the other mode ----------------

BATCH_GOOD = '{"urgency": 2, "category": "other", "summary": "a question about an order"}'


def _batch(server: ScriptedServer, source: Path, out: Path, *more: str) -> Any:
    from typer.testing import CliRunner

    from healjson._cli import app

    args = ["batch", str(source), "--out", str(out), "--model", "m"]
    args += ["--contracts", "support_ticket", "--base-url", server.base_url, "--api-key", "k"]
    return CliRunner().invoke(app, [*args, *more])


@pytest.mark.parametrize(
    "text",
    [
        "id,prompt\n1,hello\n2,world\n",
        '[{"id": 1, "prompt": "a"}, {"id": 2, "prompt": "b"}]\n',
        '[\n  {"id": 1, "prompt": "a"},\n  {"id": 2, "prompt": "b"}\n]\n',
        '[\n  {\n    "id": 1,\n    "prompt": "a"\n  }\n]\n',
    ],
    ids=["csv", "array-one-line", "array-a-row-per-line", "array-indented"],
)
def test_batch_refuses_an_input_that_is_not_json_lines(tmp_path: Path, text: str) -> None:
    """`healjson batch` refuses a CSV or JSON array input, saying it needs JSON Lines."""
    source = tmp_path / "in.jsonl"
    source.write_text(text, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with ScriptedServer([BATCH_GOOD], repeat=True) as server:
        result = _batch(server, source, out)
        assert server.requests == []  # refused before any call
    assert 2 == result.exit_code
    assert "is not JSON Lines (one JSON object per line)" in result.output
    assert not out.exists()


def test_batch_keeps_an_input_that_starts_with_a_row(tmp_path: Path) -> None:
    """`healjson batch` runs an input that starts with a row, its unreadable lines becoming
    `invalid_input` rows."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "prompt": "a"}\nnot json\n[1]\n\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with ScriptedServer([BATCH_GOOD], repeat=True) as server:
        result = _batch(server, source, out, "--no-progress")
    assert 0 == result.exit_code, result.output
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    invalid = [row["id"] for row in written if row.get("reason") == "invalid_input"]
    assert len(written) == 3
    assert sorted(invalid) == ["#line-2", "#line-3"]  # the row with id 1 was run


@pytest.mark.parametrize(
    ("more", "named", "mode"),
    [
        (["--ledger", "run.sqlite"], "--ledger", "only for --batch-api runs"),
        (["--provider", "openai"], "--provider", "only for --batch-api runs"),
        (["--resubmits", "3"], "--resubmits", "only for --batch-api runs"),
        (["--no-wait"], "--wait/--no-wait", "only for --batch-api runs"),
        (["--batch-api", "-j", "4"], "--concurrency", "only for runs without --batch-api"),
        (["--batch-api", "--stop-after", "2"], "--stop-after", "only for runs without --batch-api"),
    ],
)
def test_batch_refuses_an_option_of_the_other_mode(
    tmp_path: Path, more: list[str], named: str, mode: str
) -> None:
    """`healjson batch` refuses an option of the other mode (with or without `--batch-api`),
    naming it."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "prompt": "a"}\n', encoding="utf-8")
    with ScriptedServer([BATCH_GOOD], repeat=True) as server:
        result = _batch(server, source, tmp_path / "out.jsonl", *more)
        assert server.requests == []
    assert 2 == result.exit_code
    said = " ".join(result.output.replace("│", " ").split())
    assert named in said
    assert mode in said
    assert "Invalid value for '--batch-api'" not in said


@pytest.mark.parametrize(
    ("lines", "refused"),
    [
        ([], False),  # an empty file: JSON Lines with no row
        (["", "   "], False),
        (["", "a,b", "c,d", '{"id": 1}'], True),  # blank lines do not count
        (["a,b", *['{"id": 1}'] * 10, *["x"] * 9], False),  # half of the first 20 are rows
        (["a,b", *["x"] * 10, *['{"id": 1}'] * 30], True),  # only the first 20 are looked at
        (["\ufeff" + '{"id": 1}', "x", "y"], False),  # a byte-order mark before the first row
    ],
)
def test_not_json_lines_looks_at_the_first_line_and_the_first_twenty(
    tmp_path: Path, lines: list[str], refused: bool
) -> None:
    """The JSON Lines check looks at the first non-blank line and the first twenty, skipping
    blank lines and a byte-order mark."""
    from healjson._batch.input_file import not_json_lines

    path = tmp_path / "in.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert (not_json_lines(path) is not None) is refused


def test_not_json_lines_of_a_missing_file_is_a_batch_error(tmp_path: Path) -> None:
    """The JSON Lines check on a missing file is a `BatchError` saying it cannot read it."""
    from healjson._batch.input_file import not_json_lines
    from healjson._batch.rows import BatchError

    with pytest.raises(BatchError, match="cannot read"):
        not_json_lines(tmp_path / "absent.jsonl")


def test_without_a_handler_a_degraded_run_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No handler anywhere: healjson stays quiet (Python's last-resort handler would print a
    WARNING on stderr)."""
    from healjson._core.observe import events

    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(logging.getLogger("healjson"), "handlers", [])
    run = events.for_run("r")
    if run is not None:  # spans, when an OpenTelemetry SDK is set
        run.release()
        assert run.logger is None
    Healer(Ticket, policy=HealPolicy(max_attempts=1)).run(scripted(TOO_URGENT), "go")
    assert capsys.readouterr().err == ""
