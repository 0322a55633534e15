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

Rates = tuple[float, float, float | None, float | None]
"""USD per million tokens: input, output, cache read, cache write (None: no such rate)."""


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
    found = _model_price(usage.model)
    if found is None:
        return None
    return _priced(*found, usage)


@functools.lru_cache(maxsize=512)
def _model_price(model: str) -> tuple[Any, Rates | None] | None:
    """genai-prices' price entry for `model` and its flat rates (None: no package, or a model
    it does not know)."""
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError:
        return None
    try:
        price = calc_price(PriceUsage(input_tokens=1, output_tokens=1), model_ref=model).model_price
    except (LookupError, ValueError):
        return None
    return price, _flat_rates(price)


def _priced(price: Any, rates: Rates | None, usage: Usage) -> float | None:
    if rates is not None:
        uncached = usage.prompt_tokens - usage.cache_read_tokens - usage.cache_write_tokens
        read, write = rates[2], rates[3]
        if (usage.cache_read_tokens and read is None) or (
            usage.cache_write_tokens and write is None
        ):
            return _calculated(price, usage)
        total = (
            max(uncached, 0) * rates[0]
            + usage.completion_tokens * rates[1]
            + usage.cache_read_tokens * (read or 0.0)
            + usage.cache_write_tokens * (write or 0.0)
        )
        return total / 1_000_000
    return _calculated(price, usage)


def _flat_rates(price: Any) -> Rates | None:
    """(input, output, cache read, cache write) USD per million tokens, when each is one flat
    number (no tiers, no conditions): then pricing a usage is four products, not a table
    search. None otherwise (genai-prices computes it)."""
    from decimal import Decimal

    def rate(name: str) -> float | None:
        value = getattr(price, name, None)
        if value is None:
            return None
        if isinstance(value, Decimal | int | float):
            return float(value)
        raise TypeError(name)  # tiered or conditional

    try:
        prompt, output = rate("input_mtok"), rate("output_mtok")
        read, write = rate("cache_read_mtok"), rate("cache_write_mtok")
    except TypeError:
        return None
    if prompt is None or output is None:
        return None
    return prompt, output, read, write


def _calculated(price: Any, usage: Usage) -> float | None:
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
