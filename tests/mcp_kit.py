"""What the MCP integration tests share: the tools, the failure families, the ways to connect.

The failure families are the ones public trackers report for MCP tool results: JSON only in a
text block, keys in another case, numbers as strings, the result wrapped in one more object,
a required field missing, a value of the wrong type. Each family is a `Family`: the result a
sloppy server sends, and what a healed client must hand back (the value, with its flags; or an
error result naming the field).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import anyio
from mcp import Client, ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from healjson import MISSING
from healjson.mcp import heal_session
from healjson.testing import ScriptedMCPServer, ScriptedTool, ScriptedToolResult
from healjson.testing._mcp_server import ToolScriptItem

WEATHER: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number"},
        "city": {"type": "string"},
        "conditions": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["temperature", "city"],
    "additionalProperties": False,
}
WEATHER_INPUT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "options": {
            "type": "object",
            "properties": {"units": {"type": "string"}, "days": {"type": "integer"}},
            "additionalProperties": False,
        },
        "hours": {"type": "array", "items": {"type": "integer"}},
    },
    "required": ["city"],
    "additionalProperties": False,
}
GOOD: Final[dict[str, Any]] = {"temperature": 21.5, "city": "Oslo", "conditions": ["sunny"]}


@dataclass(frozen=True)
class Family:
    """A way a server's result goes wrong: what it sends; what the healed client returns
    (`value` with `flags`, or `error_field`: an error result whose text names that field)."""

    name: str
    sent: ScriptedToolResult
    value: Any = MISSING
    flags: tuple[str, ...] = ()
    error_field: str | None = None


FAMILIES: Final[tuple[Family, ...]] = (
    Family(
        "json_only_in_text",
        ScriptedToolResult(text='{"temperature": 21.5, "city": "Oslo", "conditions": ["sunny"]}'),
        GOOD,
        ("structured_from_text",),
    ),
    Family(
        "keys_in_another_case",
        ScriptedToolResult(
            structured={"Temperature": 21.5, "CITY": "Oslo", "Conditions": ["sunny"]}
        ),
        GOOD,
        ("keys_aligned",),
    ),
    Family(
        "numbers_as_strings",
        ScriptedToolResult(
            structured={"temperature": "21.5", "city": "Oslo", "conditions": ["sunny"]}
        ),
        GOOD,
        ("coerced",),
    ),
    Family(
        "wrapped_in_one_more_object",
        ScriptedToolResult(structured={"weather": GOOD}),
        GOOD,
        ("unwrapped",),
    ),
    Family(
        "missing_required_field",
        ScriptedToolResult(structured={"city": "Oslo", "conditions": ["sunny"]}),
        error_field="temperature",
    ),
    Family(
        "wrong_type",
        ScriptedToolResult(structured={"temperature": "warm", "city": "Oslo"}),
        error_field="temperature",
    ),
)


def weather_server(
    *results: ToolScriptItem, echo: Sequence[ToolScriptItem] = (), **options: Any
) -> ScriptedMCPServer:
    """A scripted server with the `get_weather` tool answering `results`, and `echo` (no output
    schema) answering `echo`."""
    return ScriptedMCPServer(
        [
            ScriptedTool("get_weather", WEATHER_INPUT, WEATHER, "Today's weather in a city."),
            ScriptedTool("echo", {"type": "object"}),
        ],
        {"get_weather": list(results), "echo": list(echo)},
        **options,
    )


@contextlib.asynccontextmanager
async def memory_session(server: Any) -> AsyncIterator[ClientSession]:
    """A `ClientSession` over the SDK's in-memory streams to a low-level `server` (the
    2025-11-25 handshake), closed with everything it opened."""
    async with (
        create_client_server_memory_streams() as (client_side, server_side),
        anyio.create_task_group() as group,
    ):
        group.start_soon(lambda: server.run(*server_side, server.create_initialization_options()))
        async with ClientSession(*client_side) as session:
            await session.initialize()
            yield session
        group.cancel_scope.cancel()


CONNECTIONS: Final = ("client", "session")
"""The in-memory ways to reach a low-level server: the SDK's `Client` (its direct, 2026-07-28
path) and a `ClientSession` over the SDK's memory streams (the 2025-11-25 handshake)."""


@contextlib.asynccontextmanager
async def connect(
    kind: str, server: Any, *, heal: bool = True, **options: Any
) -> AsyncIterator[Any]:
    """A connection of `kind` to `server`, wrapped by healjson (`heal`: with `options`, through
    `healjson.mcp.heal_session`) or bare."""
    if kind == "client":
        client = Client(server)
        async with heal_session(client, **options) if heal else client as connected:
            yield connected
        return
    async with memory_session(server) as session:
        yield heal_session(session, **options) if heal else session


async def caught(awaitable: Awaitable[Any]) -> Any:
    """What `awaitable` returns, or the exception it raises (caught where it is raised: out of
    an SDK's task group it would come wrapped in an exception group)."""
    try:
        return await awaitable
    except Exception as exc:
        return exc


def run(coroutine: Callable[[], Any]) -> Any:
    """Run an async test body on a fresh event loop."""
    return anyio.run(coroutine)
