"""Structured events for every attempt, local repair, diagnostic, repair request and outcome.

Quiet by default: nothing is emitted until the application binds a logger with
`healjson.set_logger(...)`, configures structlog globally (then the `healjson` structlog logger
is used), or gives the stdlib logger `healjson` a handler (`logging.basicConfig(...)`).
Events go out by severity: a degraded run at WARNING, a healed run at INFO, each attempt (its
local repairs, diagnostics and the repair request that follows) at DEBUG; a structlog-style
logger without a method for a level gets that event through `.info`.
Every event carries the run's `run_id` (also on the outcome and in its trace). Fields are flat.
Credentials never appear: call parameters are not logged at all, model output / prompt text is
included only with `include_content=True`, and every field passes through the redactor
(`_redact`: known secret values, credential-named fields, `Bearer` tokens). Every field is
bounded as span attributes are (`shown`): a string at `SAID_CHARS` (content, `raw_text` and
`prompt`, at `CONTENT_CHARS`) with a marker, a list at `MAX_ITEMS` members. Without
`include_content`, a diagnostic's path shows only the names the target declares (a key the model
invented is `<key>`). OpenTelemetry spans and metrics (`telemetry`) follow the same run, when an
SDK is configured.

Events: `healjson.attempt`, `healjson.local_repair`, `healjson.diagnostic`,
`healjson.repair_request`, `healjson.healed`, `healjson.degraded`; once per client,
`healjson.schema_not_enforced` (`warn`, see `enforcement`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import weakref
from collections.abc import Generator, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

from healjson._core.diagnostic import short_repr
from healjson._core.redact import redact_data

from .shown import CONTENT_CHARS, bounded, declared_names, shown_path

if TYPE_CHECKING:
    from healjson._core.outcome.outcome import Attempt, Degraded, Healed
    from healjson._core.repair.prompt import RepairPrompt

__all__ = ["RunEvents", "for_run", "handed_on", "set_logger", "warn"]

LOGGER_NAME = "healjson"


@dataclass(frozen=True, slots=True)
class _Settings:
    logger: Any = None
    include_content: bool = False


class _Default:
    """The process-wide settings (one mutable slot instead of a module global)."""

    settings = _Settings()


# The settings of the innermost `with set_logger(...)` block of this thread or task, if any.
_SCOPED: ContextVar[_Settings | None] = ContextVar("healjson_logger", default=None)
_LOCK = threading.Lock()
# `set_logger` results not yet entered as a block: each may still have to undo its default
_PENDING: weakref.WeakSet[_LoggerSetting] = weakref.WeakSet()


class _LoggerSetting:
    """What `set_logger` returns: a process-wide change that turns into a scope when entered."""

    __slots__ = ("__weakref__", "_previous", "_settings", "_tokens")

    def __init__(self, settings: _Settings, previous: _Settings) -> None:
        self._settings = settings
        self._previous = previous
        self._tokens: list[Token[_Settings | None]] = []

    def __enter__(self) -> None:
        with _LOCK:
            if self in _PENDING:  # undo the process-wide change: a block scopes it instead
                _PENDING.discard(self)
                if _Default.settings is self._settings:
                    _Default.settings = self._previous
                for later in _PENDING:  # a later call took ours as its previous: skip ours
                    if later._previous is self._settings:
                        later._previous = self._previous
        self._tokens.append(_SCOPED.set(self._settings))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _SCOPED.reset(self._tokens.pop())


def set_logger(logger: Any = None, *, include_content: bool = False) -> Any:
    """Send healjson's events to `logger` (any structlog-style logger with `.info(event, **kw)`);
    `None` goes back to the default (structlog's `healjson` logger, only when structlog is
    configured). `include_content=True` adds raw model output and rendered repair prompts.

    Two uses, with precise semantics:

    * `healjson.set_logger(log)` as a statement changes the process-wide default: every thread
      and task that is not inside a block below uses it from now on.
    * `with healjson.set_logger(log): ...` changes nothing process-wide: the settings apply to
      the code inside the block, in this thread or asyncio task only (a `contextvars` scope), and
      on exit exactly the previous settings of that thread or task are back. Overlapping blocks
      in concurrent threads or tasks each see only their own logger. Tasks created inside a
      block inherit it (asyncio copies the context, as does `asyncio.to_thread`); a plain
      `threading.Thread` started inside it does not (Python starts a thread with an empty
      context) unless its target runs through `contextvars.copy_context().run`.

    Inside a block, the block wins: a statement call there changes the process-wide default for
    everyone else but not the block. (Technically the call changes the default first and entering
    the block undoes that change, so another thread may see the block's logger during that one
    instant; nothing is left behind, however blocks and calls interleave.)
    """
    settings = _Settings(logger, include_content)
    with _LOCK:
        change = _LoggerSetting(settings, _Default.settings)
        _Default.settings = settings
        _PENDING.add(change)
    return change


# severity -> the logger method that sends it
_METHODS = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warning"}
# the fields that carry content (`include_content`): bounded as captured content is
_CONTENT_FIELDS: Final = frozenset({"raw_text", "prompt"})


def _emit(logger: Any, level: int, event: str, **fields: Any) -> None:
    try:
        send = getattr(logger, _METHODS[level], None) or logger.info
        shown = {
            name: bounded(value, CONTENT_CHARS) if name in _CONTENT_FIELDS else bounded(value)
            for name, value in fields.items()
        }
        send(event, **redact_data(shown))
    except Exception:  # a broken log sink must never break the healing run
        return


class _StdlibSink:
    """The stdlib `logging` logger `healjson` behind the structlog-style `.debug` / `.info` /
    `.warning(event, **kw)`: the message is the event and its fields as `key=value`; the fields
    themselves are on the record as `record.healjson` (and the event name as
    `record.healjson_event`)."""

    __slots__ = ()

    def debug(self, event: str, **fields: Any) -> None:
        _log(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        _log(logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        _log(logging.WARNING, event, fields)


def _log(level: int, event: str, fields: dict[str, Any]) -> None:
    text = " ".join(f"{key}={value!r}" for key, value in fields.items())
    extra = {"healjson": fields, "healjson_event": event}
    _STDLIB.log(level, "%s %s", event, text, extra=extra)


_STDLIB = logging.getLogger(LOGGER_NAME)
_MODULES: Final = sys.modules.keys()
_STDLIB_SINK = _StdlibSink()


def _unhandled(settings: _Settings) -> bool:
    """True when no logger could take a run's events: none set, no handler on the `healjson`
    logger or the root, structlog not imported (what `_logger` would find, without its work)."""
    parent = _STDLIB.parent  # the root logger
    return (
        settings.logger is None
        and not _STDLIB.handlers
        and "structlog" not in _MODULES
        and (parent is None or (not parent.handlers and parent.parent is None))
    )


def quiet() -> bool:
    """True when a run starting now would have no events (`for_run` would return None): no
    logger that would take them, and no OpenTelemetry SDK configured."""
    settings = _SCOPED.get() or _Default.settings
    if not _unhandled(settings) and _logger(settings)[0] is not None:
        return False
    return "opentelemetry" not in _MODULES or (_Telemetry.module or _Telemetry.load()).idle()


def for_run(run_id: str, spec: Any = None) -> RunEvents | None:
    """The events of a run that starts now, or None when nothing would receive them (then the
    run checks nothing more: one look per run, at its start). A logger set with `set_logger`
    wins; else structlog's `healjson` logger when structlog is configured; else the stdlib
    logger `healjson` when it has a handler (its own or an ancestor's: never Python's
    last-resort stderr) and is enabled for WARNING. OpenTelemetry spans and metrics are sent
    when an OpenTelemetry SDK is configured (`telemetry`)."""
    settings = _SCOPED.get() or _Default.settings
    if _unhandled(settings):  # no handler anywhere: no logger
        if "opentelemetry" not in _MODULES:
            return None  # the common run: nothing listens
        logger: Any = None
        floor = logging.NOTSET
    else:
        logger, floor = _logger(settings)
    spans = None
    if "opentelemetry" in _MODULES:  # never imported here: an application that uses it has
        spans = (_Telemetry.module or _Telemetry.load()).for_run(run_id, spec)
    if logger is None and spans is None:
        return None
    return RunEvents(run_id, logger, settings.include_content, spans, floor, spec=spec)


def handed_on(flow: Generator[Any, Any, Any] | None) -> AbstractContextManager[None]:
    """A block in which a run hands its first model call's answer on to another run of the
    same step (an integration's hand-over): the run of `flow` (suspended at that call; None: a
    quick start's, which built no flow) ends here, and the next run started inside the block
    goes on in its spans, when it has any (`telemetry.handed_on`)."""
    telemetry = _Telemetry.module  # not loaded: no run has spans to hand on
    if telemetry is not None:
        found: AbstractContextManager[None] = telemetry.handed_on(flow)
        return found
    if flow is not None:
        flow.close()
    return contextlib.nullcontext()


def about_run(run_id: str, level: int, event: str, **fields: Any) -> None:
    """An event of an integration about a run that already happened (its own events and spans
    were sent by the run): to the logger that run's events would go to, with its `run_id`, and
    no span (`for_run` would open one for a run starting now). `level` is a `logging` level."""
    settings = _SCOPED.get() or _Default.settings
    logger, floor = _logger(settings)
    if logger is None or level < floor:
        return
    RunEvents(run_id, logger, settings.include_content, None, floor).event(level, event, **fields)


def warn(event: str, **fields: Any) -> None:
    """One WARNING event outside a run's (a client's once-only notice): to the logger a run
    would use (`set_logger`, structlog's `healjson` logger, the stdlib `healjson` logger when it
    has a handler)."""
    logger, _ = _logger(_SCOPED.get() or _Default.settings)
    if logger is not None:
        _emit(logger, logging.WARNING, event, **fields)


def _logger(settings: _Settings) -> tuple[Any, int]:
    """The logger a run's events go to, and the level below which they are not even built: the
    one `set_logger` gave, else structlog's `healjson` logger, else the stdlib `healjson` logger
    when it has a handler and is enabled for WARNING (None: no logger)."""
    logger = settings.logger
    if logger is not None:
        return logger, logging.NOTSET
    if "structlog" in sys.modules and _structlog_ready():
        import structlog

        return structlog.get_logger(LOGGER_NAME), logging.NOTSET
    if _STDLIB.isEnabledFor(logging.WARNING) and _STDLIB.hasHandlers():
        return _STDLIB_SINK, _STDLIB.getEffectiveLevel()
    return None, logging.NOTSET


class _Telemetry:
    """The `telemetry` module, imported once OpenTelemetry is in use (an import statement per
    run would cost more than the check it guards)."""

    module: Any = None

    @classmethod
    def load(cls) -> Any:
        from . import telemetry

        cls.module = telemetry
        return telemetry


class RunEvents:
    """One run's events: sent with the logger in effect when the run started, each with the
    run's id, and mirrored as OpenTelemetry spans when a tracer is configured."""

    __slots__ = (
        "_declared",
        "_spec",
        "detail",
        "include_content",
        "logger",
        "run_id",
        "spans",
        "steps",
    )

    def __init__(
        self,
        run_id: str,
        logger: Any,
        include_content: bool,
        spans: Any = None,
        floor: int = logging.NOTSET,
        *,
        spec: Any = None,
    ) -> None:
        self.run_id = run_id
        self._spec = spec  # what names its target declares (`_path`)
        self._declared: frozenset[str] | None = None
        self.logger = logger
        # the DEBUG events (attempts, diagnostics, repair requests) are built only when sent
        self.detail = logger if floor <= logging.DEBUG else None
        self.include_content = include_content
        self.spans = spans
        # whether anything would follow a run that heals at once (its INFO event, its spans);
        # a logger enabled for WARNING only hears of a degraded run alone
        self.steps = spans is not None or (logger is not None and floor <= logging.INFO)

    def release(self) -> None:
        """The run ended (or was abandoned): end any open span, restore the caller's context."""
        if self.spans is not None:
            self.spans.release()

    def call_started(self, number: int, params: Mapping[str, Any]) -> None:
        """Model call `number` is about to be made."""
        if self.spans is not None:
            self.spans.call_started(number, params)

    def _path(self, path: str) -> str:
        """A diagnostic's path as an event shows it: whole with `include_content`, else only
        the names the run's target declares (`shown.shown_path`)."""
        if self.include_content:
            return path
        if self._declared is None:
            self._declared = declared_names(self._spec)
        return shown_path(path, self._declared)

    def _send(self, level: int, event: str, **fields: Any) -> None:
        if self.logger is not None:
            _emit(self.logger, level, event, run_id=self.run_id, **fields)

    def event(self, level: int, event: str, **fields: Any) -> None:
        """An event of an integration (`healjson.pydantic_ai.healed`, ...), with the run's id;
        `level` is a `logging` level (DEBUG, INFO or WARNING)."""
        if level == logging.DEBUG and self.detail is None:
            return
        self._send(level, event, **fields)

    def attempt(self, record: Attempt) -> None:
        """One model call, its local repairs and its diagnostics."""
        if self.spans is not None:
            self.spans.attempt(record)
        if self.detail is None:
            return
        content = {"raw_text": record.raw_text} if self.include_content else {}
        self._send(
            logging.DEBUG,
            "healjson.attempt",
            attempt=record.number,
            strategy=str(record.strategy),
            ok=record.ok,
            finish_reason=record.finish_reason,
            flags=[str(f) for f in record.flags],
            diagnostics=len(record.diagnostics),
            prompt_tokens=record.usage.prompt_tokens,
            completion_tokens=record.usage.completion_tokens,
            tokens_estimated=record.usage.estimated,
            latency_s=round(record.latency_s, 6),
            model=record.model,
            raw_chars=len(record.raw_text or ""),
            error=record.error,
            **content,
        )
        if record.flags:
            flags = [str(f) for f in record.flags]
            self._send(logging.DEBUG, "healjson.local_repair", attempt=record.number, flags=flags)
        for diagnostic in record.diagnostics:
            value = {"value": short_repr(diagnostic.value, 200)} if self.include_content else {}
            self._send(
                logging.DEBUG,
                "healjson.diagnostic",
                attempt=record.number,
                path=self._path(diagnostic.path),
                source=str(diagnostic.source),
                rule=diagnostic.rule,
                constraint=diagnostic.constraint,
                fields=[self._path(name) for name in diagnostic.fields],
                **value,
            )

    def repair_request(self, number: int, prompt: RepairPrompt) -> None:
        """The request healjson is about to send to repair attempt `number - 1`."""
        if self.spans is not None:
            self.spans.repair_asked(number, str(prompt.strategy))
        if self.detail is None:
            return
        rendered = prompt.render()
        content = {"prompt": rendered} if self.include_content else {}
        self._send(
            logging.DEBUG,
            "healjson.repair_request",
            attempt=number,
            strategy=str(prompt.strategy),
            round=prompt.round,
            diagnostics=len(prompt.diagnostics),
            history_lines=len(prompt.history),
            with_example=prompt.example is not None,
            with_schema=prompt.schema is not None,
            prompt_chars=len(rendered),
            **content,
        )

    def healed(self, outcome: Healed[Any]) -> None:
        """A run that produced a valid value."""
        if self.spans is not None:
            self.spans.finished(outcome)
        self._send(
            logging.INFO,
            "healjson.healed",
            calls=outcome.calls,
            max_attempts=outcome.max_attempts,
            flags=[str(f) for f in outcome.flags],
            changed_fields=[self._path(path) for path in outcome.changed_fields],
            **self._policies(outcome),
            prompt_tokens=outcome.usage.prompt_tokens,
            completion_tokens=outcome.usage.completion_tokens,
            tokens_estimated=outcome.usage.estimated,
            requests=outcome.usage.requests,
            latency_s=round(sum(a.latency_s for a in outcome.attempts), 6),
        )

    def _policies(self, outcome: Healed[Any]) -> dict[str, Any]:
        """What the rules' failure policies did, on the `healjson.healed` event (only when
        used)."""
        found: dict[str, Any] = {}
        if outcome.warnings:
            found["warnings"] = [f"{self._path(d.path)}: {d.constraint}" for d in outcome.warnings]
        if outcome.dropped:
            found["dropped"] = [
                self._path(item.where) if item.list_path else item.index for item in outcome.dropped
            ]
        if outcome.fixed:
            found["fixed"] = list(outcome.fixed)
        return found

    def degraded(self, outcome: Degraded[Any]) -> None:
        """A run that ended in a degradation."""
        if self.spans is not None:
            self.spans.finished(outcome)
        self._send(
            logging.WARNING,
            "healjson.degraded",
            reason=str(outcome.reason),
            calls=outcome.calls,
            max_attempts=outcome.max_attempts,
            errors=[f"{self._path(d.path)}: {d.constraint}" for d in outcome.errors],
            prompt_tokens=outcome.usage.prompt_tokens,
            completion_tokens=outcome.usage.completion_tokens,
            tokens_estimated=outcome.usage.estimated,
            latency_s=round(sum(a.latency_s for a in outcome.attempts), 6),
        )


def _structlog_ready() -> bool:
    structlog = sys.modules.get("structlog")  # not imported: then it cannot be configured either
    return structlog is not None and bool(structlog.is_configured())
