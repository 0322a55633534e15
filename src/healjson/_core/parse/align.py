"""Schema alignment: fit recovered JSON data to the target type, flagging every change.

Strict validation first (nothing changed); then pydantic's lax coercions (`"5"` → `5`, `5.0` →
`5`: flag `coerced`); then healjson's own alignments, each a rewrite that changes how the model's
data is *shaped or spelled*, never what it says:

- a key in another case or with other separators than the one field it can mean (`Answer`,
  `answer_text` for `answerText`: `keys_aligned`); two keys that claim one field, or a key two
  fields could mean, are left alone;
- an enum or literal value in another case or with other separators (`enum_case`);
- a number written as an English word, zero to one hundred (`number_word`);
- a JSON object or array that arrived encoded in a string (`double_encoded`);
- a one-key wrapper object around the value (`unwrapped`), unless some reading takes its key:
  a property (as written or aligned) or a dict entry whose value fits, wherever the object is
  read — as the node itself, as another member of its union, or after another reshape; a
  single value where a list is expected (`listed`; a string that holds a list separator is not
  wrapped, since splitting it is another reading, nor one that holds a JSON array: it is that
  array, encoded); a one-item list where a single value is
  expected (`unlisted`); a bare list for an object whose only required field is that list
  (`wrapped`). An answer in the envelope a strict format asks a list target in (`{"value":
  [...]}`, `wrappers.carried`) is judged as that list when no reading validates: the list's
  errors, at its paths (`[1].sku`), so a per-item repair asks for the failing items only.

They apply at every depth — each item of a list, each value of a dict, each field of a nested
model, each member of a union — and compose (a wrapper unwrapped, every item's keys aligned, a
number word read in one of them). The search is structural, top-down along the schema
(`shape.py`): a node's readings are few (the data as written, or one of the reshapes above),
each (schema node, data node) pair is decided once, so the work is linear in the data for a
given schema (read twice when a key one reading took was a wrapper in another, so that the
second reading knows it), and each node counts the readings that fit: none, exactly one, or
several with different values. A node that fits as written is read as written. When several
different readings fit anywhere, nothing is applied (ambiguous) and L2 reports the failure.

The verdict stays with pydantic: the one reading is kept only if it validates.

A validation that succeeds is not the end either (`settled`). pydantic ignores a key that is not
a field and fills the field with its default, so a key the model misspelled would lose its value
without a word: `{"query": "x", "LIMIT": 7}` would be `limit=5`. So wherever an object of the
validated value did not get all its fields from the text (`defaults.py` says so from the value
alone, cheaply; a target with no field that may be left out pays nothing), its keys are read
again by the key rule above and nothing else (no reshape): a key that is not a field but spells
exactly one field the object does not hold is that field (`keys_aligned`), at every depth, and
the data is validated again. The aligned value is kept when it validates and gives other fields
than the first (when not, the key was read after all: a field's name beside its alias); a key
that holds the default's value is aligned too (the field is then given); when it fails, its
errors stand (a diagnostic, a repair); when two keys of one object spell one such field, nothing
is chosen: the failure names the field and its keys (`misnamed_keys`). A model that keeps extra
keys (`extra="allow"`) is read the same way (such a key is almost surely the field left at its
default, not an extra); one that forbids them fails validation, and the reading above applies. A
JSON Schema target's value is a dict: a property left out is one it does not hold, whatever
`additionalProperties` says.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails, from_json, to_json

from healjson._core.diagnostic import describe_exception
from healjson._core.flags import Flag
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target

from .defaults import Clash, clash_errors, left_out, misspelled, shared_key
from .meter import charge
from .shape import Shape, key_form, shape_of
from .strings import lone_surrogate
from .wrappers import carried, item_names, names_the_value

__all__ = ["Fit", "align", "answer_key", "number_word", "settled", "stands"]

_SEPARATORS: Final = re.compile(r"[\s\-_]+")
_LIST_SEPARATORS: Final = re.compile(r"[,;\n]")
_BOOL_WORDS: Final = frozenset(
    {"0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes"}
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
    """Validate `data` against `target`; if that fails, read it along the schema (above) and
    keep the reading if pydantic validates it, unless several different readings fit.
    Otherwise the best failure: fewest errors, on the data as the model wrote it when tied or
    ambiguous. `context`: pydantic's validation context, in every validation."""
    fitted = _validate(target, data, context=context)
    if fitted.ok:
        return settled(target, data, fitted, context)
    found = _aligned(target, data, fitted, context)
    inner = NOTHING if found.ok else carried(shape_of(target), data)
    if inner is NOTHING:
        return found
    fit = align(target, inner, context)  # the strict envelope: judged as the list it carries
    return replace(fit, flags=_flags((Flag.UNWRAPPED,), fit.flags))


