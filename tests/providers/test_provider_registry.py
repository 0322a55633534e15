"""The providers' registry: one module and one line per provider, imported when first needed.

`healjson._providers.PROVIDERS` is what `wrap`, the Batch API runner, the command line and the
instructor adapter read; a provider's module is imported when its client is wrapped or when a
reply or chunk of its SDK is first read, and what is per provider stays in `_providers/`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from healjson._providers import PROVIDERS, Provider, resolve
from healjson._providers.provider import ToolDialect
from paths import ROOT

PACKAGE = ROOT / "src" / "healjson"
# the most files outside `_providers/` and `testing/` that may name each provider
NAMED_AT_MOST = {"anthropic": 2, "gemini": 2, "ollama": 2}


def files_naming(name: str) -> list[str]:
    """The package's Python files outside `_providers/` and `testing/` whose text names `name`
    (any case)."""
    word = re.compile(re.escape(name), re.IGNORECASE)
    return sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] not in ("_providers", "testing")
        and word.search(path.read_text(encoding="utf-8"))
    )


@pytest.mark.parametrize("name", sorted(NAMED_AT_MOST))
def test_few_files_outside_the_providers_name_a_provider(name: str) -> None:
    """What is per provider lives in its module: at most two files elsewhere name it (the
    typed face, which names its SDK's types, and a public module's documentation)."""
    found = files_naming(name)
    assert len(found) <= NAMED_AT_MOST[name], found


def test_the_count_reads_the_files_text(tmp_path: Path) -> None:
    """The count sees a name in any case, in code and prose alike (the walk finds files)."""
    assert "_wrap.py" in files_naming("def wrap")
    assert [] == files_naming("no file says this: 7f3a")


def test_every_line_names_a_module_exporting_one_provider() -> None:
    """Each registry line's module exports a `Provider` whose formats read replies, and the
    names are unique (the command line's `--provider` and the Batch API ledger use them)."""
    providers = list(PROVIDERS)
    assert len(PROVIDERS.lines) == len(providers)
    assert all(isinstance(provider, Provider) for provider in providers)
    assert len({p.name for p in providers}) == len(providers)
    assert all(provider.formats for provider in providers)
    assert PROVIDERS.default is PROVIDERS.named("openai")


def test_the_lazy_references_resolve() -> None:
    """Every `module:attribute` a provider names (adapter, instructor streams, tool dialect,
    Batch API client) resolves, and a tool dialect reads calls with its collector."""
    for provider in PROVIDERS:
        for reference in (provider.adapter, provider.streams, provider.tools):
            if reference is not None:
                assert callable(resolve(reference)) or isinstance(
                    resolve(reference), ToolDialect
                ), reference
        if provider.tools is not None:
            dialect = resolve(provider.tools)
            assert callable(dialect.collector().feed)
        if provider.batch_api is not None:
            assert callable(resolve(provider.batch_api.client))
            assert all(
                PROVIDERS.named(name).batch for name in provider.batch_api.endpoints.values()
            )


def _fresh(code: str) -> list[str]:
    """The `healjson._providers` modules a fresh interpreter holds after `code`."""
    script = (
        "import json, sys, healjson\n"
        f"{code}\n"
        "print(json.dumps(sorted(m.split('.')[2] for m in sys.modules"
        " if m.count('.') == 2 and m.startswith('healjson._providers.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert 0 == done.returncode, done.stderr
    loaded: list[str] = json.loads(done.stdout)
    return [name for name in loaded if name in PROVIDERS.modules()]


def test_import_healjson_loads_the_default_provider_only() -> None:
    """`import healjson` imports the default provider's module, no other."""
    assert ["openai_chat"] == _fresh("")


def test_wrapping_a_client_imports_its_providers_module_only() -> None:
    """`wrap(ollama.Client())` imports `ollama_chat` (its registry line names the module)."""
    loaded = _fresh("import ollama; healjson.wrap(ollama.Client(host='http://127.0.0.1:9'))")
    assert ["ollama_chat", "openai_chat"] == loaded


def test_a_reply_of_an_sdk_imports_its_provider_on_first_read() -> None:
    """A reply object of a provider not loaded yet is read all the same: its class's module
    names the provider, which is imported and registered at its rank."""
    code = (
        "import ollama; from healjson._core.wire.reply import to_reply\n"
        "r = ollama.ChatResponse(model='m', done=True, done_reason='stop',"
        " message=ollama.Message(role='assistant', content='{}'))\n"
        "assert '{}' == to_reply(r).content"
    )
    assert ["ollama_chat", "openai_chat"] == _fresh(code)


def test_a_dict_reply_imports_its_provider_by_its_keys() -> None:
    """A reply as a dict is recognised by its registry line's keys: an Anthropic message
    dict (which has `content`, as a chat message does) is read by Anthropic's format, not by
    the chat message catch-all."""
    code = (
        "from healjson._core.wire.reply import to_reply\n"
        "r = to_reply({'type': 'message', 'stop_reason': 'max_tokens', 'model': 'm',"
        " 'content': [{'type': 'text', 'text': '{\"a\":'}]})\n"
        "assert 'length' == r.finish_reason, r"
    )
    assert "anthropic_messages" in _fresh(code)


def test_an_sdk_error_is_the_providers_before_its_module_is_loaded() -> None:
    """A provider's exceptions count as the provider's (a run degrades) from `import
    healjson` on: its error packages are in its line, not in its module."""
    code = (
        "from healjson._core.wire.formats import error_packages\n"
        "assert {'anthropic', 'google', 'ollama'} <= error_packages()"
    )
    assert ["openai_chat"] == _fresh(code)


def test_the_command_line_offers_the_batch_apis_the_registry_has() -> None:
    """`healjson batch --provider` lists the providers with a Batch API, and each one's
    environment in its help."""
    from healjson._cli.options import provider_option

    option = provider_option()
    names = [p.name for p in PROVIDERS if p.batch_api is not None]
    assert f"[{'|'.join(names)}]" == option.metavar
    assert "ANTHROPIC_API_KEY" in option.help
    with pytest.raises(Exception, match="not one of"):
        option.parser("nobody")
