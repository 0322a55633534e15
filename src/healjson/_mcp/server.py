"""Server side: `heal_tools(server)` for the SDK's `MCPServer` and low-level `Server`.

The server's `tools/call` handler is wrapped (the SDK's own way to wrap it, as its extensions'
interceptors are: `Server.add_request_handler`), so what it returns is judged before the SDK
shapes it for the wire, whatever the transport:

- incoming arguments are normalised against the tool's input schema before the handler reads
  them (`arguments`): a stringified object or array where the schema says object or array, keys
  in another case, `"5"` for an integer;
- a success result is judged against the tool's output schema and healed (`results`): sent with
  conforming structured content, or as an error result whose text is the diagnostics instead of
  the protocol error or the generic "Error executing tool" the SDK would send;
- for an `MCPServer`, the tool function's own return value is what gets healed: its
  `call_tool` runs the tool, judges the value (or the `CallToolResult` it returned) against
  the tool's output schema with healjson's judge, never the SDK's laxer conversion alone
  (which sends `True` for a float as `1.0`, NaN as null), and converts the healed value (so a
  tool that returns a JSON string, a dict with a key in another case, or `"5"` for a number
  answers with conforming structured content, and `true` for a number an error result);
- a low-level handler's result is judged whether it is a `CallToolResult` or the mapping of
  one the SDK would send (a `"complete"` result).

Schemas: an `MCPServer`'s come from its tools, read on each call; a low-level `Server`'s from
its own `tools/list` handler, called for each `tools/call` with that call's own context (so a
result is judged against the schema the server lists now, after a `listChanged` too). A
listing that fails (or a server without one) means no schema is known: the call runs and its
result goes out as the handler returned it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from mcp import types
from mcp.server import MCPServer, Server
from mcp.server.mcpserver.exceptions import UnexpectedToolError
from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from healjson._attached import attach

from .arguments import Normalised, normalise_arguments
from .calls import (
    check_tool_contracts,
    combined_outcome,
    healed_result,
    report,
    structured_of,
    texts_of,
)
from .internals import HealPolicy
from .results import Verdict, conforms, judge_result
from .tools import ToolIndex, ToolSchemas, schemas_of

__all__ = ["heal_tools"]

_MARK: Final = "_healjson_heals_tools"
_NOT_JUDGED: Final = Verdict(None)  # an `MCPServer`'s results: judged in its `call_tool`


def heal_tools(
    server: Any,
    *,
    tool_contracts: Mapping[str, Iterable[Any]] | None = None,
    policy: HealPolicy | None = None,
) -> Any:
    """Make `server` (an `MCPServer` or a low-level `Server`) answer `tools/call` with
    conforming structured content or an error result with diagnostics, and accept arguments
    that fit its input schemas once normalised (see the module's documentation). Returns the
    server. Calling it again replaces the rules and policy (one healing layer)."""
    if isinstance(server, MCPServer):
        lowlevel = server._lowlevel_server  # the SDK's own clients and transports reach it so
    elif isinstance(server, Server):
        lowlevel = server
    else:
        raise TypeError(
            "heal_tools takes an mcp.server.MCPServer or an mcp.server.Server, "
            f"got {type(server).__name__}"
        )
    entry = lowlevel.get_request_handler("tools/call")
    if entry is None:
        raise ValueError(
            "the server has no tools/call handler: give Server(on_call_tool=...) (or add tools "
            "to the MCPServer) before heal_tools(server)"
        )
    if policy is not None and not isinstance(policy, HealPolicy):
        raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
    healing = _ServerHealing(
        server if isinstance(server, MCPServer) else None,
        lowlevel,
        check_tool_contracts(tool_contracts),
        "reask" if policy is None else policy.on_ambiguity,
    )
    inner = getattr(entry.handler, _MARK, entry.handler)  # healed again: the handler beneath
    handler = healing.handler(inner)
    setattr(handler, _MARK, inner)
    lowlevel.add_request_handler("tools/call", entry.params_type, handler)
    if isinstance(server, MCPServer):
        healing.heal_return_values(server)
    return server


class _ServerHealing:
    """One server's healing: where its schemas come from, its rules, its ambiguity mode."""

    def __init__(
        self,
        mcp_server: MCPServer[Any] | None,
        lowlevel: Server[Any],
        rules: dict[str, tuple[Any, ...]],
        on_ambiguity: Any,
    ) -> None:
        self.mcp_server = mcp_server
        self.lowlevel = lowlevel
        self.rules = rules
        self.on_ambiguity = on_ambiguity
        self.by_tool: dict[str, tuple[Any, ToolSchemas]] = {}

    def handler(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """The healed `tools/call` handler around `original`."""

        async def healed_call_tool(ctx: Any, params: Any) -> Any:
            schemas = await self.schemas(ctx, params.name)
            normalised = normalise_arguments(
                schemas, params.arguments, on_ambiguity=self.on_ambiguity
            )
            if normalised.changed:
                params = params.model_copy(update={"arguments": normalised.arguments})
            result = await original(ctx, params)
            if self.mcp_server is not None:  # its return values were healed in `call_tool`
                report(params.name, _NOT_JUDGED, normalised, side="server")
                return result
            return self.finish(params.name, schemas, result, normalised)

        return healed_call_tool

    def finish(
        self, name: str, schemas: ToolSchemas | None, result: Any, normalised: Normalised
    ) -> Any:
        """A handler's `CallToolResult`, or the mapping of one the SDK would send (a
        `"complete"` result), judged and healed (anything else passes; an unchanged mapping
        goes out as the handler returned it)."""
        given = result
        if isinstance(result, Mapping):
            result = _as_result(result)
        if not isinstance(result, types.CallToolResult):
            return given
        verdict = judge_result(
            name,
            schemas,
            structured=structured_of(result),
            texts=texts_of(result),
            is_error=result.is_error,
            rules=self.rules.get(name, ()),
            context={"tool": name, "arguments": normalised.arguments},
            on_ambiguity=self.on_ambiguity,
        )
        healed = healed_result(result, verdict)
        if healed is result:
            healed = given
        outcome = combined_outcome(verdict, normalised)
        if outcome is not None:
            attach(healed, outcome)
        report(name, verdict, normalised, side="server")
        return healed

    async def schemas(self, ctx: Any, name: str) -> ToolSchemas | None:
        """The tool's schemas: an `MCPServer`'s own tool, or the low-level server's listing."""
        if self.mcp_server is not None:
            tool = self.mcp_server._tool_manager.get_tool(name)
            if tool is None:
                return None
            known = self.by_tool.get(name)
            if known is None or known[0] is not tool:
                known = (tool, _schemas(name, tool))
                self.by_tool[name] = known
            return known[1]
        entry = self.lowlevel.get_request_handler("tools/list")
        if entry is None:
            return None
        try:  # listed now, with this call's context (a listed schema may have changed)
            return await ToolIndex(self._lister(entry, ctx)).get(name)
        except Exception:  # the listing fails: no schema is known, the call runs unhealed
            return None

    def _lister(self, entry: Any, ctx: Any) -> Any:
        async def list_page(cursor: str | None) -> tuple[list[Any], str | None]:
            page: Any = await entry.handler(ctx, types.PaginatedRequestParams(cursor=cursor))
            if isinstance(page, Mapping):
                page = types.ListToolsResult.model_validate(page)
            return list(page.tools), page.next_cursor

        return list_page

    def heal_return_values(self, server: MCPServer[Any]) -> None:
        """An `MCPServer`'s `call_tool`: the tool's return value healed before conversion."""
        original = getattr(server.call_tool, _MARK, server.call_tool)
        manager = server._tool_manager

        async def call_tool(name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            tool = manager.get_tool(name)
            if context is None or tool is None or tool.output_schema is None:
                return await original(name, arguments, context)
            raw = await manager.call_tool(name, arguments, context, convert_result=False)
            return self.converted(name, tool, raw, arguments)

        setattr(call_tool, _MARK, original)
        server.call_tool = call_tool  # type: ignore[method-assign]

    def converted(self, name: str, tool: Any, raw: Any, arguments: Any) -> Any:
        """A tool's return value judged against its output schema by healjson (never the SDK's
        laxer conversion alone, which reads `True` as `1.0` or sends NaN as null), healed, then
        converted by the SDK. A tool without a usable output schema, or a value that is not
        data, gets the SDK's own conversion; one that still fails is the SDK's crash
        (`UnexpectedToolError`, its generic message: nothing of the value reaches the
        client), as without healjson."""
        if isinstance(raw, types.InputRequiredResult):
            return raw
        known = self.by_tool.get(name)
        schemas = known[1] if known is not None and known[0] is tool else _schemas(name, tool)
        try:
            if schemas.output is None:
                return tool.fn_metadata.convert_result(raw)
            return self._healed_value(name, tool, schemas, raw, arguments)
        except Exception as exc:  # not data, or refused: the SDK's crash, as without us
            raise UnexpectedToolError(f"Error executing tool {name}") from exc

    def _healed_value(
        self, name: str, tool: Any, schemas: ToolSchemas, raw: Any, arguments: Any
    ) -> Any:
        metadata = tool.fn_metadata
        normalised = Normalised(arguments)
        if isinstance(raw, types.CallToolResult):
            return self.finish(name, schemas, raw, normalised)
        try:
            data = to_jsonable_python(raw, by_alias=True)
        except Exception:  # not data (content blocks): the SDK's conversion, judged as sent
            return self.finish(name, schemas, metadata.convert_result(raw), normalised)
        structured = {"result": data} if metadata.wrap_output else data
        verdict = judge_result(
            name,
            schemas,
            structured=structured,
            texts=(),
            is_error=False,
            rules=self.rules.get(name, ()),
            context={"tool": name, "arguments": arguments},
            on_ambiguity=self.on_ambiguity,
        )
        report(name, verdict, normalised, side="server")
        if verdict.error is not None:  # the value is kept, as a JSON text block
            kept = types.CallToolResult(content=[], structured_content=data)
            result = healed_result(kept, verdict)
        else:
            value = verdict.value
            if metadata.wrap_output:  # the schema's `{"result": ...}`: the function's value
                value = value["result"]
            result = metadata.convert_result(value)
            if not conforms(schemas.output, structured_of(result)):  # the SDK's conversion
                return self.finish(name, schemas, result, normalised)  # changed it: judged
        if verdict.outcome is not None:
            attach(result, verdict.outcome)
        return result


def _schemas(name: str, tool: Any) -> ToolSchemas:
    """An `MCPServer` tool's schemas (one that cannot be used is set aside: that tool alone)."""
    try:
        return schemas_of(name, tool.parameters, tool.output_schema)
    except Exception as exc:
        return ToolSchemas(name, problem=f"its schemas are not used: {type(exc).__name__}")


def _as_result(result: Mapping[Any, Any]) -> Any:
    """A handler's mapping as the `CallToolResult` it spells (None: it is not one)."""
    if result.get("resultType", "complete") != "complete":
        return None
    try:
        return types.CallToolResult.model_validate(result)
    except ValidationError:
        return None
