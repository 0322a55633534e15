"""Bad input to the command line gets a one-line error and its exit code, never a traceback:
text the output cannot encode is escaped (JSON stays strict), a reply that is not UTF-8 is a
usage error from a file or stdin alike, JSON nested too deeply is a usage error, and a model
file that exits while importing names nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel
from typer.testing import CliRunner

from healjson._cli.app import app
from healjson._cli.markdown_out import printable
from healjson._core.run.healer import validate
from pinned import pinned

MODEL = "from pydantic import BaseModel\nclass M(BaseModel):\n    a: int\n    b: str = 'x'\n"
# any character, lone surrogates included
CHARS = st.characters(codec=None, categories=None)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(CHARS, max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(CHARS, max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _model(folder: Path) -> str:
    (folder / "m.py").write_text(MODEL, encoding="utf-8")
    return f"{folder / 'm.py'}:M"


def _one_line_error(result: Any, code: int) -> str:
    """The usage error's text, after checking the run ended with `code` and no traceback."""
    assert code == result.exit_code, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return " ".join(result.stderr.replace("│", " ").split())


@pinned(max_examples=10)
@given(value=JSON_VALUES, encoding=st.sampled_from(["utf-8", "ascii", "latin-1", "cp1252"]))
@example(value={"b": "smile \ud83d"}, encoding="utf-8")
@example(value=["\U0001f600", "\\\udc80"], encoding="ascii")
def test_printable_json_is_encodable_and_means_the_same(value: Any, encoding: str) -> None:
    """JSON text made printable encodes in the output's encoding and parses to the same value."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    shown = printable(text, encoding)

    shown.encode(encoding)  # strict: no character left that the stream cannot write
    assert value == json.loads(shown)
    if _encodes(text, encoding):
        assert text == shown  # what the stream can write is written as it is


@pytest.mark.parametrize("output_format", ["md", "json"])
def test_heal_prints_a_lone_surrogate_reply_as_escapes(tmp_path: Path, output_format: str) -> None:
    """A reply holding a `\\ud83d` escape prints (escaped, strict JSON for `-f json`), exit 1."""
    reply = tmp_path / "reply.txt"
    reply.write_text('{"a": 1, "b": "smile \\ud83d"}', encoding="utf-8")

    result = CliRunner().invoke(
        app, ["heal", str(reply), "-m", _model(tmp_path), "-f", output_format]
    )

    assert 1 == result.exit_code, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    text = result.stdout_bytes.decode("utf-8")  # strict: the output is UTF-8
    assert "\\ud83d" in text
    if output_format == "json":
        assert "smile \ud83d" in json.dumps(json.loads(text), ensure_ascii=False)


@pytest.mark.parametrize("output_format", ["md", "json"])
def test_heal_on_an_ascii_terminal_escapes_what_it_cannot_write(
    tmp_path: Path, output_format: str
) -> None:
    """On an ASCII stdout an emoji in a healed value is written `\\ud83d\\ude00`, exit 0."""
    reply = tmp_path / "reply.txt"
    reply.write_text('{"a": 1, "b": "smile \U0001f600"}', encoding="utf-8")
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    command = [str(Path(sys.executable).parent / "healjson")]

    done = subprocess.run(
        [*command, "heal", str(reply), "-m", _model(tmp_path), "-f", output_format],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )

    assert 0 == done.returncode, done.stderr.decode(errors="replace")
    text = done.stdout.decode("ascii")
    assert "\\ud83d\\ude00" in text
    if output_format == "json":
        assert "smile \U0001f600" == json.loads(text)["value"]["b"]


def test_trace_prints_a_row_holding_a_lone_surrogate(tmp_path: Path) -> None:
    """`trace --id` on a `batch --full` row whose reply held `\\ud83d` prints it escaped."""

    class S(BaseModel):
        n: int
        x: int

    outcome = validate('{"n": 1, "x": "smile \\ud83d"}', S)
    row = {"id": 1, "ok": False, "reason": str(outcome.reason), "attempts": 1}
    out = tmp_path / "out.jsonl"
    out.write_text(json.dumps({**row, "outcome": outcome.to_dict()}) + "\n", encoding="utf-8")

    for args in (["--id", "1"], ["--all"]):
        result = CliRunner().invoke(app, ["trace", str(out), *args])
        assert 0 == result.exit_code, result.output
        assert "smile \\ud83d" in result.stdout_bytes.decode("utf-8")


NOT_UTF8 = st.binary(max_size=24).filter(lambda data: not _decodes(data))


def _encodes(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pinned(max_examples=10)
@given(head=st.text(st.characters(codec="utf-8"), max_size=12), tail=NOT_UTF8)
@example(head='{"a":1,"b":"', tail=b'\xff"}')
def test_a_reply_not_utf8_is_the_same_usage_error_from_a_file_and_stdin(
    tmp_path_factory: pytest.TempPathFactory, head: str, tail: bytes
) -> None:
    """Bytes that are not UTF-8 exit 2 naming the first bad byte's offset, from a file or `-`."""
    folder = tmp_path_factory.mktemp("reply")
    data = head.encode("utf-8") + tail
    (folder / "reply.txt").write_bytes(data)
    model = _model(folder)
    start = _first_bad(data)

    from_file = CliRunner().invoke(app, ["heal", str(folder / "reply.txt"), "-m", model])
    from_stdin = CliRunner().invoke(app, ["heal", "-", "-m", model], input=data)

    for result in (from_file, from_stdin):
        message = _one_line_error(result, 2)
        assert f"is not UTF-8 text: byte 0x{data[start]:02x} at offset {start} " in message


