"""The typed face of `healjson.wrap` (`_typing/face.pyi`) is generated from one table and fresh.

The table is each provider's typing row (`Provider.typing`) plus the generator's own rows; CI
runs this test, so a row changed without regenerating the stub fails here, with the command to
run in the message.
"""

from __future__ import annotations

import subprocess
import sys

from healjson._providers import PROVIDERS, resolve
from healjson._typing.generate import FACE, face


def test_the_generated_face_is_fresh() -> None:
    """Regenerating the face gives the text in the repository (run `python -m
    healjson._typing.generate` after changing a typing row)."""
    assert FACE.read_text(encoding="utf-8") == face()


def test_every_typing_row_gets_its_protocols_and_wrap_overloads() -> None:
    """Each provider with a typing row has a sync protocol (and an async one when its SDK has
    an async client class), and `wrap` an overload for each client type."""
    text = face()
    for provider in PROVIDERS:
        if provider.typing is None:
            continue
        row = resolve(provider.typing)
        assert f"class Healing{row['name']}(Protocol):" in text
        for side, prefix in (("sync", "Healing"), ("async_", "AsyncHealing")):
            if side in row:
                assert f"    client: {row[side]},\n" in text
                assert f") -> {prefix}{row['name']}: ..." in text


def test_the_check_command_says_whether_the_file_is_fresh() -> None:
    """`python -m healjson._typing.generate --check` exits 0 on a fresh face."""
    done = subprocess.run(
        [sys.executable, "-m", "healjson._typing.generate", "--check"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert (0, "") == (done.returncode, done.stderr)
