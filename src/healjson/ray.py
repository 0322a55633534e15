"""Heal structured output over a Ray Data dataset (`pip install 'healjson[ray]'`).

Two callables for `Dataset.map_batches`, both returning one `pyarrow.Table` row per input row,
in input order, and neither raising for a bad row:

* `HealBatch` calls the model: a callable class, so Ray Data runs it in actors (give
  `compute=ray.data.ActorPoolStrategy(size=N)`) and each actor builds ONE async client (from
  your `client_factory`, in the actor: no API key travels with the task) and ONE healer, then
  heals each batch's rows concurrently, `concurrency` at a time, on an event loop the actor
  keeps for its whole life (so the client's connection pool is reused across batches).
* `HealReplies` does not: for pipelines that already called the model (`ray.data.llm`, vLLM),
  it runs L1 + L2 on each row's `generated_text` locally and says, for a row that needs another
  call, exactly which request to send next (`repair_messages`) and what to feed back with the
  reply (`history`). An instance can be passed as the function itself (Ray tasks) or the class
  with `fn_constructor_kwargs` (actors).

Every result table has the columns `RESULT_COLUMNS`: `id` (the input's id column, else null),
`ok`, `value` (the healed value as JSON text, null unless healed), `reason` (why it degraded,
null unless degraded), `attempts` (model calls), `prompt_tokens`, `completion_tokens`,
`reasoning_tokens`, `cache_read_tokens`, `cache_write_tokens`, `cost` (USD, null when unknown),
`errors` (the diagnostics as JSON text); with `include_outcome=True` also `outcome`
(`outcome.to_dict()` as JSON text, which `healjson.outcome_from_dict` reads back). A row with
no usable request is `ok=False, reason="invalid_input"`.

Ray itself is never imported here: the callables only need pyarrow (which `ray[data]` brings).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ._batch.request import Request, Unusable, read_context, read_request
from ._core.judge.contracts import Contract
from ._core.outcome.outcome import Outcome
from ._core.run.healer import Healer
from ._core.run.policy import HealPolicy
from ._core.run.replay import replied
from ._core.wire.effects import ModelCall
from ._core.wire.reply import Usage
from ._extras import require_extra
from ._ray_rows import (
    OUTCOME_COLUMN,
    REPAIR_COLUMNS,
    RESULT_COLUMNS,
    Columns,
    History,
    ReplyRecord,
    invalid_row,
    outcome_row,
    pending_row,
    read_finish_reason,
    read_history,
    read_text,
    read_tokens,
    request_fields,
    result_table,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["OUTCOME_COLUMN", "REPAIR_COLUMNS", "RESULT_COLUMNS", "HealBatch", "HealReplies"]

R = TypeVar("R")
Rules = Iterable[Contract[Any] | Callable[..., Any]]

_CLOSE_TIMEOUT_S = 10.0
_RESERVED_PARAMS = frozenset(
    {"messages", "model", "response_model", "contracts", "examples", "stream", "context"}
)


class _LoopThread:
    """One asyncio event loop, run by a daemon thread until `stop()`: where an actor's async
    client lives, batch after batch."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="healjson-ray-loop", daemon=True
        )
        self._thread.start()

    @property
    def running(self) -> bool:
        """True until `stop()`."""
        return self._thread.is_alive() and not self.loop.is_closed()

    def run(self, work: Coroutine[Any, Any, R], timeout: float | None = None) -> R:
        """Run `work` on the loop and wait for its result (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def stop(self) -> None:
        """Stop the loop and join its thread; idempotent."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(_CLOSE_TIMEOUT_S)
        if not self._thread.is_alive():
            self.loop.close()


