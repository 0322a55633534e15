"""`healjson eval`: configurations, scenario files, the offline and live runners, the report."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typer.testing import CliRunner

import healjson
from healjson._cli.app import app
from healjson._cli.endpoint import Endpoint
from healjson._cli.eval_config import PRESETS, EvalConfig, parse_config
from healjson._cli.eval_report import EvalReport
from healjson._cli.eval_run import UnitResult, run_eval
from healjson._cli.loading import Setup
from healjson._cli.scenario_file import load_scenarios
from healjson._cli.scenarios import EvalScenario, ScenarioError, builtin_scenarios
from healjson._cli.stats import PairedTable, mcnemar_exact
from healjson.testing import ScriptedServer

LOCALLY_FIXED = {"fenced", "prose", "trailing_comma", "single_quotes", "two_candidates"}
NEEDS_A_CALL = {"truncated", "schema_violation", "contract_violation"}


def builtin_setup() -> tuple[list[EvalScenario], Any]:
    scenarios, target, rules = builtin_scenarios()
    setup = Setup(target, tuple(rules))
    return scenarios, lambda _s: setup


def run(scenarios: list[EvalScenario], a: str | EvalConfig, b: str | EvalConfig, setup_for: Any,
        **options: Any) -> EvalReport:  # fmt: skip
    configs = tuple(PRESETS[c] if isinstance(c, str) else c for c in (a, b))
    return asyncio.run(
        run_eval(scenarios, configs, setup_for, model="gpt-4o-mini", **options)  # type: ignore[arg-type]
    )


# -- configurations -------------------------------------------------------------------------------


def test_presets_describe_what_they_do() -> None:
    """The `plain`, `local` and `healed` presets are what their descriptions say: strict or not,
    one call or up to three."""
    assert parse_config("plain").strict
    assert parse_config("plain").policy.max_attempts == 1
    assert not parse_config("local").strict
    assert parse_config("local").policy.max_attempts == 1
    assert parse_config("healed").policy == healjson.HealPolicy()
    assert "no healing" in parse_config("plain").describe()
    assert "no re-ask" in parse_config("local").describe()
    assert "up to 3 calls" in parse_config("healed").describe()


def test_a_json_config_sets_policy_fields_model_and_params(tmp_path: Path) -> None:
    """A JSON configuration sets its name, policy fields, model, JSON mode and call parameters,
    and its description names them."""
    config = parse_config(
        '{"name": "h5", "max_attempts": 5, "history": "none", "model": "gpt-4o", '
        '"json_mode": "json_object", "params": {"temperature": 0}}'
    )
    assert config.name == "h5"
    assert config.policy == healjson.HealPolicy(max_attempts=5, history="none")
    assert (config.model, config.json_mode, dict(config.params)) == (
        "gpt-4o",
        "json_object",
        {"temperature": 0},
    )
    assert "gpt-4o" in config.describe()
    assert "temperature=0" in config.describe()
    file = tmp_path / "strict.json"
    file.write_text('{"name": "strict3", "base": "plain", "max_attempts": 1}', encoding="utf-8")
    from_file = parse_config(str(file))
    assert from_file.strict
    assert from_file.name == "strict3"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nonsense", "not a preset"),
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"colour": "red"}', "unknown configuration key"),
        ('{"max_attempts": 0}', "max_attempts"),
        ('{"base": "fancy"}', "`base` must be one of"),
        ('{"params": [1]}', "`params` must be a JSON object"),
        ('{"base": "plain", "max_attempts": 3}', "exactly one call"),
        ('{"json_mode": "yaml"}', "json_mode must be one of"),
        ('{"model": 4}', "model must be a string"),
        ('{"strict": "no"}', "`strict` must be true or false"),
        ('{"strict": 0}', "`strict` must be true or false"),
        ('{"name": [1]}', "`name` must be a string"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"name": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ],
    ids=lambda value: value[:40],
)
def test_bad_configs_are_scenario_errors(spec: str, message: str) -> None:
    """Each malformed configuration (unknown preset, bad JSON, unknown key, bad value, a `plain`
    base with retries) is a scenario error saying what is wrong."""
    with pytest.raises(ScenarioError, match=message):
        parse_config(spec)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"name": "a\xff"}', "is not UTF-8 text: byte 0xff at offset 11"),
        (b"\xff\xfe{", "is not UTF-8 text: byte 0xff at offset 0"),
        (b"[" * 100_000, "nested too deeply"),
        (b'{"strict": "yes"}', "`strict` must be true or false"),
    ],
)
def test_a_bad_configuration_file_is_a_usage_error_without_a_traceback(
    tmp_path: Path, content: bytes, message: str
) -> None:
    """A configuration file that is not UTF-8, is nested past what can be read, or holds a
    wrongly typed value exits 2 with the usage error naming what is wrong, never a traceback."""
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(ScenarioError, match=message):
        parse_config(str(path))
    result = CliRunner().invoke(app, ["eval", "--a", str(path)])
    assert 2 == result.exit_code, result.output
    assert message.split(":", maxsplit=1)[0] in result.output
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, RecursionError | UnicodeDecodeError)


# -- scenario files -------------------------------------------------------------------------------


def write_rows(path: Path, *rows: Any) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
        encoding="utf-8",
    )
    return path


def test_a_scenario_file_reads_every_field(tmp_path: Path) -> None:
    """A scenario file's row is read with every field (messages, replies, expected value,
    contracts, flags), comment lines skipped."""
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "mine.py").write_text("", encoding="utf-8")
    path = write_rows(
        tmp_path / "s.jsonl",
        "// a comment line",
        {
            "id": "one",
            "kind": "fenced",
            "messages": [{"role": "user", "content": "hi"}],
            "replies": ["```json\n{}\n```", {"content": "{}", "finish_reason": "length"}],
            "expected": {"a": 1},
            "contracts": "packs/mine.py:pack",
            "locally_fixable": True,
        },
        "",
        {"prompt": "just text", "response_model": "pkg.mod:Model", "contracts": "elsewhere.py"},
    )
    first, second = load_scenarios(path)
    assert first.id == "one"
    assert first.kind == "fenced"
    assert first.locally_fixable
    assert first.replies[1] == {"content": "{}", "finish_reason": "length"}
    assert first.has_expected
    assert first.expected == {"a": 1}
    assert first.contracts == str(tmp_path / "packs" / "mine.py") + ":pack"  # next to the file
    assert second.id == "4"  # the line number
    assert second.messages == ({"role": "user", "content": "just text"},)
    assert not second.has_expected
    assert second.replies == ()
    assert second.contracts == "elsewhere.py"  # not next to the file: left for the cwd
    assert second.response_model == "pkg.mod:Model"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{oops", "not a JSON object"),
        ("[1]", "must be a JSON object"),
        ({"id": "x"}, "needs `messages`"),
        ({"messages": []}, "needs `messages`"),
        ({"prompt": "p", "replies": "text"}, "`replies` must be a list"),
        ({"prompt": "p", "replies": [{"colour": 1}]}, "unknown reply key"),
        ({"prompt": "p", "replies": [3]}, "a reply is a string or an object"),
    ],
)
def test_bad_rows_name_their_line(tmp_path: Path, row: Any, message: str) -> None:
    """A malformed scenario row is refused with an error naming its line and what is wrong."""
    path = write_rows(tmp_path / "s.jsonl", {"prompt": "fine"}, row)
    with pytest.raises(ScenarioError, match=message) as info:
        load_scenarios(path)
    assert ":2:" in str(info.value)


def test_duplicate_ids_and_empty_files_are_refused(tmp_path: Path) -> None:
    """A scenario file with a duplicated id, or with no scenarios, is refused."""
    path = write_rows(tmp_path / "s.jsonl", {"id": "a", "prompt": "p"}, {"id": "a", "prompt": "q"})
    with pytest.raises(ScenarioError, match="appears twice"):
        load_scenarios(path)
    with pytest.raises(ScenarioError, match="no scenarios"):
        load_scenarios(write_rows(tmp_path / "e.jsonl", "// nothing"))


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
_ROW = st.fixed_dictionaries(
    {},
    optional={
        "id": _JSON,
        "prompt": _JSON,
        "messages": _JSON | st.just([{"role": "user", "content": "x"}]),
        "replies": _JSON | st.lists(st.text(max_size=5) | st.just({"content": "{}"}), max_size=3),
        "expected": _JSON,
        "contracts": _JSON,
    },
)


@given(rows=st.lists(_ROW | _JSON | st.text(max_size=20), min_size=1, max_size=4))
def test_any_scenario_file_loads_or_raises_a_scenario_error(tmp_path_factory: Any,
                                                            rows: list[Any]) -> None:  # fmt: skip
    """Any scenario file either loads into scenarios with messages or raises a `ScenarioError`,
    nothing else."""
    path = tmp_path_factory.mktemp("rows") / "s.jsonl"
    path.write_text(
        "\n".join(r.replace("\n", " ") if isinstance(r, str) else json.dumps(r) for r in rows),
        encoding="utf-8",
    )
    try:
        scenarios = load_scenarios(path)
    except ScenarioError:
        return
    assert scenarios
    assert all(s.messages for s in scenarios)
    assert len({s.id for s in scenarios}) == len(scenarios)


# -- running offline ------------------------------------------------------------------------------


def test_plain_vs_healed_on_the_builtin_set() -> None:
    """On the built-in set, `healed` passes every kind, with a second call only where one is
    needed, and `plain` fails every malformation."""
    scenarios, setup_for = builtin_setup()
    report = run(scenarios, "plain", "healed", setup_for)
    by = {(u.config, u.kind): u for u in report.units}
    kinds = {s.kind for s in scenarios}
    assert kinds >= LOCALLY_FIXED | NEEDS_A_CALL | {"valid", "quoted_number"}
    for kind in kinds:
        plain, healed = by["plain", kind], by["healed", kind]
        assert healed.passed, kind
        assert plain.calls == 1
        assert plain.exception is None
        assert healed.exception is None
        assert healed.calls == (2 if kind in NEEDS_A_CALL else 1), kind
        # pydantic's lax mode accepts "5" for an int; every other malformation fails plain
        assert plain.passed == (kind in {"valid", "quoted_number"}), kind
        if not plain.passed:
            assert plain.reason == "invalid_output"
    table = report.table
    failing = len(kinds) - 2
    assert (table.both, table.only_a, table.only_b, table.neither) == (2, 0, failing, 0)
    assert table.p_value == mcnemar_exact(0, failing) == 2 / 2**failing
    summary = report.summary(PRESETS["healed"])
    assert summary.passed == summary.runs == len(kinds)
    assert summary.low > 0.6
    assert summary.high == 1.0
    assert summary.prompt_tokens > 0
    assert summary.completion_tokens > 0
    assert report.summary(PRESETS["plain"]).reasons == {"invalid_output": failing}


def test_local_vs_healed_isolates_what_the_re_ask_buys() -> None:
    """`local` vs `healed` differ exactly on the kinds that need a re-ask."""
    scenarios, setup_for = builtin_setup()
    report = run(scenarios, "local", "healed", setup_for)
    only_b = {a.kind for a, b in report.pairs() if b.passed and not a.passed}
    assert only_b == NEEDS_A_CALL
    assert report.table.only_a == 0
    reasons = report.summary(PRESETS["local"]).reasons
    assert reasons == {"token_truncated": 1, "invalid_output": 2}


def test_a_valid_value_that_is_not_the_expected_one_fails_as_wrong_value() -> None:
    """A valid value that differs from the scenario's expected value fails as `wrong_value`."""

    class Point(BaseModel):
        x: int = Field(ge=0)

    scenario = EvalScenario(
        id="p",
        messages=({"role": "user", "content": "a point"},),
        replies=('{"x": 2}',),
        expected={"x": 3},
        has_expected=True,
    )
    report = run([scenario], "plain", "healed", lambda _s: Setup(Point))
    assert [(u.passed, u.valid, u.reason) for u in report.units] == [
        (False, True, "wrong_value")
    ] * 2


