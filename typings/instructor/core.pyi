# instructor.core as healjson uses it (see __init__.pyi).
from collections.abc import Callable
from typing import Any, NamedTuple

class Hooks:
    def __init__(self) -> None: ...
    def on(self, hook_name: str, handler: Callable[..., Any]) -> None: ...
    def __add__(self, other: Hooks) -> Hooks: ...

class InstructorError(Exception): ...

class FailedAttempt(NamedTuple):
    attempt_number: int
    exception: Exception
    completion: Any | None = None

class IncompleteOutputException(InstructorError):
    last_completion: Any | None

class InstructorRetryException(InstructorError):
    failed_attempts: list[FailedAttempt] | None
    last_completion: Any | None
