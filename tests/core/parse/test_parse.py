"""L1 `healjson.parse`: one group of tests per malformation class, then pathological inputs."""

from __future__ import annotations

import enum
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel

import healjson
from healjson import Flag, Healed, ParseResult, Source, parse


class Ticket(BaseModel):
    id: int
    category: Literal["refund", "billing", "other"]
    summary: str


class Kind(enum.StrEnum):
    REFUND = "refund"
    BILLING = "billing"


class Order(BaseModel):
    id: int
    kind: Kind


class Snippet(BaseModel):
    code: str


TICKET = {"id": 7, "category": "refund", "summary": "Card charged twice"}
TICKET_JSON = json.dumps(TICKET)


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list) and value:
        depth += 1
        value = value[0]
    return depth + (1 if isinstance(value, list) else 0)


# --- fast path -----------------------------------------------------------------------------------


def test_valid_json_object_parses_without_flags() -> None:
    """A reply that is exactly valid JSON comes back unchanged with no flags."""
    result = parse('{"a": 1, "b": [true, null, "x"]}')
    assert {"a": 1, "b": [True, None, "x"]} == result.value
    assert () == result.flags
    assert None is result.error
    assert False is result.truncated
    assert result.ok


def test_valid_json_matching_the_schema_parses_without_flags() -> None:
    """Valid JSON that already fits the schema takes the fast path and records nothing."""
    result = parse(TICKET_JSON, Ticket)
    assert TICKET == result.value
    assert () == result.flags
    assert result.ok


@pytest.mark.parametrize(
    ("text", "expected"),
    [("[1, 2]", [1, 2]), ('"x"', "x"), ("3.5", 3.5), ("null", None), ("true", True)],
    ids=["array", "string", "number", "null", "boolean"],
)
def test_valid_json_scalars_and_arrays_parse_without_flags(text: str, expected: Any) -> None:
    """Any top-level JSON value, not only objects, is accepted as is."""
    result = parse(text)
    assert expected == result.value
    assert () == result.flags
    assert result.ok


def test_surrounding_whitespace_is_not_a_repair() -> None:
    """Leading and trailing whitespace around valid JSON raises no flag."""
    result = parse('\n  {"a": 1}  \n\t')
    assert {"a": 1} == result.value
    assert () == result.flags


# --- code fences ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"a": 1}\n```',
        '```\n{"a": 1}\n```',
        '~~~\n{"a": 1}\n~~~',
        '~~~json\n{"a": 1}\n~~~',
        '````json\n{"a": 1}\n````',
    ],
    ids=["json-fence", "bare-fence", "tilde-fence", "tilde-json-fence", "four-backticks"],
)
def test_fenced_json_is_unwrapped_and_flagged(text: str) -> None:
    """The body of a markdown code fence is parsed and the fence is recorded."""
    result = parse(text)
    assert {"a": 1} == result.value
    assert (Flag.CODE_FENCE,) == result.flags
    assert result.ok


def test_fence_left_open_around_complete_json_is_accepted() -> None:
    """A fence without its closing marker still yields the complete JSON it holds."""
    result = parse('```json\n{"a": 1}\n')
    assert {"a": 1} == result.value
    assert Flag.CODE_FENCE in result.flags
    assert result.ok


def test_fence_with_prose_around_flags_fence_and_prose() -> None:
    """Prose outside a fence is dropped and both repairs are recorded."""
    result = parse('Here you go:\n```json\n{"a": 1}\n```\nLet me know if that helps.')
    assert {"a": 1} == result.value
    assert {Flag.CODE_FENCE, Flag.PROSE_AROUND} == set(result.flags)


def test_only_the_fence_that_validates_is_the_answer() -> None:
    """Of several fences, the one whose JSON validates is chosen, not simply the first."""
    text = (
        "Draft:\n```json\n"
        '{"id": "seven", "category": "refund"}\n'
        "```\nFinal:\n```json\n"
        f"{TICKET_JSON}\n"
        "```"
    )
    result = parse(text, Ticket)
    assert TICKET == result.value
    assert Flag.CODE_FENCE in result.flags
    assert Flag.MULTIPLE_CANDIDATES in result.flags
    assert result.ok