def test_repeats_are_paired_and_alternate_which_side_goes_first() -> None:
    """Repeats are paired, alternate which configuration runs first, and an offline report says
    repeats add nothing."""
    scenarios, setup_for = builtin_setup()
    order: list[tuple[str, int, str]] = []
    report = run(
        scenarios[:2], "plain", "healed", setup_for, repeat=3, concurrency=1,
        on_unit=lambda u: order.append((u.scenario, u.repeat, u.config)),
    )  # fmt: skip
    assert len(report.pairs()) == 6
    assert report.table.n == 6
    firsts = [order[i][2] for i in range(0, len(order), 2)]
    assert firsts == ["plain", "healed", "plain", "healed", "plain", "healed"]
    assert "offline repeats add no information" in report.markdown()


def test_a_call_that_raises_is_counted_not_hidden() -> None:
    """A configuration whose call raises is counted as an exception in its runs and summary,
    never hidden."""
    scenarios, setup_for = builtin_setup()
    broken = EvalConfig("bad-mode", params={"json_mode": "yaml"})  # a usage error at call time
    report = run(scenarios[:3], "healed", broken, setup_for)
    bad = [u for u in report.units if u.config == "bad-mode"]
    assert all(u.exception and "ValueError" in u.exception for u in bad)
    assert all(u.reason == "exception" and not u.passed for u in bad)
    assert report.summary(broken).exceptions == 3
    assert report.table.only_a == 3


