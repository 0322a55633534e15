"""`check_pack` as a new user meets it: one problem per cause, each with its fix, the problems
(not the kit's source) in pytest's output, strategies derived from the model for ordinary
rules, and a small pack checked in a few seconds."""

from __future__ import annotations

import datetime as dt
import enum
import math
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from healjson import ContractPack, Violation, contract
from healjson.testing import PackReport, check_pack, valid, violating
from healjson.testing._sites import field_sites
from healjson.testing._strategies import judge

pytestmark = pytest.mark.slow  # hypothesis over a whole pack per check: the slow lane


@pytest.fixture
def pinned() -> Iterator[None]:
    """Hypothesis with a fixed seed inside the test: a verdict that rests on a search is the
    same on every run."""
    previous = settings.get_current_profile_name()
    settings.register_profile("check-pack-pinned", max_examples=60, deadline=None, derandomize=True)
    settings.load_profile("check-pack-pinned")
    try:
        yield
    finally:
        settings.load_profile(previous)


@pytest.fixture
def hypothesis_defaults() -> Iterator[None]:
    """Hypothesis as a user has it before configuring anything (100 examples, random)."""
    previous = settings.get_current_profile_name()
    settings.register_profile("check-pack-defaults", settings.get_profile("default"))
    settings.load_profile("check-pack-defaults")
    try:
        yield
    finally:
        settings.load_profile(previous)


# --- a first-day pack: four ordinary rules over a plan with a list of tasks ----------------------


class Task(BaseModel):
    title: str = Field(min_length=1, max_length=60)
    hours: float = Field(ge=0, le=40)
    due: dt.date | None = None
    done: bool = False


class Plan(BaseModel):
    owner: str
    status: Literal["draft", "active", "closed"]
    tasks: list[Task] = Field(max_length=8)
    budget_hours: int = Field(ge=0, le=200)


@contract(fields=("tasks", "budget_hours"))
def within_budget(plan: Plan) -> Violation | None:
    """The tasks fit in the budget."""
    over = sum(task.hours for task in plan.tasks) > plan.budget_hours
    return Violation("the tasks take more hours than the budget") if over else None


@contract(fields=("status", "tasks"))
def active_has_tasks(plan: Plan) -> Violation | None:
    """An active plan lists a task."""
    empty = plan.status == "active" and not plan.tasks
    return Violation("an active plan lists a task") if empty else None


@contract(fields=("tasks",))
def unique_titles(plan: Plan) -> Violation | None:
    """No two tasks share a title."""
    titles = [task.title for task in plan.tasks]
    return Violation("task titles are unique") if len(set(titles)) != len(titles) else None


@contract(fields=("status", "tasks"))
def closed_is_done(plan: Plan) -> Violation | None:
    """A closed plan has every task done."""
    if plan.status == "closed" and any(not task.done for task in plan.tasks):
        return Violation("a closed plan has every task done")
    return None


@contract(fields=("tasks",))
def short_tasks_on_average(plan: Plan) -> Violation | None:
    """Tasks take 20 hours on average at most (a bug: a plan may have no task)."""
    average = sum(task.hours for task in plan.tasks) / len(plan.tasks)
    return Violation("tasks take 20 h on average at most") if average > 20 else None


PLAN_EXAMPLE = {
    "owner": "ana",
    "status": "active",
    "tasks": [{"title": "write", "hours": 3}, {"title": "review", "hours": 1, "due": "2024-05-02"}],
    "budget_hours": 10,
}
PLAN_RULES = (within_budget, active_has_tasks, unique_titles, closed_is_done)


