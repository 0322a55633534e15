"""`healjson._cli.stats`: the Wilson interval, the exact McNemar test and the paired 2x2 table."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from healjson._cli.stats import PairedTable, mcnemar_exact, wilson_interval

# --- Wilson score interval ------------------------------------------------------------------------

# Newcombe R.G. (1998), "Two-sided confidence intervals for the single proportion: comparison of
# seven methods", Statistics in Medicine 17:857-872, Table I, method 3 ("score", Wilson without
# continuity correction), 95% intervals, printed to 4 decimals.
NEWCOMBE_TABLE_I = [
    (81, 263, (0.2553, 0.3662)),
    (15, 148, (0.0624, 0.1605)),
    (0, 20, (0.0000, 0.1611)),
    (1, 29, (0.0061, 0.1718)),
]


@pytest.mark.parametrize(("successes", "n", "published"), NEWCOMBE_TABLE_I)
def test_wilson_matches_newcombe_table_i(
    successes: int, n: int, published: tuple[float, float]
) -> None:
    """The 95% interval agrees with the published score intervals to 4 decimals."""
    low, high = wilson_interval(successes, n)
    assert published == (round(low, 4), round(high, 4))


def test_wilson_default_confidence_is_95_percent() -> None:
    """Leaving out `confidence` is the same as asking for 0.95."""
    assert wilson_interval(81, 263, 0.95) == wilson_interval(81, 263)


def test_wilson_with_no_trials_is_uninformative() -> None:
    """n = 0 says nothing: the whole unit interval, whatever the confidence."""
    assert (0.0, 1.0) == wilson_interval(0, 0)
    assert (0.0, 1.0) == wilson_interval(0, 0, confidence=0.5)


@pytest.mark.parametrize("n", [1, 2, 7, 100, 2000])
def test_wilson_edges_are_exact(n: int) -> None:
    """All successes gives an upper bound of exactly 1.0; none gives a lower bound of exactly 0."""
    low_all, high_all = wilson_interval(n, n)
    assert 1.0 == high_all
    assert 0.0 < low_all < 1.0
    low_none, high_none = wilson_interval(0, n)
    assert 0.0 == low_none
    assert 0.0 < high_none < 1.0
    # the two edges mirror each other
    assert low_all == pytest.approx(1 - high_none, abs=1e-12)


@pytest.mark.parametrize(
    ("successes", "n"),
    [(0, -1), (-1, 5), (6, 5), (1, 0), (-1, -1)],
)
def test_wilson_rejects_impossible_counts(successes: int, n: int) -> None:
    """Negative n, negative successes or more successes than trials raise ValueError."""
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(successes, n)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.1, 1.5, 95.0, math.nan])
def test_wilson_rejects_confidence_outside_the_open_unit_interval(confidence: float) -> None:
    """The confidence level must lie strictly between 0 and 1 (NaN does not)."""
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(3, 10, confidence=confidence)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(0, 0, confidence=confidence)


@settings(max_examples=100)
@given(data=st.data(), n=st.integers(0, 2000))
def test_wilson_interval_is_inside_unit_interval_and_contains_the_estimate(
    data: st.DataObject, n: int
) -> None:
    """0 <= low <= x/n <= high <= 1 for every possible count."""
    x = data.draw(st.integers(0, n), label="successes")
    low, high = wilson_interval(x, n)
    p = x / n if n else 0.5
    assert 0.0 <= low <= p <= high <= 1.0
    if 0 < x < n:  # strictly inside away from the edges
        assert 0.0 < low < p < high < 1.0


@settings(max_examples=75)
@given(data=st.data(), n=st.integers(1, 2000))
def test_wilson_narrows_as_n_grows_at_the_same_proportion(data: st.DataObject, n: int) -> None:
    """x of n and 4x of 4n estimate the same proportion; the larger sample is strictly narrower.

    (At a fixed proportion the score interval's width is strictly decreasing in n, edges included:
    the derivative's sign is that of p(1-p)(z^2 - n) - z^2/2 < 0. The bounds on their own need not
    move monotonically, so only the width is compared.)
    """
    x = data.draw(st.integers(0, n), label="successes")
    low, high = wilson_interval(x, n)
    low4, high4 = wilson_interval(4 * x, 4 * n)
    assert high4 - low4 < high - low
    assert low4 <= x / n <= high4


@settings(max_examples=75)
@given(data=st.data(), n=st.integers(0, 2000))
def test_wilson_higher_confidence_contains_lower(data: st.DataObject, n: int) -> None:
    """The 99% interval contains the 95% one, which contains the 80% one."""
    x = data.draw(st.integers(0, n), label="successes")
    low99, high99 = wilson_interval(x, n, 0.99)
    low95, high95 = wilson_interval(x, n, 0.95)
    low80, high80 = wilson_interval(x, n, 0.80)
    assert low99 <= low95 <= low80
    assert high80 <= high95 <= high99
    if 0 < x < n:
        assert low99 < low95 < low80
        assert high80 < high95 < high99


@settings(max_examples=50)
@given(data=st.data(), n=st.integers(1, 2000))
def test_wilson_is_symmetric_in_successes_and_failures(data: st.DataObject, n: int) -> None:
    """Counting failures instead of successes mirrors the interval around 1/2."""
    x = data.draw(st.integers(0, n), label="successes")
    low, high = wilson_interval(x, n)
    mirror_low, mirror_high = wilson_interval(n - x, n)
    assert low == pytest.approx(1 - mirror_high, abs=1e-12)
    assert high == pytest.approx(1 - mirror_low, abs=1e-12)


# --- exact McNemar test ---------------------------------------------------------------------------


def two_sided_oracle(b: int, c: int) -> float:
    """An independent exact two-sided binomial p-value (Binomial(b + c, 1/2)).

    The "small p-values" definition: the probability of every outcome no more likely than the one
    observed. It never mentions tails or a min(1, 2 * tail), yet for p = 1/2 it must agree with
    McNemar's doubled tail. The weights are compared as exact integers (comb(n, k) / 2**n share a
    denominator) and the final division of two ints is correctly rounded, as is float(Fraction),
    so the two agree to the last bit.
    """
    n = b + c
    if n == 0:
        return 1.0
    weights = [math.comb(n, k) for k in range(n + 1)]
    return sum(w for w in weights if w <= weights[b]) / 2**n


def test_mcnemar_wikipedia_worked_example() -> None:
    """Wikipedia, "McNemar's test", worked example: b = 6 and c = 16 discordant pairs.

    Exact two-sided binomial p = 2 * P(X <= 6), X ~ Binomial(22, 1/2)
    = 2 * (1 + 22 + 231 + 1540 + 7315 + 26334 + 74613) / 2**22 = 2 * 110056 / 2**22
    = 0.052478790283203125 (0.0525 as the article rounds it).
    """
    assert 1 + 22 + 231 + 1540 + 7315 + 26334 + 74613 == 110056
    p = mcnemar_exact(6, 16)
    assert 2 * 110056 / 2**22 == p
    assert 0.052478790283203125 == p
    assert 0.0525 == round(p, 4)


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 1, 1.0),  # 2 * 1/2, capped at 1
        (0, 2, 0.5),  # 2 * 1/4
        (0, 4, 0.125),  # 2 * 1/16: four of four discordant pairs is not significant at 5%
        (0, 5, 0.0625),  # 2 * 1/32
        (1, 4, 0.375),  # 2 * (1 + 5) / 32
        (2, 10, 0.03857421875),  # 2 * (1 + 12 + 66) / 4096
        (3, 3, 1.0),
        (7, 8, 1.0),
    ],
)
def test_mcnemar_hand_computed_values(b: int, c: int, expected: float) -> None:
    """Small tables worked out by hand from Pascal's triangle."""
    assert expected == mcnemar_exact(b, c)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 20, 60])
