"""Two runs side by side: per cell, the ratio of medians and whether the change is real.

A change is called where it is significant and beyond ``threshold``: Welch's t (here and in
``history``) on the log of the processes' medians, so that a change is a ratio and the runs may
differ in spread, then Benjamini–Hochberg across cells at ``alpha``. A version 1 file without
processes' medians is judged on its intervals; a side measured in one process "cannot tell".

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
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..numeric import medians as stats
from ..model.cell import case_key
from ..model.record import Record
from ..model.results import Results, pandas
from ..model.runs import environment_differences, settings_differences
from ..errors import spell
from ..units import format_change
from .grouping import config_sort_key, is_valid, size_sort_key

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
    def from_interval(cls, center: float, low: float | None, high: float | None, processes: int) -> LogEstimate | None:
        """The estimate an interval over ``processes`` processes was built from, read off its width."""
        if processes < 2 or low is None or high is None or min(center, low, high) <= 0:
            return None
        half = (math.log(high) - math.log(low)) / 2
        return cls(math.log(center), half / stats.spread_factor(processes), processes - 1)


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


FASTER, SLOWER, SAME, NOT_COMPARABLE = "faster", "slower", "negligible", "not comparable"
#: A change the test does not call (as pyperf says it), and one beyond the threshold no test can judge.
NOT_SIGNIFICANT, CANNOT_TELL = "not significant", "cannot tell"

DEFAULT_THRESHOLD = 0.02  # ratios within 2% of 1 are "negligible", however significant
DEFAULT_ALPHA = 0.05


@dataclass
class CellChange:
    """One cell in both runs."""

    key: str
    base: Record
    new: Record
    verdict: str
    ratio: float | None = None  # new median / base median: below 1 is faster
    p_value: float | None = None
    ci_overlap: bool | None = None
    significant: bool = False
    note: str = ""
    q_value: float | None = None  # the p-value adjusted for every cell compared
    one_process: bool = False  # a side was measured in a single process

    @property
    def ratio_low(self) -> float | None:
        """A conservative low end of the ratio: new CI low over base CI high."""
        missing = self.ratio is None or self.new.ci_low_s is None or not self.base.ci_high_s
        return None if missing else self.new.ci_low_s / self.base.ci_high_s

    @property
    def ratio_high(self) -> float | None:
        """A conservative high end of the ratio: new CI high over base CI low."""
        missing = self.ratio is None or self.new.ci_high_s is None or not self.base.ci_low_s
        return None if missing else self.new.ci_high_s / self.base.ci_low_s


@dataclass
class Comparison:
    """Every cell of two runs, matched by ``Record.key``."""

    changes: list[CellChange]
    only_base: list[Record]
    only_new: list[Record]
    threshold: float
    alpha: float
    environment_differences: list[tuple[str, str, str]] = field(default_factory=list)
    new_complete: bool = True
    #: Which backends, devices and modes the new run chose to measure.
    new_settings: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line: how many cells, the verdicts, the geometric mean."""
        counts = {k: v for k, v in self.counts().items() if v}
        g = self.geometric_mean
        verdicts = ", ".join(f"{v} {k}" for k, v in counts.items()) or "no cell"
        only = (f", {len(self.only_base)} only in base, {len(self.only_new)} only in new"
                if self.only_base or self.only_new else "")
        mean = f"; geometric mean new/base {g:.3f} ({format_change(g)})" if g is not None else ""
        n = len(self.changes)
        return f"<arraybench Comparison of {n} cell{'s' if n != 1 else ''}: {verdicts}{only}{mean}>"

    def rows(self) -> list[dict[str, Any]]:
        """Every cell as a plain row (``ROW_COLUMNS``): those in both runs, then those in one only."""
        return [*(_row(c.new, c.base.median_s, c.new.median_s, c.ratio, c.verdict, c.p_value,
                       c.q_value, c.note) for c in self.changes),
                *(_row(r, r.median_s, None, None, "only in base", None, None, r.reason)
                  for r in self.only_base),
                *(_row(r, None, r.median_s, None, "only in new", None, None, r.reason)
                  for r in self.only_new)]

    def to_dataframe(self) -> Any:
        """``rows()`` as a pandas DataFrame, one row per cell (pandas is not a dependency)."""
        return pandas("Comparison.to_dataframe()").DataFrame(self.rows(), columns=list(ROW_COLUMNS))

    @property
    def method(self) -> str:
        """How significance was judged, in one line for the summary and compare.md."""
        tested = [c for c in self.changes if c.p_value is not None]
        by_ci = [c for c in self.comparable if c.p_value is None and not c.one_process]
        text = (f"significance: {TEST}, {CORRECTION} over {len(tested)} "
                f"cell{'s' if len(tested) != 1 else ''} (false discovery rate {self.alpha:g})")
        if by_ci:
            text += (f"; {len(by_ci)} cell{'s' if len(by_ci) != 1 else ''} without processes' "
                     "medians judged on non-overlapping 95% intervals")
        return text + f"; changes under {self.threshold:.0%} are negligible"

    @property
    def one_process(self) -> list[CellChange]:
        """Comparable cells that a single process measured on a side."""
        return [c for c in self.comparable if c.one_process]

    @property
    def comparable(self) -> list[CellChange]:
        return [c for c in self.changes if c.ratio is not None]

    @property
    def geometric_mean(self) -> float | None:
        """The geometric mean of new/base over comparable cells: below 1, the new run is faster."""
        ratios = [c.ratio for c in self.comparable if c.ratio and c.ratio > 0]
        return stats.geometric_mean(ratios) if ratios else None

    @property
    def skipped_in_both(self) -> list[CellChange]:
        """Cells neither run measured (a GPU absent from both machines, say): listed apart."""
        return [c for c in self.changes if c.base.status == "skipped" and c.new.status == "skipped"]

    @property
    def shown(self) -> list[CellChange]:
        """The cells worth a row: all but those skipped in both runs."""
        return [c for c in self.changes if c.base.status != "skipped" or c.new.status != "skipped"]

    def counts(self) -> dict[str, int]:
        verdicts = [c.verdict for c in self.changes]
        return {v: verdicts.count(v) for v in (FASTER, SLOWER, NOT_SIGNIFICANT, SAME, CANNOT_TELL,
                                              NOT_COMPARABLE)}

    def slowdowns_above(self, limit: float) -> list[CellChange]:
        """Significant slowdowns whose ratio exceeds ``1 + limit``."""
        return [c for c in self.changes
                if c.verdict == SLOWER and c.ratio is not None and c.ratio > 1 + limit]

    def unjudged_above(self, limit: float) -> list[CellChange]:
        """Cells slower by more than ``1 + limit`` that no test could judge (one process on a side)."""
        return [c for c in self.changes
                if c.verdict == CANNOT_TELL and c.ratio is not None and c.ratio > 1 + limit]

    def broken(self) -> list[CellChange]:
        """Cells valid in the base run that the new run got wrong or could not run."""
        return [c for c in self.changes if is_valid(c.base) and c.new.status in ("failed", "wrong")]

    def unmeasured(self) -> list[CellChange]:
        """Cells valid in the base run that the new run skipped (an import broke, a GPU gone)."""
        return [c for c in self.changes if is_valid(c.base) and c.new.status == "skipped"]

    def missing(self) -> list[Record]:
        """Cells the base run measured that the new run's plan had (their case measured, their
        backend, device and mode chosen) and it does not hold; a narrower run's others judge nothing."""
        new = [c.new for c in self.changes] + self.only_new
        cases = {case_key(r.cell) for r in new}
        measured = {(r.backend, r.device, r.mode) for r in new}

        def chose(r: Record) -> bool:
            picked = [self.new_settings.get(k) for k in ("backends", "devices", "modes")]
            if not all(isinstance(p, list) and p for p in picked):
                return (r.backend, r.device, r.mode) in measured
            return r.backend in picked[0] and r.device in picked[1] and r.mode in picked[2]

        return [r for r in self.only_base if r.status == "ok" and case_key(r.cell) in cases and chose(r)]

    def incomparable(self) -> list[CellChange]:
        """Other cells the base run measured that cannot be compared (sizes differ, no usable time)."""
        told = {id(c) for c in (*self.broken(), *self.unmeasured())}
        return [c for c in self.changes if c.verdict == NOT_COMPARABLE and c.base.status == "ok"
                and id(c) not in told]

    def summary(self) -> str:
        """One sentence: the geometric mean and the counts."""
        counts = self.counts()
        n = len(self.comparable)
        skipped = len(self.skipped_in_both)
        parts = [text for said, text in [
            (True, f"{counts[FASTER]} faster, {counts[SLOWER]} slower, {counts[NOT_SIGNIFICANT]} not significant"),
            (counts[SAME], f"{counts[SAME]} negligible (under {self.threshold:.0%})"),
            (counts[CANNOT_TELL], f"{counts[CANNOT_TELL]} cannot tell"),
            (counts[NOT_COMPARABLE] - skipped, f"{counts[NOT_COMPARABLE] - skipped} not comparable"),
            (skipped, f"{skipped} skipped in both"),
            (self.only_base or self.only_new,
             f"{len(self.only_base)} only in base, {len(self.only_new)} only in new"),
        ] if said]
        g = self.geometric_mean
        if g is None:
            return "no cell could be compared; " + ", ".join(parts)
        return (f"geometric mean of new/base over {n} cell{'s' if n != 1 else ''}: {g:.3f} "
                f"({format_change(g)}); " + ", ".join(parts) + f". {self.method[0].upper()}{self.method[1:]}."
                + (f" {self.one_process_line()}." if self.one_process else ""))

    def one_process_line(self) -> str:
        """What the cells measured with one process on a side allow, in one line."""
        n = len(self.one_process)
        return (f"{n} cell{'s' if n != 1 else ''} measured with one process on a side: no change "
                f"over {self.threshold:.0%} can be called; measure with {spell('processes', 2)} or more")