def test_a_setup_that_raises_inside_a_run_is_recorded() -> None:
    """A setup that raises inside a run is recorded as that run's exception."""
    scenarios, _ = builtin_setup()
    report = run(scenarios[:1], "plain", "healed", lambda _s: Setup(object()))
    assert [u.reason for u in report.units] == ["exception", "exception"]
    assert all("TypeError" in (u.exception or "") for u in report.units)


def test_offline_runs_need_replies_and_distinct_names() -> None:
    """An offline run without scripted replies, two configurations of one name, or a repeat below
    one are refused."""
    scenario = EvalScenario(id="q", messages=({"role": "user", "content": "x"},))
    with pytest.raises(ScenarioError, match="need scripted `replies`"):
        run([scenario], "plain", "healed", lambda _s: Setup(int))
    with pytest.raises(ValueError, match="different names"):
        run([scenario], "plain", "plain", lambda _s: Setup(int))
    with pytest.raises(ValueError, match=">= 1"):
        run([scenario], "plain", "healed", lambda _s: Setup(int), repeat=0)


# -- running live ---------------------------------------------------------------------------------


def test_live_runs_go_to_the_endpoint_through_the_real_sdk() -> None:
    """Live runs send each configuration's requests to the endpoint through the real openai SDK."""
    scenarios, setup_for = builtin_setup()
    fenced = next(s for s in scenarios if s.kind == "fenced")
    live = EvalScenario(id="live", messages=fenced.messages, expected=fenced.expected,
                        has_expected=True)  # fmt: skip
    # concurrency 1: plain asks first, then healed; both get the fenced answer
    with ScriptedServer([fenced.replies[0], fenced.replies[0]]) as server:
        report = run(
            [live], "plain", "healed", setup_for, concurrency=1,
            endpoint=Endpoint(server.base_url, "sk-test", timeout=5),
        )  # fmt: skip
        assert len(server.requests) == 2
        assert server.requests[0].body["model"] == "gpt-4o-mini"
    assert [(u.config, u.passed) for u in report.units] == [("plain", False), ("healed", True)]
    assert "live, model `gpt-4o-mini`" in report.markdown()
    assert report.to_dict()["mode"] == "live"