def _aligned(target: Target[Any], data: Any, fitted: Fit, context: Any) -> Fit:
    """`align` for data that did not validate as written (`fitted`)."""
    try:
        reading = _Aligner().align(shape_of(target), data)
    except RecursionError:  # nested deeper than the reader goes: pydantic's errors stand
        return fitted
    if reading.count == _MANY or reading.value is data:
        return _with_clashes(target, fitted, data)
    trial = _validate(target, reading.value, reading.flags, context)
    if trial.ok:
        return settled(target, reading.value, trial, context)
    if len(trial.errors) < len(fitted.errors):
        return _with_clashes(target, trial, data)
    return _with_clashes(target, fitted, data)


def _with_clashes(target: Target[Any], failed: Fit, data: Any) -> Fit:
    """`failed` with the keys of `data` that settle no field (`misnamed_keys`: a key spelling
    several fields, a field under several keys) among its errors, as `settled` reports them
    for data that validates: a repair then asks for every fix at once, not the keys only after
    the rest is fixed. Only keys are read (`defaults.misspelled` first: cheap when none is)."""
    shape = shape_of(target)
    aligner = _Aligner(keys_only=True)
    try:
        if not misspelled(shape, data):
            return failed
        aligner.align(shape, data)
    except RecursionError:
        return failed
    if not aligner.clashes:
        return failed
    return replace(failed, errors=(*failed.errors, *clash_errors(data, aligner.clashes)))


def stands(target: Target[Any], text: str, instance: Any, context: Any = None) -> bool:
    """Whether `instance`, validated from the JSON `text`, stands as it is: no key of the text
    spells a field it left at its default (`settled` changes nothing)."""
    if not left_out(target, instance):
        return True
    try:
        data = from_json(text)
    except Exception:  # pydantic-core read it: its parser should too; if not, L1 decides
        return False
    return settled(target, data, Fit(instance, data), context).instance is instance


def settled(target: Target[Any], data: Any, fit: Fit, context: Any = None) -> Fit:
    """`fit` (a validation of `data` that succeeded), unless a key of `data` is a spelling of a
    field the value left at its default (the rule in the module docstring): then `data` with
    such keys aligned, validated again (flag `keys_aligned`), or the failure that says why it
    cannot be: the aligned data's errors, or two keys claiming one field. Cheap when no field
    was left out (`defaults.left_out`)."""
    if not left_out(target, fit.instance):
        return fit
    shape = shape_of(target)
    aligner = _Aligner(keys_only=True)
    try:
        if not misspelled(shape, data):  # only the keys read: no key spells a field left out
            return fit
        reading = aligner.align(shape, data)
    except RecursionError:
        return fit
    if reading.count == _MANY or aligner.clashes:
        return Fit(NOTHING, data, fit.flags, clash_errors(data, aligner.clashes))
    if reading.value is data or Flag.KEYS_ALIGNED not in reading.flags:
        return fit
    trial = _validate(target, reading.value, _flags(fit.flags, reading.flags), context)
    if trial.ok and _given(target, trial.instance) == _given(target, fit.instance):
        return fit  # the key was read after all (a field's name beside its alias)
    return trial


def _given(target: Target[Any], instance: Any) -> bytes:
    """The answer as the text gave it: its JSON dump without the fields left at their
    defaults (a field written with its default's value counts as given)."""
    try:
        return to_json(target.adapter.dump_python(instance, mode="json", exclude_unset=True))
    except Exception:  # a serializer that fails, an adapter without the option
        return answer_key(target, instance)


def answer_key(target: Target[Any], instance: Any) -> bytes:
    """What makes two validated answers the same answer: their JSON dumps are equal."""
    try:
        return to_json(target.adapter.dump_python(instance, mode="json"))
    except Exception:  # a serializer that fails: fall back on the instance's own repr
        return repr(instance).encode("utf-8", "replace")


