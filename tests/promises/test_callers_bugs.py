"""A caller's bug is the caller's: a function given to `wrap_callable` that returns the wrong
type, a contract passed alone or that cannot be called, a non-text `validate` input that is no
parsed JSON — each raises `TypeError` where it is passed, saying how to fix it. An answer
already parsed (a dict or a list) is a reasonable `validate` input: judged as data."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Flag, Healed, Healer, Violation, contract
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer
from sdk_calls import TLS

USER = [{"role": "user", "content": "Ann is 31."}]


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)


def completion(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


# --- wrap_callable: what the function returns -----------------------------------------------


def test_a_function_returning_text_is_a_type_error_saying_what_to_return() -> None:
    """`wrap_callable(fn)` where `fn` returns the answer's text (not a completion) raises
    `TypeError` naming what it must return, instead of degrading as the endpoint's failure."""

    def fn(**_: Any) -> str:
        return '{"name": "Ann", "age": 31}'

    with pytest.raises(TypeError, match="must return an OpenAI-shaped chat completion"):
        healjson.wrap_callable(fn)(model="m", messages=USER, response_model=Person)


def test_a_sync_function_returning_a_coroutine_says_to_make_it_async() -> None:
    """A plain `def` that returns a coroutine (an async client's call, not awaited) is the
    caller's bug: a `TypeError` that says to pass an `async def` function; the coroutine is
    closed (no "never awaited" warning)."""

    async def real(**_: Any) -> dict[str, Any]:
        return completion('{"name": "Ann", "age": 31}')

    def fn(**kwargs: Any) -> Any:
        return real(**kwargs)

    with pytest.raises(TypeError, match="async def"):
        healjson.wrap_callable(fn)(model="m", messages=USER, response_model=Person)


def test_a_function_returning_a_completion_still_heals() -> None:
    """The same function returning an OpenAI-shaped completion dict heals as before."""
    healed = healjson.wrap_callable(lambda **_: completion('{"name": "Ann", "age": 31}'))
    outcome = healed(model="m", messages=USER, response_model=Person)
    assert isinstance(outcome, Healed)


# --- contracts= --------------------------------------------------------------------------------


@contract(fields=("age",))
def adult(person: Person) -> Violation | None:
    """Only adults."""
    return None if person.age >= 18 else Violation("must be an adult")


def plain_rule(person: Person) -> None:
    return None


def three_args(person: Person, ctx: Any, extra: Any) -> None:
    return None


def keyword_only(*, person: Person) -> None:
    return None


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as started:
        yield started


def _healer(rules: Any, server: ScriptedServer) -> Any:
    return Healer(Person, contracts=rules)


def _validate(rules: Any, server: ScriptedServer) -> Any:
    return healjson.validate('{"name": "Ann", "age": 31}', Person, contracts=rules)


def _heal(rules: Any, server: ScriptedServer) -> Any:
    @healjson.heal(Person, contracts=rules)
    def ask(messages: Any) -> str:
        return '{"name": "Ann", "age": 31}'

    return ask(USER)


def _wrap(rules: Any, server: ScriptedServer) -> Any:
    http = openai.DefaultHttpxClient(verify=TLS)
    with openai.OpenAI(
        base_url=server.base_url, api_key="test", max_retries=0, http_client=http
    ) as sdk:
        return healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=Person, contracts=rules
        )


ENTRIES: dict[str, Callable[[Any, ScriptedServer], Any]] = {
    "Healer": _healer,
    "validate": _validate,
    "heal": _heal,
    "wrap": _wrap,
}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(
    ("rules", "says"),
    [
        (adult, "pass contracts=[adult]"),
        (plain_rule, "pass contracts=[plain_rule]"),
        ("adult", "takes a list of rules"),
        ({"adult": adult}, "takes a list of rules"),
    ],
    ids=["a-rule-alone", "a-function-alone", "a-string", "a-mapping"],
)
def test_contracts_that_are_not_a_list_of_rules_are_refused_when_passed(
    server: ScriptedServer, entry: str, rules: Any, says: str
) -> None:
    """`contracts=rule` (or a string, a mapping) is refused by Healer, validate, wrap's create
    and @heal with a `TypeError` that says how to pass the rule; no model is called."""
    asked = len(server.requests)
    with pytest.raises(TypeError, match=says.replace("[", r"\[").replace("]", r"\]")):
        ENTRIES[entry](rules, server)
    assert asked == len(server.requests)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("rule", [three_args, keyword_only], ids=["three", "keyword-only"])
