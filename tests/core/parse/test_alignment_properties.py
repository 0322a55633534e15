"""Alignments apply at every depth and compose: properties over generated schemas.

A schema is generated (models made with `pydantic.create_model`: nested models, lists of models,
dicts of models, unions of two models, `Optional` fields, int / float / str / bool / `Literal`
fields, snake_case and camelCase field names), then a value that validates, then misalignments
at random depths: keys restyled (case, separators), a list in a one-key wrapper, a lone item for
a one-item list, a value in a one-item list, a list or object sent as a JSON string, an int as a
numeric string or a number word, a float as a numeric string, a literal in another case. The
reply heals in one call to the original value, its flags naming each step. When two readings
fit (built on purpose), nothing is chosen. The alignment's work stays linear.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, create_model

import healjson
from healjson import Degraded, Flag, Healed, Source
from healjson._core.parse import meter
from healjson._core.parse.shape import key_form
from pinned import pinned

_WORDS = ("answer", "city", "total", "label", "score", "owner", "level", "ticket", "amount")
_WORDS += ("region", "weight", "price", "note", "due", "size", "color", "rank", "step")
_CHOICES = ("low", "medium", "high", "on_hold", "waiting")
_WRAPPER_KEYS = ("data", "results", "items", "answers", "values", "output")
_NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen "
_NUMBER_WORDS += "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
_MODEL_IDS = count()


@dataclass(frozen=True)
class Spec:
    """A generated field type: a scalar kind, `opt` / `list` / `dict` (str keys) around
    `inner`, a model, or a union of two models."""

    kind: str
    inner: Spec | None = None
    fields: tuple[tuple[str, Spec], ...] = ()
    choices: tuple[str, ...] = ()
    members: tuple[Spec, ...] = ()


def _camel(words: list[str]) -> str:
    return words[0] + "".join(word.title() for word in words[1:])


_NAMES = st.builds(
    lambda words, camel: _camel(words) if camel else "_".join(words),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=2),
    st.booleans(),
)


# strategies drawn from inside the composites below, built once (a strategy built per draw is
# validated anew by hypothesis each time)
_FLAT = ["int", "float", "str", "bool", "lit", "opt", "list_int"]
_NESTED = ["model", "list_model", "dict_model", "union"]
_FLAT_KIND = st.sampled_from(_FLAT)
_ANY_KIND = st.sampled_from([*_FLAT, "dict_int", *_NESTED])
_LIT_CHOICES = st.lists(st.sampled_from(_CHOICES), min_size=2, max_size=3, unique=True)
_FIELD_COUNT = st.integers(min_value=1, max_value=3)


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    """A model spec, nested up to two levels, its field names unique by key form (so no key
    can mean two fields anywhere in the schema)."""
    names = iter(draw(st.lists(_NAMES, min_size=12, max_size=12, unique_by=key_form)))

    def field(depth: int) -> Spec:
        kind = draw(_ANY_KIND if depth < 2 else _FLAT_KIND)
        if kind == "opt":
            return Spec("opt", field(depth + 1))
        if kind == "lit":
            choices = draw(_LIT_CHOICES)
            return Spec("lit", choices=tuple(choices))
        if kind in ("list_int", "dict_int"):
            return Spec(kind[:4], Spec("int"))
        if kind in _NESTED:
            inner, other = model(depth + 1), model(depth + 1) if kind == "union" else None
            if inner is None:
                return Spec("int")
            if other is not None:
                return Spec("union", members=(inner, other))
            return {"list_model": Spec("list", inner), "dict_model": Spec("dict", inner)}.get(
                kind, inner
            )
        return Spec(kind)

    def model(depth: int) -> Spec | None:
        fields = []
        for _ in range(draw(_FIELD_COUNT)):
            name = next(names, None)
            if name is None:
                break
            fields.append((name, field(depth)))
        return Spec("model", fields=tuple(fields)) if fields else None

    root = model(0)
    assert root is not None
    return root


def build(spec: Spec) -> Any:
    """The Python type of a spec (every field required, `Optional` ones too)."""
    if spec.kind == "model":
        fields: dict[str, Any] = {name: (build(sub), ...) for name, sub in spec.fields}
        return create_model(f"Model{next(_MODEL_IDS)}", **fields)
    if spec.kind == "opt":
        assert spec.inner is not None
        return build(spec.inner) | None
    if spec.kind == "list":
        assert spec.inner is not None
        return list[build(spec.inner)]  # type: ignore[misc]
    if spec.kind == "dict":
        assert spec.inner is not None
        return dict[str, build(spec.inner)]  # type: ignore[misc]
    if spec.kind == "union":
        return build(spec.members[0]) | build(spec.members[1])
    if spec.kind == "lit":
        return Literal[spec.choices]
    return {"int": int, "float": float, "str": str, "bool": bool}[spec.kind]


def values(spec: Spec) -> st.SearchStrategy[Any]:
    """JSON data that validates against the spec's type."""
    if spec.kind == "model":
        return st.fixed_dictionaries({name: values(sub) for name, sub in spec.fields})
    if spec.kind == "union":
        return st.one_of([values(member) for member in spec.members])
    if spec.inner is not None:
        inner = values(spec.inner)
        if spec.kind == "dict":
            return st.dictionaries(st.sampled_from(["x", "y", "Z"]), inner, max_size=2)
        return st.none() | inner if spec.kind == "opt" else st.lists(inner, max_size=3)
    if spec.kind == "lit":
        return st.sampled_from(spec.choices)
    return {
        "int": st.integers(min_value=-50, max_value=5_000),
        "float": st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
        "str": st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8),
        "bool": st.booleans(),
    }[spec.kind]


