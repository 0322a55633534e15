"""The README runs as written, for a new user who follows it from the top.

- Every ```python block of README.md runs, in order, in one namespace (a reader's session), with
  pytest-examples: a block that raises fails the test, and every `#>` line must be what the
  `print` above it prints. The README provides its own model: its second block starts the
  scripted server (`healjson.testing.ScriptedServer`, 127.0.0.1) and points the openai SDK at it
  through `OPENAI_BASE_URL` / `OPENAI_API_KEY`, so nothing reaches the internet and no key is
  needed. (The pages of `docs/` run the same way: `test_docs.py`.)
- The README is the short path: at most 300 lines, a guide for every page of `docs/`, and every
  guide it links exists.
- `python -m healjson.testing`, which docs/contracts.md documents, serves a reply file to the
  real openai SDK.
- `HEALJSON_HYPOTHESIS_PROFILE` is the one hypothesis profile variable, for users and for this
  suite.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import tomllib
import types
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import settings
from pytest_examples import CodeExample, EvalExample, find_examples
from pytest_examples import run_code as examples_run_code

import _healjson_pytestplugin as plugin
import healjson.testing.__main__ as testing_main
from page_blocks import run_block
from paths import ROOT

# the README run, the `python -m healjson.testing` process and the profile probes: the slow lane
pytestmark = pytest.mark.slow

README = ROOT / "README.md"
CONFTEST = ROOT / "tests" / "conftest.py"
EXAMPLES: list[CodeExample] = list(find_examples(README))

# the README's quick start scripts one (broken answer, repaired answer) pair: its one model call
# is healed in two
MODEL_CALLS_IN_THE_STORY = 2
README_LINES_AT_MOST = 300
DOCS = ROOT / "docs"


class _FramesOnlyInspect(types.ModuleType):
    """`inspect` for pytest-examples' print hook, whose `stack()` reads the frames alone.

    The hook calls `inspect.stack()` on every `print` to find the line it came from; the real
    one also looks up each frame's module and source lines, which walks `sys.modules` (some
    thousands of modules once the SDKs are imported) for each frame: most of the README run's
    time. The hook uses only the frame and its file name, which this gives as they are."""

    def __init__(self) -> None:
        super().__init__("inspect")

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)

    @staticmethod
    def stack(context: int = 1) -> list[inspect.FrameInfo]:
        frames: list[inspect.FrameInfo] = []
        frame = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            frames.append(
                inspect.FrameInfo(frame, code.co_filename, frame.f_lineno, code.co_name, None, None)
            )
            frame = frame.f_back
        return frames


def test_frames_only_inspect_finds_the_frames_the_real_stack_finds() -> None:
    """The fast `stack()` lists the same frames, files and lines as `inspect.stack()`."""

    def where() -> tuple[list[inspect.FrameInfo], list[inspect.FrameInfo]]:
        return _FramesOnlyInspect.stack(), inspect.stack()

    fast, real = where()
    assert [(f.frame, f.filename, f.lineno, f.function) for f in real] == [
        (f.frame, f.filename, f.lineno, f.function) for f in fast
    ]
    assert inspect.iscoroutinefunction is _FramesOnlyInspect().iscoroutinefunction


def test_every_python_block_is_collected() -> None:
    """No ```python block escapes the run: pytest-examples finds each, whole (a fence inside a
    string would end a block early, so the README's code never contains one)."""
    text = README.read_text(encoding="utf-8")
    assert text.count("```python\n") == len(EXAMPLES) >= 4
    for example in EXAMPLES:
        assert "python" == example.prefix
        compile(example.source, f"README.md:{example.start_line}", "exec")  # whole statements
        closing = text.splitlines()[example.end_line - 1]
        assert "```" == closing, f"block at line {example.start_line} ends at {closing!r}"


