"""The generated no-answer set: model replies that hold no answer at all.

Run from the repository root to regenerate `benchmarks/scenarios/no_answer.jsonl`:

    .venv/bin/python benchmarks/no_answer.py

An invented value (a value produced from a reply that holds no answer) is worse for a caller than
a re-ask, so `benchmarks/corpus_agreement.py` counts how often a parser produces one. The two
corpora have only a handful of such rows; this set adds a few dozen per kind, each kind a general
property of model output, written from what models are known to do and not from any corpus row:

1. `prose`: refusals, apologies, clarifying questions, "I don't know", explanations. No bracket
   of any kind (`()[]{}<>`). Some sentences mention a number or two labels in passing ("page 1",
   "positive or negative"), as real prose does; neither is an answer.
2. `bracket_noise`: the same prose with brackets that are not JSON: citations (`[^1]`,
   `[Smith 2021]`, `[2-4]`), `[see above]`, template placeholders (`{customer_name}`), emoticons,
   markdown links and set notation (`{a, b}`). A bare numeric citation such as `[1]` is left out
   on purpose: `json.loads("[1]")` is the list `[1]`, a JSON value, and this kind promises none.
3. `fragment`: a lone key (`"answer":`), an opening with its key (`{"answer": `), the tail of a
   rendering whose head is lost, and a valid rendering cut at a random point. A piece that
   `json.loads` accepts (cutting `-37` to `-3`) is never used: the kind is "not a complete
   value". Half the cut renderings say `finish_reason: "length"`, the others `null`, as when a
   stream ends without a reason; the other fragments say `null`.
4. `reasoning_only`: a `<think>`, `<thinking>` or `<reasoning>` block (any letter case) with draft
   values that do validate, never closed: the model ran out of tokens before answering, so
   `finish_reason` is always `"length"`.
5. `empty_fence`: markdown with an empty `json` fence, a fence holding only a placeholder, or a
   fence of code or text in another language, with no JSON value in it.

Targets are plain pydantic / typing types defined here and named in each row (`TARGETS`). A
`str` target is left out of kinds 1-2: for a string schema prose is a legitimate answer. The
constrained `order_code` string (`ABC-1234`) appears in kinds 3-5, where the only text that
could satisfy it is a draft or a fragment.

Each kind draws from its own `random.Random` seeded from `SEED` and the kind's name, so editing
one kind leaves the other kinds' rows unchanged. `tests/benchmarks/test_no_answer_set.py`
regenerates the file in memory and fails when the committed copy is stale.
"""

from __future__ import annotations

import enum
import json
import random
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any

from pydantic import BaseModel, StringConstraints

__all__ = [
    "KINDS",
    "OUTPUT",
    "SEED",
    "TARGETS",
    "Answer",
    "Item",
    "NoAnswerRow",
    "OrderCode",
    "Sentiment",
    "build",
    "json_spans",
    "load_rows",
    "render_file",
]

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "scenarios" / "no_answer.jsonl"
SEED = 20261201
ROWS_PER_KIND = 36


# ---------------------------------------------------------------------------------------------
# Targets
# ---------------------------------------------------------------------------------------------


class Answer(BaseModel):
    """A free-text answer with the model's confidence in it."""

    answer: str
    confidence: float


class Item(BaseModel):
    """One line of an order."""

    name: str
    quantity: int


class Sentiment(enum.Enum):
    """A three-way label."""

    POSITIVE = "positive"
    NEGATIVE = "negative"
    NEUTRAL = "neutral"


OrderCode = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}-[0-9]{4}$")]

TARGETS: Mapping[str, Any] = MappingProxyType(
    {
        "answer": Answer,
        "items": list[Item],
        "sentiment": Sentiment,
        "count": int,
        "order_code": OrderCode,
    }
)
"""The target named in a row's `target` field."""

_PROSE_TARGETS = ("answer", "items", "sentiment", "count")  # kinds 1-2: no string target
_ALL_TARGETS = tuple(TARGETS)
_KEYS = {  # the keys a model writes when it wraps the target in an object
    "answer": ("answer", "confidence"),
    "items": ("items", "name", "quantity"),
    "sentiment": ("sentiment", "label"),
    "count": ("count", "total"),
    "order_code": ("order_code", "code"),
}


