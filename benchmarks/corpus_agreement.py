"""How often `healjson.parse` agrees with the expected values of the two test corpora.

Run from the repository root:

    .venv/bin/python benchmarks/corpus_agreement.py

It prints a table and writes it, with the machine and library versions and the disagreeing case
ids grouped by an inferred reason, to `benchmarks/results/corpus_agreement.md`; beside it, the
invented-value rate on the no-answer rows (see "Invented values" below) for healjson and for
plain `json.loads`. The agreement rate is a measure, not a pass/fail gate: the expected values
are BAML's and json_repair's policies (see `tests/corpus/README.md`), so the script exits 0
whatever the rate (the invented-value acceptance line is printed, not enforced).

Method
------
Every row is parsed twice:

* **raw**: `healjson.parse(row["input"])` with no schema; agreement means `result.ok` and
  `result.value` equals `expected`.
* **typed**: when the row has a JSON Schema (BAML's `json_schema`, json_repair's `options.schema`)
  it is turned into a Python type by `type_from_schema` below: `string`/`integer`/`number`/
  `boolean`/`null`, `enum`/`const` as `Literal`, arrays as `list[...]`, objects with `properties`
  as a pydantic model made with `create_model` (every field aliased to its JSON name; a field
  that is neither required nor defaulted gets default `None`), `additionalProperties` maps as
  `dict[str, ...]`, `anyOf` and type lists as unions, local `$ref`s (recursive object
  definitions through forward references). Anything else (`patternProperties`, a recursive
  non-object definition, an unknown keyword) makes the schema unsupported and the typed
  comparison falls back to the raw one. With a type, the row is parsed with
  `healjson.parse(input, T)` and `result.value` is validated in pydantic's lax mode (as healjson's
  L2 does); agreement means it validates and the validated value, dumped to JSON by alias,
  equals `expected`. The typed figure is the headline one for BAML (its expected values are
  coerced to the target type); the raw one is the headline for json_repair's plain-repair subset,
  whose rows have no schema.

Values are compared as JSON: `True` is not `1`, but `1` equals `1.0`.

Subsets: json_repair's plain-repair subset is `outcome == "value"` without a `schema` or `strict`
option; its other value rows are reported apart. An `empty` row agrees when healjson returns an
error (or, with a schema, a value that fails it); an `error` row agrees the same way. BAML's
value rows are split on `needs_alias` (aliases are not in the schema, so those rows are expected
to disagree); a BAML `error` row agrees when healjson gives an error or a value that fails the
schema.

Invented values
---------------
An invented value is a value produced from a reply that holds no answer; for a caller it is
worse than a re-ask. The no-answer rows are BAML's `error` rows, json_repair's `empty` rows and
its `error` rows of the schema-mismatch subset, and the generated set
`benchmarks/scenarios/no_answer.jsonl` (`benchmarks/no_answer.py`: prose, prose with bracket
noise, broken fragments, unclosed reasoning blocks, empty or non-JSON code fences). json_repair's
strict-mode and API-usage error rows are left out: they are about the caller's options, not about
the reply. A row's type `T` is the typed method's (from the row's schema; for a generated row the
target it names); a generated row's `finish_reason` is passed on. A contender "produces a value"
when:

* **healjson parse**: `healjson.parse(input, T).ok` and the value validates against `T` in
  pydantic's lax mode, as for agreement; without a type, `healjson.parse(input).ok`;
* **healjson validate**: `healjson.validate(input, T).ok`, what an application sees (`T = Any`
  for a row without a type, so a reply kept as text counts as a value);
* **json.loads**, the baseline: `json.loads(input)` succeeds and, with a type,
  `TypeAdapter(T).validate_python` accepts the result (lax). For a string target this means
  json.loads yields a `str` only from a JSON string literal: a reply of bare text is never one.

The invented-value rate of a subset is the share of its rows where the contender produced a
value. The acceptance criterion for L1 is that healjson's rate (both methods, over all no-answer
rows) is at most json.loads's; the script prints whether it holds and lists the rows where
healjson produced a value and json.loads did not.
"""

from __future__ import annotations

import datetime as dt
import json
import keyword
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic_core import to_json

import healjson
from no_answer import KINDS, TARGETS, load_rows

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
RESULTS = ROOT / "benchmarks" / "results" / "corpus_agreement.md"
NO_ANSWER = ROOT / "benchmarks" / "scenarios" / "no_answer.jsonl"
COMMAND = ".venv/bin/python benchmarks/corpus_agreement.py"

# ---------------------------------------------------------------------------------------------
# JSON Schema -> Python type (crude, documented in the module docstring)
# ---------------------------------------------------------------------------------------------

_KNOWN_KEYS = frozenset(
    {
        "type",
        "title",
        "description",
        "properties",
        "required",
        "$ref",
        "items",
        "enum",
        "anyOf",
        "$defs",
        "definitions",
        "const",
        "default",
        "additionalProperties",
        "propertyNames",
        "minItems",
        "pattern",
    }
)
_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
}