def test_readme_runs_from_the_top(
    eval_example: EvalExample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each block runs after the ones above it, as printed; `#>` lines are checked output."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)  # and whatever the README sets is undone after
    # pytest-examples runs each block as `__main__`: pytest's own is put back afterwards
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    monkeypatch.setattr(examples_run_code, "inspect", _FramesOnlyInspect())
    eval_example.set_config(line_length=100)
    namespace: dict[str, Any] = {}
    try:
        for example in EXAMPLES:
            namespace = run_block(eval_example, example, namespace)
        server = namespace["server"]
        assert server.base_url == os.environ["OPENAI_BASE_URL"]
        assert server.base_url.startswith("http://127.0.0.1:")
        assert [r.path for r in server.requests] == ["/v1/chat/completions"] * (
            MODEL_CALLS_IN_THE_STORY
        )
    finally:
        _close_clients(namespace)
        if "server" in namespace:
            namespace["server"].stop()


def _close_clients(namespace: dict[str, Any]) -> None:
    """Close the SDK clients the reader's session still holds at its end (a wrapped client, and
    instructor's, through the client inside them)."""
    for held in list(namespace.values()):
        sdk = held
        for _ in range(3):  # healjson.wrap(...) -> instructor -> the SDK's client
            if isinstance(sdk, openai.OpenAI | openai.AsyncOpenAI):
                break
            sdk = getattr(sdk, "wrapped", None) or getattr(sdk, "client", None)
        if isinstance(sdk, openai.OpenAI):
            sdk.close()
        elif isinstance(sdk, openai.AsyncOpenAI):
            asyncio.run(sdk.close())


def test_the_readme_is_short_and_links_every_guide() -> None:
    """The README stays a short path (at most 300 lines) with a table row for every page of
    `docs/`, and every `docs/` page it links exists, save the one a sibling change adds."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_LINES_AT_MOST
    linked = set(re.findall(r"\(docs/([\w.-]+\.md)[)#]", text))
    pages = {page.name for page in DOCS.glob("*.md")}
    assert pages <= linked, f"pages without a guide row: {sorted(pages - linked)}"
    assert linked - pages <= {"openai_parse.md"}, sorted(linked - pages)


def test_the_supported_sdk_ranges_are_pyprojects() -> None:
    """Each row of the README's "Supported SDKs" table gives the range pyproject.toml declares
    for that package (an extra's requirement, or the base dependency, or `[dev]`'s)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared: dict[str, set[str]] = {}
    for requirement in [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra),
    ]:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+(?:\[[\w,]+\])?)(.*)", requirement.strip())
        assert match, requirement
        declared.setdefault(match.group(1), set()).add(match.group(2).strip())
    section = README.read_text(encoding="utf-8").split("## Supported SDKs", 1)[1].split("\n## ")[0]
    rows = re.findall(r"^\| `([^`]+)` \| [^|]+ \| `([^`]+)` \|$", section, re.MULTILINE)
    assert len(rows) >= 10
    for package, supported in rows:
        assert supported in declared.get(package, set()), (package, supported)


def test_a_failing_block_fails_the_run(eval_example: EvalExample, tmp_path: Path) -> None:
    """The checks bite: a block that raises, and a `#>` line that is not what prints, fail."""
    broken = tmp_path / "broken.md"
    broken.write_text(
        "```python\nprint(undefined_name)\n```\n\n```python\nprint(1 + 1)\n#> 3\n```\n",
        encoding="utf-8",
    )
    raising, misprinted = find_examples(broken)
    with pytest.raises(NameError, match="undefined_name"):
        eval_example.run_print_check(raising)
    with pytest.raises(pytest.fail.Exception, match="Print output changed"):
        eval_example.run_print_check(misprinted)


# ---------------------------------------------------------------------------------------------
# `python -m healjson.testing`: the scripted server as a process
# ---------------------------------------------------------------------------------------------

REPLY = '{"urgency": 2, "category": "other", "summary": "Which sizes does the jacket come in?"}'


def _ready_line(process: subprocess.Popen[str], timeout_s: float = 20.0) -> str:
    """The first line the process prints, waiting at most `timeout_s`."""
    assert process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], timeout_s)
    assert readable, "no READY line in time"
    return process.stdout.readline().strip()


