"""A structure left open at the end of a reply makes the reply cut, whatever came before it.

A complete span inside the open structure (`{"name": "a"}` of a tree cut in its second child)
is a piece of the cut answer, never an answer of its own; bracketed text before it (a citation
`[1]`, a label) does not turn the cut into a complete reply. The properties cut tree replies,
clean or with slips, at every position, behind any prefix.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy, Reason
from healjson.testing import ScriptedModel
from pinned import pinned


class Node(BaseModel):
    name: str
    children: list[Node] = []


CUT_TREE = '{"name": "root", "children": [{"name": "a"}, {"name": "b'
PREFIXES = ["", "Answer [1]:\n", "Sources [1][2] and {3}:\n", "Here:\n", "```json\n"]


def test_a_complete_child_of_a_cut_tree_is_never_the_answer() -> None:
    """Whatever precedes a cut tree (a citation, a label, a fence), the reply is truncated with
    the tree's partial data, never healed with a complete child."""
    for prefix in PREFIXES:
        text = prefix + CUT_TREE
        healer = Healer(Node, policy=HealPolicy(max_attempts=1))
        outcome = healer.run(ScriptedModel([text]), "tree?")
        assert isinstance(outcome, Degraded), prefix
        assert Reason.TOKEN_TRUNCATED == outcome.reason
        result = healjson.parse(text, Node)
        assert result.truncated
        assert "root" == result.value["name"]  # partial data: the tree's, not its child's
        assert {"name": "a"} == result.value["children"][0]


def test_a_cut_tree_streamed_after_a_citation_is_truncated() -> None:
    """The same reply through a stream that ends with no finish reason is truncated too."""
    text = "Answer [1]:\n" + CUT_TREE
    chunks = [text[i : i + 7] for i in range(0, len(text), 7)]
    healer = Healer(Node, policy=HealPolicy(max_attempts=1))
    stream = healer.stream(lambda messages, **params: iter(chunks), "tree?")
    outcome = stream.finish()
    assert isinstance(outcome, Degraded)
    assert Reason.TOKEN_TRUNCATED == outcome.reason


def test_only_a_structure_left_open_at_the_top_makes_the_reply_cut() -> None:
    """A complete answer followed by JSON that never closes is a reply cut, not that answer;
    an open span that starts inside a span read whole is that span misread (a stray quote),
    not a structure left open."""
    text = '{"name": "root"}\nIn full: {"name": "root", "children": [{"name": "a"}, {"name": "b'
    outcome = healjson.validate(text, Node)
    assert isinstance(outcome, Degraded)
    assert Reason.TOKEN_TRUNCATED == outcome.reason
    assert not healjson.parse(text).ok
    result = healjson.parse('{"key": ["value]}')
    assert result.ok
    assert {"key": ["value"]} == result.value


NAMES = st.sampled_from(["a", "b", "c d", "x,y", "q", "[1]", "{n}"])
TREES = st.recursive(
    st.builds(dict, name=NAMES),
    lambda children: st.builds(
        dict, name=NAMES, children=st.lists(children, min_size=1, max_size=3)
    ),
    max_leaves=6,
)


@pinned()
@given(
    tree=TREES,
    prefix=st.sampled_from(PREFIXES),
    slips=st.booleans(),
    finish_reason=st.sampled_from([None, "stop", "length"]),
)
def test_a_tree_reply_cut_anywhere_is_truncated_whatever_came_before(
    tree: dict[str, Any], prefix: str, slips: bool, finish_reason: str | None
) -> None:
    """Every proper prefix of a tree reply (clean, or with trailing commas the tolerant reader
    repairs), behind any prefix text, is truncated, never healed; the whole reply heals."""
    body = json.dumps(tree)
    if slips:
        body = body.replace("}]", "},]")  # a trailing comma in every list
    text = prefix + body
    whole = healjson.validate(text, Node)
    assert isinstance(whole, Healed)
    assert Node.model_validate(tree) == whole.value
    for end in range(len(prefix) + 1, len(text)):
        outcome = healjson.validate(text[:end], Node, finish_reason=finish_reason)
        assert isinstance(outcome, Degraded), text[:end]
        assert Reason.TOKEN_TRUNCATED == outcome.reason, text[:end]