class Unsupported(Exception):
    """The schema uses something `type_from_schema` does not map."""


class _Builder:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = {**root.get("definitions", {}), **root.get("$defs", {})}
        self.done: dict[str, Any] = {}
        self.building: set[str] = set()
        self.namespace: dict[str, Any] = {}
        self.models: list[type[BaseModel]] = []

    def build(self, schema: Any, name: str = "Model") -> Any:
        if schema is True or schema == {}:
            return Any
        if not isinstance(schema, dict):
            raise Unsupported(f"schema node {schema!r}")
        unknown = set(schema) - _KNOWN_KEYS
        if unknown:
            raise Unsupported(f"keywords {sorted(unknown)}")
        if "$ref" in schema:
            return self._ref(schema["$ref"])
        if "anyOf" in schema:
            return _union([self.build(sub, name) for sub in schema["anyOf"]])
        if "const" in schema:
            return Literal[schema["const"]]
        if "enum" in schema:
            return Literal[tuple(schema["enum"])]
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self.build({**schema, "type": k}, name) for k in kind])
        if kind in _SCALARS:
            if kind == "string" and "pattern" in schema:
                return Annotated[str, Field(pattern=schema["pattern"])]
            return _SCALARS[kind]
        if kind == "array":
            items = self.build(schema.get("items", {}), name)
            if "minItems" in schema:
                return Annotated[list[items], Field(min_length=schema["minItems"])]
            return list[items]
        if kind == "object" or "properties" in schema:
            return self._object(schema, schema.get("title", name))
        if kind is None:
            return Any
        raise Unsupported(f"type {kind!r}")

    def _ref(self, ref: Any) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            raise Unsupported(f"$ref {ref!r}")
        section, _, name = ref[2:].partition("/")
        if section not in ("$defs", "definitions") or name not in self.defs:
            raise Unsupported(f"$ref {ref!r}")
        if name in self.done:
            return self.done[name]
        alias = f"Def_{len(self.namespace)}_{''.join(c for c in name if c.isalnum())}"
        if name in self.building:
            if "properties" not in self.defs[name]:
                raise Unsupported(f"recursive non-object definition {name!r}")
            return self.namespace.setdefault(f"forward:{name}", alias)
        self.building.add(name)
        built = self.build(self.defs[name], name)
        self.building.discard(name)
        self.done[name] = built
        forward = self.namespace.get(f"forward:{name}")
        if isinstance(forward, str):
            self.namespace[forward] = built
        return built

    def _object(self, schema: dict[str, Any], name: str) -> Any:
        props = schema.get("properties")
        if props is None:
            extra = schema.get("additionalProperties", True)
            value = Any if extra is True else self.build(extra, name)
            key: Any = str
            if "propertyNames" in schema:
                key = self.build({"type": "string", **schema["propertyNames"]}, name)
            return dict[key, value]
        required = set(schema.get("required", ()))
        fields: dict[str, Any] = {}
        for i, (json_name, sub) in enumerate(props.items()):
            annotation = self.build(sub, json_name)
            if json_name in required:
                default: Any = ...
            elif isinstance(sub, dict) and "default" in sub:
                default = sub["default"]
            else:
                annotation, default = _union([annotation, type(None)]), None
            fields[f"field_{i}"] = (annotation, Field(default, alias=json_name))
        for i, json_name in enumerate(sorted(required - set(props))):  # required, undeclared
            fields[f"extra_{i}"] = (Any, Field(..., alias=json_name))
        safe = "".join(c for c in str(name) if c.isalnum()) or "Model"
        if keyword.iskeyword(safe) or not safe[0].isalpha():
            safe = f"M{safe}"
        model = create_model(safe, __config__=ConfigDict(extra="ignore"), **fields)
        self.models.append(model)
        return model

    def finish(self) -> None:
        namespace = {k: v for k, v in self.namespace.items() if not k.startswith("forward:")}
        if namespace:
            for model in self.models:
                model.model_rebuild(force=True, _types_namespace=namespace)


def _union(types: list[Any]) -> Any:
    return types[0] if len(types) == 1 else Union[tuple(types)]  # noqa: UP007


