"""Shared fixtures and hypothesis profiles.

One environment variable picks the hypothesis profile, `HEALJSON_HYPOTHESIS_PROFILE`: the one
healjson's pytest plugin reads for users (`_healjson_pytestplugin.PROFILE_ENV`).
`HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough` runs many more examples (1000 per property);
unset, the suite runs its fast default, `ci` (30 examples), which CI uses.

The default lane's counts are a budget (the README's test command keeps that lane under three
minutes on two cores): a property runs 30 examples there unless it states more (a rare case's)
or fewer (a costly example's). The depth is the randomized lane's: 1000 fresh examples each.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from _healjson_pytestplugin import PROFILE_ENV


def _trust_one_certificate() -> None:
    """Every SDK's HTTP stack (httpx and httpx2 under openai, anthropic, pydantic-ai and the
    Agents SDK; httpx under ollama and google-genai, which also builds a context of its own)
    builds a default TLS context for each client, and each loads the CA bundle that
    `SSL_CERT_FILE` names (certifi's or the system's otherwise): 20-50 ms, for each of the
    suite's thousands of clients, which all talk plain HTTP to loopback servers. The suite's
    processes trust one certificate instead (the first of certifi's bundle), through the
    variable they all read; the processes a test starts inherit it. Set here, in the process
    that starts the workers, before it starts them, and again in each worker."""
    try:
        import certifi
    except ImportError:  # no SDK that loads a bundle is installed
        return
    bundle = Path(certifi.where()).read_text(encoding="ascii")
    end_marker = "-----END CERTIFICATE-----"
    first = bundle[bundle.index("-----BEGIN CERTIFICATE-----") : bundle.index(end_marker)]
    handle, path = tempfile.mkstemp(prefix="healjson-tests-", suffix=".pem")
    with os.fdopen(handle, "w", encoding="ascii") as file:
        file.write(first + end_marker + "\n")
    atexit.register(os.unlink, path)
    os.environ["SSL_CERT_FILE"] = path
    os.environ.pop("SSL_CERT_DIR", None)


_trust_one_certificate()


def _share_compiled_modules() -> None:
    """The suite's processes share their compiled modules: each xdist worker, each lane of
    `.ci/run` and each Python process a test starts (the CLI, a fresh process reading the
    cache, the README run) would otherwise compile healjson and assertion-rewrite every test
    module again, where `PYTHONDONTWRITEBYTECODE` is set (some CI images and containers set
    it): about 8 s of CPU per process, from a clean clone. The `__pycache__` folders written
    are git-ignored. Set here, in the process that starts the workers, before it starts them."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False


_share_compiled_modules()


# every property of the default suite is derandomized: a run is red or green by the code, never
# by the draw (a property's own `derandomize=False` aside); the randomized lane is `pinned.py`'s
settings.register_profile("ci", max_examples=30, deadline=None, derandomize=True)
if not os.environ.get(PROFILE_ENV, "").strip():  # otherwise the plugin loads the one named
    settings.load_profile("ci")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`--numprocesses=auto` (the suite's own setting): one worker more than the cores this
    process may run on (`--maxprocesses` caps it; `PYTEST_XDIST_AUTO_NUM_WORKERS` decides when
    set, as it does for pytest-xdist). The suite spends part of its time waiting on loopback
    servers, child processes and deadlines; the extra worker runs while another waits (on two
    cores the default lane took 160 s with three workers, 174 s with two)."""
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "").strip()
    if given.isdigit():
        return int(given)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # a platform without CPU affinity
        cores = os.cpu_count() or 1
    return cores + 1


SLOW_FIXTURES = ("ray_cluster", "zygote")
"""Fixtures only the slow lane may use: a Ray instance, the kill tests' warm process."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that uses a fixture of `SLOW_FIXTURES` must be marked `slow`, so that it runs in
    the slow lane only (the default lane is `-m "not slow"`); the tests that share the Ray
    instance are one `xdist_group`, so that under the slow lane's `--dist=loadgroup` one worker
    runs them all, with one Ray instance (a worker that runs a kill test starts its own warm
    process: a second one costs a second, where one group of every kill test on one worker
    could leave the other idle).

    The long tests go first, the many short ones last: `slow` ones, then property tests,
    then the rest, each in collection order. Handed out in that order, the workers end
    together, where a long test dealt last would leave the other worker idle while it runs."""
    unmarked = [
        item.nodeid
        for item in items
        if item.get_closest_marker("slow") is None
        and any(name in getattr(item, "fixturenames", ()) for name in SLOW_FIXTURES)
    ]
    if unmarked:
        raise pytest.UsageError(
            f"mark these tests `@pytest.mark.slow` (they use {', '.join(SLOW_FIXTURES)}): "
            + ", ".join(unmarked)
        )
    for item in items:  # one Ray instance: its tests on one worker (the slow lane's loadgroup)
        if _uses_ray(item):
            item.add_marker(pytest.mark.xdist_group("ray_cluster"))
    items.sort(key=_expected_length)


def pytest_collection_finish(session: pytest.Session) -> None:
    _RAY_TESTS_LEFT.update(item.nodeid for item in session.items if _uses_ray(item))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """The Ray instance stops once the session has run its last test that uses it, not at the
    end of the session: its idle processes cost about a tenth of a core, for the minutes the
    rest of the slow lane runs. (Where a test is deselected or never run, the session's end
    stops it.)"""
    if item.nodeid in _RAY_TESTS_LEFT:
        _RAY_TESTS_LEFT.discard(item.nodeid)
        if not _RAY_TESTS_LEFT:
            _stop_ray()


_RAY_TESTS_LEFT: set[str] = set()


def _uses_ray(item: pytest.Item) -> bool:
    """Whether `item` uses the session's Ray instance (`ray_cluster`, directly or not)."""
    return "ray_cluster" in getattr(item, "fixturenames", ())


def _expected_length(item: pytest.Item) -> int:
    """-1 for a test of the Ray instance (their group is the longest unit of work), 0 for
    another test marked `slow`, 1 for a hypothesis property test, 2 for the others."""
    if item.get_closest_marker("slow") is not None:
        return -1 if _uses_ray(item) else 0
    function = getattr(item, "obj", None)
    return 1 if getattr(function, "is_hypothesis_test", False) else 2


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray instance (2 CPUs) for the whole session, shared by every test that runs
    Ray Data (starting one costs seconds). Its workers inherit `RAY_KEY_VAR`; each module
    passes its own server's URL to the client factory and registers itself for pickling by
    value (`ray_module`)."""
    pytest.importorskip("ray")
    import ray
    import ray.data

    from ray_env import RAY_KEY_VAR, RAY_SECRET

    saved = os.environ.get(RAY_KEY_VAR)
    os.environ[RAY_KEY_VAR] = RAY_SECRET
    with warnings.catch_warnings():  # about Ray's own settings, not healjson's use
        warnings.simplefilter("ignore", DeprecationWarning)
        context = ray.data.DataContext.get_current()
        progress = context.enable_progress_bars
        context.enable_progress_bars = False
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            # keep up to two idle workers whatever the actors hold (by default Ray keeps as many
            # as there are CPUs no actor holds): a worker that imported Ray Data and healjson
            # for one test runs the next one's tasks, rather than a new one importing them again
            _system_config={"num_workers_soft_limit": 2},
        )
    try:
        yield
    finally:
        _stop_ray()
        context.enable_progress_bars = progress
        if saved is None:
            os.environ.pop(RAY_KEY_VAR, None)
        else:
            os.environ[RAY_KEY_VAR] = saved


def _stop_ray() -> None:
    import ray

    if ray.is_initialized():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ray.shutdown()


@pytest.fixture(scope="module")
def ray_module(request: pytest.FixtureRequest, ray_cluster: None) -> Iterator[None]:
    """The session's Ray instance, with the requesting test module shipped to the workers by
    value (they need not import pytest and the test's helpers)."""
    import ray.cloudpickle

    module = request.module
    ray.cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        ray.cloudpickle.unregister_pickle_by_value(module)


@pytest.fixture(scope="session")
def zygote() -> Iterator[Any]:
    """The kill tests' warm process (`zygote.Zygote`): each victim is a child forked from it,
    with `victims` and all it needs imported once for the session."""
    if not hasattr(os, "fork"):
        pytest.skip("needs os.fork")
    from zygote import Zygote

    started = Zygote(["victims"], sys.path)
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def closing() -> Iterator[contextlib.ExitStack]:
    """An exit stack a test enters what it opens into (`closing.enter_context(OpenAI(...))`):
    each is closed when the test ends, the last opened first."""
    with contextlib.ExitStack() as stack:
        yield stack


class LogRecords(logging.Handler):
    """The log records a test's code sent (what pytest's `caplog` gave: its logging plugin is
    off, `-p no:logging`, so that a run sees what an application without logging set up sees:
    nothing listens, and runs take the drivers' quick start unless a test listens)."""

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []
        self._levels: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def clear(self) -> None:
        """Forget the records so far."""
        self.records.clear()

    def set_level(self, level: int, logger: str | None = None) -> None:
        """`logger` (the root when None) at `level` until the test ends."""
        target = logging.getLogger(logger)
        self._levels.setdefault(target.name, target.level)
        target.setLevel(level)

    @contextlib.contextmanager
    def at_level(self, level: int, logger: str | None = None) -> Iterator[None]:
        """`logger` at `level` for the block."""
        target = logging.getLogger(logger)
        before = target.level
        target.setLevel(level)
        try:
            yield
        finally:
            target.setLevel(before)

    def restore(self) -> None:
        for name, level in self._levels.items():
            logging.getLogger(None if name == "root" else name).setLevel(level)


@pytest.fixture
def caplog() -> Iterator[LogRecords]:
    """Every record logged during the test, by a handler on the root logger (`.records`,
    `.set_level`, `.at_level`, `.clear`, as pytest's own fixture of that name)."""
    handler = LogRecords()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        handler.restore()