# -- the report -----------------------------------------------------------------------------------


def unit(config: str, scenario: str, passed: bool, repeat: int = 0) -> UnitResult:
    return UnitResult(scenario, "k", config, repeat, passed, passed, None if passed else "x",
                      1, 10, 5, 0.01)  # fmt: skip


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=40))
def test_the_report_counts_agree_with_the_pairs(outcomes: list[tuple[bool, bool]]) -> None:
    """For any paired outcomes, the report's table, summaries and exact McNemar p-value agree
    with the pairs."""
    a, b = EvalConfig("a"), EvalConfig("b")
    scenarios = [EvalScenario(id=str(i), messages=({"role": "user", "content": "x"},))
                 for i in range(len(outcomes))]  # fmt: skip
    units = [u for i, (x, y) in enumerate(outcomes) for u in (unit("b", str(i), y),
                                                                 unit("a", str(i), x))]  # fmt: skip
    report = EvalReport((a, b), scenarios, units, offline=False, model="m")
    table = report.table
    assert table == PairedTable.from_pairs(outcomes)
    assert report.summary(a).passed == table.both + table.only_a
    assert report.summary(b).passed == table.both + table.only_b
    data = report.to_dict()
    assert data["paired"]["mcnemar_exact_p"] == mcnemar_exact(table.only_a, table.only_b)
    assert len(data["runs"]) == 2 * len(outcomes)
    json.dumps(data)  # JSON-ready
    text = report.markdown()
    assert f"| **A passed** | {table.both} | {table.only_a} |" in text
    assert text.count("\n- `") == table.discordant  # one line per discordant pair


