# The part of instructor's API that healjson's code and typing checks use, for mypy (pyproject's
# `mypy_path`). instructor is not in the `dev` extra: every release pins jiter<0.15, which every
# openai from 3.4 on refuses, so the lane that runs mypy has the newest openai and no instructor.
# Declared from instructor 1.17's documented API (the floor lane runs it for real).
from typing import Any, overload

import openai

from .core import Hooks as Hooks

class Instructor:
    def __getattr__(self, name: str) -> Any: ...

class AsyncInstructor(Instructor): ...

@overload
def from_openai(client: openai.AsyncOpenAI, mode: Any = ..., **kwargs: Any) -> AsyncInstructor: ...
@overload
def from_openai(client: openai.OpenAI, mode: Any = ..., **kwargs: Any) -> Instructor: ...
def from_anthropic(client: Any, mode: Any = ..., **kwargs: Any) -> Instructor: ...
def from_genai(client: Any, mode: Any = ..., **kwargs: Any) -> Instructor: ...