def test_mcnemar_all_discordant_one_way(n: int) -> None:
    """b = 0, c = n: p = 2 / 2**n (capped at 1), e.g. 0.0078125 for n = 8."""
    assert min(1.0, 2 / 2**n) == mcnemar_exact(0, n)
    assert min(1.0, 2 / 2**n) == mcnemar_exact(n, 0)
    if n == 8:
        assert 0.0078125 == mcnemar_exact(0, 8)


@pytest.mark.parametrize("k", [0, 1, 5, 50, 1000])
def test_mcnemar_balanced_or_empty_is_one(k: int) -> None:
    """b == c (including no discordant pairs at all) is no evidence: p = 1."""
    assert 1.0 == mcnemar_exact(k, k)


@pytest.mark.parametrize(("b", "c"), [(-1, 0), (0, -1), (-3, 5), (5, -3), (-1, -1)])
def test_mcnemar_rejects_negative_counts(b: int, c: int) -> None:
    """Negative discordant counts raise ValueError."""
    with pytest.raises(ValueError, match="discordant"):
        mcnemar_exact(b, c)


@pytest.mark.parametrize(("b", "c"), [(6, 16), (0, 9), (3, 17), (40, 61), (250, 300), (1, 1000)])
def test_mcnemar_matches_independent_oracle_examples(b: int, c: int) -> None:
    """A handful of values against the independent definition (bit for bit)."""
    assert two_sided_oracle(b, c) == mcnemar_exact(b, c)


def test_mcnemar_matches_float_pmf_sum() -> None:
    """A cruder float oracle, summing the binomial pmf term by term, agrees closely."""
    for b, c in [(6, 16), (2, 10), (11, 29), (30, 45)]:
        n = b + c
        tail = sum(math.comb(n, k) * 0.5**n for k in range(min(b, c) + 1))
        assert mcnemar_exact(b, c) == pytest.approx(min(1.0, 2 * tail), rel=1e-12)


