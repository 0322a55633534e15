"""`ScriptedMCPServer`: an MCP server whose tools answer what a test scripts, for testing an
agent's (or a client's) MCP handling without a real server.

    scripted = ScriptedMCPServer(
        [ScriptedTool("get_weather", output_schema=WEATHER)],
        {"get_weather": [
            ScriptedToolResult(text='{"temperature": 21.5, "city": "Oslo"}'),  # JSON in text only
            ScriptedToolResult(structured={"Temperature": "21.5", "City": "Oslo"}),  # off-schema
            ScriptedToolResult(text="upstream timeout", is_error=True),  # an error result
            ScriptedToolResult(structured={"temperature": 3, "city": "Oslo"}, delay_s=0.5),
        ]},
    )
    async with Client(scripted.server) as client: ...              # in memory
    StdioClient: scripted.stdio_parameters(tmp_path)               # over stdio, a subprocess

The server is the SDK's low-level `Server`: it sends each result exactly as scripted (no output
check of its own), so every way a real server goes wrong can be scripted. By default it checks
each call's arguments against the tool's input schema as real servers do, answering a protocol
error `-32602` (`Invalid params`) for arguments that do not conform (`check_arguments=False`
accepts anything). Each tool's results are served in order; `repeat=True` cycles them; an
exhausted script is a protocol error `-32603` naming the tool. A script item may also be a
function of the call's arguments returning a `ScriptedToolResult`. Every call is recorded
(`calls`).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeAlias

from healjson._core.sentinels import MISSING

__all__ = [
    "RecordedToolCall",
    "ScriptedMCPServer",
    "ScriptedTool",
    "ScriptedToolResult",
    "ToolScriptItem",
]

SCRIPT_FILE: Final = "mcp-script.json"
CALLS_FILE: Final = "mcp-calls.jsonl"


def _object_schema() -> dict[str, Any]:
    return {"type": "object"}


@dataclass(frozen=True, slots=True)
class ScriptedTool:
    """A tool the scripted server lists: its name, input schema (default: any object) and output
    schema (None: it declares none)."""

    name: str
    input_schema: Mapping[str, Any] = field(default_factory=_object_schema)
    output_schema: Mapping[str, Any] | None = None
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The tool as script-file data."""
        data: dict[str, Any] = {"name": self.name, "input_schema": dict(self.input_schema)}
        if self.output_schema is not None:
            data["output_schema"] = dict(self.output_schema)
        if self.description:
            data["description"] = self.description
        return data


@dataclass(frozen=True, slots=True)
class ScriptedToolResult:
    """One scripted `tools/call` answer.

    `structured`: the structured content (`healjson.MISSING`, the default: none is sent; the
    SDK drops a `None` on the wire, so JSON `null` cannot be sent). `text`: the text blocks (a
    string is one block); None: the structured content's JSON text when there is structured
    content (as SDK servers send it), else no text; `()`: no text block. `is_error`: an error
    result. `delay_s`: seconds to wait before answering (a slow tool).
    """

    structured: Any = MISSING
    text: str | Sequence[str] | None = None
    is_error: bool = False
    delay_s: float = 0.0

    def texts(self) -> tuple[str, ...]:
        """The text blocks sent."""
        if self.text is None:
            return () if self.structured is MISSING else (json.dumps(self.structured),)
        if isinstance(self.text, str):
            return (self.text,)
        return tuple(self.text)

    def to_result(self) -> Any:
        """The SDK's `CallToolResult` sent for this answer."""
        from mcp import types

        content = [types.TextContent(type="text", text=text) for text in self.texts()]
        if self.structured is MISSING:
            return types.CallToolResult(content=content, is_error=self.is_error)
        return types.CallToolResult(
            content=content, structured_content=self.structured, is_error=self.is_error
        )

    def to_dict(self) -> dict[str, Any]:
        """The answer as script-file data (`structured` left out when MISSING)."""
        data: dict[str, Any] = {}
        if self.structured is not MISSING:
            data["structured"] = self.structured
        if self.text is not None:
            data["text"] = self.text if isinstance(self.text, str) else list(self.text)
        if self.is_error:
            data["is_error"] = True
        if self.delay_s:
            data["delay_s"] = self.delay_s
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScriptedToolResult:
        """An answer from script-file data (ValueError for keys it does not know)."""
        unknown = set(data) - {"structured", "text", "is_error", "delay_s"}
        if unknown:
            raise ValueError(f"unknown keys in a scripted tool result: {sorted(unknown)}")
        text = data.get("text")
        return cls(
            structured=data.get("structured", MISSING),
            text=text if text is None or isinstance(text, str) else tuple(text),
            is_error=bool(data.get("is_error", False)),
            delay_s=float(data.get("delay_s", 0.0)),
        )


