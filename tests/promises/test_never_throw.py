"""Property tests for the never-throw guarantee of `parse`, `validate` and `Healer.run`/`arun`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from typing import Any, Literal

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

import healjson
from healjson import (
    Degraded,
    Flag,
    Healed,
    Healer,
    HealPolicy,
    ParseResult,
    Reason,
    Reply,
    Source,
    Usage,
    Violation,
)
from healjson.testing import ScriptedModel
from pinned import pinned


class Customer(BaseModel):
    name: str
    email: str | None = None


class Ticket(BaseModel):
    id: int
    category: Literal["refund", "billing", "other"]
    summary: str
    urgent: bool = False
    tags: list[str] = []
    score: float | None = None
    customer: Customer | None = None


class CustomError(ConnectionError):
    """A transport failure of a type no SDK knows about (a gateway's own error class)."""


class FussyError(OSError):
    """A transport error whose message is itself hostile (long, multi-line, braces, quotes)."""

    def __init__(self, text: str) -> None:
        super().__init__("{'\"}\n```" + text * 3)


class UnprintableError(ConnectionError):
    """A transport error whose `__str__` itself raises."""

    def __str__(self) -> str:
        raise RuntimeError("no message for you")


# what a provider or the transport raises (other exceptions are bugs and propagate)
EXCEPTION_TYPES: tuple[type[Exception], ...] = (
    ConnectionResetError,
    TimeoutError,
    OSError,
    BrokenPipeError,
    CustomError,
    FussyError,
    UnprintableError,
)

# --- strategies ----------------------------------------------------------------------------------

# Substrings that matter to the scanner and the repairer, mixed into generated strings.
TRICKY = [
    "```",
    "~~~",
    "```json\n",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "\\",
    "\n",
    ",",
    ":",
    "\u201c",
    "\u201d",
    "\u2018",
    "\u2019",
    "//",
    "/*",
    "*/",
    "#",
    "True",
    "None",
    "undefined",
    "null",
]
# Extra debris for `_insert_noise`: comments, a NUL and a lone surrogate.
NOISE = ["// note\n", "/* c */", "# c\n", "\n", "\x00", "\ud800"]
PROSE = [
    "Here is the JSON you asked for:",
    "Sure! Here it is.",
    "Result:",
    "Let me know if you need anything else.",
    "I hope this helps.",
    "Here's the ticket (note: `summary` is short):",
]
FINISH_REASONS = st.one_of(
    st.sampled_from([None, "stop", "length", "content_filter", "tool_calls"]), st.text(max_size=12)
)

tricky_text = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(TRICKY)), max_size=6).map(
    "".join
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | tricky_text,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(tricky_text, children, max_size=4)
    ),
    max_leaves=12,
)
tickets = st.builds(
    Ticket,
    id=st.integers(),
    category=st.sampled_from(["refund", "billing", "other"]),
    summary=tricky_text,
    urgent=st.booleans(),
    tags=st.lists(tricky_text, max_size=3),
    score=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    customer=st.none() | st.builds(Customer, name=tricky_text, email=st.none() | tricky_text),
)


def _fence(draw: st.DrawFn, text: str) -> str:
    opener = draw(st.sampled_from(["```json\n", "```\n", "~~~\n", "```python\n", "```JSON "]))
    closer = draw(st.sampled_from(["\n```", "\n~~~", "", "```"]))
    return opener + text + closer


def _prose(draw: st.DrawFn, text: str) -> str:
    before = draw(st.sampled_from(["", *PROSE]) | st.text(max_size=20))
    after = draw(st.sampled_from(["", *PROSE]) | st.text(max_size=20))
    return f"{before}\n{text}\n{after}"


def _trailing_comma(draw: st.DrawFn, text: str) -> str:
    closers = [i for i, c in enumerate(text) if c in "]}"]
    if not closers:
        return text + ","
    at = draw(st.sampled_from(closers))
    return text[:at] + "," + text[at:]


def _truncate(draw: st.DrawFn, text: str) -> str:
    return text[: draw(st.integers(0, len(text)))]


def _swap_quotes(draw: st.DrawFn, text: str) -> str:
    quotes = [i for i, c in enumerate(text) if c == '"']
    if not quotes:
        return text
    chosen = draw(st.sets(st.sampled_from(quotes), max_size=6))
    out = list(text)
    for i in chosen:
        out[i] = draw(st.sampled_from(["'", "\u201c", "\u201d", "\u2018", "\u2019", "`"]))
    return "".join(out)


