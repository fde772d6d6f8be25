"""Whether a change between two runs is real: a test on the processes, corrected for many cells.

The test is Welch's t-test on the processes' log medians: the process is the unit that repeats
(``intervals`` explains why), the log makes a change a ratio, and Welch's form lets the two runs
differ in spread and in number of processes. A comparison tests every cell at once, and 30 cells
tested at p < 0.05 would flag about 1.5 unchanged cells by chance alone; Benjamini–Hochberg keeps
the expected share of false discoveries among the cells called changed at ``alpha`` instead.

>>> round(welch([1.0, 1.02, 0.98], [1.5, 1.53, 1.47]).p_value, 6) < 0.001
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from . import student_t
from . import fdr

TEST = "Welch's t-test on the processes' log medians"
CORRECTION = fdr.CORRECTION


@dataclass(frozen=True)
class TTest:
    """A two-sided Welch t-test: the statistic, its degrees of freedom, the p-value."""

    t: float
    df: float
    p_value: float


def welch(base: Sequence[float], new: Sequence[float]) -> TTest | None:
    """Welch's t-test of the log of two sets of positive values (each process's median); None
    when either side has fewer than two, which cannot show the variation between processes."""
    if len(base) < 2 or len(new) < 2 or min(base) <= 0 or min(new) <= 0:
        return None
    a = [math.log(v) for v in base]
    b = [math.log(v) for v in new]
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((v - ma) ** 2 for v in a) / (len(a) - 1) / len(a)
    vb = sum((v - mb) ** 2 for v in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        same = math.isclose(ma, mb, rel_tol=0, abs_tol=1e-12)
        return TTest(0.0 if same else math.copysign(math.inf, mb - ma), math.inf, 1.0 if same else 0.0)
    t = (mb - ma) / se
    df = (va + vb) ** 2 / ((va**2 / (len(a) - 1) if va else 0.0) + (vb**2 / (len(b) - 1) if vb else 0.0))
    return TTest(t, df, student_t.two_sided_p(t, df))
