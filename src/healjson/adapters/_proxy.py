"""Attribute passthrough for a wrapped client's `chat` and `chat.completions` namespaces, and
an OpenAI client's `beta`; a wrapped client's context-manager protocols.

An adapter's `chat.completions` has healjson's `create` (`_base.Completions`); every other
attribute of `client.chat` and `client.chat.completions` is the wrapped client's. An OpenAI
client's `beta.chat` is the wrapped client's `chat`, healed the same (`BetaProxy`).

Python looks `__enter__` / `__exit__` / `__aenter__` / `__aexit__` up on the type, never through
`__getattr__`, so a wrapper supports `with` / `async with` only by defining them
(`ContextPassthrough`): each is the wrapped client's, where its type has it (what it returns
bound to the wrapper when it is the wrapped client itself, so the block heals), and where it
has none, reading it raises what Python raises for the bare client (`NoContextProtocol`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

__all__ = [
    "BetaProxy",
    "ChatProxy",
    "CompletionsProxy",
    "ContextPassthrough",
    "Forwarding",
    "NoContextProtocol",
    "special_method",
]


class Forwarding:
    """A wrapper whose other attributes are another object's (`forwarded()`, read through the
    wrapper's own attribute `state`). The wrapper is read as the object it forwards to is:
    `dir()` lists that object's attributes beside its own. An instance made without
    `__init__` (as `copy.copy`, `copy.deepcopy` and `pickle` make one) forwards nothing until
    its state is set: its attributes are missing (AttributeError), never looked up through
    the state it lacks, which would recurse."""

    __slots__ = ()
    state: ClassVar[str] = "_owner"

    def forwarded(self) -> Any:
        """The object this wrapper's other attributes are read from."""
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        try:
            object.__getattribute__(self, self.state)
        except AttributeError:
            raise AttributeError(name) from None  # not set up (a copy being made)
        return getattr(self.forwarded(), name)

    def __dir__(self) -> list[str]:
        names = set(object.__dir__(self))
        try:
            object.__getattribute__(self, self.state)
            names.update(dir(self.forwarded()))
        except Exception:  # a wrapper not set up, or a client whose attributes fail: its own
            pass
        return sorted(names)


class CompletionsProxy(Forwarding):
    """Base of an adapter's `chat.completions`: unknown attributes go to the wrapped client's."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner

    def forwarded(self) -> Any:
        return self._owner.wrapped.chat.completions


class ChatProxy(Forwarding):
    """`client.chat`: healjson's `completions`; other attributes go to the wrapped client's."""

    def __init__(self, owner: Any, completions: CompletionsProxy) -> None:
        self._owner = owner
        self.completions = completions

    def forwarded(self) -> Any:
        return self._owner.wrapped.chat


class BetaProxy(Forwarding):
    """`client.beta` of a wrapped OpenAI client: its `chat` is the wrapped client's healing
    `chat` (the SDK's `beta.chat.completions` is its `chat.completions`: `parse` and `stream`
    with a type as `response_format` return the SDK's types, healed); other attributes go to
    the wrapped client's `beta`."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner

    @property
    def chat(self) -> Any:
        """The wrapped client's `chat`, healing (where the SDK's `beta` has a `chat`)."""
        if not hasattr(self._owner.wrapped.beta, "chat"):
            raise AttributeError("the wrapped client's beta has no attribute 'chat'")
        return self._owner.chat

    def forwarded(self) -> Any:
        return self._owner.wrapped.beta


_NONE: Final[Any] = object()

# what `with` / `async with` say of an object whose type lacks the method (CPython 3.11+)
_UNSUPPORTED: Final = {
    "__enter__": "the context manager protocol",
    "__exit__": "the context manager protocol (missed __exit__ method)",
    "__aenter__": "the asynchronous context manager protocol",
    "__aexit__": "the asynchronous context manager protocol (missed __aexit__ method)",
}


class NoContextProtocol(TypeError, AttributeError):
    """A wrapper's context-manager method where the wrapped object's type has none: the
    TypeError (and its message) `with` / `async with` raise for the bare object, and an
    AttributeError, so that `hasattr(wrapper, "__enter__")` is what it is for the bare object."""


def special_method(obj: Any, name: str) -> Any:
    """`obj`'s special method `name`, bound to it, found as `with` finds it: on its type's MRO
    (not the instance, not `__getattr__`); `None` when its type has none."""
    for klass in type(obj).__mro__:
        found = vars(klass).get(name, _NONE)
        if found is not _NONE:
            bind = getattr(type(found), "__get__", None)
            return found if bind is None else bind(found, obj, type(obj))
    return None


class _Passed:
    """One context-manager method of a wrapper (`ContextPassthrough`): the wrapped object's."""

    def __init__(self, enters: bool, awaits: bool) -> None:
        self.enters = enters
        self.awaits = awaits
        self.name = ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def __get__(self, wrapper: Any, owner: type[Any] | None = None) -> Callable[..., Any]:
        if wrapper is None:  # read on the class (`ExitStack.enter_context` does): a function
            return self._unbound
        client = wrapper.wrapped
        method = special_method(client, self.name)
        if method is None:
            raise NoContextProtocol(
                f"'{type(client).__name__}' object does not support {_UNSUPPORTED[self.name]}"
            )
        if not self.enters:  # the exit: the wrapped client's own, its arguments and result
            return method  # type: ignore[no-any-return]
        if self.awaits:

            async def aenter() -> Any:
                entered = await method()
                return wrapper if entered is client else entered

            return aenter

        def enter() -> Any:
            entered = method()
            return wrapper if entered is client else entered

        return enter

    def _unbound(self, wrapper: Any, *args: Any, **kwargs: Any) -> Any:
        return self.__get__(wrapper, type(wrapper))(*args, **kwargs)


class ContextPassthrough:
    """A wrapper (of `wrapped`) that is a context manager exactly where `wrapped` is one:
    `with` binds the wrapper (where the wrapped client's `__enter__` returns itself, as every
    SDK client's does) and exits as the wrapped client does (closing it); `async with` alike.
    Where `wrapped` lacks a protocol, the wrapper raises what Python raises for it."""

    __enter__ = _Passed(enters=True, awaits=False)
    __exit__ = _Passed(enters=False, awaits=False)
    __aenter__ = _Passed(enters=True, awaits=True)
    __aexit__ = _Passed(enters=False, awaits=True)