@dataclass(frozen=True, slots=True)
class NoAnswerRow:
    """One reply that holds no answer for its target."""

    id: str
    kind: str
    input: str
    finish_reason: str | None
    target: str
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "input": self.input,
            "finish_reason": self.finish_reason,
            "target": self.target,
            "note": self.note,
        }


# ---------------------------------------------------------------------------------------------
# Valid values (what a draft or a cut rendering started from)
# ---------------------------------------------------------------------------------------------

_ANSWERS = (
    "Paris",
    "The meeting moved to Tuesday",
    "About 40 km",
    "Yes, the warranty covers it",
    "Ada Lovelace",
    "It depends on the tariff",
)
_ITEM_NAMES = ("stapler", "A4 paper", "blue pens", "desk lamp", "toner cartridge", "notebooks")


def _value(rng: random.Random, target: str) -> Any:
    """A random value that validates against `target`."""
    if target == "answer":
        return {"answer": rng.choice(_ANSWERS), "confidence": round(rng.uniform(0.05, 0.99), 2)}
    if target == "items":
        names = rng.sample(_ITEM_NAMES, rng.randint(1, 3))
        return [{"name": name, "quantity": rng.randint(1, 24)} for name in names]
    if target == "sentiment":
        return rng.choice([member.value for member in Sentiment])
    if target == "count":
        return rng.choice([rng.randint(-400, -10), rng.randint(10, 5000)])
    letters = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(3))
    return f"{letters}-{rng.randint(0, 9999):04d}"


def _render(rng: random.Random, value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=rng.choice([None, None, 2]))


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def json_spans(text: str) -> list[str]:
    """Every substring from a `{` or `[` to a later `}` or `]` that `json.loads` accepts."""
    opens = [i for i, c in enumerate(text) if c in "{["]
    closes = [j for j, c in enumerate(text) if c in "}]"]
    return [text[i : j + 1] for i in opens for j in closes if j > i and _is_json(text[i : j + 1])]


# ---------------------------------------------------------------------------------------------
# Kinds 1-2: prose, and prose with bracket noise
# ---------------------------------------------------------------------------------------------

_PROSE: Mapping[str, tuple[str, ...]] = {
    "refusal": (
        "I'm sorry, but I can't help with that request.",
        "I can't share that, it is personal information about a private person.",
        "I won't answer this one: it asks for medical advice I am not able to give.",
        "Sorry, I am not able to open documents that are password protected.",
        "I have to decline, as summarising this would mean repeating someone's private data.",
    ),
    "apology": (
        "Apologies, I could not find an answer in the text you sent.",
        "Sorry about that, the document seems to stop before the part you are asking about.",
        "My apologies: the attachment did not come through, so there is nothing for me to read.",
        "I'm sorry, I no longer have the earlier messages I would need to answer this.",
    ),
    "question": (
        "Could you clarify which order you mean? You mentioned two different ones.",
        "Do you want the figure for this month or for the whole year?",
        "Which document should I use, the draft or the signed version?",
        "Before I answer, can you confirm whether shipping costs should count?",
        "What exactly should I count here, the people or the tickets?",
    ),
    "dont_know": (
        "I don't know.",
        "I'm not sure.",
        "Honestly, I don't know the answer to that.",
        "I have no way of telling from the information given.",
        "There is not enough information to answer.",
        "I don't know; the text does not say.",
    ),
    "explanation": (
        "To answer this I would need the full invoice, not only the cover letter.",
        "The question assumes a single answer, but the source gives several competing accounts.",
        "The review mixes praise and complaints, so any label would be a guess.",
        "The list you refer to was not included in your message.",
        "The data stops before the period you are asking about.",
    ),
}
_INCIDENTAL_NUMBER = (  # a number in passing, not the answer
    "I only received page 1 of the report.",
    "Your message mentions 2023, but not the year you are asking about.",
    "There seem to be 2 versions of this file and they disagree.",
    "I read the first 3 paragraphs; the rest did not arrive.",
)
_TWO_LABELS = (  # labels in a question, not a choice
    "I can't tell whether this is positive or negative.",
    "It could be read as neutral or as negative, depending on the tone.",
    "Would a sarcastic compliment count as positive, negative or neutral? I'd rather ask.",
)
_CLOSERS = (
    "Let me know how you would like to proceed.",
    "Happy to help once I have more details.",
    "Feel free to send the missing part.",
    "",
)