def test_a_rule_whose_signature_cannot_be_called_is_refused_when_passed(
    server: ScriptedServer, entry: str, rule: Callable[..., Any]
) -> None:
    """A rule that cannot be called as `rule(value)` or `rule(value, ctx)` is refused where it
    is passed (not a `contract_error` at every run), naming its signature."""
    with pytest.raises(TypeError, match=r"cannot be called as .*its signature is"):
        ENTRIES[entry]([rule], server)


def test_at_contract_refuses_a_rule_it_cannot_call() -> None:
    """`@contract` on such a function raises where it is written."""
    with pytest.raises(TypeError, match="give any other parameter a default"):
        contract(three_args)


# --- validate: text, or an answer already parsed -------------------------------------------------


def test_validate_accepts_an_already_parsed_dict_as_data() -> None:
    """`validate({"name": ..., "age": ...}, Person)` heals the data, flagged `parsed_data`."""
    outcome = healjson.validate({"name": "Ann", "age": 31}, Person)
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    assert (Flag.PARSED_DATA,) == outcome.flags


def test_validate_judges_parsed_data_as_data_with_no_text_repair() -> None:
    """A string value that looks like broken JSON stays that string: parsed data is never
    read as text (the schema's alignments, here a key's case, still apply)."""
    outcome = healjson.validate({"Name": "{'a': 1,}", "age": 3}, Person)
    assert isinstance(outcome, Healed)
    assert "{'a': 1,}" == outcome.value.name
    assert Flag.SYNTAX_REPAIRED not in outcome.flags
    assert Flag.PARSED_DATA in outcome.flags


@pytest.mark.parametrize("given", [None, 31, 2.5, True, Person(name="Ann", age=31), object()])
def test_validate_refuses_what_is_neither_text_nor_parsed_json(given: Any) -> None:
    """Anything but text, bytes or parsed JSON (a dict or a list) is the caller's mistake."""
    with pytest.raises(TypeError, match="the reply's text"):
        healjson.validate(given, Person)


people = st.builds(
    lambda name, age: {"name": name, "age": age},
    st.text(max_size=20),
    st.integers(min_value=-5, max_value=200),
)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(st.lists(people, max_size=4))
def test_parsed_data_reaches_the_verdict_its_json_text_reaches(data: list[dict[str, Any]]) -> None:
    """A list given parsed reaches the outcome its JSON text reaches (value, reason), flagged
    `parsed_data` besides."""
    as_data = healjson.validate(data, list[Person])
    as_text = healjson.validate(json.dumps(data), list[Person])
    assert as_text.ok == as_data.ok
    if as_data.ok and as_text.ok:
        assert as_text.value == as_data.value
        assert (Flag.PARSED_DATA, *as_text.flags) == as_data.flags
    else:
        assert getattr(as_text, "reason", None) == getattr(as_data, "reason", None)


def test_healer_runs_keep_taking_text() -> None:
    """A model call's reply is unchanged by this: text, judged as text."""
    outcome = Healer(Person).run(ScriptedModel(['{"name": "Ann", "age": 31,}']), USER)
    assert isinstance(outcome, Healed)
    assert Flag.PARSED_DATA not in outcome.flags


def test_a_scripted_server_reply_is_text(server: ScriptedServer) -> None:
    """`wrap`'s replies are text too: no `parsed_data` flag on a call's outcome."""
    server.push(ScriptedReply(content='{"name": "Ann", "age": 31}'))
    outcome = _wrap([adult], server)
    assert isinstance(outcome, Healed)
    assert Flag.PARSED_DATA not in outcome.flags
