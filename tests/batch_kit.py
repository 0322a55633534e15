"""What the `healjson batch` CLI tests share: a response model file and an input of three rows
beside it, and the answer every row gets."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["GOOD", "MODEL", "batch_input"]

MODEL = "from pydantic import BaseModel\n\nclass M(BaseModel):\n    a: int\n"
"""The response model, `m.py:M`."""
GOOD = '{"a": 1}'
"""A valid answer for `M`."""


def batch_input(folder: Path) -> Path:
    """`m.py` (the model) and `in.jsonl` (rows `t1`..`t3`) written in `folder`; the input."""
    (folder / "m.py").write_text(MODEL, encoding="utf-8")
    path = folder / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"t{n}", "prompt": f"p{n}"}) + "\n" for n in (1, 2, 3))
    )
    return path
