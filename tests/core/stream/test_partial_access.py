"""`Partial[T]`: reading a snapshot of an answer still arriving, field by field, item by item."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import pytest
from pydantic import BaseModel, Field

from healjson import Partial


class Line(BaseModel):
    sku: str
    qty: int


class Customer(BaseModel):
    name: str


class Order(BaseModel):
    customer: Optional[Customer] = None  # noqa: UP045 (typing.Union, read as well as `X | None`)
    backup: Customer | None = None
    either: Customer | Line | None = None
    lines: list[Line] = []
    marked: Annotated[list[Line], Field(min_length=0)] = []
    pair: tuple[Line, ...] = ()
    tags: list[str] = []
    ref: str = Field("", alias="Ref")


DATA: dict[str, Any] = {
    "customer": {"name": "Ada"},
    "backup": {"name": "Bob"},
    "either": {"name": "Cy"},
    "lines": [{"sku": "a", "qty": 1}, "not yet an object", {"sku": "b"}],
    "marked": [{"sku": "m", "qty": 2}],
    "pair": [{"sku": "p", "qty": 3}],
    "tags": ["x", "y"],
    "Ref": "R-1",
}


def test_a_model_field_of_an_optional_model_is_a_partial_of_that_model() -> None:
    """A snapshot's field typed as a model (optional or not) reads as a `Partial` of that model,
    and a union of models as the raw data."""
    snap = Partial(DATA, Order)
    assert isinstance(snap.customer, Partial)
    assert snap.customer.name == "Ada"
    assert snap.backup.name == "Bob"
    # a union of two models: which one is not known yet, so the raw data
    assert snap.either == {"name": "Cy"}


def test_list_items_of_a_model_are_partials_and_other_items_are_as_received() -> None:
    """A snapshot's list items of a model read as `Partial`s (through `Annotated` and tuples
    too), and other items as received."""
    snap = Partial(DATA, Order)
    first, raw, cut = snap.lines
    assert isinstance(first, Partial)
    assert (first.sku, first.qty) == ("a", 1)
    assert raw == "not yet an object"
    assert (cut.sku, cut.qty) == ("b", None)  # not arrived yet: None
    assert snap.marked[0].qty == 2  # through Annotated
    assert snap.pair[0].sku == "p"  # a tuple[X, ...] field
    assert snap.tags == ["x", "y"]


def test_an_aliased_field_is_read_by_its_name() -> None:
    """A snapshot reads an aliased field by its Python name."""
    assert Partial(DATA, Order).ref == "R-1"


def test_a_name_the_model_does_not_have_is_an_attribute_error() -> None:
    """Reading a name the model does not have, or a private name, from a snapshot raises
    `AttributeError`."""
    snap = Partial(DATA, Order)
    with pytest.raises(AttributeError, match="'Order' has no field 'nope'"):
        _ = snap.nope
    with pytest.raises(AttributeError):
        _ = snap._private


def test_before_an_object_arrives_every_field_reads_none() -> None:
    """Before an object arrives (nothing, an empty string, a list), every field of a snapshot
    reads `None`."""
    for data in (None, "", [1]):
        snap = Partial(data, Order)
        assert snap.customer is None
        assert snap.lines is None


def test_a_partial_without_a_model_reads_keys_as_they_came() -> None:
    """A snapshot without a model reads keys by attribute or index as they came, `None` for those
    not arrived."""
    snap: Partial[Any] = Partial({"a": 1})
    assert snap.a == 1
    assert snap.b is None
    assert snap["a"] == 1
    assert snap["b"] is None
    assert repr(snap) == "Partial[Any](partial: {'a': 1})"


def test_a_list_snapshot_is_indexed_and_iterated_as_its_items() -> None:
    """A list snapshot is indexed and iterated as its items, `None` past the ones arrived."""
    snap: Partial[Any] = Partial([{"sku": "a", "qty": 1}, {"sku": "b"}], list[Line], complete=True)
    assert len(snap) == 2
    assert snap[0].sku == "a"
    assert snap[1].qty is None
    assert snap[5] is None  # not arrived
    assert [item.sku for item in snap] == ["a", "b"]
    assert repr(snap).startswith("Partial[list](complete: ")


def test_a_scalar_snapshot_has_no_items() -> None:
    """A scalar snapshot has no items, and a string still arriving has its length so far."""
    snap: Partial[Any] = Partial(3)
    assert snap[0] is None
    assert list(snap) == []
    assert len(snap) == 0
    assert len(Partial("abc")) == 3  # a string still arriving: its length so far


def test_snapshots_are_equal_by_their_data_and_unhashable() -> None:
    """Snapshots are equal by their data alone, never equal to a plain dict, and unhashable."""
    assert Partial({"a": 1}, Order) == Partial({"a": 1}, Customer)
    assert Partial({"a": 1}) != Partial({"a": 2})
    assert Partial({"a": 1}) != {"a": 1}  # a view is no dict
    with pytest.raises(TypeError):
        hash(Partial({}))


def test_to_dict_is_a_deep_copy_the_caller_may_change() -> None:
    """A snapshot's `to_dict()` is a deep copy: changing it leaves the stream's data as it was."""
    data = {"lines": [{"sku": "a"}]}
    copy = Partial(data, Order).to_dict()
    copy["lines"][0]["sku"] = "changed"
    assert data == {"lines": [{"sku": "a"}]}