# -- the command ----------------------------------------------------------------------------------


def test_eval_command_runs_the_builtin_set_offline(tmp_path: Path) -> None:
    """`healjson eval` runs the built-in set offline and writes the Markdown report and the JSON
    one."""
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "# healjson eval: `plain` (A) vs `healed` (B)" in result.stdout
    assert "Exact McNemar test" in result.stdout
    assert "Wilson 95% CI" in result.stdout
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["mode"] == "offline"
    assert [c["name"] for c in data["configs"]] == ["plain", "healed"]
    assert data["configs"][1]["passed"] == data["configs"][1]["runs"]


def test_eval_redacts_credential_params_in_config_descriptions(tmp_path: Path) -> None:
    """A configuration's credential-named params and credential shapes are masked in its
    description, on stdout and in the `--json` report."""
    spec = json.dumps(
        {"name": "x", "params": {"api_key": "sk-zzzzzzzzzzzzzzzz",
                                 "note": "Bearer abcdefghijklmnop",
                                 "extra_headers": {"Authorization": "Basic qwertyuiopasdf"}}}
    )  # fmt: skip
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["eval", "--a", spec, "--json", str(out)])
    assert result.exit_code == 0, result.output
    described = json.loads(out.read_text(encoding="utf-8"))["configs"][0]["description"]
    for text in (result.stdout, out.read_text(encoding="utf-8")):
        assert all(s not in text for s in ("zzzzzzzz", "abcdefghijkl", "qwertyuiop"))
    assert "api_key='[redacted]'" in described
    assert "{'Authorization': '[redacted]'}" in described


PACK = """
from pydantic import BaseModel
from healjson import ContractPack, Violation, contract

class Order(BaseModel):
    qty: int
    unit: float
    total: float

@contract(fields=("qty", "unit", "total"))
def adds_up(order: Order) -> Violation | None:
    if abs(order.qty * order.unit - order.total) > 0.005:
        return Violation("total must equal qty * unit")
    return None

pack = ContractPack(Order, contracts=[adds_up])
"""


