"""Did the provider enforce the schema the request asked it to enforce?

An adapter whose request asks the endpoint to constrain decoding to a JSON schema (a strict
response format, a server's constrained decoding, a strict tool) hands the run an
`Enforcement`: the schema as sent (in the provider's dialect: what the dialect cannot say is not
the endpoint's to enforce) and the client's once-only warning. The engine judges the first
reply of the run: an answer that is not JSON, or JSON the sent schema rejects, was not enforced
(a cut by the token limit, a refusal, a filter or an early-closed stream are not judged). That
attempt then carries `Flag.SCHEMA_NOT_ENFORCED` (and so does the outcome's `flags` when its
value is that attempt's answer, healed locally), and the client warns once
(`healjson.schema_not_enforced` at WARNING): its endpoint accepts the request but does not
enforce it, so a weaker `json_mode` would say what it really does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from healjson._core.wire.nesting import nests_deeper

__all__ = ["Enforcement", "answer_shape", "conforms"]


class Enforcement(Protocol):
    """What a run needs to know of its client's request (see the module)."""

    def schema(self, params: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The JSON schema the run's first request (the caller's `params`) asked the endpoint
        to enforce, as sent; None when it asked none (or the caller chose its own format)."""
        ...

    def first_breach(self) -> bool:
        """True the first time the client's endpoint is caught not enforcing (warn then)."""
        ...


def answer_shape(
    enforcement: Enforcement | None, params: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """How an answer the endpoint enforced begins, and where its list is: `("{", key)` for an
    object schema whose one required property `key` is an array (an envelope, `{"value":
    [...]}`), `("{", None)` for another object schema, `("[", None)` for an array's, `(None,
    None)` when no schema is enforced or its root is neither. A streamed answer that begins
    otherwise was not enforced, whatever the request asked."""
    try:
        schema = None if enforcement is None else enforcement.schema(params)
    except Exception:  # a schema that cannot be made: nothing to say of the answer
        return None, None
    if not isinstance(schema, Mapping):
        return None, None
    kind = schema.get("type")
    if kind == "array":
        return "[", None
    if kind != "object" and not (kind is None and "properties" in schema):
        return None, None
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and len(properties) == 1:
        ((key, inner),) = properties.items()
        required = schema.get("required")
        if isinstance(inner, Mapping) and inner.get("type") == "array" and required == [key]:
            return "{", key
    return "{", None


def conforms(text: str | None, schema: Mapping[str, Any]) -> bool:
    """True when `text` is one JSON value that `schema` accepts (an answer nested past the
    reader's bound cannot be judged: nothing is said of it)."""
    if text is None:
        return False
    if nests_deeper(text):
        return True
    try:
        data = json.loads(text)
    except ValueError:
        return False
    except RecursionError:  # deep, and called deep in a stack: nothing can be said
        return True
    from jsonschema import validators  # loaded when judged

    try:
        validator = validators.validator_for(schema)(schema)
        return bool(validator.is_valid(data))
    except Exception:  # a schema the validator cannot use: nothing can be said
        return True