#: The columns of ``Comparison.rows()``.
ROW_COLUMNS = ("workload", "size_label", "size", "config", "backend", "device", "dtype", "mode",
               "machine", "base_median_s", "new_median_s", "ratio", "change", "verdict", "p_value",
               "q_value", "note")


def _row(r: Record, base_s: float | None, new_s: float | None, ratio: float | None, verdict: str,
         p: float | None, q: float | None, note: str) -> dict[str, Any]:
    change = format_change(ratio) if ratio is not None else ""
    return dict(zip(ROW_COLUMNS, (r.workload, r.size_label, r.size, r.config_label, r.backend,
                                  r.device, r.dtype, r.mode, r.machine, base_s, new_s, ratio, change,
                                  verdict, p, q, note)))


def beyond(ratio: float, threshold: float) -> bool:
    """Whether ``ratio`` is more than ``threshold`` from 1, either way."""
    return ratio > 1 + threshold or ratio < 1 / (1 + threshold)


def compare_records(base: Record, new: Record, threshold: float = DEFAULT_THRESHOLD,
                    alpha: float = DEFAULT_ALPHA) -> CellChange:
    """The verdict for one cell measured in both runs."""
    change = CellChange(key=new.key, base=base, new=new, verdict=NOT_COMPARABLE)
    if base.size != new.size:
        change.note = f"sizes differ: n = {base.size:,} in base, {new.size:,} in new"
        return change
    for side, r in (("base", base), ("new", new)):
        if not is_valid(r):
            change.note = f"{side} is {r.status}" + (f": {r.reason}" if r.reason else "")
            return change
    change.ratio = new.median_s / base.median_s
    # Version 1 files keep the count of processes as well as their medians.
    change.one_process = min(r.n_replicates or len(r.replicate_medians_s) for r in (base, new)) < 2
    if None not in (base.ci_low_s, base.ci_high_s, new.ci_low_s, new.ci_high_s):
        change.ci_overlap = not (new.ci_low_s > base.ci_high_s or new.ci_high_s < base.ci_low_s)
    test = welch(base.replicate_medians_s, new.replicate_medians_s)
    if test is not None:
        change.p_value = change.q_value = test.p_value
    _judge(change, alpha, threshold)
    return change