def _validate(
    target: Target[Any], data: Any, flags: tuple[Flag, ...] = (), context: Any = None
) -> Fit:
    try:
        raw = to_json(data, inf_nan_mode="constants")
    except Exception as exc:  # e.g. a lone surrogate that no JSON encoder accepts
        return Fit(NOTHING, data, flags, (lone_surrogate(data) or _crash(exc),))
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


# -- the structural reading ----------------------------------------------------------------------

_NONE: Final = 0
_ONE: Final = 1
_MANY: Final = 2  # several readings fit, with different values


@dataclass(frozen=True, slots=True)
class _Reading:
    """A data node read against a schema node: the value (the data object itself when nothing
    changed), the flags of the rewrites in it, and how many different readings fit. A reading
    that does not fit keeps its best-effort value, for the diagnostics."""

    value: Any
    flags: tuple[Flag, ...] = ()
    count: int = _ONE


def _as_written(reading: _Reading, data: Any) -> bool:
    return reading.count == _ONE and reading.value is data and not reading.flags


def _flags(*groups: Sequence[Flag]) -> tuple[Flag, ...]:
    return tuple(dict.fromkeys(flag for group in groups for flag in group))


class _Aligner:
    """One alignment: each (schema node, data node) pair is read once, whatever the number of
    readings that reach it."""

    def __init__(self, *, keys_only: bool = False) -> None:
        self.keys_only = keys_only  # after a validation that succeeded: keys aligned, nothing
        # reshaped, and two keys claiming one field make the reading ambiguous
        self.clashes: dict[int, Clash] = {}  # object id → its keys that settle nothing
        self.memo: dict[tuple[int, int, bool], _Reading] = {}
        self.decoded: dict[int, Any] = {}  # decoded values stay alive, so no other node takes
        # their id, and a second reading finds the same objects
        self.taken: set[int] = set()  # one-key objects whose key some reading takes
        self.unwrapped: set[int] = set()  # one-key objects some reading unwrapped
        self.named: dict[int, frozenset[str]] = {}  # an object's or a list's node in the answer
        # → the key forms of the field it is the value of (`wrappers`); none: the whole answer

    def align(self, shape: Shape, data: Any) -> _Reading:
        """`data` read against `shape`; read again when a one-key object was unwrapped in one
        reading though another took its key (no unwrapping it then)."""
        reading = self.read(shape, data)
        if self.taken.isdisjoint(self.unwrapped):
            return reading
        self.memo = {}
        return self.read(shape, data)

    def read(self, shape: Shape, data: Any, reshape: bool = True) -> _Reading:
        """`data` read against `shape`; `reshape=False` for data a reshape already moved (one
        reshape per data node: `{"a": {"b": 1}}` is not read as `1`)."""
        key = (id(shape), id(data), reshape)
        known = self.memo.get(key)
        if known is not None:
            return known
        self.memo[key] = _Reading(data, (), _NONE)  # a reading that loops back fits nothing
        charge(1)
        if shape.branches:
            reading = self._union(shape.branches, data, reshape)
        else:
            direct = self._direct(shape, data)
            if _as_written(direct, data) or not reshape or self.keys_only:
                reading = direct
            else:
                reading = _choose([direct, *self._reshaped(shape, data)], data)
        self.memo[key] = reading
        return reading

    def _union(self, branches: tuple[Shape, ...], data: Any, reshape: bool) -> _Reading:
        readings = []
        for branch in branches:
            reading = self.read(branch, data, reshape)
            if _as_written(reading, data):
                return reading
            readings.append(reading)
        return _choose(readings, data)

    def _direct(self, shape: Shape, data: Any) -> _Reading:
        if shape.choices is not None:
            return _choice(shape.choices, data)
        if isinstance(data, dict) and "object" in shape.kinds:
            return self._object(shape, data)
        if isinstance(data, list) and "array" in shape.kinds:
            return self._array(shape, data)
        if not shape.kinds or _scalar_fits(shape.kinds, data):
            return _Reading(data)
        if isinstance(data, str) and shape.kinds & {"integer", "number"} and not self.keys_only:
            charge(len(data))
            number = number_word(data)
            if number is not None:
                return _Reading(number, (Flag.NUMBER_WORD,))
        return _Reading(data, (), _NONE)

    def _object(self, shape: Shape, data: dict[str, Any]) -> _Reading:
        props = shape.props or {}
        claims: dict[str, list[str]] = {}
        for key in data:
            if key not in props and isinstance(key, str):
                charge(len(key))
                name = shape.forms.get(key_form(key))
                if name is not None and name not in data:
                    claims.setdefault(name, []).append(key)
        renames = {keys[0]: name for name, keys in claims.items() if len(keys) == 1}
        out: dict[str, Any] = {}
        flags: list[Flag] = [Flag.KEYS_ALIGNED] if renames else []
        count, changed = _ONE, bool(renames)
        if self.keys_only and len(renames) < len(claims):
            name, keys = next((name, keys) for name, keys in claims.items() if len(keys) > 1)
            self.clashes[id(data)] = Clash(name, tuple(keys))
            count = _MANY
        elif self.keys_only and shape.shared:  # a key spelling several fields, one left out
            found = shared_key(shape, data)
            if found is not None:
                self.clashes[id(data)] = found
                count = _MANY
        for key, value in data.items():
            name = renames.get(key, key)
            sub = props.get(name, shape.extra)
            if sub is None:
                if shape.closed:
                    count = _NONE
                out[name] = value
                continue
            if type(value) is dict or type(value) is list:  # what a wrapper in it may be named
                title = shape.titles.get(name)
                form = key_form(name)
                self.named[id(value)] = frozenset((form, title) if title else (form,))
            reading = self.read(sub, value)
            count = _combine(count, reading.count)
            changed = changed or reading.value is not value
            flags.extend(reading.flags)
            out[name] = reading.value
        if not shape.required <= out.keys():
            count = _NONE
        if len(data) == 1 and (
            next(iter(out)) in props or (shape.extra is not None and count != _NONE)
        ):
            self.taken.add(id(data))  # a property or a dict entry, so no wrapper
        return _Reading(out if changed else data, _flags(flags), count)

    def _array(self, shape: Shape, data: list[Any]) -> _Reading:
        out: list[Any] = []
        flags: list[Flag] = []
        count, changed = _ONE, False
        for index, value in enumerate(data):
            sub = shape.prefix[index] if index < len(shape.prefix) else shape.items
            if sub is None:
                out.append(value)
                continue
            if type(value) is dict or type(value) is list:  # an item: its list field's names
                self.named[id(value)] = item_names(self.named.get(id(data)))
            reading = self.read(sub, value)
            count = _combine(count, reading.count)
            changed = changed or reading.value is not value
            flags.extend(reading.flags)
            out.append(reading.value)
        return _Reading(out if changed else data, _flags(flags), count)

    def _reshaped(self, shape: Shape, data: Any) -> Iterator[_Reading]:
        """The other readings of a node that does not fit as written."""
        wants_array, wants_object = "array" in shape.kinds, "object" in shape.kinds
        encoded: Any = NOTHING
        if isinstance(data, str) and (wants_array or wants_object):
            encoded = self.decoded.get(id(data), NOTHING)
            if encoded is NOTHING:
                encoded = self.decoded[id(data)] = _decoded(data)
            if encoded is not NOTHING:
                yield _prefixed(Flag.DOUBLE_ENCODED, self.read(shape, encoded))
        if isinstance(data, dict) and len(data) == 1:
            ((key, inner),) = data.items()
            is_map = shape.extra is not None and not shape.props
            if (
                id(data) not in self.taken
                and (isinstance(inner, dict | list) or not wants_object)
                and names_the_value(key, self.named.get(id(data)), is_map, inner, shape.title)
            ):
                self.unwrapped.add(id(data))
                yield _prefixed(Flag.UNWRAPPED, self.read(shape, inner, False))
        # a string holding an encoded array is that array (read above), not a list's one item
        if wants_array and _listable(data) and not isinstance(encoded, list):
            item = shape.items or (shape.prefix[0] if len(shape.prefix) == 1 else None)
            reading = self.read(item, data, False) if item is not None else _Reading(data)
            yield _Reading([reading.value], _flags((Flag.LISTED,), reading.flags), reading.count)
        if isinstance(data, list):
            if len(data) == 1 and not wants_array and not shape.free:
                yield _prefixed(Flag.UNLISTED, self.read(shape, data[0], False))
            if shape.list_field is not None and shape.props is not None:
                name = shape.list_field
                reading = self.read(shape.props[name], data, False)
                flags = _flags((Flag.WRAPPED,), reading.flags)
                yield _Reading({name: reading.value}, flags, reading.count)


