"""A fix or a drop changes what it touches and nothing else: the accepted value is the corrected
value itself (the fix's own object, the very items kept), never a dump of it validated again, so
a validator that is not idempotent runs once, a `SecretStr` keeps its secret, a
`Field(exclude=True)` field keeps its value. The corrected value is still checked against the
schema: a fix whose value is of another type than its field's (`5.0` for an `int`) is not
accepted, and a fix that returns data of another kind (a dict for a model) has it validated,
once."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any, Literal

import pydantic
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    Json,
    SecretStr,
    create_model,
)
from typing_extensions import TypedDict

import healjson
from healjson import Degraded, Flag, Healed, Healer, HealPolicy, Violation, contract
from healjson.testing import ScriptedModel
from pinned import pinned


def to_cents(value: Any) -> int:
    """Dollars (as the model writes them) to cents: not idempotent (1250 -> 125000)."""
    return round(float(value) * 100)


Cents = Annotated[int, BeforeValidator(to_cents)]


class Account(BaseModel):
    owner: str
    balance_cents: Cents
    internal_ref: str = Field(default="", exclude=True)
    pin: SecretStr | None = None
    tags: Json[list[str]] | None = None
    qty: int = 1


def trimmed_rule(fix: Any) -> Any:
    """A whole-value rule on `owner` (surrounding spaces) with `fix`."""

    @contract(fields=("owner",), on_fail="fix", fix=fix)
    def trimmed(account: Any) -> Violation | None:
        owner = account["owner"] if isinstance(account, dict) else account.owner
        return Violation("owner has no surrounding spaces") if owner != owner.strip() else None

    return trimmed


ACCOUNT = {
    "owner": " Ada ",
    "balance_cents": 12.5,
    "internal_ref": "REF-42",
    "pin": "4711",
    "tags": '["vip"]',
}


def only(outcome: Any) -> Healed[Any]:
    assert isinstance(outcome, Healed), outcome
    return outcome


def test_a_fix_changes_only_what_it_touches_and_is_the_accepted_object() -> None:
    """A fix of `owner` leaves a dollars-to-cents field, a `SecretStr`, an excluded field and a
    `Json` field exactly as validated, and the accepted value is the object the fix returned."""
    returned: list[Account] = []

    def fix(account: Account) -> Account:
        copy = account.model_copy(update={"owner": account.owner.strip()})
        returned.append(copy)
        return copy

    outcome = only(healjson.validate(json.dumps(ACCOUNT), Account, contracts=[trimmed_rule(fix)]))
    value = outcome.value
    assert value is returned[-1]
    assert ("Ada", 1250, "REF-42", ["vip"]) == (
        value.owner,
        value.balance_cents,
        value.internal_ref,
        value.tags,
    )
    assert value.pin is not None
    assert "4711" == value.pin.get_secret_value()
    assert {"owner", "balance_cents", "internal_ref", "pin", "tags"} == value.model_fields_set
    assert ("trimmed",) == outcome.fixed
    assert Flag.CONTRACT_FIXED in outcome.flags


def test_a_drop_keeps_the_very_items_kept_and_their_values() -> None:
    """A drop on the lines of an invoice keeps the other lines as the objects validated (a
    dollars-to-cents price stays 150, not 15000), the invoice's other fields too."""

    class Line(BaseModel):
        sku: str
        price_cents: Cents

    class Invoice(BaseModel):
        total_cents: Cents
        lines: list[Line]

    seen: list[Line] = []

    @contract(fields=("sku",), on_fail="drop", items="lines")
    def no_samples(line: Line) -> Violation | None:
        seen.append(line)
        return Violation("samples are not invoiced") if line.sku == "SAMPLE" else None

    text = json.dumps(
        {
            "total_cents": 1.5,
            "lines": [{"sku": "A", "price_cents": 1.5}, {"sku": "SAMPLE", "price_cents": 0}],
        }
    )
    outcome = only(healjson.validate(text, Invoice, contracts=[no_samples]))
    (line,) = outcome.value.lines
    assert (150, 150) == (line.price_cents, outcome.value.total_cents)
    assert line is seen[0]  # the item the rule judged, not a copy validated again
    assert ["lines[1]"] == [d.where for d in outcome.dropped]