def _first_bad(data: bytes) -> int:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    raise AssertionError("decodes")


def test_heal_messages_nested_too_deeply_is_a_usage_error(tmp_path: Path) -> None:
    """`--messages` holding 100k nested arrays exits 2 with one line, not a RecursionError."""
    (tmp_path / "reply.txt").write_text('{"a": 1}', encoding="utf-8")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    reply, deep = str(tmp_path / "reply.txt"), str(tmp_path / "deep.json")

    result = CliRunner().invoke(app, ["heal", reply, "-m", _model(tmp_path), "--messages", deep])

    assert "nested too deeply" in _one_line_error(result, 2)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            b'{"id": "a", "prompt": "x", "replies": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}\n",
            "scenarios.jsonl:1: JSON nested too deeply",
        ),
        (b'{"id": "a", "prompt": "x"}\n\xff\xfe\n', "not UTF-8 text: byte 0xff at offset 27"),
    ],
    ids=["deep", "not-utf8"],
)
def test_eval_scenario_file_unreadable_is_a_usage_error(
    tmp_path: Path, content: bytes, said: str
) -> None:
    """A scenario line nested too deeply, or a file not UTF-8, exits 2 naming the place."""
    path = tmp_path / "scenarios.jsonl"
    path.write_bytes(content)

    result = CliRunner().invoke(
        app, ["eval", str(path), "--response-model", _model(tmp_path), "--no-progress"]
    )

    assert said in _one_line_error(result, 2)


@pytest.mark.parametrize(
    "body",
    [
        "raise SystemExit(0)",
        "import sys\nsys.exit()",
        "raise SystemExit('bye')",
        "raise BaseException('odd')",
        "raise ValueError('bad')",
    ],
)
@pytest.mark.parametrize("option", ["--model", "--contracts"])
def test_a_model_file_that_exits_or_raises_on_import_is_a_usage_error(
    tmp_path: Path, body: str, option: str
) -> None:
    """A `--model`/`--contracts` file that exits or raises while importing exits 2 naming it."""
    path = tmp_path / "exits.py"
    path.write_text(body + "\n", encoding="utf-8")
    spec = f"{path}:M" if option == "--model" else str(path)

    result = CliRunner().invoke(app, ["heal", "-", option, spec], input='{"a": "x"}')

    assert "exits.py" in _one_line_error(result, 2)


