"""An item holding NaN (a float field given `"nan"`, which pydantic reads) is handed out once and
stands: an item is the same item when its JSON dump is, though NaN is not equal to itself."""

from __future__ import annotations

import json

import openai
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned


class Item(BaseModel):
    sku: str
    x: float = 0.0


@pinned(max_examples=10)
@given(
    values=st.lists(
        st.one_of(st.sampled_from(["nan", "NaN", "inf", "-inf"]), st.floats(-5, 5)),
        min_size=1,
        max_size=4,
    ),
    chunk=st.integers(1, 12),
)
def test_an_item_holding_a_non_finite_float_is_handed_out_once(
    values: list[object], chunk: int
) -> None:
    """Whatever non-finite floats the items hold and however the reply is chunked, `items()`
    hands out exactly the final value's items, each once, all `streamed`, in one call."""
    text = json.dumps([{"sku": f"s{i}", "x": value} for i, value in enumerate(values)])
    with (
        ScriptedServer([ScriptedReply(content=text, chunk_chars=chunk)]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            response_model=list[Item],
            stream=True,
        )
        given_out = list(stream.items())
        outcome = stream.outcome
    assert outcome.ok, outcome
    assert 1 == outcome.calls
    assert [item.sku for item in outcome.value] == [item.sku for item in given_out]
    assert set(stream.item_status.values()) == {"streamed"}
