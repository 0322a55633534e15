"""The self-healing log people read: an outcome as Markdown (`render_markdown`).

The layout: a header (the outcome, run id, target, contracts); the request (the first round's
messages, the model and the other call parameters, redacted by `public_params`); one
section per round (the repair prompt sent, model, latency, tokens by bucket, finish reason, the
call's error, the raw output, the L1 flags and the L2 diagnostics); the outcome (the value, or
the reason, errors, partial data and fallback) and the totals. A field with nothing to say is
left out rather than printed as `null`.

Text from the run (messages, prompts, raw output, reasoning, values) goes in fenced blocks whose
fence is longer than any backtick run inside, so no answer can close its block early; a long
text is shortened around a visible marker, and its heading says how long it was. One-line
fields (paths, constraints, errors) are collapsed onto one line. Every string passes through the
redactor (`redact_text`) on the way out. `healjson heal` prints this same text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Final

from healjson._core.diagnostic import Diagnostic, Source, jsonable, short_repr, value_data
from healjson._core.flags import Flag
from healjson._core.redact import redact_data, redact_text, secrets_scope
from healjson._core.repair.quote import elide
from healjson._core.wire.reply import CUSTOM, FUNCTION, Usage

from .attempt import Attempt, Reason, model_calls, was_given
from .savings import tokens_saved

if TYPE_CHECKING:
    from .outcome import Outcome

__all__ = ["public_params", "render_markdown", "render_messages", "revealing"]

# a longer text is shown as its head and tail around a marker counting what was left out
MAX_MESSAGE_CHARS: Final = 4_000
"""A message of the request."""
MAX_PROMPT_CHARS: Final = 8_000
"""A repair prompt."""
MAX_RAW_CHARS: Final = 16_000
"""A raw output (as much as a repair quotes back) or a healed value."""
MAX_REASONING_CHARS: Final = 4_000
"""The model's reasoning."""
_SECRET_KEYS: Final = frozenset(
    {"api_key", "authorization", "extra_headers", "headers", "default_headers", "organization"}
)
_VALUE_CHARS: Final = 300
_LINE_CHARS: Final = 2_000  # one-line fields: constraint, prescription, error
_BACKTICKS: Final = re.compile(r"`+")
_NEWLINES: Final = re.compile(r"\r\n?")
_LINE_BREAKS: Final = re.compile(r"\s*[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]\s*")


def revealing(outcome: Outcome[Any]) -> AbstractContextManager[Any]:
    """The scope to render `outcome` in: the secrets its run found in the caller's objects
    (`seal`) are known to the redactor inside it (nothing to enter for most outcomes)."""
    found = getattr(outcome, "_secrets", ())
    return secrets_scope(forms=found) if found else nullcontext()


def render_markdown(outcome: Outcome[Any], title: str = "healjson trace") -> str:
    """The whole run as Markdown: header, request, each round, the outcome and the totals."""
    with revealing(outcome):
        return _markdown(outcome, title)


def _markdown(outcome: Outcome[Any], title: str) -> str:
    lines = [f"### {_inline(title, 200)}", ""]
    lines += _header(outcome)
    lines += _request(outcome.attempts[0] if outcome.attempts else None)
    for attempt in outcome.attempts:
        lines += _round(attempt)
    lines += _outcome(outcome)
    lines += _totals(outcome)
    return redact_text("\n".join(lines).rstrip("\n") + "\n")


def render_messages(
    messages: Sequence[Mapping[str, Any]],
    limit: int | None = MAX_MESSAGE_CHARS,
    notes: Mapping[str, str] | None = None,
) -> list[str]:
    """Markdown lines for chat messages: each role, then its content in a fenced block (shortened
    past `limit` characters; None: never). `notes` adds a word after a role, e.g.
    `{"assistant": "the raw output"}`."""
    lines: list[str] = []
    for message in messages:
        role = _inline(str(message.get("role", "?")), 80)
        content = message.get("content")
        if content is None:
            text = ""
        elif isinstance(content, str):
            text = content
        else:  # content parts (images, text blocks): as JSON
            text = json.dumps(jsonable(content), ensure_ascii=False, indent=2)
        text = redact_text(text)  # before it is shortened: a cut must not leave part of a secret
        words = [(notes or {}).get(role, "")]
        answered = message.get("tool_call_id")
        if answered is not None:
            words.append(f"answering {_inline(str(answered), 80)}")
        shown = text if limit is None else elide(text, limit)
        if shown != text:
            words.append(f"{len(text):,} characters, shortened")
        note = ", ".join(word for word in words if word)
        lines.append(f"**{role}**{f' ({note})' if note else ''}:")
        lines.append("")
        calls = message.get("tool_calls")
        lines += _fenced(shown) if text or not calls else []
        lines += [_call_line(call) for call in calls if isinstance(call, Mapping)] if calls else []
        lines.append("")
    return lines


