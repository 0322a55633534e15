"""The response cache's side of a run: its key, what an entry holds, a hit judged again.

A run with a cache (`Healer(..., cache=...)`, `wrap(client, cache=...)`) looks its request up
before the first model call and stores its final valid answer after a healed run; the flow does
no I/O itself: it yields `CacheGet` / `CachePut` effects, which the drivers perform
(`drive.perform_cache`; the replay driver reads and writes nothing). What is stored is never a
verdict: a hit is judged again as the run's first attempt, by the loop's own judge (a one-attempt
run of the same spec on the stored reply, as `validate` judges a reply in hand), against today's
schema and contracts. A hit that fails them is a miss, said so by a `healjson.cache_miss` event
with the reason, and the model is called as if nothing were stored.

The key is a SHA-256 over:

- the request as sent: the messages and the parameters as the caller passed them
  (transport-only ones — `timeout`, `extra_headers`, `extra_query`, `max_retries`, `stream`,
  `stream_options` — left out), as JSON, nothing redacted: two requests that differ anywhere
  (inside a credential-shaped span too) never share a key. A hash is one-way: nothing of the
  request, a secret in it included, is stored or can be read back from the key;
- the target's JSON schema, and the contracts' names with a fingerprint of each one's code
  (its bytecode, names and constants: an edited rule is another key);
- the validation context (the caller's `context=`).

`VERSION` is part of every key: a change of what a key is made of bumps it, so the entries an
earlier scheme wrote are never found (misses), never served to another request.

An entry holds the final answer's text exactly as the model gave it (its reasoning left out; a
list whose items a per-item repair replaced, as the merged list L1 read and the run validated:
the first answer's accepted items with the repair's items spliced in, as JSON data, never a dump
of the validated value, so a hit validates the data the live run validated, once, into an
equal value), with its finish reason, model and usage: never the messages, never a parameter.
An answer the redactor would change (the client's key, a credential name or shape in it) is not
stored at all: the cache never keeps a secret, and never serves an answer other than the one the
model gave (a redacted one would be).
The request with such an answer is a miss next time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Generator, Mapping
from typing import Any, Final

from pydantic_core import to_json

from healjson._core.flags import Flag
from healjson._core.judge.contracts import Contract, ContractContext
from healjson._core.observe import events as _events
from healjson._core.outcome.outcome import Healed, Outcome
from healjson._core.outcome.seal import seal
from healjson._core.redact import MARKER, redact_with, run_secrets
from healjson._core.sentinels import NOTHING
from healjson._core.wire.effects import AwaitAll, CacheGet, CachePut, CacheStore, ModelCall
from healjson._core.wire.reply import Reply, Usage

from .answers import HealSpec
from .engine import heal_flow

__all__ = ["CachedRuns", "cache_key", "read_entry", "spec_fingerprint", "write_entry"]

VERSION: Final = "healjson-response-cache/2"
"""Part of every key (in the fingerprint): /2 hashes the request as sent (/1 hashed it redacted)."""
TRANSPORT: Final = frozenset(
    {"timeout", "extra_headers", "extra_query", "max_retries", "stream", "stream_options"}
)
"""Parameters that change how a request travels, not what it asks: not part of the key."""

Effect = ModelCall | AwaitAll | CacheGet | CachePut


def spec_fingerprint(spec: HealSpec) -> str:
    """What of a healer's configuration an answer depends on: the target's JSON schema, each
    contract's name and code, and the reply reader that reads its replies, if any (its name:
    a healer without one keeps the key it had) (computed once per healer)."""
    try:
        schema = spec.target.json_schema_text
    except Exception:  # a type pydantic cannot make a schema of: its name stands for it
        schema = spec.target.name
    rules = [[rule.name, _code_of(rule)] for rule in spec.contracts]
    parts: list[Any] = [VERSION, schema, rules]
    reader = spec.reply_reader
    if reader is not None:
        name = getattr(reader, "__qualname__", None) or type(reader).__qualname__
        parts.append(["reader", f"{getattr(reader, '__module__', '')}.{name}"])
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))


def _code_of(rule: Contract[Any]) -> str:
    """A fingerprint of a rule's code: its check's (and fix's) bytecode, names and plain
    constants, nested code and the functions its closure holds included (a per-item rule's
    wrapper holds the rule), and the plain values its closure and defaults hold (two rules
    made by one factory with different numbers differ); no address, no line number: stable
    across processes and edits elsewhere in the file."""
    digest = hashlib.sha256()
    todo: list[tuple[Any, int]] = [(rule.check, 0), (rule.fix, 0)]
    while todo:
        function, depth = todo.pop()
        inner = getattr(function, "check", None)  # a contract held in a closure
        if inner is not None and depth < 4:
            todo.append((inner, depth + 1))
        code = getattr(function, "__code__", None)
        if code is None:
            continue
        held_values = [*(getattr(function, "__defaults__", None) or ())]
        held_values += (getattr(function, "__kwdefaults__", None) or {}).values()
        for cell in getattr(function, "__closure__", None) or ():
            try:
                held_values.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        for held in held_values:
            if depth < 4 and (hasattr(held, "__code__") or hasattr(held, "check")):
                todo.append((held, depth + 1))
            elif _plain(held):  # a value the rule was made with (`at_least(10)`'s 10)
                digest.update(repr(held).encode())
        stack = [code]
        while stack:
            current = stack.pop()
            digest.update(current.co_code)
            digest.update(repr(current.co_names).encode())
            for const in current.co_consts:
                if hasattr(const, "co_code"):
                    stack.append(const)
                elif isinstance(const, str | bytes | int | float | bool | type(None)):
                    digest.update(repr(const).encode())
    return digest.hexdigest()[:16]


def _plain(value: Any, depth: int = 0) -> bool:
    """A value whose `repr` is the same in every process: a number, a text, bytes, None, or a
    tuple of such (not a set: its order follows the process's string hashing)."""
    if isinstance(value, str | bytes | int | float | bool | type(None)):
        return True
    return depth < 3 and isinstance(value, tuple) and all(_plain(v, depth + 1) for v in value)


def cache_key(
    fingerprint: str,
    messages: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
) -> str:
    """The key of a request (see the module docstring): a SHA-256 over the healer's
    fingerprint and the request as sent, nothing redacted."""
    kept = {key: value for key, value in params.items() if key not in TRANSPORT}
    digest = _prefix(fingerprint).copy()
    digest.update(_json([messages, sorted(kept.items())]))
    context = ctx.validation_context
    if context is not None:
        digest.update(b"\0")
        digest.update(_json(context))
    key: str = digest.hexdigest()
    return key


def _json(value: Any) -> bytes:
    """`value` as JSON bytes; a value pydantic cannot write as UTF-8 (a lone surrogate) as
    ASCII-escaped JSON after a byte no JSON text holds, so it is keyed apart from every other."""
    try:
        return to_json(value, fallback=repr, serialize_unknown=True)
    except ValueError:  # pydantic's serialization error
        return b"\1" + json.dumps(value, default=repr, ensure_ascii=True).encode()


_PREFIXES: dict[str, hashlib._Hash] = {}
_MAX_PREFIXES: Final = 256


def _prefix(fingerprint: str) -> hashlib._Hash:
    """The hash after `fingerprint` and its separator (a healer's fingerprint holds its whole
    schema: hashed once, copied per key)."""
    found = _PREFIXES.get(fingerprint)
    if found is None:
        found = hashlib.sha256(fingerprint.encode())
        found.update(b"\0")
        if len(_PREFIXES) >= _MAX_PREFIXES:
            _PREFIXES.clear()
        _PREFIXES[fingerprint] = found
    return found


def write_entry(
    text: str,
    finish_reason: str | None,
    model: str | None,
    usage: Usage,
    forms: tuple[str, ...] | None = None,
) -> bytes | None:
    """An entry as stored: the answer as the model gave it, with its finish reason, model and
    usage; None when the redactor (`forms`: the run's secrets, when known already) would change
    any of it, as it is or as the entry's JSON holds it: such an answer is not stored."""
    forms = run_secrets() if forms is None else forms
    for field in (text, finish_reason, model):
        if field is not None and redact_with(field, forms) != field:
            return None
    entry = {
        "v": 1,
        "text": text,
        "finish_reason": finish_reason,
        "model": model,
        "usage": [usage.prompt_tokens, usage.completion_tokens, usage.requests],
        "stored_at": round(time.time(), 3),
    }
    stored = to_json(entry)
    shown = stored.decode()
    return stored if redact_with(shown, forms) == shown else None


def read_entry(stored: bytes | str | None) -> Reply | str | None:
    """A stored entry as the reply it stands for; None when there is none; a text saying why
    when it cannot be read, whatever the reading meets (then it is a miss)."""
    if stored is None:
        return None
    try:
        data = json.loads(stored)
    except (ValueError, TypeError):
        return "the entry is not JSON"
    except RecursionError:  # a deep entry: a corrupt file, a hostile shared store
        return "the entry nests too deeply to read"
    except MemoryError:  # the entry's own parse, unwound and freed: nothing else is hurt
        return "the entry is too large to read"
    if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("text"), str):
        return "the entry is not one this version reads"
    finish = data.get("finish_reason")
    model = data.get("model")
    return Reply(
        data["text"],
        finish if isinstance(finish, str) else None,
        usage=Usage(cache_hits=1, model=model if isinstance(model, str) else None),
        model=model if isinstance(model, str) else None,
    )


class CachedRuns:
    """A healer's runs with a cache: the store, the healer's fingerprint, and the one-attempt
    spec a hit is judged by (built once: the same target, contracts and policy, no repair, no
    fallback)."""

    __slots__ = ("fingerprint", "judge_spec", "spec", "store")

    def __init__(self, store: CacheStore, spec: HealSpec) -> None:
        self.store = store
        self.spec = spec
        self.fingerprint = spec_fingerprint(spec)
        policy = dataclasses.replace(spec.policy, max_attempts=1)
        self.judge_spec = dataclasses.replace(spec, policy=policy, fallback=None)

    def for_spec(self, spec: HealSpec) -> CachedRuns:
        """The same, for a copy of the spec that differs only in its fallback."""
        if spec is self.spec:
            return self
        twin = object.__new__(CachedRuns)
        twin.store, twin.spec, twin.fingerprint = self.store, spec, self.fingerprint
        twin.judge_spec = self.judge_spec
        return twin

    def run(self, messages: tuple[Mapping[str, Any], ...], params: Mapping[str, Any]) -> CachedRun:
        """One run's use of the cache."""
        return CachedRun(self, messages, params)


class CachedRun:
    """One run's lookup (`lookup`, before its first call) and store (`store`, after it healed):
    what `engine.heal_flow` is given as its `cache`."""

    __slots__ = ("forms", "key", "messages", "owner", "params")

    def __init__(
        self, owner: CachedRuns, messages: tuple[Mapping[str, Any], ...], params: Mapping[str, Any]
    ) -> None:
        self.owner = owner
        self.messages = messages
        self.params = params
        self.key: str | None = None
        self.forms: tuple[str, ...] = ()  # the run's secrets, read once for the entry

    def lookup(
        self, ctx: ContractContext, run_id: str, events: _events.RunEvents | None
    ) -> Generator[Effect, Any, Healed[Any] | None]:
        """The run's outcome from a stored answer that passes today's judge; None: a miss (the
        model is called)."""
        owner = self.owner
        self.forms = run_secrets()
        self.key = key = cache_key(owner.fingerprint, self.messages, self.params, ctx)
        found = read_entry((yield CacheGet(owner.store, key)))
        if found is None:
            return None
        if isinstance(found, str):
            _miss(events, found)
            return None
        started = time.perf_counter()
        judged: Outcome[Any] = yield from heal_flow(
            owner.judge_spec, self.messages, self.params, ctx, given=found, observed=False
        )
        if not isinstance(judged, Healed):
            errors = "; ".join(f"{d.path}: {d.constraint}" for d in judged.errors[:3])
            _miss(events, f"the stored answer fails today's checks ({judged.reason}): {errors}")
            return None
        attempt = dataclasses.replace(
            judged.attempts[0],
            cache_hit=True,
            usage=found.usage or Usage(cache_hits=1),
            latency_s=time.perf_counter() - started,
        )
        healed = dataclasses.replace(
            judged,
            attempts=(attempt,),
            usage=attempt.usage,
            max_attempts=owner.spec.policy.max_attempts,
            run_id=run_id,
        )
        return seal(healed, run_secrets())

    def store(self, outcome: Healed[Any], accepted: Any) -> CachePut | None:
        """The effect that stores a healed run's final answer (None: nothing to store);
        `accepted`: the JSON data of the answer the run accepted (`RunState.accepted`)."""
        if self.key is None or not outcome.attempts:
            return None
        last = outcome.attempts[-1]
        if last.cache_hit:
            return None
        try:  # the value as the caller has it: a secret the text spells in escapes shows here
            shown = self.owner.spec.target.adapter.dump_json(outcome.value, by_alias=True).decode()
        except Exception:  # a value that cannot be written: not stored
            return None
        text: str | None = outcome.raw_text
        if Flag.ITEMS_MERGED in outcome.flags:  # the last answer held only the repaired items
            text = _merged_text(accepted)  # the list L1 read, never the value's dump
        # the run's text is sealed (a known secret replaced: not the model's answer), or the
        # redactor would change the value: not stored (a miss next time, never an altered hit)
        if not text or MARKER in text or redact_with(shown, self.forms) != shown:
            return None
        value = write_entry(text, last.finish_reason, last.model, outcome.usage, self.forms)
        if value is None:  # the redactor would change it: not stored
            return None
        return CachePut(self.owner.store, self.key, value)


def _merged_text(data: Any) -> str | None:
    """The merged list a per-item repair's run accepted, as the JSON text L1 reads back into
    the same data (as `repair.items` wrote it to be judged); None: none, or none to write."""
    if data is NOTHING or not isinstance(data, list):
        return None
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):  # never for data L1 read; not stored if ever
        return None


def _miss(events: _events.RunEvents | None, why: str) -> None:
    """A stored entry not served: `healjson.cache_miss` (INFO) says why."""
    if events is not None:
        events.event(logging.INFO, "healjson.cache_miss", why=why)