def type_from_schema(schema: Any) -> Any:
    """A Python type that validates what `schema` describes; raises `Unsupported`."""
    if not isinstance(schema, dict):
        raise Unsupported("no schema")
    builder = _Builder(schema)
    try:
        built = builder.build(schema, schema.get("title", "Model"))
        builder.finish()
        TypeAdapter(built)  # fail here, not in the middle of a measurement
    except Unsupported:
        raise
    except Exception as exc:  # pydantic refused the constructed type
        raise Unsupported(f"{type(exc).__name__}: {exc}") from exc
    return built


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """JSON equality: bools are not numbers, `1 == 1.0`, dict key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@dataclass(frozen=True)
class Judged:
    """The verdict on one row under one method."""

    agreed: bool
    summary: str  # what healjson gave, shortly
    truncated: bool = False
    error: bool = False
    fails_schema: bool = False
    flags: tuple[str, ...] = ()


def _short(value: Any, limit: int = 90) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def judge(row: dict[str, Any], target: Any, *, want_error: bool) -> Judged:
    """Parse one row (with `target` when it is not None) and compare with the row's outcome."""
    result = healjson.parse(row["input"], target, finish_reason=row.get("finish_reason"))
    flags = tuple(str(f) for f in result.flags)
    if result.error is not None:
        kind = "truncated" if result.truncated else "error"
        summary = f"{kind}: partial {_short(result.value)}" if result.truncated else kind
        return Judged(want_error, summary, result.truncated, True, False, flags)
    value = result.value
    if target is not None:
        adapter = TypeAdapter(target)
        try:
            instance = adapter.validate_json(to_json(value, inf_nan_mode="constants"))
        except Exception:
            return Judged(
                want_error, f"fails schema: {_short(value)}", fails_schema=True, flags=flags
            )
        value = adapter.dump_python(instance, mode="json", by_alias=True)
    if want_error:
        return Judged(False, f"value {_short(value)}", flags=flags)
    return Judged(same(value, row["expected"]), f"value {_short(value)}", flags=flags)


# ---------------------------------------------------------------------------------------------
# Subsets and reasons
# ---------------------------------------------------------------------------------------------

# Reasons inferred for disagreements, reviewed case by case (healjson at the time of writing).
# `POLICY` = healjson differs on purpose, or `expected` is the other project's coercion policy;
# `POLICY?` = a defensible difference that could go either way; `BUG?` = healjson likely should
# have agreed; `GAP` = a syntax L1 does not repair; `N/A` = nothing comparable in healjson.
# Rows not listed get a rule-of-thumb reason from `infer_reason`.
_TRUNC = "POLICY: reply cut off (a bracket is never closed); healjson reports truncation"
_FALSE_TRUNC = (
    "BUG?: reply ends with its closing bracket, but a stray quote inside makes the scanner "
    "think it ends inside a string, so it is reported as truncated (_scan._match, "
    "_parse._slow_path)"
)
_OPEN_STRING = (
    "POLICY?: a string left open right before the final closer; healjson reads it as a cut "
    "string (truncated), json_repair closes or splits it"
)
_PROSE_BRACE = (
    "BUG?: an unbalanced `{` in the prose before the JSON makes the complete JSON after it "
    "count as a fragment of a truncated structure (_parse._slow_path, _inside_only)"
)
_FENCE_IN_STRING = (
    "BUG?: a ``` inside a JSON string is taken for a code fence and, without a schema, the "
    "fenced fragment is preferred to the whole object (_scan._fence_bodies, "
    "_parse._best_untyped)"
)
_CONTINUATION = (
    'BUG?: a complete object followed by `, "k": v}` - the continuation is dropped as prose '
    "(data loss flagged only as prose_around)"
)
_QUOTED_SCALAR = (
    "POLICY: a choice's name with other text after it (`ONE: the first`, `TWO!@#`); healjson "
    "reads prose for no scalar kind and drops only markup and a final period around a value"
)
_PROSE_SCALAR = (
    'POLICY: BAML reads a choice\'s name out of a sentence (`The answer is "TWO"`); healjson '
    "reads prose for no scalar kind (the same reading takes `urgent` out of `not urgent`)"
)
_MULTI = "POLICY: several top-level values; healjson picks one instead of listing them"
_STRICT = "POLICY: json_repair strict-mode error; healjson has no strict mode and repairs"
_API = "N/A: json_repair API-usage error (bad schema/option combination)"
_SCHEMA_COERCE = "POLICY: json_repair's schema-guided coercion; healjson leaves values to pydantic"
_VALID_JSON = "POLICY: input is valid JSON; healjson returns what json.loads returns"
_BAML_STRING = "POLICY: BAML keeps the raw reply text for a `string` target"
_BAML_COERCE = (
    "POLICY: BAML coercion healjson does not do (wrap a scalar into an object/list, unwrap a "
    "single-key object around a scalar, strip whitespace from keys, int to string, numbers "
    "with thousands separators, a number from prose)"
)
_BAML_TEXT = (
    "POLICY: BAML reads an enum/literal from ambiguous or accent-folded text; healjson "
    "declines when two members are mentioned and matches accents exactly"
)
_ALIAS = "POLICY: needs BAML @alias (not in the schema)"
_GAP_QUOTES = (
    "GAP: triple-quoted or backtick-quoted string values; json_repair's reading is accepted "
    "(often silently wrong, e.g. an empty `code`)"
)
_GAP_TUPLE = "GAP: Python tuple syntax"
_GAP_NESTED_ENCODED = (
    "GAP: JSON double-encoded in a nested string field is not decoded (_align.align decodes "
    "only a whole value that is a string)"
)
_AMBIGUOUS = "POLICY: ambiguous broken quoting; the two libraries pick different readings"
_BARE_TOKEN = (
    "POLICY: an unquoted token that is no value as a whole (an expression such as `1/3` or "
    "`10-20`, a malformed number, a parenthesised group, a value running past its comma): "
    "healjson refuses it (the bare-token rule, `_core/parse/tokens.py`), json_repair keeps a "
    "string it was not written as"
)
_NEW_STRUCTURE = (
    "POLICY: `expected` adds a container the text never opens or drops one it does (a missing "
    '`{` or `[` guessed, arrays merged, `["k": v]` as `[{"k": v}]`, a `{}` dropped); '
    "an empty container never closed (`[}` as `[]`); healjson refuses a repair that changes "
    "the structure the model wrote"
)