def _insert_noise(draw: st.DrawFn, text: str) -> str:
    at = draw(st.integers(0, len(text)))
    noise = draw(st.sampled_from([*NOISE, *TRICKY]))
    return text[:at] + noise + text[at:]


def _python_literals(draw: st.DrawFn, text: str) -> str:
    return text.replace("true", "True").replace("false", "False").replace("null", "None")


CORRUPTIONS: list[Callable[[st.DrawFn, str], str]] = [
    _fence,
    _prose,
    _trailing_comma,
    _truncate,
    _swap_quotes,
    _insert_noise,
    _python_literals,
]


@st.composite
def jsonish_texts(draw: st.DrawFn, values: st.SearchStrategy[Any] = json_values) -> str:
    """JSON text rendered from a value, then corrupted a few random ways."""
    value = draw(values)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    text = json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.none() | st.integers(0, 2)),
    )
    for corruption in draw(st.lists(st.sampled_from(CORRUPTIONS), max_size=4)):
        text = corruption(draw, text)
    return text


any_texts = st.one_of(
    st.text(),
    st.text(st.characters(exclude_categories=())),  # lone surrogates included
    jsonish_texts(),
    jsonish_texts(tickets),
)


def _raiser(exc: Exception) -> Callable[..., Any]:
    def call(messages: Any, params: Any) -> Any:
        raise exc

    return call


def _answer(text: str) -> Callable[..., Any]:
    def call(messages: Any, params: Any) -> Any:
        return text

    return call


exceptions = st.builds(
    lambda cls, text: cls(text), st.sampled_from(EXCEPTION_TYPES), st.text(max_size=20)
)
replies = st.builds(
    Reply,
    content=st.none() | any_texts,
    finish_reason=FINISH_REASONS,
    refusal=st.none() | st.text(max_size=20),
    usage=st.none() | st.builds(Usage, st.integers(0, 10**6), st.integers(0, 10**6)),
    model=st.none() | st.text(max_size=10),
)
script_items = st.one_of(
    any_texts,
    tickets.map(lambda t: t.model_dump_json()),
    replies,
    exceptions,
    exceptions.map(_raiser),
    any_texts.map(_answer),
)
policies = st.builds(
    HealPolicy,
    max_attempts=st.integers(1, 4),
    token_budget=st.none() | st.integers(1, 100_000),
    on_truncation=st.sampled_from(["compress", "raise_max_tokens", "both", "degrade"]),
    on_refusal=st.sampled_from(["degrade", "retry"]),
    escalate_model=st.none() | st.just("bigger-model"),
    history=st.sampled_from(["compact", "none"]),
    example_from_repair=st.integers(1, 3),
)
call_params = st.fixed_dictionaries(
    {}, optional={"max_tokens": st.integers(1, 4096), "temperature": st.floats(0, 2)}
)


def _passes(value: Any) -> None:
    return None


def _violates(value: Any) -> Violation:
    return Violation("summary must mention the order number", fields=("summary",))


def _raising_contract(exc: Exception) -> Callable[..., Any]:
    def contract(value: Any, ctx: Any) -> Any:
        raise exc

    return contract


def _async_raising_contract(exc: Exception) -> Callable[..., Any]:
    async def contract(value: Any, ctx: Any) -> Any:
        raise exc

    return contract


def _half_way_contract(exc: Exception) -> Callable[..., Any]:
    def contract(value: Any) -> Any:
        yield Violation("first problem")
        raise exc

    return contract


raising_contracts = st.one_of(
    exceptions.map(_raising_contract),
    exceptions.map(_async_raising_contract),
    exceptions.map(_half_way_contract),
)
contract_sets = st.lists(
    st.one_of(st.sampled_from([_passes, _violates]), raising_contracts), max_size=3
)


# --- helpers -------------------------------------------------------------------------------------


def _check_parse_result(result: Any) -> None:
    assert isinstance(result, ParseResult)
    assert (result.error is None) == result.ok
    assert (result.error is not None and result.error.source == Source.TRUNCATION) == (
        result.truncated
    )
    if result.truncated:
        assert Flag.TRUNCATED in result.flags
    if result.error is not None:
        assert result.error.source in set(Source)
        if result.error.source in (Source.SYNTAX, Source.EMPTY):
            assert None is result.value


def _complete_valid(text: str, adapter: TypeAdapter[Any]) -> bool:
    try:
        adapter.validate_json(text.strip())
    except Exception:
        return False
    return True


