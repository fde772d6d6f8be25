"""The confidence interval of a cell's median, with the worker process as the unit that repeats.

A process can run slow for its whole life (where its memory and threads landed, whether glibc
hands it fresh pages), so samples from one process are not independent draws of the cell's time:
pooling them, as arraybench once did, gives intervals that are too narrow (the runs that checked it held
in 21 of 30 cells instead of ~95%). The model here is the two-level one the data have::

    log(median of process j) = mu + b_j + e_j

``b_j`` the process's own offset, ``e_j`` the error of its median from its finite samples. The
processes' log medians are then independent draws around ``mu``, whatever happens inside a process
(autocorrelated samples, a slow phase, a skewed distribution), and the interval is Student's t
over them: ``mean ± t(k-1) · sd / sqrt(k)``, back on the time scale. With k processes it is exact
when the offsets are normal, and the t quantile (4.30 for three processes, 2.26 for ten) keeps it
honest for the few processes a benchmark can afford, where a bootstrap over three processes (ten
distinct resamples) would cover far less than it claims. It is never narrower than the samples'
own uncertainty (each process's median interval, combined), so identical medians by chance do not
give a zero-width interval. The headline is ``exp(mu)``: the geometric mean of the processes'
medians, a per-call time like them.

One process gives no view of the variation between processes: its interval is the
distribution-free one of its own samples' median, and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from . import medians as stats

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


@lru_cache(maxsize=256)
def spread_factor(processes: int, confidence: float = CONFIDENCE) -> float:
    """How many standard errors of the log median an interval spans on each side: Student's t on
    ``processes - 1`` degrees of freedom, or the normal quantile for one process (whose interval
    comes from its samples' order statistics, the binomial's normal limit)."""
    if processes < 2:
        return stats.two_sided_z(confidence)
    # scipy.special's t quantile (what scipy.stats.t.ppf calls), imported here: scipy.stats costs
    # ~1 s of CPU to import, scipy.special a third of it, and --help or doctor should pay neither.
    from scipy.special import stdtrit

    return float(stdtrit(processes - 1, 0.5 + confidence / 2))


def _median_se(samples: Sequence[float]) -> float:
    """The standard error of one process's log median, from its own distribution-free interval."""
    lo, hi = stats.median_ci(samples)
    m = stats.median(samples)
    if m <= 0 or lo <= 0:
        return 0.0
    return (math.log(hi) - math.log(lo)) / (2 * 1.96)


def replicate_interval(per_process: Sequence[Sequence[float]],
                       confidence: float = CONFIDENCE) -> Interval:
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
        lo, hi = stats.median_ci(groups[0], confidence)
        return Interval(stats.median(groups[0]), lo, hi, 1,
                        "order statistics of one process's samples (blind to variation between processes)")
    medians = [stats.median(g) for g in groups]
    k = len(medians)
    if min(medians) <= 0:  # never from a real timer; keep the arithmetic defined
        mean = sum(medians) / k
        sd = math.sqrt(sum((m - mean) ** 2 for m in medians) / (k - 1))
        half = spread_factor(k, confidence) * sd / math.sqrt(k)
        return Interval(mean, max(mean - half, 0.0), mean + half, k, f"t over {k} processes' medians")
    logs = [math.log(m) for m in medians]
    mu = sum(logs) / k
    if k == 2:
        # Student's t on one degree of freedom is 12.7 standard errors wide: from two processes it
        # says nothing (a busy machine made it ±5·10¹²%). The span of the two processes' own
        # intervals is what two processes can honestly say.
        ends = [stats.median_ci(g, confidence) for g in groups]
        return Interval(math.exp(mu), min(lo for lo, _ in ends), max(hi for _, hi in ends), 2,
                        "span of 2 processes' own intervals (too few processes for a t interval)")
    sd = math.sqrt(sum((v - mu) ** 2 for v in logs) / (k - 1))
    between = spread_factor(k, confidence) * sd / math.sqrt(k)
    # The floor: what the samples alone say about the mean of the log medians.
    z = stats.two_sided_z(confidence)
    within = z * math.sqrt(sum(_median_se(g) ** 2 for g in groups)) / k
    half = max(between, within)
    method = f"t over {k} processes' medians (log scale)"
    if within > between:
        method += "; widened to the samples' own uncertainty"
    return Interval(math.exp(mu), math.exp(mu - half), math.exp(mu + half), k, method)


def pooled_interval(per_process: Sequence[Sequence[float]], confidence: float = CONFIDENCE) -> Interval:
    """The old interval: every sample of every process pooled, as if independent. Kept to show,
    in tests and in the methodology, how far short of its claim it falls."""
    pooled = [x for s in per_process for x in s]
    lo, hi = stats.median_ci(pooled, confidence)
    return Interval(stats.median(pooled), lo, hi, len([s for s in per_process if s]),
                    "order statistics of the pooled samples")