def test_python_m_healjson_testing_serves_the_openai_sdk(tmp_path: Path) -> None:
    """The module prints `READY <base_url>` (127.0.0.1), answers the real openai SDK with the
    scripted reply, and stops cleanly on SIGTERM."""
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([REPLY]), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "healjson.testing", "--replies", str(replies), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        line = _ready_line(process)
        match = re.fullmatch(r"READY (http://127\.0\.0\.1:\d+/v1)", line)
        assert match, line
        with openai.OpenAI(base_url=match.group(1), api_key="test", max_retries=0) as client:
            completion = client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": "Sizes?"}]
            )
        assert REPLY == completion.choices[0].message.content
        assert "stop" == completion.choices[0].finish_reason
        process.send_signal(signal.SIGTERM)
        assert 0 == process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_python_m_healjson_testing_refuses_a_bad_reply_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`__main__` is `_serve.main`: a reply file that is not a list stops it with the reason."""
    replies = tmp_path / "replies.json"
    replies.write_text('{"content": "not in a list"}', encoding="utf-8")
    assert testing_main.main.__module__ == "healjson.testing._serve"
    with pytest.raises(SystemExit, match="expected a JSON list"):
        testing_main.main(["--replies", str(replies)])


# ---------------------------------------------------------------------------------------------
# One hypothesis profile variable
# ---------------------------------------------------------------------------------------------

PROFILE_PROBE = textwrap.dedent(
    """
    from hypothesis import settings


    def test_probe():
        print("PROFILE", settings.get_current_profile_name(), settings.default.max_examples)
    """
)


def _profile_seen(tmp_path: Path, env: dict[str, str]) -> list[str]:
    """The profile name and example count a pytest run with the suite's conftest sees."""
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "test_probe.py").write_text(PROFILE_PROBE, encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if "HYPOTHESIS_PROFILE" not in k}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_probe.py"],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert 0 == result.returncode, result.stdout + result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("PROFILE ")]
    return line.split()[1:]


def test_one_profile_variable_is_documented_and_read() -> None:
    """The README sets one profile variable, the plugin's; the plugin's source spells only that
    one as a string, and the suite's conftest reads the plugin's constant instead of a name of
    its own."""
    assert "HEALJSON_HYPOTHESIS_PROFILE" == plugin.PROFILE_ENV
    documented = re.findall(r"\b([A-Z_]*HYPOTHESIS_PROFILE)=", README.read_text(encoding="utf-8"))
    assert len(documented) >= 2
    assert {plugin.PROFILE_ENV} == set(documented)
    plugin_source = (ROOT / "src" / "_healjson_pytestplugin.py").read_text(encoding="utf-8")
    assert {plugin.PROFILE_ENV} == set(
        re.findall(r"[\"']([A-Z_]*HYPOTHESIS[A-Z_]*)[\"']", plugin_source)
    )
    conftest = CONFTEST.read_text(encoding="utf-8")
    assert [] == re.findall(r"[\"']([A-Z_]*HYPOTHESIS[A-Z_]*)[\"']", conftest)
    assert "from _healjson_pytestplugin import PROFILE_ENV" in conftest


def test_the_profile_variable_selects_the_profile_for_the_suite(tmp_path: Path) -> None:
    """`HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough` runs the suite's properties with 1000
    examples (the plugin loads it, after the conftest ran)."""
    assert ["healjson-thorough", "1000"] == _profile_seen(
        tmp_path, {plugin.PROFILE_ENV: "healjson-thorough"}
    )


def test_the_old_variable_is_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `HEALJSON_HYPOTHESIS_PROFILE` the conftest loads the suite's `ci` profile (30
    examples), whatever `HYPOTHESIS_PROFILE` says; with it, the conftest leaves the choice to
    the plugin."""
    previous = settings.get_current_profile_name()
    code = compile(CONFTEST.read_text(encoding="utf-8"), str(CONFTEST), "exec")
    try:
        monkeypatch.delenv(plugin.PROFILE_ENV, raising=False)
        monkeypatch.setenv("HYPOTHESIS_PROFILE", "thorough")
        settings.load_profile("default")
        exec(code, {"__name__": "conftest_probe"})
        assert ("ci", 30) == (settings.get_current_profile_name(), settings.default.max_examples)
        monkeypatch.setenv(plugin.PROFILE_ENV, "healjson-thorough")
        settings.load_profile("default")
        exec(code, {"__name__": "conftest_probe"})
        assert "default" == settings.get_current_profile_name()
    finally:
        settings.load_profile(previous)
