"""`healjson eval` configurations: the presets, and parsing `--a` / `--b` into an `EvalConfig`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from healjson._core.redact import redact_params, redact_text
from healjson._core.run.policy import HealPolicy

from .scenarios import ScenarioError
from .text_in import NotUtf8, decode_utf8

__all__ = ["PRESETS", "EvalConfig", "parse_config"]


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """One side of the comparison.

    `strict`: score the first reply as a plain application would (no healing; one call).
    `policy`: the `HealPolicy` otherwise. `model`, `json_mode`, `params` override the run's
    model, JSON mode and extra request parameters (e.g. `{"temperature": 0}`).
    """

    name: str
    strict: bool = False
    policy: HealPolicy = field(default_factory=HealPolicy)
    model: str | None = None
    json_mode: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.strict and self.policy.max_attempts != 1:
            raise ValueError("a strict configuration makes exactly one call (max_attempts 1)")
        if self.json_mode is not None:
            from healjson.adapters._format import check_mode

            check_mode(self.json_mode)
        if self.model is not None and not isinstance(self.model, str):
            raise ValueError(f"model must be a string, got {self.model!r}")

    def describe(self) -> str:
        """One line saying what this configuration does."""
        if self.strict:
            text = "one call, `model_validate_json` + contracts on the raw reply (no healing)"
        elif self.policy.max_attempts == 1:
            text = "healjson, one call: L1 local recovery + L2, no re-ask"
        else:
            text = f"healjson, up to {self.policy.max_attempts} calls (L1-L4)"
        extras = [f"model `{self.model}`"] if self.model else []
        extras += [f"json_mode `{self.json_mode}`"] if self.json_mode else []
        # the params as the per-run records store them: credential-named values masked, then
        # credential shapes (`Bearer ...`, `api_key=...`) in the text as a whole
        params = redact_params(self.params)
        extras += [f"{k}={v!r}" for k, v in params.items()]
        return redact_text(text + (f"; {', '.join(extras)}" if extras else ""))


PRESETS: dict[str, EvalConfig] = {
    "plain": EvalConfig("plain", strict=True, policy=HealPolicy(max_attempts=1)),
    "local": EvalConfig("local", policy=HealPolicy(max_attempts=1)),
    "healed": EvalConfig("healed"),
}
_POLICY_FIELDS = {f.name for f in fields(HealPolicy)}


def parse_config(spec: str) -> EvalConfig:
    """A preset name (`plain`, `local`, `healed`), a JSON object, or a path to a .json file.

    JSON keys: `name`, `base` (a preset to start from, default `healed`), `strict`, `model`,
    `json_mode`, `params`, and any `HealPolicy` field (`max_attempts`, `history`, ...).
    Raises `ScenarioError` on anything else.
    """
    if spec in PRESETS:
        return PRESETS[spec]
    text = spec
    if not spec.lstrip().startswith(("{", "[")):
        path = Path(spec)
        if not path.is_file():
            raise ScenarioError(
                f"configuration {spec!r} is not a preset ({', '.join(PRESETS)}), a JSON object "
                "or a .json file"
            )
        try:
            text = decode_utf8(path.read_bytes(), f"configuration {spec!r}")
        except NotUtf8 as exc:
            raise ScenarioError(str(exc)) from None
        except OSError as exc:
            raise ScenarioError(f"configuration {spec!r} cannot be read: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ScenarioError(f"configuration {spec!r} is not valid JSON: {exc}") from exc
    except RecursionError:
        raise ScenarioError(f"configuration {spec!r}: JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"configuration {spec!r} must be a JSON object")
    for key, kind, what in (("name", str, "a string"), ("strict", bool, "true or false")):
        if key in data and data[key] is not None and not isinstance(data[key], kind):
            raise ScenarioError(f"configuration {spec!r}: `{key}` must be {what}")
    base = PRESETS.get(str(data.pop("base", "healed")))
    if base is None:
        raise ScenarioError(f"configuration `base` must be one of {', '.join(PRESETS)}")
    policy_changes = {k: data.pop(k) for k in list(data) if k in _POLICY_FIELDS}
    unknown = set(data) - {"name", "strict", "model", "json_mode", "params"}
    if unknown:
        raise ScenarioError(f"unknown configuration key(s): {', '.join(sorted(unknown))}")
    try:
        policy = replace(base.policy, **policy_changes)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"configuration {spec!r}: {exc}") from exc
    params = data.get("params", {})
    if not isinstance(params, dict):
        raise ScenarioError("configuration `params` must be a JSON object")
    try:
        return EvalConfig(
            name=str(data.get("name") or "custom"),
            strict=bool(data.get("strict", base.strict)),
            policy=policy,
            model=data.get("model"),
            json_mode=data.get("json_mode"),
            params=params,
        )
    except ValueError as exc:
        raise ScenarioError(f"configuration {spec!r}: {exc}") from exc