def _check_run(outcome: Any, model: ScriptedModel, policy: HealPolicy) -> None:
    assert isinstance(outcome, Healed | Degraded)
    # no call only when the first one would pass the token budget
    unsent = isinstance(outcome, Degraded) and outcome.reason is Reason.BUDGET_EXCEEDED
    assert (0 if unsent else 1) <= len(model.calls) <= policy.max_attempts
    assert len(model.calls) == outcome.calls


# --- parse ---------------------------------------------------------------------------------------


@pinned()
@given(text=any_texts, finish_reason=FINISH_REASONS)
def test_parse_never_raises_and_ok_agrees_with_error(text: str, finish_reason: str | None) -> None:
    """`parse` returns a self-consistent ParseResult for any text and finish reason."""
    _check_parse_result(healjson.parse(text, finish_reason=finish_reason))


@pinned()
@given(text=any_texts, finish_reason=FINISH_REASONS)
def test_parse_with_a_schema_never_raises(text: str, finish_reason: str | None) -> None:
    """`parse` against a small pydantic model returns a self-consistent ParseResult."""
    _check_parse_result(healjson.parse(text, Ticket, finish_reason=finish_reason))


@pinned()
@given(text=any_texts, finish_reason=FINISH_REASONS, schema=st.sampled_from([None, Ticket, str]))
def test_parse_never_falls_back_to_its_internal_crash_diagnostic(
    text: str, finish_reason: str | None, schema: Any
) -> None:
    """No input makes L1 itself crash (the catch-all turns such a crash into "could not be
    parsed (SomeError: ...)", which hides a bug)."""
    result = healjson.parse(text, schema, finish_reason=finish_reason)
    constraint = "" if result.error is None else result.error.constraint
    assert not constraint.startswith("could not be parsed ("), constraint


# --- validate ------------------------------------------------------------------------------------


@pinned()
@given(text=any_texts, finish_reason=FINISH_REASONS)
def test_validate_never_raises(text: str, finish_reason: str | None) -> None:
    """`validate` returns Healed (holding a model instance) or Degraded for any text."""
    outcome = healjson.validate(text, Ticket, finish_reason=finish_reason)
    assert isinstance(outcome, Healed | Degraded)
    if isinstance(outcome, Healed):
        assert isinstance(outcome.value, Ticket)
    else:
        assert outcome.reason in set(Reason)


@pinned()
@given(text=any_texts, finish_reason=FINISH_REASONS)
def test_validate_degraded_always_says_why(text: str, finish_reason: str | None) -> None:
    """A Degraded from `validate` carries at least one diagnostic to repair from."""
    outcome = healjson.validate(text, Ticket, finish_reason=finish_reason)
    if isinstance(outcome, Degraded):
        assert outcome.errors, outcome


@st.composite
def cut_replies(draw: st.DrawFn) -> tuple[Any, str, str, str]:
    """(target, JSON text, that text cut strictly inside it, the reply: prefix + cut text)."""
    target, values = draw(
        st.sampled_from(
            [
                (Ticket, tickets),
                (list[int], st.lists(st.integers(), min_size=1)),
                (int, st.integers()),
                (dict[str, str], st.dictionaries(tricky_text, tricky_text, min_size=1)),
            ]
        )
    )
    adapter = TypeAdapter(target)
    text = adapter.dump_json(draw(values), indent=draw(st.none() | st.just(2))).decode()
    assume(len(text) >= 2)
    cut = text[: draw(st.integers(1, len(text) - 1))]
    prefix = draw(st.sampled_from(["", "Here is the JSON:\n", "```json\n", "Sure!\n~~~\n"]))
    return target, text, cut, prefix + cut


@pinned()
@given(case=cut_replies())
@example(case=(int, "123", "12", "12"))  # a bare number at the cut was healed
@example(case=(int, "-123", "-12", "Here is the JSON:\n-12"))
@example(case=(int, "10", "1", "```json\n1"))  # a fence left open at the cut, a number in it
def test_cut_reply_with_length_finish_reason_is_never_healed(
    case: tuple[Any, str, str, str],
) -> None:
    """JSON cut strictly inside itself at the token limit is never Healed, unless the cut text
    is itself a complete valid value that ends with its closing quote or bracket: a number or
    literal touching the cut may itself be cut (`12` of `123`), so it is never a value."""
    target, _, cut, reply = case
    outcome = healjson.validate(reply, target, finish_reason="length")
    if isinstance(outcome, Healed):
        assert _complete_valid(cut, TypeAdapter(target)), (reply, outcome.value)
        assert cut.rstrip()[-1:] in ('"', "}", "]"), (reply, outcome.value)


