"""The optional fast path of JSON Schema targets: `jsonschema-rs` (the `fast` extra) decides
whether a value is valid; the `jsonschema` validator still makes every error and the lax reading.

Both mean the same thing, because the compiled validator is only asked where they agree:

- the draft is the one `jsonschema` chose (by `$schema`, Draft 2020-12 without one), passed as
  the validator class (never detected again); drafts 3 and 4 keep `jsonschema` alone (their
  `integer` refuses `1.0` there, accepts it in `jsonschema-rs`);
- `format` is an annotation (`validate_formats=False`), nothing is ever fetched (`offline`);
- `pattern` and `multipleOf` run `jsonschema`'s own keyword functions (Python's `re.search`,
  its float arithmetic: Rust's regex and decimal rules differ, e.g. `$` before a final newline,
  `0.3` as a multiple of `0.1`);
- a schema with a keyword whose meaning depends on the regex engine or on an evaluation the two
  implement differently (`patternProperties`, `unevaluated*`, `$id` and the dynamic
  references) keeps `jsonschema` alone, as does a schema `jsonschema-rs` cannot compile;
- only a "valid" answer is taken: "invalid" (or any exception) asks `jsonschema`, whose answer
  is the one the errors describe.

`jsonschema`'s `check_schema` stays the one judge of whether a schema is valid: it runs first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = ["fast_is_valid"]

_DRAFTS: Final = {
    "Draft6Validator": "Draft6Validator",
    "Draft7Validator": "Draft7Validator",
    "Draft201909Validator": "Draft201909Validator",
    "Draft202012Validator": "Draft202012Validator",
}
"""`jsonschema`'s validator class name -> `jsonschema-rs`'s (same name, same draft)."""
_JSONSCHEMA_ONLY: Final = frozenset(
    {"patternProperties", "unevaluatedProperties", "unevaluatedItems", "$id", "id"}
    | {"$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor"}
    | {"$vocabulary", "dependencies"}
)
"""Keys that keep a schema on `jsonschema` alone (looked for anywhere in the schema: a property
of that name costs the fast path too, never a wrong answer)."""
_DELEGATED: Final = ("pattern", "multipleOf")


def fast_is_valid(schema: dict[str, Any], checker: Any) -> Callable[[Any], bool] | None:
    """`jsonschema-rs`'s `is_valid` for `schema`, meaning what `checker` (the checked
    `jsonschema` validator) means, or None: not installed, a draft or keyword it is not trusted
    with, or a schema it cannot compile."""
    try:
        import jsonschema_rs
    except ImportError:
        return None
    name = _DRAFTS.get(type(checker).__name__)
    if name is None or any(key in _JSONSCHEMA_ONLY for key in _keys(schema)):
        return None
    keywords = {keyword: _delegate(checker, keyword) for keyword in _DELEGATED}
    try:
        validator = getattr(jsonschema_rs, name)(
            schema, validate_formats=False, offline=True, keywords=keywords
        )
    except Exception:  # a schema `jsonschema` accepts and it cannot compile: `jsonschema` alone
        return None
    is_valid: Callable[[Any], bool] = validator.is_valid
    return is_valid


def _delegate(checker: Any, keyword: str) -> type:
    """A `jsonschema-rs` keyword that runs `jsonschema`'s own function for `keyword`."""
    function = type(checker).VALIDATORS[keyword]

    class Delegated:
        def __init__(self, parent: dict[str, Any], value: Any, _path: Any) -> None:
            self.parent = parent
            self.value = value

        def validate(self, instance: Any) -> None:
            errors = function(checker, self.value, instance, self.parent)
            if errors is not None and next(iter(errors), None) is not None:
                raise ValueError(f"{keyword} fails")

    Delegated.__name__ = f"Delegated_{keyword}"
    return Delegated


def _keys(node: Any) -> Iterator[str]:
    """Every key of every object in the schema (iteratively: no depth limit)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            yield from current
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
