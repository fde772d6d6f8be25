"""Statistics over timing samples: robust location, spread, confidence and significance.

Everything here is pure Python on lists of floats, so it can be tested on known samples and used by
the parent process without importing any array library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (NumPy's default method)."""
    if not values:
        raise ValueError("quantile of no values")
    data = sorted(values)
    pos = (len(data) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    """The median of the values."""
    return quantile(values, 0.5)


def iqr(values: Sequence[float]) -> float:
    """The interquartile range: the spread of the middle half, insensitive to outliers."""
    return quantile(values, 0.75) - quantile(values, 0.25)


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Standard deviation over mean (0 for fewer than two values)."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    if mean == 0:
        return 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return math.sqrt(var) / mean


@lru_cache(maxsize=4096)
def _median_ci_ranks(n: int, confidence: float) -> tuple[int, int] | None:
    """0-based ranks (j, k) with P(X_(j) <= median <= X_(k)) >= confidence, from Binomial(n, 1/2).

    This is the distribution-free interval: it assumes nothing about the shape of the timing
    distribution, which is usually skewed and often multimodal.
    """
    alpha = 1.0 - confidence
    # Largest j with P(Bin(n, 1/2) < j) <= alpha / 2, counted from 1; exact integer arithmetic.
    total = 2**n
    cumulative = 0
    j = 0
    for i in range(n + 1):
        cumulative += math.comb(n, i)
        if cumulative / total > alpha / 2:
            j = i  # P(B <= i-1) <= alpha/2 < P(B <= i): the lower bound is X_(i), 1-based
            break
    if j < 1:
        return None
    return j - 1, n - j


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval for the median.

    With too few samples for the requested confidence (fewer than 6 at 95%), the interval is the
    whole range of the samples, which is honest: we do not know better.
    """
    if not values:
        raise ValueError("confidence interval of no values")
    data = sorted(values)
    if len(data) > 2000:
        # Normal approximation of the binomial ranks; the exact sum would be slow and identical.
        z = _z(confidence)
        half = z * math.sqrt(len(data)) / 2
        lo = max(0, int(math.floor(len(data) / 2 - half)) - 1)
        hi = min(len(data) - 1, int(math.ceil(len(data) / 2 + half)))
        return data[lo], data[hi]
    ranks = _median_ci_ranks(len(data), confidence)
    if ranks is None:
        return data[0], data[-1]
    return data[ranks[0]], data[ranks[1]]


def relative_ci_halfwidth(values: Sequence[float], confidence: float = 0.95) -> float:
    """Half the width of the median's confidence interval, relative to the median."""
    lo, hi = median_ci(values, confidence)
    m = median(values)
    if m <= 0:
        return math.inf
    return (hi - lo) / (2 * m)


def _z(confidence: float) -> float:
    """The two-sided standard normal quantile for a confidence level."""
    return _normal_ppf(0.5 + confidence / 2)


def _normal_ppf(p: float) -> float:
    # Acklam's rational approximation; |error| < 1.2e-9, plenty for confidence intervals.
    a = [-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
         1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00]
    b = [-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
         6.680131188771972e01, -1.328068155288572e01]
    c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
         -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00]
    d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00,
         3.754408661907416e00]
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    if p > 1 - 0.02425:
        return -_normal_ppf(1 - p)
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


def normal_sf(z: float) -> float:
    """Upper tail of the standard normal distribution."""
    return 0.5 * math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class MannWhitney:
    """The result of a two-sided Mann-Whitney U test."""

    u: float
    p_value: float


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    """Two-sided Mann-Whitney U test with the normal approximation and tie correction.

    It asks whether one sample tends to be larger than the other without assuming normality,
    which suits timing samples.
    """
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney U needs two non-empty samples")
    combined = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks = [0.0] * len(combined)
    tie_term = 0.0
    i = 0
    while i < len(combined):
        j = i
        while j + 1 < len(combined) and combined[j + 1][0] == combined[i][0]:
            j += 1
        rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = rank
        t = j - i + 1
        tie_term += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, combined) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    mean_u = n1 * n2 / 2
    var_u = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))) if n > 1 else 0.0
    if var_u <= 0:
        return MannWhitney(u=u1, p_value=1.0)
    z = (abs(u1 - mean_u) - 0.5) / math.sqrt(var_u)  # continuity correction
    return MannWhitney(u=u1, p_value=min(1.0, 2 * normal_sf(max(z, 0.0))))


def two_clusters(values: Sequence[float], min_share: float = 0.2,
                 min_separation: float = 4.0) -> tuple[float, float] | None:
    """Detect two well-separated clusters (a bimodal distribution) in log space.

    Splits the sorted values at the point that minimises within-group variance (1-D 2-means) and
    reports the two group medians when each group holds at least ``min_share`` of the values and
    the gap between their means is ``min_separation`` pooled standard deviations or more. Returns
    None when the values look like one cluster.
    """
    data = sorted(v for v in values if v > 0)
    n = len(data)
    if n < 4:
        return None
    logs = [math.log(v) for v in data]
    prefix = [0.0]
    prefix_sq = [0.0]
    for v in logs:
        prefix.append(prefix[-1] + v)
        prefix_sq.append(prefix_sq[-1] + v * v)

    def sse(i: int, j: int) -> float:
        m = j - i
        s = prefix[j] - prefix[i]
        return (prefix_sq[j] - prefix_sq[i]) - s * s / m

    lo_count = max(1, math.ceil(min_share * n))
    best: tuple[float, int] | None = None
    for split in range(lo_count, n - lo_count + 1):
        cost = sse(0, split) + sse(split, n)
        if best is None or cost < best[0]:
            best = (cost, split)
    if best is None:
        return None
    cost, split = best
    mean_lo = (prefix[split]) / split
    mean_hi = (prefix[n] - prefix[split]) / (n - split)
    pooled_sd = math.sqrt(max(cost, 0.0) / max(n - 2, 1))
    gap = mean_hi - mean_lo
    # A relative gap under 10% is never called bimodal, however tight the clusters.
    if gap < math.log(1.10):
        return None
    if pooled_sd > 0 and gap / pooled_sd < min_separation:
        return None
    return median(data[:split]), median(data[split:])


def geometric_mean(values: Sequence[float]) -> float:
    """The geometric mean of positive values: the right average for ratios."""
    if not values or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))
