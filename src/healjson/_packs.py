"""Contract packs: a model, its contracts and golden examples, loaded from outside the engine.

`load_contracts(spec)` takes a file path (`packs/tickets.py`), the name of an installed pack (an
entry point of the `healjson.contracts` group: the example packs `"support_ticket"`, `"invoice"`
and `"itinerary"` register there the way any other package's pack does), or a
`package.module[:attribute]` reference, tried in that order. No module of healjson imports a pack.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, overload

from typing_extensions import TypeVar

from ._core.judge.contracts import Contract, as_contracts

if TYPE_CHECKING:
    from collections.abc import Iterable
    from importlib.metadata import EntryPoint

    from ._core.judge.contracts import Rule
    from ._core.run.healer import Healer
    from ._core.target.target import SpecialForm

T = TypeVar("T", default=Any)  # a bare `ContractPack` is a `ContractPack[Any]`

__all__ = [
    "ENTRY_POINT_GROUP",
    "ContractPack",
    "installed_packs",
    "load_contracts",
    "load_file",
]

ENTRY_POINT_GROUP = "healjson.contracts"


@dataclass(frozen=True, slots=True, init=False)
class ContractPack(Generic[T]):
    """A domain's model, business rules and golden examples, ready for a `Healer`: a
    `ContractPack[M]` for a model class `M` (`ContractPack[Any]` for any other target: a
    `list[...]`, a JSON Schema dict, or a pack loaded by name).

    `strategies` optionally maps `"valid"` and contract names to zero-argument functions that
    return hypothesis strategies: instances that pass every rule, and instances that break exactly
    that rule. `healjson.testing` uses them (falling back to schema-driven generation) — they are
    functions so that importing a pack never imports hypothesis.
    """

    model: type[T]
    contracts: tuple[Contract[T], ...]
    examples: tuple[Any, ...]
    name: str
    description: str
    strategies: Mapping[str, Callable[[], Any]] = field(compare=False)
    extra: dict[str, Any] = field(compare=False)

    @overload
    def __init__(
        self: ContractPack[T],
        model: type[T],
        contracts: Iterable[Rule[T]] = (),
        examples: Iterable[Any] = (),
        *,
        name: str = "",
        description: str = "",
        strategies: Mapping[str, Callable[[], Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None: ...
    @overload
    def __init__(
        self: ContractPack[Any],
        model: SpecialForm | Mapping[str, Any],
        contracts: Iterable[Rule[Any]] = (),
        examples: Iterable[Any] = (),
        *,
        name: str = "",
        description: str = "",
        strategies: Mapping[str, Callable[[], Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None: ...
    def __init__(
        self,
        model: Any,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        examples: Iterable[Any] = (),
        *,
        name: str = "",
        description: str = "",
        strategies: Mapping[str, Callable[[], Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        rules = as_contracts(contracts)  # one rule alone is refused, saying how to fix it
        strategies = {} if strategies is None else strategies
        unknown = set(strategies) - {"valid"} - {rule.name for rule in rules}
        if unknown:
            raise ValueError(
                f"ContractPack strategies name no contract of this pack: {sorted(unknown)}; "
                f"use 'valid' or one of {[rule.name for rule in rules]}"
            )
        values = {
            "model": model,
            "contracts": rules,
            "examples": tuple(examples),
            "name": name or getattr(model, "__name__", "pack"),
            "description": description,
            "strategies": strategies,
            "extra": {} if extra is None else extra,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def healer(self, **options: Any) -> Healer[T]:
        """A `Healer` for this pack (`policy=`, `fallback=` pass through)."""
        from ._core.run.healer import Healer

        found: Healer[T] = Healer(
            self.model, contracts=self.contracts, examples=self.examples, **options
        )
        return found

    def contract(self, name: str) -> Contract[T]:
        """The pack's contract called `name` (KeyError lists the names there are)."""
        for rule in self.contracts:
            if rule.name == name:
                return rule
        raise KeyError(
            f"{self.name} has no contract {name!r}; it has {[r.name for r in self.contracts]}"
        )


