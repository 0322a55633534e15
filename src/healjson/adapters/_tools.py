"""`create(..., tools=[...], heal_tools=True)`: the caller's own tool calls, healed.

The tools are read from the request as the caller wrote them, in the provider's tool dialect
(`healjson._providers.provider.ToolDialect`: each provider's module has its own), or as a
pydantic model class (sent as the dialect's tool named after the class, its arguments validated
as the model). A tool declared with a model keeps it (the calls' arguments are validated as that
model); one declared by a JSON schema has its calls validated against that schema (the
arguments are the JSON value). A custom tool (a dialect's `custom`: OpenAI chat's `{"type":
"custom", "custom": {...}}`, the Responses API's flat `{"type": "custom", "name", ...}`) is
declared by its name alone: its calls carry free text, accepted exactly as sent (no JSON
read, no schema, no `tool_contracts`), and come back as calls of kind `custom`.
Other tools (a provider's built-in ones) are passed on and their calls are not function calls.

`tool_contracts={"name": [rules]}` are the contracts of that tool's arguments. A `tool_choice`
that forces a call (as the dialect reads it) is kept to (see `healjson._core.run.tools`). The
run is the one loop's (`start_tools`), driven here (sync or awaited, streamed through the
provider's collector or not) with the client's secrets scope around it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

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
from healjson._core.wire.reply import CUSTOM
from healjson._providers import PROVIDERS, resolve
from healjson._providers.provider import ToolDialect

__all__ = [
    "check_tool_call",
    "heal_tool_calls",
    "stream_tool_calls",
    "tool_dialect",
    "tool_spec",
]

Style = str | ToolDialect
"""A tool dialect, or its name (a provider's in the registry: `chat`, `responses`, ...)."""


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
    pydantic model classes become wire tools, in the dialect `style` names)."""
    dialect = style if isinstance(style, ToolDialect) else tool_dialect(style)
    declared: dict[str, Tool] = {}
    sent: list[Any] = []
    contracts = dict(tool_contracts or {})
    for tool in params["tools"]:
        custom = dialect.custom(tool) if dialect.custom is not None else None
        if custom is not None:  # free-text input: no target, no contract reads it
            if custom in declared:
                raise ValueError(f"tools: two tools are named {custom!r}")
            if custom in contracts:
                raise ValueError(
                    f"tool_contracts: {custom!r} is a custom tool: its input is free text, "
                    "taken as sent, which no contract reads"
                )
            declared[custom] = Tool(custom, target_for(str), (), CUSTOM)
            sent.append(tool)
            continue
        found = _read_tool(tool, dialect)
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
    return ToolSpec(declared, policy, dialect.forced(params.get("tool_choice")))


def tool_dialect(name: str) -> ToolDialect:
    """The tool dialect called `name` (the providers' modules are read in registry order until
    one has it)."""
    for provider in PROVIDERS:
        if provider.tools is not None:
            dialect = resolve(provider.tools)
            if isinstance(dialect, ToolDialect) and dialect.name == name:
                return dialect
    raise ValueError(f"no provider has a tool dialect called {name!r}")


def _read_tool(tool: Any, dialect: ToolDialect) -> tuple[str, Target[Any], Any] | None:
    """A function tool's name, target and wire form (None: not a function tool)."""
    if isinstance(tool, type) and issubclass(tool, BaseModel):
        return tool.__name__, target_for(tool), dialect.wire(tool)
    found = dialect.read(tool)
    if found is None:
        return None
    name, parameters, wire = found
    if isinstance(parameters, type) and issubclass(parameters, BaseModel):
        return name, target_for(parameters), wire
    return name, _schema_target(name, parameters), wire


def _schema_target(name: str, parameters: Any) -> Target[Any]:
    """The target of a tool declared by a JSON schema (none: any JSON object). A call's
    arguments are a JSON object whatever the schema says (every provider's tool calls carry an
    object): a schema without `type` (`{}`, or `properties` alone) is read as an object's, and
    one whose `type` allows no object is refused as a declaration."""
    if parameters is None:
        return target_for(dict[str, Any])
    if not isinstance(parameters, Mapping):
        raise ValueError(f"tools: parameters must be a JSON schema object, got {parameters!r}")
    schema = dict(parameters)
    kind = schema.setdefault("type", "object")
    if kind != "object" and not (isinstance(kind, list) and "object" in kind):
        raise ValueError(
            f"tools: {name!r}: parameters must describe a JSON object (a call's arguments are "
            f"one), got type {kind!r}"
        )
    if isinstance(kind, list):
        schema["type"] = "object"  # `["object", "null"]`: the arguments are still an object
    schema.setdefault("title", name)  # the target's name in what the model is told
    return target_for(schema)


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
        return drive_async(run, call, scope)
    outcome: Outcome[ToolCalls] = drive_sync(run, call, scope)
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
