"""JSON text as strict readers read it.

RFC 8259 has no `NaN` or `Infinity`: Python's `json` writes them by default, and a strict
parser (a browser's `JSON.parse`, most log pipelines, `jq`) refuses the whole document. Every
JSON text healjson writes for others to read (the JSON trace, `healjson heal --json`, batch
output rows, Ray's outcome column) writes a non-finite float as pydantic does with
`ser_json_inf_nan="strings"`: `"NaN"`, `"Infinity"`, `"-Infinity"`, which pydantic reads back
into a float field (`outcome_from_dict` included). A value typed `Any` reads them back as
strings.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["strict_dumps"]


def strict_dumps(data: Any, **options: Any) -> str:
    """`json.dumps(data, **options)` as strict JSON (see the module docstring); as cheap as
    `json.dumps` when no float is non-finite (the common case: written once, no walk)."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError:  # a non-finite float (a circular structure raises again below)
        return json.dumps(_finite(data), allow_nan=False, **options)


def _finite(data: Any) -> Any:
    """`data` with every non-finite float written as its name."""
    if isinstance(data, float):
        if math.isfinite(data):
            return data
        return "NaN" if math.isnan(data) else ("Infinity" if data > 0 else "-Infinity")
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(value) for value in data]
    return data