_KEY_STYLES: tuple[Callable[[str], str], ...] = (
    str.upper,
    str.title,
    lambda key: key.replace("_", "-"),
    lambda key: key.replace("_", " ").title(),
    lambda key: "".join(f"_{c.lower()}" if c.isupper() else c for c in key),  # camel → snake
    lambda key: key,
)


_KEY_STYLE = st.sampled_from(_KEY_STYLES)
_RESHAPE = st.sampled_from(["none", "none", "in_a_list", "wrapper", "lone_item", "encoded"])
_WRAPPER_KEY = st.sampled_from(_WRAPPER_KEYS)
_LIT_SPELLING: st.SearchStrategy[Callable[[str], str]] = st.sampled_from(
    [str.upper, lambda v: v.replace("_", " ").title()]
)


def misalign(draw: st.DrawFn, spec: Spec, value: Any, flags: set[Flag]) -> Any:
    """`value` with misalignments applied at random depths, each one's flag added to `flags`:
    the children first, then this node's spelling, then at most one reshape of this node."""
    if spec.kind == "opt":
        assert spec.inner is not None
        return None if value is None else misalign(draw, spec.inner, value, flags)
    if spec.kind == "union":
        member = next(m for m in spec.members if {name for name, _ in m.fields} == set(value))
        return misalign(draw, member, value, flags)
    if spec.kind == "dict":
        assert spec.inner is not None
        value = {key: misalign(draw, spec.inner, item, flags) for key, item in value.items()}
    elif spec.kind == "model":
        out = {}
        for name, sub in spec.fields:
            key = draw(_KEY_STYLE)(name)
            if key != name:
                flags.add(Flag.KEYS_ALIGNED)
            out[key] = misalign(draw, sub, value[name], flags)
        value = out
    elif spec.kind == "list":
        assert spec.inner is not None
        value = [misalign(draw, spec.inner, item, flags) for item in value]
    elif draw(st.booleans()):
        value = _respelled(draw, spec, value, flags)
    reshape = draw(_RESHAPE)
    if reshape == "in_a_list" and spec.kind != "list":
        flags.add(Flag.UNLISTED)
        return [value]
    if reshape == "wrapper" and spec.kind == "list":
        flags.add(Flag.UNWRAPPED)
        return {draw(_WRAPPER_KEY): value}
    if reshape == "lone_item" and spec.kind == "list" and len(value) == 1 and _lone(value[0]):
        flags.add(Flag.LISTED)
        return value[0]
    if reshape == "encoded" and spec.kind in ("list", "dict", "model"):
        flags.add(Flag.DOUBLE_ENCODED)  # the list or object sent as a JSON string
        return json.dumps(value)
    return value


