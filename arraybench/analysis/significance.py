"""Whether a change between two runs is real: one test, used by ``compare`` and by ``history``.

The test is Welch's t-test on the log of a cell's time: the process is the unit that repeats
(``numeric.medians`` explains why), the log makes a change a ratio, and Welch's form lets the two runs
differ in spread and in number of processes. ``compare`` has each process's median and tests them
(``welch``); ``history`` has what the store keeps, a median and its interval over k processes, and
reads the same estimate back off the interval (``LogEstimate.from_interval``) before the same test
(``welch_test``). Many cells are tested at once, and 30 cells tested at p < 0.05 would flag about
1.5 unchanged cells by chance alone; Benjamini–Hochberg (``fdr``) keeps the expected share of false
discoveries among the cells called changed at ``alpha`` instead.

>>> round(welch([1.0, 1.02, 0.98], [1.5, 1.53, 1.47]).p_value, 6) < 0.001
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from . import fdr
from ..numeric.medians import CONFIDENCE, spread_factor

TEST = "Welch's t-test on the processes' log medians"
CORRECTION = fdr.CORRECTION


@dataclass(frozen=True)
class TTest:
    """A two-sided Welch t-test: the statistic, its degrees of freedom, the p-value."""

    t: float
    df: float
    p_value: float


@dataclass(frozen=True)
class LogEstimate:
    """A cell's log time in one run: its estimate, standard error, and that error's degrees of
    freedom (``math.inf`` where the error is known, not estimated from a few processes)."""

    mean: float
    se: float
    df: float

    @classmethod
    def of(cls, values: Sequence[float]) -> LogEstimate | None:
        """The mean of the logs of positive values (each process's median) and its standard error;
        None for fewer than two, which cannot show the variation between processes."""
        if len(values) < 2 or min(values) <= 0:
            return None
        logs = [math.log(v) for v in values]
        k = len(logs)
        mean = sum(logs) / k
        variance = sum((v - mean) ** 2 for v in logs) / (k - 1)
        return cls(mean, math.sqrt(variance / k), k - 1)

    @classmethod
    def from_interval(cls, center: float, low: float, high: float, processes: int,
                      confidence: float = CONFIDENCE) -> LogEstimate | None:
        """The estimate an interval over ``processes`` processes was built from
        (``medians.replicate_interval``), read back off its width; None for a degenerate one, and
        for one process, whose interval holds its own samples' noise only (as in ``of``)."""
        if processes < 2 or center <= 0 or low <= 0 or high <= 0:
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
    # scipy.special's t distribution (what scipy.stats.t.sf calls), imported here: scipy.stats costs
    # ~1 s of CPU to import, scipy.special a third of it, and only a comparison should pay.
    from scipy.special import stdtr

    return TTest(t, df, min(1.0, float(2 * stdtr(df, -abs(t)))))


def welch(base: Sequence[float], new: Sequence[float]) -> TTest | None:
    """Welch's t-test of the log of two sets of positive values (each process's median); None
    when either side has fewer than two, which cannot show the variation between processes."""
    a, b = LogEstimate.of(base), LogEstimate.of(new)
    if a is None or b is None:
        return None
    return welch_test(a, b)
