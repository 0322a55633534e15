"""A wrapped client and each namespace of it forward what they do not define to the SDK's
object, without ever recursing: `copy.copy` works where it works on the bare client (and the
copy heals), `copy.deepcopy` and `pickle` fail as they fail on the bare client, an instance
made without `__init__` simply lacks its attributes, and `dir()` lists the SDK object's
attributes beside healjson's."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")  # the floor lane has the OpenAI SDK alone
ollama = pytest.importorskip("ollama")
genai = pytest.importorskip("google.genai")

import openai  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pydantic import BaseModel  # noqa: E402

import healjson  # noqa: E402
from healjson import Healed  # noqa: E402
from healjson.adapters._proxy import Forwarding  # noqa: E402
from healjson.testing import ScriptedServer  # noqa: E402
from pinned import pinned  # noqa: E402

LOOPBACK = "http://127.0.0.1:9"


class Person(BaseModel):
    name: str
    age: int


MAKERS: dict[str, Callable[[], Any]] = {
    "openai": lambda: openai.OpenAI(api_key="sk-test", base_url=f"{LOOPBACK}/v1"),
    "openai-async": lambda: openai.AsyncOpenAI(api_key="sk-test", base_url=f"{LOOPBACK}/v1"),
    "anthropic": lambda: anthropic.Anthropic(api_key="sk-test", base_url=LOOPBACK),
    "anthropic-async": lambda: anthropic.AsyncAnthropic(api_key="sk-test", base_url=LOOPBACK),
    "ollama": lambda: ollama.Client(host=LOOPBACK),
    "ollama-async": lambda: ollama.AsyncClient(host=LOOPBACK),
    "gemini": lambda: genai.Client(api_key="k", http_options={"base_url": LOOPBACK}),
}


# each namespace of a wrapped client healjson defines, as a path from the client
PATHS: dict[str, tuple[str, ...]] = {
    "openai": ("", "chat", "chat.completions", "responses", "beta"),
    "openai-async": ("", "chat", "chat.completions", "responses"),
    "anthropic": ("", "messages", "beta", "beta.messages"),
    "anthropic-async": ("", "messages"),
    "ollama": ("", "chat"),
    "ollama-async": ("", "chat"),
    "gemini": ("", "models", "aio", "aio.models"),
}
CASES = [(name, path) for name, paths in PATHS.items() for path in paths]


def _at(root: Any, path: str) -> Any:
    for part in filter(None, path.split(".")):
        root = getattr(root, part)
    return root


def _outcome(call: Callable[[], Any]) -> str:
    try:
        call()
    except Exception as error:  # the exception's class is what is compared
        return type(error).__name__
    return "ok"


# a failed deep copy leaves the SDK's half-made HTTP client, whose `__del__` then fails: the SDK's
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(("name", "path"), CASES, ids=[f"{n}:{p or 'client'}" for n, p in CASES])
def test_copies_and_pickles_do_what_they_do_to_the_bare_object(name: str, path: str) -> None:
    """`copy.copy`, `copy.deepcopy` and `pickle.dumps` of a wrapped namespace succeed or fail
    (with the same exception class) as they do for the bare SDK's namespace, never recursing."""
    bare = MAKERS[name]()
    wrapped = healjson.wrap(bare)
    ours, theirs = _at(wrapped, path), _at(bare, path)
    assert _outcome(lambda: copy.copy(ours)) == _outcome(lambda: copy.copy(theirs))
    for make in (copy.deepcopy, pickle.dumps):
        assert "RecursionError" != _outcome(lambda: make(ours))  # noqa: B023
        assert (_outcome(lambda: make(ours)) == "ok") == (_outcome(lambda: make(theirs)) == "ok")  # noqa: B023


@pytest.mark.filterwarnings("ignore::UserWarning")  # google-genai's `agents`: "experimental"
@pytest.mark.parametrize(("name", "path"), CASES, ids=[f"{n}:{p or 'client'}" for n, p in CASES])
def test_dir_lists_the_sdk_objects_attributes(name: str, path: str) -> None:
    """Every public attribute `dir()` shows on the bare SDK's namespace is in the wrapped
    namespace's `dir()`, and each of them resolves."""
    bare = MAKERS[name]()
    ours, theirs = _at(healjson.wrap(bare), path), _at(bare, path)
    public = {attr for attr in dir(theirs) if not attr.startswith("_")}
    assert public <= set(dir(ours))
    assert all(hasattr(ours, attr) for attr in sorted(public)[:20])


def _forwarding_classes() -> list[type[Forwarding]]:
    """The forwarding classes of every wrapped namespace above."""
    found: dict[str, type[Forwarding]] = {}
    for name, paths in PATHS.items():
        wrapped = healjson.wrap(MAKERS[name]())
        for path in paths:
            kind = type(_at(wrapped, path))
            if issubclass(kind, Forwarding):
                found[kind.__qualname__ + kind.__module__] = kind
    return list(found.values())


FORWARDING = _forwarding_classes()


def test_every_namespace_forwards_through_the_one_base() -> None:
    """The namespaces above are all `Forwarding` (a wrapper with its own `__getattr__` would
    escape the rule)."""
    kinds = {type(_at(healjson.wrap(MAKERS[n]()), p)) for n, paths in PATHS.items() for p in paths}
    assert all(issubclass(kind, Forwarding) for kind in kinds), kinds


@pinned(max_examples=30)
@given(
    kind=st.sampled_from(FORWARDING),
    name=st.one_of(
        st.from_regex(r"\A_{0,2}[a-z][a-z_]{0,12}_{0,2}\Z"),
        st.sampled_from(["_core", "_owner", "wrapped", "__setstate__", "__reduce_ex__", "state"]),
    ),
)
def test_an_instance_not_set_up_lacks_its_attributes_and_never_recurses(
    kind: type[Forwarding], name: str
) -> None:
    """An instance made without `__init__` (as copies and unpicklings make one) raises
    AttributeError for any name it does not define, and its `dir()` works."""
    blank = object.__new__(kind)
    try:
        getattr(blank, name)
    except AttributeError:
        pass
    except RecursionError:  # pragma: no cover - the defect this guards
        pytest.fail(f"{kind.__name__}.{name} recursed")
    assert isinstance(dir(blank), list)


def test_a_shallow_copy_of_a_wrapped_client_heals() -> None:
    """`copy.copy(wrap(client))` is a working healing client."""
    with ScriptedServer(['{"name": "Ann", "age": 31}']) as server:
        bare = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        twin = copy.copy(healjson.wrap(bare))
        outcome = twin.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Ann is 31"}], response_model=Person
        )
    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
