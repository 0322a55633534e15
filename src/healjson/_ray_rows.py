"""The rows `healjson.ray` reads and writes: a Ray Data batch in, one Arrow table out. No Ray here.

A batch arrives as Ray Data hands it to `map_batches`: a `pyarrow.Table` (`batch_format=
"pyarrow"`), a `pandas.DataFrame` (`"pandas"`) or a dict of columns (`"numpy"`, the default:
numpy arrays; plain lists work too). Only the columns healjson reads are converted to Python
values, numpy arrays and scalars inside them included. What comes out is always a
`pyarrow.Table` with `result_schema`'s columns, one row per input row, in input order.

A row's request is read as every runner reads one (`healjson._batch.request`: `messages` or
`prompt`, `system`, `context`, the row's `temperature`, `top_p`, `max_tokens`), from the columns
of those names (`request_fields` picks them out of a batch). A row with no usable request
becomes an `invalid_input` row; nothing here raises for a row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from healjson._batch.request import ROW_FIELDS, missing, read_messages
from healjson._core.diagnostic import jsonable, short_repr
from healjson._core.outcome.json_text import strict_dumps
from healjson._core.outcome.outcome import Outcome
from healjson._core.outcome.record import revealing
from healjson._core.outcome.written import as_written
from healjson._core.redact import redact_data, redact_text
from healjson._core.target.target import Target
from healjson._core.wire.reply import Reply, Usage

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "INVALID_INPUT",
    "OUTCOME_COLUMN",
    "REPAIR_COLUMNS",
    "RESULT_COLUMNS",
    "Columns",
    "History",
    "ReplyRecord",
    "invalid_row",
    "outcome_row",
    "pending_row",
    "plain",
    "read_finish_reason",
    "read_history",
    "read_text",
    "read_tokens",
    "request_fields",
    "result_schema",
    "result_table",
]

INVALID_INPUT = "invalid_input"

RESULT_COLUMNS = (
    "id",
    "ok",
    "value",
    "reason",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost",
    "errors",
)
"""The columns every result table has, in this order."""

OUTCOME_COLUMN = "outcome"
"""The opt-in column holding `outcome.to_dict()` as JSON text."""

REPAIR_COLUMNS = ("repair_messages", "history")
"""The columns `HealReplies` adds: the next request of a row still healing, and its replies."""

_TOKEN_FIELDS = RESULT_COLUMNS[5:10]
_PRESCRIPTION = (
    "Give the row `messages` (a non-empty list of chat messages, each with a string `role`) or "
    "`prompt` (a non-empty string); optionally `system` (a string), `context` (an object) and "
    "`temperature`, `top_p`, `max_tokens`."
)

Messages = tuple[dict[str, Any], ...]
Row = dict[str, Any]


# -- reading a batch ----------------------------------------------------------------------------


class Columns:
    """One input batch: its row count and, by name, a column as plain Python values."""

    def __init__(self, batch: Any) -> None:
        if hasattr(batch, "column_names") and hasattr(batch, "num_rows"):  # pyarrow Table, batch
            self.kind = "arrow"
            self.rows = int(batch.num_rows)
            self.names = frozenset(batch.column_names)
        elif hasattr(batch, "columns") and hasattr(batch, "iloc"):  # pandas DataFrame
            self.kind = "pandas"
            self.rows = len(batch)
            self.names = frozenset(str(name) for name in batch.columns)
        elif isinstance(batch, Mapping):  # numpy batches: a dict of arrays (or of lists)
            self.kind = "dict"
            lengths = {len(column) for column in batch.values()}
            if len(lengths) > 1:
                raise ValueError(f"the batch's columns differ in length: {sorted(lengths)}")
            self.rows = lengths.pop() if lengths else 0
            self.names = frozenset(batch)
        else:
            raise TypeError(
                "a batch must be a pyarrow.Table, a pandas.DataFrame or a dict of columns, "
                f"not {type(batch).__name__}"
            )
        self._batch = batch

    def values(self, name: str | None) -> list[Any] | None:
        """The column's values as plain Python data, a missing value as None (the whole column
        None when the batch has no such column)."""
        if name is None or name not in self.names:
            return None
        if self.kind == "arrow":
            return list(self._batch.column(name).to_pylist())
        column = self._batch[name].tolist() if self.kind == "pandas" else self._batch[name]
        return [None if missing(value) else plain(value) for value in column]

    def ids(self, name: str | None) -> Any:
        """The id column as an Arrow array (nulls when the batch has none)."""
        import pyarrow as pa

        if name is None or name not in self.names:
            return pa.nulls(self.rows)
        if self.kind == "arrow":
            column = self._batch.column(name)
            return column.combine_chunks() if hasattr(column, "combine_chunks") else column
        values = self.values(name) or []
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # ids of several types: all as text
            return pa.array([None if v is None else str(v) for v in values], pa.string())


def plain(value: Any) -> Any:
    """`value` with numpy arrays and scalars (at any depth) turned into Python lists and values."""
    if value is None or isinstance(value, str | bytes | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return plain(tolist())
    return value


def request_fields(
    columns: Columns, names: Mapping[str, str | None], fields: Sequence[str] = ROW_FIELDS
) -> list[dict[str, Any]]:
    """Each row's request fields (`fields`, read from the column `names` gives each, else the
    column of the field's own name), as `healjson._batch.request.read_request` takes them."""
    read = {name: columns.values(names.get(name, name)) for name in fields}
    return [
        {name: values[index] for name, values in read.items() if values is not None}
        for index in range(columns.rows)
    ]


