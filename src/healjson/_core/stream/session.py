"""`StreamSession`: one streamed model call, read delta by delta (sans-I/O).

The drivers hand it each chunk's `Delta`; it keeps the text, the reasoning (apart) and the
finish reason and usage, feeds the answer text to a `JsonStream`, and says after each delta
whether there is a new snapshot to show. It also judges early what no later text can change
(`judge.py` says precisely when; in short, only an answer that is one JSON value by
construction — a tool call's arguments, a JSON-mode request — from its first character):

* a plain list target (`list[Item]`, no list-level rule): each item, once complete, is validated
  as the final check validates it, and judged by the item contracts as the final check judges
  it (`judge_value`: a contract that raises or changes the item is a `contract_error`): a valid
  item is `accepted` at once, a bad one `held` with its diagnostics while the rest keep flowing;
* an object target: each top-level field that can be judged alone, once complete, is validated
  by the model (an object JSON Schema: by a schema holding that property alone); each sync
  contract whose declared fields have all arrived runs on them. A breach no later text can
  repair sets `abort` (the driver closes the stream when the policy allows; the repair starts
  at once). Anything else waits for the final check.

Nothing here decides the outcome: at the end, the whole text is the attempt's reply and the
normal L1-L4 loop judges it (so a fenced or slightly broken stream still heals locally).

Per-delta cost: the reader's (linear in the delta) plus, when a snapshot is taken, a copy of the
open containers. A snapshot is taken when a member completes or a container opens; a growing
string alone gives a new snapshot only once it has grown by an eighth of its length (at least
16 characters); and a snapshot whose open containers hold N members waits until N / 4
characters have arrived since the last one. So copies cost linear time overall, not quadratic,
however long a string or a list grows.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Generator, Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, to_json

from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.judge.check import answer_tool_name, answer_tool_names
from healjson._core.judge.contracts import BLOCKING, Contract, ContractContext, run_contracts
from healjson._core.judge.judging import judge_value
from healjson._core.judge.schema_errors import schema_diagnostics
from healjson._core.parse import read, truncation_diagnostic
from healjson._core.parse.align import Fit, settled
from healjson._core.target.target import JsonSchema, Target, list_item_type, target_for
from healjson._core.wire.delta import Delta
from healjson._core.wire.effects import AwaitAll
from healjson._core.wire.reply import Reply, ToolCall, Usage, call_usage
from healjson._core.wire.tally import UsageTally

from .judge import Stand, judge_field, judge_schema_field
from .partial import Partial
from .reader import JsonStream

__all__ = ["StreamSession"]

_MIN_STRING_GROWTH = 16


class StreamSession:
    """One streamed call; see the module docstring."""

    def __init__(
        self,
        target: Target[Any],
        contracts: Sequence[Contract[Any]] = (),
        item_contracts: Sequence[Contract[Any]] = (),
        ctx: ContractContext | None = None,
        *,
        judge_early: bool = True,
        one_value: bool = False,
        shape: tuple[str | None, str | None] = (None, None),
    ) -> None:
        self._target = target
        # judged early: only rules a broken one of which re-asks whatever else the answer holds
        # ("reask"; none when a "stop" rule could end the run on the whole answer instead): a
        # warning, a local fix or a drop never stops a stream
        stops = any(rule.on_fail == "stop" for rule in (*contracts, *item_contracts))
        self._contracts = [
            rule for rule in contracts if rule.fields and rule.on_fail == "reask" and not stops
        ]
        self._one_value = one_value
        """The request constrains the answer to one JSON value (a tool call's arguments are
        one too: set when they arrive)."""
        self._root, self._inner = shape
        """How the enforced answer begins (`{`, `[`; an answer that begins otherwise was not
        enforced, and is judged only once whole), and the envelope key its list is under."""
        self._first: str | None = None  # the answer's first non-whitespace character
        self._seen: set[str] = set()
        # an item is judged as the final check judges it (`judge_value`, every rule: a warning's
        # rule that raises or changes the item is a contract error there too); it is held (not
        # handed out) when it breaks a rule that keeps it out of the value as streamed: any but
        # a warning (a fix changes it, a drop removes it), or when a rule has a bug
        self._item_contracts = tuple(item_contracts)
        self._contract_bug = False
        """An early contract raised or changed what it checks: the final check ends on a
        `contract_error`, so no later breach stops this answer early."""
        self._ctx = ctx or ContractContext()
        self._judge = judge_early
        self._reader = JsonStream()
        self._text: list[str] = []
        self._calls: list[tuple[str, list[str], ToolCall | None]] = []
        """The tool calls received, each `(name, argument pieces, the call when it came whole)`,
        as they came: a whole call is kept as sent (its id and kind: a custom tool's free-text
        input stays one) and no later piece joins it."""
        self._call_ids: list[str | None] = []
        """Each call's id as its pieces gave it (beside `_calls`, in the same places)."""
        self._at: dict[int | str, int] = {}
        """Where in `_calls` the call of each identity a piece gave (`Delta.tool_index`, else
        `Delta.tool_id`) is."""
        self._answering: list[str] | None = None
        """The pieces of the call streamed as the answer: the first that may be the answer
        tool's (named after the target, or not named), as `check.answer_text` reads calls."""
        self._answer_names = answer_tool_names(target)
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        """The usage the chunks reported so far (`UsageTally`'s rule), None before any."""
        self._tally = UsageTally()
        self.model: str | None = None
        self.chars = 0
        """Answer characters received."""
        self._snapshot_version = -1
        self._snapshot_chars = 0
        self._snapshot_string = -1
        self._fields_ok: dict[str, Any] = {}
        self._ran: set[int] = set()
        self.accepted: dict[int, Any] = {}
        """Items of a list target validated during the stream, by index."""
        self.held: dict[int, tuple[Diagnostic, ...]] = {}
        """Items of a list target that failed, by index, with why."""
        self.new_items: list[tuple[int, Any]] = []
        """Items accepted since the driver last cleared this list."""
        self.new_held: list[int] = []
        """Indexes of items held since the driver last cleared this list."""
        self.abort: tuple[Diagnostic, ...] | None = None
        """Set when the answer has a breach no later text can repair (see `judge.py`)."""
        self._item_type = list_item_type(target.type_)
        # whose top-level fields are judged alone: a model, or an object JSON Schema
        self._model = target.type_ if _is_model(target.type_) else None
        self._schema = target.type_ if isinstance(target.type_, JsonSchema) else None
        self._promise_items = (
            self._item_type is not None
            and not contracts
            and _plain_list(target.type_)
            and all(rule.on_fail in BLOCKING or rule.on_fail == "warn" for rule in item_contracts)
        )
        """Items can be handed out as they complete: a plain `list[X]` / `tuple[X, ...]` target
        with no list-level rule (a list contract, a length bound) that could make the final
        check replace the whole list."""
        if self._promise_items and self._inner is not None:  # the list is the envelope's
            self._reader.inner = self._inner

    # -- feeding ---------------------------------------------------------------------------------

    def feed(self, delta: Delta) -> Partial[Any] | None:
        """Take one delta; the new snapshot, if this delta made one."""
        if delta.usage is not None:
            self._tally.add(delta.usage, delta.usage_partial)
            self.usage = self._tally.usage
        if delta.model:
            self.model = delta.model
        if delta.finish_reason:
            self.finish_reason = delta.finish_reason
        if delta.reasoning:
            self._reasoning.append(delta.reasoning)
        if delta.refusal:
            self._refusal.append(delta.refusal)
        piece = self._tool_piece(delta)
        if piece:
            if self._text:  # the text came first: it is the answer, the calls another's
                piece = ""
            else:  # tool mode: the arguments are the answer, one JSON value
                self._one_value = True
        elif delta.text:
            piece = delta.text
            self._text.append(piece)
        if not piece:
            return None
        self.chars += len(piece)
        if self._first is None:
            head = piece.lstrip()
            self._first = head[:1] or None
        reader = self._reader
        reader.feed(piece)
        if reader.completed or reader.completed_inner:
            done, inner = list(reader.completed), list(reader.completed_inner)
            reader.completed.clear()
            reader.completed_inner.clear()
            if self._judge:
                self._judge_members(done, inner)
        return self._maybe_snapshot()

    def _tool_piece(self, delta: Delta) -> str:
        """Take a delta's tool calls, each kept apart (whole calls are calls of their own, closed
        to later pieces; a piece joins the call of its identity, `Delta.tool_index`); the
        arguments it adds to the call streamed as the answer ("" for none)."""
        streamed = ""
        for call in delta.tool_calls:
            streamed += self._add_call(call.name, call.arguments, call)
        streamed += self._call_piece(delta)
        for piece in delta.tool_pieces:  # further calls' pieces in the same chunk
            streamed += self._call_piece(piece)
        return streamed

    def _call_piece(self, piece: Delta) -> str:
        """One call's piece, by `Delta.tool_index`'s rule (the tool-call collectors' too): with
        an identity, it joins the call of that identity unless it carries another id (a new
        identity starts a call, whatever its name); without one, it joins the call before it
        unless it names another tool."""
        name, arguments, own = piece.tool_name, piece.tool_arguments, piece.tool_id
        key: int | str | None = piece.tool_index
        if key is None and own is None:
            last = self._calls[-1] if self._calls else None
            if name and (last is None or last[2] is not None or last[0] != name):
                return self._add_call(name, arguments)
            if not arguments:
                return ""
            if last is None or last[2] is not None:
                return self._add_call("", arguments)
            return self._join(len(self._calls) - 1, arguments)
        key = own if key is None else key
        assert key is not None
        at = self._at.get(key)
        if at is None or (own and self._call_ids[at] and own != self._call_ids[at]):
            self._at[key] = len(self._calls)
            return self._add_call(name or "", arguments, None, own)
        if own and not self._call_ids[at]:
            self._call_ids[at] = own
        return self._join(at, arguments) if arguments else ""

    def _join(self, at: int, arguments: str) -> str:
        """`arguments` appended to call `at`: what they add to the answer ("" for another's)."""
        pieces = self._calls[at][1]
        pieces.append(arguments)
        return arguments if pieces is self._answering else ""

    def _add_call(
        self, name: str, arguments: str, whole: ToolCall | None = None, call_id: str | None = None
    ) -> str:
        pieces = [arguments] if arguments else []
        self._calls.append((name, pieces, whole))
        self._call_ids.append(call_id)
        if self._answering is None and (not name or answer_tool_name(name) in self._answer_names):
            self._answering = pieces
            return arguments
        return ""

    def _maybe_snapshot(self) -> Partial[Any] | None:
        reader = self._reader
        if reader.root is None:
            return None
        version = reader.version
        length = reader.open_string_chars
        if version == self._snapshot_version:
            grown = length - self._snapshot_string
            if length < 0 or grown < max(_MIN_STRING_GROWTH, self._snapshot_string // 8):
                return None
        if not reader.done and (self.chars - self._snapshot_chars) * 4 < reader.open_size():
            return None  # a big snapshot waits for text a quarter of its size: linear overall
        self._snapshot_version = version
        self._snapshot_string = length
        self._snapshot_chars = self.chars
        return Partial(reader.snapshot(), self._target.type_, complete=reader.done)

    def snapshot(self) -> Partial[Any]:
        """The data read so far, now."""
        reader = self._reader
        return Partial(reader.snapshot(), self._target.type_, complete=reader.done)

    # -- early judgement -------------------------------------------------------------------------

    def _judging(self) -> bool:
        """Whether this answer is one JSON value from its first character (see `judge`)."""
        return (
            self._one_value
            and self._first in ("{", "[")
            and (self._root is None or self._first == self._root)
            and self._reader.starts == 1
        )

    def _judge_members(self, done: list[str | int], inner: list[int]) -> None:
        root = self._reader.root
        if not self._judging():
            return
        if isinstance(root, list) and self._promise_items:
            for index in done:
                if isinstance(index, int):
                    self._judge_item(index, root[index])
        elif isinstance(root, dict) and inner:  # the envelope's list: its items, as a root's
            items = root.get(self._inner or "")
            if isinstance(items, list):
                for index in inner:
                    self._judge_item(index, items[index])
        elif isinstance(root, dict) and self.abort is None and (self._model or self._schema):
            for key in done:
                if isinstance(key, str):
                    if key in self._seen:  # a repeated key: what it holds is not final
                        self._one_value = False
                        return
                    self._seen.add(key)
                    self._judge_field(key, root[key])
            if self.abort is None:
                self._judge_contracts()

    def _judge_item(self, index: int, data: Any) -> None:
        adapter = target_for(self._item_type).adapter
        context = self._ctx.validation_context
        try:  # as the final check validates: the JSON text, lax
            item = adapter.validate_json(to_json(data, inf_nan_mode="constants"), context=context)
        except ValidationError as exc:
            self._hold(index, exc.errors())
            return
        except Exception:  # a validator that fails oddly: the final check decides
            return
        # as the final check reads it: a key that spells a field left at its default is it
        fit = settled(target_for(self._item_type), data, Fit(item, data), context)
        if not fit.ok:
            self._hold(index, fit.errors)
            return
        item = fit.instance
        if self._item_contracts:
            found = self._item_breaches(item)
            if found is None:  # an async contract: judged at the end
                return
            if found:
                self.held[index] = tuple(_under(index, d) for d in found)
                self.new_held.append(index)
                return
        self.accepted[index] = item
        self.new_items.append((index, item))

    def _item_breaches(self, item: Any) -> list[Diagnostic] | None:
        """What keeps a valid item out of the value, judged as the final check judges it
        (`judge_value`, each rule on the item alone, as `for_each_item` runs it: a rule that
        raised or changed the item is a `contract_error`): a contract error, or a violation of
        a rule that is not a warning; None when a rule must wait for the end (async)."""
        rules = self._item_contracts
        groups = _now(judge_value(target_for(self._item_type), rules, item, self._ctx))
        if groups is None:
            return None
        return [
            diagnostic
            for rule, group in zip(rules, groups, strict=True)
            for diagnostic in group
            if rule.on_fail != "warn" or diagnostic.source is Source.CONTRACT_ERROR
        ]

    def _hold(self, index: int, errors: Sequence[ErrorDetails]) -> None:
        moved = _relocated(errors, index)
        self.held[index] = tuple(schema_diagnostics(moved, self._reader.root))
        self.new_held.append(index)

    def _judge_field(self, key: str, value: Any) -> None:
        model = self._model
        if model is None:
            assert self._schema is not None
            verdict = judge_schema_field(self._schema, key, value)
        else:
            verdict = judge_field(model, key, value, self._ctx.validation_context)
        if not verdict.judged:
            return
        if verdict.errors:
            self.abort = tuple(schema_diagnostics(list(verdict.errors), {key: value}))
            return
        self._fields_ok[key] = verdict.value

    def _judge_contracts(self) -> None:
        for number, rule in enumerate(self._contracts):
            if number in self._ran or self._contract_bug:
                continue
            heads = {field.split(".", 1)[0].split("[", 1)[0] for field in rule.fields}
            if not heads <= self._fields_ok.keys():
                continue
            self._ran.add(number)
            fields = {head: self._fields_ok[head] for head in heads}
            before = _dump(fields)
            stand = Stand(fields)
            found = _now(run_contracts((rule,), stand, self._ctx))
            if stand.touched:
                continue  # it read what has not arrived (or may change)
            if _dump(fields) != before:  # it changed the fields it checks: a bug in it, which
                self._contract_bug = True  # the final check reports (`judge_value`)
                return
            if not found:
                continue  # it passed (or is async: the final check runs it)
            # a contract that raised is no reason to stop: the final check reports it, as
            # without streaming (a `contract_error` after this call), whatever else breaks
            if any(d.source is Source.CONTRACT_ERROR for d in found):
                self._contract_bug = True
                return
            self.abort = tuple(found)
            return

    def cut_unknown(self) -> Diagnostic | None:
        """At the end of a stream: the truncation diagnostic when no finish reason came and the
        answer ends mid-token (a number or word at the very end, an open string), so what was
        read may be the start of a longer value; None when the ending is known or clean."""
        if self.finish_reason is not None or self._reader.done:
            return None
        text = self.text
        if not text:
            return None
        stripped = text.lstrip()
        cut = _mid_token(text)
        if not cut and stripped.startswith('"'):
            cut = _CLOSED_STRING.match(stripped) is None
        if not cut:
            return None
        diagnostic = truncation_diagnostic(text, False)
        return dataclasses.replace(
            diagnostic,
            constraint=(
                f"must be complete; the stream ended after {len(text)} characters with no "
                "finish reason, in the middle of a value"
            ),
            extra={"cause": "ending_unknown"},
        )

    # -- the end ---------------------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The answer text received so far."""
        return "".join(self._text) or "".join(self._answering or ())

    def spent(self, sent: Sequence[Mapping[str, Any]]) -> Usage:
        """What this call spent, however its stream ended (`call_usage`, the one rule): the
        provider's final counts as they are; else the counts it reported kept and the rest
        estimated from the request's messages (`sent`) and every character received (answer,
        tool arguments, reasoning, refusal), marked `estimated`."""
        usage = self.usage
        if usage is not None and not usage.estimated:
            return call_usage(usage, sent, 0, self.model)
        pieces = (self._text, self._reasoning, self._refusal, *(call for _, call, _ in self._calls))
        received = sum(len(piece) for part in pieces for piece in part)
        return call_usage(usage, sent, received, self.model)

    def reply(self, finish_reason: str | None = None, usage: Usage | None = None) -> Reply:
        """The call's `Reply`, as a non-streamed call would have returned it (`usage`: what the
        call spent, `spent`; None: the counts the provider reported, if any)."""
        content: str | None = "".join(self._text) or None
        tool_calls = tuple(
            whole or ToolCall(name, "".join(pieces), call_id)
            for (name, pieces, whole), call_id in zip(self._calls, self._call_ids, strict=True)
        )
        refusal = "".join(self._refusal) or None
        known = self.usage
        if usage is None and known is not None:  # one request, on the stream's model
            usage = dataclasses.replace(known, requests=1, model=self.model or known.model)
        return Reply(
            content,
            finish_reason or self.finish_reason,
            refusal,
            usage,
            self.model,
            "".join(self._reasoning) or None,
            tool_calls,
        )

    @property
    def data(self) -> Any:
        """The data a stream that ended early (cut, failed part-way, stopped) keeps: what L1
        keeps of the text received so far read as a reply cut by the token limit (`parse.read`
        with `finish_reason="length"`, the engine's reading of such a reply: only what the model
        finished, never a string, number or literal the end may have cut short); None when L1
        keeps nothing. The snapshots the caller sees during the stream (`snapshot`) are a
        preview and show the string still arriving; this is what the outcome keeps."""
        text = self.text
        if not text:
            return None
        context = self._ctx.validation_context
        return read(text, self._target, finish_reason="length", context=context).value


_Found = typing.TypeVar("_Found")


def _now(flow: Generator[AwaitAll, list[Any], _Found]) -> _Found | None:
    """A contracts' flow (`run_contracts`, `judge_value`) run now, without awaiting: its result;
    None when a contract is async (the final check runs it)."""
    try:
        effect = next(flow)
    except StopIteration as stop:
        found: _Found = stop.value
        return found
    for awaitable in effect.awaitables:  # not awaited here: close them, the final check runs
        close = getattr(awaitable, "close", None)
        if callable(close):
            close()
    flow.close()
    return None


def _dump(fields: dict[str, Any]) -> bytes:
    """The fields' JSON dump (their repr when they have none): what a contract must not change."""
    try:
        return to_json(fields, inf_nan_mode="constants")
    except Exception:  # a value with no JSON dump
        return repr(fields).encode("utf-8", "replace")


def _plain_list(type_: Any) -> bool:
    """A `list[X]` or `tuple[X, ...]` with nothing on the list itself (no bound, validator);
    an array JSON Schema with nothing but its items."""
    if isinstance(type_, JsonSchema):
        return type_.plain_array
    return typing.get_origin(type_) in (list, tuple)


def _under(index: int, diagnostic: Diagnostic) -> Diagnostic:
    """A diagnostic about item `index` of the list (its path under `[index]`)."""
    path = diagnostic.path
    inner = "" if path in ("", "$", "<root>") else (path if path.startswith("[") else f".{path}")
    return dataclasses.replace(diagnostic, path=f"[{index}]{inner}")


_NUMBER_SIGNS: Final = frozenset(".+-")
_TOKEN_STARTS: Final = frozenset(" \t\r\n:,[{(")


def _mid_token(text: str) -> bool:
    """Whether `text` ends inside a word, a literal or a number (`12`, `tru`, `1.`, `1e-`, `-`);
    a sentence's full stop ends it."""
    last = text[-1]
    if last.isalnum() or last == "_":
        return True
    if last not in _NUMBER_SIGNS:
        return False
    before = text[-2] if len(text) > 1 else " "
    if last == "-" and before in _TOKEN_STARTS:
        return True  # a number's sign
    return before.isdigit() or (last != "." and before in "eE")


_CLOSED_STRING: Final = re.compile(r'"(?:[^"\\]|\\.)*"')


def _is_model(type_: Any) -> bool:
    return isinstance(type_, type) and issubclass(type_, BaseModel)


def _relocated(errors: Sequence[ErrorDetails], head: str | int) -> list[ErrorDetails]:
    """The errors of a member validated alone, located in the whole value."""
    out: list[ErrorDetails] = []
    for error in errors:
        moved = error.copy()  # a TypedDict: a copy with the location changed
        moved["loc"] = (head, *error["loc"])
        out.append(moved)
    return out