# Generated tables keep b + c <= 600 to stay fast. (Past b + c ~ 1075 the most lopsided tables
# have p below the smallest subnormal float, so (0, 1] can only hold up to there.)
counts = st.integers(0, 300)


@settings(max_examples=50)
@given(b=counts, c=counts)
def test_mcnemar_properties(b: int, c: int) -> None:
    """p in (0, 1], symmetric in b and c, 1 when |b - c| <= 1, equal to the oracle."""
    p = mcnemar_exact(b, c)
    assert 0.0 < p <= 1.0
    assert mcnemar_exact(c, b) == p
    if abs(b - c) <= 1:
        assert 1.0 == p
    assert two_sided_oracle(b, c) == p


@settings(max_examples=30)
@given(n=st.integers(1, 300))
def test_mcnemar_is_non_increasing_as_the_imbalance_grows(n: int) -> None:
    """For a fixed number of discordant pairs, moving one pair from the smaller cell to the
    larger never raises p, and lowers it strictly once p is below 1."""
    previous = mcnemar_exact(n // 2, n - n // 2)
    for b in range(n // 2 - 1, -1, -1):
        current = mcnemar_exact(b, n - b)
        assert current <= previous
        if previous < 1.0:
            assert current < previous
        previous = current


# --- the paired table -----------------------------------------------------------------------------


def test_from_pairs_orientation() -> None:
    """(A passed, B passed): each combination lands in its own cell."""
    table = PairedTable.from_pairs([(True, True), (True, False), (False, True), (False, False)])
    assert PairedTable(both=1, only_a=1, only_b=1, neither=1) == table
    assert PairedTable(0, 1, 0, 0) == PairedTable.from_pairs([(True, False)])
    assert PairedTable(0, 0, 1, 0) == PairedTable.from_pairs([(False, True)])
    assert PairedTable(0, 0, 0, 1) == PairedTable.from_pairs([(False, False)])


def test_empty_table() -> None:
    """No pairs: all cells zero and no evidence of a difference."""
    for table in (PairedTable(), PairedTable.from_pairs([])):
        assert (0, 0, 0, 0, 0) == (table.both, table.only_a, table.only_b, table.neither, table.n)
        assert 0 == table.discordant
        assert 1.0 == table.p_value


def test_from_pairs_consumes_an_iterator_once() -> None:
    """Any iterable works, including a one-shot generator."""
    pairs = ((i % 3 == 0, i % 2 == 0) for i in range(12))
    assert PairedTable(both=2, only_a=2, only_b=4, neither=4) == PairedTable.from_pairs(pairs)


@settings(max_examples=50)
@given(pairs=st.lists(st.tuples(st.booleans(), st.booleans()), max_size=200))
def test_from_pairs_counts_every_cell(pairs: list[tuple[bool, bool]]) -> None:
    """Each cell counts its combination; the cells sum to the number of pairs."""
    table = PairedTable.from_pairs(pairs)
    counts = Counter(pairs)
    assert counts[True, True] == table.both
    assert counts[True, False] == table.only_a
    assert counts[False, True] == table.only_b
    assert counts[False, False] == table.neither
    assert len(pairs) == table.n == table.both + table.only_a + table.only_b + table.neither
    assert counts[True, False] + counts[False, True] == table.discordant
    assert mcnemar_exact(table.only_a, table.only_b) == table.p_value


@settings(max_examples=30)
@given(
    both=st.integers(0, 1000),
    only_a=st.integers(0, 60),
    only_b=st.integers(0, 60),
    neither=st.integers(0, 1000),
)
def test_p_value_uses_only_the_discordant_cells(
    both: int, only_a: int, only_b: int, neither: int
) -> None:
    """Concordant pairs carry no information for McNemar: changing them leaves p alone."""
    table = PairedTable(both, only_a, only_b, neither)
    assert mcnemar_exact(only_a, only_b) == table.p_value
    assert PairedTable(0, only_a, only_b, 0).p_value == table.p_value
    assert PairedTable(both + 17, only_a, only_b, neither * 3).p_value == table.p_value
    # swapping A and B changes the table but not the two-sided p-value
    assert PairedTable(both, only_b, only_a, neither).p_value == table.p_value
    assert only_a + only_b == table.discordant
    assert both + only_a + only_b + neither == table.n


def test_p_value_of_a_lopsided_table() -> None:
    """A known table: 6 A-only and 16 B-only wins among 100 pairs gives the Wikipedia p-value."""
    table = PairedTable(both=50, only_a=6, only_b=16, neither=28)
    assert 100 == table.n
    assert 22 == table.discordant
    assert 0.052478790283203125 == table.p_value


def test_paired_table_is_immutable() -> None:
    """The table is a frozen value."""
    table = PairedTable(1, 2, 3, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.both = 5  # type: ignore[misc]