def _call_line(call: Mapping[str, Any]) -> str:
    """A tool call of a message (OpenAI's chat shape: a function call, or a custom tool's call
    and its input) as one line."""
    holder = call.get(CUSTOM)
    if isinstance(holder, Mapping):
        said, what = holder.get("input"), "custom tool call"
    else:
        holder = call.get(FUNCTION)
        holder = holder if isinstance(holder, Mapping) else {}
        said, what = holder.get("arguments"), "tool call"
    name = _code(_inline(str(holder.get("name")), 80))
    arguments = _code(short_repr(redact_text(str(said)), 300))
    return f"- {what} {name} ({_inline(str(call.get('id')), 80)}): {arguments}"


def public_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Call parameters as JSON data, redacted (as the trace and the JSON record show them):
    header dicts and top-level credentials are dropped, and what is left goes through the
    redactor (`redact_data`: credential-named values masked at any depth, e.g. a key in
    `extra_query` or `extra_body`, and known secret values removed from every string)."""
    kept = {k: jsonable(v) for k, v in params.items() if k.lower() not in _SECRET_KEYS}
    redacted: dict[str, Any] = redact_data(kept)
    return redacted


# -- sections ------------------------------------------------------------------------------------


def _header(outcome: Outcome[Any]) -> list[str]:
    rounds = _count(outcome.calls, "round")
    allowed = f" of {outcome.max_attempts} allowed" if outcome.max_attempts else ""
    if outcome.ok and not outcome.calls and outcome.usage.cache_hits:
        status = "**Healed** from the response cache: no model call (judged again)"
    elif outcome.ok:
        repairs = _count(max(outcome.calls - 1, 0), "repair")
        status = f"**Healed** in {rounds}{allowed} ({repairs})"
    else:
        status = f"**Degraded**: `{outcome.reason}`{_why(outcome)} after {rounds}{allowed}"
    lines = [f"- {status}"]
    if outcome.run_id:
        lines.append(f"- **Run id**: {_code(outcome.run_id)}")
    if outcome.target:
        lines.append(f"- **Target**: {_code(outcome.target)}")
    contracts = ", ".join(_code(name) for name in outcome.contracts) or "none"
    lines.append(f"- **Contracts**: {contracts}")
    return [*lines, ""]


def _why(outcome: Outcome[Any]) -> str:
    """A word on a truncation: the token limit only when the provider said so."""
    if outcome.ok or outcome.reason is not Reason.TOKEN_TRUNCATED:
        return ""
    last = outcome.attempts[-1].finish_reason if outcome.attempts else None
    if last == "length":
        return " (the output token limit was reached: finish reason `length`)"
    return " (the answer ends mid-structure; no token limit was reported)"


def _request(first: Attempt | None) -> list[str]:
    lines = ["#### Request", ""]
    if first is None:
        return [*lines, "_No round was recorded._", ""]
    params = public_params(first.params)
    model = params.pop("model", None) or first.model
    if model is not None:
        lines.append(f"- **Model**: {_code(str(model))}")
    if params:
        lines.append(f"- **Params**: {_code(short_repr(params, 1_000))}")
    if not first.messages:
        lines.append("- **Messages**: none recorded")
        return [*lines, ""]
    if lines[-1]:
        lines.append("")
    return lines + render_messages(first.messages)


def _round(attempt: Attempt) -> list[str]:
    lines = [f"#### Round {attempt.number} ({attempt.strategy})", ""]
    prompt = attempt.prompt.render() if attempt.prompt is not None else ""
    if prompt:
        lines += _block("Repair prompt sent", prompt, MAX_PROMPT_CHARS, count=False)
    elif attempt.number > 1:
        lines += ["_The original request, resent unchanged._", ""]
    if attempt.cache_hit:
        lines.append("- **Model call**: none (served from the response cache, judged again)")
    elif was_given(attempt):
        lines.append("- **Model call**: none (the reply was given, not requested)")
    else:
        if attempt.model:
            lines.append(f"- **Model**: {_code(attempt.model)}")
        lines.append(f"- **Latency**: {_seconds(attempt.latency_s)}")
        lines.append(f"- **Tokens**: {_tokens(attempt.usage)}")
    lines.append(f"- **Finish reason**: {_finish(attempt.finish_reason)}")
    if attempt.error:
        lines.append(f"- **Call failed**: {_inline(attempt.error, _LINE_CHARS)}")
    else:
        flags = ", ".join(attempt.flags) if attempt.flags else "none"
        lines.append(f"- **L1 local repairs**: {flags}")
        verdict = "passed" if attempt.ok else _count(len(attempt.diagnostics), "problem")
        lines.append(f"- **L2 schema + contracts**: {verdict}")
    lines += _diagnostics(attempt.diagnostics, "  ")
    for call in attempt.tool_calls:
        ident = f" ({_inline(call.id, 80)})" if call.id else ""
        what = "Custom tool call" if call.kind == CUSTOM else "Tool call"
        lines.append(
            f"- **{what}** {_code(call.name)}{ident}: {_code(short_repr(call.arguments, 300))}"
        )
    lines.append("")
    if attempt.reasoning:
        title = "Reasoning (set aside, never read as the answer)"
        lines += _block(title, attempt.reasoning, MAX_REASONING_CHARS, count=False)
    if attempt.raw_text is not None:
        lines += _block("Raw output", attempt.raw_text, MAX_RAW_CHARS, count=True)
    return lines


def _outcome(outcome: Outcome[Any]) -> list[str]:
    lines = ["#### Outcome", ""]
    if outcome.ok:
        if not outcome.calls and outcome.usage.cache_hits:
            lines.append("- **Healed** from the response cache (no model call)")
        else:
            lines.append(f"- **Healed** in round {outcome.calls}")
        if outcome.flags:
            lines.append(f"- **Local repairs (L1)**: {', '.join(outcome.flags)}")
        if outcome.changed_fields:
            changed = ", ".join(_code(path) for path in outcome.changed_fields)
            lines.append(f"- **Fields a repair changed**: {changed}")
        if outcome.fixed:
            fixed = ", ".join(_code(name) for name in outcome.fixed)
            lines.append(f"- **Fixed locally by rules**: {fixed}")
        if outcome.dropped:
            lines.append(f"- **Items dropped**: {len(outcome.dropped)}")
            for item in outcome.dropped:
                lines.append(f"  - item {item.where}")
                lines += _diagnostics(item.diagnostics, "    ")
        if outcome.warnings:
            lines.append(f"- **Warnings**: {len(outcome.warnings)}")
            lines += _diagnostics(outcome.warnings, "  ")
        value = json.dumps(value_data(outcome.value), indent=2, ensure_ascii=False)
        return [*lines, "", *_block("Value", value, MAX_RAW_CHARS, count=False, info="json")]
    lines.append(f"- **Degraded**: `{outcome.reason}`{_why(outcome)}")
    if outcome.errors:
        lines.append(f"- **Errors**: {len(outcome.errors)}")
        lines += _diagnostics(outcome.errors, "  ")
    if outcome.partial is not None:
        lines.append(f"- **Partial data**: {_code(short_repr(outcome.partial, _VALUE_CHARS))}")
    if outcome.fallback is not None:
        lines.append(f"- **Fallback**: {_code(short_repr(outcome.fallback, _VALUE_CHARS))}")
    return [*lines, ""]


def _totals(outcome: Outcome[Any]) -> list[str]:
    calls = model_calls(outcome.attempts)
    usage = outcome.usage
    lines = ["#### Totals", "", f"- **Model calls**: {calls or 'none'}"]
    if usage.cache_hits:
        lines.append(f"- **Response cache hits**: {usage.cache_hits}")
    if calls:
        lines.append(f"- **Tokens**: {_tokens(usage)}")
        cost = _cost(usage)
        if cost is not None:
            lines.append(f"- **Cost**: ${cost:.6f} (USD)")
        latency = sum(attempt.latency_s for attempt in outcome.attempts)
        lines.append(f"- **Latency**: {_seconds(latency)}")
        saved = tokens_saved(outcome)
        if saved and any(Flag.STREAM_ABORTED in a.flags for a in outcome.attempts):
            lines.append(
                f"- **Tokens saved**: about {saved:,} (estimated: the stream closed early on an "
                "answer the healed one shows would have run on)"
            )
    return [*lines, ""]


# -- pieces --------------------------------------------------------------------------------------


# what named a diagnostic's rule: a contract (or its crash) says `contract`; any other check
# (pydantic's schema constraint `less_than_equal`, ...) says its own source (`schema`, ...)
_RULE_LABELS = {Source.CONTRACT: "contract", Source.CONTRACT_ERROR: "contract"}


def _diagnostics(diagnostics: Sequence[Diagnostic], indent: str) -> list[str]:
    lines: list[str] = []
    for diagnostic in diagnostics:
        shown = "<missing>" if diagnostic.is_missing else short_repr(diagnostic.value, _VALUE_CHARS)
        lines.append(f"{indent}- {_code(_inline(diagnostic.path, 200))} = {_code(shown)}")
        lines.append(f"{indent}  - constraint: {_inline(diagnostic.constraint, _LINE_CHARS)}")
        lines.append(f"{indent}  - prescription: {_inline(diagnostic.prescription, _LINE_CHARS)}")
        if diagnostic.rule:
            label = _RULE_LABELS.get(diagnostic.source, str(diagnostic.source))
            lines.append(f"{indent}  - {label}: {_code(_inline(diagnostic.rule, 200))}")
    return lines


def _block(title: str, text: str, limit: int, *, count: bool, info: str = "text") -> list[str]:
    """`title`, then `text` fenced (shortened past `limit`); `count`: always say its length.
    Redacted before it is shortened: a cut must not leave part of a secret."""
    text = redact_text(_as_text(text))
    shown = elide(text, limit)
    size = f"{len(text):,} character{'s' if len(text) != 1 else ''}"
    if shown != text:
        size += ", shortened"
    heading = f"{title} ({size}):" if count or shown != text else f"{title}:"
    body = _fenced(shown, info) if text else ["_(empty)_"]
    return [heading, "", *body, ""]


def _fenced(text: str, info: str = "text") -> list[str]:
    """`text` in a fenced code block no line of it can close: the fence is longer than its
    longest backtick run (redacted first, so the final redaction cannot change the count)."""
    text = _NEWLINES.sub("\n", redact_text(text))
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text[:-1] if text.endswith("\n") else text  # Markdown's line endings only
    return [f"{fence}{info}", *body.split("\n"), fence]


def _as_text(text: Any) -> str:
    """A caller's bytes (or any object) where text is expected, as text."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray | memoryview):
        return bytes(text).decode("utf-8", "replace")
    return short_repr(text, MAX_RAW_CHARS)