def test_a_raising_contract_is_one_problem_with_its_exception_input_and_line(pinned: None) -> None:
    """A contract that divides by the number of tasks is reported once — its exception, the
    plan without tasks it raised on, the line, the fix — and nothing else is reported: the
    other rules are checked without it, so no strategy is blamed for its exception."""
    rules = (within_budget, active_has_tasks, unique_titles, short_tasks_on_average)
    pack = ContractPack(Plan, rules, (PLAN_EXAMPLE,), name="plans")
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=20)
    message = str(failure.value)
    assert message.startswith("healjson.testing.check_pack('plans') found 1 problem(s):\n")
    assert "  1. contract `short_tasks_on_average` raised ZeroDivisionError" in message
    assert "on the schema-valid input Plan(" in message
    assert "tasks=[]" in message
    assert f"at {__file__}:" in message
    assert "in short_tasks_on_average: average = sum(" in message
    assert "`short_tasks_on_average` was left out of the other checks" in message
    assert 1 == message.count("fix:")
    assert "strateg" not in message


def test_a_contract_raising_on_a_golden_example_is_reported_there_once(pinned: None) -> None:
    """A golden example without tasks makes the rule raise: reported once, on that example,
    with no second report from the schema-driven inputs or any strategy."""
    example = {**PLAN_EXAMPLE, "status": "draft", "tasks": []}
    rules = (within_budget, short_tasks_on_average)
    pack = ContractPack(Plan, rules, (PLAN_EXAMPLE, example), name="plans")
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=20)
    message = str(failure.value)
    assert "found 1 problem(s)" in message
    assert "on golden example examples[1] Plan(owner='ana', status='draft', tasks=[]" in message
    assert 1 == message.count("raised ZeroDivisionError")


def test_a_pack_of_ordinary_rules_over_a_list_needs_no_strategy(pinned: None) -> None:
    """Budget, emptiness, uniqueness and all-done rules over a list of tasks pass `check_pack`
    with one golden example and no strategy: every rule is broken alone."""
    pack = ContractPack(Plan, PLAN_RULES, (PLAN_EXAMPLE,), name="plans")
    report = check_pack(pack, max_examples=20)
    assert {rule.name: 20 for rule in PLAN_RULES} == dict(report.violating)


def test_the_same_pack_without_an_example_needs_no_strategy_either(pinned: None) -> None:
    """Without a golden example, valid plans drawn from the schema are the starting points."""
    pack = ContractPack(Plan, PLAN_RULES, name="plans")
    report = check_pack(pack, max_examples=20)
    assert all(20 == count for count in report.violating.values())
    assert report.valid >= 20


# --- common shapes: a recipe ---------------------------------------------------------------------


class Spice(enum.Enum):
    MILD = "mild"
    HOT = "hot"


class Address(BaseModel):
    city: str = Field(min_length=1, max_length=30)
    country: Literal["FR", "DE", "IT"]


class Step(BaseModel):
    name: str = Field(pattern=r"^[a-z]{3,8}$")
    minutes: int = Field(ge=1, le=120)
    note: str | None = None


class Recipe(BaseModel):
    title: str = Field(min_length=1, max_length=40)
    kind: Literal["soup", "main", "dessert"]
    servings: int = Field(ge=2, le=12, multiple_of=2)
    price: float = Field(gt=0, le=100)
    spice: Spice = Spice.MILD
    tags: list[str] = Field(default_factory=list, max_length=5)
    steps: list[Step] = Field(min_length=1, max_length=6)
    origin: Address | None = None
    rating: int | None = Field(default=None, ge=1, le=5)


@contract(fields=("steps",))
def step_names_unique(recipe: Recipe) -> Violation | None:
    """Each step has its own name (broken by giving a step its neighbour's name)."""
    names = [step.name for step in recipe.steps]
    return Violation("each step has its own name") if len(set(names)) != len(names) else None


@contract(fields=("steps",))
def steps_get_longer(recipe: Recipe) -> Violation | None:
    """Steps take longer and longer (broken by reversing them)."""
    minutes = [step.minutes for step in recipe.steps]
    return Violation("steps take longer and longer") if minutes != sorted(minutes) else None


@contract(fields=("tags",))
def tags_unique(recipe: Recipe) -> Violation | None:
    """No tag twice (broken by repeating a tag): a list of strings."""
    return Violation("no tag twice") if len(set(recipe.tags)) != len(recipe.tags) else None