def test_an_item_fix_keeps_the_other_items_objects() -> None:
    """An item fix corrects its item only: the other items are the objects validated, and the
    fixed one is the object the fix returned."""

    class Line(BaseModel):
        sku: str
        price_cents: Cents

    returned: list[Line] = []

    def upper(line: Line) -> Line:
        returned.append(line.model_copy(update={"sku": line.sku.upper()}))
        return returned[-1]

    @contract(fields=("sku",), on_fail="fix", fix=upper)
    def upper_case(line: Line) -> Violation | None:
        return None if line.sku.isupper() else Violation("sku is upper case")

    text = json.dumps([{"sku": "A", "price_cents": 1.5}, {"sku": "b", "price_cents": 2}])
    model = ScriptedModel([text])
    outcome = only(Healer(list[Line], item_contracts=[upper_case]).run(model, "q"))
    assert [("A", 150), ("B", 200)] == [(x.sku, x.price_cents) for x in outcome.value]
    assert outcome.value[1] is returned[-1]


def test_a_fix_whose_value_has_another_type_than_its_field_is_not_accepted() -> None:
    """A fix that sets `5.0` in an `int` field through `model_copy` (a round trip would coerce
    it) is not accepted: the model is asked again, and no value holds the float."""

    class Order(BaseModel):
        owner: str
        qty: int

    fix = trimmed_rule(lambda a: a.model_copy(update={"owner": a.owner.strip(), "qty": 5.0}))
    model = ScriptedModel(['{"owner": " Ada ", "qty": 2}', '{"owner": "Ada", "qty": 3}'])
    outcome = only(Healer(Order, contracts=[fix]).run(model, "q"))
    assert (2, 3, ()) == (outcome.calls, outcome.value.qty, outcome.fixed)
    assert type(outcome.value.qty) is int


class Ratio(BaseModel):
    owner: str
    ratio: Annotated[int, AfterValidator(str)]  # the caller's validator returns another type


def test_a_model_whose_own_validator_returns_another_type_can_still_be_fixed() -> None:
    """When the answer as validated already holds a type its field does not declare (the
    caller's validator made it so), the type check cannot tell a fix's doing: the dump alone is
    judged, and the fix is accepted."""
    fix = trimmed_rule(lambda a: a.model_copy(update={"owner": a.owner.strip()}))
    outcome = only(healjson.validate('{"owner": " Ada ", "ratio": 50}', Ratio, contracts=[fix]))
    assert ("Ada", "50", 0) == (outcome.value.owner, outcome.value.ratio, outcome.calls)


def test_a_fix_that_returns_a_dict_for_a_model_has_it_validated_once() -> None:
    """A fix may return a dict for a model: that data is validated once (the validator runs on
    it once), and a dict that fails the schema is asked again, not accepted."""
    fix = trimmed_rule(lambda a: {"owner": a.owner.strip(), "balance_cents": 3})
    outcome = only(healjson.validate(json.dumps(ACCOUNT), Account, contracts=[fix]))
    assert ("Ada", 300) == (outcome.value.owner, outcome.value.balance_cents)
    broken = trimmed_rule(lambda a: {"owner": a.owner.strip()})  # no balance: fails the schema
    failed = healjson.validate(json.dumps(ACCOUNT), Account, contracts=[broken])
    assert isinstance(failed, Degraded)
    assert "owner has no surrounding spaces" == failed.errors[0].constraint


def test_an_item_fix_that_returns_a_dict_is_validated_by_the_items_class() -> None:
    """An item fix that returns a dict for a model item has it validated as that item, once;
    the other items stay the objects validated."""

    class Line(BaseModel):
        sku: str
        price_cents: Cents

    @contract(fields=("sku",), on_fail="fix", fix=lambda line: {"sku": "B", "price_cents": 2})
    def upper_case(line: Line) -> Violation | None:
        return None if line.sku.isupper() else Violation("sku is upper case")

    text = json.dumps([{"sku": "A", "price_cents": 1.5}, {"sku": "b", "price_cents": 9}])
    outcome = only(Healer(list[Line], item_contracts=[upper_case]).run(ScriptedModel([text]), "q"))
    assert [("A", 150), ("B", 200)] == [(x.sku, x.price_cents) for x in outcome.value]
    assert all(type(line) is Line for line in outcome.value)


