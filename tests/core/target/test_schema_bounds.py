"""Untrusted JSON Schemas are bounded: a backtracking `pattern` over model text is checked within
a time budget (a diagnostic when cut short; the run ends by its deadline), and no schema is ever
fetched (a `$ref` that leads outside the schema is refused, naming where it leads; one that
cannot be resolved while validating is a diagnostic)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy
from healjson.testing import ScriptedModel

BACKTRACKING = "^(a|a)*$"  # Python's `re` takes seconds at 24 characters, doubling per one more
SLOW_TEXT = "a" * 25 + "!"


def schema_with(pattern: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": pattern}},
        "required": ["code"],
    }


def test_a_backtracking_pattern_does_not_hold_the_run_past_its_deadline() -> None:
    """A short answer against a catastrophically backtracking `pattern` ends the run within
    about its deadline (`deadline_s=1`), degraded, instead of matching for many seconds."""
    answer = json.dumps({"code": SLOW_TEXT})
    policy = HealPolicy(deadline_s=1, max_attempts=3)
    started = time.monotonic()
    outcome = Healer(schema_with(BACKTRACKING), policy=policy).run(ScriptedModel([answer] * 3), "x")
    elapsed = time.monotonic() - started
    assert isinstance(outcome, Degraded)
    assert elapsed < 5.0, f"the run took {elapsed:.1f} s"


def test_a_pattern_cut_short_is_a_diagnostic_that_names_it() -> None:
    """`validate` reports a pattern the budget could not check as the field's diagnostic,
    naming the pattern (neither a match nor a crash)."""
    outcome = healjson.validate(json.dumps({"code": SLOW_TEXT}), schema_with(BACKTRACKING))
    assert isinstance(outcome, Degraded)
    (error,) = outcome.errors
    assert "code" == error.path
    assert BACKTRACKING in error.constraint
    assert "could not be checked" in error.constraint


def test_property_names_are_matched_within_the_budget() -> None:
    """`patternProperties` and `additionalProperties: false` beside it match the answer's
    property names within the budget too."""
    schema = {
        "type": "object",
        "patternProperties": {BACKTRACKING: {"type": "integer"}},
        "additionalProperties": False,
    }
    started = time.monotonic()
    outcome = healjson.validate(json.dumps({SLOW_TEXT: 1}), schema)
    assert isinstance(outcome, Degraded)
    assert time.monotonic() - started < 5.0
    assert any("could not be checked" in error.constraint for error in outcome.errors)


@pytest.mark.parametrize(
    ("text", "ok"), [("aaaa", True), ("aab", False), ("", True)], ids=["match", "miss", "empty"]
)
def test_a_bounded_pattern_keeps_its_meaning(text: str, ok: bool) -> None:
    """Within the budget a pattern means what Python's `re.search` means."""
    outcome = healjson.validate(json.dumps({"code": text}), schema_with(BACKTRACKING))
    assert ok == outcome.ok


def test_a_pydantic_pattern_constraint_is_linear() -> None:
    """A pydantic `pattern=` constraint runs in pydantic-core's Rust regex engine, which does
    not backtrack: 10,000 characters against the same pattern are judged at once."""

    class Code(BaseModel):
        code: str = Field(pattern=BACKTRACKING)

    started = time.monotonic()
    outcome = healjson.validate(json.dumps({"code": "a" * 10_000 + "!"}), Code)
    assert isinstance(outcome, Degraded)
    assert time.monotonic() - started < 1.0


# --- no schema is ever fetched ------------------------------------------------------------------


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []  # noqa: RUF012 - the class is the one server's record

    def do_GET(self) -> None:
        type(self).seen.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that would serve any schema asked of it, and the paths asked."""
    seen: list[str] = []
    handler = type("Recorder", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("ref", ["item.json", "./defs/item.json#/x", "{host}/other.json"])
def test_a_remote_ref_is_refused_naming_it_and_nothing_is_fetched(
    schema_host: tuple[str, list[str]], ref: str
) -> None:
    """A `$ref` that leads outside the schema (relative under a remote `$id`, or absolute) is
    refused when the target is built, naming the reference and the URL it would fetch; the
    host it names sees no request."""
    host, seen = schema_host
    ref = ref.format(host=host)
    schema = {
        "$id": f"{host}/schemas/root.json",
        "type": "object",
        "properties": {"a": {"$ref": ref}},
    }
    with pytest.raises(ValueError, match="never fetches a schema") as raised:
        healjson.validate('{"a": 1}', schema)
    assert repr(ref) in str(raised.value)
    assert f"{host}/" in str(raised.value)
    with pytest.raises(ValueError, match="never fetches"):
        Healer(schema)
    assert [] == seen


def test_references_inside_the_schema_still_resolve(schema_host: tuple[str, list[str]]) -> None:
    """References to the schema's own documents (its `$defs`, a subschema's `$id`) resolve
    under a remote `$id` without any request."""
    host, seen = schema_host
    schema = {
        "$id": f"{host}/schemas/root.json",
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"$ref": "item.json"}},
        "$defs": {"n": {"type": "integer"}, "item": {"$id": "item.json", "type": "string"}},
    }
    assert isinstance(healjson.validate('{"a": 1, "b": "x"}', schema), Healed)
    assert isinstance(healjson.validate('{"a": 1, "b": 2}', schema), Degraded)
    assert [] == seen


def test_a_reference_unresolved_while_validating_is_a_diagnostic() -> None:
    """A reference that passes the build-time check but resolves to nothing when validating (an
    anchor the schema lacks) is a diagnostic naming it: no crash, no fetch."""
    schema = {"type": "object", "properties": {"a": {"$ref": "#missing"}}}
    outcome = healjson.validate('{"a": 1}', schema)
    assert isinstance(outcome, Degraded)
    assert any("#missing" in error.constraint for error in outcome.errors)