@contract(fields=("kind", "servings"))
def soup_serves_few(recipe: Recipe) -> Violation | None:
    """A soup serves six at most: a Literal and a bounded multiple of 2."""
    too_many = recipe.kind == "soup" and recipe.servings > 6
    return Violation("a soup serves 6 at most", path="servings") if too_many else None


@contract(fields=("rating", "origin"))
def rated_has_origin(recipe: Recipe) -> Violation | None:
    """A rated recipe says where it comes from: two optional fields, one a nested model."""
    missing = recipe.rating is not None and recipe.origin is None
    return Violation("a rated recipe says where it comes from", path="origin") if missing else None


@contract(fields=("origin", "price"))
def italian_is_cheap(recipe: Recipe) -> Violation | None:
    """An Italian recipe costs 50 at most: a nested model's Literal and an exclusive bound."""
    if recipe.origin is not None and recipe.origin.country == "IT" and recipe.price > 50:
        return Violation("an Italian recipe costs 50 at most", path="price")
    return None


@contract(fields=("kind", "spice"))
def desserts_are_mild(recipe: Recipe) -> Violation | None:
    """A dessert is mild: an Enum."""
    hot = recipe.kind == "dessert" and recipe.spice is Spice.HOT
    return Violation("a dessert is mild", path="spice") if hot else None


RECIPE_RULES = (
    step_names_unique,
    steps_get_longer,
    tags_unique,
    soup_serves_few,
    rated_has_origin,
    italian_is_cheap,
    desserts_are_mild,
)
RECIPE_EXAMPLE = {
    "title": "Minestrone",
    "kind": "soup",
    "servings": 4,
    "price": 12.5,
    "tags": ["veggie", "winter"],
    "steps": [{"name": "chop", "minutes": 10}, {"name": "simmer", "minutes": 40}],
    "origin": {"city": "Genoa", "country": "IT"},
    "rating": 4,
}
RECIPES = ContractPack(Recipe, RECIPE_RULES, (RECIPE_EXAMPLE,), name="recipes")


@pytest.mark.parametrize("examples", [(RECIPE_EXAMPLE,), ()], ids=["one example", "no example"])
def test_rules_over_common_shapes_need_no_strategy(
    examples: tuple[dict[str, Any], ...], pinned: None
) -> None:
    """Lists of models and of strings with length bounds, optional fields, a nested model,
    numbers with bounds and a step, Literals, an Enum and a pattern: each rule over them is
    broken alone, with or without a golden example, and no strategy is supplied."""
    pack = ContractPack(Recipe, RECIPE_RULES, examples, name="recipes")
    report = check_pack(pack, max_examples=15)
    assert {rule.name: 15 for rule in RECIPE_RULES} == dict(report.violating)


@pytest.mark.parametrize("rule", [rule.name for rule in RECIPE_RULES])
@settings(max_examples=20, derandomize=True)
@given(data=st.data())
def test_violating_breaks_each_common_shape_rule_alone(rule: str, data: st.DataObject) -> None:
    """`violating(pack, rule)` draws recipes on which that rule, and no other, fires."""
    recipe = data.draw(violating(RECIPES, rule))
    assert {rule} == {d.rule for d in judge(RECIPES, recipe)}


def test_list_sites_offer_repeats_a_reversal_and_a_neighbours_value() -> None:
    """A list's fixed changes repeat its first or last item and reverse it; an item's property
    may take its neighbour's value; a null bounded number may take a bound."""
    from healjson._core.target.target import target_for
    from healjson.testing._schema_data import schema_strategies

    target = target_for(Recipe)
    builder = schema_strategies(target)
    root = builder.resolve(target.json_schema)
    steps = [{"name": "chop", "minutes": 10}, {"name": "simmer", "minutes": 40}]
    data = {**RECIPE_EXAMPLE, "steps": steps, "rating": None}
    sites = field_sites(
        builder, root["properties"], set(root["required"]), ["steps", "rating"], data, drawn=False
    )
    fixed = {site.path: site.fixed for site in sites}
    assert [*steps, steps[-1]] in fixed[("steps",)]
    assert [*steps, steps[0]] in fixed[("steps",)]
    assert steps[::-1] in fixed[("steps",)]
    assert "chop" in fixed[("steps", 1, "name")]
    assert steps[0] in fixed[("steps", 1)]
    assert {1, 5} <= set(fixed[("rating",)])


