"""Adapter edge cases: wrapping twice, and instructor's log noise inside healjson calls."""

from __future__ import annotations

import pytest

from lanes import INSTRUCTOR_ONLY

pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)

import logging

import instructor
import openai
from pydantic import BaseModel

import healjson
from healjson.adapters._instructor import InstructorClient
from healjson.adapters._openai import HealingClient
from healjson.testing import ScriptedServer


class Person(BaseModel):
    name: str
    age: int


FENCED = '```json\n{"name": "Ada", "age": 36,}\n```'


def test_wrapping_twice_does_not_stack_healing_layers() -> None:
    """`wrap(wrap(client))` is one healing layer over the same SDK client."""
    with openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="t", max_retries=0) as sdk:
        once = healjson.wrap(sdk)
        twice = healjson.wrap(once)
        assert isinstance(twice, HealingClient)
        assert sdk is twice.wrapped
        ins = healjson.wrap(instructor.from_openai(sdk))
        again = healjson.wrap(ins)
        assert isinstance(again, InstructorClient)
        assert ins.wrapped is again.wrapped


def test_instructor_rejections_are_not_logged_as_errors_when_healjson_heals(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """instructor's ERROR records for an answer healjson heals locally are muted."""
    with (
        ScriptedServer([FENCED]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as sdk,
    ):
        client = healjson.wrap(instructor.from_openai(sdk, mode=instructor.Mode.JSON))
        with caplog.at_level(logging.DEBUG, logger="instructor"):
            outcome = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "Ada, 36"}], response_model=Person
            )
    assert outcome.ok
    assert 1 == outcome.calls
    assert [] == [r for r in caplog.records if r.name.startswith("instructor")]