class HealBatch:
    """A callable class for `Dataset.map_batches`: heal each row's request with the model.

    ```python
    ds.map_batches(
        HealBatch,
        fn_constructor_kwargs={"client_factory": openai.AsyncOpenAI, "model": "gpt-4o-mini",
                               "response_model": Invoice, "contracts": [totals_add_up]},
        compute=ray.data.ActorPoolStrategy(size=4),
        num_cpus=0.25,  # the actors wait on the network: leave CPUs to the rest of the pipeline
        batch_size=64,
        batch_format="pyarrow",
    )
    ```

    `client_factory` is called once, in the actor, with no arguments, and returns an
    `openai.AsyncOpenAI`-compatible client (a `healjson.wrap`-ped one is accepted too; this
    class's `json_mode` and `policy` then apply). Pass something that builds the client from
    the actor's environment (`openai.AsyncOpenAI` itself reads `OPENAI_API_KEY` there): the
    class and its keyword arguments are serialised to every actor, and a client or a captured
    key would be too. `model`, `response_model`, `contracts`, `examples`, `policy` and
    `json_mode` are as for `wrap(client).chat.completions.create`; `request_params` are more
    keyword arguments for every call (`temperature`, `max_tokens`, ...).

    Each row's request is read as `healjson batch` reads an input line: its `messages_column` (chat
    messages: a list of dicts, or that list as JSON text) when set, else its `prompt_column` (a
    string: one user turn); its `system_column` (a string) put first as a system message; its
    `context_column`, when set, the run's `context=` (an object, or its JSON text: the contracts'
    `ctx.extra` and pydantic's validation context; keep `batch_format="pyarrow"` or `"pandas"`
    there: Ray's numpy batches turn an integer field with nulls into floats, so an integer
    beyond 2**53 arrives already rounded); its `temperature`, `top_p` and `max_tokens`
    columns, when set, its own parameters (over `request_params`). `id_column` is copied to the `id`
    column. Each batch's rows are healed concurrently, at most `concurrency` at a time in the actor.
    The result is a `pyarrow.Table` of `RESULT_COLUMNS` (plus `outcome` with
    `include_outcome=True`), one row per input row in input order (see the module docstring).

    Configuration errors (a factory that is not callable or returns a sync client, a bad model,
    contract or example) raise in the constructor, that is when the actor starts. Nothing the
    provider or the model does raises in a call; an exception from your own code inside a run
    (not the provider's) propagates, as in `wrap`. When Ray Data shuts an actor down it drops
    the instance, which closes the client and stops the loop; `close()` (or `with
    HealBatch(...) as heal:`) does it when you call an instance yourself.
    """

    def __init__(
        self,
        client_factory: Callable[[], Any],
        *,
        model: str,
        response_model: Any,
        contracts: Rules = (),
        examples: Iterable[Any] = (),
        policy: HealPolicy | None = None,
        json_mode: str = "json_schema",
        concurrency: int = 16,
        messages_column: str = "messages",
        prompt_column: str = "prompt",
        id_column: str | None = "id",
        include_outcome: bool = False,
        request_params: Mapping[str, Any] | None = None,
        context_column: str | None = "context",
        system_column: str | None = "system",
    ) -> None:
        require_extra("pyarrow", "ray")
        is_client = not isinstance(client_factory, type) and hasattr(client_factory, "chat")
        if not callable(client_factory) or is_client:
            raise TypeError(
                "client_factory must be a function that returns a client (for example "
                "`lambda: openai.AsyncOpenAI()`), not a client: the factory is what is sent to "
                "the actors, and a client would carry its API key with it"
            )
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
        if not isinstance(model, str) or not model:
            raise TypeError("model must be the model's name (a non-empty string)")
        params = dict(request_params or {})
        clash = sorted(_RESERVED_PARAMS.intersection(params))
        if clash:
            raise ValueError(f"request_params must not set {', '.join(clash)}: HealBatch does")
        self._fields = {
            "messages": messages_column,
            "prompt": prompt_column,
            "system": system_column,
            "context": context_column,
        }
        self._id_column = id_column
        self._include_outcome = include_outcome
        self._concurrency = concurrency
        self._gate = asyncio.Semaphore(concurrency)  # one per actor, whatever calls it
        self._response_model = response_model
        self._contracts = tuple(contracts)
        self._examples = tuple(examples)
        self._params = {**params, "model": model}
        self._runner = _LoopThread()
        client: Any = None
        try:
            client = self._runner.run(_build(client_factory))
            from ._wrap import wrap

            self._client: Any = wrap(client, json_mode=json_mode, policy=policy)
            if not self._client.is_async:
                raise TypeError(
                    "client_factory must return an async client (openai.AsyncOpenAI), "
                    f"got {type(client).__name__}"
                )
            # built here, once: the calls find it in the client's cache
            self._healer: Healer[Any] = self._client.healer(
                response_model, self._contracts, None, None, self._examples
            )
        except BaseException:
            closing = getattr(client, "close", None)  # the factory made it for us: ours to close
            if callable(closing):
                with contextlib.suppress(Exception):
                    self._runner.run(_maybe_await(closing), _CLOSE_TIMEOUT_S)
            self._runner.stop()
            raise

    def __call__(self, batch: Any) -> pa.Table:
        """Heal one batch: a `pyarrow.Table`, a `pandas.DataFrame` or a dict of columns."""
        columns = Columns(batch)
        rows: list[dict[str, Any] | None] = []
        todo: list[tuple[int, Request]] = []
        for index, fields in enumerate(request_fields(columns, self._fields)):
            request = read_request(fields)
            if isinstance(request, Unusable):
                rows.append(invalid_row(request.problem, fields.get(request.field)))
            else:
                todo.append((index, request))
                rows.append(None)
        if todo:
            if not self._runner.running:
                raise RuntimeError("this HealBatch is closed")
            outcomes = self._runner.run(self._heal_all([request for _, request in todo]))
            target, full = self._healer.target, self._include_outcome
            for (index, _), outcome in zip(todo, outcomes, strict=True):
                rows[index] = outcome_row(outcome, target, full=full)
        extra = (OUTCOME_COLUMN,) if self._include_outcome else ()
        done = [row for row in rows if row is not None]
        return result_table(columns.ids(self._id_column), done, extra)

    async def _heal_all(self, requests: Sequence[Request]) -> list[Outcome[Any]]:
        """Heal every request (its messages, context and own parameters), at most `concurrency`
        at once in this actor (however many batches Ray hands it at a time), results in request
        order."""
        gate, create = self._gate, self._client.chat.completions.create

        async def heal(request: Request) -> Outcome[Any]:
            async with gate:
                outcome: Outcome[Any] = await create(
                    messages=list(request.messages),
                    response_model=self._response_model,
                    contracts=self._contracts,
                    examples=self._examples,
                    context=request.context,
                    **{**self._params, **request.params},
                )
                return outcome

        async with asyncio.TaskGroup() as group:  # one failing run cancels the others
            tasks = [group.create_task(heal(request)) for request in requests]
        return [task.result() for task in tasks]

    def close(self) -> None:
        """Close the client and stop the actor's event loop; idempotent."""
        runner: _LoopThread | None = getattr(self, "_runner", None)
        if runner is None or not runner.running:
            return
        try:
            closing = getattr(self._client, "close", None)
            if callable(closing):
                runner.run(_maybe_await(closing), _CLOSE_TIMEOUT_S)
        finally:
            runner.stop()

    def __enter__(self) -> HealBatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:  # Ray Data drops the instance when it shuts an actor down
        with contextlib.suppress(Exception):  # the interpreter may be shutting down
            self.close()

    def __reduce__(self) -> Any:
        raise TypeError(
            "a HealBatch instance holds a client and an event loop and cannot be sent to Ray "
            "workers: pass the class, `ds.map_batches(HealBatch, fn_constructor_kwargs={...}, "
            "compute=ray.data.ActorPoolStrategy(size=N))`"
        )

    def __repr__(self) -> str:
        return (
            f"HealBatch({self._healer.target.name}, model={self._params['model']!r}, "
            f"concurrency={self._concurrency})"
        )


