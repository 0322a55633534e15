"""DSPy's adapter callbacks, run once per `format` and once per `parse`, for `healjson.dspy`.

DSPy runs its callbacks (the global ones, `dspy.settings.callbacks`, then the adapter's own,
`Adapter.callbacks`) around an adapter's `format` and `parse`: `Adapter.__init_subclass__`
wraps each subclass's two methods in `with_callbacks` (a method a subclass inherits from
another subclass is wrapped again: DSPy's JSON adapter runs its `format` callbacks twice).
`HealAdapter` is such a subclass, and so is the adapter it wraps, so:

* `HealAdapter`'s own `format` and `parse` are the ones DSPy's wrappers report, and its
  callbacks are the wrapped adapter's (the global ones and the wrapped adapter's each run
  once);
* the wrapped adapter's methods are called without DSPy's wrappers (`own`): every callback
  would run a second time on them;
* a prediction `HealAdapter` reads itself (its healed run, repairs included) reports its one
  parse through the same wrapper (`report_parse`), after the LM calls: each callback sees
  `format`, the LM calls, `parse`, as with the bare adapter.

Imported by `healjson.dspy` only.
"""

from __future__ import annotations

import inspect
from typing import Any, Final

from dspy.utils.callback import with_callbacks

__all__ = ["own", "report_parse"]


def _sample(self: Any) -> None:  # pragma: no cover - never called: its wrapper's code is read
    return None


async def _asample(self: Any) -> None:  # pragma: no cover - never called
    return None


# DSPy's callback wrappers (sync and async) share their code object whatever they wrap: a
# method is one of them exactly when its code is one of these
_WRAPPERS: Final = frozenset((with_callbacks(_sample).__code__, with_callbacks(_asample).__code__))


def _wrapper(fn: Any) -> bool:
    return getattr(fn, "__code__", None) in _WRAPPERS


def own(adapter: Any, name: str) -> Any:
    """`adapter`'s method `name`, bound, without DSPy's callback wrappers around it (any other
    decorator kept)."""
    method = inspect.unwrap(getattr(type(adapter), name), stop=lambda fn: not _wrapper(fn))
    return method.__get__(adapter, type(adapter))


def report_parse(adapter: Any, signature: Any, completion: str, found: Any) -> Any:
    """`found` (the output fields an answer was read as, or the `AdapterParseError` it ended
    with, raised here) reported through DSPy's callbacks as `adapter.parse(signature,
    completion)` is: the same event, the same inputs."""

    def parse(self: Any, signature: Any, completion: str) -> Any:
        if isinstance(found, BaseException):
            raise found
        return found

    return with_callbacks(parse)(adapter, signature, completion)