_NOISE: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # sentences @ tokens
    "citation": (
        (
            "The source I have stops before that date @.",
            "Reports disagree on this point @.",
            "I could not confirm it in the references @.",
        ),
        ("[^1]", "[^2]", "[Smith 2021]", "[1, p. 4]", "[2-4]", "[citation needed]", "[ref. 7]"),
    ),
    "see_above": (
        ("As I said @, the file is incomplete.", "The table you mention is missing @."),
        ("[see above]", "[see the attached file]", "[sic]", "[see note]"),
    ),
    "placeholder": (
        (
            "Dear @, I could not find your order.",
            "Please send @ so that I can look it up.",
            "Hello @, thanks for writing in.",
        ),
        ("{customer_name}", "{placeholder}", "{{order_id}}", "{date}", "{name}"),
    ),
    "emoticon": (
        ("Sorry, I really don't know @", "That one stumped me @", "No idea, I'm afraid @"),
        (":-[", ":[", ":-]", ":]", "}:-)", ":-{", ":-}", "[:"),
    ),
    "link": (
        ("The fields are explained in @.", "You can find the form on @."),
        (
            "[the docs](https://example.com/docs)",
            "[this page](https://example.org/help)",
            "[the FAQ](#faq)",
        ),
    ),
    "set": (
        (
            "The allowed values are @, and the text matches none of them.",
            "I would have to choose from @, but the review is unclear.",
        ),
        ("{a, b}", "{x | x > 0}", "{red, green, blue}", "{yes, no}"),
    ),
}


def _prose(rng: random.Random, target: str) -> tuple[list[str], list[str]]:
    """One to three prose sentences for `target` and the categories they came from."""
    categories = rng.sample(sorted(_PROSE), rng.randint(1, 2))
    sentences = [rng.choice(_PROSE[category]) for category in categories]
    if target == "count" and rng.random() < 0.5:
        sentences.insert(rng.randint(0, len(sentences)), rng.choice(_INCIDENTAL_NUMBER))
        categories.append("incidental number")
    if target == "sentiment" and rng.random() < 0.5:
        sentences.insert(rng.randint(0, len(sentences)), rng.choice(_TWO_LABELS))
        categories.append("two labels")
    closer = rng.choice(_CLOSERS)
    if closer:
        sentences.append(closer)
    return sentences, categories


def _prose_rows(rng: random.Random, index: int) -> tuple[str, str | None, str, str]:
    target = _PROSE_TARGETS[index % len(_PROSE_TARGETS)]
    sentences, categories = _prose(rng, target)
    return " ".join(sentences), None, target, "prose: " + ", ".join(categories)


def _noise_rows(rng: random.Random, index: int) -> tuple[str, str | None, str, str]:
    target = _PROSE_TARGETS[index % len(_PROSE_TARGETS)]
    sentences, _ = _prose(rng, target)
    noises = rng.sample(sorted(_NOISE), rng.randint(1, 3))
    for noise in noises:
        templates, tokens = _NOISE[noise]
        sentence = rng.choice(templates).replace("@", rng.choice(tokens))
        sentences.insert(rng.randint(0, len(sentences)), sentence)
    return " ".join(sentences), None, target, "bracket noise: " + ", ".join(noises)


# ---------------------------------------------------------------------------------------------
# Kind 3: fragments
# ---------------------------------------------------------------------------------------------

_FRAGMENT_FORMS = ("lone_key", "open_key", "tail", "cut", "cut", "cut")


def _piece(rng: random.Random, text: str, *, head: bool) -> str | None:
    """A random head (or tail) of `text`, shorter than it, that is not itself a JSON value."""
    points = [
        k
        for k in range(1, len(text))
        if (piece := text[:k] if head else text[k:]).strip() and not _is_json(piece)
    ]
    if not points:
        return None
    k = rng.choice(points)
    return text[:k] if head else text[k:]


def _wrapped(target: str, value: Any) -> Any:
    """The value as a model that wraps a scalar answer in an object writes it."""
    return value if target in ("answer", "items") else {_KEYS[target][0]: value}