# --- the problems and their fixes ----------------------------------------------------------------


class Line(BaseModel):
    name: str = Field(min_length=1, max_length=40)
    qty: int = Field(ge=1, le=100)
    unit_price: float = Field(gt=0, le=10_000)  # a positive price: more of a line costs more


class Order(BaseModel):
    status: Literal["open", "paid", "shipped"]
    lines: list[Line] = Field(min_length=1, max_length=10)
    total: float = Field(ge=0)
    note: str | None = None


@contract(fields=("lines", "total"))
def total_adds_up(order: Order) -> Violation | None:
    """The total is the sum of the lines."""
    expected = sum(line.qty * line.unit_price for line in order.lines)
    if not math.isclose(order.total, expected, abs_tol=0.01):
        return Violation(f"the total must be {expected:.2f}")
    return None


@contract(fields=("lines",))
def few_of_each(order: Order) -> Violation | None:
    """At most 20 of a line."""
    return Violation("at most 20 of a line") if any(x.qty > 20 for x in order.lines) else None


@contract(fields=("status", "note"))
def shipped_has_note(order: Order) -> Violation | None:
    """A shipped order carries a note."""
    bare = order.status == "shipped" and not order.note
    return Violation("a shipped order carries a note") if bare else None


ORDER_RULES = (total_adds_up, few_of_each, shipped_has_note)
ORDER_EXAMPLE = {
    "status": "paid",
    "lines": [{"name": "kettle", "qty": 2, "unit_price": 12.5}],
    "total": 25.0,
}


def test_rules_reading_the_same_values_are_named_with_the_strategy_to_write(
    pinned: None,
) -> None:
    """Raising a quantity breaks the total too: `check_pack` says that the two rules read
    `lines`, and which strategy to supply; the rules it can break alone are not reported."""
    pack = ContractPack(Order, ORDER_RULES, (ORDER_EXAMPLE,), name="orders")
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=15)
    message = str(failure.value)
    assert "found 1 problem(s)" in message
    assert "violating(pack, 'few_of_each'): no value broke `few_of_each` alone" in message
    assert "also broke `total_adds_up`" in message
    assert "fix: `few_of_each` and `total_adds_up` read `lines`" in message
    assert "ContractPack(strategies={'few_of_each': lambda: ...})" in message


def test_the_strategy_the_message_asks_for_makes_the_pack_pass(pinned: None) -> None:
    """With a strategy for the one rule the kit cannot break alone (a valid order with one
    quantity raised and the total recomputed), the pack passes."""

    def too_many_of_one(order: Order) -> Order:
        lines = [order.lines[0].model_copy(update={"qty": 21}), *order.lines[1:]]
        total = sum(line.qty * line.unit_price for line in lines)
        return order.model_copy(update={"lines": lines, "total": total})

    pack: ContractPack = ContractPack(
        Order,
        ORDER_RULES,
        (ORDER_EXAMPLE,),
        name="orders",
        strategies={"few_of_each": lambda: valid(pack).map(too_many_of_one)},
    )
    report = check_pack(pack, max_examples=15)
    assert 15 == report.violating["few_of_each"]


