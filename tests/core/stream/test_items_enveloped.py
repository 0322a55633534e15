"""Items flow from the answer an endpoint enforced, and only from it: under OpenAI's strict
format a list target is asked for as `{"value": [...]}`, so its items are handed out as they
complete inside that envelope; a reply that begins otherwise (a bare list from an
OpenAI-compatible server that ignores the format) was not enforced, and nothing of it is handed
out before the whole answer is judged: a second list after it never takes back an item."""

from __future__ import annotations

import json

import openai
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import HealPolicy
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

USER = [{"role": "user", "content": "List them."}]


class Item(BaseModel):
    sku: str


def test_an_enveloped_list_hands_out_its_items_before_the_stream_ends() -> None:
    """The enforced envelope's items come while the endpoint is still sending."""
    text = json.dumps({"value": [{"sku": f"S{i}"} for i in range(30)]})
    with (
        ScriptedServer([ScriptedReply(content=text, chunk_chars=5, chunk_delay_s=0.005)]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=list[Item], stream=True
        )
        early = [not server.requests[0].stream_completed for _ in stream.items()]
        outcome = stream.outcome
    assert outcome.ok
    assert 30 == len(early)
    assert early[0]  # the first item came before the last chunk was sent
    assert set(stream.item_status.values()) == {"streamed"}


@pinned(max_examples=10)
@given(
    first=st.lists(st.sampled_from("ABCD"), min_size=1, max_size=3),
    second=st.lists(st.sampled_from("WXYZ"), min_size=1, max_size=3),
    chunk=st.integers(2, 9),
)
def test_an_unenforced_list_hands_out_no_item_it_takes_back(
    first: list[str], second: list[str], chunk: int
) -> None:
    """A bare list, then a corrected one, healed as the last (`on_ambiguity="last"`) in one
    call: the items handed out are the value's, none `retracted`."""
    text = json.dumps([{"sku": sku} for sku in first]) + "\nCorrected: "
    text += json.dumps([{"sku": sku} for sku in second])
    with (
        ScriptedServer([ScriptedReply(content=text, chunk_chars=chunk)]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m",
            messages=USER,
            response_model=list[Item],
            stream=True,
            policy=HealPolicy(on_ambiguity="last"),
        )
        handed = [item.sku for item in stream.items()]
        outcome = stream.outcome
    assert outcome.ok, outcome
    assert (second, 1) == ([item.sku for item in outcome.value], outcome.calls)
    assert second == handed
    assert "retracted" not in stream.item_status.values()
