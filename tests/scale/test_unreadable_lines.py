"""Unreadable lines never crash `healjson batch` or `healjson trace`: deep nesting (which makes
the JSON parser raise RecursionError), invalid UTF-8, over-long lines and non-rows become
`invalid_input` rows on the input side and skipped, reported lines on the output side. A
request holding a string that cannot be encoded as UTF-8 is `invalid_input` too, in every mode;
hostile row fields (a reason with a newline, a negative count) never break `trace`'s totals."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from healjson._batch import json_lines
from healjson._batch.input_file import read_jobs
from healjson._batch.json_lines import read_lines
from healjson._batch.output_file import read_rows, recover_output
from healjson._cli.app import app
from healjson.testing import ScriptedReply, ScriptedServer
from paths import CLI_FIXTURES
from pinned import pinned

PACK = str(CLI_FIXTURES / "ticket_pack.py")


def deep(depth: int) -> bytes:
    """An input line whose `prompt` is a list nested `depth` levels deep."""
    return b'{"id": "deep", "prompt": ' + b"[" * depth + b"]" * depth + b"}"


def deep_row(depth: int, ident: str) -> bytes:
    """An output row whose `value` is nested `depth` levels deep."""
    return (
        b'{"id": "'
        + ident.encode()
        + b'", "ok": true, "value": '
        + b"[" * depth
        + b"]" * depth
        + b"}"
    )


INVALID_UTF8 = b'{"id": "latin", "prompt": "caf\xe9"}'


def prompt_line(number: int) -> bytes:
    """An input line asking for ticket `number` (id `tN`)."""
    return json.dumps({"id": f"t{number}", "prompt": f"Open ticket {number}."}).encode()


def answer(body: dict[str, Any]) -> ScriptedReply:
    """A valid ticket for whichever `ticket N` the request asks about."""
    first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    number = int(re.search(r"ticket (\d+)", first_user).group(1))  # type: ignore[union-attr]
    ticket = {
        "urgency": 3,
        "category": "logistics",
        "summary": "Order stuck in transit",
        "orderId": f"ORD-{number:06d}",
    }
    return ScriptedReply(content=json.dumps(ticket))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A ScriptedServer on 127.0.0.1 that answers every request with a valid ticket."""
    with ScriptedServer([answer], repeat=True) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The endpoint is passed explicitly; inherited OPENAI_* variables must not leak in."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def run_batch(server: ScriptedServer, source: Path, out: Path, *more: str) -> Any:
    """`healjson batch` in-process against `server`."""
    args = ["batch", str(source), "--out", str(out), "--model", "m", "--contracts", PACK]
    args += ["--base-url", server.base_url, "--api-key", "test", *more]
    return CliRunner().invoke(app, args)


def write_lines(path: Path, lines: list[bytes]) -> Path:
    """`lines`, each followed by a newline."""
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def parsed_rows(out: Path) -> dict[Any, dict[str, Any]]:
    """The output's readable rows by id (unreadable lines left out)."""
    return {row["id"]: row for _, row, _ in read_rows(out) if row is not None}


# --- input side ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (deep(1_000), "nested too deeply"),
        (deep(100_000), "nested too deeply"),
        (INVALID_UTF8, "not UTF-8"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b'"just a string"', "not a JSON object"),
        (
            b'{"messages": [{"role": "user", "content": ' + b"[" * 200 + b"]" * 200 + b"}]}",
            "nest deeper than 64 levels",
        ),
    ],
    ids=["1000-deep", "100000-deep", "invalid-utf8", "array", "string", "deep-messages"],
)
def test_an_unreadable_input_line_becomes_a_job_with_a_problem(
    tmp_path: Path, line: bytes, problem: str
) -> None:
    """Each hostile line is a job carrying a problem; the lines around it are read as usual."""
    source = write_lines(tmp_path / "in.jsonl", [prompt_line(1), line, prompt_line(3)])

    first, bad, last = read_jobs(source)

    assert ("t1", None) == (first.id, first.problem)
    assert 2 == bad.line
    assert problem in (bad.problem or "")
    assert len(bad.text) <= 201
    assert ("t3", None) == (last.id, last.problem)