def test_tight_rules_without_an_example_are_one_problem_asking_for_one(pinned: None) -> None:
    """Without a golden example, a total that must equal the sum of the lines is almost never
    drawn: that is one problem, whose fix is a golden example; the violating checks, which
    would start from such values, are named and not run."""
    pack = ContractPack(Order, ORDER_RULES, name="orders")
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=15)
    message = str(failure.value)
    assert "found 1 problem(s)" in message
    assert "  1. valid(pack): too few values pass every rule: valid(pack) kept " in message
    assert "rejected by `" in message
    assert "`total_adds_up` " in message
    assert "violating(pack, 'shipped_has_note') start from such values and did not run" in message
    assert "fix: give the pack a golden example (ContractPack(examples=[...]))" in message


def test_every_problem_comes_with_its_fix(pinned: None) -> None:
    """A golden example that breaks a rule, a field the model lacks, a path that does not
    exist: each problem is numbered and followed by its `fix:` line."""

    @contract(fields=("status", "colour"))
    def misplaced(order: Order) -> Violation | None:
        still_open = order.status == "open"
        return Violation("an order is not left open", path="remark") if still_open else None

    broken = {**ORDER_EXAMPLE, "total": 99.0}
    pack = ContractPack(Order, (total_adds_up, misplaced), (ORDER_EXAMPLE, broken), name="mixed")
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=15)
    lines = str(failure.value).splitlines()
    numbered = [line for line in lines if line[:5].strip().rstrip(".").isdigit()]
    fixes = [line for line in lines if line.strip().startswith("fix: ")]
    assert 3 == len(numbered) == len(fixes)
    assert "declares field 'colour', which Order does not have" in numbered[0]
    assert "golden example examples[1]" in numbered[1]
    assert "its path 'remark' does not exist" in numbered[2]
    assert "give Violation(path=...) a path that exists in the value" in fixes[2]