ToolScriptItem: TypeAlias = ScriptedToolResult | Callable[[Any], ScriptedToolResult]
"""A scripted answer, or a function of the call's arguments that returns one."""


@dataclass(frozen=True, slots=True)
class RecordedToolCall:
    """A `tools/call` the scripted server received: the tool's name and the arguments as they
    arrived (after any normalisation the client did)."""

    name: str
    arguments: dict[str, Any] | None


class ScriptedMCPServer:
    """An MCP server (the SDK's low-level `Server`) whose tools answer from a script (see the
    module's documentation)."""

    def __init__(
        self,
        tools: Iterable[ScriptedTool],
        results: Mapping[str, Iterable[ToolScriptItem]] | None = None,
        *,
        repeat: bool = False,
        check_arguments: bool = True,
        name: str = "scripted-mcp",
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.results = {tool: list(items) for tool, items in (results or {}).items()}
        unknown = set(self.results) - set(self.tools)
        if unknown:
            raise ValueError(f"results for tools the server does not list: {sorted(unknown)}")
        self.repeat = repeat
        self.check_arguments = check_arguments
        self.name = name
        self.calls: list[RecordedToolCall] = []
        self._record_to: Path | None = None
        self._lock = threading.Lock()
        self._next: dict[str, Iterator[ToolScriptItem]] = {
            tool: itertools.cycle(items) if repeat and items else iter(items)
            for tool, items in self.results.items()
        }
        self._server: Any = None

    @property
    def server(self) -> Any:
        """The SDK's low-level `mcp.server.Server` (built on first use): `Client(server)`
        connects to it in memory, `healjson.mcp.heal_tools(server)` heals it."""
        if self._server is None:
            from mcp.server import Server

            self._server = Server(
                self.name, on_list_tools=self._list_tools, on_call_tool=self._call_tool
            )
        return self._server

    def client(self, **kwargs: Any) -> Any:
        """An `mcp.Client` connected to this server in memory (enter it with `async with`)."""
        from mcp import Client

        return Client(self.server, **kwargs)

    # -- over stdio ---------------------------------------------------------------------------

    def script(self) -> dict[str, Any]:
        """The server as script-file data (ValueError when a script item is a function)."""
        results: dict[str, list[dict[str, Any]]] = {}
        for tool, items in self.results.items():
            if not all(isinstance(item, ScriptedToolResult) for item in items):
                raise ValueError(
                    f"the script of tool {tool!r} holds a function: only ScriptedToolResult "
                    "items can be written to a script file (serve it in memory instead)"
                )
            results[tool] = [item.to_dict() for item in items]  # type: ignore[union-attr]
        return {
            "name": self.name,
            "tools": [tool.to_dict() for tool in self.tools.values()],
            "results": results,
            "repeat": self.repeat,
            "check_arguments": self.check_arguments,
        }

    @classmethod
    def from_script(cls, data: Mapping[str, Any]) -> ScriptedMCPServer:
        """A server from script-file data (`script()`'s shape)."""
        tools = [ScriptedTool(**tool) for tool in data.get("tools", ())]
        results = {
            tool: [ScriptedToolResult.from_dict(item) for item in items]
            for tool, items in dict(data.get("results", {})).items()
        }
        return cls(
            tools,
            results,
            repeat=bool(data.get("repeat", False)),
            check_arguments=bool(data.get("check_arguments", True)),
            name=str(data.get("name", "scripted-mcp")),
        )

    def stdio_parameters(self, directory: str | os.PathLike[str], *, heal: bool = False) -> Any:
        """Write the script to `directory` and return the `mcp.StdioServerParameters` that
        start this server as a subprocess over stdio (`python -m healjson.testing mcp`); the
        calls it receives are recorded in the directory too (`recorded_calls(directory)`).
        `heal=True`: the subprocess serves through `healjson.mcp.heal_tools`."""
        from mcp import StdioServerParameters

        folder = Path(directory)
        script = folder / SCRIPT_FILE
        script.write_text(json.dumps(self.script()), encoding="utf-8")
        calls = folder / CALLS_FILE
        calls.write_text("", encoding="utf-8")
        args = ["-m", "healjson.testing", "mcp", "--script", str(script), "--calls", str(calls)]
        if heal:
            args.append("--heal")
        return StdioServerParameters(command=sys.executable, args=args, cwd=str(folder))

    @staticmethod
    def recorded_calls(directory: str | os.PathLike[str]) -> list[RecordedToolCall]:
        """The calls a server started with `stdio_parameters(directory)` received, in order."""
        lines = (Path(directory) / CALLS_FILE).read_text(encoding="utf-8").splitlines()
        return [RecordedToolCall(**json.loads(line)) for line in lines if line.strip()]

    def record_to(self, path: str | os.PathLike[str]) -> None:
        """Append each call received, as a JSON line, to `path` (the stdio process)."""
        self._record_to = Path(path)

    async def run_stdio(self) -> None:
        """Serve over this process's stdin and stdout until the client closes them."""
        from mcp.server.stdio import stdio_server

        server = self.server
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    # -- the handlers ---------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description or None,
                    input_schema=dict(tool.input_schema),
                    output_schema=None if tool.output_schema is None else dict(tool.output_schema),
                )
                for tool in self.tools.values()
            ]
        )

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        import anyio
        from mcp import MCPError
        from mcp.types import INTERNAL_ERROR, INVALID_PARAMS

        name, arguments = params.name, params.arguments
        self._record(RecordedToolCall(name, arguments))
        tool = self.tools.get(name)
        if tool is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
        if self.check_arguments:
            problem = _argument_problem(tool.input_schema, {} if arguments is None else arguments)
            if problem is not None:
                raise MCPError(code=INVALID_PARAMS, message=f"Invalid params: {problem}")
        with self._lock:
            item = next(self._next.get(name, iter(())), None)
        if item is None:
            served = len(self.results.get(name, ()))
            raise MCPError(
                code=INTERNAL_ERROR,
                message=f"the script of tool {name!r} is exhausted ({served} results)",
            )
        answer = item if isinstance(item, ScriptedToolResult) else item(arguments)
        if answer.delay_s > 0:
            await anyio.sleep(answer.delay_s)
        return answer.to_result()

    def _record(self, call: RecordedToolCall) -> None:
        self.calls.append(call)
        if self._record_to is not None:
            line = json.dumps({"name": call.name, "arguments": call.arguments})
            with self._record_to.open("a", encoding="utf-8") as file:
                file.write(line + "\n")


def _argument_problem(schema: Mapping[str, Any], arguments: Any) -> str | None:
    """What a schema-checking server says of arguments that do not conform (None: they do)."""
    from jsonschema import validators
    from jsonschema.exceptions import best_match

    validator = validators.validator_for(dict(schema))(dict(schema))
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "arguments"
    return f"{where}: {error.message}"