def test_two_fences_that_both_validate_are_ambiguous() -> None:
    """Two different valid answers are never resolved silently: no value, both kept."""
    other = {"id": 8, "category": "billing", "summary": "Other"}
    text = f"Final:\n```json\n{TICKET_JSON}\n```\nAlternative:\n```json\n{json.dumps(other)}\n```"
    result = parse(text, Ticket)
    assert None is result.value
    assert Source.AMBIGUITY == result.error.source
    assert (TICKET, other) == result.candidates
    assert TICKET == parse(text, Ticket, on_ambiguity="first").value
    assert other == parse(text, Ticket, on_ambiguity="last").value
    assert Flag.AMBIGUOUS_CHOICE in parse(text, Ticket, on_ambiguity="last").flags


def test_fence_inside_a_json_string_does_not_end_the_fence() -> None:
    """A ``` inside a string value of fenced JSON is content, not the closing fence."""
    result = parse('```json\n{"code": "```py\\nx\\n```"}\n```')
    assert {"code": "```py\nx\n```"} == result.value
    assert False is result.truncated
    assert Flag.CODE_FENCE in result.flags
    assert result.ok


def test_fence_inside_a_json_string_with_a_schema_is_content() -> None:
    """With a schema, a ``` inside a fenced string value still belongs to the string."""
    result = parse('```json\n{"code": "```py\\nx\\n```"}\n```', Snippet)
    assert {"code": "```py\nx\n```"} == result.value
    assert result.ok


@pytest.mark.parametrize("schema", [None, Snippet], ids=["untyped", "typed"])
def test_fenced_string_holding_a_closer_then_a_fence_marker_is_kept_whole(schema: Any) -> None:
    """A string value `}```` inside fenced JSON is neither a closing fence nor the object's end."""
    result = parse('```json\n{"code": "}```", "n": 1}\n```', schema)
    assert "}```" == result.value["code"]
    assert False is result.truncated
    assert result.ok


# --- prose around the JSON -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'Sure! Here is the result: {"a": 1}',
        '{"a": 1}\nHope that helps.',
        'Here it is:\n{"a": 1}\nAnything else?',
    ],
    ids=["before", "after", "both"],
)
def test_prose_around_json_is_dropped(text: str) -> None:
    """Text before or after the JSON is dropped and flagged."""
    result = parse(text)
    assert {"a": 1} == result.value
    assert (Flag.PROSE_AROUND,) == result.flags
    assert result.ok


def test_second_candidate_is_chosen_when_only_it_validates() -> None:
    """When two JSON values appear, the schema picks the one that validates."""
    text = f'First I tried {{"id": "seven"}} but the answer is {TICKET_JSON}.'
    result = parse(text, Ticket)
    assert TICKET == result.value
    assert Flag.MULTIPLE_CANDIDATES in result.flags
    assert Flag.PROSE_AROUND in result.flags
    assert result.ok


# --- syntax repairs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ('{"a": 1, // the first\n "b": 2}', {"a": 1, "b": 2}),
        ('{"a": 1, # the first\n "b": 2}', {"a": 1, "b": 2}),
        ('{"a": 1, /* the first */ "b": 2}', {"a": 1, "b": 2}),
        ("{'a': 'x y', 'b': 2}", {"a": "x y", "b": 2}),
        ("{'a': \"it's\"}", {"a": "it's"}),
        ("{\u201ca\u201d: \u201cx y\u201d, \u201cb\u201d: 2}", {"a": "x y", "b": 2}),
        ("{\u2018a\u2019: \u2018x y\u2019}", {"a": "x y"}),
        ('{a: 1, b_c: "x"}', {"a": 1, "b_c": "x"}),
        ('{"a": True, "b": False, "c": None}', {"a": True, "b": False, "c": None}),
        ('{"a": "line one\nline two"}', {"a": "line one\nline two"}),
        ('{"a": undefined, "b": 1}', {"a": None, "b": 1}),
    ],
    ids=[
        "trailing-commas",
        "slash-comment",
        "hash-comment",
        "block-comment",
        "single-quotes",
        "apostrophe-in-double-quotes",
        "smart-double-quotes",
        "smart-single-quotes",
        "unquoted-keys",
        "python-literals",
        "unescaped-newline",
        "js-undefined",
    ],
)
def test_syntax_slips_are_repaired_and_flagged(text: str, expected: Any) -> None:
    """Each common syntax slip is repaired to the intended value with `syntax_repaired`."""
    result = parse(text)
    assert expected == result.value
    assert Flag.SYNTAX_REPAIRED in result.flags
    assert False is result.truncated
    assert result.ok


