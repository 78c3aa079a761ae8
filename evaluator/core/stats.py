"""Small, exact statistics for pass rates and paired flips (pure: no duckdb, no streamlit).

- ``wilson_interval``: the Wilson score interval of a binomial proportion (95% by default).
- ``newcombe_interval``: Newcombe's hybrid score interval (method 10) for the difference of two
  independent proportions, built from their Wilson intervals.
- ``mcnemar_exact``: McNemar's exact test on paired pass/fail outcomes, two-sided: the
  discordant pairs b (pass -> fail) and c (fail -> pass) are, under the null hypothesis of no
  change, Binomial(b + c, 1/2); p = min(1, 2 * P(X <= min(b, c))).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054  # the 97.5% quantile of the standard normal distribution
_EXACT_UP_TO = 1000  # exact integer arithmetic below this many discordant pairs


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for successes / n; (0, 1) when n is 0 (nothing is known)."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = (z / (1 + z2 / n)) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # at p = 0 or 1 the interval touches the bound exactly; keep rounding noise out
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def newcombe_interval(x1: int, n1: int, x2: int, n2: int, z: float = Z95) -> tuple[float, float] | None:
    """Interval for p2 - p1 (Newcombe 1998, method 10); None when either side is empty."""
    if n1 == 0 or n2 == 0:
        return None
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_interval(x1, n1, z)
    l2, u2 = wilson_interval(x2, n2, z)
    delta = p2 - p1
    low = delta - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    high = delta + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    return (max(-1.0, low), min(1.0, high))


def binomial_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= _EXACT_UP_TO:
        return sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    # Large n: sum the terms from i = k downwards in floating point (each term is the
    # previous one times i / (n - i + 1)) and stop once they no longer change the sum.
    log_term = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    term = math.exp(log_term)
    total = 0.0
    i = k
    while i >= 0:
        total += term
        if term < total * 1e-17:
            break
        term *= i / (n - i + 1)
        i -= 1
    return min(1.0, total)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (1.0 when there are none)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * binomial_half_cdf(min(b, c), n))


@dataclass(frozen=True)
class PairedFlips:
    """Paired pass/fail outcomes of the same items under A and B."""

    pairs: int
    both_pass: int
    both_fail: int
    regressions: int  # b: pass under A, fail under B
    fixes: int  # c: fail under A, pass under B

    @property
    def p_value(self) -> float:
        return mcnemar_exact(self.regressions, self.fixes)
