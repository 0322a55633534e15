"""An outcome's record keeps what it recorded: a healed value reads back equal through
`outcome_from_dict(data, T)` (aliases, computed fields, dataclasses, dates, UUIDs, decimals), and
a diagnostic's missing value stays apart from a value that is the text `<missing>`."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import uuid
from typing import Any, Literal

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, computed_field

import healjson
from healjson import outcome_from_dict
from pinned import pinned


class Person(BaseModel):
    user_name: str = Field(alias="userName")
    nick: str = Field(default="anon", alias="nickName")
    born: datetime.date
    id: uuid.UUID
    price: decimal.Decimal


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def double(self) -> int:
        return self.a * 2


@dataclasses.dataclass
class Point:
    x: int
    y: float


class Status(BaseModel):
    status: Literal["open", "closed"]


# plain words: a credential-shaped string is redacted in every record, by design
_WORDS = st.text(alphabet="abcdefghij KLMNO", min_size=1, max_size=12)
_PRICES = st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False)
_PEOPLE = st.fixed_dictionaries(
    {
        "userName": _WORDS,
        "born": st.dates().map(str),
        "id": st.uuids().map(str),
        "price": _PRICES.map(str),
    },
    optional={"nickName": _WORDS},
)
_CASES = st.one_of(
    st.tuples(st.just(Person), _PEOPLE),
    st.tuples(st.just(list[Person]), st.lists(_PEOPLE, max_size=3)),
    st.tuples(st.just(Closed), st.fixed_dictionaries({"a": st.integers(-(10**6), 10**6)})),
    st.tuples(
        st.just(Point),
        st.fixed_dictionaries(
            {"x": st.integers(-100, 100), "y": st.floats(allow_nan=False, allow_infinity=False)}
        ),
    ),
    st.tuples(st.just(list[datetime.date]), st.lists(st.dates().map(str), max_size=4)),
    st.tuples(
        st.just(dict[str, uuid.UUID]), st.dictionaries(_WORDS, st.uuids().map(str), max_size=3)
    ),
)


@pinned(max_examples=60)
@given(_CASES)
def test_a_healed_value_reads_back_equal_through_its_record(case: tuple[Any, Any]) -> None:
    """`to_dict` → JSON → `outcome_from_dict(data, T)` gives a value equal to the healed one,
    for any value of a model with aliases, a computed field under `extra="forbid"`, a
    dataclass, dates, UUIDs and decimals."""
    target, data = case
    outcome = healjson.validate(json.dumps(data), target)
    assert outcome.ok, outcome
    record = json.loads(json.dumps(outcome.to_dict()))
    assert outcome_from_dict(record, target).value == outcome.value


def test_the_markdown_trace_shows_the_value_as_its_record_does() -> None:
    """The trace shows a model's value by its aliases, as the record keeps it."""
    data = {"userName": "bob", "born": "2026-05-01", "id": str(uuid.UUID(int=7)), "price": "1.50"}
    text = json.dumps(data)
    outcome = healjson.validate(text, Person)
    assert outcome.ok
    assert '"userName": "bob"' in outcome.trace()
    assert outcome.to_dict()["value"]["userName"] == "bob"


def test_a_value_that_is_the_missing_marker_is_not_read_as_missing() -> None:
    """A field answered with the text `<missing>` keeps that value through the record, and a
    field left out stays missing."""
    given_text = healjson.validate('{"status": "<missing>"}', Status)
    left_out = healjson.validate("{}", Status)
    assert not given_text.ok
    assert not left_out.ok
    for outcome, missing in ((given_text, False), (left_out, True)):
        rebuilt = outcome_from_dict(json.loads(json.dumps(outcome.to_dict())))
        assert not rebuilt.ok
        assert rebuilt.errors[0].is_missing is missing
        assert rebuilt.errors[0] == outcome.errors[0]


def test_an_older_record_without_the_missing_key_reads_the_marker_as_missing() -> None:
    """A record written before the `missing` key reads the marker as the absence it meant."""
    data = healjson.validate("{}", Status).to_dict()
    del data["errors"][0]["missing"]
    assert outcome_from_dict(data).errors[0].is_missing


class Login(BaseModel):
    user: str
    key: str
    api_key: str
    db_password: str


def test_a_string_under_a_credential_field_is_redacted_in_every_rendering_alike() -> None:
    """`api_key` and `db_password` are `[redacted]` in `to_dict`, the JSON trace and the
    Markdown trace alike; `key` (a caller's own word) and the value itself are kept."""
    data = {"user": "ada", "key": "color", "api_key": "abc123def456", "db_password": "hunter22"}
    outcome = healjson.validate(json.dumps(data), Login)
    assert outcome.ok
    assert data == outcome.value.model_dump()
    record = outcome.to_dict()["value"]
    assert {**data, "api_key": "[redacted]", "db_password": "[redacted]"} == record
    assert record == json.loads(outcome.trace("json"))["value"]
    markdown = outcome.trace()
    assert "abc123def456" not in markdown
    assert "hunter22" not in markdown
    assert '"key": "color"' in markdown