@pytest.mark.slow  # fresh interpreters
def test_pytest_shows_the_problems_not_the_kits_source(tmp_path: Path) -> None:
    """A failing `check_pack` in a user's test prints the test's line and the numbered
    problems with their fixes: no frame of the kit, no log lines from its own checks."""
    test_file = tmp_path / "test_users_pack.py"
    test_file.write_text(
        textwrap.dedent(
            """
            from pydantic import BaseModel

            from healjson import ContractPack, Violation, contract
            from healjson.testing import check_pack


            class Span(BaseModel):
                low: int
                high: int


            @contract(fields=("low", "high"))
            def width_ratio(span: Span) -> Violation | None:
                return Violation("too wide") if span.high / span.low > 10 else None


            def test_pack() -> None:
                check_pack(ContractPack(Span, (width_ratio,), ({"low": 1, "high": 5},)))
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(test_file), "-p", "no:cacheprovider", "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    output = done.stdout
    assert 1 == done.returncode, output
    assert ">       check_pack(ContractPack(Span, (width_ratio,)" in output
    assert "E         1. contract `width_ratio` raised ZeroDivisionError" in output
    assert "fix: a contract gives a verdict on every value the schema allows" in output
    assert "_check_pack.py" not in output
    assert "def check_pack" not in output
    assert "healjson.degraded" not in output


# --- what a check costs --------------------------------------------------------------------------


def test_hypothesis_defaults_give_25_examples_per_property_and_one_verdict(
    hypothesis_defaults: None,
) -> None:
    """Under hypothesis' own defaults (100 examples, a new seed each run) a pack is checked
    with 25 examples per property and a fixed seed: the same counts twice."""
    pack = ContractPack(Plan, PLAN_RULES, (PLAN_EXAMPLE,), name="plans")
    first, second = check_pack(pack), check_pack(pack)
    assert {rule.name: 25 for rule in PLAN_RULES} == dict(first.violating)
    assert (first.violating, first.schema_inputs) == (second.violating, second.schema_inputs)


def test_a_chosen_profile_decides_the_count(pinned: None) -> None:
    """A profile the user loaded (here 60 examples) is used as it is."""
    report: PackReport = check_pack(ContractPack(Plan, PLAN_RULES, (PLAN_EXAMPLE,)))
    assert 60 == report.violating["unique_titles"]


class Span(BaseModel):
    low: int
    high: int


@contract(fields=("low", "high"))
def ordered(span: Span) -> Violation | None:
    """`low` does not exceed `high`."""
    return Violation("low must not exceed high") if span.low > span.high else None


def test_a_supplied_strategy_that_filters_too_much_is_told_to_build_its_values(
    pinned: None,
) -> None:
    """The pack's own "valid" strategy keeping almost nothing of what it draws is named, with
    the fix: build the values instead of filtering them."""
    spans = st.builds(Span, low=st.integers(), high=st.integers())
    pack = ContractPack(
        Span,
        (ordered,),
        ({"low": 1, "high": 2},),
        strategies={"valid": lambda: spans.filter(lambda s: s.high - s.low == 10**9 + 7)},
    )
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=10)
    message = str(failure.value)
    assert "valid(pack): hypothesis could not generate enough values from the pack's " in message
    assert "strategies['valid']" in message
    assert "fix: build the values constructively instead of filtering them" in message


def test_a_contract_returning_what_is_not_a_verdict_is_one_problem(pinned: None) -> None:
    """A rule that returns a number is reported once, with what a contract may return."""

    @contract(fields=("low",))
    def counts_instead(span: Span) -> Any:
        return span.low

    pack = ContractPack(Span, (ordered, counts_instead), ({"low": 1, "high": 2},))
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=10)
    message = str(failure.value)
    assert "found 1 problem(s)" in message
    assert "contract `counts_instead` returned 1" in message
    assert "fix: a contract returns None, True / False, a message, a Violation" in message


def test_a_supplied_strategy_drawing_what_the_model_refuses_is_named(pinned: None) -> None:
    """A "valid" strategy that draws data the model rejects: the validation error, and the fix."""
    pack = ContractPack(
        Span,
        (ordered,),
        ({"low": 1, "high": 2},),
        strategies={"valid": lambda: st.just({"low": "one", "high": 2})},
    )
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=5)
    message = str(failure.value)
    assert "valid(pack): it drew a value that is not valid: ValidationError: low: " in message
    assert "fix: make strategies['valid'] draw values that the model accepts" in message


@pytest.mark.parametrize("kind", ["async", "generator"])
def test_async_and_generator_contracts_that_raise_are_located_too(kind: str, pinned: None) -> None:
    """The line a contract raised on is found for an async rule and for a rule that yields
    its violations, as for a plain one."""

    async def halves_async(span: Span) -> Violation | None:
        return Violation("too wide") if span.high // span.low > 10 else None

    def halves_yielding(span: Span) -> Iterator[Violation]:
        if span.high // span.low > 10:
            yield Violation("too wide")

    rule = contract(fields=("low", "high"))(halves_async if kind == "async" else halves_yielding)
    pack = ContractPack(Span, (rule,), ({"low": 1, "high": 2},))
    with pytest.raises(AssertionError) as failure:
        check_pack(pack, max_examples=10)
    message = str(failure.value)
    assert "raised ZeroDivisionError: integer division or modulo by zero" in message
    assert f"at {__file__}:" in message
    assert "span.high // span.low > 10" in message


def test_too_few_valid_values_despite_an_example_points_at_the_declarations() -> None:
    """With a golden example, too few valid values means the rules read fields they do not
    declare (those are drawn afresh): the fix says so instead of asking for an example."""
    from healjson.testing._pack_problems import scarcity_finding
    from healjson.testing._strategies import Tally

    counts = Tally(judged=40, kept=3)
    counts.rejected.update({"next_to_each_other": 37})
    with_example = scarcity_finding(["valid(pack)"], counts, examples=True)
    without = scarcity_finding(["valid(pack)"], counts, examples=False)
    assert "valid(pack) kept 3 of the 40 value(s) it drew" in with_example.text
    assert "`next_to_each_other` 37" in with_example.text
    assert "declare every field each rule reads" in with_example.fix
    assert "give the pack a golden example" in without.fix
