"""Statistics over timing samples, the worker's and the parent's: the median and its
distribution-free interval, the spread and clusters, and a cell's interval over its
processes. Standard library only: ``scipy.stats`` takes seconds to import (3.7 to 6.4 s on the
shared 2-core machine), which every worker would pay before its first sample.

A cell's interval takes the process as the unit that repeats: samples of one process are not
independent draws (pooling them held in 21 of 30 cells instead of ~95%). With ``log(median of
process j) = mu + b_j + e_j``, the processes' log medians are independent draws around ``mu``, and
the interval is Student's t over them, back on the time scale, never narrower than the samples'
own uncertainty; the headline is ``exp(mu)``, the geometric mean of the processes' medians. One
process's interval is the order statistics of its own samples, and says so.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
# The median and the parent's mean of ratios, read from here as the rest (``StatisticsError``, a
# ``ValueError``, for no values).
from statistics import geometric_mean, median  # noqa: F401
from typing import Sequence

#: Above this many samples the binomial ranks come from the normal approximation: the exact sum
#: would be slow, and the ranks it gives the same.
EXACT_RANKS_UP_TO = 2000


def two_sided_z(confidence: float) -> float:
    """The standard normal quantile that leaves (1 - confidence) / 2 in each tail (1.96 for 95%)."""
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2)


@lru_cache(maxsize=4096)
def _median_ci_ranks(n: int, confidence: float) -> tuple[int, int]:
    """0-based ranks (j, k) with P(X_(j) <= median <= X_(k)) >= confidence, from Binomial(n, 1/2):
    nothing assumed of the timing distribution's shape, usually skewed and often multimodal."""
    if n > EXACT_RANKS_UP_TO:
        half = two_sided_z(confidence) * math.sqrt(n) / 2
        return max(0, int(math.floor(n / 2 - half)) - 1), min(n - 1, int(math.ceil(n / 2 + half)))
    alpha = 1.0 - confidence
    # Largest j with P(Bin(n, 1/2) < j) <= alpha / 2, counted from 1; exact integer arithmetic.
    cumulative = 0
    for j in range(n + 1):
        cumulative += math.comb(n, j)
        if cumulative / 2**n > alpha / 2:
            break  # P(B <= j-1) <= alpha/2 < P(B <= j): the lower bound is X_(j), 1-based
    return (j - 1, n - j) if j >= 1 else (0, n - 1)


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval for the median (the whole range where there are too
    few samples for the confidence: fewer than 6 at 95%)."""
    if not values:
        raise ValueError("confidence interval of no values")
    data = sorted(values)
    lo, hi = _median_ci_ranks(len(data), confidence)
    return data[lo], data[hi]


def relative_ci_halfwidth(values: Sequence[float]) -> float:
    """Half the width of the median's 95% confidence interval, relative to the median."""
    lo, hi = median_ci(values)
    m = median(values)
    return (hi - lo) / (2 * m) if m > 0 else math.inf


def iqr(values: Sequence[float]) -> float:
    """The interquartile range: the spread of the middle half, insensitive to outliers (quartiles
    interpolated as NumPy's default method does)."""
    if len(values) == 1:
        return 0.0
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return high - low


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Standard deviation over mean (0 for fewer than two values)."""
    mean = statistics.fmean(values) if len(values) >= 2 else 0.0
    return statistics.stdev(values, mean) / mean if mean else 0.0


def two_clusters(values: Sequence[float]) -> tuple[float, float] | None:
    """The two group medians of a bimodal distribution, or None for one cluster: the sorted logs
    split where within-group variance is least, each group at least a fifth of the values and
    their means four pooled standard deviations apart or more."""
    data = sorted(v for v in values if v > 0)
    n = len(data)
    if n < 4:
        return None
    logs = [math.log(v) for v in data]
    prefix = list(accumulate(logs, initial=0.0))
    prefix_sq = list(accumulate((v * v for v in logs), initial=0.0))

    def sse(i: int, j: int) -> float:
        s = prefix[j] - prefix[i]
        return (prefix_sq[j] - prefix_sq[i]) - s * s / (j - i)

    least = max(1, math.ceil(0.2 * n))
    cost, split = min((sse(0, k) + sse(k, n), k) for k in range(least, n - least + 1))
    mean_lo = prefix[split] / split
    mean_hi = (prefix[n] - prefix[split]) / (n - split)
    pooled_sd = math.sqrt(max(cost, 0.0) / max(n - 2, 1))
    gap = mean_hi - mean_lo
    # A relative gap under 10% is never called bimodal, however tight the clusters.
    if gap < math.log(1.10) or (pooled_sd > 0 and gap / pooled_sd < 4.0):
        return None
    return median(data[:split]), median(data[split:])


CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A cell's headline time and its confidence interval, with how they were computed."""

    center: float
    low: float
    high: float
    processes: int
    method: str

    @property
    def half_width(self) -> float:
        """Half the interval's width over the center (0.02 is ±2%)."""
        return (self.high - self.low) / (2 * self.center) if self.center > 0 else math.inf