def _code(text: str) -> str:
    """`text` as inline code, whatever backticks it holds (a longer backtick string around it)."""
    text = _inline(text, _LINE_CHARS)
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _inline(text: str, limit: int) -> str:
    """`text` on one line (line breaks become spaces), cut to `limit` characters."""
    text = _LINE_BREAKS.sub(" ", str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tokens(usage: Usage) -> str:
    if not usage.total_tokens and not usage.requests:
        return "none reported"
    prompt = [f"{usage.prompt_tokens:,} prompt"]
    cached = [
        f"{count:,} {name}"
        for count, name in (
            (usage.cache_read_tokens, "cache read"),
            (usage.cache_write_tokens, "cache write"),
        )
        if count
    ]
    if cached:
        prompt.append(f"(incl. {', '.join(cached)})")
    completion = [f"{usage.completion_tokens:,} completion"]
    if usage.reasoning_tokens:
        completion.append(f"(incl. {usage.reasoning_tokens:,} reasoning)")
    text = f"{' '.join(prompt)}, {' '.join(completion)}"
    return f"{text} (estimated)" if usage.estimated else text


def _cost(usage: Usage) -> float | None:
    """`usage.cost`, or None when pricing fails: a price table (a third-party package) must not
    take the whole trace down with it."""
    try:
        return usage.cost
    except Exception:
        return None


def _finish(reason: str | None) -> str:
    if reason is None:
        return "none reported"
    if reason == "length":
        return "`length` (the output token limit was reached)"
    return _code(reason)


def _seconds(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