def _prefixed(flag: Flag, reading: _Reading) -> _Reading:
    return _Reading(reading.value, _flags((flag,), reading.flags), reading.count)


def _combine(count: int, child: int) -> int:
    """A node's count from its children's: none if any fits nothing, else several if any has
    several, else one."""
    if _NONE in (count, child):
        return _NONE
    return max(count, child)


def _choose(readings: list[_Reading], data: Any) -> _Reading:
    """The one reading that fits; several with different values are ambiguous; when none fits,
    the first (the data read as written, as far as it goes)."""
    fits = [reading for reading in readings if reading.count != _NONE]
    if not fits:
        return readings[0] if readings else _Reading(data, (), _NONE)
    first = fits[0]
    if first.count == _MANY:
        return _Reading(data, (), _MANY)
    for other in fits[1:]:
        if other.count == _MANY or not _same(first.value, other.value):
            return _Reading(data, (), _MANY)
    return first


def _same(a: Any, b: Any) -> bool:
    try:
        left, right = to_json(a), to_json(b)
    except Exception:  # not JSON-encodable: only the same object is the same reading
        return a is b
    charge(len(left) + len(right))
    return left == right


def _choice(choices: tuple[Any, ...], data: Any) -> _Reading:
    """An enum or literal value: as written (a numeric string for a number, as pydantic's lax
    mode reads it), or the one choice spelled alike but for case and separators."""
    number = _number(data) if isinstance(data, str) else None
    for choice in choices:
        if _same_scalar(data, choice) or (number is not None and _same_scalar(number, choice)):
            return _Reading(data)
    if not isinstance(data, str):
        return _Reading(data, (), _NONE)
    charge(len(data))
    wanted = _SEPARATORS.sub("_", data.strip().casefold())
    matches = {
        choice
        for choice in choices
        if isinstance(choice, str) and _SEPARATORS.sub("_", choice.casefold()) == wanted
    }
    if len(matches) == 1:
        return _Reading(matches.pop(), (Flag.ENUM_CASE,))
    return _Reading(data, (), _MANY if matches else _NONE)