def test_an_over_long_input_line_is_a_problem_and_is_never_held_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line over MAX_LINE_BYTES is reported by its line number; the next line still reads."""
    monkeypatch.setattr(json_lines, "MAX_LINE_BYTES", 1_000)
    long = json.dumps({"id": "long", "prompt": "x" * 5_000}).encode()
    source = write_lines(tmp_path / "in.jsonl", [prompt_line(1), long, prompt_line(3)])

    first, bad, last = read_jobs(source)

    assert ("#line-2", 2) == (bad.id, bad.line)
    assert "longer than 1000 bytes" in (bad.problem or "")
    assert ("t1", "t3") == (first.id, last.id)


def test_read_lines_measures_an_over_long_line_without_keeping_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An over-long line keeps its offset, full size and whether it ended; only its head."""
    monkeypatch.setattr(json_lines, "MAX_LINE_BYTES", 100)
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"a" * 10 + b"\n" + b"b" * 300_000 + b"\n" + b"c" * 500)

    with path.open("rb") as file:
        lines = list(read_lines(file))

    assert [
        (1, 0, 11, False, True),
        (2, 11, 300_001, True, True),
        (3, 300_012, 500, True, False),
    ] == [(line.number, line.offset, line.size, line.too_long, line.ended) for line in lines]
    assert len(lines[1].data) < 300_000


def test_batch_writes_invalid_input_rows_for_hostile_lines(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """A batch whose input holds 1,000- and 100,000-deep lines and invalid UTF-8 writes one
    `invalid_input` row for each and heals the rest."""
    lines = [prompt_line(1), deep(1_000), INVALID_UTF8, deep(100_000), prompt_line(5)]
    source = write_lines(tmp_path / "in.jsonl", lines)
    out = tmp_path / "out.jsonl"

    result = run_batch(server, source, out)

    assert 0 == result.exit_code, result.output
    by_id = parsed_rows(out)
    assert {"t1", "#line-2", "#line-3", "#line-4", "t5"} == set(by_id)
    assert [True, True] == [by_id["t1"]["ok"], by_id["t5"]["ok"]]
    assert ["invalid_input"] * 3 == [by_id[f"#line-{n}"]["reason"] for n in (2, 3, 4)]
    assert "nested too deeply" in by_id["#line-4"]["errors"][0]["constraint"]
    assert "invalid input 3" in result.stderr


# a lone surrogate anywhere in a request's strings: JSON's `"\\ud83d"` without its pair
LONE = st.builds(
    lambda head, surrogate, tail: head + surrogate + tail,
    st.text(max_size=8),
    st.integers(0xD800, 0xDFFF).map(chr),
    st.text(max_size=8),
)
PLACES = {
    "prompt": lambda s: {"prompt": s},
    "system": lambda s: {"prompt": "p", "system": s},
    "content": lambda s: {"messages": [{"role": "user", "content": s}]},
    "role": lambda s: {"messages": [{"role": s, "content": "p"}]},
    "part": lambda s: {"messages": [{"role": "user", "content": [{"type": "text", "text": s}]}]},
    "member": lambda s: {"messages": [{"role": "user", "content": "p", "name": s}]},
    "key": lambda s: {"messages": [{"role": "user", "content": "p", s: 1}]},
    "later": lambda s: {"messages": [{"role": "user", "content": "p"},
                                     {"role": "user", "content": s}]},
    "json-text": lambda s: {"messages": json.dumps([{"role": "user", "content": s}])},
    "context": lambda s: {"prompt": "p", "context": {"k": [1, {"v": s}]}},
    "context-key": lambda s: {"prompt": "p", "context": {s: 1}},
    "context-text": lambda s: {"prompt": "p", "context": json.dumps({"k": s})},
}  # fmt: skip


@given(text=LONE, place=st.sampled_from(sorted(PLACES)))
@pinned(max_examples=30)
def test_any_string_not_encodable_as_utf8_makes_the_line_unusable(text: str, place: str) -> None:
    """A lone surrogate in any string of a line's request makes the line a job with a problem
    (an `invalid_input` row for every runner), never a request to send."""
    with TemporaryDirectory() as folder:
        line = json.dumps({"id": "s", **PLACES[place](text)}).encode()
        source = write_lines(Path(folder) / "in.jsonl", [prompt_line(1), line])
        first, bad = read_jobs(source)
    assert (first.problem, bad.request) == (None, None)
    assert "not encodable as UTF-8" in (bad.problem or "")
    bad.problem.encode("utf-8")  # the row that names the problem can be written


SURROGATE = b'{"id": "s", "prompt": "broken emoji \\ud83d here"}'


@pytest.mark.parametrize(
    "mode", [[], ["--batch-api", "--poll-interval", "0"]], ids=["direct", "batch-api"]
)
def test_a_lone_surrogate_is_invalid_input_not_an_endpoint_failure(
    tmp_path: Path, mode: list[str]
) -> None:
    """A prompt holding a lone surrogate is an `invalid_input` row in either mode; nothing of it
    is sent and the rest of the batch heals."""
    source = write_lines(tmp_path / "in.jsonl", [prompt_line(1), SURROGATE])
    out = tmp_path / "out.jsonl"
    with ScriptedServer([answer], repeat=True, batch_replies=lambda _id, body: answer(body)) as srv:
        result = run_batch(srv, source, out, *mode)
        sent = json.dumps([srv.requests, srv.files], default=str)
    assert 0 == result.exit_code, result.output
    by_id = parsed_rows(out)
    assert by_id["t1"]["ok"] is True
    assert "invalid_input" == by_id["s"]["reason"]
    assert "not encodable as UTF-8" in by_id["s"]["errors"][0]["constraint"]
    assert "broken emoji" not in sent
    assert "failed on the endpoint" not in result.stderr


# --- output side ---------------------------------------------------------------------------------


HOSTILE_ROWS = [deep_row(1_000, "deep-1000"), b"\xff\xfe not text", deep_row(100_000, "deep-big")]


def test_recover_output_counts_hostile_lines_and_keeps_them(tmp_path: Path) -> None:
    """Deep, invalid-UTF-8 lines among rows are unreadable, kept, and never a torn tail (a
    whole line ends with its newline)."""
    row = b'{"id": "t1", "ok": true}'
    out = write_lines(tmp_path / "out.jsonl", [row, *HOSTILE_ROWS])

    found = recover_output(out)

    assert ({'"t1"'}, 3, False) == (set(found.keys), found.unreadable, found.torn)
    assert out.stat().st_size == found.keep_bytes


def test_a_hostile_last_line_without_newline_is_a_torn_tail(tmp_path: Path) -> None:
    """An unreadable last line with no final newline is what a killed writer leaves: cut off."""
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"id": "t1"}\n' + deep_row(100_000, "x"))

    found = recover_output(out)

    assert (True, 13) == (found.torn, found.keep_bytes)