def _fragment_rows(rng: random.Random, index: int) -> tuple[str, str | None, str, str]:
    target = _ALL_TARGETS[index % len(_ALL_TARGETS)]
    form = _FRAGMENT_FORMS[index % len(_FRAGMENT_FORMS)]
    key = rng.choice(_KEYS[target])
    if form == "lone_key":
        text = f'"{key}":' + rng.choice(["", " ", "\n"])
        return text, None, target, f"fragment: lone key {key!r}"
    if form == "open_key":
        opener = "[{" if target == "items" and key != "items" else "{"
        text = opener + rng.choice(["", "\n  "]) + f'"{key}":' + rng.choice(["", " ", ' "'])
        return text, None, target, f"fragment: opening with key {key!r}"
    for _ in range(100):  # a value whose rendering has a usable piece (a short int may have none)
        value = _value(rng, target)
        bare = form == "cut" and rng.random() < 0.5
        rendering = _render(rng, value if bare else _wrapped(target, value))
        piece = _piece(rng, rendering, head=form == "cut")
        if piece is not None:
            break
    else:  # pragma: no cover - every target has long enough renderings
        raise ValueError(f"no usable piece for {target}")
    if form == "tail":
        lost = len(rendering) - len(piece)
        return piece, None, target, f"fragment: tail, the first {lost} characters lost"
    finish = "length" if (index // len(_FRAGMENT_FORMS)) % 2 == 0 else None
    note = f"fragment: rendering cut after {len(piece)} of {len(rendering)} characters"
    return piece, finish, target, note


# ---------------------------------------------------------------------------------------------
# Kind 4: reasoning only, cut before the answer
# ---------------------------------------------------------------------------------------------

_TAGS = ("think", "thinking", "reasoning")
_STEPS = (
    "The user wants a structured answer.",
    "Let me read the request again.",
    "First, find the relevant part of the document.",
    "A first draft:",
    "So the answer could be",
    "Hmm, that does not look right.",
    "Wait, I should double-check the second paragraph.",
    "Maybe this instead:",
)
_TRAILING = (
    "But the second sentence changes the meaning, so let me reconsider the whole thing and",
    "Before I answer, I should check whether the totals include the refunded items, because",
    "Actually the units may be wrong here. Converting everything to the same unit gives",
    "That seems plausible, although the user also mentioned an earlier message where",
)


def _tag(rng: random.Random) -> tuple[str, str]:
    name = rng.choice(_TAGS)
    case = rng.choice(["lower", "lower", "title", "upper", "mixed"])
    if case == "title":
        name = name.title()
    elif case == "upper":
        name = name.upper()
    elif case == "mixed":
        name = "".join(c.upper() if rng.random() < 0.5 else c for c in name)
    return f"<{name}>", case


def _reasoning_rows(rng: random.Random, index: int) -> tuple[str, str | None, str, str]:
    target = _ALL_TARGETS[index % len(_ALL_TARGETS)]
    tag, case = _tag(rng)
    drafts = rng.randint(1, 2)
    parts = [tag, rng.choice(_STEPS[:3])]
    fenced = False
    for _ in range(drafts):
        parts.append(rng.choice(_STEPS[3:5]))
        draft = _render(rng, _value(rng, target))
        if rng.random() < 0.3:
            draft, fenced = f"```json\n{draft}\n```", True
        parts.append(draft)
        parts.append(rng.choice(_STEPS[5:]))
    trailing = rng.choice(_TRAILING)
    parts.append(trailing[: rng.randint(len(trailing) // 3, len(trailing) - 1)])
    text = rng.choice(["", "\n"]) + "\n".join(parts)
    note = f"reasoning only: {tag} ({case} case), {drafts} draft value(s)"
    return text, "length", target, note + (", one fenced" if fenced else "")


# ---------------------------------------------------------------------------------------------
# Kind 5: markdown with empty or non-JSON fences
# ---------------------------------------------------------------------------------------------

_FENCE_BODIES: Mapping[str, tuple[tuple[str, str], ...]] = {  # (info string, body)
    "empty fence": (("json", ""), ("json", "\n"), ("JSON", ""), ("", "")),
    "placeholder in json fence": (
        ("json", "..."),
        ("json", "// fill in the fields here"),
        ("json", "TODO: add the values once the document arrives"),
        ("json", "<your answer here>"),
    ),
    "code": (
        ("python", "def total(items):\n    return sum(item.quantity for item in items)"),
        ("python", 'import json\n\nwith open("answer.json") as fh:\n    data = json.load(fh)'),
        ("python", 'for line in open("orders.txt"):\n    print(line.strip())'),
        ("python", "def classify(text: str) -> str:\n    raise NotImplementedError"),
        ("sql", "SELECT name, quantity\nFROM items\nWHERE order_id = ?;"),
        ("bash", "pip install requests\npython fetch_orders.py --month 11"),
    ),
    "text": (
        ("text", "No matching order was found."),
        ("", "The document does not contain this information."),
        ("markdown", "**Note:** the requested values are missing from the source."),
    ),
}
_INTROS: Mapping[str, tuple[str, ...]] = {
    "empty fence": ("Here is the JSON:", "Sure! Here you go:"),
    "placeholder in json fence": ("Here is the JSON:", "I wasn't able to fill this in:"),
    "code": ("You can compute it with this:", "Here is a script for that:"),
    "text": ("Sure! Here you go:", "Result:"),
}
_OUTROS = (
    "Run this on your data to get the answer.",
    "Let me know if you need anything else.",
    "I'll fill in the values once I have the document.",
    "",
)


def _fence_rows(rng: random.Random, index: int) -> tuple[str, str | None, str, str]:
    target = _ALL_TARGETS[index % len(_ALL_TARGETS)]
    form = sorted(_FENCE_BODIES)[index % len(_FENCE_BODIES)]
    info, body = rng.choice(_FENCE_BODIES[form])
    mark = rng.choice(["```", "```", "~~~"])
    fence = f"{mark}{info}\n{body}\n{mark}" if body else f"{mark}{info}\n{mark}"
    parts = [rng.choice((*_INTROS[form], "")), fence, rng.choice(_OUTROS)]
    text = "\n\n".join(part for part in parts if part)
    return text, None, target, f"{form}: {mark}{info or '(no info string)'}"


# ---------------------------------------------------------------------------------------------
# The set
# ---------------------------------------------------------------------------------------------

_Maker = Callable[[random.Random, int], tuple[str, str | None, str, str]]
_MAKERS: Mapping[str, _Maker] = {
    "prose": _prose_rows,
    "bracket_noise": _noise_rows,
    "fragment": _fragment_rows,
    "reasoning_only": _reasoning_rows,
    "empty_fence": _fence_rows,
}
KINDS = tuple(_MAKERS)


def _kind_rows(kind: str, seed: int) -> Iterator[NoAnswerRow]:
    rng = random.Random(f"{seed}:{kind}")
    seen: set[str] = set()
    index = 0
    for _ in range(ROWS_PER_KIND * 50):  # a duplicate reply is drawn again
        text, finish, target, note = _MAKERS[kind](rng, index)
        if (text, target) in seen:
            continue
        seen.add((text, target))
        yield NoAnswerRow(f"{kind}/{index:02d}", kind, text, finish, target, note)
        index += 1
        if index == ROWS_PER_KIND:
            return
    raise ValueError(f"{kind}: too few distinct rows")  # pragma: no cover


def build(seed: int = SEED) -> list[NoAnswerRow]:
    """The whole set, kind by kind; the same `seed` always gives the same rows."""
    return [row for kind in KINDS for row in _kind_rows(kind, seed)]


def render_file(rows: list[NoAnswerRow] | None = None) -> str:
    """The text of `no_answer.jsonl`: one row per line."""
    rows = build() if rows is None else rows
    return "\n".join(json.dumps(row.to_dict(), ensure_ascii=False) for row in rows) + "\n"


def load_rows(path: Path = OUTPUT) -> list[dict[str, Any]]:
    """The rows of a committed file, as dicts (resolve `target` through `TARGETS`)."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> int:
    rows = build()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(render_file(rows), encoding="utf-8")
    for kind in KINDS:
        print(f"{kind}: {sum(row.kind == kind for row in rows)} rows")
    print(f"{len(rows)} rows written to {OUTPUT.relative_to(HERE.parent)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
