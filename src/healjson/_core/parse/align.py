"""Schema alignment: fit recovered JSON data to the target type, flagging every change.

Strict validation first (nothing changed); then pydantic's lax coercions (`"5"` → `5`, `5.0` →
`5`: flag `coerced`); then healjson's own alignments, each a rewrite that changes how the model's
data is *shaped or spelled*, never what it says, and each applied only when exactly one reading
fits the schema:

- driven by pydantic's errors, at any depth: an enum or literal value in another case or with
  other separators (`enum_case`); a key in another case or with other separators than the one
  missing field it can mean (`Answer`, `answer_text` for `answerText`: `keys_aligned`); a JSON
  object or array that arrived encoded in a string (`double_encoded`); a number written as an
  English word, zero to one hundred, where a number is expected (`number_word`); a single value
  where a list is expected (`listed`; a string that holds a list separator is not wrapped, since
  splitting it is another reading); a one-item list where a single value is expected
  (`unlisted`);
- at the root: a one-key wrapper object around the answer (`unwrapped`), a one-item list
  (`unlisted`), a single value for a list target (`listed`), a bare list for an object target
  whose only required field is that list (`wrapped`), a JSON string that encodes the answer
  (`double_encoded`). When more than one of these validates with different values, none is
  applied.

The verdict stays with pydantic: a rewrite is kept only if the result validates.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails, from_json, to_json

from healjson._core.diagnostic import describe_exception
from healjson._core.flags import Flag
from healjson._core.schema_errors import data_loc
from healjson._core.sentinels import NOTHING
from healjson._core.target import Target

from .meter import charge

__all__ = ["Fit", "align", "answer_key", "number_word"]

_SEPARATORS: Final = re.compile(r"[\s\-_]+")
_LIST_SEPARATORS: Final = re.compile(r"[,;\n]")
_MAX_ROUNDS: Final = 4
_CONTAINER_ERRORS: Final = frozenset(
    {
        "model_type",
        "model_attributes_type",
        "dict_type",
        "dataclass_type",
        "typed_dict_type",
        "list_type",
        "tuple_type",
        "set_type",
        "frozen_set_type",
    }
)
_LIST_ERRORS: Final = frozenset({"list_type", "tuple_type", "set_type", "frozen_set_type"})
_NUMBER_ERRORS: Final = frozenset(
    {"int_parsing", "int_type", "float_parsing", "float_type", "decimal_parsing", "decimal_type"}
)
_UNITS: Final = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS: Final = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


@dataclass(frozen=True, slots=True)
class Fit:
    """Data fitted to a target: the validated instance (NOTHING when it did not validate), the
    data as rewritten, the flags of the rewrites, and pydantic's errors when it failed."""

    instance: Any
    data: Any
    flags: tuple[Flag, ...] = ()
    errors: tuple[ErrorDetails, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when the data validated."""
        return self.instance is not NOTHING


def align(target: Target[Any], data: Any, context: Any = None) -> Fit:
    """Validate `data` against `target`, trying the alignments above if plain validation
    fails; the best failure (fewest errors, on the data as the model wrote it when tied).
    `context`: pydantic's validation context, in every validation."""
    fitted = _fit(target, data, context)
    if fitted.ok:
        return fitted
    options: dict[bytes, Fit] = {}
    for reshaped, flag in _reshapes(target, data):
        trial = (
            align(target, reshaped, context)
            if flag is Flag.DOUBLE_ENCODED
            else _fit(target, reshaped, context)
        )
        if trial.ok:
            options.setdefault(answer_key(target, trial.instance), _with(trial, flag))
    if len(options) == 1:
        return next(iter(options.values()))
    return fitted


def answer_key(target: Target[Any], instance: Any) -> bytes:
    """What makes two validated answers the same answer: their JSON dumps are equal."""
    try:
        return to_json(target.adapter.dump_python(instance, mode="json"))
    except Exception:  # a serializer that fails: fall back on the instance's own repr
        return repr(instance).encode("utf-8", "replace")


def _with(fitted: Fit, flag: Flag) -> Fit:
    flags = tuple(dict.fromkeys((flag, *fitted.flags)))
    return Fit(fitted.instance, fitted.data, flags, fitted.errors)


def _fit(target: Target[Any], data: Any, context: Any = None) -> Fit:
    plain = _validate(target, data, context=context)
    if plain.ok:
        return plain
    best, current = plain, plain
    for _ in range(_MAX_ROUNDS):
        fixed, applied = _rewrite(target, current.data, current.errors)
        if not applied:
            break
        flags = tuple(dict.fromkeys((*current.flags, *applied)))
        trial = _validate(target, fixed, flags, context)
        if trial.ok:
            return trial
        if len(trial.errors) > len(current.errors):
            break
        current = trial
        if len(trial.errors) < len(best.errors):
            best = trial
    return best


def _validate(
    target: Target[Any], data: Any, flags: tuple[Flag, ...] = (), context: Any = None
) -> Fit:
    try:
        raw = to_json(data, inf_nan_mode="constants")
    except Exception as exc:  # e.g. a lone surrogate that no JSON encoder accepts
        return Fit(NOTHING, data, flags, (_crash(exc),))
    charge(len(raw))
    try:
        return Fit(target.adapter.validate_json(raw, strict=True, context=context), data, flags)
    except ValidationError:
        pass
    except Exception:  # a validator that raises something else is a schema failure, not a crash
        pass
    charge(len(raw))
    try:
        instance = target.adapter.validate_json(raw, context=context)
    except ValidationError as lax:
        return Fit(NOTHING, data, flags, tuple(lax.errors()))
    except Exception as exc:
        return Fit(NOTHING, data, flags, (_crash(exc),))
    return Fit(instance, data, tuple(dict.fromkeys((*flags, Flag.COERCED))))


def _crash(exc: Exception) -> ErrorDetails:
    return {
        "type": "value_error",
        "loc": (),
        "msg": f"Value error, the value could not be checked ({describe_exception(exc)})",
        "input": None,
    }


# -- error-driven rewrites ---------------------------------------------------------------------

Loc = tuple[str | int, ...]


def _rewrite(
    target: Target[Any], data: Any, errors: Sequence[ErrorDetails]
) -> tuple[Any, tuple[Flag, ...]]:
    """One round of rewrites, one per failing location where exactly one reading fits; two
    different rewrites proposed for one location cancel each other."""
    values: dict[Loc, tuple[Any, Flag]] = {}
    renames: dict[tuple[Loc, str], str] = {}
    conflicts: set[Loc] = set()
    for error in errors:
        kind = str(error.get("type", ""))
        received = error.get("input")
        loc = data_loc(tuple(error.get("loc", ())), data, kind == "missing")
        proposal: tuple[Any, Flag] | None = None
        if kind in ("enum", "literal_error") and isinstance(received, str):
            choice = _enum_choice(target, loc, received)
            if choice is not None:
                proposal = (choice, Flag.ENUM_CASE)
        elif not loc:
            continue  # the root is reshaped whole (`_reshapes`), not edited in place
        elif kind == "missing" and isinstance(loc[-1], str):
            parent = _get(data, loc[:-1])
            key = _renamed_key(target, loc[:-1], loc[-1], parent)
            if key is not None:
                slot = (loc[:-1], key)
                if renames.get(slot, loc[-1]) != loc[-1]:
                    conflicts.add(loc[:-1])
                renames[slot] = loc[-1]
            continue
        else:
            proposal = _value_rewrite(kind, received)
        if proposal is None:
            continue
        previous = values.get(loc)
        if previous is not None and previous[0] != proposal[0]:
            conflicts.add(loc)
        values[loc] = proposal
    values = {loc: v for loc, v in values.items() if loc not in conflicts}
    renames = {slot: name for slot, name in renames.items() if slot[0] not in conflicts}
    targets = list(renames.values())
    if len(targets) != len(set(targets)):  # two keys claim one field: neither is renamed
        renames = {}
    if not values and not renames:
        return data, ()
    fixed = copy.deepcopy(data)
    applied: list[Flag] = []
    for loc, (value, flag) in values.items():
        if not loc:
            fixed = value
            applied.append(flag)
        elif _set(fixed, loc, value):
            applied.append(flag)
    for (parent_loc, key), name in renames.items():
        parent = _get(fixed, parent_loc)
        if isinstance(parent, dict) and key in parent and name not in parent:
            parent[name] = parent.pop(key)
            applied.append(Flag.KEYS_ALIGNED)
    return fixed, tuple(dict.fromkeys(applied))


def _value_rewrite(kind: str, received: Any) -> tuple[Any, Flag] | None:
    if isinstance(received, str) and kind in _CONTAINER_ERRORS:
        try:
            inner = from_json(received.strip())
        except (ValueError, TypeError):  # TypeError: a lone surrogate cannot be encoded
            inner = NOTHING
        if isinstance(inner, dict | list):
            return inner, Flag.DOUBLE_ENCODED
    if isinstance(received, str) and kind in _NUMBER_ERRORS:
        number = number_word(received)
        if number is not None:
            return number, Flag.NUMBER_WORD
    if kind in _LIST_ERRORS and _listable(received):
        return [received], Flag.LISTED
    if (
        isinstance(received, list)
        and len(received) == 1
        and kind not in _LIST_ERRORS
        and (kind.endswith("_type") or kind.endswith("_parsing") or kind == "enum")
    ):
        return received[0], Flag.UNLISTED
    return None


def _listable(value: Any) -> bool:
    """A single value that can only mean a one-item list (not a list, not a string that holds
    a list separator)."""
    if isinstance(value, list) or value is None:
        return False
    return not (isinstance(value, str) and _LIST_SEPARATORS.search(value))


def _enum_choice(target: Target[Any], loc: Loc, received: str) -> str | None:
    wanted = _SEPARATORS.sub("_", received.strip().casefold())
    matches = {
        choice
        for choice in target.choices_at(loc)
        if isinstance(choice, str) and _SEPARATORS.sub("_", choice.casefold()) == wanted
    }
    return matches.pop() if len(matches) == 1 else None


def _renamed_key(target: Target[Any], parent_loc: Loc, missing: str, parent: Any) -> str | None:
    """The one key of `parent` that can only mean the missing field `missing`."""
    if not isinstance(parent, dict):
        return None
    names = target.properties_at(parent_loc) or frozenset()
    wanted = _key_form(missing)
    if sum(1 for name in names if _key_form(name) == wanted) != 1:
        return None  # two fields spell the same: no key can mean just one of them
    keys = [
        key
        for key in parent
        if isinstance(key, str) and key not in names and _key_form(key) == wanted
    ]
    return keys[0] if len(keys) == 1 else None


def _key_form(key: str) -> str:
    return _SEPARATORS.sub("", key).casefold()


def number_word(text: str) -> int | None:
    """The number an English number word names, zero to one hundred ("seven", "twenty-one",
    "one hundred"), or None."""
    words = _SEPARATORS.split(text.strip().casefold())
    if (words[:1] in (["a"], ["one"]) and words[1:] == ["hundred"]) or words == ["hundred"]:
        return 100
    if len(words) == 1:
        word = words[0]
        if word in _UNITS:
            return _UNITS.index(word)
        if word in _TENS:
            return 20 + 10 * _TENS.index(word)
        return None
    if len(words) == 2 and words[0] in _TENS and words[1] in _UNITS[1:10]:
        return 20 + 10 * _TENS.index(words[0]) + _UNITS.index(words[1])
    return None


# -- root reshapes -----------------------------------------------------------------------------


def _reshapes(target: Target[Any], data: Any) -> Iterator[tuple[Any, Flag]]:
    if isinstance(data, str):
        try:
            inner = from_json(data.strip())
        except (ValueError, TypeError):
            inner = NOTHING
        if isinstance(inner, dict | list):
            yield inner, Flag.DOUBLE_ENCODED
        return
    if isinstance(data, dict) and len(data) == 1:
        ((key, inner),) = data.items()
        names = target.field_names
        # a scalar inside {"value": ...} is the strict-mode envelope for non-object targets
        wrapped = isinstance(inner, dict | list) or not target.expects_object
        if wrapped and (names is None or key not in names):
            yield inner, Flag.UNWRAPPED
    if isinstance(data, list):
        if len(data) == 1 and "array" not in target.kinds_at(()):
            yield data[0], Flag.UNLISTED
        list_field = target.list_field()
        if list_field is not None:
            yield {list_field: data}, Flag.WRAPPED
    elif target.expects_array and _listable(data):
        yield [data], Flag.LISTED


def _get(node: Any, loc: Loc) -> Any:
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _set(node: Any, loc: Loc, value: Any) -> bool:
    if not loc:
        return False
    parent = _get(node, loc[:-1])
    try:
        parent[loc[-1]] = value
    except (KeyError, IndexError, TypeError):
        return False
    return True
