"""The repair prompt: what each strategy renders, the messages it sends, history and truncation."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import healjson
from contract_cases import HIGH, contract_errors, diagnostic, high_needs_outage
from healjson import (
    MISSING,
    Degraded,
    RepairPrompt,
    Source,
    Strategy,
)
from healjson._core.repair.prompt import MAX_HISTORY_LINES, history_line

# ---------------------------------------------------------------------------------------------
# RepairPrompt
# ---------------------------------------------------------------------------------------------

ORIGINAL = ({"role": "system", "content": "sys"}, {"role": "user", "content": "make a ticket"})


def test_repair_render_lists_each_diagnostic_with_value_rule_and_fix() -> None:
    """A repair prompt numbers each diagnostic with its path, value, rule and fix."""
    prompt = RepairPrompt(
        Strategy.REPAIR,
        round=1,
        raw_output='{"summary": "way too long"}',
        diagnostics=(
            diagnostic(),
            diagnostic(
                path="urgency",
                value=MISSING,
                constraint="is required",
                prescription="Add `urgency`.",
            ),
        ),
    )

    text = prompt.render()

    assert text.startswith("Your previous answer (above) failed 2 checks:")
    assert '1. `summary` = "way too long"' in text
    assert "   rule: must have at most 5 characters" in text
    assert "   fix: Shorten `summary` to at most 5 characters." in text
    assert "2. `urgency` = <missing>" in text
    assert text.endswith("if that is what makes all the rules hold.")
    assert "Reply with the complete corrected JSON value only" in text


def test_repair_render_says_check_for_one_diagnostic() -> None:
    """One diagnostic reads `failed 1 check:` (singular)."""
    text = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(),)).render()

    assert text.startswith("Your previous answer (above) failed 1 check:")


def test_repair_render_shows_the_other_fields_of_a_contract_rule() -> None:
    """A contract diagnostic lists the other fields involved with their values."""
    (error,) = contract_errors(high_needs_outage)

    text = RepairPrompt(Strategy.REPAIR, 1, json.dumps(HIGH), (error,)).render()

    assert '1. `urgency` = "high"' in text
    assert '   also involved: `summary` = "printer jammed"' in text
    assert "`urgency`, `summary`" in text


def test_repair_render_cuts_long_values() -> None:
    """A very long offending value is shortened with a visible marker."""
    text = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(value="x" * 5000),)).render()

    assert "x" * 5000 not in text
    assert "…(+" in text
    assert len(text) < 1500


def test_repair_render_adds_history_example_and_schema() -> None:
    """History lines, the golden example and the schema each get their own section."""
    prompt = RepairPrompt(
        Strategy.REPAIR,
        round=2,
        raw_output="{}",
        diagnostics=(diagnostic(),),
        history=("attempt 1 (schema): a", "attempt 2 (schema): b"),
        example='{"summary": "ok"}',
        schema='{"type":"object"}',
    )

    text = prompt.render()

    assert (
        "Earlier attempts failed like this; do not repeat them:\n"
        "- attempt 1 (schema): a\n- attempt 2 (schema): b"
    ) in text
    assert 'Example of a valid answer (shape only; use your own values): {"summary": "ok"}' in text
    assert 'JSON schema of the answer: {"type":"object"}' in text
    assert text.index("Earlier attempts") < text.index("Example of") < text.index("JSON schema")


def test_repair_render_without_extras_has_no_extra_sections() -> None:
    """Without history, example or schema, none of those sections appear."""
    text = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(),)).render()

    assert "Earlier attempts" not in text
    assert "Example of a valid answer" not in text
    assert "JSON schema" not in text


def test_syntax_render_quotes_the_parse_problem() -> None:
    """A syntax prompt says why the answer could not be read and asks for bare JSON."""
    error = diagnostic(
        path="<root>",
        constraint="must be valid JSON (no JSON object or array was found)",
        source=Source.SYNTAX,
    )

    text = RepairPrompt(Strategy.SYNTAX, 1, "sorry", (error,)).render()

    assert text.startswith(
        "Your previous answer could not be read as JSON: it must be valid JSON "
        "(no JSON object or array was found)."
    )
    assert "no prose, no code fences" in text
    assert "Reply with the complete corrected JSON value only" not in text


def test_syntax_render_without_diagnostics_has_a_generic_reason() -> None:
    """A syntax prompt with no diagnostics still says the answer was not valid JSON."""
    text = RepairPrompt(Strategy.SYNTAX, 1, "sorry").render()

    assert text.startswith("Your previous answer could not be read as JSON: it is not valid JSON.")


def test_truncation_render_states_the_size_and_asks_for_compact_json() -> None:
    """A truncation prompt says how many characters arrived and asks for a compact object."""
    raw = '{"a": 1, "b": "cut'

    text = RepairPrompt(Strategy.TRUNCATION, 1, raw).render()

    assert f"cut off after {len(raw)} characters" in text
    assert "compactly" in text
    assert "Include every field." in text
    assert "failed" not in text


@pytest.mark.parametrize("strategy", [Strategy.EMPTY_RETRY, Strategy.RESEND])
def test_clean_retry_renders_nothing_and_resends_the_original(strategy: Strategy) -> None:
    """Empty-retry and resend prompts add nothing: the request is the original messages."""
    prompt = RepairPrompt(strategy, 1, "", (diagnostic(),), history=("h",), example="{}")

    assert "" == prompt.render()
    assert list(ORIGINAL) == prompt.messages(ORIGINAL)


@pytest.mark.parametrize("strategy", [Strategy.REPAIR, Strategy.SYNTAX, Strategy.TRUNCATION])
def test_messages_append_the_raw_answer_and_the_repair_turn(strategy: Strategy) -> None:
    """messages() is the original messages, the raw answer as assistant, then the repair turn."""
    raw = '{"summary": "way too long"'
    prompt = RepairPrompt(strategy, 1, raw, (diagnostic(),))

    out = prompt.messages(ORIGINAL)

    assert [*ORIGINAL] == out[:2]
    assert {"role": "assistant", "content": raw} == out[2]
    assert {"role": "user", "content": prompt.render()} == out[3]
    assert 4 == len(out)


def test_messages_are_copies_of_the_original() -> None:
    """Changing the built messages does not change the caller's messages."""
    original = [{"role": "user", "content": "make a ticket"}]
    out = RepairPrompt(Strategy.REPAIR, 1, "{}", (diagnostic(),)).messages(original)

    out[0]["content"] = "changed"

    assert "make a ticket" == original[0]["content"]


