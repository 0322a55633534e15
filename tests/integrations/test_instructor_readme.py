"""The README's instructor example runs as written, in the floor lane (the default lane's README
run leaves it out: it has no instructor). Its story up to there runs first, as a reader's
session: the ticket model and rule, the scripted server, then the instructor block, whose
`#>` output is checked."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from lanes import INSTRUCTOR_ONLY

pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

from pytest_examples import CodeExample, EvalExample, find_examples

from paths import ROOT

EXAMPLES: list[CodeExample] = list(find_examples(ROOT / "README.md"))


def test_the_readme_instructor_example_runs_as_written(
    eval_example: EvalExample, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model and rule block, the scripted server block, then the instructor block: it
    prints what the README says, and takes the scripted pair (two model calls)."""
    (instructor_block,) = [e for e in EXAMPLES if "import instructor\n" in e.source]
    story = [e for e in EXAMPLES if e.start_line < instructor_block.start_line]
    (model_block,) = [e for e in story if "class Ticket(BaseModel)" in e.source]
    (server_block,) = [e for e in story if "ScriptedServer(" in e.source]
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)  # and what the README sets is undone after
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    eval_example.set_config(line_length=100)
    namespace: dict[str, Any] = {}
    try:
        for example in (model_block, server_block, instructor_block):
            namespace = eval_example.run_print_check(example, module_globals=namespace)
        server = namespace["server"]
        assert server.base_url == os.environ["OPENAI_BASE_URL"]
        assert 2 == len([r for r in server.requests if r.path.endswith("/chat/completions")])
    finally:
        client = namespace.get("client")
        if client is not None:
            client.wrapped.client.close()  # healjson.wrap -> instructor -> the openai client
        if "server" in namespace:
            namespace["server"].stop()
