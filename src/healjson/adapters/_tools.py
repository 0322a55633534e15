"""`create(..., tools=[...], heal_tools=True)`: the caller's own tool calls, healed.

The tools are read from the request as the caller wrote them, in the shapes the OpenAI SDK
takes: chat's `{"type": "function", "function": {"name", "parameters", ...}}`, the Responses
API's flat `{"type": "function", "name", "parameters", ...}`, the result of
`openai.pydantic_function_tool(Model)` (its model is kept: the calls' arguments are validated
as that model), or a pydantic model class itself (sent as a strict function tool named after
the class, its arguments validated as the model). A tool declared by a JSON schema has its
calls validated against that schema (the arguments are the JSON value). Other tools (built-in
ones, custom tools) are passed on and their calls are not function calls.

`tool_contracts={"name": [rules]}` are the contracts of that tool's arguments. `tool_choice`
`"required"` or a named function forces a call (see `healjson._core.run.tools`). The run itself is
`tools_flow`, driven here (sync or awaited) with the client's secrets scope around it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel

from healjson._core.judge.contracts import as_contract, check_policies
from healjson._core.outcome.calls import ToolCalls
from healjson._core.outcome.outcome import Outcome
from healjson._core.redact import secrets_scope
from healjson._core.run.drive import drive_async, drive_sync
from healjson._core.run.policy import HealPolicy
from healjson._core.run.streams import (
    AsyncToolCallStream,
    ToolCallStream,
    caller_events,
    caller_events_async,
)
from healjson._core.run.tools import Tool, ToolSpec, start_tools
from healjson._core.stream.reading import CallsReader, Collector
from healjson._core.target.target import Target, target_for
from healjson._core.wire.effects import ModelCall, new_model_call

__all__ = ["check_tool_call", "heal_tool_calls", "stream_tool_calls", "tool_spec"]

Style = Literal["chat", "responses", "anthropic"]


def check_tool_call(params: Mapping[str, Any], response_model: Any, unset: Any, where: str) -> None:
    """Raise TypeError for a `heal_tools=True` call healjson cannot heal as asked."""
    if response_model is not unset:
        raise TypeError(
            f"{where}: heal_tools=True heals the calls of your own tools=; it does not combine "
            "with response_model= (a structured answer is one value: declare it as a tool, "
            "or drop heal_tools)"
        )
    if not params.get("tools"):
        raise TypeError(f"{where}: heal_tools=True needs tools=[...]")


def tool_spec(
    params: dict[str, Any],
    tool_contracts: Mapping[str, Iterable[Any]] | None,
    policy: HealPolicy,
    *,
    style: Style,
) -> ToolSpec:
    """The healer's view of the request's tools (`params["tools"]` is rewritten in place:
    pydantic model classes become wire tools, in `style`: OpenAI chat's, the Responses API's
    flat shape, or Anthropic's)."""
    declared: dict[str, Tool] = {}
    sent: list[Any] = []
    contracts = dict(tool_contracts or {})
    for tool in params["tools"]:
        found = _read_tool(tool, style)
        if found is None:
            sent.append(tool)
            continue
        name, target, wire = found
        if name in declared:
            raise ValueError(f"tools: two tools are named {name!r}")
        rules = tuple(as_contract(rule) for rule in contracts.pop(name, ()))
        check_policies(rules, items=False)
        declared[name] = Tool(name, target, rules)
        sent.append(wire)
    if contracts:
        unknown = ", ".join(sorted(map(repr, contracts)))
        raise ValueError(f"tool_contracts names tools the request does not declare: {unknown}")
    params["tools"] = sent
    return ToolSpec(declared, policy, _required(params.get("tool_choice")))


def _read_tool(tool: Any, style: Style) -> tuple[str, Target[Any], Any] | None:
    """A function tool's name, target and wire form (None: not a function tool)."""
    if isinstance(tool, type) and issubclass(tool, BaseModel):
        return tool.__name__, target_for(tool), _wire_tool(tool, style)
    if style == "anthropic":
        return _anthropic_tool(tool)
    if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
        return None
    function = tool.get("function")
    holder: Any = function if isinstance(function, Mapping) else tool
    name = holder.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tools: a function tool needs a name, got {tool!r}")
    model = getattr(holder, "model", None) or getattr(tool, "model", None)
    # chat's shape on the Responses API (`openai.pydantic_function_tool(M)`'s): sent flat, as
    # that API takes it (and as the SDK's own `responses.parse` sends it)
    wire = {"type": "function", **holder} if style == "responses" and holder is not tool else tool
    if isinstance(model, type) and issubclass(model, BaseModel):
        return name, target_for(model), wire
    return name, _schema_target(name, holder.get("parameters")), wire


def _anthropic_tool(tool: Any) -> tuple[str, Target[Any], Any] | None:
    """An Anthropic client tool (`{"name", "input_schema", ...}`, type absent or `custom`);
    None for a server tool (`web_search_...`: its calls are not the caller's to check)."""
    if not isinstance(tool, Mapping) or tool.get("type", "custom") != "custom":
        return None
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tools: a tool needs a name, got {tool!r}")
    return name, _schema_target(name, tool.get("input_schema")), tool


def _schema_target(name: str, parameters: Any) -> Target[Any]:
    """The target of a tool declared by a JSON schema (none: any JSON object)."""
    if parameters is None:
        return target_for(dict[str, Any])
    if not isinstance(parameters, Mapping):
        raise ValueError(f"tools: parameters must be a JSON schema object, got {parameters!r}")
    schema = dict(parameters)
    schema.setdefault("title", name)  # the target's name in what the model is told
    return target_for(schema)


def _wire_tool(model: type[BaseModel], style: Style) -> dict[str, Any]:
    doc = (model.__doc__ or "").strip()
    if style == "anthropic":
        found: dict[str, Any] = {"name": model.__name__, "input_schema": model.model_json_schema()}
        return {**found, "description": doc} if doc else found
    from healjson._providers.openai_strict_schema import (
        StrictSchemaUnsupported,
        strict_json_schema,
    )

    try:
        parameters, strict = strict_json_schema(model).schema, True
    except StrictSchemaUnsupported:
        parameters, strict = model.model_json_schema(), False
    function: dict[str, Any] = {"name": model.__name__, "parameters": parameters, "strict": strict}
    if doc:
        function["description"] = doc
    if style == "responses":
        return {"type": "function", **function}
    return {"type": "function", "function": function}


def _required(choice: Any) -> bool | str:
    """What `tool_choice` forces: nothing (False), some call (True) or the named tool (OpenAI's
    `"required"` and named function; Anthropic's `any` and `tool`)."""
    if choice == "required":
        return True
    if isinstance(choice, Mapping) and choice.get("type") == "any":
        return True
    if isinstance(choice, Mapping) and choice.get("type") == "tool":
        name = choice.get("name")
        return name if isinstance(name, str) and name else False
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
        if isinstance(name, str) and name:
            return name
    return False


def heal_tool_calls(
    client: Any,
    call: Callable[..., Any],
    spec: ToolSpec,
    messages: Any,
    params: dict[str, Any],
    *,
    is_async: bool,
    context: Mapping[str, Any] | None,
) -> Outcome[ToolCalls] | Any:
    """The run (an awaitable of its outcome for an async client), driven inside the client's
    secrets scope."""
    run = start_tools(spec, messages, context=context, params=params)
    scope = secrets_scope(client, params)
    if is_async:
        return drive_async(run.flow, call, scope)
    outcome: Outcome[ToolCalls] = drive_sync(run.flow, call, scope)
    return outcome


def stream_tool_calls(
    client: Any,
    start: Callable[[ModelCall], Any],
    spec: ToolSpec,
    messages: Any,
    params: dict[str, Any],
    *,
    collector: Callable[[], Collector],
    is_async: bool,
    context: Mapping[str, Any] | None,
) -> ToolCallStream | AsyncToolCallStream:
    """The run with `stream=True`: the same drivers, given a reader of the provider's tool-call
    stream (`collector`); a stream of the answer's text, then the outcome."""
    run = start_tools(spec, messages, context=context, params=params)

    def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        return start(new_model_call(0, tuple(messages), params))

    reader, scope = CallsReader(collector), secrets_scope(client, params)
    if is_async:
        return AsyncToolCallStream(caller_events_async(run.flow, call, reader, scope))
    return ToolCallStream(caller_events(run.flow, call, reader, scope))
