"""evaluator.core.stats: Wilson intervals, Newcombe's difference interval, McNemar's exact test."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from evaluator.core.stats import PairedFlips, binomial_half_cdf, mcnemar_exact, newcombe_interval, wilson_interval


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),  # the textbook example
        (1, 8, 0.0224, 0.4709),  # T3 under the recorded verdicts: 12.5%
        (8, 8, 0.6756, 1.0),  # T3 under t3_aware: 100%
        (0, 8, 0.0, 0.3244),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_matches_known_values(successes, n, low, high):
    got_low, got_high = wilson_interval(successes, n)
    assert got_low == pytest.approx(low, abs=5e-5)
    assert got_high == pytest.approx(high, abs=5e-5)


def test_wilson_interval_contains_the_estimate_and_stays_in_bounds():
    for n in (1, 2, 7, 40, 1000):
        for successes in range(0, n + 1, max(1, n // 7)):
            low, high = wilson_interval(successes, n)
            assert 0.0 <= low <= successes / n <= high <= 1.0


def test_wilson_interval_of_nothing_is_everything():
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(("successes", "n"), [(-1, 3), (4, 3), (0, -1)])
def test_wilson_interval_rejects_impossible_counts(successes, n):
    with pytest.raises(ValueError):
        wilson_interval(successes, n)


def test_mcnemar_exact_hand_worked_table():
    # b = 1 regression, c = 6 fixes: P(X <= 1 | n = 7, p = 1/2) = (1 + 7) / 128 = 1/16; two-sided: 1/8.
    assert mcnemar_exact(1, 6) == pytest.approx(0.125)
    assert mcnemar_exact(6, 1) == pytest.approx(0.125)


def test_mcnemar_exact_without_discordant_pairs_is_one():
    assert mcnemar_exact(0, 0) == 1.0


@pytest.mark.parametrize(("b", "c", "p"), [(0, 5, 0.0625), (2, 2, 1.0), (3, 4, 1.0), (0, 10, 2 / 1024)])
def test_mcnemar_exact_small_tables(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p)


def test_mcnemar_is_capped_at_one():
    assert mcnemar_exact(5, 5) == 1.0


def test_mcnemar_rejects_negative_counts():
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


@pytest.mark.parametrize(("k", "n"), [(400, 1001), (500, 1001), (900, 2000), (2400, 5000), (0, 3000)])
def test_large_n_binomial_tail_agrees_with_exact_arithmetic(k, n):
    exact = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    assert binomial_half_cdf(k, n) == pytest.approx(float(exact), rel=1e-9, abs=1e-300)


def test_mcnemar_scales_to_a_million_pairs():
    assert 0.0 < mcnemar_exact(499_000, 501_000) < 0.06
    assert mcnemar_exact(400_000, 600_000) < 1e-100


def test_newcombe_interval_contains_the_difference():
    low, high = newcombe_interval(1, 8, 8, 8)  # 12.5% -> 100%
    assert low < 0.875 < high
    assert low > 0  # a clear improvement, even on 8 questions
    assert newcombe_interval(0, 0, 3, 4) is None


def test_newcombe_interval_is_symmetric_under_swapping_the_runs():
    low, high = newcombe_interval(3, 10, 7, 10)
    swapped_low, swapped_high = newcombe_interval(7, 10, 3, 10)
    assert (low, high) == pytest.approx((-swapped_high, -swapped_low))


def test_paired_flips_p_value():
    assert PairedFlips(pairs=20, both_pass=10, both_fail=3, regressions=1, fixes=6).p_value == pytest.approx(0.125)
