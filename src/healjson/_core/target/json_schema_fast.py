"""The optional fast path of JSON Schema targets: `jsonschema-rs` (the `fast` extra) decides
whether a value is valid; the `jsonschema` validator still makes every error and the lax reading.

Both mean the same thing, because the compiled validator is only asked where they agree:

- the draft is the one `jsonschema` chose (by `$schema`, Draft 2020-12 without one), passed as
  the validator class (never detected again); drafts 3 and 4 keep `jsonschema` alone (their
  `integer` refuses `1.0` there, accepts it in `jsonschema-rs`);
- `format` is an annotation (`validate_formats=False`), nothing is ever fetched (`offline`);
- `pattern` and `multipleOf` run the keyword functions `jsonschema` runs (the bounded search of
  `patterns`, Python `re`'s meaning; its float arithmetic: Rust's regex and decimal rules
  differ, e.g. `$` before a final newline, `0.3` as a multiple of `0.1`); a pattern the budget
  cut short anywhere in the value (under `not` too, which would call the value valid) makes the
  answer "invalid", and `jsonschema` reports the timeout;
- a schema with a keyword whose meaning depends on the regex engine or on an evaluation the two
  implement differently (`patternProperties`, `unevaluated*`, `$id` and the dynamic
  references) keeps `jsonschema` alone, as does a schema `jsonschema-rs` cannot compile;
- a `$ref` that leads back to where it was without going into the value (`{"$ref": "#"}`:
  `jsonschema` cannot check it, `jsonschema-rs` calls it valid) keeps `jsonschema` alone;
- only a "valid" answer is taken: "invalid" (or any exception) asks `jsonschema`, whose answer
  is the one the errors describe.

`jsonschema`'s `check_schema` stays the one judge of whether a schema is valid: it runs first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from .patterns import cut_short_count, search
from .schema_refs import pointer

__all__ = ["fast_is_valid"]

_DRAFTS: Final = {
    "Draft6Validator": "Draft6Validator",
    "Draft7Validator": "Draft7Validator",
    "Draft201909Validator": "Draft201909Validator",
    "Draft202012Validator": "Draft202012Validator",
}
"""`jsonschema`'s validator class name -> `jsonschema-rs`'s (same name, same draft)."""
_JSONSCHEMA_ONLY: Final = frozenset(
    {"patternProperties", "unevaluatedProperties", "unevaluatedItems", "$id"}
    | {"$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "$recursiveAnchor"}
    | {"$vocabulary", "dependencies"}
)
"""Keywords that keep a schema on `jsonschema` alone, wherever a subschema has them."""
_SCHEMA_MAPS: Final = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_LISTS: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMAS: Final = frozenset(
    {"items", "additionalItems", "additionalProperties", "not", "if", "then", "else"}
    | {"contains", "propertyNames"}
)
_LOCAL_REFS: Final = ("#/$defs/", "#/definitions/")
_IN_PLACE: Final = ("not", "if", "then", "else")
_IN_PLACE_LISTS: Final = ("allOf", "anyOf", "oneOf")
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
    if name is None or not _within_reach(schema) or _loops_in_place(schema):
        return None
    keywords = {keyword: _delegate(checker, keyword) for keyword in _DELEGATED}
    try:
        validator = getattr(jsonschema_rs, name)(
            schema, validate_formats=False, offline=True, keywords=keywords
        )
    except Exception:  # a schema `jsonschema` accepts and it cannot compile: `jsonschema` alone
        return None
    judge: Callable[[Any], bool] = validator.is_valid

    def is_valid(value: Any) -> bool:
        before = cut_short_count()
        return judge(value) and cut_short_count() == before

    return is_valid


def _delegate(checker: Any, keyword: str) -> type:
    """A `jsonschema-rs` keyword that runs `jsonschema`'s own function for `keyword`
    (`pattern`: the same bounded search on a string, `patterns.search`)."""
    function = type(checker).VALIDATORS[keyword]

    class Delegated:
        def __init__(self, parent: dict[str, Any], value: Any, _path: Any) -> None:
            self.parent = parent
            self.value = value
            self.pattern = value if keyword == "pattern" and isinstance(value, str) else None

        def validate(self, instance: Any) -> None:
            if self.pattern is not None:
                if isinstance(instance, str) and not search(self.pattern, instance):
                    raise ValueError("pattern fails (or was not checked within its budget)")
                return
            errors = function(checker, self.value, instance, self.parent)
            if errors is not None and next(iter(errors), None) is not None:
                raise ValueError(f"{keyword} fails")

    Delegated.__name__ = f"Delegated_{keyword}"
    return Delegated


def _within_reach(schema: Any) -> bool:
    """No subschema has a keyword of `_JSONSCHEMA_ONLY`, and every `$ref` names the root or a
    definition (so no subschema is reached that this walk did not look at). The walk follows
    the keywords that hold subschemas only: data (`enum`, `const`, `default`) and property
    names are not keywords. Iterative: no depth limit."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if key in _JSONSCHEMA_ONLY:
                return False
            if key == "$ref" and not (
                isinstance(value, str) and (value == "#" or value.startswith(_LOCAL_REFS))
            ):
                return False
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                stack.extend(value.values())
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                stack.extend(value)
            elif key in _SCHEMAS:
                stack.append(value)
    return True


def _loops_in_place(schema: dict[str, Any]) -> bool:
    """Whether some `$ref` leads back to a schema it is reached from without going into the
    value (through `allOf`, `anyOf`, `oneOf`, `not`, `if` / `then` / `else`, `$ref` only).
    The references are the root's or a definition's (`_within_reach`)."""
    edges: dict[int, list[Any]] = {}

    def targets(node: Any) -> list[Any]:
        if id(node) not in edges:
            found: list[Any] = []
            stack = [node]
            while stack:
                current = stack.pop()
                if not isinstance(current, dict):
                    continue
                ref = current.get("$ref")
                if isinstance(ref, str):
                    found.append(pointer(schema, ref))
                for key in _IN_PLACE_LISTS:
                    if isinstance(current.get(key), list):
                        stack.extend(current[key])
                stack.extend(current[key] for key in _IN_PLACE if key in current)
            edges[id(node)] = found
        return edges[id(node)]

    starts = [schema, *(pointer(schema, ref) for ref in _refs(schema))]
    done: set[int] = set()
    for start in starts:
        path: set[int] = set()
        stack: list[tuple[Any, bool]] = [(start, False)]
        while stack:  # depth first, iteratively: a node on the current path twice is a loop
            node, leaving = stack.pop()
            if leaving:
                path.discard(id(node))
                done.add(id(node))
                continue
            if id(node) in path:
                return True
            if id(node) in done:
                continue
            path.add(id(node))
            stack.append((node, True))
            stack.extend((target, False) for target in targets(node))
    return False


def _refs(schema: Any) -> list[str]:
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.append(ref)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found
