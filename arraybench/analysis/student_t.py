"""Student's t distribution in pure Python: what an interval or a test over a few processes needs.

With three to ten worker processes per cell, the normal quantile (1.96) would claim far more than
the data hold (with three processes the honest factor is 4.30). The parent process must not need
SciPy, so the tail probability comes from the regularised incomplete beta function (a continued
fraction, evaluated with the modified Lentz method) and the quantile from inverting it.

>>> round(quantile(0.975, 2), 3)
4.303
>>> round(two_sided_p(2.0, 10), 4)
0.0734
"""

from __future__ import annotations

import math

_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function I_x(a, b) (modified Lentz)."""
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    result = d
    for m in range(1, 500):
        # The even step, then the odd step, of the fraction's terms.
        num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + num / c
        c = c if abs(c) > _TINY else _TINY
        result *= d * c
        num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + num / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        result *= step
        if abs(step - 1.0) < _EPS:
            break
    return result


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b), for a, b > 0 and 0 <= x <= 1."""
    if not 0.0 <= x <= 1.0:
        raise ValueError("x must lie in [0, 1]")
    if x in (0.0, 1.0):
        return x
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(log_front)
    # The fraction converges fast on this side of the mean; use the symmetry on the other.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (df > 0, not necessarily whole)."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|): the two-sided p-value of a t statistic."""
    return min(1.0, 2.0 * sf(abs(t), df))


def quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must lie in (0, 1)")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -quantile(1.0 - p, df)
    target = 1.0 - p  # the upper tail wanted
    lo, hi = 0.0, 1.0
    while sf(hi, df) > target:  # bracket: the tail shrinks as t grows
        lo, hi = hi, hi * 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):  # bisection: slow but sure, and called with few distinct arguments
        mid = (lo + hi) / 2.0
        if sf(mid, df) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0