REASONS: dict[str, str] = {
    # json_repair
    "jr_json_repair_L80_1": _MULTI,
    "jr_parse_array_L9_1": _TRUNC,
    "jr_parse_array_L26_1": _OPEN_STRING,
    "jr_parse_array_L55_1": _GAP_TUPLE,
    "jr_parse_array_L97_1": _FALSE_TRUNC,
    "jr_parse_object_L37_1": _FALSE_TRUNC,
    "jr_parse_object_L48_1": _BARE_TOKEN,
    "jr_parse_object_L68_1": _FALSE_TRUNC,
    "jr_parse_object_L69_1": _OPEN_STRING,
    "jr_parse_object_L113_1": _FALSE_TRUNC,
    "jr_parse_object_L142_1": _CONTINUATION,
    "jr_parse_object_L147_1": _CONTINUATION,
    "jr_parse_object_L149_1": _CONTINUATION,
    "jr_parse_string_L67_1": _FALSE_TRUNC,
    "jr_parse_string_L170_2": _OPEN_STRING,
    "jr_parse_string_L170_3": _OPEN_STRING,
    "jr_parse_string_L170_4": _OPEN_STRING,
    "jr_parse_string_L170_5": _OPEN_STRING,
    "jr_parse_string_L213_1": _FALSE_TRUNC,
    "jr_parse_string_L213_2": _FALSE_TRUNC,
    "jr_parse_string_L22_6": _FALSE_TRUNC,
    "jr_parse_string_L22_8": _FALSE_TRUNC,
    "jr_parse_string_L22_9": _FALSE_TRUNC,
    "jr_parse_string_L22_10": _FENCE_IN_STRING,
    "jr_parse_string_L22_14": _FENCE_IN_STRING,
    "jr_parse_string_L22_26": _FALSE_TRUNC,
    "jr_parse_string_L283_1": _VALID_JSON,
    "jr_parse_string_L433_1": _FALSE_TRUNC,
    "jr_parse_string_L446_3": _FALSE_TRUNC,
    "jr_repair_json_from_file_L24_1": _TRUNC,
    "jr_parse_number_L15_1": _BARE_TOKEN,
    "jr_parse_number_L17_1": _BARE_TOKEN,
    "jr_parse_number_L18_1": _BARE_TOKEN,
    "jr_parse_number_L21_1": _BARE_TOKEN,
    "jr_parse_number_L22_1": _BARE_TOKEN,
    "jr_parse_number_L23_1": _BARE_TOKEN,
    "jr_parse_array_L57_1": _GAP_TUPLE,
    "jr_parse_array_L63_1": _BARE_TOKEN,
    "jr_parse_array_L32_1": _NEW_STRUCTURE,
    "jr_parse_array_L47_1": _NEW_STRUCTURE,
    "jr_parse_array_L48_1": _NEW_STRUCTURE,
    "jr_parse_object_L45_1": _NEW_STRUCTURE,
    "jr_parse_object_L70_1": _NEW_STRUCTURE,
    "jr_parse_object_L74_1": _NEW_STRUCTURE,
    "jr_schema_parser_paths_L92_1": _NEW_STRUCTURE,
    "jr_parse_object_L24_1": _NEW_STRUCTURE,
    "jr_schema_guided_parse_L28_5": _FALSE_TRUNC,
    "jr_schema_guided_parse_L163_1": _GAP_NESTED_ENCODED,
    "jr_schema_guided_parse_L214_1": _GAP_NESTED_ENCODED,
    "jr_schema_guided_parse_L344_1": _VALID_JSON,
    "jr_schema_repairer_L500_1": _VALID_JSON,
    # BAML
    "baml_mod__test_string_from_string23": _PROSE_BRACE,
    "baml_test_basics__test_json_md_example_1_bad_inner_json_2": _FALSE_TRUNC,
    "baml_test_basics__test_unquoted_keys": _AMBIGUOUS,
    "baml_test_class__test_escaped_quotes": _TRUNC,
    "baml_test_code__triple_quotes_contains_only_quoted_string": _GAP_QUOTES,
    "baml_test_code__unescaped_newline_backticks": _GAP_QUOTES,
    "baml_test_code__unescaped_double_quotes_in_triple_quotes": _GAP_QUOTES,
    "baml_test_code__unescaped_backticks_in_backticks": _GAP_QUOTES,
    "baml_test_code__triple_backticks_returns_dedented_code_and_discards_info": _GAP_QUOTES,
    "baml_test_code__triple_backticks_contains_json_terminators": _GAP_QUOTES,
    "baml_test_code__triple_backticks_in_json_fenced_codeblock": _GAP_QUOTES,
    "baml_test_enum__from_string_with_extra_text_after_1": _QUOTED_SCALAR,
    "baml_test_literals__test_literal_string_with_special_characters": _QUOTED_SCALAR,
    "baml_test_enum__case_sensitive_non_ambiguous_match": _BAML_TEXT,
    "baml_test_enum__from_string_and_case_mismatch_wrapped": _PROSE_SCALAR,
    "baml_test_literals__test_literal_string_preceded_by_extra_text": _PROSE_SCALAR,
    "baml_test_literals__test_literal_string_with_quotes_preceded_by_extra_text": _PROSE_SCALAR,
    "baml_test_literals__test_literal_string_with_quotes_preceded_by_extra_text_case_mismatch": (
        _PROSE_SCALAR
    ),
    "baml_test_literals__test_literal_string_with_quotes_followed_by_extra_text": _PROSE_SCALAR,
    "baml_test_literals__test_literal_string_case_mismatch_upper": _PROSE_SCALAR,
    "baml_test_international__test_unaccented_literal_resume": _BAML_TEXT,
    "baml_test_international__test_unaccented_literal_senor": _BAML_TEXT,
}
_JR_API_ERRORS = {
    "jr_schema_guided_parse_L80_1",
    "jr_schema_guided_parse_L363_1",
    "jr_schema_guided_parse_L370_1",
    "jr_schema_guided_parse_L549_1",
    "jr_schema_guided_parse_L929_1",
}