def test_eval_command_on_a_file_whose_rows_name_their_pack(tmp_path: Path) -> None:
    """`healjson eval FILE` loads the contract pack each row names and judges by it."""
    (tmp_path / "order_pack.py").write_text(PACK, encoding="utf-8")
    good = '{"qty": 2, "unit": 1.5, "total": 3.0}'
    path = write_rows(
        tmp_path / "orders.jsonl",
        {"id": "ok", "prompt": "p", "contracts": "order_pack.py", "replies": [good],
         "expected": json.loads(good)},
        {"id": "rule", "prompt": "p", "contracts": "order_pack.py",
         "replies": ['{"qty": 2, "unit": 1.5, "total": 4.0}', good]},
    )  # fmt: skip
    result = CliRunner().invoke(app, ["eval", str(path), "--a", "local", "--b", "healed"])
    assert result.exit_code == 0, result.output
    assert "| `local` | 1/2 |" in result.stdout
    assert "| `healed` | 2/2 |" in result.stdout
    assert "- `rule`: local failed (`invalid_output`, 1 call(s)) / healed passed (2 call(s))" in (
        result.stdout
    )


def flat(output: str) -> str:
    """CLI output without rich's box drawing and line wrapping."""
    return " ".join(output.translate(str.maketrans("", "", "│╭╮╰╯─")).split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--a", "nonsense"], "not a preset"),
        (["{rows}"], "offline runs need scripted `replies`"),
        (["{rows}", "--contracts", "missing_pack.py"], "no contract pack file"),
        (["{rows}", "--response-model", "no_such_module_xyz:Model"], "no_such_module_xyz"),
        (["{bad}"], "not a JSON object"),
    ],
)
def test_eval_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    """Each usage error of `healjson eval` exits with 2 and a message naming it."""
    rows = write_rows(tmp_path / "rows.jsonl", {"prompt": "p"})
    bad = write_rows(tmp_path / "bad.jsonl", "{nope")
    argv = [a.format(rows=rows, bad=bad) for a in args]
    if "--contracts" not in argv and "--response-model" not in argv and "{rows}" in args:
        argv += ["--response-model", "builtins:int"]
    result = CliRunner().invoke(app, ["eval", *argv])
    assert result.exit_code == 2, result.output
    assert message in flat(result.output)


def test_same_named_configs_are_told_apart() -> None:
    """Two configurations of one name get distinct names in the report."""
    result = CliRunner().invoke(app, ["eval", "--a", "healed", "--b", "healed"])
    assert result.exit_code == 0, result.output
    assert "`healed` (A) vs `healed-b` (B)" in result.stdout


def test_plain_opens_the_strict_mode_envelope_around_a_list_target() -> None:
    """`plain` opens the strict-mode envelope around a list target, as the SDK would."""
    scenario = EvalScenario(
        id="list",
        messages=({"role": "user", "content": "three numbers"},),
        replies=('{"value": [1, 2, 3]}',),
        expected=[1, 2, 3],
        has_expected=True,
    )
    fenced = EvalScenario(
        id="fenced-list",
        messages=scenario.messages,
        replies=('```json\n{"value": [1, 2, 3]}\n```', '{"value": [1, 2, 3]}'),
        expected=[1, 2, 3],
        has_expected=True,
    )
    report = run([scenario, fenced], "plain", "healed", lambda _s: Setup(list[int]))
    verdicts = {(u.scenario, u.config): u.passed for u in report.units}
    assert verdicts == {
        ("list", "plain"): True,
        ("list", "healed"): True,
        ("fenced-list", "plain"): False,
        ("fenced-list", "healed"): True,
    }


def test_decimals_compare_by_value_not_by_spelling() -> None:
    """An expected decimal compares by value, not by how it is spelled."""
    from decimal import Decimal

    class Price(BaseModel):
        amount: Decimal

    scenario = EvalScenario(
        id="d",
        messages=({"role": "user", "content": "a price"},),
        replies=('{"amount": 120.0}',),
        expected={"amount": 120.0},
        has_expected=True,
    )
    report = run([scenario], "plain", "healed", lambda _s: Setup(Price))
    assert [u.passed for u in report.units] == [True, True]


def test_long_discordant_lists_are_cut_in_markdown_but_kept_in_json() -> None:
    """A long list of discordant runs is cut at 40 in the Markdown report and kept whole in the
    JSON one."""
    a, b = EvalConfig("a"), EvalConfig("b")
    scenarios = [
        EvalScenario(id=str(i), messages=({"role": "user", "content": "x"},)) for i in range(50)
    ]
    units = [u for i in range(50) for u in (unit("a", str(i), False), unit("b", str(i), True))]
    report = EvalReport((a, b), scenarios, units, offline=False, model="m")
    text = report.markdown()
    assert text.count("\n- `") == 40
    assert "- ... and 10 more (see `--json`)" in text
    assert len(report.to_dict()["runs"]) == 100