def test_a_module_that_exits_on_import_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `pkg.mod:Model` module that calls sys.exit(0) on import exits 2 naming the module."""
    (tmp_path / "exits_on_import_mod.py").write_text("raise SystemExit(0)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    result = CliRunner().invoke(app, ["heal", "-", "-m", "exits_on_import_mod:M"], input="{}")

    assert "exits_on_import_mod" in _one_line_error(result, 2)


def test_batch_from_a_pipe_blames_the_input(tmp_path: Path) -> None:
    """`batch` on a pipe (as /dev/stdin is) exits 2 with an error on INPUT.jsonl, not --out."""
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    args = ["batch", str(fifo), "-o", str(tmp_path / "out.jsonl"), "--model", "m"]
    args += ["--response-model", _model(tmp_path), "--api-key", "t", "--no-progress"]
    command = [str(Path(sys.executable).parent / "healjson"), *args]

    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    assert 2 == done.returncode, done.stderr
    message = " ".join(done.stderr.replace("│", " ").split())
    assert "Invalid value for 'INPUT.jsonl'" in message
    assert "is not a regular file" in message
    assert "Traceback" not in message
    assert not (tmp_path / "out.jsonl").exists()


def test_trace_of_a_file_without_rows_says_so(tmp_path: Path) -> None:
    """`trace` on an empty file says "no rows" on stderr instead of printing nothing."""
    out = tmp_path / "empty.jsonl"
    out.write_bytes(b"")

    result = CliRunner().invoke(app, ["trace", str(out)])

    assert 0 == result.exit_code, result.output
    assert f"no rows in {out}" in result.stderr


@pinned(max_examples=10)
@given(ok=st.one_of(st.text(max_size=4), st.integers(), st.none(), st.lists(st.booleans())))
@example(ok="yes")
def test_trace_shows_a_row_whose_ok_is_not_a_boolean_as_unreadable_everywhere(
    tmp_path_factory: pytest.TempPathFactory, ok: Any
) -> None:
    """A row whose `ok` is no boolean is unreadable in the index, the totals and its trace."""
    out = tmp_path_factory.mktemp("trace") / "out.jsonl"
    rows = [{"id": 1, "ok": ok, "attempts": -1}, {"id": 2, "ok": True, "attempts": 1}]
    out.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

    result = CliRunner().invoke(app, ["trace", str(out), "--all"])

    assert 0 == result.exit_code, result.output
    assert "| 1 | unreadable | ? |  |" in result.stdout
    assert "**2 rows**: 1 healed, 0 degraded, 1 unreadable; 1 call(s)" in result.stdout
    assert "- id 1: unreadable row (`ok` is " in result.stdout
    assert "healed in -1" not in result.stdout
    assert "- id 2: healed in 1 call(s)" in result.stdout


@pytest.mark.parametrize("kind", ["not-sqlite", "directory"])
def test_batch_with_a_cache_that_cannot_be_one_is_a_usage_error(tmp_path: Path, kind: str) -> None:
    """`batch --cache` on a file that is no SQLite database, or on a directory, is a usage
    error (exit 2) naming `--cache`, before any row is read or written."""
    cache = tmp_path / "cache.sqlite"
    if kind == "directory":
        cache.mkdir()
    else:
        cache.write_text("garbage, not a database " * 50, encoding="utf-8")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": 1, "prompt": "hi"}\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = [
        "batch",
        str(rows),
        "-o",
        str(out),
        "--model",
        "m",
        "--response-model",
        _model(tmp_path),
    ]
    result = CliRunner().invoke(
        app,
        [*args, "--cache", str(cache), "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k"],
    )
    said = _one_line_error(result, 2)
    assert "--cache" in said
    assert ("is a directory" if kind == "directory" else "cannot be a response cache") in said
    assert not out.exists() or out.read_text(encoding="utf-8") == ""