def _brackets_balance(text: str) -> bool:
    """Crude: the reply's brackets balance when quotes are ignored altogether."""
    return text.count("{") == text.count("}") and text.count("[") == text.count("]")


def infer_reason(row: dict[str, Any], judged: Judged) -> str:
    """A short reason for one disagreement: the reviewed one, else a rule of thumb."""
    if row["id"] in REASONS:
        return REASONS[row["id"]]
    options = row.get("options") or {}
    if row["id"] in _JR_API_ERRORS:
        return _API
    if "strict" in options:
        return _STRICT
    if row.get("needs_alias"):
        return _ALIAS
    if judged.truncated:
        return _FALSE_TRUNC if _brackets_balance(row["input"]) else _TRUNC
    if row.get("target_type") in ("string", "string?") and row["outcome"] == "value":
        return _BAML_STRING
    if "schema" in options:
        return _SCHEMA_COERCE
    if "multiple_candidates" in judged.flags:
        return _MULTI
    if "target_type" in row:
        return _BAML_COERCE
    return "UNREVIEWED"


@dataclass(frozen=True)
class Subset:
    file: str
    name: str
    select: Callable[[dict[str, Any]], bool]
    want_error: bool
    note: str


def _jr_options(row: dict[str, Any]) -> dict[str, Any]:
    return row.get("options") or {}


SUBSETS = [
    Subset(
        "json_repair_dev.jsonl",
        "value, plain repair",
        lambda r: r["outcome"] == "value" and not {"schema", "strict"} & set(_jr_options(r)),
        False,
        "headline for syntax repair",
    ),
    Subset(
        "json_repair_dev.jsonl",
        "value, schema/strict option",
        lambda r: r["outcome"] == "value" and bool({"schema", "strict"} & set(_jr_options(r))),
        False,
        "json_repair's schema-guided mode",
    ),
    Subset(
        "json_repair_dev.jsonl",
        "empty",
        lambda r: r["outcome"] == "empty",
        True,
        "agree = error or fails schema",
    ),
    Subset(
        "json_repair_dev.jsonl",
        "error, schema mismatch",
        lambda r: (
            r["outcome"] == "error"
            and r["id"] not in _JR_API_ERRORS
            and "strict" not in _jr_options(r)
        ),
        True,
        "agree = error or fails schema",
    ),
    Subset(
        "json_repair_dev.jsonl",
        "error, strict mode",
        lambda r: (
            r["outcome"] == "error" and r["id"] not in _JR_API_ERRORS and "strict" in _jr_options(r)
        ),
        True,
        "no strict mode in healjson",
    ),
    Subset(
        "json_repair_dev.jsonl",
        "error, API usage",
        lambda r: r["id"] in _JR_API_ERRORS,
        True,
        "not comparable",
    ),
    Subset(
        "baml_dev.jsonl",
        "value, no alias",
        lambda r: r["outcome"] == "value" and not r["needs_alias"],
        False,
        "headline for BAML",
    ),
    Subset(
        "baml_dev.jsonl",
        "value, needs alias",
        lambda r: r["outcome"] == "value" and r["needs_alias"],
        False,
        "expected to disagree",
    ),
    Subset(
        "baml_dev.jsonl",
        "error",
        lambda r: r["outcome"] == "error",
        True,
        "agree = error or fails schema",
    ),
]


