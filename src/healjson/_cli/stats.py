"""Statistics for comparing two configurations on the same scenarios.

- `wilson_interval`: the Wilson score interval for a pass rate (Wilson 1927; Newcombe 1998,
  method 3). Unlike the normal approximation it stays inside [0, 1] and behaves at 0/n and n/n.
- `mcnemar_exact`: the exact (binomial) McNemar test on the discordant pairs of a paired 2x2
  table, two-sided: the right test when the same scenarios run under both configurations and
  the discordant counts are small (the chi-square version needs b + c >= ~25).
- `PairedTable`: the 2x2 table of (A passed, B passed) over the pairs, with its p-value.

Exact integer arithmetic throughout the binomial sum, so p-values are right for any n.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

__all__ = ["PairedTable", "mcnemar_exact", "wilson_interval"]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval (no continuity correction) for `successes` out of `n`.

    `n == 0` gives the uninformative (0.0, 1.0). Raises `ValueError` on counts that cannot be.
    """
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if n == 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    # at the edges the formula's rounding can leave 1e-17 instead of the exact bound
    return (0.0 if successes == 0 else low), (1.0 if successes == n else high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for `b` and `c` discordant pairs.

    Under the null hypothesis each discordant pair is A-only or B-only with probability 1/2,
    so p = min(1, 2 * P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2). No discordant pairs
    gives 1.0 (no evidence of a difference). A p-value below the smallest float (only for
    very lopsided tables, b + c above ~1070) comes back as 0.0.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True, slots=True)
class PairedTable:
    """Paired outcomes of configurations A and B over the same scenarios.

    `both`: both passed; `only_a`: A passed and B failed; `only_b`: B passed and A failed;
    `neither`: both failed. McNemar's test uses only the discordant cells.
    """

    both: int = 0
    only_a: int = 0
    only_b: int = 0
    neither: int = 0

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[bool, bool]]) -> PairedTable:
        """Count (A passed, B passed) pairs."""
        counts = [0, 0, 0, 0]
        for a, b in pairs:
            counts[(0 if a else 2) + (0 if b else 1)] += 1
        both, only_a, only_b, neither = counts
        return cls(both, only_a, only_b, neither)

    @property
    def n(self) -> int:
        """The number of pairs."""
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def discordant(self) -> int:
        """Pairs where exactly one configuration passed."""
        return self.only_a + self.only_b

    @property
    def p_value(self) -> float:
        """The exact two-sided McNemar p-value."""
        return mcnemar_exact(self.only_a, self.only_b)
