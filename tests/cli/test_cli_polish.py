"""The command line reads finished: `--version`, help that reflows and fits 80 columns, no
internal jargon, Markdown rendered on a terminal and byte-for-byte plain when piped, and a demo
whose fallback passes its own schema."""

from __future__ import annotations

import io
import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from healjson._cli import markdown_out
from healjson._cli.app import app
from healjson._cli.demo_runs import (
    FALLBACK,
    SupportTicket,
    demo_scenarios,
    run_demo,
    urgent_tickets_explain,
)
from healjson._cli.heal import heal_report
from healjson._core.outcome.record import render_markdown
from healjson._core.run.healer import validate
from paths import ROOT

COMMANDS = ["demo", "heal", "batch", "trace", "eval"]
RUN_FACTS = re.compile(r"^(- \*\*(?:Run id|Latency)\*\*: ).*$", re.MULTILINE)
CLI = ROOT / "src" / "healjson" / "_cli"
BAD_REPLY = '{"urgency": 9}'


def test_version_prints_the_installed_version() -> None:
    """`healjson --version` prints the installed distribution's version."""
    result = CliRunner().invoke(app, ["--version"])

    assert 0 == result.exit_code
    assert f"healjson {version('healjson')}\n" == result.stdout


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_fits_80_columns_and_has_no_bool_metavar(command: str) -> None:
    """No help line is wider than 80 columns and flags show no `<bool>` metavar."""
    args = [command, "--help"] if command else ["--help"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})

    assert 0 == result.exit_code, result.output
    assert [] == [line for line in result.stdout.splitlines() if len(line) > 80]
    assert "<bool>" not in result.stdout
    assert "│" not in result.stdout  # plain, reflowed paragraphs: no boxes cutting lines


def test_help_reflows_docstring_paragraphs() -> None:
    """A docstring's own line break (after "healjson would") does not survive into help."""
    result = CliRunner().invoke(app, ["heal", "--help"], env={"COLUMNS": "80"})

    assert "healjson would send next" in result.stdout


def test_batch_help_documents_stop_after_and_assigned_ids() -> None:
    """`healjson batch --help` documents `--stop-after N` and the `#line-N` ids it assigns."""
    result = CliRunner().invoke(app, ["batch", "--help"], env={"COLUMNS": "80"})
    text = " ".join(result.stdout.split())

    assert "--stop-after N" in text
    assert "#line-N" in text


def test_no_internal_jargon_in_user_facing_text() -> None:
    """Nothing under `_cli/` speaks of the design notes ("Case #7", "the seed")."""
    jargon = re.compile(r"case #?7|\bseed", re.IGNORECASE)
    hits = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(CLI.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if jargon.search(line)
    ]
    assert [] == hits
    assert not jargon.search(json.dumps(SupportTicket.model_json_schema()))


def test_the_demo_fallback_passes_its_own_schema_and_contracts() -> None:
    """The value the degraded demo run hands back is itself a valid ticket."""
    checked = validate(json.dumps(FALLBACK), SupportTicket, contracts=[urgent_tickets_explain])

    assert checked.ok, checked
    degraded = run_demo()[-1][1]
    assert not degraded.ok
    SupportTicket.model_validate(degraded.fallback)


def test_the_demo_prints_every_title_once_and_plain_markdown_when_piped() -> None:
    """Piped, the demo prints exactly the Markdown it builds (no rich escape codes)."""
    result = CliRunner().invoke(app, ["demo"])

    assert 0 == result.exit_code, result.output
    for scenario in demo_scenarios():
        assert 1 == result.stdout.count(scenario.title), scenario.title
    expected = []
    for index, (scenario, outcome) in enumerate(run_demo(), 1):
        expected += [f"\n## {index}. {scenario.title}\n", f"_{scenario.shows}_\n"]
        expected.append(render_markdown(outcome, title="What happened"))
    # each run has its own id and timings: the two runs of a scenario differ in those lines only
    assert _any_run("\n".join(expected) + "\n") == _any_run(result.stdout)
    assert "\x1b" not in result.stdout


@pytest.mark.parametrize("reply", ['{"urgency": "5", "category": "logistics", '
                                   '"summary": "Order stuck in transit", "orderId": "ORD-123456",}',
                                   BAD_REPLY])  # fmt: skip