def load(name: str) -> list[dict[str, Any]]:
    """The rows of one corpus file."""
    with (CORPUS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def row_schema(row: dict[str, Any]) -> Any:
    """The JSON Schema attached to a row, if any."""
    if "json_schema" in row:
        return row["json_schema"]
    schema = _jr_options(row).get("schema")
    if isinstance(schema, dict) and "$pydantic_model" in schema:
        return schema.get("json_schema")
    return schema


@dataclass
class Tally:
    rows: int = 0
    raw: int = 0
    typed: int = 0
    with_type: int = 0


# ---------------------------------------------------------------------------------------------
# Invented values
# ---------------------------------------------------------------------------------------------

_NOT_ABOUT_THE_REPLY = frozenset({"error, strict mode", "error, API usage"})
_GENERATED = "no_answer.jsonl"


@dataclass(frozen=True)
class Produced:
    """Which contenders produced a value from one no-answer row."""

    row_id: str
    typed: bool
    parse: bool
    validate: bool
    loads: bool
    summary: str  # what healjson parse gave, shortly
    validated: str  # what healjson validate gave, shortly
    needs_alias: bool  # a BAML row whose failure comes from an @alias the schema does not carry


def loads_produces(text: str, target: Any) -> bool:
    """The baseline: `json.loads` succeeds and, with a target, the result validates (lax)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    if target is None:
        return True
    try:
        TypeAdapter(target).validate_python(value)
    except ValidationError:
        return False
    return True


def produced(row: dict[str, Any], target: Any) -> Produced:
    """Whether healjson (parse, validate) and json.loads each produce a value from `row`."""
    parsed = judge(row, target, want_error=True)  # agreed = an error or a value failing `target`
    outcome = healjson.validate(
        row["input"], Any if target is None else target, finish_reason=row.get("finish_reason")
    )
    if outcome.ok:
        validated = f"value {_short(TypeAdapter(Any).dump_python(outcome.value, mode='json'))}"
        validated += " (text_as_value)" if "text_as_value" in outcome.flags else ""
    else:
        validated = str(outcome.reason)
    return Produced(
        row["id"],
        target is not None,
        not parsed.agreed,
        outcome.ok,
        loads_produces(row["input"], target),
        parsed.summary,
        validated,
        bool(row.get("needs_alias")),
    )


def _corpus_target(row: dict[str, Any]) -> Any:
    schema = row_schema(row)
    if schema is None:
        return None
    try:
        return type_from_schema(schema)
    except Unsupported:
        return None


def measure_invented() -> dict[tuple[str, str], list[Produced]]:
    """Every no-answer row's verdicts, by (file, subset) in report order."""
    out: dict[tuple[str, str], list[Produced]] = {}
    for subset in SUBSETS:
        if subset.want_error and subset.name not in _NOT_ABOUT_THE_REPLY:
            # a `needs_alias` row fails only through an @alias the schema does not carry: under
            # the schema as written it has an answer, so it is no no-answer row
            rows = (r for r in load(subset.file) if subset.select(r) and not r.get("needs_alias"))
            out[(subset.file, subset.name)] = [produced(r, _corpus_target(r)) for r in rows]
    generated = load_rows(NO_ANSWER)
    for kind in KINDS:
        out[(_GENERATED, kind)] = [
            produced(row, TARGETS[row["target"]]) for row in generated if row["kind"] == kind
        ]
    return out


@dataclass(frozen=True)
class Rates:
    """How many rows of a subset each contender produced a value from."""

    rows: int
    typed: int
    parse: int
    validate: int
    loads: int

    @classmethod
    def of(cls, verdicts: list[Produced]) -> Rates:
        return cls(
            len(verdicts),
            sum(v.typed for v in verdicts),
            sum(v.parse for v in verdicts),
            sum(v.validate for v in verdicts),
            sum(v.loads for v in verdicts),
        )

    def holds(self) -> tuple[bool, bool]:
        """(parse, validate): healjson invents no more often than json.loads."""
        return self.parse <= self.loads, self.validate <= self.loads


def _invented_table(invented: dict[tuple[str, str], list[Produced]]) -> str:
    lines = [
        "| file | subset | rows | typed rows | healjson parse: invented | rate "
        "| healjson validate: invented | rate | json.loads: invented | rate |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def line(file: str, name: str, r: Rates) -> str:
        return (
            f"| {file} | {name} | {r.rows} | {r.typed} | {r.parse} | {_rate(r.parse, r.rows)} "
            f"| {r.validate} | {_rate(r.validate, r.rows)} | {r.loads} "
            f"| {_rate(r.loads, r.rows)} |"
        )

    lines.extend(line(file, name, Rates.of(v)) for (file, name), v in invented.items())
    for label, verdicts in _invented_totals(invented).items():
        lines.append(line(f"**{label}**", "**all**", Rates.of(verdicts)))
    return "\n".join(lines)


def _invented_totals(
    invented: dict[tuple[str, str], list[Produced]],
) -> dict[str, list[Produced]]:
    corpora = [v for (file, _), vs in invented.items() if file != _GENERATED for v in vs]
    generated = [v for (file, _), vs in invented.items() if file == _GENERATED for v in vs]
    return {"corpora": corpora, "generated": generated, "all no-answer rows": corpora + generated}


def acceptance(invented: dict[tuple[str, str], list[Produced]]) -> str:
    """One line: does healjson invent no more often than json.loads over all no-answer rows?"""
    total = Rates.of(_invented_totals(invented)["all no-answer rows"])
    by_parse, by_validate = total.holds()
    verdict = "HOLDS" if by_parse and by_validate else "DOES NOT HOLD"
    failing = []
    for (file, name), verdicts in invented.items():
        holds = Rates.of(verdicts).holds()
        methods = [m for m, ok in zip(("parse", "validate"), holds, strict=True) if not ok]
        if methods:
            failing.append(f"{file} {name} ({'/'.join(methods)})")
    where = f"; subsets where healjson invents more: {', '.join(failing)}" if failing else ""
    return (
        f"Acceptance (healjson invented-value rate <= json.loads's, {total.rows} no-answer rows): "
        f"{verdict}: parse {_rate(total.parse, total.rows)}, validate "
        f"{_rate(total.validate, total.rows)}, json.loads {_rate(total.loads, total.rows)}{where}"
    )


def _invented_section(invented: dict[tuple[str, str], list[Produced]], table: str) -> list[str]:
    out = [
        "## Invented values: a value produced from a reply that holds no answer",
        "",
        "No-answer rows: BAML `error`, json_repair `empty` and `error, schema mismatch` (its "
        "strict-mode and API-usage error rows are left out: they are about the caller's options, "
        "not the reply), and the generated set `benchmarks/scenarios/no_answer.jsonl` (one subset "
        "per kind, `benchmarks/no_answer.py`). **parse** = `healjson.parse(input, T).ok` and the "
        "value validates against `T` (lax); **validate** = `healjson.validate(input, T).ok` "
        "(`T = Any` without a schema); **json.loads** = `json.loads(input)` succeeds and, with "
        "`T`, `TypeAdapter(T).validate_python` accepts it (a string target gets a `str` only "
        "from a JSON string literal). Generated rows pass their `finish_reason` on. `T = Any` "
        "holds no scalar schema, so no reply is read as its text. BAML error rows marked "
        "`needs_alias` are left out: their failure comes from an `@alias` the schema does not "
        "carry, so under the schema as written they have an answer.",
        "",
        table,
        "",
        f"**{acceptance(invented)}**",
        "",
        "### Rows where healjson produced a value and json.loads did not",
        "",
    ]
    listed = 0
    for (file, name), verdicts in invented.items():
        rows = [v for v in verdicts if (v.parse or v.validate) and not v.loads]
        if not rows:
            continue
        out.append(f"#### {file}, {name} ({len(rows)})")
        out.append("")
        for v in rows:
            if v.parse and v.validate:
                given = f"parse and validate: {v.summary}"
            elif v.parse:
                given = f"parse: {v.summary}; validate: {v.validated}"
            else:
                given = f"validate: {v.validated}; parse: {v.summary}"
            alias = " **needs_alias**: the schema as written accepts it" if v.needs_alias else ""
            out.append(f"- `{v.row_id}` ({given.replace('|', '¦')}){alias}")
        out.append("")
        listed += len(rows)
    if not listed:
        out.extend(["None.", ""])
    loads_only = [
        f"`{v.row_id}`" for vs in invented.values() for v in vs if v.loads and not v.parse
    ]
    out.append(
        "Rows where json.loads produced a value and healjson parse did not: "
        + (", ".join(loads_only) or "none")
        + "."
    )
    out.append("")
    return out


def main() -> int:
    started = time.perf_counter()
    tallies: dict[tuple[str, str], Tally] = {}
    file_tallies: dict[str, Tally] = defaultdict(Tally)
    disagreements: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    unsupported: list[tuple[str, str]] = []
    schema_only: list[tuple[str, str]] = []
    for subset in SUBSETS:
        tally = tallies.setdefault((subset.file, subset.name), Tally())
        for row in filter(subset.select, load(subset.file)):
            schema = row_schema(row)
            target = None
            if schema is not None:
                try:
                    target = type_from_schema(schema)
                except Unsupported as exc:
                    unsupported.append((row["id"], str(exc)))
            raw = judge(row, None, want_error=subset.want_error)
            typed = judge(row, target, want_error=subset.want_error) if target else raw
            tally.rows += 1
            tally.raw += raw.agreed
            tally.typed += typed.agreed
            tally.with_type += target is not None
            whole = file_tallies[subset.file]
            whole.rows += 1
            whole.raw += raw.agreed
            whole.typed += typed.agreed
            whole.with_type += target is not None
            if not typed.agreed:
                reason = infer_reason(row, typed)
                disagreements[reason].append((row["id"], subset.name, typed.summary))
            elif raw.error and not subset.want_error and "text_as_value" not in typed.flags:
                schema_only.append((row["id"], raw.summary))
    invented = measure_invented()
    elapsed = time.perf_counter() - started

    table = _table(tallies, file_tallies)
    print(table)
    print(f"\n{sum(len(v) for v in disagreements.values())} disagreements")
    invented_table = _invented_table(invented)
    print(f"\nInvented values (no-answer rows)\n\n{invented_table}\n\n{acceptance(invented)}")
    print(f"\n{elapsed:.1f} s")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    invented_lines = _invented_section(invented, invented_table)
    report = _report(table, disagreements, schema_only, unsupported, elapsed, invented_lines)
    RESULTS.write_text(report, encoding="utf-8")
    print(f"written to {RESULTS.relative_to(ROOT)}")
    return 0


def _rate(agreed: int, rows: int) -> str:
    return f"{100 * agreed / rows:.1f}%" if rows else "-"


def _table(tallies: dict[tuple[str, str], Tally], files: dict[str, Tally]) -> str:
    lines = [
        "| file | subset | rows | typed rows | agreed (raw) | rate (raw) | agreed (typed) "
        "| rate (typed) | note |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    notes = {(s.file, s.name): s.note for s in SUBSETS}
    for (file, name), t in tallies.items():
        lines.append(
            f"| {file} | {name} | {t.rows} | {t.with_type} | {t.raw} | {_rate(t.raw, t.rows)} "
            f"| {t.typed} | {_rate(t.typed, t.rows)} | {notes[(file, name)]} |"
        )
    for file, t in files.items():
        lines.append(
            f"| **{file}** | **all** | {t.rows} | {t.with_type} | {t.raw} "
            f"| {_rate(t.raw, t.rows)} | {t.typed} | {_rate(t.typed, t.rows)} | |"
        )
    return "\n".join(lines)


def _report(
    table: str,
    disagreements: dict[str, list[tuple[str, str, str]]],
    schema_only: list[tuple[str, str]],
    unsupported: list[tuple[str, str]],
    elapsed: float,
    invented: list[str],
) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "# healjson L1: agreement with the BAML and json_repair corpora, and invented values",
        "",
        "Generated by `benchmarks/corpus_agreement.py` (method in its docstring). The expected "
        "values are those projects' policies, not ground truth (`tests/corpus/README.md`): this "
        "is a measure, not a target.",
        "",
        f"- date: {now}",
        f"- command: `{COMMAND}` (from the repository root)",
        f"- machine: `{platform.platform()}` ({platform.machine()}, "
        f"{platform.python_implementation()})",
        f"- python {sys.version.split()[0]}, pydantic {version('pydantic')}, pydantic-core "
        f"{version('pydantic-core')}, json_repair {version('json_repair')} (corpus expected "
        f"values from json_repair v0.61.7 and BAML v0.220.0), healjson {version('healjson')}",
        f"- wall time: {elapsed:.1f} s",
        "",
        "**raw** = `healjson.parse(input)` compared with `expected`; **typed** = "
        "`healjson.parse(input, T)` with `T` built from the row's JSON Schema, value validated "
        "(lax) and dumped by alias before comparing; rows without a usable schema count the raw "
        "verdict in both columns.",
        "",
        table,
        "",
        *invented,
        "## Disagreements (typed method), grouped by inferred reason",
        "",
        "`POLICY` = healjson differs on purpose or the expected value is the other project's "
        "coercion; `BUG?` = healjson likely should have agreed; `GAP` = a syntax L1 does not "
        "repair; `N/A` = nothing comparable. Reasons come from a reviewed table in the script "
        "with rules of thumb for rows not reviewed.",
        "",
    ]
    for reason in sorted(disagreements, key=lambda r: (not r.startswith("BUG"), r)):
        cases = disagreements[reason]
        out.append(f"### {reason} ({len(cases)})")
        out.append("")
        out.extend(
            f"- `{case_id}` ({subset}): {summary.replace('|', '¦')}"
            for case_id, subset, summary in cases
        )
        out.append("")
    if schema_only:
        out.append("## Agreed only with the schema: the schema-less parse gave an error")
        out.append("")
        out.append(
            "These rows agree with a target but `healjson.parse(input)` alone fails (scalars "
            "written as plain text, which L1 reads only for a scalar target, are left out)."
        )
        out.append("")
        out.extend(f"- `{case_id}`: {summary}" for case_id, summary in schema_only)
        out.append("")
    if unsupported:
        out.append("## Rows whose schema could not be mapped (raw comparison used)")
        out.append("")
        out.extend(f"- `{case_id}`: {why}" for case_id, why in unsupported)
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