@pinned()
@given(case=cut_replies())
def test_cut_object_with_length_finish_reason_degrades_as_truncated(
    case: tuple[Any, str, str, str],
) -> None:
    """A cut object or array at the token limit degrades with `token_truncated`."""
    target, text, _, reply = case
    assume(text[0] in "{[")
    outcome = healjson.validate(reply, target, finish_reason="length")
    assert isinstance(outcome, Degraded), reply
    assert Reason.TOKEN_TRUNCATED == outcome.reason


@st.composite
def wrapped_tickets(draw: st.DrawFn) -> tuple[Ticket, str]:
    """A valid Ticket and its JSON, optionally inside a fence and/or prose."""
    ticket = draw(tickets)
    text = ticket.model_dump_json(indent=draw(st.none() | st.integers(0, 2)))
    if draw(st.booleans()):
        fence = draw(st.sampled_from(["```json", "```", "~~~", "~~~json"]))
        text = f"{fence}\n{text}\n{fence[:3]}"
    if draw(st.booleans()):
        before = draw(st.sampled_from(["", *PROSE]))
        after = draw(st.sampled_from(["", *PROSE]))
        text = f"{before}\n{text}\n{after}"
    return ticket, text


@pinned()
@given(case=wrapped_tickets(), finish_reason=st.sampled_from([None, "stop", "length"]))
def test_valid_instance_round_trips_through_validate(
    case: tuple[Ticket, str], finish_reason: str | None
) -> None:
    """Any valid Ticket rendered as JSON (fenced or in prose) validates back to an equal value."""
    ticket, text = case
    outcome = healjson.validate(text, Ticket, finish_reason=finish_reason)
    assert isinstance(outcome, Healed), (text, outcome)
    assert ticket == outcome.value


@pinned()
@given(case=wrapped_tickets())
def test_valid_instance_round_trips_through_untyped_parse(case: tuple[Ticket, str]) -> None:
    """Without a schema, the JSON of a valid Ticket (fenced or in prose) parses to its data."""
    ticket, text = case
    result = healjson.parse(text)
    assert result.ok, (text, result)
    assert ticket.model_dump(mode="json") == result.value


# --- contracts -----------------------------------------------------------------------------------


@given(ticket=tickets, contract=raising_contracts, extra=st.lists(st.just(_passes), max_size=2))
def test_raising_contract_never_escapes_validate(
    ticket: Ticket, contract: Callable[..., Any], extra: list[Callable[..., Any]]
) -> None:
    """A contract raising any exception turns into a `contract_error` degradation."""
    outcome = healjson.validate(ticket.model_dump_json(), Ticket, contracts=[*extra, contract])
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert Source.CONTRACT_ERROR in {d.source for d in outcome.errors}


@given(ticket=tickets, contract=raising_contracts)
def test_raising_contract_never_escapes_run(ticket: Ticket, contract: Callable[..., Any]) -> None:
    """In `Healer.run`, a raising contract degrades at once with `contract_error`."""
    model = ScriptedModel([ticket.model_dump_json()] * 3)
    outcome = Healer(Ticket, contracts=[contract]).run(model, "Classify this ticket.")
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert 1 == len(model.calls)
    assert len(model.calls) == outcome.calls


@given(ticket=tickets, contract=raising_contracts)
def test_raising_contract_never_escapes_arun(ticket: Ticket, contract: Callable[..., Any]) -> None:
    """In `Healer.arun`, a raising contract (sync or async) degrades with `contract_error`."""
    model = ScriptedModel([ticket.model_dump_json()] * 3)
    healer = Healer(Ticket, contracts=[contract])
    outcome = asyncio.run(healer.arun(model.acall, "Classify this ticket."))
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    assert len(model.calls) == outcome.calls


# --- Healer.run / arun ---------------------------------------------------------------------------


@given(
    script=st.lists(script_items, max_size=5),
    policy=policies,
    contracts=contract_sets,
    params=call_params,
)
def test_run_never_raises_and_counts_calls(
    script: list[Any], policy: HealPolicy, contracts: list[Any], params: dict[str, Any]
) -> None:
    """`Healer.run` returns Healed or Degraded after 1..max_attempts calls, all counted (none
    when the first call would pass the token budget)."""
    model = ScriptedModel(script)
    healer = Healer(Ticket, contracts=contracts, policy=policy)
    outcome = healer.run(model, "Classify this ticket.", **params)
    _check_run(outcome, model, policy)


