"""A DSPy answer read field by field, before healjson judges it as one JSON object.

DSPy's chat format puts each output field under a header line (`[[ ## answer ## ]]`); a JSON
answer (the JSON adapter's, or a repair's) is one object. `read_fields` turns the first kind
into that object: each section under the field it names (a header in another case or with
other separators is the one field it can mean; the header is kept as written, so the core's
key alignment names it), a text field's section as its text, a typed field's section read by
L1 against the field's type (a code fence, prose around, a trailing comma, a JSON string,
keys in another case; `healjson.parse`). A section L1 cannot read stays as its text: the
field's validation then says why. A field no header names is left out (never invented).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from healjson import parse

__all__ = ["HEADER", "read_fields"]

HEADER: Final = re.compile(r"\[\[ ?## ?(\w+) ?## ?\]\]")
"""A field's header line (matched at the start of a stripped line: linear, no backtracking)."""
_DONE: Final = "completed"  # the chat format's closing marker


def _key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def read_fields(text: str, fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """The answer as one object of output fields (`fields`: name -> annotation), or None when
    it has no field header (then the text itself is the answer L1 reads)."""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        found = HEADER.match(line.strip())
        if found is None:
            if sections:
                sections[-1][1].append(line)
            continue
        rest = line.strip()[found.end() :].strip()
        sections.append((found.group(1), [rest] if rest else []))
    if not sections:
        return None
    by_key: dict[str, list[str]] = {}
    for name in fields:
        by_key.setdefault(_key(name), []).append(name)
    out: dict[str, Any] = {}
    for header, lines in sections:
        field = header if header in fields else _only(by_key.get(_key(header), ()))
        if field is None or header in out or header == _DONE:
            continue
        body = "\n".join(lines).strip()
        out[header] = _value(body, fields[field])
    return out


def _only(names: Any) -> str | None:
    return names[0] if len(names) == 1 else None


def _value(body: str, annotation: Any) -> Any:
    if annotation is str:
        return body
    found = parse(body, annotation)
    return body if found.error is not None else found.value
