"""L1: recover the answer's JSON from a model's reply, locally (no model call).

Modules, in the order a reply meets them: `segment` (reasoning set aside), `scan` (candidates:
fence bodies and bracketed spans, and the structure left open at the end), `lenient` (the
tolerant reader for the slips models make, and the partial data of a cut reply), `strings` (a
string's text: escapes, surrogate pairs; the stream reader reads strings by it too), `tokens`
(when an unquoted token is a value), `align` (fitting data to the target type, along the schema
compiled by `shape`), `scalar` (scalar targets), `read` (the pipeline), `diagnostics` (what it
says when it recovers no value), `result` (`ParseResult`), `meter` (the work count tests read).

The rules, each stated for any reply (none is fitted to a test case):

1. **Reasoning is never the answer.** `<think>`-style blocks, harmony analysis channels and the
   providers' reasoning fields are set aside before candidates are looked for (flag
   `reasoning_set_aside`); a reply that holds only reasoning is a truncation, never a value.
2. **One answer, or none.** Candidates that validate to the same value (after alignment: their
   JSON dumps are equal) are one answer. Different ones are ambiguous: no value (`ambiguity`
   error, every candidate kept), unless `on_ambiguity` picks the first or the last.
3. **Never invent.** A value comes only from text the model wrote as JSON, or as the scalar a
   scalar schema asks for. Local repairs may change how the model's keys and values are spelled
   and drop punctuation; a reading that would create a key or a value (`{"a": }` as `{"a": ""}`)
   or drop the model's words is refused. An unquoted token is a value only when the whole token
   is one — a literal, a number, or a word no value could have been meant by (`tokens`):
   punctuation, malformed or grouped numbers, literals cut short and fused tokens (`1:`, `tru`,
   `1 2 3`, `1,000`) never become data, wherever they stand. A scalar target's reply is read
   as a whole (its markup around it dropped), never picked out of prose, for every kind alike
   (`scalar`). Truncated fragments give `partial` data, never a result.
4. **Complete or cut, decided right.** A structure still open at the end, or a reply whose finish
   reason is `length`, is truncated (so is an opening quote with no closing one: a cut string,
   never text), whatever came before it: a complete span inside the open structure is a piece
   of the cut answer, never an answer of its own (`{"name": "a"}` of a tree cut in its second
   child, behind a citation `[1]` or not). A cut reply's value is accepted only when its JSON
   closed, parsed strictly and nothing JSON-looking follows it, and then it carries the
   `truncated` flag. A bare number or literal (or a scalar target's text) that runs to the cut
   is never a value: `12` may have been `123`.
   Escaped JSON met outside a string (`"{\\"a\\": 1}"`) is encoded JSON: decoded, never "cut".
5. **Linear time.** Every pass walks the reply once (or a bounded number of times); regexes on
   unbounded text are possessive or anchored, with no nested quantifiers; the tolerant reader is
   our own single pass (json-repair, used before, is super-linear on common shapes).
6. **Valid is not enough.** A value that validates but left a field at its default while the
   text holds a key spelling that field (`LIMIT` for `limit`) is not what the text says: the
   key is aligned and the value validated again, or the reply fails (`align.settled`), on every
   path that validates a reply (the fast path too; the check costs nothing where no field was
   left out).
"""

from .diagnostics import truncation_diagnostic
from .read import Ambiguity, check_ambiguity, parse, read
from .result import ParseResult

__all__ = ["Ambiguity", "ParseResult", "check_ambiguity", "parse", "read", "truncation_diagnostic"]