def test_syntax_repair_combines_with_fence_and_schema() -> None:
    """A fenced reply with several slips still validates against the schema."""
    text = (
        "```json\n{id: 7, 'category': 'refund', \u201csummary\u201d: \"Card charged twice\",}\n```"
    )
    result = parse(text, Ticket)
    assert TICKET == result.value
    assert {Flag.CODE_FENCE, Flag.SYNTAX_REPAIRED} <= set(result.flags)
    assert result.ok


# --- schema-aligned repairs ----------------------------------------------------------------------


def test_numeric_string_for_an_int_field_is_flagged_as_a_coercion() -> None:
    """`"5"` for an int field is flagged `coerced`; the data keeps what the model wrote."""
    result = parse('{"id": "5", "category": "refund", "summary": "s"}', Ticket)
    assert Flag.COERCED in result.flags
    assert "5" == result.value["id"]
    assert 5 == result.instance.id
    assert result.ok


def test_numeric_string_for_an_int_field_validates_to_an_int() -> None:
    """The lax coercion the parse recorded is what `validate` applies."""
    outcome = healjson.validate('{"id": "5", "category": "refund", "summary": "s"}', Ticket)
    assert isinstance(outcome, Healed)
    assert 5 == outcome.value.id


def test_literal_value_in_the_wrong_case_is_fixed() -> None:
    """`"REFUND"` for a lowercase Literal becomes `"refund"` with `enum_case`."""
    result = parse('{"id": 7, "category": "REFUND", "summary": "Card charged twice"}', Ticket)
    assert TICKET == result.value
    assert Flag.ENUM_CASE in result.flags


def test_enum_value_in_the_wrong_case_is_fixed() -> None:
    """Case-insensitive matching works for Enum classes as well as Literals."""
    result = parse('{"id": 1, "kind": "Billing"}', Order)
    assert {"id": 1, "kind": "billing"} == result.value
    assert Flag.ENUM_CASE in result.flags
    assert result.ok


def test_enum_value_with_spaces_for_underscores_is_fixed() -> None:
    """`"Needs Review"` matches the single choice `needs_review`."""
    result = parse('"Needs Review"', Literal["needs_review", "closed"])
    assert "needs_review" == result.value
    assert Flag.ENUM_CASE in result.flags


def test_single_key_wrapper_object_is_unwrapped() -> None:
    """`{"ticket": {...}}` around the real answer is unwrapped and flagged."""
    result = parse(json.dumps({"ticket": TICKET}), Ticket)
    assert TICKET == result.value
    assert Flag.UNWRAPPED in result.flags
    assert result.ok


def test_double_encoded_json_string_is_decoded() -> None:
    """JSON that arrives encoded inside a JSON string is decoded and flagged."""
    result = parse(json.dumps(TICKET_JSON), Ticket)
    assert TICKET == result.value
    assert Flag.DOUBLE_ENCODED in result.flags
    assert result.ok


@pytest.mark.parametrize("text", ["42", " 42\n", "```\n42\n```"], ids=["bare", "spaced", "fenced"])
def test_int_target_is_read_from_plain_text(text: str) -> None:
    """An int target accepts a bare number, with or without a fence."""
    result = parse(text, int)
    assert 42 == result.value
    assert result.ok


def test_str_target_takes_the_prose_itself() -> None:
    """A str target reads the whole plain-text reply as the value."""
    result = parse("Hello there, friend.", str)
    assert "Hello there, friend." == result.value
    assert Flag.TEXT_AS_VALUE in result.flags
    assert result.ok