def test_heal_piped_prints_the_report_byte_for_byte(tmp_path: Path, reply: str) -> None:
    """`healjson heal` piped prints the plain Markdown report, byte for byte what the pieces
    render."""
    from healjson._cli.loading import load_setup
    from healjson._core.run.answers import next_prompt

    file = tmp_path / "reply.txt"
    file.write_text(reply, encoding="utf-8")
    result = CliRunner().invoke(app, ["heal", str(file), "--contracts", "support_ticket"])

    setup = load_setup("support_ticket", None)
    outcome = validate(reply, setup.target, contracts=setup.contracts)
    report = heal_report(outcome, next_prompt(outcome))
    assert _any_run(report) == _any_run(result.stdout)
    assert outcome.trace() in report  # the report is the trace, plus the CLI's lines around it


def test_heal_messages_takes_the_text_itself(tmp_path: Path) -> None:
    """`--messages TEXT` (no such file) is the original request, as plain text for one turn."""
    file = tmp_path / "reply.txt"
    file.write_text(BAD_REPLY, encoding="utf-8")
    request = "My order ORD-123456 is late, please help."

    inline = CliRunner().invoke(
        app, ["heal", str(file), "-c", "support_ticket", "--messages", request, "-f", "json"]
    )
    listed = CliRunner().invoke(
        app,
        ["heal", str(file), "-c", "support_ticket", "-f", "json", "--messages",
         json.dumps([{"role": "user", "content": request}])],
    )  # fmt: skip

    assert (1, 1) == (inline.exit_code, listed.exit_code), inline.output
    sent = json.loads(inline.stdout)["repair_request"]["messages"]
    assert {"role": "user", "content": request} == sent[0]
    assert sent == json.loads(listed.stdout)["repair_request"]["messages"]


def test_markdown_is_rendered_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal, Markdown output is rendered by rich, not printed raw."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr(markdown_out.sys, "stdout", screen)

    markdown_out.echo_markdown("### A heading\n\n- **bold** item\n")

    shown = screen.getvalue()
    assert "A heading" in shown
    assert "###" not in shown
    assert "**" not in shown


def _any_run(text: str) -> str:
    """`text` with every trace's run id and latency lines made the same (each run draws a new
    id and takes its own time)."""
    return RUN_FACTS.sub(r"\1(this run's)", text)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["heal", "-", "--contracts", "support_ticket", "-f", "yaml"],
            "'yaml' is not one of md, json",
        ),
        (
            ["batch", "in.jsonl", "--out", "o", "--model", "m", "--json-mode", "yaml"],
            "'yaml' is not one of json_schema, structured_outputs, constrained, json_object,"
            " prompt",
        ),
        (
            ["batch", "in.jsonl", "--out", "o", "--model", "m", "--endpoint", "chats"],
            "'chats' is not one of chat, responses",
        ),
    ],
)
def test_an_unknown_choice_says_which_ones_there_are_without_pydantics_words(
    args: list[str], said: str
) -> None:
    """A value that is not one of an option's choices is refused naming them, without
    pydantic's "Value error," prefix."""
    result = CliRunner().invoke(app, args, input="{}")

    assert 2 == result.exit_code
    output = " ".join(result.output.replace("│", " ").split())
    assert said in output
    assert "Value error" not in output


def test_an_option_of_the_other_mode_is_not_blamed_on_batch_api(tmp_path: Path) -> None:
    """`batch --provider ...` without `--batch-api` names `--provider`, not an invalid
    `--batch-api` value (it was never given)."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "prompt": "a"}\n', encoding="utf-8")
    args = ["batch", str(source), "--out", str(tmp_path / "o"), "--model", "m"]
    args += ["--contracts", "support_ticket", "--provider", "openai"]

    result = CliRunner().invoke(app, args)

    assert 2 == result.exit_code
    output = " ".join(result.output.split())
    assert "Error: --provider: only for --batch-api runs (add --batch-api, or drop --provider)" in (
        output
    )
    assert "Invalid value for '--batch-api'" not in output


def test_the_testing_server_help_says_what_it_is_for(capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m healjson.testing --help` says it is a scripted server for testing code that
    calls a model, not a benchmark tool."""
    from healjson.testing.__main__ import main

    with pytest.raises(SystemExit) as exited:
        main(["--help"])

    assert 0 == exited.value.code
    said = " ".join(capsys.readouterr().out.split())
    assert "for testing code that calls a model with no API key and no network" in said
    assert "for benchmarks" not in said