def _same_scalar(a: Any, b: Any) -> bool:
    return isinstance(a, bool) == isinstance(b, bool) and type(a) is not dict and a == b


def _scalar_fits(kinds: frozenset[str], data: Any) -> bool:
    """Whether a scalar fits one of the JSON types as pydantic reads it (lax: `"5"` for an
    integer, `5.0` for an integer, `"yes"` for a boolean)."""
    if data is None:
        return "null" in kinds
    if isinstance(data, bool):
        return bool(kinds & {"boolean", "integer", "number"})
    if isinstance(data, int):
        return bool(kinds & {"integer", "number"}) or ("boolean" in kinds and data in (0, 1))
    if isinstance(data, float):
        integral = math.isfinite(data) and data.is_integer()
        return "number" in kinds or ("integer" in kinds and integral)
    if not isinstance(data, str):
        return False
    if "string" in kinds:
        return True
    if "boolean" in kinds and data.strip().casefold() in _BOOL_WORDS:
        return True
    number = _number(data) if kinds & {"integer", "number"} else None
    if number is None:
        return False
    return "number" in kinds or number.is_integer()


def _number(text: str) -> float | None:
    if len(text) > 100:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _decoded(text: str) -> Any:
    """The JSON object or array a string holds, or NOTHING."""
    body = text.strip()
    if not body.startswith(("{", "[")):
        return NOTHING
    charge(len(body))
    try:
        inner = from_json(body)
    except (ValueError, TypeError):  # TypeError: a lone surrogate cannot be encoded
        return NOTHING
    return inner if isinstance(inner, dict | list) else NOTHING


def _listable(value: Any) -> bool:
    """A single value that can only mean a one-item list (not a list, not a string that holds
    a list separator)."""
    if isinstance(value, list) or value is None:
        return False
    return not (isinstance(value, str) and _LIST_SEPARATORS.search(value))


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
