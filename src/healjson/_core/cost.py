"""`Usage.cost`: USD through `genai-prices` (the optional extra `prices`), when it can be known.

Pricing one model's usage costs a table search the first time a model is seen (a few hundred
microseconds), so it is never done on the call path: `Usage.cost` computes it when read, and
each model's price entry is looked up once per process. A model the table does not know, a
usage with estimated counts, or a missing package give None, never a guess.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .reply import Usage

__all__ = ["cost_of"]


def cost_of(usage: Usage) -> float | None:
    """The USD cost of `usage` (the sum over its parts), or None when it cannot be known."""
    if usage.parts:
        total = 0.0
        for part in usage.parts:
            cost = cost_of(part)
            if cost is None:
                return None
            total += cost
        return total
    if usage.estimated or usage.model is None:
        return None
    if not usage.requests and not usage.total_tokens:
        return 0.0
    price = _model_price(usage.model)
    if price is None:
        return None
    return _priced(price, usage)


@functools.lru_cache(maxsize=512)
def _model_price(model: str) -> Any:
    """genai-prices' price entry for `model` (None: no package, or a model it does not know)."""
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:
        return None
    try:
        return calc_price(PriceUsage(input_tokens=1, output_tokens=1), model_ref=model).model_price
    except (LookupError, ValueError):
        return None


def _priced(price: Any, usage: Usage) -> float | None:
    from genai_prices import Usage as PriceUsage

    try:
        result = price.calc_price(
            PriceUsage(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.completion_tokens,
                cache_read_tokens=usage.cache_read_tokens or None,
                cache_write_tokens=usage.cache_write_tokens or None,
            )
        )
    except (LookupError, ValueError, TypeError):
        return None
    total = result["total_price"] if isinstance(result, dict) else result
    return float(total)