def _respelled(draw: st.DrawFn, spec: Spec, value: Any, flags: set[Flag]) -> Any:
    if spec.kind == "int" and 0 <= value <= 20 and draw(st.booleans()):
        flags.add(Flag.NUMBER_WORD)
        word = _NUMBER_WORDS.split()[value]
        return word.title() if draw(st.booleans()) else word
    if spec.kind in ("int", "float"):
        flags.add(Flag.COERCED)
        return repr(value)
    if spec.kind == "lit":
        spelled = draw(_LIT_SPELLING)(value)
        if spelled != value:
            flags.add(Flag.ENUM_CASE)
        return spelled
    return value


def _lone(item: Any) -> bool:
    """An item that can stand for a one-item list without a second reading: not a list, not a
    one-key object (which could also be a wrapper around the list)."""
    return not isinstance(item, list) and not (isinstance(item, dict) and len(item) == 1)


@st.composite
def misaligned_replies(draw: st.DrawFn) -> tuple[Any, Any, str, set[Flag]]:
    """(target, the valid data, the misaligned reply, the flags its misalignments name)."""
    spec = draw(specs())
    if draw(st.booleans()):
        spec = Spec("list", spec)
    value = draw(values(spec))
    flags: set[Flag] = set()
    reply = misalign(draw, spec, value, flags)
    return build(spec), value, json.dumps(reply), flags


@pinned(max_examples=75)
@given(case=misaligned_replies())
def test_misalignments_at_any_depth_heal_to_the_original_value(
    case: tuple[Any, Any, str, set[Flag]],
) -> None:
    """Whatever the schema and wherever the misalignments, the reply heals in one call to the
    value it came from, and the flags name exactly the alignments applied."""
    target, value, reply, flags = case
    outcome = healjson.validate(reply, target)
    assert isinstance(outcome, Healed), (reply, outcome)
    assert TypeAdapter(target).validate_python(value) == outcome.value
    assert flags == set(outcome.flags), reply


class _Tagged(BaseModel):
    tags: list[str]
    counts: list[int] = []


_ITEMS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)


@pinned(max_examples=50)
@given(
    tags=st.lists(_ITEMS, max_size=4),
    counts=st.lists(st.integers(-5, 500), max_size=3),
    where=st.sampled_from(["field", "root"]),
)
def test_a_list_sent_as_its_json_text_heals_to_the_list(
    tags: list[str], counts: list[int], where: str
) -> None:
    """A list that arrived as its own JSON text (a model's or a tool's double-encoded field),
    empty, one item or more, of strings that may look like anything: the list it encodes, once,
    flagged `double_encoded`, never a one-item list of that text."""
    if where == "root":
        target: Any = list[str]
        reply, expected = json.dumps(json.dumps(tags)), tags
    else:
        target = _Tagged
        reply = json.dumps({"tags": json.dumps(tags), "counts": json.dumps(counts)})
        expected = _Tagged(tags=tags, counts=counts)
    outcome = healjson.validate(reply, target)
    assert isinstance(outcome, Healed), (reply, outcome)
    assert expected == outcome.value
    assert Flag.DOUBLE_ENCODED in outcome.flags


class _Region(BaseModel):
    region: list[int]


class _CityOwner(BaseModel):
    city_owner: dict[str, _Region]


class _Owners(BaseModel):
    owner_total: list[_CityOwner]


class _Label(BaseModel):
    label: float


class _Total(BaseModel):
    total: list[int] | None


class _Step(BaseModel):
    step: _Label | _Total | None


class _Prices(BaseModel):
    step_price: list[int]


class _Ticket(BaseModel):
    noteTicket: bool


class _Weight(BaseModel):
    weight: _Prices | _Ticket