def test_a_json_schema_targets_fix_is_checked_strictly_and_kept_as_returned() -> None:
    """On a JSON Schema target the fix's dict is the value (the same object), and a fix that
    writes `"3"` where an integer is declared is asked again rather than converted."""
    schema = {
        "type": "object",
        "properties": {"owner": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["owner", "age"],
    }
    returned: list[dict[str, Any]] = []

    def fix(person: dict[str, Any]) -> dict[str, Any]:
        returned.append({**person, "owner": person["owner"].strip()})
        return returned[-1]

    text = '{"owner": " Ada ", "age": 3}'
    outcome = only(healjson.validate(text, schema, contracts=[trimmed_rule(fix)]))
    assert outcome.value is returned[-1]
    assert {"owner": "Ada", "age": 3} == outcome.value
    wrong = trimmed_rule(lambda p: {**p, "owner": p["owner"].strip(), "age": "3"})
    assert isinstance(healjson.validate(text, schema, contracts=[wrong]), Degraded)


@dataclasses.dataclass
class PlainAccount:
    owner: str
    balance_cents: Cents


class TypedAccount(TypedDict):
    owner: str
    balance_cents: Cents


class Cat(BaseModel):
    kind: Literal["cat"]
    owner: str
    balance_cents: Cents


class Dog(BaseModel):
    kind: Literal["dog"]
    owner: str


class SkuLine(BaseModel):
    sku: str


@pydantic.dataclasses.dataclass
class DataclassInvoice:
    total_cents: Cents
    lines: list[SkuLine]


def test_dataclass_typeddict_and_union_targets_keep_what_a_fix_did_not_touch() -> None:
    """A fix on a dataclass, a TypedDict and a union member keeps the dollars-to-cents field as
    validated, and the value is the fix's own."""
    cases: list[tuple[Any, dict[str, Any], Any]] = [
        (PlainAccount, {}, lambda v: dataclasses.replace(v, owner=v.owner.strip())),
        (TypedAccount, {}, lambda v: {**v, "owner": v["owner"].strip()}),
        (Cat | Dog, {"kind": "cat"}, lambda v: v.model_copy(update={"owner": v.owner.strip()})),
    ]
    for target, more, fix in cases:
        returned: list[Any] = []

        def keep(value: Any, fix: Any = fix, returned: list[Any] = returned) -> Any:
            returned.append(fix(value))
            return returned[-1]

        text = json.dumps({**more, "owner": " Ada ", "balance_cents": 12.5})
        outcome = only(healjson.validate(text, target, contracts=[trimmed_rule(keep)]))
        value = outcome.value
        cents = value["balance_cents"] if isinstance(value, dict) else value.balance_cents
        assert (1250, True) == (cents, value is returned[-1]), target


def test_a_drop_inside_a_pydantic_dataclass_does_not_validate_it_again() -> None:
    """A nested drop in a pydantic dataclass copies it with the list replaced (its `__init__`
    would validate every field again): its dollars-to-cents field keeps its value."""

    @contract(fields=("sku",), on_fail="drop", items="lines")
    def no_samples(line: SkuLine) -> Violation | None:
        return Violation("samples are not invoiced") if line.sku == "SAMPLE" else None

    text = '{"total_cents": 1.5, "lines": [{"sku": "A"}, {"sku": "SAMPLE"}]}'
    outcome = only(healjson.validate(text, DataclassInvoice, contracts=[no_samples]))
    assert (150, ["A"]) == (outcome.value.total_cents, [x.sku for x in outcome.value.lines])


def test_a_drop_that_breaks_a_bound_is_still_asked_again() -> None:
    """The corrected value is still checked: a drop that leaves a list shorter than its
    `min_length` is asked again."""

    class Line(BaseModel):
        sku: str

    class Invoice(BaseModel):
        lines: list[Line] = Field(min_length=2)

    @contract(fields=("sku",), on_fail="drop", items="lines")
    def no_samples(line: Line) -> Violation | None:
        return Violation("samples are not invoiced") if line.sku == "SAMPLE" else None

    first = {"lines": [{"sku": "A"}, {"sku": "SAMPLE"}]}
    second = {"lines": [{"sku": "A"}, {"sku": "B"}]}
    model = ScriptedModel([json.dumps(first), json.dumps(second)])
    outcome = only(Healer(Invoice, contracts=[no_samples]).run(model, "q"))
    assert (2, ["A", "B"]) == (outcome.calls, [x.sku for x in outcome.value.lines])


# --- the property ---------------------------------------------------------------------------------


def tenfold(value: Any) -> int:
    """Not idempotent: every validation multiplies by ten."""
    return int(value) * 10


TENFOLD = Annotated[int, BeforeValidator(tenfold)]


@pinned(max_examples=30)
@given(
    answered=st.lists(st.integers(-1000, 1000), min_size=1, max_size=5),
    fixed=st.sets(st.integers(0, 4)),
    mode=st.sampled_from(["fix", "item_fix", "drop"]),
    qtys=st.lists(st.integers(-2, 3), min_size=1, max_size=5),
)
@example(answered=[7], fixed=set(), mode="drop", qtys=[1, 0])
@example(answered=[7, 8], fixed={0}, mode="fix", qtys=[1])
def test_untouched_fields_keep_their_values_exactly(
    answered: list[int], fixed: set[int], mode: str, qtys: list[int]
) -> None:
    """For a generated model of non-idempotent fields holding a list of lines, whatever a fix,
    an item fix or a drop corrects, every field and line it did not touch keeps the value the
    answer validated to, exactly."""
    fields: dict[str, Any] = {f"f{i}": (TENFOLD, ...) for i in range(len(answered))}
    line_type = create_model("GenLine", sku=(str, ...), qty=(TENFOLD, ...))
    fields["lines"] = (list[line_type], ...)  # type: ignore[valid-type]
    fields["flagged"] = (bool, False)
    model = create_model("Generated", **fields)
    lines = [{"sku": f"s{i}", "qty": q} for i, q in enumerate(qtys)]
    data = {**{f"f{i}": v for i, v in enumerate(answered)}, "lines": lines, "flagged": True}
    touched = {f"f{i}" for i in fixed if i < len(answered)}
    if mode == "fix":  # the fix sets the touched fields to 0 and clears the flag
        updates = dict.fromkeys(touched, 0) | {"flagged": False}
        rule = contract(
            fields=("flagged",), on_fail="fix", fix=lambda v: v.model_copy(update=updates)
        )(lambda v: "flagged" if v.flagged else None)
    elif mode == "item_fix":  # each line of qty <= 0 gets qty 1
        rule = contract(
            fields=("qty",),
            on_fail="fix",
            items="lines",
            fix=lambda line: line.model_copy(update={"qty": 1}),
        )(lambda line: "qty is positive" if line.qty <= 0 else None)
    else:  # each line of qty <= 0 is dropped
        rule = contract(fields=("qty",), on_fail="drop", items="lines")(
            lambda line: "qty is positive" if line.qty <= 0 else None
        )
    policy = HealPolicy(max_attempts=1)
    outcome = Healer(model, contracts=[rule], policy=policy).run(
        ScriptedModel([json.dumps(data)]), "q"
    )
    value = only(outcome).value
    for index, number in enumerate(answered):
        name = f"f{index}"
        expected = 0 if mode == "fix" and name in touched else number * 10
        assert expected == getattr(value, name), name
    expected_lines = [
        (f"s{i}", 1 if mode == "item_fix" and q <= 0 else q * 10)
        for i, q in enumerate(qtys)
        if not (mode == "drop" and q <= 0)
    ]
    assert expected_lines == [(line.sku, line.qty) for line in value.lines]


class Person(BaseModel):
    name: str
    age: int


class Lookalike(BaseModel):
    name: str
    age: int


class Household(BaseModel):
    head: Person


def untrimmed(value: Any) -> bool:
    """Whether the name a rule judges has surrounding spaces (a `Person` or a `Household`)."""
    person = value.head if isinstance(value, Household) else value
    return bool(person.name != person.name.strip())


def fix_rule(fix: Any) -> Any:
    """A whole-value rule on a name's surrounding spaces, with `fix`."""

    @contract(on_fail="fix", fix=fix)
    def trimmed(value: Any) -> Violation | None:
        return Violation("the name has no surrounding spaces") if untrimmed(value) else None

    return trimmed


def test_a_fix_returning_a_model_of_another_class_is_validated_as_data() -> None:
    """A fix returning a look-alike model of another class is validated once into the target's
    class, never accepted as the look-alike itself."""
    rule = fix_rule(lambda p: Lookalike(name=p.name.strip(), age=p.age))
    outcome = only(healjson.validate('{"name": " Ann", "age": 31}', Person, contracts=[rule]))
    assert type(outcome.value) is Person
    assert outcome.value == Person(name="Ann", age=31)


def test_a_nested_model_of_another_class_is_not_accepted() -> None:
    """A fix that puts a look-alike model in a field declaring another class is re-asked."""
    rule = fix_rule(lambda h: h.model_copy(update={"head": Lookalike(name="Ann", age=31)}))
    outcome = healjson.validate(
        '{"head": {"name": " Ann", "age": 31}}', Household, contracts=[rule]
    )
    assert isinstance(outcome, Degraded)


class Choice(BaseModel):
    x: int | str
    counts: dict[str, int] = {}


WRONG_TYPED: list[tuple[Any, str, Any]] = [
    (
        Person,
        '{"name": " Ann", "age": 31}',
        lambda p: p.model_copy(update={"name": "Ann", "age": True}),
    ),
    (Choice, '{"x": " s"}', lambda c: c.model_copy(update={"x": True})),
    (Choice, '{"x": " s"}', lambda c: c.model_copy(update={"x": "s", "counts": {"a": False}})),
    (dict[str, int], '{" a": 1}', lambda d: {"a": True}),
    (Person, '{"name": " Ann", "age": 31}', lambda p: Lookalike(name="Ann", age=True)),
]


def spaced(value: Any) -> bool:
    """Whether a value's name (or `x`, or a key) has surrounding spaces."""
    if isinstance(value, dict):
        return any(key != key.strip() for key in value)
    text = value.name if isinstance(value, Person) else value.x
    return isinstance(text, str) and text != text.strip()


@pinned(max_examples=30)
@given(case=st.sampled_from(WRONG_TYPED), extra=st.integers(0, 3))
def test_a_fix_of_wrong_types_is_never_healed_with_them(case: Any, extra: int) -> None:
    """A fix that sets a bool where an `int` is declared (in a model, a union, a dict), or
    returns a look-alike model holding one, never ends `Healed` with a value that fails a
    strict type check of its target."""
    target, text, fix = case

    @contract(on_fail="fix", fix=fix)
    def tidy(value: Any) -> Violation | None:
        return Violation("no surrounding spaces") if spaced(value) else None

    outcome = healjson.validate(text, target, contracts=[tidy])
    if isinstance(outcome, Healed):
        adapter = pydantic.TypeAdapter(target)
        adapter.validate_python(adapter.dump_python(outcome.value, round_trip=True), strict=True)
        assert not isinstance(outcome.value, Lookalike)
    else:
        assert isinstance(outcome, Degraded)


class SplitAlias(BaseModel):
    name: str = Field(validation_alias="in_name", serialization_alias="out_name")


def test_a_fix_is_accepted_when_serialization_and_validation_aliases_differ() -> None:
    """A valid fix of a field whose serialization alias differs from its validation alias is
    accepted (the check validates its dump by field name)."""

    @contract(on_fail="fix", fix=lambda a: a.model_copy(update={"name": a.name.strip()}))
    def trimmed(value: SplitAlias) -> Violation | None:
        return Violation("trimmed") if value.name != value.name.strip() else None

    outcome = only(healjson.validate('{"in_name": " a"}', SplitAlias, contracts=[trimmed]))
    assert outcome.value.name == "a"
    assert Flag.CONTRACT_FIXED in outcome.flags
