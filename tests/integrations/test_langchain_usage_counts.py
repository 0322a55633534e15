"""LangChain's `usage_metadata` is read by the rule every provider's reader follows: a token
count that is no count (absent, negative, a bool, no int) is unreported and the usage marked
`estimated`; a valid one is kept as reported."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from healjson._frameworks.lc_messages import reply_of
from pinned import pinned

counts = st.one_of(st.integers(-1000, 1000), st.booleans(), st.floats(-5, 5), st.none())


def is_count(value: Any) -> bool:
    """The rule: a non-negative int that is no bool."""
    return type(value) is int and value >= 0


@pinned(max_examples=30)
@given(prompt=counts, completion=counts)
def test_a_langchain_count_that_is_no_count_is_unreported(prompt: Any, completion: Any) -> None:
    """Valid counts are kept, the others (an absent one too) read as 0 with the usage marked
    estimated."""
    ai = AIMessage(content="{}")
    ai.usage_metadata = {"input_tokens": prompt, "output_tokens": completion, "total_tokens": 0}  # type: ignore[typeddict-item]

    usage = reply_of(ai, "{}").usage

    assert usage is not None
    assert (prompt if is_count(prompt) else 0) == usage.prompt_tokens
    assert (completion if is_count(completion) else 0) == usage.completion_tokens
    assert any(not is_count(v) for v in (prompt, completion)) == usage.estimated