def test_eval_progress_bar_counts_passes_per_configuration() -> None:
    """`--progress` counts runs and passes per configuration on stderr, and `--no-progress`
    prints one line."""
    result = CliRunner().invoke(app, ["eval", "--progress"])
    assert result.exit_code == 0, result.output
    assert "20/20" in result.stderr
    assert "plain 2/10 passed · healed 10/10 passed" in result.stderr
    quiet = CliRunner().invoke(app, ["eval", "--no-progress"])
    assert "healjson eval: 20 run(s) ..." in quiet.stderr
    assert "passed ·" not in quiet.stderr


def test_live_runs_ask_for_the_declared_json_mode() -> None:
    """Live runs ask the endpoint for the declared JSON mode."""
    scenarios, setup_for = builtin_setup()
    valid = next(s for s in scenarios if s.kind == "valid")
    live = EvalScenario(id="live", messages=valid.messages)
    with ScriptedServer([valid.replies[0]] * 2) as server:
        run(
            [live], "plain", "healed", setup_for, concurrency=1, json_mode="json_object",
            endpoint=Endpoint(server.base_url, "sk-test"),
        )  # fmt: skip
        formats = [r.body["response_format"]["type"] for r in server.requests]
    assert formats == ["json_object", "json_object"]


@pytest.mark.parametrize(
    "argv",
    [["-c", "no_such_pack.py"], ["--response-model", "no_such_module:Thing"]],
    ids=["contracts", "response-model"],
)
def test_a_pack_or_target_for_the_builtin_set_is_a_usage_error(argv: list[str]) -> None:
    """The built-in scripted set brings its own pack and target: `--contracts` or
    `--response-model` without a scenario file would change nothing, so it exits 2 saying so
    instead of running the built-in set as if the option were in use."""
    result = CliRunner().invoke(app, ["eval", *argv])
    assert 2 == result.exit_code, result.output
    assert "built-in scripted set brings its own pack and target" in result.output


def test_an_option_no_row_uses_is_a_usage_error(tmp_path: Path) -> None:
    """When every row of the scenario file names its own target, `--response-model` is used by
    none: exit 2 naming the option, where a row without one would have used it."""
    row = {"prompt": "hi", "replies": ['{"a": 1}'], "response_model": "builtins:dict"}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    unused = CliRunner().invoke(app, ["eval", str(path), "--response-model", "builtins:dict"])
    assert 2 == unused.exit_code, unused.output
    assert "no row uses it" in unused.output
    del row["response_model"]
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    used = CliRunner().invoke(app, ["eval", str(path), "--response-model", "builtins:dict"])
    assert 0 == used.exit_code, used.output


@pytest.mark.parametrize("spec", ["os:path", "json:decoder", "sys:maxsize"])
@pytest.mark.parametrize("command", ["heal", "eval"])
def test_a_target_healjson_cannot_validate_against_is_a_usage_error(
    tmp_path: Path, command: str, spec: str
) -> None:
    """A `--model` / `--response-model` naming an object that is no type (a module, a number)
    exits 2 with healjson's reason, before any row runs: never a traceback, never a report of
    rows that failed with an exception."""
    reply = tmp_path / "reply.json"
    reply.write_text('{"a": 1}', encoding="utf-8")
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"prompt": "hi", "replies": ['{"a": 1}']}) + "\n", "utf-8")
    argv = (
        ["heal", str(reply), "--model", spec]
        if command == "heal"
        else ["eval", str(rows), "--response-model", spec]
    )
    result = CliRunner().invoke(app, argv)
    assert 2 == result.exit_code, result.output
    assert "healjson cannot validate against" in result.output
    assert "Traceback" not in result.output
