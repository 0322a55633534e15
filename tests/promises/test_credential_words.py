"""A value under a name with a credential's word (`github_token`, `sessionToken`,
`WEBHOOK-SECRET`, `db_password`) is a secret in every record: the model's text and the caller's
data as stored (`to_dict()`, both traces) hold it masked when it could be one (8+ characters,
not a number), while the value handed back keeps it; names whose words are others (`max_tokens`,
`tokenizer`, `token_count`) and values that cannot be one are kept."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

import healjson
from healjson._core.redact import credential_words
from pinned import pinned

CREDENTIAL = ["token", "secret", "password", "passwd", "credential", "credentials"]
OTHER = ["github", "session", "webhook", "db", "access", "refresh", "client", "user", "auth"]


def styled(words: list[str], style: str) -> str:
    """`words` joined as a name in one style: snake, kebab, camel, Pascal or upper snake."""
    if style == "snake":
        return "_".join(words)
    if style == "kebab":
        return "-".join(words)
    if style == "upper":
        return "_".join(words).upper()
    head = words[0] if style == "camel" else words[0].capitalize()
    return head + "".join(word.capitalize() for word in words[1:])


names = st.builds(
    lambda before, word, after, style: styled([*before, word, *after], style),
    st.lists(st.sampled_from(OTHER), max_size=2),
    st.sampled_from(CREDENTIAL),
    st.lists(st.sampled_from(OTHER), max_size=1),
    st.sampled_from(["snake", "kebab", "camel", "pascal", "upper"]),
)
secrets = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", min_size=12, max_size=30
).filter(lambda text: any(char.isalpha() for char in text))


def _stored(outcome: Any) -> str:
    return json.dumps(outcome.to_dict()) + outcome.trace() + outcome.trace(format="json")


@pinned(max_examples=40)
@given(name=names, secret=secrets)
def test_a_value_under_a_credential_word_is_masked_in_every_record(name: str, secret: str) -> None:
    """The model's answer `{"<name>": "<secret>"}`: healed with the secret in the value, and no
    record holds it."""
    outcome = healjson.validate(json.dumps({name: secret, "n": 1}), dict[str, Any])

    assert outcome.ok
    assert secret == outcome.value[name]
    assert secret not in _stored(outcome)


@pinned(max_examples=30)
@given(
    name=st.sampled_from(["max_tokens", "tokenizer", "token_count", "tokens", "secretary_name"]),
    value=st.one_of(st.integers(0, 10**9), st.text("abcdefgh", min_size=8, max_size=12)),
)
def test_other_words_and_numbers_are_kept(name: str, value: Any) -> None:
    """Names whose words are no credential's, and numbers, stay in the records as answered."""
    assume(not credential_words(name))
    outcome = healjson.validate(json.dumps({name: value}), dict[str, Any])

    assert outcome.ok
    assert str(value) in outcome.to_dict()["raw_text"]
    assert str(value) in outcome.trace()