# -- the reply ----------------------------------------------------------------------------------


def read_text(value: Any) -> tuple[str | None, str | None]:
    """A reply's text: `(text or None, None)`, or `(None, why not)` for a value that is no text."""
    if missing(value):
        return None, None
    if isinstance(value, str):
        return value, None
    return None, f"the reply text must be a string, got {type(value).__name__}"


def read_tokens(value: Any) -> int:
    """A token count from the pipeline (0 for a missing or unusable one)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or missing(value):
        return 0
    return max(int(value), 0)


def read_finish_reason(value: Any) -> str | None:
    """A finish reason (None for a missing one or anything that is not a string)."""
    return value if isinstance(value, str) and value else None


# -- the history of a row still healing ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplyRecord:
    """One reply a pipeline received for a row: its text, finish reason and token counts."""

    text: str | None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def reply(self, model: str | None) -> Reply:
        """The reply as healjson's engine reads it; the usage is the pipeline's counts (no
        estimate: a count the pipeline did not give is 0)."""
        usage = Usage(self.prompt_tokens, self.completion_tokens, requests=1, model=model)
        return Reply(self.text, self.finish_reason, usage=usage)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data for the history column."""
        return {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


@dataclass(frozen=True, slots=True)
class History:
    """A row's history: the original request and the replies received so far."""

    messages: Messages
    replies: tuple[ReplyRecord, ...]

    def to_json(self) -> str:
        """The history column's text, through the redactor (the replies are model text; a
        secret they echo is not carried to the next pass)."""
        data = {"messages": list(self.messages), "replies": [r.to_dict() for r in self.replies]}
        return strict_dumps(_plain_data(data), ensure_ascii=False)


def read_history(value: Any) -> tuple[History | None, str | None]:
    """`(history, None)` for a history column value `History.to_json` wrote, `(None, None)` for
    none, `(None, why not)` for one that cannot be read."""
    if missing(value):
        return None, None
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except (ValueError, RecursionError):
        return None, "`history` is not JSON text"
    if not isinstance(data, Mapping):
        return None, "`history` must be the JSON object a previous pass wrote"
    messages, problem = read_messages(data.get("messages"))
    if problem is not None:
        return None, f"`history.messages`: {problem.removeprefix('`messages` ')}"
    replies = data.get("replies")
    if not isinstance(replies, list):
        return None, "`history.replies` must be a list"
    records: list[ReplyRecord] = []
    for index, item in enumerate(replies):
        text = item.get("text") if isinstance(item, Mapping) else None
        if not isinstance(item, Mapping) or not (text is None or isinstance(text, str)):
            return None, f"`history.replies[{index}]` must be an object with a `text`"
        records.append(
            ReplyRecord(
                text,
                read_finish_reason(item.get("finish_reason")),
                read_tokens(item.get("prompt_tokens")),
                read_tokens(item.get("completion_tokens")),
            )
        )
    return History(messages, tuple(records)), None


# -- the rows written ------------------------------------------------------------------------


def outcome_row(outcome: Outcome[Any], target: Target[Any], *, full: bool = False) -> Row:
    """The result columns of a finished run (`full`: with the `outcome` column). Every text
    passes the redactor, with the secrets the run found in the value; a healed value the
    redactor would change (a key the model echoed, a credential name or shape) is never written
    altered as `ok`: the row degrades with `api_error` saying why (`as_written`), its attempts
    and usage kept."""
    outcome = as_written(outcome)
    usage = outcome.usage
    with revealing(outcome):
        row: Row = {
            "ok": outcome.ok,
            "value": redact_text(_value_text(target, outcome.value)) if outcome.ok else None,
            "reason": None if outcome.ok else str(outcome.reason),
            "attempts": outcome.calls,
            **_tokens(usage),
            "cost": usage.cost,
            "errors": "[]" if outcome.ok else _record_text([d.to_dict() for d in outcome.errors]),
        }
    if full:
        row[OUTCOME_COLUMN] = strict_dumps(outcome.to_dict(), ensure_ascii=False)
    return row


def pending_row(history: History, messages: Sequence[Mapping[str, Any]], usage: Usage) -> Row:
    """The result columns of a row that needs another model call: `messages` is its request."""
    return {
        "ok": None,
        "value": None,
        "reason": None,
        "attempts": len(history.replies),
        **_tokens(usage),
        "cost": usage.cost,
        "errors": None,
        # the next request quotes the model's last answer: through the redactor, as every
        # column that holds model text
        "repair_messages": json.dumps(
            _plain_data([dict(message) for message in messages]), ensure_ascii=False
        ),
        "history": history.to_json(),
    }


def invalid_row(problem: str, value: Any) -> Row:
    """The result columns of a row that holds no usable request (or reply)."""
    error = {
        "path": "<input>",
        "value": short_repr(value, 200),
        "constraint": problem,
        "prescription": _PRESCRIPTION,
        "source": "input",
    }
    return {
        "ok": False,
        "value": None,
        "reason": INVALID_INPUT,
        "attempts": 0,
        **dict.fromkeys(_TOKEN_FIELDS, 0),
        "cost": 0.0,
        "errors": _record_text([error]),
    }


def result_schema(id_type: Any, extra: Sequence[str] = ()) -> pa.Schema:
    """The result table's schema: `id` of `id_type`, then the result columns, then `extra`
    (text columns: `outcome`, `repair_messages`, `history`)."""
    import pyarrow as pa

    types = {
        "ok": pa.bool_(),
        "value": pa.string(),
        "reason": pa.string(),
        "attempts": pa.int64(),
        **dict.fromkeys(_TOKEN_FIELDS, pa.int64()),
        "cost": pa.float64(),
        "errors": pa.string(),
    }
    fields = [pa.field("id", id_type), *(pa.field(n, t) for n, t in types.items())]
    return pa.schema([*fields, *(pa.field(name, pa.string()) for name in extra)])


def result_table(ids: Any, rows: Sequence[Row], extra: Sequence[str] = ()) -> pa.Table:
    """One table of result rows (`ids`: the id column, as `Columns.ids` gives it)."""
    import pyarrow as pa

    schema = result_schema(ids.type, extra)
    arrays = [ids]
    arrays.extend(_column([row.get(f.name) for row in rows], f.type) for f in list(schema)[1:])
    return pa.Table.from_arrays(arrays, schema=schema)


def _column(values: list[Any], type_: pa.DataType) -> pa.Array:
    """One result column. Arrow strings are UTF-8: a text holding a lone surrogate (a reply a
    pandas or dict batch carried as Python text) cannot be written as it is, so in a text column
    each lone surrogate becomes U+FFFD, in that row alone: the batch's other rows are kept."""
    import pyarrow as pa

    try:
        return pa.array(values, type_)
    except UnicodeEncodeError:
        if not pa.types.is_string(type_):
            raise
        return pa.array([_utf8(value) for value in values], type_)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(value: Any) -> Any:
    """`value` with each lone surrogate replaced (text that UTF-8 cannot encode as it is)."""
    return _SURROGATE.sub("\ufffd", value) if isinstance(value, str) else value


def _tokens(usage: Usage) -> dict[str, int]:
    return {name: getattr(usage, name) for name in _TOKEN_FIELDS}


def _value_text(target: Target[Any], value: Any) -> str:
    """The healed value as JSON text that validates back into the target (fields under their
    aliases, as pydantic reads them; a non-finite float as `strict_dumps` writes it, which
    pydantic reads back, where its own JSON writes `null`)."""
    try:
        data = target.adapter.dump_python(value, mode="json", by_alias=True)
        return strict_dumps(data, ensure_ascii=False, separators=(",", ":"))
    except Exception:  # a type pydantic cannot serialise: healjson's safe rendering
        return strict_dumps(jsonable(value), ensure_ascii=False)


def _plain_data(data: Any) -> Any:
    """`data` as JSON data (objects as their text), every string through the redactor (the
    caller's keys kept: the columns are data, not records of credentials)."""
    return redact_data(json.loads(json.dumps(data, default=_text_of)), by_name=False)


def _record_text(data: Any) -> str:
    """Record data (diagnostics, an outcome) as JSON text, every string passed through the
    redactor as `outcome.trace("json")` does."""
    return strict_dumps(redact_data(data, by_name=False), ensure_ascii=False)


def _text_of(value: Any) -> Any:
    """`json.dumps`' fallback for a value in messages that is not JSON data."""
    return jsonable(value)