def test_an_over_long_row_still_counts_as_its_ids_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row longer than MAX_LINE_BYTES is read by its leading id, so a resume never repeats it."""
    monkeypatch.setattr(json_lines, "MAX_LINE_BYTES", 1_000)
    big = json.dumps({"id": "t7", "ok": True, "value": "x" * 5_000}).encode()
    out = write_lines(tmp_path / "out.jsonl", [big, b'{"id": 8}'])

    found = recover_output(out)

    assert ({'"t7"', "8"}, 0) == (set(found.keys), found.unreadable)


def test_resume_works_with_hostile_lines_in_the_output(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Hostile lines in OUT (1,000- and 100,000-deep, invalid UTF-8) neither crash a re-run nor
    stop it: the ids already there are skipped, the hostile lines stay as they were."""
    out = tmp_path / "out.jsonl"
    first = run_batch(server, write_lines(tmp_path / "a.jsonl", [prompt_line(1)]), out)
    with out.open("ab") as file:
        file.write(b"".join(line + b"\n" for line in HOSTILE_ROWS))
    source = write_lines(tmp_path / "b.jsonl", [prompt_line(n) for n in (1, 2, 3)])

    second = run_batch(server, source, out)

    assert (0, 0) == (first.exit_code, second.exit_code), second.output
    assert {"t1", "t2", "t3"} == set(parsed_rows(out))
    assert "wrote 2 of 2 row(s)" in second.stderr
    assert "skipped 1 line(s) whose id" in second.stderr
    assert "3 unreadable line(s)" in second.stderr
    assert all(line + b"\n" in out.read_bytes() for line in HOSTILE_ROWS)


