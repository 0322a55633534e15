"""A value as the JSON data `changed_fields` compares (`answer_data`): every field, those the
value left at their default marked `Default` (`outcome.changes.changed_paths` reads them)."""

from __future__ import annotations

from typing import Any

from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target

__all__ = ["Default", "answer_data", "with_defaults"]


def answer_data(target: Target[Any], value: Any) -> Any:
    """`value` (of the target's kind) as JSON data, fields under their wire names: every field,
    each one it did not set marked `Default` (`with_defaults`), so that a field left at
    its default is compared too. The form `changed_fields` compares (NOTHING: a serializer
    that raises)."""
    dump = target.adapter.dump_python
    try:
        set_only = dump(value, mode="json", by_alias=True, exclude_unset=True)
        full = dump(value, mode="json", by_alias=True)
    except Exception:  # a serializer of the caller's that fails on this value
        return NOTHING
    return with_defaults(set_only, full)


class Default:
    """A field's value in a dump that the value did not set: it holds its default."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Default) and bool(other.value == self.value)

    def __hash__(self) -> int:  # pragma: no cover - never a key
        return 0

    def __repr__(self) -> str:
        return f"Default({self.value!r})"


def with_defaults(set_only: Any, full: Any) -> Any:
    """A value's dump with every field (`full`), where each field its dump of the fields it set
    (`set_only`) leaves out is marked `Default`: at any depth, in lists too (linear)."""
    if isinstance(set_only, dict) and isinstance(full, dict):
        merged = {
            key: with_defaults(set_only[key], value) if key in set_only else Default(value)
            for key, value in full.items()
        }
        for key, value in set_only.items():  # a dump that differs with `exclude_unset`
            merged.setdefault(key, value)
        return merged
    if isinstance(set_only, list) and isinstance(full, list) and len(set_only) == len(full):
        return [with_defaults(old, new) for old, new in zip(set_only, full, strict=True)]
    return set_only