def test_literal_target_is_read_from_the_text_without_its_markup() -> None:
    """A Literal target reads a reply that is the choice alone, its markup and final period
    dropped, in any case."""
    result = parse("**Refund**.", Literal["refund", "billing", "other"])
    assert "refund" == result.value
    assert {Flag.TEXT_AS_VALUE, Flag.SYNTAX_REPAIRED, Flag.ENUM_CASE} <= set(result.flags)
    assert result.ok


@pytest.mark.parametrize(
    "text", ["The category is Refund.", "It is either refund or billing.", "Not a refund."]
)
def test_literal_target_is_not_picked_out_of_a_sentence(text: str) -> None:
    """A sentence naming one choice, two, or one it denies gives no value: prose is read for no
    scalar kind, and the diagnostic asks for the choice alone."""
    result = parse(text, Literal["refund", "billing", "other"])
    assert None is result.value
    assert Source.SYNTAX == result.error.source
    assert result.error.prescription.startswith("Reply with only one of")
    assert not result.ok


# --- truncation ----------------------------------------------------------------------------------


def test_length_finish_reason_marks_an_open_object_truncated() -> None:
    """An object cut off at the token limit is truncated, keeping its complete fields."""
    result = parse(
        '{"id": 7, "category": "refund", "summary": "Card charged twice"', finish_reason="length"
    )
    assert True is result.truncated
    assert not result.ok
    assert Source.TRUNCATION == result.error.source
    assert TICKET == result.value
    assert Flag.TRUNCATED in result.flags


def test_text_ending_mid_structure_is_truncated_without_a_finish_reason() -> None:
    """A reply that ends inside a structure is truncated even when nobody said so."""
    result = parse('{"id": 7, "category": "refund", "tags": [1, 2,')
    assert True is result.truncated
    assert not result.ok
    assert Source.TRUNCATION == result.error.source
    assert {"id": 7, "category": "refund", "tags": [1, 2]} == result.value


@pytest.mark.parametrize("finish_reason", [None, "length"])
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"id": 7, "summary": "The customer wa', {"id": 7}),
        ('{"a": {"b": "ok", "c": "cu', {"a": {"b": "ok"}}),
        ('{"tags": ["x", "y', {"tags": ["x"]}),
        ('{"a": 1, "hel', {"a": 1}),
        ('{"a": 1, "b": "ends in escape \\', {"a": 1}),
    ],
    ids=["top-level-value", "nested-value", "array-item", "key", "after-backslash"],
)
def test_cut_string_is_dropped_from_the_partial_value(
    text: str, expected: Any, finish_reason: str | None
) -> None:
    """A string still open at the cut is corrupted data and never kept."""
    result = parse(text, finish_reason=finish_reason)
    assert expected == result.value
    assert True is result.truncated
    assert Source.TRUNCATION == result.error.source


@pytest.mark.parametrize("finish_reason", [None, "length"])
@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a": 1, "b": 12', {"a": 1}), ('{"a": 1, "b": tr', {"a": 1}), ("[1, 2, 35", [1, 2])],
    ids=["number-in-object", "literal-in-object", "number-in-array"],
)
def test_cut_scalar_at_the_end_is_dropped_from_the_partial_value(
    text: str, expected: Any, finish_reason: str | None
) -> None:
    """A number or literal touching the cut may be incomplete, so only earlier fields are kept."""
    result = parse(text, finish_reason=finish_reason)
    assert expected == result.value
    assert True is result.truncated


def test_truncated_reply_with_a_schema_keeps_only_complete_fields() -> None:
    """With a schema, the partial value of a cut reply drops the cut string."""
    result = parse(
        '{"id": 7, "category": "refund", "summary": "Card char', Ticket, finish_reason="length"
    )
    assert {"id": 7, "category": "refund"} == result.value
    assert True is result.truncated
    assert not result.ok
    assert Source.TRUNCATION == result.error.source


def test_truncated_reply_inside_a_fence_is_truncated() -> None:
    """A fenced reply cut mid-structure is truncated and keeps both flags."""
    result = parse('Here:\n```json\n{"a": 1, "b": [1, 2, ')
    assert {"a": 1, "b": [1, 2]} == result.value
    assert True is result.truncated
    assert Flag.CODE_FENCE in result.flags
    assert Flag.TRUNCATED in result.flags


