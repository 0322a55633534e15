"""The run's known secrets out of what an outcome keeps (`seal`), the moment it is built.

Inside a wrapped client's call the redactor knows the client's credentials (`secrets_scope`);
once the call has returned, nothing does. A model can echo a key (a proxy that reflects headers,
a prompt-injected reply), so when a run ends inside its scope, `seal`:

- removes the secret values it knows from everything the outcome keeps that model text reached:
  each attempt's raw output, reasoning, tool calls and messages (a repair quotes the previous
  answer), its repair prompt and diagnostics, the outcome's `raw_text` and `errors`;
- leaves the caller's objects as they are (`value`, `partial`, `fallback`: the caller gets what
  the model sent), and remembers on the outcome which of the secrets its rendering shows (of a
  secret cut short at the end of a string, as a stream that failed inside it leaves one: the
  beginning the string holds), so that every rendering of the outcome (`repr`, `to_dict`, both
  traces, batch rows, Ray columns, `DegradedError`) removes them as well (`record.revealing`).
  Those are values the outcome's own objects hold: remembering them adds no copy of a secret
  the outcome did not hold already.

Cost: nothing when no secret is known (a bare `Healer.run`, `validate`); otherwise one substring
test per secret form over each attempt's text. More work only when a secret is found, or when a
text has an escape that could spell one the raw text does not show (`\\u0073k-...`): then the
outcome is rendered once and searched.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, Final, TypeVar

from healjson._core.diagnostic import Diagnostic
from healjson._core.judge.policies import Dropped
from healjson._core.redact import (
    MARKER,
    MIN_SECRET_CHARS,
    SPELLING_ESCAPES,
    cut_in,
    cut_spans,
    escaped_in,
    found_in,
    unspelled,
)
from healjson._core.repair.calls import CallsForm, CallState
from healjson._core.repair.prompt import RepairPrompt
from healjson._core.wire.reply import ToolCall, Usage

from .attempt import Attempt
from .outcome import Degraded, Healed
from .record import outcome_data

OutcomeT = TypeVar("OutcomeT", bound="Healed[Any] | Degraded[Any]")
HealedT = TypeVar("HealedT", bound="Healed[Any]")

__all__ = ["seal", "seal_first"]

_MAX_DEPTH: Final = 64
_RECORDS: Final = frozenset(
    {Attempt, CallState, CallsForm, Diagnostic, Dropped, RepairPrompt, ToolCall, Usage}
)
_PLAIN_ESCAPED: Final = frozenset('"\\\b\f\n\r\t')  # what the other escapes spell


def seal_first(outcome: HealedT, forms: tuple[str, ...]) -> HealedT:
    """`seal` of a first reply's outcome whose one attempt keeps only the outcome's own raw
    text (no reasoning, tool calls, error, diagnostics, warnings or drops: `HealSpec.first`'s,
    without reasoning): the same outcome when no secret form occurs in that text and it has no
    escape, and none in the request's messages (the caller may quote a key in a prompt),
    without reading the records again; else `seal`."""
    first = outcome.attempts[0]
    if not forms or (
        _plain(outcome.raw_text, forms)
        and not _asked(first.messages, forms)
        and not _said_secret(first, forms)
    ):
        return outcome
    return seal(outcome, forms)


def _provider_said(attempt: Attempt) -> tuple[str | None, ...]:
    """The short texts a provider wrote about a call (its model's name, its finish reason, the
    usage's model): a proxy that reflects the request can echo a key there too."""
    return (attempt.model, attempt.finish_reason, attempt.usage.model)


def _said_secret(attempt: Attempt, forms: tuple[str, ...]) -> bool:
    """Whether a secret form occurs in what the provider said about the call (`_provider_said`;
    plain loops: every first answer of a client that holds a key runs this)."""
    for text in _provider_said(attempt):
        if text and len(text) >= MIN_SECRET_CHARS:  # a shorter text holds no secret
            for form in forms:
                if form in text:
                    return True
    return False


def _plain(text: str, forms: tuple[str, ...]) -> bool:
    """True when `text` holds none of the secret `forms` and no escape that could spell one."""
    return "\\" not in text and not found_in(text, forms) and not cut_in(text, forms)


def seal(outcome: OutcomeT, forms: tuple[str, ...]) -> OutcomeT:
    """`outcome` as it may be kept: see the module docstring. `forms`: the secret forms the run
    knows (`redact.run_secrets()`); the very same outcome when none occurs in it."""
    if not forms:
        return outcome
    raw = outcome.raw_text
    if type(raw) is str and len(outcome.attempts) == 1 and _plain(raw, forms):
        # the common end, a first reply: one text to search (the attempt's own, or none)
        first = outcome.attempts[0]
        if (
            (first.raw_text is raw or first.raw_text is None)
            and not first.reasoning
            and not first.tool_calls
            and not first.error
            and not first.diagnostics
            and not (isinstance(outcome, Degraded) and outcome.fallback is not None)
            and not (isinstance(outcome, Healed) and (outcome.warnings or outcome.dropped))
            and not _asked(first.messages, forms)
            and not _said_secret(first, forms)
        ):
            return outcome
    shown, escaped = _texts_show(outcome, forms)
    if not shown and not escaped:
        return outcome  # the caller's objects come from these texts: nothing to find in them
    if not shown and not _found(outcome, forms):
        return outcome
    outcome = _scrubbed(outcome, forms)
    found = _found(outcome, forms)  # what is left: in the caller's objects
    if found:
        object.__setattr__(outcome, "_secrets", found)
    return outcome


def _found(outcome: Healed[Any] | Degraded[Any], forms: tuple[str, ...]) -> tuple[str, ...]:
    """The secret forms the outcome's record shows (the record before the redactor), and the
    beginnings of forms a string of it ends with (a string cut inside a secret: `cut_spans`;
    kept as they stand, so a rendering removes them as it removes a whole form, and no more
    of a secret than the outcome holds is remembered)."""
    text = json.dumps(outcome_data(outcome), ensure_ascii=False, default=str)
    found = [form for form in forms if form in text]
    if "\\\\" in text:  # a string holds a backslash: a form it spells with escapes too
        strings = text.replace("\\\\", "\\")  # the escapes as the strings hold them
        found += [form for form in forms if form not in found and escaped_in(strings, (form,))]
    found += dict.fromkeys(text[start:end] for start, end in cut_spans(text, forms))
    return tuple(found)


def _texts_show(outcome: Healed[Any] | Degraded[Any], forms: tuple[str, ...]) -> tuple[bool, bool]:
    """Whether a secret form occurs in the texts the model and the provider wrote in the run
    (answers, reasoning, tool calls, errors, and every diagnostic: a refusal's text, a judge's
    reason, a provider's error message), and whether one of them has an escape that could spell
    one (or a diagnostic holds data, not text: then the rendering is searched)."""
    escaped = False
    texts: list[str | None] = [outcome.raw_text]
    diagnostics: list[Diagnostic] = []
    for attempt in outcome.attempts:
        if _asked(attempt.messages, forms):  # the request: the caller's own text too
            return True, True
        texts += (attempt.raw_text, attempt.reasoning, attempt.error, *_provider_said(attempt))
        texts += [
            text for call in attempt.tool_calls for text in (call.arguments, call.id, call.name)
        ]
        diagnostics += attempt.diagnostics
    if isinstance(outcome, Degraded):
        diagnostics += outcome.errors
    else:
        diagnostics += outcome.warnings
        diagnostics += [d for dropped in outcome.dropped for d in dropped.diagnostics]
        escaped = bool(outcome.dropped)  # the dropped items are data: their rendering is read
    for diagnostic in diagnostics:
        texts += (diagnostic.constraint, diagnostic.prescription, diagnostic.path)
        if isinstance(diagnostic.value, str):
            texts.append(diagnostic.value)
        elif diagnostic.value is not None or diagnostic.extra:
            escaped = True
    for text in texts:
        if not text or not isinstance(text, str):
            continue
        if found_in(text, forms) or cut_in(text, forms):
            return True, True
        if not escaped and "\\" in text:
            escaped = any(escape in text for escape in SPELLING_ESCAPES) or any(
                not _PLAIN_ESCAPED.isdisjoint(form) for form in forms
            )
    if not outcome.ok and (outcome.fallback is not None or outcome.partial is not None):
        # the caller's fallback, and the partial data (read from a text that may have been
        # redacted before the run ended: a stream cut by a failure): objects looked at only here
        escaped = True
    return False, escaped


def _scrubbed(outcome: OutcomeT, forms: tuple[str, ...]) -> OutcomeT:
    """A copy whose stored texts hold none of `forms` (the caller's objects kept as they are)."""
    changes: dict[str, Any] = {
        "attempts": _clean(outcome.attempts, forms, 0),
        "raw_text": scrub(outcome.raw_text, forms),
        "usage": _clean(outcome.usage, forms, 0),
    }
    if isinstance(outcome, Degraded):
        changes["errors"] = _clean(outcome.errors, forms, 0)
    else:
        changes["warnings"] = _clean(outcome.warnings, forms, 0)
        changes["dropped"] = _clean(outcome.dropped, forms, 0)
    return dataclasses.replace(outcome, **changes)


def _clean(value: Any, forms: tuple[str, ...], depth: int) -> Any:
    """`scrub`, also through healjson's records (attempts, diagnostics, repair prompts, tool
    calls, a tool-call repair's calls): the same object when nothing changed."""
    if isinstance(value, str) or depth >= _MAX_DEPTH:
        return scrub(value, forms)
    if type(value) in _RECORDS:  # healjson's own: a caller's objects are never rebuilt
        changes = {}
        for field in dataclasses.fields(value):
            if field.init:
                old = getattr(value, field.name)
                new = _clean(old, forms, depth + 1)
                if new is not old:
                    changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        return _rebuilt(value, kind, lambda item: _clean(item, forms, depth + 1))
    return value  # other objects are kept whole; what they show is found and redacted later


def _rebuilt(value: Any, kind: type, each: Callable[[Any], Any]) -> Any:
    """A dict, list or tuple (`kind`: its exact type) with `each` applied to its items: the very
    same object when no item changed (a dict keeps its unchanged entries as they are)."""
    if kind is dict:  # its keys too: a key can be a secret as well as a value
        rebuilt, changed = {}, False
        for key, item in value.items():
            new_key, new = each(key) if type(key) is str else key, each(item)
            changed = changed or new_key is not key or new is not item
            rebuilt[new_key] = new
        return rebuilt if changed else value
    items = [each(item) for item in value]
    if all(new is old for new, old in zip(items, value, strict=True)):
        return value
    return tuple(items) if kind is tuple else items


# -- the known values removed (`redact` keeps the names and shapes) ----------------------------


def _asked(messages: tuple[Any, ...], forms: tuple[str, ...]) -> bool:
    """True when a secret form occurs in the request's `messages` (`_shown_in`, with a message
    of plain strings read in this one call: every first answer of a client holding a key)."""
    for message in messages:
        if type(message) is not dict:
            if _shown_in(message, forms, 1):
                return True
            continue
        for item in message.values():
            if type(item) is str:
                for form in forms:
                    if form in item:
                        return True
                if "\\" in item and escaped_in(item, forms):  # spelled with escapes
                    return True
            elif item is not None and _shown_in(item, forms, 2):
                return True
    return False


def _shown_in(value: Any, forms: tuple[str, ...], depth: int) -> bool:
    """True when a secret form occurs in a string of `value` (the request's messages: dicts,
    lists and tuples of them, at any depth up to the walk's limit; an object of another kind
    is rendered by the record as text, and searched as that text)."""
    kind = type(value)
    if kind is str:
        return found_in(value, forms) or escaped_in(value, forms)
    if kind is dict or kind is list or kind is tuple:
        if depth >= _MAX_DEPTH:
            return True  # deeper than the walk: the record's rendering is searched
        for item in value.values() if kind is dict else value:
            if item is not None and _shown_in(item, forms, depth + 1):
                return True
        return kind is dict and any(_shown_in(key, forms, depth + 1) for key in value)
    if kind is int or kind is float or kind is bool:
        return False
    return found_in(str(value), forms)


def scrub(value: Any, forms: tuple[str, ...]) -> Any:
    """`value` with the secret `forms` removed from every string in it (in str, list, tuple and
    dict, at any depth up to the walk's limit; other objects are kept): the very same object
    when nothing was removed, so a caller can tell by identity. Only the known values: the
    credential shapes are left to the renderers (they need no run to be known)."""
    return _scrub_walk(value, forms, 0)


def _scrub_walk(value: Any, forms: tuple[str, ...], depth: int) -> Any:
    if isinstance(value, str):
        for form in forms:
            if form in value:
                value = value.replace(form, MARKER)
        return unspelled(value, forms, MARKER)  # spelled with escapes, or cut at the end
    kind = type(value)
    if depth >= _MAX_DEPTH or not (kind is list or kind is tuple or kind is dict):
        return value  # other types (subclasses too) are kept whole: a copy could change them
    return _rebuilt(value, kind, lambda item: _scrub_walk(item, forms, depth + 1))