@pytest.mark.parametrize(
    ("target", "reply", "expected"),
    [
        # a dict entry whose value fits is no wrapper: not `{"REGION": {"region": []}}`
        (
            _Owners,
            '{"Owner_Total": [{"CITY_OWNER": {"x": {"REGION": []}}}]}',
            {"owner_total": [{"city_owner": {"x": {"region": []}}}]},
        ),
        (
            dict[str, _Region],
            '{"Z": {"Region": ["1989", [2515]]}}',
            {"Z": {"region": [1989, 2515]}},
        ),
        # a key one member of a union takes is no wrapper for another: not a wrapped null
        (_Step, '{"STEP": {"Total": null}}', {"step": {"total": None}}),
        # nor for a reshape in another member: not `{"step_price": [true]}` with `true` unwrapped
        (_Weight, '{"WEIGHT": [{"noteTicket": true}]}', {"weight": {"noteTicket": True}}),
    ],
)
def test_a_key_the_schema_takes_is_no_wrapper(target: Any, reply: str, expected: Any) -> None:
    """A one-key object whose key is a dict entry (its value fits) or a property of a union
    member (as aligned) heals as that entry or property, not as a wrapper around the rest."""
    outcome = healjson.validate(reply, target)
    assert isinstance(outcome, Healed), outcome
    assert TypeAdapter(target).dump_python(outcome.value, mode="json") == expected


# --- two readings fit: nothing is chosen ---------------------------------------------------------


def _nested(draw: st.DrawFn, target: Any, data: Any) -> tuple[Any, Any]:
    """The target and data inside zero to two levels of generated outer models."""
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        name = draw(st.sampled_from(["outer", "envelope", "wrapped_value"]))
        target = create_model(f"Outer{next(_MODEL_IDS)}", **{name: (target, ...)})
        data = {name: data}
    return target, data


@st.composite
def wrapper_or_item(draw: st.DrawFn) -> tuple[Any, str]:
    """`{"key": [items]}` for `list[Loose]`, where `Loose` takes any object (every field
    optional): the unwrapped list fits, and so does the whole object as a one-item list."""
    spec = draw(specs())
    loose: Any = create_model(
        f"Loose{next(_MODEL_IDS)}",
        **{name: (build(sub) | None, None) for name, sub in spec.fields},
    )
    items = draw(st.lists(values(spec), min_size=1, max_size=3))
    target, data = _nested(draw, list[loose], {draw(st.sampled_from(_WRAPPER_KEYS)): items})
    return target, json.dumps(data)


@st.composite
def key_two_members_could_mean(draw: st.DrawFn) -> tuple[Any, str]:
    """A key spelled for neither member of a union, that each could mean (`answer_text` in
    one, `answerText` in the other)."""
    words = draw(st.lists(st.sampled_from(_WORDS), min_size=2, max_size=2))
    spec = draw(specs())
    field = spec.fields[0][1]
    members = [
        create_model(f"Member{next(_MODEL_IDS)}", **{name: (build(field), ...)})
        for name in ("_".join(words), _camel(words))
    ]
    key = " ".join(words).upper()
    target, data = _nested(draw, members[0] | members[1], {key: draw(values(field))})
    return target, json.dumps(data)


@pinned(max_examples=20)
@given(case=st.one_of(wrapper_or_item(), key_two_members_could_mean()))
def test_when_two_readings_fit_nothing_is_chosen(case: tuple[Any, str]) -> None:
    """Two different readings fit, at whatever depth: no value, the schema failure reported."""
    target, reply = case
    assert None is healjson.parse(reply, target).instance
    outcome = healjson.validate(reply, target)
    assert isinstance(outcome, Degraded)
    assert Source.SCHEMA == outcome.errors[0].source


# --- linear work ---------------------------------------------------------------------------------


class _Leaf(BaseModel):
    answerText: str
    confidence: int


class _Node(BaseModel):
    label: str
    children: list[_Node]
    leaves: list[_Leaf]


@pinned(max_examples=10)
@given(
    width=st.integers(min_value=1, max_value=400),
    depth=st.integers(min_value=1, max_value=12),
)
def test_alignment_work_is_linear_in_the_reply(width: int, depth: int) -> None:
    """Every level misaligned (wrappers, key case, numeric strings): the characters examined
    stay within a constant times the reply's length, however wide or deep."""
    leaves = [{"ANSWER_TEXT": "a", "Confidence": "3"}] * width
    node: dict[str, Any] = {"Label": "leaf", "children": [], "leaves": {"items": leaves}}
    for _ in range(depth):
        node = {"LABEL": "x", "Children": {"nodes": [node]}, "leaves": leaves}
    text = json.dumps(node)
    with meter.metered() as work:
        outcome = healjson.validate(text, _Node)
    assert isinstance(outcome, Healed)
    assert work.chars <= 30 * len(text) + 20_000
