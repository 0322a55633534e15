"""`healjson.judge`: a rule a model decides, as an async contract.

`judge("Does the summary match the request?", client=OpenAI(), model="gpt-4o-mini")` is a
`Contract` that asks `model` a yes/no question about the value (and the request's user turns,
from the contract context), and reads a JSON answer `{"verdict": "yes" | "no", "reason": ...}`
with healjson's own L1 (`validate`). A "no" is a violation whose prescription is the judge's
reason; a judge that fails (its call raises, it passes `timeout_s`, its answer is no verdict)
raises, which the engine reports as the rule's `contract_error`: never a silent pass.

Verdicts are cached per judge, by everything its request holds (the model, the question, the
request's user turns and the value's JSON): the same value for the same request is judged once
(a replayed run asks no second time), a verdict for one request is never reused for another.
Every text the judge's model or its provider wrote (the reason, an unreadable answer, a failed
call's message) passes the redactor with the judge client's own credentials before the rule
keeps it: a reason that echoes the judge's key is stored redacted. What a judge's call spends is
counted in the run's usage (`ContractContext.record_usage`), and on the judge
(`rule.check.usage`, `rule.check.calls`) over every run.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic_core import to_json

from ._core.diagnostic import describe_exception, short_repr
from ._core.judge.contracts import Contract, ContractContext, OnFail, Violation, contract
from ._core.redact import redact_text, secrets_scope
from ._core.run.healer import validate
from ._core.wire.reply import Usage, to_reply

if TYPE_CHECKING:
    import asyncio

__all__ = ["JudgeError", "judge"]

_CACHE_SIZE = 1024
_SYSTEM = (
    "You check one answer against one question. Reply with a JSON object only: "
    '{"verdict": "yes" or "no", "reason": "one sentence: why, and if no, what to change"}.'
)


class JudgeError(Exception):
    """The judge could not give a verdict (its call failed or timed out, or its answer was no
    verdict); the rule's `contract_error` says which."""


@dataclass(frozen=True, slots=True)
class _Verdict:
    """The judge's answer (a dataclass, validated by pydantic when first read: a model class
    built at import would cost `import healjson` pydantic's plugin lookup, ~20 ms)."""

    verdict: Literal["yes", "no"]
    reason: str = ""


class _Judge:
    """The check a `judge` rule runs: a model call per value not judged yet."""

    def __init__(
        self, question: str, client: Any, model: str, max_tokens: int, timeout_s: float | None
    ) -> None:
        self.question = question
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self._cache: OrderedDict[bytes, _Verdict] = OrderedDict()
        self._lock = threading.Lock()
        self.usage = Usage()
        """What the judge's calls spent, in all."""
        self.calls = 0
        """Model calls the judge made (cached verdicts cost none)."""

    async def __call__(self, value: Any, ctx: ContractContext) -> Violation | None:
        messages = self._messages(to_json(value, fallback=str).decode(), ctx)
        key = to_json([self.model, self.max_tokens, messages])  # all the request holds
        with self._lock:
            verdict = self._cache.get(key)
        if verdict is None:
            verdict = await self._ask(messages, ctx)
            with self._lock:
                self._cache[key] = verdict
                while len(self._cache) > _CACHE_SIZE:
                    self._cache.popitem(last=False)
        if verdict.verdict == "yes":
            return None
        return Violation(
            f"the judge must answer yes to: {self.question}",
            prescription=verdict.reason or f"Change the answer so that: {self.question}",
        )

    def _messages(self, answer: str, ctx: ContractContext) -> list[dict[str, str]]:
        """The judge's request: the question, the request's user turns, the answer."""
        request = ctx.input_text
        prompt = f"Question: {self.question}\n\n"
        if request:
            prompt += f"The request:\n{request}\n\n"
        prompt += f"The answer (JSON):\n{answer}"
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": prompt}]

    async def _ask(self, messages: list[dict[str, str]], ctx: ContractContext) -> _Verdict:
        params = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        with secrets_scope(self.client, params):  # the judge's own credentials are known
            try:
                verdict = await self._verdict(params, ctx)
            except JudgeError as exc:
                raise JudgeError(redact_text(str(exc))) from None
            return dataclasses.replace(verdict, reason=redact_text(verdict.reason))

    async def _verdict(self, params: dict[str, Any], ctx: ContractContext) -> _Verdict:
        import asyncio  # here: importing healjson loads no event loop machinery

        create = self.client.chat.completions.create
        try:
            if inspect.iscoroutinefunction(create):
                pending = create(**params)
            else:  # a sync client: on a thread, so the event loop (and deadline) runs on
                pending = _on_a_thread(create, params)
            response = await asyncio.wait_for(pending, self.timeout_s)
            if inspect.isawaitable(response):
                response = await asyncio.wait_for(response, self.timeout_s)
        except TimeoutError:
            raise JudgeError(f"the judge did not answer within {self.timeout_s} s") from None
        except Exception as exc:
            raise JudgeError(f"the judge's call failed: {describe_exception(exc)}") from None
        try:
            reply = to_reply(response)
        except Exception as exc:
            raise JudgeError(
                f"the judge's reply is unreadable: {describe_exception(exc)}"
            ) from None
        with self._lock:
            self.calls += 1
            if reply.usage is not None:
                self.usage = self.usage + reply.usage
        if reply.usage is not None:
            ctx.record_usage(reply.usage)  # counted in the run's usage
        text = reply.content
        outcome = validate(text or "", _Verdict)
        if not outcome.ok:
            raise JudgeError(
                f"the judge's answer is no verdict ({outcome.reason}): {short_repr(text, 200)}"
            )
        return outcome.value


def _on_a_thread(call: Callable[..., Any], params: dict[str, Any]) -> asyncio.Future[Any]:
    """`call(**params)` on a daemon thread of its own, as a future of the running loop. Not
    `asyncio.to_thread`: the loop's default executor is waited for when `asyncio.run` ends, so a
    call past `timeout_s` would hold the check up until it returned; this one finishes alone."""
    import asyncio

    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()  # as `to_thread` does: the caller's context variables

    def settle(result: Any, error: Exception | None) -> None:
        if future.done():  # timed out (cancelled): nobody waits for it
            return
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)

    def work() -> None:
        result: Any = None
        error: Exception | None = None
        try:
            result = context.run(call, **params)
        except Exception as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits for it
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="healjson-judge", daemon=True).start()
    return future


def judge(
    question: str,
    *,
    client: Any,
    model: str,
    max_tokens: int = 200,
    timeout_s: float | None = 30.0,
    name: str | None = None,
    fields: Sequence[str] = (),
    on_fail: OnFail = "reask",
) -> Contract[Any]:
    """A rule a model decides: `question` (answered yes when the value is right), asked of
    `model` through `client` (an OpenAI-style client, sync or async:
    `client.chat.completions.create`), with `max_tokens` for its answer and `timeout_s` to
    give it. A "no" is a violation (the judge's reason is its prescription); a judge that
    fails is the rule's `contract_error`. `fields` / `on_fail`: as for `@contract`."""
    if not isinstance(question, str) or not question.strip():
        raise TypeError("judge needs a question (a non-empty string)")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise TypeError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    check = _Judge(question, client, model, max_tokens, timeout_s)
    rule_name = name or f"judge: {short_repr(question, 60)}"
    if on_fail == "fix":
        raise TypeError('a judged rule cannot fix a value: use on_fail="reask", "warn" or "stop"')
    rule: Contract[Any] = contract(
        fields=fields, name=rule_name, description=question, on_fail=on_fail
    )(check)
    return rule
