"""Statistics over timing samples, the worker's and the parent's: the median and its
distribution-free interval (which decide when a worker has sampled enough), the quantile, the
samples' spread and clusters, and the geometric mean.

They live here, not in ``analysis``, so that a worker imports nothing of the parent's and each
exists once. They use the standard library only:
``scipy.stats`` takes seconds to import (3.7 to 6.4 s measured on the shared 2-core machine, where
NumPy takes 0.3 to 0.6 s), which every worker process would pay before its first sample.
"""

from __future__ import annotations

import math
import statistics
from functools import lru_cache
from statistics import geometric_mean  # noqa: F401  (the parent's mean of ratios, from here as the rest)
from typing import Sequence

#: Above this many samples the binomial ranks come from the normal approximation: the exact sum
#: would be slow, and the ranks it gives the same.
EXACT_RANKS_UP_TO = 2000


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
    if not values:
        raise ValueError("median of no values")
    return statistics.median(values)


def two_sided_z(confidence: float) -> float:
    """The standard normal quantile that leaves (1 - confidence) / 2 in each tail (1.96 for 95%)."""
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2)


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
    n = len(data)
    if n > EXACT_RANKS_UP_TO:
        half = two_sided_z(confidence) * math.sqrt(n) / 2
        lo = max(0, int(math.floor(n / 2 - half)) - 1)
        hi = min(n - 1, int(math.ceil(n / 2 + half)))
        return data[lo], data[hi]
    ranks = _median_ci_ranks(n, confidence)
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


def iqr(values: Sequence[float]) -> float:
    """The interquartile range: the spread of the middle half, insensitive to outliers."""
    return quantile(values, 0.75) - quantile(values, 0.25)


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Standard deviation over mean (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    if mean == 0:
        return 0.0
    return statistics.stdev(values, mean) / mean


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