@given(
    script=st.lists(script_items, max_size=5),
    policy=policies,
    contracts=contract_sets,
    params=call_params,
    use_acall=st.booleans(),
)
def test_arun_never_raises_and_counts_calls(
    script: list[Any],
    policy: HealPolicy,
    contracts: list[Any],
    params: dict[str, Any],
    use_acall: bool,
) -> None:
    """`Healer.arun` returns Healed or Degraded after 1..max_attempts calls, all counted (none
    when the first call would pass the token budget)."""
    model = ScriptedModel(script)
    healer = Healer(Ticket, contracts=contracts, policy=policy)
    call = model.acall if use_acall else model
    outcome = asyncio.run(healer.arun(call, "Classify this ticket.", **params))
    _check_run(outcome, model, policy)


@given(
    script=st.lists(script_items, max_size=5),
    policy=policies,
    fallback=st.sampled_from(["default", None]) | exceptions.map(_raiser),
)
def test_run_with_a_fallback_factory_never_raises(
    script: list[Any], policy: HealPolicy, fallback: Any
) -> None:
    """A fallback factory that raises is recorded on the Degraded, never re-raised."""
    model = ScriptedModel(script)
    outcome = Healer(Ticket, policy=policy, fallback=fallback).run(model, "Classify this ticket.")
    _check_run(outcome, model, policy)


@given(exc=exceptions, policy=policies)
def test_first_call_raising_degrades_after_one_call(exc: Exception, policy: HealPolicy) -> None:
    """A call that raises ends the run at once: one call, no retry, a transport reason (under
    a token budget the first call fits)."""
    model = ScriptedModel([exc, '{"id": 1, "category": "refund", "summary": "s"}'])
    policy = dataclasses.replace(policy, token_budget=None)
    outcome = Healer(Ticket, policy=policy).run(model, "Classify this ticket.")
    assert isinstance(outcome, Degraded)
    assert outcome.reason in {Reason.API_ERROR, Reason.TIMEOUT}
    assert 1 == len(model.calls) == outcome.calls


# --- hostile exception objects -------------------------------------------------------------------


def test_run_survives_a_call_exception_that_cannot_be_printed() -> None:
    """A call raising an exception whose `str()` fails still ends in Degraded."""
    model = ScriptedModel([UnprintableError()])
    outcome = Healer(Ticket).run(model, "Classify this ticket.")
    assert isinstance(outcome, Degraded)
    assert 1 == outcome.calls


def test_validate_survives_a_contract_exception_that_cannot_be_printed() -> None:
    """A contract raising an exception whose `str()` fails still ends in Degraded."""
    text = '{"id": 1, "category": "refund", "summary": "s"}'
    contract = _raising_contract(UnprintableError())
    outcome = healjson.validate(text, Ticket, contracts=[contract])
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason


# --- malformed violations and unprintable values -------------------------------------------------


class _Unprintable:
    """A value whose `__repr__` and `__str__` raise."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    def __str__(self) -> str:
        raise RuntimeError("no str")


def _cyclic() -> list[Any]:
    x: list[Any] = []
    x.append(x)
    return x


def _nested(depth: int) -> list[Any]:
    node: list[Any] = []
    for _ in range(depth):
        node = [node]
    return node


HOSTILE_VALUE_FACTORIES: list[Callable[[], Any]] = [
    _Unprintable,
    _cyclic,
    lambda: 10**100000,  # too long for str() in Python 3.11+
    lambda: {_Unprintable(): [10**100000, _cyclic()]},
    lambda: _nested(3000),
]
hostile_values = st.sampled_from(HOSTILE_VALUE_FACTORIES).map(lambda make: make())


def _bent(**attributes: Any) -> Violation:
    """A Violation altered past its constructor's checks."""
    violation = Violation("summary must mention the order number", fields=("summary",))
    for name, value in attributes.items():
        object.__setattr__(violation, name, value)
    return violation


malformed_violations = st.one_of(
    st.builds(lambda v: _bent(path=v), st.integers() | st.builds(_Unprintable)),
    st.builds(lambda v: _bent(fields=v), st.sampled_from([(1,), "summary", 5, None])),
    st.builds(lambda v: _bent(constraint=v), st.integers() | st.none() | st.binary()),
    st.builds(lambda v: _bent(prescription=v), st.integers() | st.lists(st.text())),
)


