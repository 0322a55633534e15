"""What a rule may name is checked alike wherever a healer is built (`Healer`, `validate`): a
model's fields, aliases, computed fields and properties; a JSON Schema object's properties, or
any key where its `additionalProperties` allows other keys."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field, computed_field

import healjson
from healjson import Degraded, Healer, Violation, contract


class Order(BaseModel):
    qty: int
    unit_price: int = Field(alias="unitPrice")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        return self.qty * self.unit_price

    @property
    def bulk(self) -> bool:
        return self.qty >= 100


def _rule(*fields: str, items: str | None = None) -> Any:
    @contract(fields=fields, items=items)
    def rule(value: Any) -> Violation | None:
        return None

    return rule


def _build(build: str, rules: list[Any]) -> Any:
    """A healer of `Order` with `rules` (`Healer`), or one answer judged with them."""
    if build == "healer":
        return Healer(Order, contracts=rules)
    return healjson.validate('{"qty": 1, "unitPrice": 2}', Order, contracts=rules)


@pytest.mark.parametrize("build", ["healer", "validate"])
def test_a_rule_naming_an_unknown_field_is_refused_by_every_entry(build: str) -> None:
    """A whole-value rule naming no field, property or alias raises `ValueError` at once."""
    rules = [_rule("nope")]
    with pytest.raises(ValueError, match="names field 'nope'"):
        _build(build, rules)


@pytest.mark.parametrize("name", ["qty", "unitPrice", "unit_price", "total", "bulk"])
def test_fields_aliases_computed_fields_and_properties_may_be_named(name: str) -> None:
    """A rule may name a field, its alias, a computed field or a property, on every entry."""
    Healer(Order, contracts=[_rule(name)])
    outcome = healjson.validate('{"qty": 1, "unitPrice": 2}', Order, contracts=[_rule(name)])
    assert outcome.ok


OPEN = {"type": "object", "properties": {"n": {"type": "integer"}}}


@pytest.mark.parametrize("extra", [True, {"type": "integer"}])
def test_an_open_schema_objects_other_keys_may_be_named_and_are_judged(extra: Any) -> None:
    """Where `additionalProperties` allows other keys, a rule over one of them is built (whole
    value and items alike) and judges the key the answer holds."""

    @contract(fields=("score",))
    def score_positive(value: Any) -> Violation | None:
        return None if value.get("score", 1) > 0 else Violation("score must be positive")

    schema = {**OPEN, "additionalProperties": extra}
    rows = {"type": "object", "properties": {"rows": {"type": "array", "items": schema}}}
    Healer(rows, contracts=[_rule("score", items="rows")])
    outcome = healjson.validate('{"n": 1, "score": -3}', schema, contracts=[score_positive])
    assert isinstance(outcome, Degraded)
    assert "score must be positive" in outcome.errors[0].constraint


def test_a_closed_schema_objects_unknown_key_is_refused() -> None:
    """Without `additionalProperties` allowing them, a key the properties lack is a mistake."""
    with pytest.raises(ValueError, match="names field 'score'"):
        Healer(OPEN, contracts=[_rule("score")])