def load_contracts(spec: str | Path) -> ContractPack[Any]:
    """Load a `ContractPack`; `spec` is tried, in this order, as:

    1. a file path: a spec ending in `.py`, or `file.py:attribute` (relative to the working
       directory; a missing file is a `LookupError` at once, nothing else is tried);
    2. the name of an installed pack: an entry point in the `healjson.contracts` group. The
       example packs `"support_ticket"`, `"invoice"` and `"itinerary"` register there like any
       other package's pack, so they load by name from any directory;
    3. an importable module, `package.module` or `package.module:attribute`.

    Without an attribute a module's pack is its `pack` (or `PACK`), else its only `ContractPack`;
    an attribute (or `pack`) may also be a zero-argument function returning the pack. Raises
    `LookupError` naming everything that was tried when nothing matches.
    """
    text = str(spec)
    tried: list[str] = []
    path = Path(text.split(":", 1)[0]) if text.endswith(".py") or ".py:" in text else None
    if path is not None:
        attribute = text.split(":", 1)[1] if ".py:" in text else None
        if not path.is_file():
            raise LookupError(f"no contract pack file at {path} (resolved to {path.resolve()})")
        return _pick(load_file(path), attribute, f"file {path}")
    module_name, _, attribute = text.partition(":")
    points = _entry_points()
    if text in points:
        ep = points[text]
        loaded = ep.load()
        pack = loaded() if callable(loaded) and not isinstance(loaded, ContractPack) else loaded
        if isinstance(pack, ContractPack):
            return pack
        raise TypeError(f"entry point {ep.value!r} gave {pack!r}, not a healjson.ContractPack")
    names = ", ".join(sorted(points)) or "none"
    tried.append(
        f"entry point {text!r} in group {ENTRY_POINT_GROUP!r} (the installed packs are {names})"
    )
    if not all(part.isidentifier() for part in module_name.split(".")):
        # `../x`, `.x`, `` are no module's absolute name (`import_module` would raise a
        # TypeError or ValueError of its own): nothing to import, one more thing tried
        tried.append(f"module {module_name!r} (not a module name: use package.module)")
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            tried.append(f"module {module_name!r} ({exc})")
        else:
            return _pick(module, attribute or None, f"module {module_name}")
    raise LookupError(f"could not load contract pack {text!r}; tried: " + "; ".join(tried))


def installed_packs() -> dict[str, str]:
    """The installed packs, sorted by name: name -> the `module:attribute` its entry point in the
    `healjson.contracts` group names. `load_contracts(name)` loads one."""
    points = _entry_points()
    return {name: points[name].value for name in sorted(points)}


def _entry_points() -> dict[str, EntryPoint]:
    """The `healjson.contracts` entry points by name; of two with one name, the first found."""
    from importlib.metadata import entry_points  # lazily: importlib.metadata costs ~30 ms

    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def load_file(path: Path) -> ModuleType:
    name = f"healjson_pack_{path.stem}_{abs(hash(str(path.resolve())))}"
    if name in sys.modules:
        return sys.modules[name]
    import importlib.util  # loading a pack from a file: not at `import healjson`

    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise LookupError(f"cannot import {path} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pydantic resolve annotations through sys.modules
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _pick(module: ModuleType, attribute: str | None, where: str) -> ContractPack[Any]:
    if attribute:
        value = getattr(module, attribute, None)
        if value is None:
            raise LookupError(f"{where} has no attribute {attribute!r}")
        return _as_pack(value, f"{where}:{attribute}")
    for conventional in ("pack", "PACK"):
        if hasattr(module, conventional):
            return _as_pack(getattr(module, conventional), f"{where}:{conventional}")
    packs = [v for v in vars(module).values() if isinstance(v, ContractPack)]
    if len(packs) == 1:
        return packs[0]
    raise LookupError(
        f"{where} defines {len(packs)} ContractPack objects; name one as `{where}:NAME` "
        "or call it `pack`"
    )


def _as_pack(value: Any, where: str) -> ContractPack[Any]:
    if isinstance(value, ContractPack):
        return value
    if callable(value):
        made = value()
        if isinstance(made, ContractPack):
            return made
    raise TypeError(f"{where} is {type(value).__name__}, not a healjson.ContractPack")
