"""L1 recovery on cases from the BAML and json_repair corpora (`tests/corpus/`, see its README).

Each malformation class picks cases by id. Syntax classes use schema-less json_repair rows;
BAML rows are parsed against a pydantic type written here by hand to match the row's
`json_schema`. A test asserts the corpus' `expected` value only where healjson's policy agrees
with it; where healjson differs on purpose (truncation, several top-level values) the test
asserts healjson's documented behaviour instead and its docstring says why. The expected values
come from BoundaryML/baml (Apache-2.0) and mangiucugna/json_repair (MIT); each row's `source`
field carries its attribution.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, TypeAdapter

import healjson
from healjson import Degraded, Flag, Source
from paths import CORPUS

_FILES = {"baml_": "baml_dev.jsonl", "jr_": "json_repair_dev.jsonl"}


@functools.cache
def _rows(name: str) -> dict[str, dict[str, Any]]:
    with (CORPUS / name).open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {row["id"]: row for row in rows}


def case(case_id: str) -> dict[str, Any]:
    """The corpus row with this id (the file is chosen by the id's prefix)."""
    name = next(file for prefix, file in _FILES.items() if case_id.startswith(prefix))
    return _rows(name)[case_id]


def exact(value: Any) -> Any:
    """A JSON value with booleans tagged, so that `True` never compares equal to `1`."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, dict):
        return {key: exact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [exact(item) for item in value]
    return value


def validated(target: Any, value: Any) -> Any:
    """`value` validated against `target` (lax, as healjson's L2 does) and dumped to JSON."""
    adapter = TypeAdapter(target)
    return adapter.dump_python(adapter.validate_python(value), mode="json")


def typed(*pairs: tuple[str, Any]) -> list[Any]:
    """Parametrize (case_id, target) pairs with the case id as the test id."""
    return [pytest.param(case_id, target, id=case_id) for case_id, target in pairs]


# Targets matching the rows' `json_schema` (BAML class names in comments).


class KeyInts(BaseModel):  # Test { key int[] }
    key: list[int]


class KeyStr(BaseModel):  # Test { key string }
    key: str


class Inner(BaseModel):  # Foo { key string }
    key: str


class WithArray(BaseModel):  # Test { key string, array int[], object Foo }
    key: str
    array: list[int]
    object: Inner


class WithMixedArray(BaseModel):  # Test { key string, array (int | string)[], object Foo }
    key: str
    array: list[int | str]
    object: Inner


class Hi(BaseModel):  # Foo { hi string[] }
    hi: list[str]


class OneTwo(BaseModel):  # Foo { one string, two string? }
    one: str
    two: str | None = None


class A(BaseModel):  # Foo { a string }
    a: str


class NestedA(BaseModel):  # Bar { foo Foo }
    foo: A


class FooStr(BaseModel):  # Bar { foo string }
    foo: str


class Function2(BaseModel):  # Function2 { function_name string, diameter int }
    function_name: str
    diameter: int


class WithFoo(BaseModel):  # WithFoo { foo Foo (enum FOO | BAR), name string }
    foo: Literal["FOO", "BAR"]
    name: str


class Pointer(BaseModel):  # Foo { pointer Foo | int }
    pointer: Pointer | int


class Rec(BaseModel):  # Foo { rec_one Foo | int, rec_two Foo | int }
    rec_one: Rec | int
    rec_two: Rec | int


class Code(BaseModel):  # Test { type "code", code string }
    type: Literal["code"]
    code: str


class ThreeStrings(BaseModel):  # Foo { rec_one string, rec_two string, also_rec_one string }
    rec_one: str
    rec_two: str
    also_rec_one: str


class SchemaModel(BaseModel):  # json_repair's pydantic model in the schema-guided tests
    a: str
    b: str


class BarOpt(BaseModel):  # Bar { bar string, option int? }
    bar: str
    option: int | None = None


class NestedBar(BaseModel):  # Foo { foo Bar }
    foo: BarOpt


Category = Literal["ONE", "TWO"]  # enum Category { ONE TWO }


def _recovered(case_id: str, target: Any = None) -> tuple[dict[str, Any], healjson.ParseResult]:
    """The row and healjson's parse of its input (against `target` when given)."""
    row = case(case_id)
    return row, healjson.parse(row["input"], target)


def _agrees(case_id: str, target: Any = None) -> healjson.ParseResult:
    """Parse the case (with `target` when given) and assert the value equals `expected`."""
    row, result = _recovered(case_id, target)
    assert result.error is None
    value = result.value if target is None else validated(target, result.value)
    assert exact(row["expected"]) == exact(value)
    return result


# --- code fences ------------------------------------------------------------------------------

CODE_FENCE = [
    "jr_json_repair_L99_1",
    "jr_parse_string_L229_1",
    "jr_parse_string_L230_1",
    "jr_parse_string_L268_1",
]
CODE_FENCE_TYPED = typed(
    ("baml_test_basics__test_json_md_example_2", WithArray),
    ("baml_test_code__string_preserves_triple_backticks", Code),
)


@pytest.mark.parametrize("case_id", CODE_FENCE)
def test_code_fence_is_stripped(case_id: str) -> None:
    """JSON inside (or next to) a markdown code fence is recovered and flagged `code_fence`."""
    result = _agrees(case_id)
    assert Flag.CODE_FENCE in result.flags


@pytest.mark.parametrize(("case_id", "target"), CODE_FENCE_TYPED)
def test_code_fence_with_schema(case_id: str, target: Any) -> None:
    """With a target, the fenced value that validates is recovered and flagged `code_fence`."""
    result = _agrees(case_id, target)
    assert Flag.CODE_FENCE in result.flags


def test_fence_inside_a_json_string_is_data() -> None:
    """A fence inside a valid JSON string value is text, not a fence (no flag, nothing dropped)."""
    result = _agrees("baml_test_class__test_obj_from_str_with_string_foo", FooStr)
    assert not result.flags


# --- prose around the JSON --------------------------------------------------------------------

PROSE = ["jr_json_repair_L49_1", "jr_json_repair_L70_1", "jr_parse_string_L41_1"]
PROSE_TYPED = typed(
    ("baml_test_basics__test_nested_whitespace_prefix_suffix", KeyInts),
    ("baml_test_class__test_string_from_obj_and_string_with_extra_text", Hi),
    ("baml_test_class__test_string_from_obj_and_string_with_invalid_extra_text", Hi),
    ("baml_test_class__test_recursive_type_with_union", Pointer),
)


@pytest.mark.parametrize("case_id", PROSE)
def test_prose_around_is_dropped(case_id: str) -> None:
    """Text before or after the JSON is dropped and flagged `prose_around`."""
    result = _agrees(case_id)
    assert Flag.PROSE_AROUND in result.flags


@pytest.mark.parametrize(("case_id", "target"), PROSE_TYPED)
def test_prose_around_with_schema(case_id: str, target: Any) -> None:
    """With a target, the JSON between prose is recovered and flagged `prose_around`."""
    result = _agrees(case_id, target)
    assert Flag.PROSE_AROUND in result.flags


# --- trailing commas --------------------------------------------------------------------------

TRAILING_COMMA = [
    "jr_parse_string_L84_1",
    "jr_parse_string_L476_2",
    "jr_schema_guided_parse_L720_1",  # schema option not needed: plain syntax
]
TRAILING_COMMA_TYPED = typed(
    ("baml_test_basics__test_trailing_comma_object", KeyStr),
    ("baml_test_class__test_recursive_type_with_union", Pointer),
)


@pytest.mark.parametrize("case_id", TRAILING_COMMA)
def test_trailing_comma_is_removed(case_id: str) -> None:
    """A comma before `}` or `]` is dropped and flagged `syntax_repaired`."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


@pytest.mark.parametrize(("case_id", "target"), TRAILING_COMMA_TYPED)
def test_trailing_comma_with_schema(case_id: str, target: Any) -> None:
    """With a target, a trailing comma is dropped and the value validates."""
    result = _agrees(case_id, target)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- comments ---------------------------------------------------------------------------------

COMMENTS = ["jr_parse_comment_L27_1"]
COMMENTS_TYPED = typed(("baml_test_class__test_trailing_comma_with_space_last_field", Function2))


@pytest.mark.parametrize("case_id", COMMENTS)
def test_comment_is_removed(case_id: str) -> None:
    """`//` comments are dropped and flagged `syntax_repaired`."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


@pytest.mark.parametrize(("case_id", "target"), COMMENTS_TYPED)
def test_comment_with_schema(case_id: str, target: Any) -> None:
    """With a target, `//` comment lines (one holding a quote) are dropped."""
    result = _agrees(case_id, target)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- repairs that would invent or drop data are refused ---------------------------------------

INVENTING_OR_DROPPING = {
    "jr_parse_object_L90_1": "a missing value filled with an empty string",
    "jr_repair_json_from_file_L17_1": "a missing value filled with an empty string",
    "jr_parse_object_L82_1": "a bare list read as a key with an empty value",
    "jr_parse_object_L27_1": "a stray word (COMMENT) dropped",
    "jr_parse_object_L49_1": "unquoted prose cut short at a comma",
    "jr_parse_array_L18_1": "an ellipsis (`...`, more items) dropped",
    "jr_parse_object_L96_1": "a duplicated key dropped and an object built inside a list",
    "jr_parse_string_L446_2": "the words after a stray quote dropped",
}


@pytest.mark.parametrize("case_id", INVENTING_OR_DROPPING, ids=INVENTING_OR_DROPPING.values())
def test_a_repair_that_invents_or_drops_data_gives_no_value(case_id: str) -> None:
    """Policy: json_repair's reading here creates a value or loses words the model wrote; healjson
    gives no value (a syntax error, so the model is asked again) rather than guess."""
    _, result = _recovered(case_id)
    assert None is result.value
    assert Source.SYNTAX == result.error.source


# --- single quotes ----------------------------------------------------------------------------

SINGLE_QUOTES = ["jr_parse_object_L59_1", "jr_parse_string_L45_1"]
SINGLE_QUOTES_TYPED = typed(
    ("baml_test_code__single_quotes", Code),
    ("baml_test_code__unescaped_single_quotes_in_single_quotes", Code),
)


@pytest.mark.parametrize("case_id", SINGLE_QUOTES)
def test_single_quotes_become_double(case_id: str) -> None:
    """Single-quoted keys and strings are read as strings and flagged `syntax_repaired`."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


@pytest.mark.parametrize(("case_id", "target"), SINGLE_QUOTES_TYPED)
def test_single_quotes_with_schema(case_id: str, target: Any) -> None:
    """With a target, single-quoted strings holding double or single quotes are recovered."""
    result = _agrees(case_id, target)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- unquoted keys ----------------------------------------------------------------------------

UNQUOTED_KEYS = ["jr_repair_json_from_file_L435_1"]
UNQUOTED_KEYS_TYPED = typed(
    ("baml_test_class__test_enum_without_leading_newline", WithFoo),
    ("baml_test_basics__test_json_with_unquoted_values_with_spaces", WithMixedArray),
    ("baml_test_class__test_recursive_union_on_multiple_fields_single_line_without_quotes", Rec),
    ("baml_test_maps__test_map_with_invalid_extra_text", dict[str, str]),
)


@pytest.mark.parametrize("case_id", UNQUOTED_KEYS)
def test_unquoted_keys_are_quoted(case_id: str) -> None:
    """Bare keys (and bare values) are read as strings and flagged `syntax_repaired`."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


@pytest.mark.parametrize(("case_id", "target"), UNQUOTED_KEYS_TYPED)
def test_unquoted_keys_with_schema(case_id: str, target: Any) -> None:
    """With a target, bare keys and values (enum members, nested objects) validate."""
    result = _agrees(case_id, target)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- Python / non-JSON literals ---------------------------------------------------------------

LITERALS = ["jr_parse_object_L6_1", "jr_parse_string_L387_1"]


@pytest.mark.parametrize("case_id", LITERALS)
def test_python_literals_become_json(case_id: str) -> None:
    """`True`, `TRUE`, `FALSE` and `Null` become JSON true/false/null, flagged `syntax_repaired`."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- unescaped newlines inside strings --------------------------------------------------------

NEWLINES = ["jr_parse_string_L182_1"]
NEWLINES_TYPED = typed(
    ("baml_test_basics__test_json_with_unquoted_values_with_spaces_and_new_lines", WithMixedArray),
    ("jr_schema_guided_parse_L28_13", SchemaModel),
    ("jr_schema_guided_parse_L28_19", SchemaModel),
)


@pytest.mark.parametrize("case_id", NEWLINES)
def test_raw_newline_in_key(case_id: str) -> None:
    """A raw newline inside a key is repaired (json_repair trims it) and flagged."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


@pytest.mark.parametrize(("case_id", "target"), NEWLINES_TYPED)
def test_raw_newlines_in_strings_with_schema(case_id: str, target: Any) -> None:
    """With a target, string values holding raw newlines (and fences, brackets) are kept whole."""
    result = _agrees(case_id, target)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- unescaped double quotes inside strings ---------------------------------------------------

INNER_QUOTES = [
    "jr_json_repair_L211_1",
    "jr_json_repair_L215_1",
    "jr_parse_object_L47_1",
    "jr_parse_string_L85_1",
]
INNER_QUOTES_TYPED = typed(
    ("baml_test_code__unescaped_double_quotes_in_double_quotes", Code),
    ("baml_test_class__test_string_in_object_with_unescaped_quotes", ThreeStrings),
)


@pytest.mark.parametrize("case_id", INNER_QUOTES)
def test_unescaped_inner_quotes(case_id: str) -> None:
    """Unescaped `"` inside a string value is kept as text and flagged `syntax_repaired`."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


@pytest.mark.parametrize(("case_id", "target"), INNER_QUOTES_TYPED)
def test_unescaped_inner_quotes_with_schema(case_id: str, target: Any) -> None:
    """With a target, strings holding unescaped double quotes are recovered whole."""
    result = _agrees(case_id, target)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- missing commas and bare values -----------------------------------------------------------

MISSING_COMMAS = [
    "jr_parse_array_L40_1",
    "jr_parse_object_L12_1",
    "jr_parse_object_L58_1",
    "jr_parse_string_L57_1",
]


@pytest.mark.parametrize("case_id", MISSING_COMMAS)
def test_missing_commas_and_bare_values(case_id: str) -> None:
    """Missing commas are inserted and bare words read as strings, flagged `syntax_repaired`."""
    result = _agrees(case_id)
    assert Flag.SYNTAX_REPAIRED in result.flags


# --- missing closing brackets / truncation (healjson policy differs) --------------------------

TRUNCATED = [
    "jr_parse_array_L8_1",
    "jr_parse_array_L23_1",
    "jr_parse_object_L25_1",
]
# a number touching the cut may itself be cut (`3` of `34`): healjson leaves it out of the partial
TRUNCATED_AT_A_NUMBER = [
    ("jr_parse_array_L25_1", {"key1": {"key2": [1, 2]}}),
    ("jr_parse_number_L19_1", [105]),
]
TRUNCATED_TYPED = typed(
    ("baml_test_basics__test_invalid_array_in_object", KeyInts),
    ("baml_test_lists__test_list_streaming_2", list[int]),
    ("baml_test_lists__test_list_streaming_inside_json_block", list[str]),
)


@pytest.mark.parametrize("case_id", TRUNCATED)
def test_unclosed_structure_is_truncation(case_id: str) -> None:
    """Policy: a reply ending inside a structure is reported as truncated with an error (never a
    recovered value); the partial value is kept for the caller and here equals json_repair's
    completion."""
    row, result = _recovered(case_id)
    assert not result.ok
    assert result.truncated
    assert Flag.TRUNCATED in result.flags
    assert result.error is not None
    assert Source.TRUNCATION is result.error.source
    assert exact(row["expected"]) == exact(result.value)


@pytest.mark.parametrize(("case_id", "partial"), TRUNCATED_AT_A_NUMBER)
def test_number_at_the_cut_is_left_out_of_the_partial_value(case_id: str, partial: Any) -> None:
    """Policy: where json_repair keeps a number that touches the cut, healjson drops it (it may be
    cut short) and keeps the rest as partial data."""
    _, result = _recovered(case_id)
    assert result.truncated
    assert not result.ok
    assert partial == result.value


@pytest.mark.parametrize(("case_id", "target"), TRUNCATED_TYPED)
def test_unclosed_structure_is_truncation_with_schema(case_id: str, target: Any) -> None:
    """Policy: with a target too, a cut-off reply is an error (BAML completes it), never a value."""
    _, result = _recovered(case_id, target)
    assert not result.ok
    assert result.truncated
    assert result.error is not None
    assert Source.TRUNCATION is result.error.source


def test_cut_string_is_not_completed() -> None:
    """Policy: a string cut off at the end is dropped from the partial value, not completed or
    split into invented keys as json_repair does (jr_json_repair_L292_1)."""
    row, result = _recovered("jr_json_repair_L292_1")
    json_repair_completion = {"key": "val\n123", "key2": "value2"}
    nothing_invented: dict[str, Any] = {}
    assert result.truncated
    assert not result.ok
    assert json_repair_completion == row["expected"]
    assert nothing_invented == result.value


def test_finish_reason_length_marks_truncation() -> None:
    """A cut-off reply whose finish reason is `length` says so in the diagnostic."""
    result = healjson.parse(case("jr_parse_array_L23_1")["input"], finish_reason="length")
    assert result.truncated
    assert result.error is not None
    assert "finish_reason=length" in result.error.constraint


# --- several JSON values ----------------------------------------------------------------------

MULTIPLE_TYPED = typed(
    ("baml_test_class__test_multi_fielded_foo_with_optional_and_extra_text", OneTwo),
    ("baml_test_basics__test_json_md_example_3", list[int]),
)
DIFFERENT_ANSWERS_TYPED = typed(
    ("baml_test_basics__test_multiple_top_level_prefix_suffix_1", KeyStr),
    ("baml_test_class__test_nested_class_with_extra_text", NestedA),
)


@pytest.mark.parametrize(("case_id", "target"), MULTIPLE_TYPED)
def test_several_values_only_one_validates(case_id: str, target: Any) -> None:
    """With a target, the one of several values that validates is the answer."""
    result = _agrees(case_id, target)
    assert Flag.MULTIPLE_CANDIDATES in result.flags


@pytest.mark.parametrize(("case_id", "target"), DIFFERENT_ANSWERS_TYPED)
def test_several_different_valid_values_are_ambiguous(case_id: str, target: Any) -> None:
    """Policy: two different values that both validate give no value (BAML takes the first);
    `on_ambiguity="first"` agrees with BAML."""
    row, result = _recovered(case_id, target)
    assert Source.AMBIGUITY == result.error.source
    assert 2 == len(result.candidates)
    chosen = healjson.parse(row["input"], target, on_ambiguity="first")
    assert exact(row["expected"]) == exact(validated(target, chosen.value))
    assert Flag.AMBIGUOUS_CHOICE in chosen.flags


def test_two_different_untyped_values_are_ambiguous() -> None:
    """Policy: `[{...}][{...}]` holds two different answers; json_repair keeps the last, BAML
    would keep the first, healjson keeps neither and reports both (jr_json_repair_L89_1)."""
    row, result = _recovered("jr_json_repair_L89_1")
    assert Source.AMBIGUITY == result.error.source
    assert ([{"key": "value"}], [{"key": "value_after"}]) == result.candidates
    last = healjson.parse(row["input"], on_ambiguity="last")
    assert exact(row["expected"]) == exact(last.value)


def test_several_values_are_not_merged() -> None:
    """Policy: json_repair lists two adjacent top-level values; healjson returns one of them,
    flagged, rather than a list the model never wrote (jr_json_repair_L80_1)."""
    row, result = _recovered("jr_json_repair_L80_1")
    assert result.ok
    assert Flag.MULTIPLE_CANDIDATES in result.flags
    assert exact(result.value) in [exact(item) for item in row["expected"]]


# --- no JSON at all / must fail ---------------------------------------------------------------

NO_JSON = ["jr_parse_array_L16_1", "jr_parse_object_L19_1", "jr_parse_string_L382_1"]
NO_JSON_TYPED = typed(
    ("baml_test_class__test_nested_obj_from_string_fails_0", NestedBar),
    ("baml_test_class__test_nested_obj_from_string_fails_2", FooStr),
    ("baml_test_basics__test_ambiguous_bool", bool),
    ("baml_test_basics__test_elaborate_ambiguous_bool", bool),
)


@pytest.mark.parametrize("case_id", NO_JSON)
def test_no_json_is_a_syntax_error(case_id: str) -> None:
    """A reply with no JSON value (json_repair returns "") is a syntax error with no value."""
    _, result = _recovered(case_id)
    assert not result.ok
    assert result.value is None
    assert result.error is not None
    assert Source.SYNTAX is result.error.source


@pytest.mark.parametrize(("case_id", "target"), NO_JSON_TYPED)
def test_must_fail_cases_give_no_value(case_id: str, target: Any) -> None:
    """BAML's must-fail replies (plain prose, an ambiguous boolean) give an error, not a value."""
    _, result = _recovered(case_id, target)
    assert not result.ok
    assert result.value is None


def test_ambiguous_enum_text_fails_validation() -> None:
    """An answer naming two enum members in prose (BAML must-fail) gives no value: prose is read
    for no scalar kind (baml_test_enum__from_string_with_extra_text_after_3)."""
    row, result = _recovered("baml_test_enum__from_string_with_extra_text_after_3", Category)
    assert not result.valid
    assert result.instance is None
    assert not healjson.validate(row["input"], Category).ok


# --- enum and literal answers read from text --------------------------------------------------

ENUM_TEXT_TYPED = typed(
    ("baml_test_enum__case_insensitive", Category),
    ("baml_test_literals__test_literal_string_lowercase", Literal["TWO"]),
)


@pytest.mark.parametrize(("case_id", "target"), ENUM_TEXT_TYPED)
def test_enum_read_from_text(case_id: str, target: Any) -> None:
    """An enum or literal answer written as plain text, in any case, is recovered."""
    result = _agrees(case_id, target)
    assert Flag.TEXT_AS_VALUE in result.flags


ENUM_IN_PROSE_TYPED = typed(
    ("baml_test_enum__from_string_and_case_mismatch_wrapped", Category),
    ("baml_test_literals__test_literal_string_preceded_by_extra_text", Literal["TWO"]),
    ("baml_test_literals__test_literal_string_with_quotes_followed_by_extra_text", Literal["TWO"]),
)


@pytest.mark.parametrize(("case_id", "target"), ENUM_IN_PROSE_TYPED)
def test_an_enum_named_in_prose_is_not_read(case_id: str, target: Any) -> None:
    """BAML reads a choice's name out of a sentence (`The answer is TWO`); healjson reads prose
    for no scalar kind, since the same reading takes `urgent` out of `not urgent` and `1` out of
    `page 1 of the report`: no value, and the diagnostic asks for the choice alone."""
    row, result = _recovered(case_id, target)
    assert not result.valid
    assert result.instance is None
    outcome = healjson.validate(row["input"], target)
    assert isinstance(outcome, Degraded)
    assert "Reply with only one of" in outcome.errors[0].prescription