#: Student's t leaving 2.5% in the upper tail, and the chi-squared value exceeded with probability 0.1,
#: for 1 to 31 degrees of freedom: scipy.special's ``stdtrit`` and ``chdtri`` to 12 digits (a test
#: holds them equal). Importing scipy.special cost every run, report and pytest session 0.15-0.2 s of
#: CPU, a third of its imports, for numbers that only a process count picks; more processes ask scipy.
_T_975 = (
    12.7062047362, 4.30265272975, 3.18244630528, 2.7764451052, 2.57058183564, 2.44691185114, 2.36462425159,
    2.3060041352, 2.2621571628, 2.22813885199, 2.20098516009, 2.17881282967, 2.16036865646, 2.14478668792,
    2.13144954556, 2.11990529922, 2.10981557783, 2.10092204024, 2.09302405441, 2.08596344727, 2.07961384473,
    2.0738730679, 2.06865761042, 2.06389856163, 2.05953855275, 2.05552943864, 2.05183051648, 2.0484071418,
    2.04522964213, 2.0422724563, 2.0395134464)
_CHI2_UPPER_10 = (
    2.7055434541, 4.60517018599, 6.25138863117, 7.77944033973, 9.23635689978, 10.6446406757, 12.0170366238,
    13.3615661365, 14.6836565733, 15.9871791721, 17.2750085175, 18.5493477867, 19.8119293071, 21.064144213,
    22.3071295816, 23.5418289231, 24.7690353439, 25.9894230826, 27.2035710294, 28.4119805843, 29.6150894362,
    30.813282344, 32.0068996817, 33.1962442886, 34.3815870176, 35.5631712719, 36.7412167478, 37.9159225447,
    39.0874697707, 40.2560237387, 41.4217358298)


def spread_factor(processes: int) -> float:
    """How many standard errors of the log median an interval spans on each side: Student's t on
    ``processes - 1`` degrees of freedom, or the normal quantile for one process."""
    if processes < 2:
        return two_sided_z(CONFIDENCE)
    if processes - 1 <= len(_T_975):
        return _T_975[processes - 2]
    from scipy.special import stdtrit

    return float(stdtrit(processes - 1, 0.5 + CONFIDENCE / 2))


def chi2_upper_10(df: int) -> float:
    """The chi-squared value on ``df`` degrees of freedom that is exceeded with probability 0.1."""
    if df <= len(_CHI2_UPPER_10):
        return _CHI2_UPPER_10[df - 1]
    from scipy.special import chdtri

    return float(chdtri(df, 0.1))


def _median_se(samples: Sequence[float]) -> float:
    """The standard error of one process's log median, from its own distribution-free interval."""
    lo, hi = median_ci(samples)
    if lo <= 0:  # the median is no less than lo
        return 0.0
    return (math.log(hi) - math.log(lo)) / (2 * 1.96)


def replicate_interval(per_process: Sequence[Sequence[float]]) -> Interval:
    """The interval of a cell's median from each process's samples (seconds per call).

    >>> iv = replicate_interval([[1.0, 1.01, 0.99] * 5, [1.1, 1.11, 1.09] * 5, [1.05] * 15])
    >>> round(iv.center, 3), iv.processes
    (1.049, 3)
    >>> iv.low < 1.0 and iv.high > 1.1
    True
    """
    groups = [list(s) for s in per_process if s]
    if not groups:
        raise ValueError("an interval needs samples")
    if len(groups) == 1:
        lo, hi = median_ci(groups[0])
        return Interval(median(groups[0]), lo, hi, 1,
                        "order statistics of one process's samples (blind to variation between processes)")
    medians = [median(g) for g in groups]
    k = len(medians)
    if min(medians) <= 0:  # never from a real timer; keep the arithmetic defined
        mean, sd = statistics.fmean(medians), statistics.stdev(medians)
        half = spread_factor(k) * sd / math.sqrt(k)
        return Interval(mean, max(mean - half, 0.0), mean + half, k, f"t over {k} processes' medians")
    logs = [math.log(m) for m in medians]
    mu = sum(logs) / k
    if k == 2:
        # Student's t on one degree of freedom is 12.7 standard errors wide (a busy machine made it
        # ±5·10¹²%): the span of the two processes' own intervals is what two can honestly say.
        ends = [median_ci(g) for g in groups]
        return Interval(math.exp(mu), min(lo for lo, _ in ends), max(hi for _, hi in ends), 2,
                        "span of 2 processes' own intervals (too few processes for a t interval)")
    sd = math.sqrt(sum((v - mu) ** 2 for v in logs) / (k - 1))
    between = spread_factor(k) * sd / math.sqrt(k)
    # The floor: what the samples alone say about the mean of the log medians.
    within = two_sided_z(CONFIDENCE) * math.sqrt(sum(_median_se(g) ** 2 for g in groups)) / k
    half = max(between, within)
    method = f"t over {k} processes' medians (log scale)"
    if within > between:
        method += "; widened to the samples' own uncertainty"
    return Interval(math.exp(mu), math.exp(mu - half), math.exp(mu + half), k, method)

