"""A tool's schemas as healjson targets (`ToolSchemas`), and a session's tools listed once
(`ToolIndex`): the first call of a tool lists the server's tools (every page); later calls
read the index. A name the index does not hold is listed again on each call that names it
(the server may list it now; until it does, it has no schema to heal against), a listing
made elsewhere (the caller's own `list_tools`) replaces what the index holds, and the server's
`listChanged` notification empties it (`forget`: every tool is listed again at its next call).
A listing under way when the notification arrives is read again from its first page (at most
`MAX_RELISTS` times; the last one read is then what the new index holds): no page read before
the change is lost, nor kept when a fresh listing can replace it. A tool whose schema cannot
be used, whatever building it raises, is set aside alone (`ToolSchemas.problem`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .internals import Target, target_for

__all__ = ["Lister", "ToolIndex", "ToolSchemas", "schemas_of"]

MAX_PAGES: Final = 100
"""Pages of `tools/list` read at most in one listing (a server whose cursors never end)."""

MAX_RELISTS: Final = 3
"""Listings read at most for one need, when the server's tools keep changing under them."""

Lister = Callable[[str | None], Awaitable[tuple[Iterable[Any], str | None]]]
"""Lists one page of tools: a cursor (None: the first page) -> (the page's tools, the next
cursor or None). A tool is any object with `name`, `input_schema` and `output_schema` (the
SDK's `Tool`)."""


@dataclass(frozen=True, slots=True)
class ToolSchemas:
    """One tool's schemas as targets. `input` / `output`: None when the tool declares none, or
    one that is not a usable JSON Schema (`problem` says why: that side is then not healed)."""

    name: str
    input: Target[Any] | None = None
    output: Target[Any] | None = None
    problem: str | None = None


def schemas_of(name: str, input_schema: Any, output_schema: Any) -> ToolSchemas:
    """The targets for a tool's `inputSchema` and `outputSchema` (a schema that is not JSON
    Schema, or refers outside itself, is not used: the server's mistake, noted in `problem`)."""
    problems: list[str] = []
    inputs = _target(input_schema, "inputSchema", problems)
    outputs = _target(output_schema, "outputSchema", problems)
    return ToolSchemas(name, inputs, outputs, "; ".join(problems) or None)


def _target(schema: Any, what: str, problems: list[str]) -> Target[Any] | None:
    if not isinstance(schema, Mapping):
        return None
    try:
        return target_for(dict(schema))
    except Exception as exc:  # RecursionError included: that tool's schema alone is set aside
        problems.append(f"{what} is not used: {type(exc).__name__}: {exc}"[:500])
        return None


class ToolIndex:
    """A session's tools, by name, listed on first need through `lister` (one listing at a
    time, however many calls wait on it)."""

    def __init__(self, lister: Lister) -> None:
        self._lister = lister
        self._tools: dict[str, ToolSchemas] = {}
        self._changes = 0  # `forget` calls so far: a listing they interrupt is read again
        self._lock: Any = None  # an anyio.Lock, made on first use (inside the event loop)

    async def get(self, name: str) -> ToolSchemas | None:
        """The tool's schemas, listing the tools when the index does not hold `name` (None:
        the server does not list it). A listing that fails raises, and nothing is recorded."""
        found = self._tools.get(name)
        if found is not None:
            return found
        if self._lock is None:
            import anyio

            self._lock = anyio.Lock()
        async with self._lock:
            found = self._tools.get(name)
            if found is None:
                found = (await self._list()).get(name)
        return found

    def forget(self) -> None:
        """The server's tools changed: the next call of any tool lists them again (and a
        listing under way is read again)."""
        self._changes += 1
        self._tools = {}

    def absorb(self, tools: Iterable[Any]) -> None:
        """Take in a listing made elsewhere (the caller's own `list_tools`): its tools replace
        what the index held for their names."""
        for tool in tools:
            _remember(self._tools, tool)

    async def _list(self) -> dict[str, ToolSchemas]:
        """Every page, read into a listing of its own, then taken into the index; read again
        when the tools changed while it was read. Returns the listing."""
        listed: dict[str, ToolSchemas] = {}
        for _ in range(MAX_RELISTS):
            changes = self._changes
            listed = {}
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                page, cursor = await self._lister(cursor)
                for tool in page:
                    _remember(listed, tool)
                if cursor is None:
                    break
            if changes == self._changes:
                break
        self._tools.update(listed)
        return listed


def _remember(tools: dict[str, ToolSchemas], tool: Any) -> None:
    name = getattr(tool, "name", None)
    if not isinstance(name, str):
        return
    # rebuilt on every listing: `target_for` finds an unchanged schema's target by its
    # rendering, so a re-listing costs a lookup per tool
    tools[name] = schemas_of(
        name, getattr(tool, "input_schema", None), getattr(tool, "output_schema", None)
    )
