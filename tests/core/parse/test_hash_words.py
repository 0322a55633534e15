"""A `#` opens a comment only as comments are written: never drops a word meant as a value.

`# note`, `## heading`, a `#` alone on its line are comments (dropped, flagged
`syntax_repaired`); `#python`, `#ff0000` where a value belongs are the words the model wrote
(hashtags, colours), read by the bare-token rule, or refused when that rule refuses them
(`#123456`: no letter) - never dropped.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Flag, Healed
from pinned import pinned


class Post(BaseModel):
    title: str
    hashtags: list[str]


@pytest.mark.parametrize(
    "text",
    [
        '{\n  "title": "Launch",\n  "hashtags": [\n    #python,\n    #ai\n  ]\n}',
        '{\n  "title": "Launch",\n  "hashtags": [\n    "#python",\n    #ai\n  ]\n}',
        '{"title": "Launch", "hashtags": ["#python", #ai\n]}',
        '{"title": "Launch", "hashtags": [#python, #ai]}',
    ],
    ids=["one-per-line", "quoted-then-bare", "bare-last", "one-line"],
)
def test_bare_hashtags_are_the_words_the_model_wrote(text: str) -> None:
    """Unquoted `#word` list items are kept as the strings written, flagged `syntax_repaired`."""
    outcome = healjson.validate(text, Post)
    assert isinstance(outcome, Healed)
    assert ["#python", "#ai"] == outcome.value.hashtags
    assert Flag.SYNTAX_REPAIRED in outcome.flags


COMMENTS_AND_WORDS = [
    ('{"color": #ff0000}', {"color": "#ff0000"}),
    ('{"colors": ["#ff0000", #00ff00,]}', {"colors": ["#ff0000", "#00ff00"]}),
    ('{"a": 1, # a note\n "b": 2,}', {"a": 1, "b": 2}),
    ('{"a": 1,\n## a heading\n"b": 2,}', {"a": 1, "b": 2}),
    ("[1,\n#\n2,]", [1, 2]),
    ("[1,\n#\ta tab\n2,]", [1, 2]),
]


def test_a_hash_is_a_comment_only_when_written_as_one() -> None:
    """A `#` followed by a space, a tab, another `#` or the line's end is a comment; one
    followed by a word starts a value (a colour here), in the same reader."""
    for text, expected in COMMENTS_AND_WORDS:
        result = healjson.parse(text)
        assert expected == result.value, text
        assert Flag.SYNTAX_REPAIRED in result.flags


@pytest.mark.parametrize(
    "text",
    [
        '{"title": "Launch", "hashtags": [\n #123,\n #456\n]}',
        '{\n#comment\n"title": "Launch", "hashtags": []}',
    ],
    ids=["no-letter", "word-where-a-key-belongs"],
)
def test_a_hash_word_no_rule_reads_is_refused_never_dropped(text: str) -> None:
    """A `#` token the bare-token rule refuses, or a `#word` where a key belongs, gives no
    value rather than a shorter list or object."""
    outcome = healjson.validate(text, Post)
    assert isinstance(outcome, Degraded)


WORDS = st.from_regex(r"#[a-zA-Z][a-zA-Z0-9_]{0,8}", fullmatch=True)


@pinned()
@given(
    words=st.lists(WORDS, min_size=1, max_size=6),
    separator=st.sampled_from([",\n", ", ", "\n", ",\n  "]),
    quoted=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_hash_words_written_bare_are_never_dropped(
    words: list[str], separator: str, quoted: list[bool]
) -> None:
    """Any list of `#word` items, each quoted or bare, one per line or on one line, heals to
    exactly those words (or is refused), never to a shorter list."""
    items = [f'"{word}"' if quote else word for word, quote in zip(words, quoted, strict=False)]
    text = '{"title": "t", "hashtags": [\n' + separator.join(items) + "\n]}"
    outcome = healjson.validate(text, Post)
    if isinstance(outcome, Healed):
        assert words == outcome.value.hashtags