def test_retry_rewrites_an_output_with_hostile_lines_keeping_them(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """--retry-failed takes the failed row out and keeps every hostile line byte for byte."""
    failed = {"id": "t2", "ok": False, "reason": "api_error", "attempts": 1, "usage": {}}
    out = write_lines(
        tmp_path / "out.jsonl",
        [b'{"id": "t1", "ok": true}', *HOSTILE_ROWS, json.dumps(failed).encode()],
    )
    source = write_lines(tmp_path / "in.jsonl", [prompt_line(1), prompt_line(2)])

    result = run_batch(server, source, out, "--retry-failed")

    assert 0 == result.exit_code, result.output
    assert "took 1 failed row(s) out of" in result.stderr
    assert parsed_rows(out)["t2"]["ok"] is True
    assert all(line + b"\n" in out.read_bytes() for line in HOSTILE_ROWS)


def test_trace_renders_the_other_rows_and_reports_hostile_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`healjson trace` shows every row and names each skipped line on stderr."""
    monkeypatch.setattr(json_lines, "MAX_LINE_BYTES", 300_000)
    healed = {"id": "a", "ok": True, "value": {}, "attempts": 1, "usage": {"total_tokens": 9}}
    odd = {
        "id": "b",
        "ok": False,
        "reason": ["not", "a", "string"],
        "errors": [{"path": json.loads("[" * 200 + "]" * 200), "constraint": 5}],
    }
    lines = [
        json.dumps(healed).encode(),
        *HOSTILE_ROWS,
        b"x" * 400_000,
        b"[1]",
        json.dumps(odd).encode(),
    ]
    out = write_lines(tmp_path / "out.jsonl", lines)

    result = CliRunner().invoke(app, ["trace", str(out), "--all"])

    assert 0 == result.exit_code, result.output
    assert "- id a: healed in 1 call(s), 9 token(s)" in result.stdout
    assert '- id b: degraded (`["not", "a", "string"]`) after 0 call(s)' in result.stdout
    for number, problem in [
        (2, "is nested too deeply to read"),
        (3, "is not UTF-8"),
        (4, "is nested too deeply to read"),
        (5, "is longer than 300000 bytes"),
        (6, "is not a row"),
    ]:
        assert f"out.jsonl:{number}: {problem}" in result.stderr


COUNTS = st.one_of(
    st.integers(-(10**30), 10**30),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=3),
)


@given(reason=st.text(max_size=20), attempts=st.lists(COUNTS, min_size=2, max_size=5))
@pinned(max_examples=30)
def test_trace_totals_escape_the_reason_and_count_only_valid_attempts(
    reason: str, attempts: list[Any]
) -> None:
    """The totals line escapes a hostile reason as the table does (one line, pipes escaped) and
    sums only the `attempts` that are non-negative integers, counting the others as unknown."""
    rows = [{"id": n, "ok": False, "reason": reason, "attempts": a} for n, a in enumerate(attempts)]
    with TemporaryDirectory() as folder:
        out = write_lines(Path(folder) / "out.jsonl", [json.dumps(row).encode() for row in rows])
        result = CliRunner().invoke(app, ["trace", str(out)])
    assert 0 == result.exit_code, result.output
    lines = result.stdout.rstrip("\n").splitlines()
    assert len(rows) + 6 == len(lines)  # header, rule, one line per row, totals, the hint
    totals = lines[-3]
    assert totals.startswith(f"**{len(rows)} rows**: 0 healed, {len(rows)} degraded (")
    assert re.search(r"(?<!\\)\|", totals) is None
    valid = [a for a in attempts if type(a) is int and a >= 0]
    unknown = len(attempts) - len(valid)
    calls = f"; {sum(valid)} call(s)" + (
        f" ({unknown} row(s) without a call count)" if unknown else ""
    )
    assert f"{calls}, 0 token(s)." in totals