async def _build(factory: Callable[[], Any]) -> Any:
    """Call the factory on the actor's loop (a client that binds to a loop binds to that one)."""
    client = factory()
    if isinstance(client, Awaitable):
        client = await client
    return client


async def _maybe_await(close: Callable[[], Any]) -> None:
    result = close()
    if isinstance(result, Awaitable):
        await result


_REPLY_FIELDS = ("messages", "prompt", "system", "context")
"""The request fields `HealReplies` reads (the pipeline sends the request: no parameters)."""

_REPLAY_HEALERS: dict[str, Healer[Any]] = {}
"""`HealReplies` healers by instance token, per process: the copies of one instance Ray
deserialises for each task in a worker share one healer."""
_MAX_REPLAY_HEALERS = 32


class HealReplies:
    """A postprocess for pipelines that already called the model: heal each row's reply
    locally (L1 + L2, no model call) and say which rows need another call.

    ```python
    healed = ds.map_batches(HealReplies(Invoice, contracts=[totals_add_up]),
                            batch_format="pyarrow")
    ```

    Each input row holds the request (`messages_column` or `prompt_column`, and `system_column`,
    read as `HealBatch` reads them), the model's reply text (`text_column`, `generated_text` as
    `ray.data.llm` names it; optional `finish_reason_column`, and token counts `input_tokens_column`
    / `output_tokens_column`, `ray.data.llm`'s names by default: counts it does not give are 0),
    optionally its `context_column` (the run's `context=`, as for `HealBatch`: keep it on every
    pass), and, on a later pass, the `history_column` the previous pass wrote.

    The result has `RESULT_COLUMNS` plus `repair_messages` and `history`. A row that healed or
    degraded for good has them null. A row that needs another model call has `ok`, `value`,
    `reason` and `errors` null, `repair_messages` the JSON text of the next request's messages
    (exactly what healjson would send: the original request, the reply and the repair prompt)
    and `history` the JSON text of the original request and the replies so far. Send
    `repair_messages` through the model, then feed the new reply as `text_column` with `history`
    into this postprocess again; the original request is read from `history` then, so the
    pipeline may put `repair_messages` in the `messages` column. The policy's `max_attempts`
    bounds the passes: a row whose attempts are spent degrades.

    `model` names the model for the `cost` column (through `genai-prices`; null when unknown).
    The healer is built in the constructor (configuration errors raise there) and is not
    serialised: each worker process builds its own once.
    """

    def __init__(
        self,
        response_model: Any,
        *,
        contracts: Rules = (),
        examples: Iterable[Any] = (),
        policy: HealPolicy | None = None,
        messages_column: str = "messages",
        prompt_column: str = "prompt",
        id_column: str | None = "id",
        text_column: str = "generated_text",
        finish_reason_column: str | None = "finish_reason",
        history_column: str | None = "history",
        input_tokens_column: str | None = "num_input_tokens",
        output_tokens_column: str | None = "num_generated_tokens",
        model: str | None = None,
        include_outcome: bool = False,
        context_column: str | None = "context",
        system_column: str | None = "system",
    ) -> None:
        require_extra("pyarrow", "ray")
        self._config: dict[str, Any] = {
            "response_model": response_model,
            "contracts": tuple(contracts),
            "examples": tuple(examples),
            "policy": policy,
        }
        self._columns = {
            "messages": messages_column,
            "prompt": prompt_column,
            "id": id_column,
            "text": text_column,
            "finish_reason": finish_reason_column,
            "history": history_column,
            "input_tokens": input_tokens_column,
            "output_tokens": output_tokens_column,
            "context": context_column,
            "system": system_column,
        }
        self._model = model
        self._include_outcome = include_outcome
        self._token = uuid.uuid4().hex
        self._healer = self._build()

    def _build(self) -> Healer[Any]:
        found = _REPLAY_HEALERS.get(self._token)
        if found is None:
            config = self._config
            found = Healer(
                config["response_model"],
                contracts=config["contracts"],
                policy=config["policy"],
                examples=config["examples"],
            )
            if len(_REPLAY_HEALERS) >= _MAX_REPLAY_HEALERS:
                _REPLAY_HEALERS.clear()
            _REPLAY_HEALERS[self._token] = found
        return found

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_healer"]  # rebuilt where it is unpickled (once per process)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._healer = self._build()

    def __call__(self, batch: Any) -> pa.Table:
        """Heal one batch of replies: a `pyarrow.Table`, a `pandas.DataFrame` or a dict of
        columns."""
        names = self._columns
        columns = Columns(batch)
        blank = [None] * columns.rows
        texts = columns.values(names["text"])
        data = zip(
            request_fields(columns, names, _REPLY_FIELDS),
            texts or blank,
            columns.values(names["finish_reason"]) or blank,
            columns.values(names["history"]) or blank,
            columns.values(names["input_tokens"]) or blank,
            columns.values(names["output_tokens"]) or blank,
            strict=True,
        )
        rows = []
        for fields, text, finish, history, prompt_tokens, completion_tokens in data:
            if texts is None:
                rows.append(invalid_row(f"the batch has no `{names['text']}` column", None))
                continue
            latest = (text, finish, prompt_tokens, completion_tokens)
            rows.append(self._row(fields, history, latest))
        extra = (*((OUTCOME_COLUMN,) if self._include_outcome else ()), *REPAIR_COLUMNS)
        return result_table(columns.ids(names["id"]), rows, extra)

    def _row(
        self, fields: Mapping[str, Any], history_value: Any, latest: tuple[Any, Any, Any, Any]
    ) -> dict[str, Any]:
        """One row's result: `fields` its request's, `latest` its reply (text, finish reason,
        token counts)."""
        context, problem = read_context(fields.get("context"))
        if problem is not None:
            return invalid_row(problem, fields.get("context"))
        earlier, problem = read_history(history_value)
        if problem is not None:
            return invalid_row(problem, history_value)
        if earlier is None:
            request = read_request({**fields, "context": None})
            if isinstance(request, Unusable):
                return invalid_row(request.problem, fields.get(request.field))
            earlier = History(request.messages, ())
        text, finish_reason, prompt_tokens, completion_tokens = latest
        answer, problem = read_text(text)
        if problem is not None:
            return invalid_row(problem, text)
        reply = ReplyRecord(
            answer,
            read_finish_reason(finish_reason),
            read_tokens(prompt_tokens),
            read_tokens(completion_tokens),
        )
        history = History(earlier.messages, (*earlier.replies, reply))
        replies = [record.reply(self._model) for record in history.replies]
        results = [replied(reply) for reply in replies]
        step = self._healer.replay(history.messages, results, context=context)
        if isinstance(step, ModelCall):
            spent = sum((reply.usage or Usage() for reply in replies), Usage())
            return pending_row(history, step.messages, spent)
        return outcome_row(step, self._healer.target, full=self._include_outcome)

    def __repr__(self) -> str:
        return f"HealReplies({self._healer.target.name}, text_column={self._columns['text']!r})"
