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

- the request: the messages and the parameters as the caller passed them (transport-only ones —
  `timeout`, `extra_headers`, `extra_query`, `max_retries`, `stream`, `stream_options` — left
  out), after redaction (the client's secrets scope, credential-named values, credential
  shapes): no secret reaches the key, so none can be read back from it;
- the target's JSON schema, and the contracts' names with a fingerprint of each one's code
  (its bytecode, names and constants: an edited rule is another key);
- the validation context (the caller's `context=`), redacted alike.

An entry holds the final answer's text (its reasoning left out; a list whose items a per-item
repair replaced, as the merged list), redacted, with its finish reason, model and usage: never
the messages, never a parameter.
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
from healjson._core.redact import is_credential_name, redact_params, redact_with, run_secrets
from healjson._core.wire.effects import AwaitAll, CacheGet, CachePut, CacheStore, ModelCall
from healjson._core.wire.reply import Reply, Usage

from .answers import HealSpec
from .engine import heal_flow

__all__ = ["CachedRuns", "cache_key", "read_entry", "spec_fingerprint", "write_entry"]

VERSION: Final = "healjson-response-cache/1"
TRANSPORT: Final = frozenset(
    {"timeout", "extra_headers", "extra_query", "max_retries", "stream", "stream_options"}
)
"""Parameters that change how a request travels, not what it asks: not part of the key."""

Effect = ModelCall | AwaitAll | CacheGet | CachePut


def spec_fingerprint(spec: HealSpec) -> str:
    """What of a healer's configuration an answer depends on: the target's JSON schema and each
    contract's name and code (computed once per healer)."""
    try:
        schema = spec.target.json_schema_text
    except Exception:  # a type pydantic cannot make a schema of: its name stands for it
        schema = spec.target.name
    rules = [[rule.name, _code_of(rule)] for rule in spec.contracts]
    return json.dumps([VERSION, schema, rules], ensure_ascii=False, separators=(",", ":"))


def _code_of(rule: Contract[Any]) -> str:
    """A fingerprint of a rule's code: its check's (and fix's) bytecode, names and plain
    constants, nested code and the functions its closure holds included (a per-item rule's
    wrapper holds the rule); no address, no line number: stable across processes and edits
    elsewhere in the file."""
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
        for cell in getattr(function, "__closure__", None) or ():
            try:
                held = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if depth < 4 and (hasattr(held, "__code__") or hasattr(held, "check")):
                todo.append((held, depth + 1))
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


def cache_key(
    fingerprint: str,
    messages: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
    forms: tuple[str, ...] | None = None,
) -> str:
    """The key of a request (see the module docstring): redacted first, then hashed. `forms`:
    the run's secrets (`run_secrets()`), when known already."""
    if forms is None:
        forms = run_secrets()
    kept = {key: value for key, value in params.items() if key not in TRANSPORT}
    # flat parameters of plain values under no credential name: their secrets are removed from
    # the request's text below, as `redact_params` would remove them from each value
    shown = kept if _plain(kept) else redact_params(kept)
    request = to_json([messages, sorted(shown.items())], fallback=repr, serialize_unknown=True)
    digest = _prefix(fingerprint).copy()
    digest.update(_redacted(request, forms))
    context = ctx.validation_context
    if context is not None:
        extra = to_json(context, fallback=repr, serialize_unknown=True)
        digest.update(b"\0")
        digest.update(_redacted(extra, forms))
    key: str = digest.hexdigest()
    return key


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _plain(params: Mapping[str, Any]) -> bool:
    """True when every parameter is a plain value under a name that is not a credential's."""
    for key, value in params.items():
        if type(value) not in _SCALARS or type(key) is not str or is_credential_name(key):
            return False
    return True


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


def _redacted(text: bytes, forms: tuple[str, ...]) -> bytes:
    """JSON text as `redact_text` leaves it (`forms`: the run's secrets), as bytes again."""
    return redact_with(text.decode("utf-8", "replace"), forms).encode()


def write_entry(
    text: str,
    finish_reason: str | None,
    model: str | None,
    usage: Usage,
    forms: tuple[str, ...] | None = None,
) -> bytes:
    """An entry as stored: the answer redacted (`forms`: the run's secrets, when known
    already), with its finish reason, model and usage."""
    entry = {
        "v": 1,
        "text": redact_with(text, run_secrets() if forms is None else forms),
        "finish_reason": finish_reason,
        "model": model,
        "usage": [usage.prompt_tokens, usage.completion_tokens, usage.requests],
        "stored_at": round(time.time(), 3),
    }
    return to_json(entry)


def read_entry(stored: bytes | str | None) -> Reply | str | None:
    """A stored entry as the reply it stands for; None when there is none; a text saying why
    when it cannot be read (then it is a miss)."""
    if stored is None:
        return None
    try:
        data = json.loads(stored)
    except (ValueError, TypeError):
        return "the entry is not JSON"
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
        self.forms: tuple[str, ...] = ()  # the run's secrets, read once for the key and entry

    def lookup(
        self, ctx: ContractContext, run_id: str, events: _events.RunEvents | None
    ) -> Generator[Effect, Any, Healed[Any] | None]:
        """The run's outcome from a stored answer that passes today's judge; None: a miss (the
        model is called)."""
        owner = self.owner
        self.forms = forms = run_secrets()
        self.key = key = cache_key(owner.fingerprint, self.messages, self.params, ctx, forms)
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

    def store(self, outcome: Healed[Any]) -> CachePut | None:
        """The effect that stores a healed run's final answer (None: nothing to store)."""
        if self.key is None or not outcome.attempts:
            return None
        last = outcome.attempts[-1]
        if last.cache_hit:
            return None
        text = outcome.raw_text
        if Flag.ITEMS_MERGED in outcome.flags:  # the last answer held only the repaired items
            spec = self.owner.spec
            text = spec.target.adapter.dump_json(outcome.value, by_alias=True).decode()
        if not text:
            return None
        value = write_entry(text, last.finish_reason, last.model, outcome.usage, self.forms)
        return CachePut(self.owner.store, self.key, value)


def _miss(events: _events.RunEvents | None, why: str) -> None:
    """A stored entry not served: `healjson.cache_miss` (INFO) says why."""
    if events is not None:
        events.event(logging.INFO, "healjson.cache_miss", why=why)