def _returning(make: Callable[[], Any], is_async: bool) -> Callable[..., Any]:
    if is_async:

        async def async_rule(value: Any) -> Any:
            return make()

        return async_rule

    def rule(value: Any) -> Any:
        return make()

    return rule


hostile_contracts = st.builds(
    _returning,
    st.one_of(
        malformed_violations.map(lambda v: lambda: v),
        hostile_values.map(lambda h: lambda: Violation("summary is wrong", value=h)),
        hostile_values.map(lambda h: lambda: [Violation("a"), h]),
    ),
    st.booleans(),
)


def _check_renders(outcome: Any) -> None:
    assert isinstance(outcome.trace(), str)
    assert isinstance(outcome.trace("json"), str)
    assert isinstance(json.dumps(outcome.to_dict()), str)


@given(
    script=st.lists(script_items, max_size=4),
    policy=policies,
    contracts=st.lists(
        st.one_of(st.sampled_from([_passes, _violates]), hostile_contracts), max_size=3
    ),
    fallback=st.none() | hostile_values,
    use_arun=st.booleans(),
)
def test_run_with_malformed_violations_and_unprintable_values_never_raises(
    script: list[Any], policy: HealPolicy, contracts: list[Any], fallback: Any, use_arun: bool
) -> None:
    """Malformed violations and unprintable, cyclic, huge or deep values from contracts and
    fallbacks never escape `run` or `arun`, and the outcome always renders."""
    model = ScriptedModel(script)
    healer = Healer(Ticket, contracts=contracts, policy=policy, fallback=fallback)

    if use_arun:
        outcome = asyncio.run(healer.arun(model.acall, "Classify this ticket."))
    else:
        outcome = healer.run(model, "Classify this ticket.")

    _check_run(outcome, model, policy)
    _check_renders(outcome)


@given(ticket=tickets, violation=malformed_violations)
def test_a_malformed_violation_always_degrades_validate_with_contract_error(
    ticket: Ticket, violation: Violation
) -> None:
    """`validate` turns every malformed Violation into a `contract_error` degradation."""
    outcome = healjson.validate(ticket.model_dump_json(), Ticket, contracts=[lambda v: violation])

    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR == outcome.reason
    _check_renders(outcome)


# --- rendering: every outcome renders, whatever the input ---------------------------------------


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


render_inputs = st.one_of(
    any_texts,
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=40),  # lone surrogates
    st.binary(max_size=80),
    st.binary(max_size=80).map(bytearray),
    st.builds(
        lambda text: text.encode("utf-8", "surrogatepass"),
        st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=4),
    ),
    st.integers(min_value=1, max_value=1000).map(_nested),
    st.integers(min_value=1, max_value=1000).map(lambda n: "[" * n),
    st.integers(min_value=10_000, max_value=100_000).map(lambda n: '{"summary": "' + "x" * n),
    st.sampled_from(['{"urgency": 3, "summary": "\ud800 lone"}', "\udfff", '{"\udc80": 1}']),
)


def _render_everything(outcome: Any) -> None:
    """Every rendering of an outcome: each returns text, none raises."""
    assert isinstance(repr(outcome), str)
    record = outcome.to_dict()
    json.dumps(record)  # JSON data
    assert isinstance(outcome.trace(), str)
    text = outcome.trace("json")
    assert isinstance(json.loads(text), dict)
    rebuilt = healjson.outcome_from_dict(json.loads(text))
    assert rebuilt.ok == outcome.ok
    assert isinstance(rebuilt.trace(), str)
    assert isinstance(repr(rebuilt), str)
    if not outcome.ok:
        assert isinstance(str(healjson.DegradedError(outcome)), str)


@settings(max_examples=30, deadline=None)
@given(reply=render_inputs, target=st.sampled_from([Ticket, dict, list[int], str]))
@example(reply=b'{"urgency": 3, "summary": "bytes in"}', target=Ticket)
@example(reply=bytearray(b"not json"), target=Ticket)
def test_every_renderer_renders_the_outcome_of_any_input(reply: Any, target: Any) -> None:
    """`repr`, `to_dict`, `trace()` (Markdown and JSON) and the record round trip never raise on
    the outcome of any input: text, bytes, bytearray, lone surrogates, huge or deep replies."""
    outcome = healjson.validate(reply, target)
    assert isinstance(outcome.raw_text, str)  # the caller's bytes are kept as text
    _render_everything(outcome)
    model = ScriptedModel([reply if isinstance(reply, str) else bytes(reply).decode("latin-1")])
    _render_everything(Healer(target, policy=HealPolicy(max_attempts=1)).run(model, "?"))
