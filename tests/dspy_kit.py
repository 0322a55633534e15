"""What the DSPy tests share: one prediction of a signature over a real `dspy.LM("openai/...")`
talking HTTP to `ScriptedServer`, with the adapter under test (`HealAdapter()` by default)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import dspy
from dspy.utils.exceptions import AdapterParseError

from healjson.dspy import HealAdapter, outcome_of
from healjson.testing import ScriptedServer

__all__ = ["MODES", "Mode", "Ran", "predict", "scripted_lm"]

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")


@dataclass
class Ran:
    """A prediction (or the `AdapterParseError` it raised) and the requests the LM sent."""

    prediction: Any
    error: AdapterParseError | None
    requests: list[Any]

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def outcome(self) -> Any:
        if self.error is not None:
            return getattr(self.error, "outcome", None)
        return outcome_of(self.prediction)

    def sent(self, number: int) -> list[dict[str, Any]]:
        return self.requests[number - 1].messages  # type: ignore[no-any-return]


def scripted_lm(server: ScriptedServer, **options: Any) -> Any:
    """A `dspy.LM("openai/scripted-model")` talking to `server`: no cache, no retry, unless
    `options` say otherwise (`cache=True`)."""
    chosen: dict[str, Any] = {"cache": False, "num_retries": 0, **options}
    return dspy.LM("openai/scripted-model", api_base=server.base_url, api_key="sk-test", **chosen)


def predict(
    signature: Any,
    script: Sequence[Any],
    adapter: Any = None,
    *,
    mode: Mode = "sync",
    text: str = "The app crashes twice.",
    **lm_options: Any,
) -> Ran:
    """One prediction of `signature` (each input field given `text`) on `script`, with
    `HealAdapter()` unless `adapter` is given; `lm_options` go to `dspy.LM`."""
    chosen = HealAdapter() if adapter is None else adapter
    with ScriptedServer(script) as server:
        lm = scripted_lm(server, **lm_options)
        program = dspy.Predict(signature)
        inputs = dict.fromkeys(signature.input_fields, text)
        prediction, error = None, None
        try:
            if mode == "sync":
                try:
                    with dspy.context(lm=lm, adapter=chosen):
                        prediction = program(**inputs)
                finally:
                    lm.close()
            else:

                async def go() -> Any:
                    try:
                        with dspy.context(lm=lm, adapter=chosen):
                            return await program.acall(**inputs)
                    finally:
                        await lm.aclose()

                prediction = asyncio.run(go())
        except AdapterParseError as exc:
            error = exc
        return Ran(prediction, error, server.requests)