def test_messages_with_no_raw_output_send_an_empty_assistant_turn() -> None:
    """A missing raw output (a refusal) becomes an empty assistant turn."""
    out = RepairPrompt(Strategy.REPAIR, 1, None, (diagnostic(),)).messages(ORIGINAL)

    assert {"role": "assistant", "content": ""} == out[2]


def test_history_line_summarises_an_attempt_in_one_bounded_line() -> None:
    """history_line is one line with the attempt number, verdict and diagnostics, <= 200 chars."""
    short = history_line(2, "schema", [diagnostic()])
    long = history_line(3, "schema", [diagnostic(constraint="c" * 500)] * 3)
    empty = history_line(1, "empty", [])

    assert 'attempt 2 (schema): summary = "way too long": must have at most 5 characters' == short
    assert 200 == len(long)
    assert long.endswith("…")
    assert "\n" not in long
    assert "attempt 1 (empty): no usable answer" == empty
    assert 4 == MAX_HISTORY_LINES


class _Span(BaseModel):
    start: int
    end: int


@healjson.contract(fields=("start", "end"))
def _ordered(span: _Span) -> healjson.Violation | None:
    return None if span.start <= span.end else healjson.Violation("start must not exceed end")


@pytest.mark.parametrize(
    ("text", "also"),
    [
        ('{"start": 1}', "end"),  # a provider closed a cut tool call: a field is missing
        ('{"start": 9, "end": 3}', "start must not exceed end"),  # cut before a fix-up
    ],
)
def test_a_complete_value_failing_l2_in_a_cut_reply_is_a_truncation(text: str, also: str) -> None:
    """A closed value in a reply cut by the token limit that fails L2 is a truncation, where the
    same reply uncut is `invalid_output`."""
    outcome = healjson.validate(text, _Span, contracts=[_ordered], finish_reason="length")
    assert isinstance(outcome, healjson.Degraded)
    assert healjson.Reason.TOKEN_TRUNCATED == outcome.reason
    assert "truncation" == outcome.errors[0].source
    assert any(also in (e.path + e.constraint) for e in outcome.errors[1:])
    # the same reply without the cut is an ordinary L2 failure
    plain = healjson.validate(text, _Span, contracts=[_ordered])
    assert isinstance(plain, healjson.Degraded)
    assert healjson.Reason.INVALID_OUTPUT == plain.reason


def test_a_complete_valid_value_in_a_cut_reply_is_still_accepted() -> None:
    """A closed, valid value in a reply cut by the token limit is still accepted."""
    outcome = healjson.validate('{"start": 1, "end": 2}', _Span, finish_reason="length")
    assert isinstance(outcome, healjson.Healed)
    assert _Span(start=1, end=2) == outcome.value


@pytest.mark.parametrize(
    ("finish_reason", "reply", "opening"),
    [
        ("length", '{"a": 1, "b": "cu', "by the output token limit"),
        (None, '{"a": 1, "b": "cu', "before the JSON value was complete"),
        (None, "<think>first the a, then", "held only reasoning and no JSON value"),
    ],
)
def test_a_truncation_prompt_names_the_cause_the_parser_found(
    finish_reason: str | None, reply: str, opening: str
) -> None:
    """The token limit is blamed only when the provider said so (finish_reason=length)."""
    outcome = healjson.validate(reply, dict, finish_reason=finish_reason)
    assert isinstance(outcome, Degraded)
    diagnostics = outcome.attempts[0].diagnostics
    text = RepairPrompt(Strategy.TRUNCATION, 1, reply, diagnostics).render()
    assert opening in text.splitlines()[0]
    if finish_reason is None:
        assert "token limit" not in text