def test_inner_complete_object_of_a_cut_reply_is_not_the_answer() -> None:
    """A complete object nested inside a cut structure is a fragment, not a result."""
    result = parse('{"outer": {"id": 7, "category": "refund", "summary": "s"}, "more": "x', Ticket)
    assert True is result.truncated
    assert not result.ok


@pytest.mark.parametrize("finish_reason", [None, "length"])
def test_fragment_before_a_fence_marker_in_a_cut_reply_is_not_the_answer(
    finish_reason: str | None,
) -> None:
    """A ``` inside a string of a cut object does not let an inner fragment pass as the answer."""
    result = parse('{"a": "{```", "b": "}", "c": "d', dict[str, str], finish_reason=finish_reason)
    assert True is result.truncated
    assert Source.TRUNCATION == result.error.source
    assert not result.ok


@pytest.mark.parametrize(
    ("text", "schema"),
    [(TICKET_JSON, None), (TICKET_JSON, Ticket), (f"```json\n{TICKET_JSON}\n```", Ticket)],
    ids=["untyped", "typed", "fenced"],
)
def test_complete_json_with_length_finish_reason_is_accepted(text: str, schema: Any) -> None:
    """Hitting the token limit exactly at the end of a complete value is not truncation."""
    result = parse(text, schema, finish_reason="length")
    assert TICKET == result.value
    assert False is result.truncated
    assert None is result.error
    assert result.ok


# --- nothing to recover --------------------------------------------------------------------------


def test_prose_without_json_is_a_syntax_error() -> None:
    """A reply with no JSON at all gives a syntax error and no value."""
    result = parse("I'm sorry, I cannot help with that request.")
    assert None is result.value
    assert Source.SYNTAX == result.error.source
    assert False is result.truncated
    assert not result.ok


@pytest.mark.parametrize("text", ["", " ", "\n\t\r\n  "], ids=["empty", "space", "whitespace"])
def test_empty_or_whitespace_reply_is_an_empty_error(text: str) -> None:
    """An empty or blank reply gives the `empty` error and no value."""
    result = parse(text)
    assert None is result.value
    assert Source.EMPTY == result.error.source
    assert not result.ok


@pytest.mark.parametrize(
    ("text", "expected_value", "expected_source"),
    [
        (None, None, Source.EMPTY),
        (b'{"a": 1}', {"a": 1}, None),
        (bytearray(b'{"a": 1}'), {"a": 1}, None),
        (b'\xff\xfe{"a": 1}', {"a": 1}, None),
        (42, None, Source.SYNTAX),
        (["{}"], None, Source.SYNTAX),
        (object(), None, Source.SYNTAX),
    ],
    ids=["none", "bytes", "bytearray", "invalid-utf8", "int", "list", "object"],
)
def test_non_text_input_never_raises(
    text: Any, expected_value: Any, expected_source: Source | None
) -> None:
    """None, bytes and other non-str inputs give a result, never an exception."""
    result = parse(text)
    assert isinstance(result, ParseResult)
    assert expected_value == result.value
    assert expected_source == (None if result.error is None else result.error.source)


# --- pathological inputs -------------------------------------------------------------------------


def test_five_megabytes_of_prose_is_a_syntax_error() -> None:
    """5 MB of text with no JSON gives a syntax error, not a crash or a hang."""
    result = parse("lorem ipsum dolor sit amet. " * 180_000)
    assert None is result.value
    assert Source.SYNTAX == result.error.source


def test_five_megabytes_of_prose_around_json_still_finds_it() -> None:
    """A small JSON object after 5 MB of prose is recovered."""
    result = parse("lorem ipsum dolor sit amet. " * 180_000 + '{"a": 1}')
    assert {"a": 1} == result.value
    assert Flag.PROSE_AROUND in result.flags


@pytest.mark.parametrize("schema", [None, list[int]], ids=["untyped", "typed"])
def test_five_megabyte_json_array_parses(schema: Any) -> None:
    """A 5 MB valid JSON array goes through the fast path."""
    values = list(range(700_000))
    text = json.dumps(values)
    assert len(text) > 5_000_000
    result = parse(text, schema)
    assert values == result.value
    assert () == result.flags
    assert result.ok


