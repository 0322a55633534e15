"""Shared fixtures and hypothesis profiles.

One environment variable picks the hypothesis profile, `HEALJSON_HYPOTHESIS_PROFILE`: the one
healjson's pytest plugin reads for users (`_healjson_pytestplugin.PROFILE_ENV`).
`HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough` runs many more examples (1000 per property);
unset, the suite runs its fast default, `ci` (60 examples), which CI uses.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import pkgutil
import re
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from _healjson_pytestplugin import PROFILE_ENV


def _one_default_tls_context() -> None:
    """The provider SDKs (openai, anthropic, google-genai, pydantic-ai, the Agents SDK) build
    each client's HTTP transport through `httpx2`, which builds a default TLS context for it,
    and each context loads the system's CA bundle: about 50 ms, for each of the suite's
    thousands of clients (they talk plain HTTP to the loopback servers). Here a context is
    built once per setting and shared, as an application that shares one `http_client` does."""
    try:
        import httpcore2
    except ImportError:  # an SDK release on plain httpx: nothing to share
        return
    build = getattr(httpcore2, "default_ssl_context", None)
    if callable(build) and not hasattr(build, "cache_info"):
        httpcore2.default_ssl_context = functools.lru_cache(maxsize=None)(build)


_one_default_tls_context()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the process that reports the coverage
        _each_file_analysed_once()
        if getattr(config.option, "numprocesses", None):  # it waits while the workers run
            threading.Thread(target=_rewrite_test_modules, args=(config,), daemon=True).start()


def _rewrite_test_modules(config: pytest.Config) -> None:
    """Each worker imports every test module, and pytest rewrites each one's asserts as it
    does: about 14 s of CPU per worker for this suite, done again by every worker (and on
    every run where `PYTHONDONTWRITEBYTECODE` is set, as in CI). The controlling process is
    idle meanwhile: here it rewrites them once, in the order the workers import them, and
    leaves each in pytest's cache of rewritten modules, where a worker that gets there later
    reads it (pytest checks a cached module against its source's hash). Best effort: where
    pytest's internals differ, the workers rewrite as before."""
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        for source in sorted(Path(__file__).parent.rglob("test_*.py")):
            cache = rewrite.get_cache_dir(source)
            pyc = cache / (source.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(source, pyc) is None and rewrite.try_makedirs(cache):
                source_hash, code = rewrite._rewrite_test(source, config)
                rewrite._write_pyc(state, code, source_hash, pyc)
    except Exception:  # pytest's internals changed: nothing is lost but the head start
        return


def _each_file_analysed_once() -> None:
    """pytest-cov reports twice at the end of a run (the total for `--cov-fail-under`, then
    the `term-missing` table), and coverage reads and parses every measured file anew for
    each: about 5 s each time for healjson's sources. Here the reporting process keeps each
    file's reporter, and so its parse, for the second report. (`_get_file_reporter` is
    coverage's own; where a release lacks it, both reports parse as before.)"""
    try:
        from coverage.control import Coverage
    except ImportError:
        return
    find = getattr(Coverage, "_get_file_reporter", None)
    if not callable(find) or getattr(find, "kept", False):
        return

    def kept(self: Any, morf: Any) -> Any:
        if not isinstance(morf, str):
            return find(self, morf)
        reporters = self.__dict__.setdefault("_reporters_kept_for_the_suite", {})
        if morf not in reporters:
            reporters[morf] = find(self, morf)
        return reporters[morf]

    kept.kept = True  # type: ignore[attr-defined]
    Coverage._get_file_reporter = kept  # type: ignore[method-assign]


settings.register_profile("ci", max_examples=60, deadline=None)
if not os.environ.get(PROFILE_ENV, "").strip():  # otherwise the plugin loads the one named
    settings.load_profile("ci")


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """Coverage measures healjson's modules as they are imported, then pauses while pytest
    collects: collecting imports every test module in every worker (each provider SDK, its
    thousands of pydantic models, pytest's assertion rewriting of each module), and under the
    coverage tracer that took twice as long, for lines that are not healjson's. What a test
    module runs of healjson at import time is not counted; the tests run it again."""
    controller = _coverage_controller(session.config)
    if controller is None:
        return
    import healjson

    controller.pause()
    _import_what_healjson_imports(Path(healjson.__path__[0]))
    controller.resume()
    for module in pkgutil.walk_packages(healjson.__path__, "healjson."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    controller.pause()
    session.stash[_PAUSED] = controller


def _import_what_healjson_imports(package: Path) -> None:
    """The other packages healjson's modules import at their top level (pydantic-ai, the
    Agents SDK, instructor, ...), imported with coverage paused: under the tracer their
    import took a third longer, for lines coverage does not count. healjson's own module
    lines still run, and count, when its modules are imported next."""
    for path in package.rglob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            found = _TOP_LEVEL_IMPORT.match(line)
            name = found and (found.group(1) or found.group(2))
            if name and name.partition(".")[0] != "healjson":
                with contextlib.suppress(Exception):  # an extra that is not installed
                    importlib.import_module(name)


_TOP_LEVEL_IMPORT = re.compile(r"(?:from +([A-Za-z_][\w.]*) +import\b|import +([A-Za-z_][\w.]*))")


def pytest_collection_finish(session: pytest.Session) -> None:
    controller = session.stash.get(_PAUSED, None)
    if controller is not None:
        controller.resume()
    _RAY_TESTS_LEFT.update(item.nodeid for item in session.items if _uses_ray(item))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """The Ray instance stops once this process has run its last test that uses it, not at
    the end of the session: its idle processes cost about a tenth of a core, for the minutes
    the rest of the suite runs. (The whole `ray` group runs in one worker, so that worker
    meets every one of them; where a test is never run, the session's end stops it.)"""
    if item.nodeid in _RAY_TESTS_LEFT:
        _RAY_TESTS_LEFT.discard(item.nodeid)
        if not _RAY_TESTS_LEFT:
            _stop_ray()


_RAY_TESTS_LEFT: set[str] = set()


_PAUSED = pytest.StashKey[Any]()


def _coverage_controller(config: pytest.Config) -> Any:
    """pytest-cov's measuring controller in this process, if it measures."""
    plugin = config.pluginmanager.get_plugin("_cov")
    controller = getattr(plugin, "cov_controller", None)
    return controller if getattr(controller, "started", False) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that uses the Ray instance runs on one pytest-xdist worker (`--dist
    loadgroup`): one instance is started per worker that needs one, and two would cost a
    second start-up and two sets of Ray's processes competing for the same cores. (xdist
    hands out the largest group first, so that worker starts with the Ray tests.)

    The long tests go first, the many short ones last: `slow` ones, then property tests,
    then the rest, each in collection order. Handed out in that order, the workers end
    together, where a long test dealt last would leave the other worker idle while it runs."""
    on_worker = hasattr(config, "workerinput")
    for item in items:
        if on_worker and _uses_ray(item):
            _join_xdist_group(item, "ray")
    items.sort(key=_expected_length)


def _uses_ray(item: pytest.Item) -> bool:
    """Whether `item` uses the session's Ray instance (`ray_cluster`, directly or not)."""
    return "ray_cluster" in getattr(item, "fixturenames", ())


def _join_xdist_group(item: pytest.Item, group: str) -> None:
    """Put `item` in xdist's `loadgroup` group `group`. The scheduler reads a test's group
    from its node id, after the last `@`. pytest-xdist writes that suffix for an
    `xdist_group` mark into `item._nodeid`, which pytest 9.2 no longer reads (node ids became
    structured, pytest-xdist #1386): the mark then groups nothing and each worker started
    its own Ray instance. So the suffix is written here, as each pytest reads it."""
    if item.nodeid.endswith(f"@{group}"):
        return
    grouped = f"{item.nodeid}@{group}"
    structured = getattr(item, "_id", None)
    if structured is not None:
        item._id = type(structured).parse(grouped)  # type: ignore[attr-defined]
    else:
        item._nodeid = grouped  # type: ignore[attr-defined]


def _expected_length(item: pytest.Item) -> int:
    """0 for a test marked `slow`, 1 for a hypothesis property test, 2 for the others."""
    if item.get_closest_marker("slow") is not None:
        return 0
    function = getattr(item, "obj", None)
    return 1 if getattr(function, "is_hypothesis_test", False) else 2


RAY_KEY_VAR = "HEALJSON_RAY_TEST_API_KEY"
RAY_SECRET = "sk-ray-test-4f9c2d7e1b8a6035"
"""The API key Ray's workers read from their environment (set before the cluster starts: a
worker's environment is the one the cluster was started with)."""


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """One local Ray instance (2 CPUs) for the whole session, shared by every test that runs
    Ray Data (starting one costs seconds). Its workers inherit `RAY_KEY_VAR`; each module
    passes its own server's URL to the client factory and registers itself for pickling by
    value (`ray_module`)."""
    pytest.importorskip("ray")
    import ray
    import ray.data

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
