"""Whether a change between two runs is real: one test and its correction for many, used by
``compare`` and by ``history``.

Welch's t-test on the log of a cell's time: the process is the unit that repeats, the log makes a
change a ratio, and Welch's form lets the runs differ in spread and in processes. ``history`` has
only a median and its interval, and reads the estimate back off it (``LogEstimate.from_interval``).
Benjamini–Hochberg keeps the share of false discoveries among many cells at ``alpha``.

>>> round(welch([1.0, 1.02, 0.98], [1.5, 1.53, 1.47]).p_value, 6) < 0.001
True
>>> [round(v, 4) for v in q_values([0.01, 0.04, 0.03, 0.5])]
[0.04, 0.0533, 0.0533, 0.5]
>>> benjamini_hochberg([0.001, 0.04, 0.03, 0.5], q=0.05)
[True, False, False, False]
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from ..numeric.medians import CONFIDENCE, spread_factor

TEST = "Welch's t-test on the processes' log medians"
#: How the correction is named in what arraybench prints.
CORRECTION = "Benjamini–Hochberg"


@dataclass(frozen=True)
class TTest:
    """A two-sided Welch t-test: the statistic, its degrees of freedom, the p-value."""

    t: float
    df: float
    p_value: float


@dataclass(frozen=True)
class LogEstimate:
    """A cell's log time in one run: its estimate, standard error and degrees of freedom."""

    mean: float
    se: float
    df: float

    @classmethod
    def of(cls, values: Sequence[float]) -> LogEstimate | None:
        """The mean of the logs of each process's median and its standard error; None for fewer than two."""
        if len(values) < 2 or min(values) <= 0:
            return None
        logs = [math.log(v) for v in values]
        k = len(logs)
        return cls(statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(k), k - 1)

    @classmethod
    def from_interval(cls, center: float, low: float | None, high: float | None, processes: int,
                      confidence: float = CONFIDENCE) -> LogEstimate | None:
        """The estimate an interval over ``processes`` processes was built from, read back off its
        width; None for no interval, a degenerate one or one process."""
        if processes < 2 or low is None or high is None or min(center, low, high) <= 0:
            return None
        half = (math.log(high) - math.log(low)) / 2
        return cls(math.log(center), half / spread_factor(processes, confidence), processes - 1)


def welch_test(base: LogEstimate, new: LogEstimate) -> TTest:
    """Welch's two-sided t-test of a change from ``base`` to ``new`` (Welch–Satterthwaite df)."""
    va, vb = base.se**2, new.se**2
    se = math.sqrt(va + vb)
    if se == 0:
        same = math.isclose(base.mean, new.mean, rel_tol=0, abs_tol=1e-12)
        return TTest(0.0 if same else math.copysign(math.inf, new.mean - base.mean), math.inf,
                     1.0 if same else 0.0)
    t = (new.mean - base.mean) / se
    # Welch–Satterthwaite; an error known exactly (df = inf) adds nothing, and two such are a z-test.
    spread = sum(v**2 / d for v, d in ((va, base.df), (vb, new.df)) if v)
    df = (va + vb) ** 2 / spread if spread else math.inf
    # Imported here: scipy.special costs a third of scipy.stats's second, which only a comparison pays.
    from scipy.special import stdtr

    return TTest(t, df, min(1.0, float(2 * stdtr(df, -abs(t)))))


def welch(base: Sequence[float], new: Sequence[float]) -> TTest | None:
    """Welch's t-test of the logs of each process's median; None where a side has fewer than two."""
    a, b = LogEstimate.of(base), LogEstimate.of(new)
    return None if a is None or b is None else welch_test(a, b)


def q_values(p_values: Sequence[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values, in the order given."""
    # The step-up rule itself, as scipy.stats.false_discovery_control computes it (the tests
    # hold the two equal): importing scipy.stats costs a run or a report most of a second.
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        q[i] = running
    return q


def benjamini_hochberg(p_values: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses to reject at false discovery rate ``q``, in the order given."""
    return [v <= q for v in q_values(p_values)]