def test_ten_thousand_unclosed_brackets_are_truncated() -> None:
    """10,000 nested `[` that never close read as a truncated reply."""
    result = parse("[" * 10_000)
    assert True is result.truncated
    assert Source.TRUNCATION == result.error.source
    assert not result.ok


def test_ten_thousand_closed_brackets_never_raise() -> None:
    """10,000 properly closed nested arrays give a result (the value, or a syntax error)."""
    result = parse("[" * 10_000 + "]" * 10_000)
    assert isinstance(result, ParseResult)
    assert False is result.truncated
    if result.ok:
        assert 10_000 == _depth(result.value)
    else:
        assert None is result.value
        assert Source.SYNTAX == result.error.source


def test_ten_thousand_closed_braces_never_raise() -> None:
    """10,000 properly closed nested objects give a result, never an exception."""
    result = parse("{" * 10_000 + "}" * 10_000)
    assert isinstance(result, ParseResult)
    assert False is result.truncated
    assert (result.error is None) == result.ok


def test_open_brace_followed_by_long_prose_is_truncated() -> None:
    """A reply that opens `{` and then runs on for 240 kB of prose reads as truncated."""
    result = parse("{" + "lorem ipsum " * 20_000)
    assert True is result.truncated
    assert Source.TRUNCATION == result.error.source


def test_hundred_thousand_open_braces_are_truncated() -> None:
    """100k `{` characters read as a truncated reply and do not crash."""
    result = parse("{" * 100_000)
    assert True is result.truncated
    assert Source.TRUNCATION == result.error.source
    assert not result.ok


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('note \ud800 then {"a": 1}', {"a": 1}),
        ('{"a": "\ud800", "b": 1}', {"a": "\ud800", "b": 1}),
        ('{"a": "\\ud800", "b": 1}', {"a": "\ud800", "b": 1}),
    ],
    ids=["in-prose", "raw-in-string", "escaped-in-string"],
)
def test_lone_surrogates_never_raise(text: str, expected: Any) -> None:
    """A lone surrogate in the reply does not stop the JSON from being recovered."""
    result = parse(text)
    assert expected == result.value
    assert result.ok


@pytest.mark.parametrize("schema", [None, str, dict[str, str]], ids=["untyped", "str", "dict"])
@pytest.mark.parametrize("text", ['"\ud800"', "\ud800", "\udfff\ud800{"])
def test_lone_surrogate_only_replies_never_raise(text: str, schema: Any) -> None:
    """A reply made of lone surrogates gives a consistent result, never an exception."""
    result = parse(text, schema)
    assert isinstance(result, ParseResult)
    assert (result.error is None) == result.ok


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a": "x\x00y"}', {"a": "x\x00y"}), ('\x00\x00{"a": 1}\x00', {"a": 1})],
    ids=["inside-string", "around-json"],
)
def test_nul_bytes_never_raise(text: str, expected: Any) -> None:
    """NUL characters inside or around the JSON do not stop recovery."""
    result = parse(text)
    assert expected == result.value
    assert result.ok


def test_only_nul_bytes_is_a_syntax_error() -> None:
    """A reply of nothing but NUL characters gives a syntax error."""
    result = parse("\x00" * 1000)
    assert None is result.value
    assert Source.SYNTAX == result.error.source


@pytest.mark.parametrize(
    "text",
    ["\"'" * 50_000, "{" + "\"'" * 50_000 + "}", "[" + "\"'" * 50_000],
    ids=["bare", "in-braces", "in-open-bracket"],
)
def test_alternating_quotes_never_raise(text: str) -> None:
    """Long runs of alternating `"` and `'` give a consistent result."""
    result = parse(text)
    assert isinstance(result, ParseResult)
    assert (result.error is None) == result.ok
    assert result.truncated == (result.error is not None and result.error.source == "truncation")


def test_comment_glued_to_a_comma_is_dropped_not_merged_into_a_value() -> None:
    """`1,// note` keeps `1` as the value (json-repair alone read it as the string "1,/")."""
    result = parse('{"a":1,// note\n"b":"x", "u": "http://h,//p"}')
    assert {"a": 1, "b": "x", "u": "http://h,//p"} == result.value
    assert Flag.SYNTAX_REPAIRED in result.flags