def _judge(change: CellChange, alpha: float, threshold: float) -> None:
    """The verdict from the (adjusted) p-value, or from the intervals where there is none."""
    if change.one_process:
        change.note = "a single process on a side"
        change.verdict = CANNOT_TELL if beyond(change.ratio, threshold) else SAME
        return
    if change.q_value is not None:
        change.significant = change.q_value < alpha
    elif change.ci_overlap is not None:
        change.significant = not change.ci_overlap
        change.note = "no processes' medians saved: judged on the confidence intervals"
    else:
        change.note = "no processes' medians or confidence intervals: cannot judge significance"
    change.verdict = (NOT_SIGNIFICANT if not change.significant else SLOWER if change.ratio > 1 + threshold
                      else FASTER if change.ratio < 1 / (1 + threshold) else SAME)


def compare(base: Results, new: Results, threshold: float = DEFAULT_THRESHOLD,
            alpha: float = DEFAULT_ALPHA) -> Comparison:
    """Match the records of two runs by cell (its key names its machine too) and judge each change."""
    base_by = {r.key: r for r in base.records}
    new_by = {r.key: r for r in new.records}
    order = sorted((r for r in new.records if r.key in base_by),
                   key=lambda r: (r.workload, size_sort_key(r), config_sort_key(r)))
    changes = [compare_records(base_by[r.key], r, threshold, alpha) for r in order]
    tested = [c for c in changes if c.p_value is not None]
    for c, q in zip(tested, q_values([c.p_value for c in tested])):
        c.q_value = q
        _judge(c, alpha, threshold)
    return Comparison(
        changes=changes,
        only_base=[r for r in base.records if r.key not in new_by],
        only_new=[r for r in new.records if r.key not in base_by],
        threshold=threshold,
        alpha=alpha,
        environment_differences=(environment_differences(base.environment, new.environment)
                                 + settings_differences(base.settings, new.settings)),
        new_complete=new.complete, new_settings=dict(new.settings),
    )
